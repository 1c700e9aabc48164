/*
 * initdist.h - the init distributions of a buffer in the EvalBatch document.
 *
 * The document (docs/evalbatch.md) is read twice: by evalpod from JSON and,
 * in its YAML form, by kctl's spec loader.  Both readers take the same
 * distributions with the same keys, defaults and rules from this table, so
 * the two can never disagree about what an init means.
 *
 * Indexed like enum init_dist in evalpod/batch.h.
 */
#ifndef KCTL_INITDIST_H
#define KCTL_INITDIST_H

#include <stddef.h>

enum { INITDIST_NR = 6 };

struct initdist {
	const char *key_a, *key_b; /* the keys read into init a and b; NULL when unused */
	double def_a, def_b;       /* their defaults */
	int a_required;
	int integral;   /* a and b are integers */
	int ordered;    /* b >= a */
	int b_nonneg;   /* b >= 0 */
	int float_only; /* gives non-integer values: float buffers only */
};

/* "zero", "const", "uniform", "normal", "int", "iota", then NULL. */
extern const char *const initdist_names[INITDIST_NR + 1];
extern const struct initdist initdists[INITDIST_NR];

#endif
