/*
 * report-internal.h - between report-html.c (the page) and
 * report-plots.c (its charts).  Each plot appends one inline <svg> drawn
 * from report_model's object m, or a line saying why there is nothing to
 * draw; every point carries a <title> with its id and figures.
 */
#ifndef KCTL_REPORT_INTERNAL_H
#define KCTL_REPORT_INTERNAL_H

#include "sbuf.h"

#include <jansson.h>

/* Best speedup over evaluations: one step line per lineage, the incumbent's steps marked. */
void report_plot_progress(json_t *m, struct sbuf *b);
/* Every variant by round, coloured by status; failed ones in a lane of their own. */
void report_plot_scatter(json_t *m, struct sbuf *b);
/* The device's roofline with every variant that passed, the reference and the best. */
void report_plot_roofline(json_t *m, struct sbuf *b);
/* Who descends from whom, by round, coloured by proposer. */
void report_plot_lineage(json_t *m, struct sbuf *b);
/* Stacked bars per round of the rounds' counts under key ("statuses", "bottlenecks", "faults"). */
void report_plot_counts(json_t *m, const char *key, const char *title, struct sbuf *b);
/* Timing spread (min, quartiles, median, max) of the top variants. */
void report_plot_timing(json_t *m, struct sbuf *b);

/* Appends prefix and word as a class name: word when it is [a-z0-9_], else "other". */
void report_class(struct sbuf *b, const char *prefix, const char *word);
/* The value of key as a number, NAN when it is not one. */
double report_num(json_t *o, const char *key);
/* The value of key as a string, "" when it is not one. */
const char *report_str(json_t *o, const char *key);

#endif
