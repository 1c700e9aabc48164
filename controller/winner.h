/*
 * winner.h - the session's winner (winner.c): the one record every output
 * reads, and its figures.  Below the steps, beside state.c: the ranking,
 * the reports, the model's context, the status and the commands read it;
 * it uses the store and the spec.
 */
#ifndef KCTL_WINNER_H
#define KCTL_WINNER_H

#include <jansson.h>
#include <stddef.h>

struct session;
struct spec;
struct store;

/*
 * The one record every output reads (new reference), or NULL before there
 * is an incumbent: {variant, round (where its figures were measured),
 * status, shape, median_ms, samples, robust_cv, quality,
 * speedup_vs_reference, speedup_vs_reference_iqr, speedup_vs_baseline,
 * gflops, gbps, bottleneck, device, params, build_options,
 * best_cl_build_options, launch, confirmed, settled, verdict, runner_up,
 * passes, candidates}.
 */
json_t *session_winner(struct store *st, const char *id);
/* The figures of a result document, as in the record above. */
json_t *winner_figures(json_t *result);
/* Build options for best.cl: the variant's, less the -D of parameters that
 * best.cl applies as #defines (render: options); malloc'd. */
char *winner_best_options(const struct spec *sp, json_t *variant);
/* Records variant (store_variant_get form) as the winner, with its figures
 * from result (timed in round) and extra's keys on top.  In the caller's
 * transaction, with lineage 0 already naming it. */
int winner_record(struct session *s, int round, json_t *variant, json_t *result, json_t *extra,
		  char *msg, size_t n);
/* "robust CV 12.3%, unstable" for w (a winner or a figures object). */
void winner_noise(json_t *w, char *out, size_t n);

#endif
