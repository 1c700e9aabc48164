/*
 * tune.c - the built-in "tune" proposer and the proposer table.
 *
 * The tuner searches the spec's tunables: a vector picks one value per
 * tunable (held as indices into the value lists) and is valid when every
 * constraint holds at every shape.  Small spaces are enumerated and
 * filtered once at open; a recorded space (tune_restrict) is its list.
 * Each round either walks every untried valid vector (when they all fit
 * in the budget) or follows the strategy:
 *   - "tune" (the default): a Latin-hypercube round spread over the whole
 *     space first, then a Gaussian process (surrogate.c) fitted to the
 *     session's measurements picks points by expected improvement over
 *     the model's mean at the best point, scaled by the chance of running,
 *     a batch spread out by damping the candidates near each pick;
 *   - "evolve" (the tuner before the model): one- and two-step moves and
 *     crossovers of the lineages' bests, wide moves and random points;
 *   - "random": uniform random valid points, the baseline for replays.
 * Every choice draws from the session's random state and the model is
 * deterministic, so a resumed session proposes exactly what the
 * interrupted one would have.
 */
#include "propose.h"
#include "err.h"
#include "surrogate.h"
#include "expr.h"
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
/* Random draws allowed per wanted proposal before giving up on random points. */
#define TUNE_DRAWS 256
/* Fresh candidates compared for each spread-out random point. */
#define TUNE_SPREAD 8
/* Attempts per wanted child for crossovers and wide moves. */
#define TUNE_TRIES 16

/* --- random numbers: splitmix64, any state (even 0) is fine ------------- */

/* Uniform in [0, n), n > 0, without modulo bias. */
static size_t rng_below(uint64_t *s, size_t n)
{
	uint64_t lim = UINT64_MAX - UINT64_MAX % n, x;

	do
		x = splitmix_next(s);
	while (x >= lim);
	return (size_t)(x % n);
}

static void shuffle(uint64_t *rng, void *base, size_t n, size_t size)
{
	unsigned char *a = base, tmp[64];

	assert(size <= sizeof(tmp));
	for (size_t i = n; i > 1; i--) {
		size_t j = rng_below(rng, i);

		memcpy(tmp, a + (i - 1) * size, size);
		memcpy(a + (i - 1) * size, a + j * size, size);
		memcpy(a + j * size, tmp, size);
	}
}

/* --- sets of vectors (open addressing over a flat array) ---------------- */

struct vset {
	size_t k;    /* entries per vector */
	uint32_t *v; /* n vectors of k entries, in insertion order */
	size_t n, alloc;
	size_t *slot; /* 0 = empty, else index + 1 */
	size_t nslot; /* a power of two, or 0 */
};

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

static int vset_has(const struct vset *s, const uint32_t *v)
{
	return s->nslot && *vset_slot(s, v);
}

static void vset_add(struct vset *s, const uint32_t *v)
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

static void vset_release(struct vset *s)
{
	free(s->v);
	free(s->slot);
	memset(s, 0, sizeof(*s));
}

/* Sum of the index distances: how many one-position steps apart a and b are. */
static size_t vec_dist(const uint32_t *a, const uint32_t *b, size_t k)
{
	size_t d = 0;

	for (size_t i = 0; i < k; i++)
		d += a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
	return d;
}

/* --- the tuner's state ---------------------------------------------------- */

struct tune {
	const struct spec *s;
	size_t k;              /* number of tunables */
	struct expr_vars *env; /* one per shape: its values, then the vector's */
	size_t nenv;
	int enumerated;  /* the space was small enough to list */
	uint32_t *space; /* then: its valid vectors, in enumeration order */
	size_t nspace;
	uint32_t *defaults; /* the template's own vector, or NULL */
	enum tune_strategy strategy;
	struct vset listed; /* a restricted space (tune_restrict): its points; else empty */
};

/*
 * Returns 1 when v satisfies every constraint at every shape.  A constraint
 * that does not evaluate makes v invalid; the first such message is kept in
 * err when err is given and still empty.
 */
