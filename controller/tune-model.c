/*
 * tune-model.c - the tuner's "tune" strategy: a Latin-hypercube round spread
 * over the whole space first, then a Gaussian process (surrogate.c) fitted to
 * the session's measurements that picks points by expected improvement.
 *
 * May use: tune-internal.h (struct run and the round helpers of tune-run.c,
 * the space of tune-space.c), surrogate and common/.  tune.c calls
 * tune_propose_model() and tune_fill(); nothing here calls into tune.c.
 */
#include "tune-internal.h"
#include "surrogate.h"
#include "xalloc.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
/*
 * With at least this many "ok" measurements the session's last round goes
 * to the points the model expects fastest rather than to expected
 * improvement, which also pays for what the model does not know yet and
 * so for a later round there will not be.  With fewer the model knows too
 * little for its mean to be worth more than its doubt.  In replays (kctl
 * simulate --budgets 24,36,48,60 --seeds 200) 16, 24 and 32 did the same
 * at 36 to 60 evaluations, and 16 made the sessions of 24 worse.
 */
#define TUNE_LAST_MIN 24
/*
 * How much a last-round pick damps the points it correlates with: half of
 * what expected improvement's picks do.  Near the best measured points the
 * candidates correlate strongly, and damping them fully would spend the
 * round's later slots far away, on points the model expects slow (the same
 * replays: 159 sessions of 48 found the best point at 0.5, 148 at 1).
 */
#define TUNE_LAST_SPREAD 0.5
/*
 * A tunable with at most this many values reads as a category (PACK,
 * LOCAL): the model orders its values by index, so what it predicts for
 * the incumbent with another value of one is borrowed from neighbours that
 * say little about it.  The last round's first point is therefore the
 * incumbent's untried twin (one such tunable changed) with the most
 * expected improvement: its doubt weighed against the loss the model
 * predicts.  Replayed on tests/data/space/matmul-512-twins.json (200
 * seeds), sessions of 36, 48 and 60 evaluations found the best point in
 * 116, 171 and 190 against 88, 157 and 187 without the twin.  Taking the
 * least sure twin found it in 136, 182 and 193 there, but in three
 * matmul sessions at 1024^3 it took the PACK=0 twin every time, predicted
 * 30 to 43% slower: in that 512^3 recording PACK=0 is often best, while
 * the sessions' best points at 1024^3 are packed.
 */
#define TUNE_TWIN_VALUES 3
/*
 * With at least this many "ok" measurements the model also takes the
 * products of tunables that the constraints name (TM * TN * VN: the
 * accumulators of a work-item) as features of their own; with fewer it
 * has too few points for the extra length scales.  Replayed on the three
 * recorded matmul spaces (kctl simulate, 100 seeds, with and without
 * --noise), the products from the first model round (9 points) lost at 12
 * evaluations on matmul-512-twins.json (mean 0.55 of the best against
 * 0.59); from 16 they change nothing at 12, and at 24 to 96 raised the
 * mean fraction of the best reached everywhere but once (docs/kctl.md has
 * the figures, losses included).
 */
#define TUNE_PRODUCT_MIN 16

/*
 * A uniformly random valid vector neither tried nor refused; else, in a
 * large space where TUNE_DRAWS uniform draws met none, a built one (from
 * then on for the rest of the round, straight away); 0 when none was found.
 */
static int draw_fresh(struct run *r, uint32_t *v)
{
	for (size_t i = 0; i < TUNE_DRAWS && !r->uniform_dry; i++) {
		if (!tune_draw(r, v))
			return 0;
		if (tune_fresh(r, v))
			return 1;
	}
	r->uniform_dry = !r->t->enumerated;
	return tune_build_fresh(r, v);
}

/* Squared feature distance from v to the nearest tried or proposed vector. */
static double nearest_seen_feat(const struct run *r, const uint32_t *v)
{
	size_t k = r->t->k;
	double *a = xcalloc(2 * k, sizeof(*a)), *b = a + k, best = HUGE_VAL;

	tune_features(r->t, v, a, k);
	for (size_t i = 0; i < r->seen.n; i++) {
		double d = 0;

		tune_features(r->t, r->seen.v + i * k, b, k);
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
int tune_fill(struct run *r, size_t ndraws, const char *label)
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
		rc = tune_offer(r, pick, NULL,
				xasprintf("%s %zu/%zu", label, r->n - first + 1, total));
	}
	free(v);
	return rc < 0 ? rc : 0;
}

/* The session's measurements of points in the space, as the model sees them. */
struct obs {
	size_t n, nok;
	size_t d;    /* features per vector: the products too once nok >= TUNE_PRODUCT_MIN */
	uint32_t *v; /* n vectors */
	double *x;   /* n feature vectors of d */
	double *y;   /* log(speedup); failures get the worst measured value */
	char *ok;    /* 1: measured, 0: failed */
};

