/*
 * bucket.h - shape buckets: a session whose spec marks several shapes
 * timed tunes for all of them at once (docs/spec.md, "Shape buckets").
 * evalpod times every program at each timed shape and writes the figures
 * per shape in a result's performance_by_shape (docs/result.md); the
 * first timed shape is the primary, whose figures stay a result's
 * `performance`.
 *
 * The search objective across buckets is the geometric mean, over the
 * timed shapes, of the per-bucket speedups (each a ratio of medians timed
 * side by side in one evalpod run).  A session with one timed shape ranks
 * on the primary's speedup exactly as before: every function here leaves
 * it untouched.
 *
 * Below the steps, beside winner.c: the ranking, the confirmation, the
 * reports and kctl show and export read it; it uses the store and the spec.
 */
#ifndef KCTL_BUCKET_H
#define KCTL_BUCKET_H

#include <jansson.h>
#include <stddef.h>

struct session;
struct spec;
struct store;

/* How many of the spec's shapes are timed: 1 unless several are marked. */
size_t bucket_count(const struct spec *sp);

/* The names of the spec's timed shapes, the primary first (new reference). */
json_t *bucket_names(const struct spec *sp);

/*
 * The objective of a result document across sp's buckets: the geometric
 * mean over the timed shapes of performance_by_shape.SHAPE.
 * speedup_vs_<against>.ratio_of_medians, against being "reference" or
 * "baseline".  NAN when one bucket's figure is missing or not positive.
 */
double bucket_objective(const struct spec *sp, json_t *result, const char *against);

/*
 * For a session with several buckets: rewrites the ranked figures of a
 * store row (store_variants_brief or store_variant_get form) of an ok
 * variant to the objective over its recorded result, speedup_ref and
 * speedup_base becoming the geometric means, and keeps the primary's in
 * primary_speedup_ref and primary_speedup_base.  A row whose result lacks
 * a bucket's figures gets null speedups (it is not ranked).  Does nothing
 * to a single-bucket session's rows, or to a NULL row.
 */
void bucket_rank_row(struct session *s, json_t *row);
/* bucket_rank_row on every row of the array rows. */
void bucket_rank_rows(struct session *s, json_t *rows);

/*
 * The best variant per bucket of session id, from the recorded per-bucket
 * figures (performance_by_shape) of the variants that passed: the highest
 * speedup over the reference at that bucket, ties to the earlier variant.
 * An array of {bucket, primary, variant, round, median_ms,
 * speedup_vs_reference, robust_cv, quality, gflops}, the primary bucket
 * first, then the others by name.  Read from the store alone (not the spec
 * file, which may have changed).  Returns NULL (not an error) when the
 * session's first ok result has no figures for several buckets (a
 * single-bucket session: only that one result is read).  rows are the
 * session's variant rows (store_variants_brief; id, round and status are
 * read) when the caller has them, else NULL: they are read here.  New
 * reference.
 */
json_t *bucket_bests(struct store *st, const char *id, json_t *rows);

#endif
