/*
 * tune-space.c - the tuner's space and its rendering: random numbers, sets of
 * vectors, which vectors are valid (every constraint at every shape), the
 * space enumerated or probed at open, the template's own vector, and a
 * vector as params (tune_params_of); spec-render.c renders one.
 *
 * May use: tune-internal.h (struct tune), spec, expr and common/.  Knows
 * nothing of the strategies (tune.c, tune-model.c) or rounds (tune-run.c).
 */
#include "tune-internal.h"
#include "err.h"
#include "expr.h"
#include "log.h"
#include "sbuf.h"
#include "splitmix.h"
#include "xalloc.h"

#include <assert.h>
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Spaces of up to this many combinations are enumerated and filtered at open. */
#define TUNE_ENUM_MAX ((uint64_t)1 << 16)
/* Random combinations checked at open when the space is larger. */
#define TUNE_PROBES 1024
/* Products of tunables the model takes as features of their own, at most. */
#define TUNE_PRODUCTS 8
/* Tunables in one product, at most (more are left out of it). */
#define TUNE_PRODUCT_MAX 16

/* --- random numbers: splitmix64, any state (even 0) is fine ------------- */

/* Uniform in [0, n), n > 0, without modulo bias. */
size_t tune_rng_below(uint64_t *s, size_t n)
{
	uint64_t lim = UINT64_MAX - UINT64_MAX % n, x;

	do
		x = splitmix_next(s);
	while (x >= lim);
	return (size_t)(x % n);
}

void tune_shuffle(uint64_t *rng, void *base, size_t n, size_t size)
{
	unsigned char *a = base, tmp[64];

	assert(size <= sizeof(tmp));
	for (size_t i = n; i > 1; i--) {
		size_t j = tune_rng_below(rng, i);

		memcpy(tmp, a + (i - 1) * size, size);
		memcpy(a + (i - 1) * size, a + j * size, size);
		memcpy(a + j * size, tmp, size);
	}
}

/* --- sets of vectors (open addressing over a flat array) ---------------- */

static uint64_t vec_hash(const uint32_t *v, size_t k)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < k; i++) {
		h ^= v[i];
		h *= 1099511628211ull;
	}
	return h;
}

static size_t *vset_slot(const struct vset *s, const uint32_t *v)
{
	size_t i = (size_t)vec_hash(v, s->k) & (s->nslot - 1);

	while (s->slot[i] && memcmp(s->v + (s->slot[i] - 1) * s->k, v, s->k * sizeof(*v)))
		i = (i + 1) & (s->nslot - 1);
	return &s->slot[i];
}

int vset_has(const struct vset *s, const uint32_t *v)
{
	return s->nslot && *vset_slot(s, v);
}

void vset_add(struct vset *s, const uint32_t *v)
{
	if (vset_has(s, v))
		return;
	if (2 * (s->n + 1) > s->nslot) {
		s->nslot = s->nslot ? 2 * s->nslot : 16;
		free(s->slot);
		s->slot = xcalloc(s->nslot, sizeof(*s->slot));
		for (size_t i = 0; i < s->n; i++)
			*vset_slot(s, s->v + i * s->k) = i + 1;
	}
	if (s->n == s->alloc) {
		s->alloc = s->alloc ? 2 * s->alloc : 16;
		s->v = xreallocarray(s->v, s->alloc * s->k, sizeof(*s->v));
	}
	memcpy(s->v + s->n * s->k, v, s->k * sizeof(*v));
	s->n++;
	*vset_slot(s, v) = s->n;
}

void vset_release(struct vset *s)
{
	free(s->v);
	free(s->slot);
	memset(s, 0, sizeof(*s));
}

/* Sum of the index distances: how many one-position steps apart a and b are. */
size_t tune_vec_dist(const uint32_t *a, const uint32_t *b, size_t k)
{
	size_t d = 0;

	for (size_t i = 0; i < k; i++)
		d += a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
	return d;
}

/*
 * Evaluates constraint c at shape e for v, whose tunables outside set
 * (when set is given) have no value yet.  Returns expr_prog_eval's code.
 */