/*
 * Whether c says something about its point: evaluated, and not failed by
 * the harness or the machine rather than by the program.
 */
static int cand_measured(const struct tune *t, const struct cand *c, uint32_t *v)
{
	return c->status && strcmp(c->status, "infra_error") && tune_vec_of_cand(t, c, v);
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
		o->n++;
	}
	for (size_t i = 0; i < o->n; i++)
		if (!o->ok[i])
			o->y[i] = worst;
	o->d = o->nok >= TUNE_PRODUCT_MIN ? t->nf : k;
	o->x = xcalloc(o->n * o->d + 1, sizeof(*o->x));
	for (size_t i = 0; i < o->n; i++)
		tune_features(t, o->v + i * k, o->x + i * o->d, o->d);
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
	if (!vset_has(pool, v) && tune_fresh(r, v))
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
		tune_shuffle(r->rng, perm, m, sizeof(*perm));
		for (size_t i = 0; i < m; i++)
			target[i * k + j] =
				((double)perm[i] + (double)tune_rng_below(r->rng, 1024) / 1024.0) /
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
			tune_features(t, pool.v + p * k, x, k);
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
		rc = tune_offer(r, pool.v + best * k, NULL,
				xasprintf("%s %zu/%zu", label, r->n - first + 1, m));
	}
	free(taken);
	free(v);
	vset_release(&pool);
	free(perm);
	free(x);
	free(target);
	if (rc >= 0 && r->n < r->ctx->want)
		rc = tune_fill(r, 1, label);
	return rc < 0 ? rc : 0;
}