static int vec_valid(struct tune *t, const uint32_t *v, char *err, size_t errlen)
{
	const struct spec *s = t->s;
	char why[256];
	int64_t val;

	if (!s->nconstraints)
		return 1;
	for (size_t e = 0; e < t->nenv; e++) {
		for (size_t j = 0; j < t->k; j++)
			expr_vars_set(&t->env[e], s->tunables[j].name, s->tunables[j].values[v[j]]);
		for (size_t c = 0; c < s->nconstraints; c++) {
			if (expr_eval(s->constraints[c], expr_vars_lookup, &t->env[e], &val, why,
				      sizeof(why))) {
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

/* One name table per shape (one empty table when there are no shapes). */
static int tune_envs(struct tune *t, char *msg, size_t n)
{
	json_t *shapes = t->s->shapes, *sh, *x;
	const char *key;
	size_t i;

	t->nenv = json_array_size(shapes) ? json_array_size(shapes) : 1;
	t->env = xcalloc(t->nenv, sizeof(*t->env));
	json_array_foreach (shapes, i, sh) {
		json_t *vals = json_object_get(sh, "values");

		if (!json_is_object(vals))
			return kerr_set(msg, n, KERR_INVALID, "shapes[%zu]: no \"values\" object",
					i);
		json_object_foreach (vals, key, x) {
			if (!json_is_integer(x))
				return kerr_set(msg, n, KERR_INVALID,
						"shapes[%zu].values.%s: not an integer", i, key);
			expr_vars_set(&t->env[i], key, json_integer_value(x));
		}
	}
	return 0;
}

/* Lists the valid vectors of a small space; returns how many. */
static size_t space_list(struct tune *t, char *err, size_t errlen)
{
	uint32_t *v = xcalloc(t->k, sizeof(*v));
	size_t j, alloc = 0;

	do {
		if (vec_valid(t, v, err, errlen)) {
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
			v[j] = (uint32_t)rng_below(&rng, t->s->tunables[j].nvalues);
		ok += vec_valid(t, v, err, errlen);
	}
	free(v);
	return ok;
}

static int tune_space(struct tune *t, char *msg, size_t n)
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
	if (!ok && err[0])
		return kerr_set(msg, n, KERR_INVALID,
				"tunables: every combination fails constraint %s", err);
	if (!ok && t->enumerated)
		return kerr_set(msg, n, KERR_INVALID,
				"tunables: no combination satisfies the constraints");
	return 0;
}

/* --- #define lines ---------------------------------------------------------- */

static int tunable_index(const struct spec *s, const char *name, size_t len)
{
	for (size_t j = 0; j < s->ntunables; j++)
		if (strlen(s->tunables[j].name) == len && !memcmp(s->tunables[j].name, name, len))
			return (int)j;
	return -1;
}

static int value_index(const struct tunable *tu, int64_t value, uint32_t *out)
{
	for (size_t i = 0; i < tu->nvalues; i++)
		if (tu->values[i] == value) {
			*out = (uint32_t)i;
			return 1;
		}
	return 0;
}

/*
 * The template's own vector: the first "#define NAME value" of each
 * tunable, when every one has a value from its list.
 */
static void tune_defaults(struct tune *t)
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
		    (j = tunable_index(t->s, src + off + d.name, d.name_len)) >= 0 && !have[j]) {
			char *text = xstrndup(src + off + d.value, d.value_end - d.value);
			int64_t val;

			have[j] = 1;
			if (!expr_eval(text, NULL, NULL, &val, why, sizeof(why)) &&
			    value_index(&t->s->tunables[j], val, &v[j]))
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

/* --- rendering -------------------------------------------------------------- */

/* Reads params into vals (one per tunable, in spec order). */
static int params_values(const struct spec *s, json_t *params, int64_t *vals, char *msg, size_t n)
{
	const char *key;
	json_t *x;

	if (!json_is_object(params))
		return kerr_set(msg, n, KERR_INVALID, "params: not an object");
	json_object_foreach (params, key, x) {
		if (tunable_index(s, key, strlen(key)) < 0)
			return kerr_set(msg, n, KERR_INVALID, "params: '%s' is not a tunable", key);
	}
	for (size_t j = 0; j < s->ntunables; j++) {
		x = json_object_get(params, s->tunables[j].name);
		if (!json_is_integer(x))
			return kerr_set(msg, n, KERR_INVALID, "params: '%s' is %s",
					s->tunables[j].name, x ? "not an integer" : "missing");
		vals[j] = json_integer_value(x);
	}
	return 0;
}

static char *render_options(const struct spec *s, const int64_t *vals)
{
	struct sbuf sb = SBUF_INIT;

	sbuf_adds(&sb, s->build_options ? s->build_options : "");
	for (size_t j = 0; j < s->ntunables; j++)
		sbuf_addf(&sb, "%s-D%s=%" PRId64, sb.len ? " " : "", s->tunables[j].name, vals[j]);
	return sbuf_detach(&sb, NULL);
}

/*
 * Copies the body of block b, giving every tunable's #define line its new
 * value (the rest of the line, comment included, is kept); marks in found
 * the tunables that had a line.  sb may be NULL to only mark.
 */
static void render_body(const struct spec *s, const struct block *b, const int64_t *vals,
			char *found, struct sbuf *sb)
{
	const char *src = s->template_src;

	for (size_t off = b->start; off < b->end;) {
		size_t len = strcspn(src + off, "\n"), next;
		const char *p = src + off;
		struct define_line d;
		int j = -1;

		if (off + len > b->end)
			len = b->end - off;
		next = off + len + (off + len < b->end);
		if (define_line_parse(p, len, &d))
			j = tunable_index(s, p + d.name, d.name_len);
		if (j >= 0)
			found[j] = 1;
		if (sb && j >= 0) {
			sbuf_add(sb, p, d.value);
			sbuf_addf(sb, "%s%" PRId64, d.value == d.name + d.name_len ? " " : "",
				  vals[j]);
			sbuf_add(sb, p + d.value_end, next - off - d.value_end);
		} else if (sb) {
			sbuf_add(sb, p, next - off);
		}
		off = next;
	}
}

static char *render_define(const struct spec *s, const struct blocks *bl, const int64_t *vals)
{
	const char *src = s->template_src;
	char *found = xcalloc(s->ntunables, 1);
	struct sbuf sb = SBUF_INIT;
	size_t prev = 0;

	for (size_t i = 0; i < bl->n; i++)
		render_body(s, &bl->b[i], vals, found, NULL);
	for (size_t i = 0; i < bl->n; i++) {
		sbuf_add(&sb, src + prev, bl->b[i].start - prev);
		for (size_t j = 0; i == 0 && j < s->ntunables; j++)
			if (!found[j])
				sbuf_addf(&sb, "%s#define %s %" PRId64 "\n", bl->b[0].indent,
					  s->tunables[j].name, vals[j]);
		render_body(s, &bl->b[i], vals, found, &sb);
		prev = bl->b[i].end;
	}
	sbuf_adds(&sb, src + prev);
	free(found);
	return sbuf_detach(&sb, NULL);
}

int tune_render(const struct spec *s, const struct blocks *bl, json_t *params, char **source,
		char **options, char *msg, size_t n)
{
	int64_t *vals = xcalloc(s->ntunables, sizeof(*vals));
	char why[512];
	int rc;

	*source = *options = NULL;
	rc = params_values(s, params, vals, msg, n);
	if (rc)
		goto out;
	if (s->render == RENDER_OPTIONS) {
		*source = xstrdup(s->template_src);
		*options = render_options(s, vals);
	} else {
		*source = render_define(s, bl, vals);
		*options = xstrdup(s->build_options ? s->build_options : "");
	}
	if (blocks_verify(s->template_src, bl, *source, s->marker_start, s->marker_end, why,
			  sizeof(why)))
		rc = kerr_set(msg, n, KERR_INVALID, "rendering the tunables broke the template: %s",
			      why);
out:
	if (rc) {
		free(*source);
		free(*options);
		*source = *options = NULL;
	}
	free(vals);
	return rc;
}

/* --- one round's proposals ------------------------------------------------------- */

/* Outcomes that say a combination cannot run at all: it is never proposed again. */
static const struct {
	const char *status;
	const char *fault_kind; /* NULL: any */
} tune_refusals[] = {
	{ "compile_error", NULL },
	{ "runtime_error", "launch_setup" },
	{ "runtime_error", "bad_geometry" },
	{ "runtime_error", "launch_failed" },
	{ "crash", NULL },
};

static int cand_refused(const struct cand *c)
{
	for (size_t i = 0; c->status && i < sizeof(tune_refusals) / sizeof(tune_refusals[0]); i++)
		if (!strcmp(c->status, tune_refusals[i].status) &&
		    (!tune_refusals[i].fault_kind ||
		     (c->fault_kind && !strcmp(c->fault_kind, tune_refusals[i].fault_kind))))
			return 1;
	return 0;
}

static int vec_of_params(const struct tune *t, json_t *params, uint32_t *v)
{
	for (size_t j = 0; j < t->k; j++) {
		json_t *x = json_object_get(params, t->s->tunables[j].name);

		if (!json_is_integer(x) ||
		    !value_index(&t->s->tunables[j], json_integer_value(x), &v[j]))
			return 0;
	}
	return 1;
}

/*
 * Fills v with c's vector.  A variant without params that is the template
 * itself (the starting point) has the template's own vector.  Returns 0
 * when c has no vector in the space.
 */
static int vec_of_cand(const struct tune *t, const struct cand *c, uint32_t *v)
{
	const char *opts = t->s->build_options ? t->s->build_options : "";

	if (c->params)
		return vec_of_params(t, c->params, v);
	if (!t->defaults || !c->source || strcmp(c->source, t->s->template_src) ||
	    strcmp(c->options ? c->options : "", opts))
		return 0;
	memcpy(v, t->defaults, t->k * sizeof(*v));
	return 1;
}

struct parent {
	const char *id;
	const uint32_t *v;
};

struct run {
	struct tune *t;
	const struct propose_ctx *ctx;
	uint64_t *rng;
	struct vset seen;    /* the history's vectors and this round's proposals */
	struct vset refused; /* vectors the device turned down */
	struct parent *par;  /* the parents that have a vector, best first */
	uint32_t *parvec;    /* their vectors */
	size_t npar;
	size_t *fresh; /* enumerated spaces: the untried valid vectors */
	size_t nfresh;
	char (*hashes)[65]; /* of out[] */
	struct proposal *out;
	size_t n;
	char *msg;
	size_t mlen;
};

static void run_init(struct run *r, struct tune *t, const struct propose_ctx *ctx, char *msg,
		     size_t mlen)
{
	uint32_t *v = xcalloc(t->k, sizeof(*v));

	memset(r, 0, sizeof(*r));
	r->t = t;
	r->ctx = ctx;
	r->rng = ctx->rng;
	r->msg = msg;
	r->mlen = mlen;
	r->seen.k = r->refused.k = t->k;
	for (size_t i = 0; i < ctx->nhistory; i++) {
		if (!vec_of_cand(t, &ctx->history[i], v))
			continue;
		vset_add(&r->seen, v);
		if (cand_refused(&ctx->history[i]))
			vset_add(&r->refused, v);
	}
	r->par = xcalloc(ctx->nparents, sizeof(*r->par));
	r->parvec = xcalloc(ctx->nparents * t->k, sizeof(*r->parvec));
	for (size_t i = 0; i < ctx->nparents; i++) {
		uint32_t *pv = r->parvec + r->npar * t->k;

		if (!vec_of_cand(t, ctx->parents[i], pv))
			continue;
		vset_add(&r->seen, pv);
		r->par[r->npar].id = ctx->parents[i]->id;
		r->par[r->npar++].v = pv;
	}
	r->fresh = xcalloc(t->nspace, sizeof(*r->fresh));
	for (size_t i = 0; i < t->nspace; i++) {
		const uint32_t *sv = t->space + i * t->k;

		if (!vset_has(&r->seen, sv) && !vset_has(&r->refused, sv))
			r->fresh[r->nfresh++] = i;
	}
	free(v);
}

static void run_release(struct run *r)
{
	vset_release(&r->seen);
	vset_release(&r->refused);
	free(r->par);
	free(r->parvec);
	free(r->fresh);
	free(r->hashes);
}

/* Valid, and neither tried nor refused before. */
static int fresh(struct run *r, const uint32_t *v)
{
	return !vset_has(&r->seen, v) && !vset_has(&r->refused, v) &&
	       (!r->t->listed.n || vset_has(&r->t->listed, v)) && vec_valid(r->t, v, NULL, 0);
}

static json_t *params_of(const struct tune *t, const uint32_t *v)
{
	json_t *o = json_object();

	for (size_t j = 0; j < t->k; j++)
		json_object_set_new(o, t->s->tunables[j].name,
				    json_integer(t->s->tunables[j].values[v[j]]));
	return o;
}

static int hash_known(const struct run *r, const char *hash)
{
	for (size_t i = 0; i < r->ctx->nhistory; i++)
		if (r->ctx->history[i].hash && !strcmp(r->ctx->history[i].hash, hash))
			return 1;
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->hashes[i], hash))
			return 1;
	return 0;
}

/*
 * Proposes v unless the round is full, v is not fresh, or it renders to a
 * variant the session already has.  Takes ownership of why.  Returns 1
 * when v was taken, 0 when skipped, or an error from rendering.
 */
static int offer(struct run *r, const uint32_t *v, const char *parent, char *why)
{
	json_t *params = NULL;
	char *src = NULL, *opt = NULL, hash[65];
	int rc = 0;

	if (r->n >= r->ctx->want || !fresh(r, v))
		goto out;
	params = params_of(r->t, v);
	rc = tune_render(r->t->s, r->ctx->blocks, params, &src, &opt, r->msg, r->mlen);
	if (rc)
		goto out;
	vset_add(&r->seen, v);
	variant_hash(src, opt, hash);
	if (hash_known(r, hash))
		goto out;
	r->out = xreallocarray(r->out, r->n + 1, sizeof(*r->out));
	r->hashes = xreallocarray(r->hashes, r->n + 1, sizeof(*r->hashes));
	memcpy(r->hashes[r->n], hash, sizeof(hash));
	r->out[r->n++] = (struct proposal){ .source = src,
					    .options = opt,
					    .parent = parent ? xstrdup(parent) : NULL,
					    .rationale = why,
					    .params = params,
					    .origin = "tune" };
	src = opt = why = NULL;
	params = NULL;
	rc = 1;
out:
	free(src);
	free(opt);
	free(why);
	json_decref(params);
	return rc;
}

/* "TM 4->8, WX 8->4 from r02-v003" with a prefix and a suffix. */
static char *moves_why(const struct tune *t, const char *prefix, const uint32_t *from,
		       const uint32_t *to, const char *id, const char *suffix)
{
	struct sbuf sb = SBUF_INIT;
	const char *sep = "";

	sbuf_adds(&sb, prefix);
	for (size_t j = 0; j < t->k; j++) {
		const struct tunable *tu = &t->s->tunables[j];

		if (from[j] == to[j])
			continue;
		sbuf_addf(&sb, "%s%s %" PRId64 "->%" PRId64, sep, tu->name, tu->values[from[j]],
			  tu->values[to[j]]);
		sep = ", ";
	}
	sbuf_addf(&sb, " from %s%s", id, suffix);
	return sbuf_detach(&sb, NULL);
}

/* A parent drawn with weight npar - i (better parents more often), not skip. */
static size_t pick_parent(struct run *r, size_t skip)
{
	size_t total = 0, x;

	for (size_t i = 0; i < r->npar; i++)
		total += i == skip ? 0 : r->npar - i;
	x = rng_below(r->rng, total);
	for (size_t i = 0; i < r->npar; i++) {
		size_t w = i == skip ? 0 : r->npar - i;

		if (x < w)
			return i;
		x -= w;
	}
	return 0;
}

/* --- exhaustive: every untried valid vector fits in the budget ----------- */

struct ranked {
	size_t dist, pos;
};

static int ranked_cmp(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->dist != y->dist)
		return x->dist < y->dist ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Nearest first to the best parent when exploiting, else in a seeded random order. */
static int propose_all(struct run *r)
{
	const struct tune *t = r->t;
	const struct parent *best = r->ctx->mode == NAV_EXPLOIT && r->npar ? &r->par[0] : NULL;
	struct ranked *order = xcalloc(r->nfresh, sizeof(*order));
	char *suffix = xasprintf(" (exhaustive, %zu left)", r->nfresh);
	int rc = 0;

	for (size_t i = 0; i < r->nfresh; i++) {
		order[i].pos = i;
		if (best)
			order[i].dist = vec_dist(best->v, t->space + r->fresh[i] * t->k, t->k);
	}
	if (best)
		qsort(order, r->nfresh, sizeof(*order), ranked_cmp);
	else
		shuffle(r->rng, order, r->nfresh, sizeof(*order));
	for (size_t i = 0; i < r->nfresh && r->n < r->ctx->want && rc >= 0; i++) {
		const uint32_t *v = t->space + r->fresh[order[i].pos] * t->k;

		if (!fresh(r, v))
			continue;
		if (best)
			rc = offer(r, v, best->id, moves_why(t, "", best->v, v, best->id, suffix));
		else
			rc = offer(r, v, NULL,
				   xasprintf("exhaustive: untried point (%zu left)", r->nfresh));
	}
	free(suffix);
	free(order);
	return rc < 0 ? rc : 0;
}

/* --- evolutionary ------------------------------------------------------------ */

/* One random vector: an untried valid one of a listed space, any of a large one. */
static int draw(struct run *r, uint32_t *v)
{
	const struct tune *t = r->t;

	if (t->enumerated) {
		if (!r->nfresh)
			return 0;
		memcpy(v, t->space + r->fresh[rng_below(r->rng, r->nfresh)] * t->k,
		       t->k * sizeof(*v));
		return 1;
	}
	for (size_t j = 0; j < t->k; j++)
		v[j] = (uint32_t)rng_below(r->rng, t->s->tunables[j].nvalues);
	return 1;
}

static size_t nearest_seen(const struct run *r, const uint32_t *v)
{
	size_t best = SIZE_MAX;

	for (size_t i = 0; i < r->seen.n; i++) {
		size_t d = vec_dist(v, r->seen.v + i * r->seen.k, r->seen.k);

		best = d < best ? d : best;
	}
	return best;
}

/* Random points, each the farthest from everything tried of a few fresh draws. */
static int spread(struct run *r, const char *why)
{
	size_t k = r->t->k, draws = 0, limit = (r->ctx->want - r->n) * TUNE_DRAWS;
	uint32_t *v = xcalloc(k, sizeof(*v)), *pick = xcalloc(k, sizeof(*pick));
	int rc = 0;

	while (rc >= 0 && r->n < r->ctx->want && draws < limit) {
		size_t got = 0, far = 0;

		while (got < TUNE_SPREAD && draws < limit) {
			size_t d;

			draws++;
			if (!draw(r, v)) {
				draws = limit;
				break;
			}
			if (!fresh(r, v))
				continue;
			d = nearest_seen(r, v);
			if (!got++ || d > far) {
				far = d;
				memcpy(pick, v, k * sizeof(*v));
			}
		}
		if (got)
			rc = offer(r, pick, NULL, xstrdup(why));
	}
	free(v);
	free(pick);
	return rc < 0 ? rc : 0;
}

/* A one-position move of one tunable. */
struct step {
	uint32_t j;
	int d;
};

struct step2 {
	struct step a, b;
};

/* Up to count children of p, each 1 or 2 tunables one position away. */
static int mutate(struct run *r, const struct parent *p, size_t count, size_t *got)
{
	const struct tune *t = r->t;
	struct step *one = xcalloc(2 * t->k, sizeof(*one));
	struct step2 *two = NULL;
	uint32_t *child = xcalloc(t->k, sizeof(*child));
	size_t n1 = 0, n2 = 0, i1 = 0, i2 = 0;
	int rc = 0;

	for (uint32_t j = 0; j < t->k; j++) {
		if (p->v[j] > 0)
			one[n1++] = (struct step){ j, -1 };
		if (p->v[j] + 1 < t->s->tunables[j].nvalues)
			one[n1++] = (struct step){ j, 1 };
	}
	two = xcalloc(n1 * n1, sizeof(*two));
	for (size_t a = 0; a < n1; a++)
		for (size_t b = a + 1; b < n1; b++)
			if (one[a].j != one[b].j)
				two[n2++] = (struct step2){ one[a], one[b] };
	shuffle(r->rng, one, n1, sizeof(*one));
	shuffle(r->rng, two, n2, sizeof(*two));
	*got = 0;
	while (rc >= 0 && *got < count && (i1 < n1 || i2 < n2)) {
		int pair = i2 < n2 && (i1 >= n1 || rng_below(r->rng, 2));

		memcpy(child, p->v, t->k * sizeof(*child));
		if (pair) {
			child[two[i2].a.j] += two[i2].a.d;
			child[two[i2].b.j] += two[i2].b.d;
			i2++;
		} else {
			child[one[i1].j] += one[i1].d;
			i1++;
		}
		if (!fresh(r, child))
			continue;
		rc = offer(r, child, p->id, moves_why(t, "", p->v, child, p->id, ""));
		*got += rc > 0;
	}
	free(one);
	free(two);
	free(child);
	return rc < 0 ? rc : 0;
}

/* Uniform crossovers of two parents drawn by rank. */
static int crossover(struct run *r, size_t count)
{
	const struct tune *t = r->t;
	uint32_t *child = xcalloc(t->k, sizeof(*child));
	size_t got = 0;
	int rc = 0;

	for (size_t tries = 0; r->npar >= 2 && rc >= 0 && got < count && tries < count * TUNE_TRIES;
	     tries++) {
		size_t a = pick_parent(r, SIZE_MAX), b = pick_parent(r, a);

		for (size_t j = 0; j < t->k; j++)
			child[j] = rng_below(r->rng, 2) ? r->par[a].v[j] : r->par[b].v[j];
		if (!fresh(r, child))
			continue;
		rc = offer(r, child, r->par[a].id,
			   xasprintf("crossover of %s and %s", r->par[a].id, r->par[b].id));
		got += rc > 0;
	}
	free(child);
	return rc < 0 ? rc : 0;
}

/*
 * Small moves around the parents: children shared out by rank (parent i of
 * n weighs n - i), a quarter of the round as crossovers when there are two
 * parents or more.  A parent whose neighbourhood runs out hands its share
 * on; what the crossovers cannot fill goes back to the neighbourhoods.
 */
static int exploit(struct run *r)
{
	size_t left = r->ctx->want - r->n, ncross = 0, nmut, total = 0, given = 0, carry = 0;
	size_t *quota = xcalloc(r->npar, sizeof(*quota));
	int rc = 0;

	if (r->npar >= 2 && left >= 2)
		ncross = left / 4 ? left / 4 : 1;
	nmut = left - ncross;
	for (size_t i = 0; i < r->npar; i++)
		total += r->npar - i;
	for (size_t i = 0; i < r->npar; i++)
		given += quota[i] = nmut * (r->npar - i) / total;
	for (size_t i = 0; given < nmut; i = (i + 1) % r->npar, given++)
		quota[i]++;
	for (size_t i = 0; i < r->npar && rc >= 0; i++) {
		size_t got = 0;

		rc = mutate(r, &r->par[i], quota[i] + carry, &got);
		carry = quota[i] + carry - got;
	}
	if (rc >= 0)
		rc = crossover(r, ncross + carry);
	for (size_t i = 0; i < r->npar && rc >= 0 && r->n < r->ctx->want; i++) {
		size_t got = 0;

		rc = mutate(r, &r->par[i], r->ctx->want - r->n, &got);
	}
	free(quota);
	return rc;
}

/* Wide moves (1 or 2 tunables set to any other value) for half the round. */
static int explore(struct run *r)
{
	const struct tune *t = r->t;
	size_t count = (r->ctx->want - r->n) / 2, got = 0;
	uint32_t *child = xcalloc(t->k, sizeof(*child));
	int rc = 0;

	for (size_t tries = 0; rc >= 0 && got < count && tries < count * TUNE_TRIES; tries++) {
		const struct parent *p = &r->par[pick_parent(r, SIZE_MAX)];
		size_t m = t->k > 1 ? 1 + rng_below(r->rng, 2) : 1;

		memcpy(child, p->v, t->k * sizeof(*child));
		for (size_t c = 0; c < m; c++) {
			size_t j = rng_below(r->rng, t->k), nv = t->s->tunables[j].nvalues, x;

			if (nv < 2)
				continue;
			x = rng_below(r->rng, nv - 1);
			child[j] = (uint32_t)(x >= p->v[j] ? x + 1 : x);
		}
		if (!fresh(r, child))
			continue;
		rc = offer(r, child, p->id, moves_why(t, "explore: ", p->v, child, p->id, ""));
		got += rc > 0;
	}
	free(child);
	return rc < 0 ? rc : 0;
}

static int propose_evolve(struct run *r)
{
	int rc = 0;

	if (r->npar && r->ctx->mode == NAV_EXPLOIT)
		rc = exploit(r);
	else if (r->npar)
		rc = explore(r);
	if (rc >= 0)
		rc = spread(r, r->npar && r->ctx->mode == NAV_EXPLOIT
				       ? "explore: random point (nothing new near the parents)"
				       : "explore: random point");
	return rc;
}

/* --- the model: a space-filling start, then a Gaussian process ------------- */

/* With fewer "ok" measurements than this the round fills the space instead. */
#define TUNE_MODEL_MIN 3
/* At most this many measurements (the latest) go into the model. */
#define TUNE_MODEL_MAX 300
/* Random candidates the expected improvement is computed for. */
#define TUNE_POOL 1024
/* The best measured points whose neighbourhoods join the candidates. */
#define TUNE_POOL_TOP 4
/* Fresh draws compared for each space-filling point. */
#define TUNE_FILL 4
/* Improvement of the log speedup over the incumbent asked for: 1%, 10% exploring. */
#define TUNE_XI_EXPLOIT 0.01
#define TUNE_XI_EXPLORE 0.1

/* v as model features: each index over its list's last index, in [0, 1]. */
static void features(const struct tune *t, const uint32_t *v, double *x)
{
	for (size_t j = 0; j < t->k; j++) {
		size_t nv = t->s->tunables[j].nvalues;

		x[j] = nv > 1 ? (double)v[j] / (double)(nv - 1) : 0;
	}
}

/* A uniformly random valid vector neither tried nor refused; 0 when none was found. */
static int draw_fresh(struct run *r, uint32_t *v)
{
	for (size_t i = 0; i < TUNE_DRAWS; i++) {
		if (!draw(r, v))
			return 0;
		if (fresh(r, v))
			return 1;
	}
	return 0;
}

/* Squared feature distance from v to the nearest tried or proposed vector. */
static double nearest_seen_feat(const struct run *r, const uint32_t *v)
{
	size_t k = r->t->k;
	double *a = xcalloc(2 * k, sizeof(*a)), *b = a + k, best = HUGE_VAL;

	features(r->t, v, a);
	for (size_t i = 0; i < r->seen.n; i++) {
		double d = 0;

		features(r->t, r->seen.v + i * k, b);
		for (size_t j = 0; j < k; j++)
			d += (a[j] - b[j]) * (a[j] - b[j]);
		best = d < best ? d : best;
	}
	free(a);
	return best;
}

/*
 * Fills the round with random points, each the farthest from everything
 * tried and proposed of ndraws fresh draws (1: uniform random sampling).
 */
static int fill(struct run *r, size_t ndraws, const char *label)
{
	size_t k = r->t->k, first = r->n, total = r->ctx->want - r->n;
	uint32_t *v = xcalloc(2 * k, sizeof(*v)), *pick = v + k;
	int rc = 0;

	for (size_t tries = 0; rc >= 0 && r->n < r->ctx->want && tries < 4 * total; tries++) {
		double far = -1;
		size_t got = 0;

		for (size_t i = 0; i < ndraws && draw_fresh(r, v); i++, got++) {
			double d = ndraws > 1 ? nearest_seen_feat(r, v) : 0;

			if (d > far) {
				far = d;
				memcpy(pick, v, k * sizeof(*v));
			}
		}
		if (!got)
			break;
		rc = offer(r, pick, NULL, xasprintf("%s %zu/%zu", label, r->n - first + 1, total));
	}
	free(v);
	return rc < 0 ? rc : 0;
}

/* The session's measurements of points in the space, as the model sees them. */
struct obs {
	size_t n, nok;
	uint32_t *v; /* n vectors */
	double *x;   /* n feature vectors */
	double *y;   /* log(speedup); failures get the worst measured value */
	char *ok;    /* 1: measured, 0: failed */
};

/*
 * Whether c says something about its point: evaluated, and not failed by
 * the harness or the machine rather than by the program.
 */
static int cand_measured(const struct tune *t, const struct cand *c, uint32_t *v)
{
	return c->status && strcmp(c->status, "infra_error") && vec_of_cand(t, c, v);
}

static void obs_collect(struct obs *o, const struct run *r)
{
	const struct tune *t = r->t;
	size_t k = t->k, start = 0, got = 0;
	double worst = HUGE_VAL;

	memset(o, 0, sizeof(*o));
	o->v = xcalloc(r->ctx->nhistory * k + 1, sizeof(*o->v));
	for (size_t i = 0; i < r->ctx->nhistory; i++)
		got += cand_measured(t, &r->ctx->history[i], o->v);
	start = got > TUNE_MODEL_MAX ? got - TUNE_MODEL_MAX : 0;
	o->x = xcalloc(got * k + 1, sizeof(*o->x));
	o->y = xcalloc(got + 1, sizeof(*o->y));
	o->ok = xcalloc(got + 1, 1);
	got = 0;
	for (size_t i = 0; i < r->ctx->nhistory; i++) {
		const struct cand *c = &r->ctx->history[i];
		uint32_t *v = o->v + o->n * k;

		if (!cand_measured(t, c, v) || got++ < start)
			continue;
		o->ok[o->n] = !strcmp(c->status, "ok") && c->speedup > 0 && isfinite(c->speedup);
		if (o->ok[o->n]) {
			o->y[o->n] = log(c->speedup);
			worst = o->y[o->n] < worst ? o->y[o->n] : worst;
			o->nok++;
		}
		features(t, v, o->x + o->n * k);
		o->n++;
	}
	for (size_t i = 0; i < o->n; i++)
		if (!o->ok[i])
			o->y[i] = worst;
}

static void obs_release(struct obs *o)
{
	free(o->v);
	free(o->x);
	free(o->y);
	free(o->ok);
}

/* Adds v to the pool when it is fresh and not there yet. */
static void pool_add(struct run *r, struct vset *pool, const uint32_t *v)
{
	if (!vset_has(pool, v) && fresh(r, v))
		vset_add(pool, v);
}

/* Every vector one or two single-position steps or one wide move from v. */
static void pool_neighbours(struct run *r, struct vset *pool, const uint32_t *v)
{
	const struct tune *t = r->t;
	uint32_t *c = xcalloc(t->k, sizeof(*c));

	for (size_t a = 0; a < t->k; a++) {
		for (uint32_t x = 0; x < t->s->tunables[a].nvalues; x++) {
			memcpy(c, v, t->k * sizeof(*c));
			c[a] = x;
			pool_add(r, pool, c);
		}
		for (size_t b = a + 1; b < t->k; b++)
			for (int da = -1; da <= 1; da += 2)
				for (int db = -1; db <= 1; db += 2) {
					memcpy(c, v, t->k * sizeof(*c));
					if ((da < 0 && !v[a]) || (db < 0 && !v[b]) ||
					    v[a] + da >= t->s->tunables[a].nvalues ||
					    v[b] + db >= t->s->tunables[b].nvalues)
						continue;
					c[a] += da;
					c[b] += db;
					pool_add(r, pool, c);
				}
	}
	free(c);
}

/*
 * The candidates: every untried point of a listed space that is small
 * enough, else random fresh draws, and the neighbourhoods of the points
 * the model rates best among those measured.
 */
static void pool_build(struct run *r, const struct obs *o, const double *mean, struct vset *pool)
{
	const struct tune *t = r->t;
	uint32_t *v = xcalloc(t->k, sizeof(*v));
	char *used = xcalloc(o->n + 1, 1);

	pool->k = t->k;
	if (t->enumerated && r->nfresh <= TUNE_POOL) {
		for (size_t i = 0; i < r->nfresh; i++)
			pool_add(r, pool, t->space + r->fresh[i] * t->k);
	} else {
		for (size_t i = 0; i < TUNE_POOL && draw_fresh(r, v); i++)
			pool_add(r, pool, v);
	}
	for (size_t top = 0; top < TUNE_POOL_TOP; top++) {
		size_t best = SIZE_MAX;

		for (size_t i = 0; i < o->n; i++)
			if (o->ok[i] && !used[i] && (best == SIZE_MAX || mean[i] > mean[best]))
				best = i;
		if (best == SIZE_MAX)
			break;
		used[best] = 1;
		pool_neighbours(r, pool, o->v + best * t->k);
	}
	free(used);
	free(v);
}

/* Fresh draws a space-filling round snaps its targets to. */
#define TUNE_LHS_POOL 256

/*
 * A space-filling round: a Latin hypercube over the tunables' index
 * ranges (each tunable's range cut into as many strata as there are free
 * slots, one target per stratum, strata paired at random), each target
 * then snapped to the nearest of a pool of fresh valid draws, so that
 * every tunable's range is covered evenly whatever the constraints cut.
 */
static int fill_lhs(struct run *r, const char *label)
{
	const struct tune *t = r->t;
	size_t k = t->k, m = r->ctx->want - r->n, first = r->n, npool = 0;
	double *target = xcalloc(m * k + 1, sizeof(*target)), *x = xcalloc(k, sizeof(*x));
	size_t *perm = xcalloc(m + 1, sizeof(*perm));
	struct vset pool = { .k = k };
	uint32_t *v = xcalloc(k, sizeof(*v));
	char *taken = NULL;
	int rc = 0;

	for (size_t j = 0; j < k; j++) {
		for (size_t i = 0; i < m; i++)
			perm[i] = i;
		shuffle(r->rng, perm, m, sizeof(*perm));
		for (size_t i = 0; i < m; i++)
			target[i * k + j] =
				((double)perm[i] + (double)rng_below(r->rng, 1024) / 1024.0) /
				(double)m;
	}
	for (size_t i = 0; i < TUNE_LHS_POOL && draw_fresh(r, v); i++)
		pool_add(r, &pool, v);
	npool = pool.n;
	taken = xcalloc(npool + 1, 1);
	for (size_t i = 0; i < m && rc >= 0; i++) {
		size_t best = SIZE_MAX;
		double bd = HUGE_VAL;

		for (size_t p = 0; p < npool; p++) {
			double d = 0;

			if (taken[p])
				continue;
			features(t, pool.v + p * k, x);
			for (size_t j = 0; j < k; j++)
				d += (x[j] - target[i * k + j]) * (x[j] - target[i * k + j]);
			if (d < bd) {
				bd = d;
				best = p;
			}
		}
		if (best == SIZE_MAX)
			break;
		taken[best] = 1;
		rc = offer(r, pool.v + best * k, NULL,
			   xasprintf("%s %zu/%zu", label, r->n - first + 1, m));
	}
	free(taken);
	free(v);
	vset_release(&pool);
	free(perm);
	free(x);
	free(target);
	if (rc >= 0 && r->n < r->ctx->want)
		rc = fill(r, 1, label);
	return rc < 0 ? rc : 0;
}

/* The parent nearest to v by index distance, or NULL without parents. */
static const char *nearest_parent(const struct run *r, const uint32_t *v)
{
	const char *id = NULL;
	size_t best = SIZE_MAX;

	for (size_t i = 0; i < r->npar; i++) {
		size_t d = vec_dist(r->par[i].v, v, r->t->k);

		if (d < best) {
			best = d;
			id = r->par[i].id;
		}
	}
	return id;
}

struct scored {
	double mean, sd, ei, score;
	double *x;
};

/*
 * Takes the round's points from the pool one at a time by expected
 * improvement, each pick damping the score of the points it correlates
 * with (1 - correlation), so that a batch spreads over several promising
 * places instead of piling onto one.
 */
static int pick_batch(struct run *r, const struct surrogate *m, const struct vset *pool,
		      struct scored *sc, double incumbent)
{
	int rc = 0;

	while (rc >= 0 && r->n < r->ctx->want) {
		size_t best = SIZE_MAX;
		const uint32_t *v;

		for (size_t i = 0; i < pool->n; i++)
			if (sc[i].score > 0 && (best == SIZE_MAX || sc[i].score > sc[best].score))
				best = i;
		if (best == SIZE_MAX)
			break;
		v = pool->v + best * pool->k;
		rc = offer(r, v, nearest_parent(r, v),
			   xasprintf("model: EI %.3g, predicted %.3gx (sd %.2f in log), incumbent "
				     "%.3gx",
				     sc[best].ei, exp(sc[best].mean), sc[best].sd, exp(incumbent)));
		for (size_t i = 0; i < pool->n; i++)
			sc[i].score *= 1 - surrogate_corr(m, sc[i].x, sc[best].x);
		sc[best].score = 0;
	}
	return rc < 0 ? rc : 0;
}

/*
 * How likely x is to run and pass: the measured share of the points that
 * did, weighted by the kernel's correlation with x, starting from the
 * session's overall share (so a point far from everything gets that).
 */
static double feasible(const struct surrogate *m, const struct obs *o, const double *x)
{
	double prior = ((double)o->nok + 1) / ((double)o->n + 2), ok = prior, all = 1;

	for (size_t i = 0; i < o->n; i++) {
		double c = surrogate_corr(m, x, o->x + i * m->d);

		ok += o->ok[i] ? c : 0;
		all += c;
	}
	return ok / all;
}

/*
 * Fits the model to the session's measurements and proposes by expected
 * improvement over the incumbent: the model's mean at the best measured
 * point, not one lucky measurement.
 */
static int propose_gp(struct run *r, const struct obs *o)
{
	const struct tune *t = r->t;
	struct surrogate m;
	struct vset pool = { 0 };
	struct scored *sc = NULL;
	double *omean = xcalloc(o->n, sizeof(*omean)), *xs = NULL, sd, incumbent = -HUGE_VAL;
	double xi = r->ctx->mode == NAV_EXPLORE ? TUNE_XI_EXPLORE : TUNE_XI_EXPLOIT;
	int rc;

	rc = surrogate_fit(&m, o->x, o->y, o->n, t->k);
	if (rc) {
		free(omean);
		return fill(r, TUNE_FILL, "space-filling point");
	}
	for (size_t i = 0; i < o->n; i++) {
		surrogate_predict(&m, o->x + i * t->k, &omean[i], &sd);
		if (o->ok[i] && omean[i] > incumbent)
			incumbent = omean[i];
	}
	pool_build(r, o, omean, &pool);
	sc = xcalloc(pool.n + 1, sizeof(*sc));
	xs = xcalloc(pool.n * t->k + 1, sizeof(*xs));
	for (size_t i = 0; i < pool.n; i++) {
		sc[i].x = xs + i * t->k;
		features(t, pool.v + i * t->k, sc[i].x);
		surrogate_predict(&m, sc[i].x, &sc[i].mean, &sc[i].sd);
		sc[i].score = sc[i].ei = surrogate_ei(sc[i].mean, sc[i].sd, incumbent, xi);
		sc[i].score *= feasible(&m, o, sc[i].x);
	}
	rc = pick_batch(r, &m, &pool, sc, incumbent);
	if (rc >= 0)
		rc = fill(r, TUNE_FILL, "space-filling point (the model expects nothing better)");
	free(xs);
	free(sc);
	vset_release(&pool);
	free(omean);
	surrogate_release(&m);
	return rc;
}

static int propose_model(struct run *r)
{
	struct obs o;
	int rc;

	obs_collect(&o, r);
	if (o.nok < TUNE_MODEL_MIN)
		rc = fill_lhs(r, "space-filling point");
	else
		rc = propose_gp(r, &o);
	obs_release(&o);
	return rc;
}

static int tune_propose(struct proposer *p, const struct propose_ctx *ctx, struct proposal **out,
			size_t *n, char *msg, size_t mlen)
{
	struct tune *t = p->state;
	struct run r;
	int rc = 0;

	assert(ctx->rng);
	*out = NULL;
	*n = 0;
	run_init(&r, t, ctx, msg, mlen);
	if (t->strategy == TUNE_EVOLVE && !r.npar && t->defaults)
		rc = offer(&r, t->defaults, NULL, xstrdup("the template's own values"));
	if (rc < 0)
		;
	else if (t->strategy == TUNE_RANDOM)
		rc = fill(&r, 1, "random point");
	else if (t->enumerated && r.nfresh <= ctx->budget_left)
		rc = propose_all(&r);
	else if (t->strategy == TUNE_EVOLVE)
		rc = propose_evolve(&r);
	else
		rc = propose_model(&r);
	if (rc < 0) {
		proposals_free(r.out, r.n);
	} else {
		rc = 0;
		*out = r.out;
		*n = r.n;
	}
	run_release(&r);
	return rc;
}

/* --- the proposer ------------------------------------------------------------ */

static void tune_free(struct tune *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nenv; i++)
		expr_vars_release(&t->env[i]);
	free(t->env);
	free(t->space);
	free(t->defaults);
	vset_release(&t->listed);
	free(t);
}

static void tune_release(struct proposer *p)
{
	tune_free(p->state);
	p->state = NULL;
}

int tune_open(struct proposer *p, const struct spec *s, char *msg, size_t n)
{
	struct tune *t = NULL;
	int rc;

	memset(p, 0, sizeof(*p));
	if (!s->ntunables)
		return kerr_set(msg, n, KERR_INVALID,
				"proposer 'tune': the spec has no tunables to search");
	t = xcalloc(1, sizeof(*t));
	t->s = s;
	t->k = s->ntunables;
	rc = tune_envs(t, msg, n);
	if (!rc)
		rc = tune_space(t, msg, n);
	if (rc) {
		tune_free(t);
		return rc;
	}
	tune_defaults(t);
	p->name = "tune";
	p->propose = tune_propose;
	p->release = tune_release;
	p->state = t;
	return 0;
}

static const struct {
	const char *name;
	enum tune_strategy strategy;
} tune_strategies[] = {
	{ "tune", TUNE_MODEL },
	{ "evolve", TUNE_EVOLVE },
	{ "random", TUNE_RANDOM },
};

int tune_set_strategy(struct proposer *p, const char *name, char *msg, size_t n)
{
	struct tune *t = p->state;

	for (size_t i = 0; i < sizeof(tune_strategies) / sizeof(tune_strategies[0]); i++)
		if (!strcmp(name, tune_strategies[i].name)) {
			t->strategy = tune_strategies[i].strategy;
			return 0;
		}
	return kerr_set(msg, n, KERR_INVALID, "strategy '%s': not one of tune, evolve, random",
			name);
}

/* Reads points[i] into v; a message names what is wrong with it. */
static int point_vec(struct tune *t, json_t *pt, size_t i, uint32_t *v, char *msg, size_t n)
{
	char why[256] = "";

	if (!json_is_object(pt))
		return kerr_set(msg, n, KERR_INVALID, "points[%zu]: not an object", i);
	for (size_t j = 0; j < t->k; j++) {
		const struct tunable *tu = &t->s->tunables[j];
		json_t *x = json_object_get(pt, tu->name);

		if (!json_is_integer(x))
			return kerr_set(msg, n, KERR_INVALID, "points[%zu].%s: %s", i, tu->name,
					x ? "not an integer" : "missing");
		if (!value_index(tu, json_integer_value(x), &v[j]))
			return kerr_set(msg, n, KERR_INVALID,
					"points[%zu].%s: %" JSON_INTEGER_FORMAT
					" is not one of the tunable's values",
					i, tu->name, json_integer_value(x));
	}
	if (!vec_valid(t, v, why, sizeof(why)))
		return kerr_set(msg, n, KERR_INVALID, "points[%zu]: breaks a constraint%s%s", i,
				why[0] ? " " : "", why);
	return 0;
}

int tune_restrict(struct proposer *p, json_t *points, char *msg, size_t n)
{
	struct tune *t = p->state;
	struct vset set = { .k = t->k };
	uint32_t *v = xcalloc(t->k, sizeof(*v));
	json_t *pt;
	size_t i;
	int rc = 0;

	if (!json_is_array(points) || !json_array_size(points))
		rc = kerr_set(msg, n, KERR_INVALID, "points: not a non-empty array");
	json_array_foreach (points, i, pt) {
		if (rc || (rc = point_vec(t, pt, i, v, msg, n)))
			break;
		vset_add(&set, v);
	}
	if (!rc) {
		free(t->space);
		t->space = xcalloc(set.n * t->k, sizeof(*t->space));
		memcpy(t->space, set.v, set.n * t->k * sizeof(*t->space));
		t->nspace = set.n;
		t->enumerated = 1;
		vset_release(&t->listed);
		t->listed = set;
	} else {
		vset_release(&set);
	}
	free(v);
	return rc;
}

json_t *tune_template_params(const struct proposer *p)
{
	const struct tune *t = p->state;

	return t->defaults ? params_of(t, t->defaults) : NULL;
}
