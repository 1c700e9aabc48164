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
 *
 * This file holds the proposer and one round's set-up with the
 * exhaustive, evolutionary and random strategies; the model strategy is
 * tune-model.c, what both strategy files do with a round tune-run.c, the
 * space and rendering tune-space.c, and what they share tune-internal.h.
 * May use those, spec, surrogate (through tune-model.c) and common/; none
 * of them calls back into this file.
 */
#include "tune-internal.h"
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

/* Fresh candidates compared for each spread-out random point. */
#define TUNE_SPREAD 8
/* Attempts per wanted child for crossovers and wide moves. */
#define TUNE_TRIES 16

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
		if (!tune_vec_of_cand(t, &ctx->history[i], v))
			continue;
		vset_add(&r->seen, v);
		if (cand_refused(&ctx->history[i]))
			vset_add(&r->refused, v);
	}
	r->par = xcalloc(ctx->nparents, sizeof(*r->par));
	r->parvec = xcalloc(ctx->nparents * t->k, sizeof(*r->parvec));
	for (size_t i = 0; i < ctx->nparents; i++) {
		uint32_t *pv = r->parvec + r->npar * t->k;

		if (!tune_vec_of_cand(t, ctx->parents[i], pv))
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
	x = tune_rng_below(r->rng, total);
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
			order[i].dist = tune_vec_dist(best->v, t->space + r->fresh[i] * t->k, t->k);
	}
	if (best)
		qsort(order, r->nfresh, sizeof(*order), ranked_cmp);
	else
		tune_shuffle(r->rng, order, r->nfresh, sizeof(*order));
	for (size_t i = 0; i < r->nfresh && r->n < r->ctx->want && rc >= 0; i++) {
		const uint32_t *v = t->space + r->fresh[order[i].pos] * t->k;

		if (!tune_fresh(r, v))
			continue;
		if (best)
			rc = tune_offer(r, v, best->id,
					moves_why(t, "", best->v, v, best->id, suffix));
		else
			rc = tune_offer(
				r, v, NULL,
				xasprintf("exhaustive: untried point (%zu left)", r->nfresh));
	}
	free(suffix);
	free(order);
	return rc < 0 ? rc : 0;
}

/* --- evolutionary ------------------------------------------------------------ */

static size_t nearest_seen(const struct run *r, const uint32_t *v)
{
	size_t best = SIZE_MAX;

	for (size_t i = 0; i < r->seen.n; i++) {
		size_t d = tune_vec_dist(v, r->seen.v + i * r->seen.k, r->seen.k);

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
			if (!tune_draw(r, v)) {
				draws = limit;
				break;
			}
			if (!tune_fresh(r, v))
				continue;
			d = nearest_seen(r, v);
			if (!got++ || d > far) {
				far = d;
				memcpy(pick, v, k * sizeof(*v));
			}
		}
		if (got)
			rc = tune_offer(r, pick, NULL, xstrdup(why));
	}
	/* uniform draws met nothing fresh: points built to keep the constraints */
	for (size_t tries = 0; rc >= 0 && r->n < r->ctx->want && tries < TUNE_DRAWS; tries++)
		if (tune_build_fresh(r, v))
			rc = tune_offer(r, v, NULL, xstrdup(why));
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
	tune_shuffle(r->rng, one, n1, sizeof(*one));
	tune_shuffle(r->rng, two, n2, sizeof(*two));
	*got = 0;
	while (rc >= 0 && *got < count && (i1 < n1 || i2 < n2)) {
		int pair = i2 < n2 && (i1 >= n1 || tune_rng_below(r->rng, 2));

		memcpy(child, p->v, t->k * sizeof(*child));
		if (pair) {
			child[two[i2].a.j] += two[i2].a.d;
			child[two[i2].b.j] += two[i2].b.d;
			i2++;
		} else {
			child[one[i1].j] += one[i1].d;
			i1++;
		}
		if (!tune_fresh(r, child))
			continue;
		rc = tune_offer(r, child, p->id, moves_why(t, "", p->v, child, p->id, ""));
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
			child[j] = tune_rng_below(r->rng, 2) ? r->par[a].v[j] : r->par[b].v[j];
		if (!tune_fresh(r, child))
			continue;
		rc = tune_offer(r, child, r->par[a].id,
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
		size_t m = t->k > 1 ? 1 + tune_rng_below(r->rng, 2) : 1;

		memcpy(child, p->v, t->k * sizeof(*child));
		for (size_t c = 0; c < m; c++) {
			size_t j = tune_rng_below(r->rng, t->k), nv = t->s->tunables[j].nvalues, x;

			if (nv < 2)
				continue;
			x = tune_rng_below(r->rng, nv - 1);
			child[j] = (uint32_t)(x >= p->v[j] ? x + 1 : x);
		}
		if (!tune_fresh(r, child))
			continue;
		rc = tune_offer(r, child, p->id, moves_why(t, "explore: ", p->v, child, p->id, ""));
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

/*
 * Why a round has nothing to offer: known for a space that was listed, a
 * likelihood for one too large to list, where the draws, builds and walks
 * met no untried valid point but more may exist.
 */
static void nothing_why(const struct run *r, char *msg, size_t n)
{
	const struct tune *t = r->t;

	if (t->enumerated && !r->nfresh)
		snprintf(msg, n, "every valid point of the space (%zu) was tried", t->nspace);
	else if (t->enumerated)
		snprintf(msg, n, "the tuner offered none of the space's %zu untried valid points",
			 r->nfresh);
	else
		snprintf(msg, n,
			 "the tuner met no untried valid point (random draws, points built one "
			 "tunable at a time, walks from the session's points), though the space, "
			 "too large to list (%zu of %zu random points valid at open), may hold "
			 "more",
			 t->probed_ok, t->probed);
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
		rc = tune_offer(&r, t->defaults, NULL, xstrdup("the template's own values"));
	if (rc < 0)
		;
	else if (t->strategy == TUNE_RANDOM)
		rc = tune_fill(&r, 1, "random point");
	else if (t->enumerated && r.nfresh <= ctx->budget_left)
		rc = propose_all(&r);
	else if (t->strategy == TUNE_EVOLVE)
		rc = propose_evolve(&r);
	else
		rc = tune_propose_model(&r);
	if (rc < 0) {
		proposals_free(r.out, r.n);
	} else {
		rc = 0;
		*out = r.out;
		*n = r.n;
		if (!r.n && msg && mlen)
			nothing_why(&r, msg, mlen);
	}
	run_release(&r);
	return rc;
}

/* --- the proposer ------------------------------------------------------------ */

static void tune_free(struct tune *t)
{
	if (!t)
		return;
	free(t->space);
	free(t->defaults);
	free(t->starts);
	free(t->start_at);
	for (size_t i = 0; i < t->nprod; i++)
		free(t->prod[i].idx);
	free(t->prod);
	free(t->cmask);
	tune_cons_free(t);
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
	rc = tune_compile(t, msg, n);
	if (!rc)
		rc = tune_space(t, msg, n);
	if (rc) {
		tune_free(t);
		return rc;
	}
	tune_starts(t);
	tune_defaults(t);
	tune_products(t);
	tune_masks(t);
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
		if (!tune_value_index(tu, json_integer_value(x), &v[j]))
			return kerr_set(msg, n, KERR_INVALID,
					"points[%zu].%s: %" JSON_INTEGER_FORMAT
					" is not one of the tunable's values",
					i, tu->name, json_integer_value(x));
	}
	if (!tune_vec_valid(t, v, why, sizeof(why)))
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

	return t->defaults ? tune_params_of(t, t->defaults) : NULL;
}