/* The parent nearest to v by index distance, or NULL without parents. */
static const char *nearest_parent(const struct run *r, const uint32_t *v)
{
	const char *id = NULL;
	size_t best = SIZE_MAX;

	for (size_t i = 0; i < r->npar; i++) {
		size_t d = tune_vec_dist(r->par[i].v, v, r->t->k);

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

/* Damps the scores of the points that correlate with pick (by spread times the correlation). */
static void damp(const struct surrogate *m, const struct vset *pool, struct scored *sc, size_t pick,
		 double spread)
{
	for (size_t i = 0; i < pool->n; i++)
		sc[i].score *= 1 - spread * surrogate_corr(m, sc[i].x, sc[pick].x);
	sc[pick].score = 0;
}

/*
 * The pool's untried twin of inc (one tunable of at most TUNE_TWIN_VALUES
 * values changed) with the most expected improvement, among those with a
 * score; SIZE_MAX when there is none.  *which is the tunable changed.
 */
static size_t find_twin(const struct tune *t, const struct vset *pool, const struct scored *sc,
			const uint32_t *inc, size_t *which)
{
	size_t best = SIZE_MAX;

	for (size_t i = 0; i < pool->n; i++) {
		const uint32_t *v = pool->v + i * pool->k;
		size_t diff = 0, at = 0;

		for (size_t j = 0; j < t->k; j++)
			if (v[j] != inc[j]) {
				diff++;
				at = j;
			}
		if (diff != 1 || t->s->tunables[at].nvalues > TUNE_TWIN_VALUES || sc[i].score <= 0)
			continue;
		if (best == SIZE_MAX || sc[i].ei > sc[best].ei) {
			best = i;
			*which = at;
		}
	}
	return best;
}

/*
 * Takes the round's points from the pool one at a time by expected
 * improvement (by_mean: by the model's mean), each pick damping the score
 * of the points it correlates with (1 - correlation; by_mean: 1 -
 * TUNE_LAST_SPREAD * correlation), so that a batch spreads over several
 * promising places instead of piling onto one.
 */
static int pick_batch(struct run *r, const struct surrogate *m, const struct vset *pool,
		      struct scored *sc, double incumbent, int by_mean)
{
	int rc = 0;

	while (rc >= 0 && r->n < r->ctx->want) {
		size_t best = SIZE_MAX;
		const uint32_t *v;
		char *head;

		for (size_t i = 0; i < pool->n; i++)
			if (sc[i].score > 0 && (best == SIZE_MAX || sc[i].score > sc[best].score))
				best = i;
		if (best == SIZE_MAX)
			break;
		v = pool->v + best * pool->k;
		head = by_mean ? xstrdup("model, last round:")
			       : xasprintf("model: EI %.3g,", sc[best].ei);
		rc = tune_offer(r, v, nearest_parent(r, v),
				xasprintf("%s predicted %.3gx (sd %.2f in log), incumbent %.3gx",
					  head, exp(sc[best].mean), sc[best].sd, exp(incumbent)));
		free(head);
		damp(m, pool, sc, best, by_mean ? TUNE_LAST_SPREAD : 1);
	}
	return rc < 0 ? rc : 0;
}

/* The last round's first point: the incumbent's twin (find_twin), when there is one. */
static int pick_twin(struct run *r, const struct surrogate *m, const struct vset *pool,
		     struct scored *sc, const uint32_t *inc, double incumbent)
{
	const struct tunable *tu;
	size_t which = 0, tw = find_twin(r->t, pool, sc, inc, &which);
	const uint32_t *v;
	int rc;

	if (tw == SIZE_MAX)
		return 0;
	v = pool->v + tw * pool->k;
	tu = &r->t->s->tunables[which];
	rc = tune_offer(r, v, nearest_parent(r, v),
			xasprintf("model, last round: the incumbent's twin, %s %lld for %lld, "
				  "predicted %.3gx (sd %.2f in log), incumbent %.3gx",
				  tu->name, (long long)tu->values[v[which]],
				  (long long)tu->values[inc[which]], exp(sc[tw].mean), sc[tw].sd,
				  exp(incumbent)));
	damp(m, pool, sc, tw, TUNE_LAST_SPREAD);
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
 * point, not one lucky measurement.  The last round of a session whose
 * model has TUNE_LAST_MIN measurements proposes by the model's mean
 * instead: nothing is left to learn for.
 */
static int propose_gp(struct run *r, const struct obs *o)
{
	const struct tune *t = r->t;
	struct surrogate m;
	struct vset pool = { 0 };
	struct scored *sc = NULL;
	double *omean = xcalloc(o->n, sizeof(*omean)), *xs = NULL, sd, incumbent = -HUGE_VAL;
	double xi = r->ctx->mode == NAV_EXPLORE ? TUNE_XI_EXPLORE : TUNE_XI_EXPLOIT;
	int rc, by_mean = r->ctx->last && o->nok >= TUNE_LAST_MIN;
	size_t inc = 0, d = o->d;

	rc = surrogate_fit(&m, o->x, o->y, o->n, d);
	if (rc) {
		free(omean);
		return tune_fill(r, TUNE_FILL, "space-filling point");
	}
	for (size_t i = 0; i < o->n; i++) {
		surrogate_predict(&m, o->x + i * d, &omean[i], &sd);
		if (o->ok[i] && omean[i] > incumbent) {
			incumbent = omean[i];
			inc = i;
		}
	}
	pool_build(r, o, omean, &pool);
	sc = xcalloc(pool.n + 1, sizeof(*sc));
	xs = xcalloc(pool.n * d + 1, sizeof(*xs));
	for (size_t i = 0; i < pool.n; i++) {
		sc[i].x = xs + i * d;
		tune_features(t, pool.v + i * t->k, sc[i].x, d);
		surrogate_predict(&m, sc[i].x, &sc[i].mean, &sc[i].sd);
		sc[i].ei = surrogate_ei(sc[i].mean, sc[i].sd, incumbent, xi);
		/* by the mean: relative to the incumbent, so positive and not overflowing */
		sc[i].score = by_mean ? exp(sc[i].mean - incumbent) : sc[i].ei;
		sc[i].score *= feasible(&m, o, sc[i].x);
	}
	rc = by_mean ? pick_twin(r, &m, &pool, sc, o->v + inc * t->k, incumbent) : 0;
	if (rc >= 0)
		rc = pick_batch(r, &m, &pool, sc, incumbent, by_mean);
	if (rc >= 0)
		rc = tune_fill(r, TUNE_FILL,
			       "space-filling point (the model expects nothing better)");
	free(xs);
	free(sc);
	vset_release(&pool);
	free(omean);
	surrogate_release(&m);
	return rc;
}

/*
 * The spec's start points (tunables.starts) inside the space and not yet
 * measured, in their order: what the kernel's author knows runs well on
 * some device comes before anything the search would choose.
 */
static int offer_starts(struct run *r)
{
	const struct tune *t = r->t;
	int rc = 0;

	for (size_t i = 0; i < t->nstarts && rc >= 0 && r->n < r->ctx->want; i++)
		rc = tune_offer(r, t->starts + i * t->k, NULL,
				xasprintf("start point %zu of %zu (tunables.starts)",
					  t->start_at[i] + 1, t->s->nstarts));
	return rc < 0 ? rc : 0;
}

int tune_propose_model(struct run *r)
{
	struct obs o;
	int rc = offer_starts(r);

	if (rc || r->n >= r->ctx->want)
		return rc;
	obs_collect(&o, r);
	if (o.nok < TUNE_MODEL_MIN)
		rc = fill_lhs(r, "space-filling point");
	else
		rc = propose_gp(r, &o);
	obs_release(&o);
	return rc;
}