static int cons_eval(struct tune *t, size_t c, size_t e, const uint32_t *v, const uint64_t *set,
		     int64_t *val, char *why, size_t n)
{
	struct tune_cons *tc = &t->cons[c];
	size_t nn = expr_prog_names(tc->prog);
	int64_t *vals = tc->vals + e * nn;
	unsigned char *known = tc->known + e * nn;

	for (size_t i = 0; i < nn; i++) {
		int j = tc->tun[i];

		if (j < 0)
			continue;
		known[i] = !set || (j < 64 && (*set >> j & 1));
		if (known[i])
			vals[i] = t->s->tunables[j].values[v[j]];
	}
	return expr_prog_eval(tc->prog, vals, known, val, why, n);
}

/*
 * Returns 1 when v satisfies every constraint at every shape.  A constraint
 * that does not evaluate makes v invalid; the first such message is kept in
 * err when err is given and still empty.
 */
int tune_vec_valid(struct tune *t, const uint32_t *v, char *err, size_t errlen)
{
	const struct spec *s = t->s;
	char why[256];
	int64_t val;

	for (size_t e = 0; e < t->nenv; e++) {
		for (size_t c = 0; c < s->nconstraints; c++) {
			if (cons_eval(t, c, e, v, NULL, &val, why, sizeof(why))) {
				if (err && !err[0])
					snprintf(err, errlen, "'%s': %s", s->constraints[c], why);
				return 0;
			}
			if (!val)
				return 0;
		}
	}
	return 1;
}

/*
 * Fills env, one name table per shape (one empty table when there are no
 * shapes): t->nenv of them, to be released by the caller even on failure.
 */
static int shape_envs(struct tune *t, struct expr_vars *env, char *msg, size_t n)
{
	json_t *sh, *x;
	const char *key;
	size_t i;

	json_array_foreach (t->s->shapes, i, sh) {
		json_t *vals = json_object_get(sh, "values");

		if (!json_is_object(vals))
			return kerr_set(msg, n, KERR_INVALID, "shapes[%zu]: no \"values\" object",
					i);
		json_object_foreach (vals, key, x) {
			if (!json_is_integer(x))
				return kerr_set(msg, n, KERR_INVALID,
						"shapes[%zu].values.%s: not an integer", i, key);
			expr_vars_set(&env[i], key, json_integer_value(x));
		}
	}
	return 0;
}

int tune_compile(struct tune *t, char *msg, size_t n)
{
	const struct spec *s = t->s;
	struct expr_vars *env;
	char why[256];
	int rc;

	t->nenv = json_array_size(s->shapes) ? json_array_size(s->shapes) : 1;
	env = xcalloc(t->nenv, sizeof(*env));
	rc = shape_envs(t, env, msg, n);
	t->cons = xcalloc(s->nconstraints + 1, sizeof(*t->cons));
	for (size_t c = 0; !rc && c < s->nconstraints; c++) {
		struct tune_cons *tc = &t->cons[c];
		size_t nn;

		if (expr_compile(s->constraints[c], &tc->prog, why, sizeof(why))) {
			rc = kerr_set(msg, n, KERR_INVALID, "tunables.constraints[%zu] '%s': %s", c,
				      s->constraints[c], why);
			break;
		}
		nn = expr_prog_names(tc->prog);
		tc->tun = xcalloc(nn + 1, sizeof(*tc->tun));
		tc->vals = xcalloc(t->nenv * nn + 1, sizeof(*tc->vals));
		tc->known = xcalloc(t->nenv * nn + 1, sizeof(*tc->known));
		for (size_t i = 0; i < nn; i++) {
			const char *name = expr_prog_name(tc->prog, i);

			/* a tunable's value hides a shape's of the same name */
			tc->tun[i] = spec_tunable_index(s, name, strlen(name));
			for (size_t e = 0; tc->tun[i] < 0 && e < t->nenv; e++)
				tc->known[e * nn + i] =
					!expr_vars_get(&env[e], name, &tc->vals[e * nn + i]);
		}
	}
	for (size_t e = 0; e < t->nenv; e++)
		expr_vars_release(&env[e]);
	free(env);
	return rc;
}

void tune_cons_free(struct tune *t)
{
	for (size_t c = 0; t->cons && c < t->s->nconstraints; c++) {
		expr_prog_free(t->cons[c].prog);
		free(t->cons[c].tun);
		free(t->cons[c].vals);
		free(t->cons[c].known);
	}
	free(t->cons);
	t->cons = NULL;
}

