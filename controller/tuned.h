/*
 * tuned.h - tuned tables: the best parameters of a kernel per (device,
 * dtype, shape bucket), drawn from finished sessions and merged across
 * sessions, machines and devices (kctl export; docs/kctl.md, "export").
 *
 * A table is a JSON document, schema "kctl.tuned" version 1:
 *   {schema, version, kernels: [{kernel, template_sha256, shape_keys: [..],
 *     defaults: {params, build_options},
 *     entries: [{device: {key, name, vendor, driver, platform}, dtype,
 *                bucket: {name, values: {KEY: int}}, params, build_options,
 *                figures: {median_ms, gflops, speedup_vs_reference,
 *                          speedup_vs_baseline, robust_cv, quality, confirmed},
 *                provenance: {session, variant, round, spec_sha256}}]}]}
 * Kernels are sorted by name, entries by device key, dtype, bucket name,
 * so that the same inputs give the same bytes.  tuned-c.c writes the same
 * table as a C header.
 *
 * Errors: 0, or a negative KERR_* code with msg saying what and where,
 * e.g. "t.json: $.kernels[0].entries[2].params.TM: expected an integer, got string".
 */
#ifndef KCTL_TUNED_H
#define KCTL_TUNED_H

#include <jansson.h>
#include <stddef.h>

#include "sbuf.h"

struct store;

#define TUNED_SCHEMA  "kctl.tuned"
#define TUNED_VERSION 1
/* A table read for --merge is refused above this size (KERR_LIMIT). */
#define TUNED_MAX_BYTES (64u << 20)

/*
 * The table of session id (its full id) as a new document in *out: one
 * entry, the session's winner, on the session's device, at its timed
 * shape.  The spec is read again from the path the session recorded and
 * must still hash as it did (KERR_INVALID otherwise, as for a resume).
 * Fails with KERR_NOTFOUND when the session has no winner (no variant
 * passed its checks) and KERR_INVALID when its figures lack what a table
 * needs (the device, the median).
 */
int tuned_from_session(struct store *st, const char *id, json_t **out, char *msg, size_t n);

/*
 * Checks that doc is a whole kctl.tuned table; where (a file name) starts
 * the message.  KERR_PARSE for a wrong type or missing key, KERR_INVALID
 * for an unknown schema or version, a key out of place, or duplicate
 * entries.
 */
int tuned_check(json_t *doc, const char *where, char *msg, size_t n);

/*
 * Merges table src (checked) into table dst (checked; modified): for the
 * same kernel, device key, dtype and bucket values the entry with the
 * lower median_ms wins; on a tie the lower robust_cv (a missing one
 * loses), then the entry dst already had.  A kernel of the same name whose
 * template, shape keys or defaults differ is refused (KERR_INVALID, the
 * message naming where src came from): tables of different kernels are
 * never mixed.  Each replaced entry is logged (info).
 */
int tuned_merge(json_t *dst, json_t *src, const char *where, char *msg, size_t n);

/* An empty table (no kernels) to merge into: a new reference. */
json_t *tuned_new(void);

/*
 * Appends table doc (checked, at least one entry) to b as a C99 header:
 * the entries as static const data and an inline lookup,
 * kctl_tuned_lookup(), that picks parameters through the fallback order
 * exact bucket, nearest bucket of the same device and dtype, defaults.
 * Every text of the table is written as an escaped string literal.
 * KERR_LIMIT when a text is longer than a C99 compiler must accept (4095
 * bytes).
 */
int tuned_render_c(json_t *doc, struct sbuf *b, char *msg, size_t n);

#endif
