/*
 * report.h - a session's report for people: report.md (report.c), and
 * report.html with its plots (report-model.c gathers, report-html.c
 * draws).  kctl writes both into the session folder after every round;
 * `kctl report` prints either, or the gathered data as JSON.
 */
#ifndef KCTL_REPORT_H
#define KCTL_REPORT_H

#include "sbuf.h"

#include <jansson.h>
#include <stddef.h>

struct session;
struct store;

/* Appends report.md of session s (its status, winner, best variants and
 * rounds) to b; report_write (round.h) writes it with best.cl. */
void report_md(struct session *s, struct sbuf *b);

/*
 * What the report shows of session id (schema "kctl.report", version 1;
 * docs/kctl.md describes it): the session, the winner, the device and its
 * roofline ceilings, the reference, one row per round with its variants'
 * statuses, bottlenecks and fault kinds counted, every variant's figures,
 * the top variants with their timing spread, diff against the template and
 * artifacts, the failures grouped by kind with a few examples, lineages,
 * learnings, settings and the model's token totals.  dir is the session
 * folder (artifacts are marked present when their file is there), or NULL.
 * Returns a new reference, or NULL when the session is not in the store;
 * a failed read shows in store_check.
 */
json_t *report_model(struct store *st, const char *id, const char *dir);

/* Appends to out report.html for model (report_model's object): one
 * self-contained page, inline CSS and SVG, no script, nothing fetched. */
void report_html(json_t *model, struct sbuf *out);

/*
 * Writes report.html of session id into dir (atomically).  0, or a
 * negative KERR_* with msg saying what failed.
 */
int report_html_write(struct store *st, const char *id, const char *dir, char *msg, size_t n);

#endif