/* Lists the valid vectors of a small space; returns how many. */
static size_t space_list(struct tune *t, char *err, size_t errlen)
{
	uint32_t *v = xcalloc(t->k, sizeof(*v));
	size_t j, alloc = 0;

	do {
		if (tune_vec_valid(t, v, err, errlen)) {
			if (t->nspace == alloc) {
				alloc = alloc ? 2 * alloc : 64;
				t->space = xreallocarray(t->space, alloc * t->k, sizeof(*v));
			}
			memcpy(t->space + t->nspace * t->k, v, t->k * sizeof(*v));
			t->nspace++;
		}
		/* odometer, last tunable fastest */
		for (j = t->k; j-- > 0;) {
			if (++v[j] < t->s->tunables[j].nvalues)
				break;
			v[j] = 0;
		}
	} while (j != SIZE_MAX);
	free(v);
	return t->nspace;
}

/* Checks random vectors of a large space; returns how many were valid. */
static size_t space_probe(struct tune *t, char *err, size_t errlen)
{
	uint32_t *v = xcalloc(t->k, sizeof(*v));
	uint64_t rng = t->s->seed;
	size_t ok = 0;

	for (size_t i = 0; i < TUNE_PROBES; i++) {
		for (size_t j = 0; j < t->k; j++)
			v[j] = (uint32_t)tune_rng_below(&rng, t->s->tunables[j].nvalues);
		ok += tune_vec_valid(t, v, err, errlen);
	}
	free(v);
	return ok;
}

int tune_space(struct tune *t, char *msg, size_t n)
{
	uint64_t total = 1;
	char err[512] = "";
	size_t ok;

	for (size_t j = 0; j < t->k; j++) {
		if (!t->s->tunables[j].nvalues || t->s->tunables[j].nvalues > UINT32_MAX)
			return kerr_set(msg, n, KERR_INVALID,
					"tunables.%s: needs 1 to %" PRIu32 " values",
					t->s->tunables[j].name, UINT32_MAX);
		if (total <= TUNE_ENUM_MAX)
			total *= t->s->tunables[j].nvalues;
	}
	t->enumerated = total <= TUNE_ENUM_MAX;
	ok = t->enumerated ? space_list(t, err, sizeof(err)) : space_probe(t, err, sizeof(err));
	if (!t->enumerated) {
		t->probed = TUNE_PROBES;
		t->probed_ok = ok;
	}
	if (!ok && err[0])
		return kerr_set(msg, n, KERR_INVALID,
				"tunables: every combination fails constraint %s", err);
	if (!ok && t->enumerated)
		return kerr_set(msg, n, KERR_INVALID,
				"tunables: no combination satisfies the constraints");
	return 0;
}

void tune_starts(struct tune *t)
{
	const struct spec *s = t->s;

	t->starts = xcalloc(s->nstarts * t->k + 1, sizeof(*t->starts));
	t->start_at = xcalloc(s->nstarts + 1, sizeof(*t->start_at));
	for (size_t i = 0; i < s->nstarts; i++) {
		uint32_t *v = t->starts + t->nstarts * t->k;
		const int64_t *val = s->starts + i * t->k;
		char err[512] = "";
		size_t j = 0;

		while (j < t->k && tune_value_index(&s->tunables[j], val[j], &v[j]))
			j++;
		if (j < t->k)
			log_warn("tunables.starts[%zu] skipped: %s=%lld is not one of "
				 "tunables.params.%s",
				 i, s->tunables[j].name, (long long)val[j], s->tunables[j].name);
		else if (!tune_vec_valid(t, v, err, sizeof(err)))
			log_warn("tunables.starts[%zu] skipped: the point does not keep the "
				 "constraints%s%s",
				 i, err[0] ? ": " : "", err);
		else
			t->start_at[t->nstarts++] = i;
	}
}

/* --- vectors built one tunable at a time ------------------------------------ */

void tune_masks(struct tune *t)
{
	t->cmask = xcalloc(t->s->nconstraints + 1, sizeof(*t->cmask));
	for (size_t c = 0; c < t->s->nconstraints; c++) {
		const struct tune_cons *tc = &t->cons[c];

		for (size_t i = 0; i < expr_prog_names(tc->prog); i++)
			if (tc->tun[i] >= 0 && tc->tun[i] < 64)
				t->cmask[c] |= (uint64_t)1 << tc->tun[i];
	}
}

int tune_vec_valid_after(struct tune *t, const uint32_t *v, size_t j)
{
	int64_t val;

	if (t->k > 64 || !t->cmask)
		return tune_vec_valid(t, v, NULL, 0);
	for (size_t e = 0; e < t->nenv; e++)
		for (size_t c = 0; c < t->s->nconstraints; c++)
			if ((t->cmask[c] >> j & 1) &&
			    (cons_eval(t, c, e, v, NULL, &val, NULL, 0) || !val))
				return 0;
	return 1;
}

/* Whether v's tunable j (just set) keeps the constraints that set completes. */
static int value_keeps(struct tune *t, const uint32_t *v, size_t j, uint64_t set)
{
	uint64_t bit = (uint64_t)1 << j;
	int64_t val;

	for (size_t c = 0; c < t->s->nconstraints; c++) {
		if (!(t->cmask[c] & bit) || (t->cmask[c] & ~set))
			continue;
		for (size_t e = 0; e < t->nenv; e++)
			if (cons_eval(t, c, e, v, &set, &val, NULL, 0) || !val)
				return 0;
	}
	return 1;
}

int tune_build(struct tune *t, uint64_t *rng, uint32_t *v)
{
	size_t order[64];
	uint64_t set = 0;

	if (t->k > 64 || !t->cmask)
		return 0;
	for (size_t i = 0; i < t->k; i++)
		order[i] = i;
	tune_shuffle(rng, order, t->k, sizeof(*order));
	for (size_t i = 0; i < t->k; i++) {
		size_t j = order[i], nv = t->s->tunables[j].nvalues;
		size_t first = tune_rng_below(rng, nv),
		       scan = nv < TUNE_BUILD_SCAN ? nv : TUNE_BUILD_SCAN;
		int kept = 0;

		set |= (uint64_t)1 << j;
		/* from a random value on, each in turn: every value has its chance */
		for (size_t step = 0; step < scan && !kept; step++) {
			v[j] = (uint32_t)((first + step) % nv);
			kept = value_keeps(t, v, j, set);
		}
		if (!kept)
			return 0;
	}
	return 1;
}

/* --- the model's features --------------------------------------------------- */

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return (x > y) - (x < y);
}

/* Adds the product of the n tunables idx (sorted here) unless it is one already. */
static void product_add(struct tune *t, size_t *idx, size_t n)
{
	struct tune_product *p;
	double lo = 1, hi = 1;
	size_t m = 0;

	qsort(idx, n, sizeof(*idx), cmp_size);
	for (size_t i = 0; i < n; i++)
		if (!m || idx[m - 1] != idx[i])
			idx[m++] = idx[i];
	if (m < 2 || t->nprod == TUNE_PRODUCTS)
		return;
	for (size_t i = 0; i < t->nprod; i++)
		if (t->prod[i].n == m && !memcmp(t->prod[i].idx, idx, m * sizeof(*idx)))
			return;
	for (size_t i = 0; i < m; i++) {
		const struct tunable *tu = &t->s->tunables[idx[i]];
		double least = HUGE_VAL, most = 0;

		for (size_t e = 0; e < tu->nvalues; e++) {
			double a = fabs((double)tu->values[e]);

			least = a < least ? a : least;
			most = a > most ? a : most;
		}
		lo *= least;
		hi *= most;
	}
	if (!(log2(1 + hi) > log2(1 + lo)))
		return; /* the same everywhere: nothing to tell points apart by */
	t->prod = xreallocarray(t->prod, t->nprod + 1, sizeof(*t->prod));
	p = &t->prod[t->nprod++];
	p->idx = xcalloc(m, sizeof(*p->idx));
	memcpy(p->idx, idx, m * sizeof(*idx));
	p->n = m;
	p->lo = log2(1 + lo);
	p->hi = log2(1 + hi);
}

/*
 * The products in one constraint: chains of factors joined by '*' (names
 * and numbers), any other token ending a chain, a function's name too.  In
 * "4 * KB * (WY * TM + WX * TN * VN) <= 65536" they are WY * TM and
 * WX * TN * VN (KB stands alone: the parenthesis ends its chain).
 */
static void products_in(struct tune *t, const char *p)
{
	size_t idx[TUNE_PRODUCT_MAX], n = 0;
	int joined = 0, factor = 0; /* after "factor *"; after a factor */

	while (*p) {
		size_t len = 0;
		const char *q;
		int j = -1;

		if (isspace((unsigned char)*p)) {
			p++;
			continue;
		}
		if (!isalnum((unsigned char)*p) && *p != '_') {
			if (*p == '*' && factor) {
				joined = 1;
			} else {
				product_add(t, idx, n);
				n = 0;
				joined = 0;
			}
			factor = 0;
			p++;
			continue;
		}
		while (isalnum((unsigned char)p[len]) || p[len] == '_')
			len++;
		if (!joined) {
			product_add(t, idx, n);
			n = 0;
		}
		for (q = p + len; isspace((unsigned char)*q); q++)
			;
		joined = 0;
		factor = *q != '(';
		if (!factor) { /* a function: its name is no factor */
			product_add(t, idx, n);
			n = 0;
		} else if (!isdigit((unsigned char)*p)) {
			j = spec_tunable_index(t->s, p, len);
		}
		if (j >= 0 && n < TUNE_PRODUCT_MAX)
			idx[n++] = (size_t)j;
		p += len;
	}
	product_add(t, idx, n);
}

void tune_products(struct tune *t)
{
	for (size_t i = 0; i < t->s->nconstraints; i++)
		products_in(t, t->s->constraints[i]);
	t->nf = t->k + t->nprod;
}

void tune_features(const struct tune *t, const uint32_t *v, double *x, size_t d)
{
	for (size_t j = 0; j < t->k; j++) {
		size_t nv = t->s->tunables[j].nvalues;

		x[j] = nv > 1 ? (double)v[j] / (double)(nv - 1) : 0;
	}
	for (size_t i = 0; i < t->nprod && t->k + i < d; i++) {
		const struct tune_product *p = &t->prod[i];
		double prod = 1;

		for (size_t a = 0; a < p->n; a++)
			prod *= fabs((double)t->s->tunables[p->idx[a]].values[v[p->idx[a]]]);
		x[t->k + i] = (log2(1 + prod) - p->lo) / (p->hi - p->lo);
	}
}

/* --- #define lines ---------------------------------------------------------- */

int tune_value_index(const struct tunable *tu, int64_t value, uint32_t *out)
{
	for (size_t i = 0; i < tu->nvalues; i++)
		if (tu->values[i] == value) {
			*out = (uint32_t)i;
			return 1;
		}
	return 0;
}

json_t *tune_params_of(const struct tune *t, const uint32_t *v)
{
	json_t *o = json_object();

	for (size_t j = 0; j < t->k; j++)
		json_object_set_new(o, t->s->tunables[j].name,
				    json_integer(t->s->tunables[j].values[v[j]]));
	return o;
}

/*
 * The template's own vector: the first "#define NAME value" of each
 * tunable, when every one has a value from its list.
 */
void tune_defaults(struct tune *t)
{
	const char *src = t->s->template_src;
	uint32_t *v = xcalloc(t->k, sizeof(*v));
	char *have = xcalloc(t->k, 1), why[128];
	size_t off = 0, found = 0;

	while (src[off] && found < t->k) {
		size_t len = strcspn(src + off, "\n");
		struct define_line d;
		int j;

		if (define_line_parse(src + off, len, &d) &&
		    (j = spec_tunable_index(t->s, src + off + d.name, d.name_len)) >= 0 &&
		    !have[j]) {
			char *text = xstrndup(src + off + d.value, d.value_end - d.value);
			int64_t val;

			have[j] = 1;
			if (!expr_eval(text, NULL, NULL, &val, why, sizeof(why)) &&
			    tune_value_index(&t->s->tunables[j], val, &v[j]))
				found++;
			free(text);
		}
		off += len + (src[off + len] == '\n');
	}
	if (found == t->k)
		t->defaults = v;
	else
		free(v);
	free(have);
}
