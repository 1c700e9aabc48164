/*
 * mix.c - the navigator of a model session: how each round's slots are
 * shared between the model (new structure), the tuner on the spec's
 * tunables, and the sweep of the tunables a model variant declared (or
 * the spec's #defines it kept), decided in code from what was measured.
 *
 * The rule, in order (the plan records each step that applied):
 *   1. the spec's weights (proposer.mix, default model 3 : tune 1);
 *   2. the navigator's mode: explore moves a quarter of the round to the
 *      model, exploit a quarter to the tuner side;
 *   3. the last two search rounds' yield, per side (variants that ran and
 *      beat their parent by 1% or more): a side that improved nothing
 *      while the other did loses a quarter to it;
 *   4. a spent model budget gives everything to the tuner side;
 *   5. the tuner side sweeps the lineages' model variants first (their
 *      untried one-step moves, nearest value first), then runs the spec's
 *      tuner; whatever it cannot fill goes back to the model;
 *   6. whatever the model does not give (answers it could not use) goes
 *      back to the tuner side, unless the weights give the tuner nothing.
 */
#include "session.h"
#include "propose.h"
#include "answer.h"
#include "err.h"
#include "jsonx.h"
#include "log.h"
#include "sbuf.h"
#include "xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A child beats its parent by at least this to count as an improvement. */
#define MIX_GAIN 1.01
/* Search rounds the yield looks back over. */
#define MIX_LOOKBACK 2

struct mix {
	const struct spec *sp;
	struct proposer model;
	struct proposer tune; /* .propose NULL when the spec has no tunables */
};

static int is_model(const struct cand *c)
{
	return c->origin && !strcmp(c->origin, "model");
}

static int is_tuner(const struct cand *c)
{
	return c->params ||
	       (c->origin && (!strcmp(c->origin, "tune") || !strcmp(c->origin, "sweep")));
}

/* Variants of the last MIX_LOOKBACK rounds that ran, and those that beat their parent. */
static void yield(const struct propose_ctx *ctx, int (*side)(const struct cand *), size_t *ran,
		  size_t *improved)
{
	int last = 0;

	*ran = *improved = 0;
	for (size_t i = 0; i < ctx->nhistory; i++)
		if (ctx->history[i].status && ctx->history[i].round > last)
			last = ctx->history[i].round;
	for (size_t i = 0; i < ctx->nhistory; i++) {
		const struct cand *c = &ctx->history[i], *p = NULL;

		if (!c->status || c->round <= last - MIX_LOOKBACK || !side(c))
			continue;
		(*ran)++;
		for (size_t k = 0; c->parent && k < ctx->nhistory && !p; k++)
			if (!strcmp(ctx->history[k].id, c->parent))
				p = &ctx->history[k];
		if (isfinite(c->speedup) &&
		    (!p || !isfinite(p->speedup) || c->speedup >= p->speedup * MIX_GAIN))
			(*improved)++;
	}
}

/* The model's share of the round, with the reasons in why. */
static double model_share(struct mix *x, const struct propose_ctx *ctx, struct sbuf *why)
{
	const struct spec_model *m = &x->sp->m;
	double share = m->weight_model / (m->weight_model + m->weight_tune);
	size_t mran, mimp, tran, timp;
	char spent[256];

	sbuf_addf(why, "weights model %g : tune %g -> %.0f%% model", m->weight_model,
		  m->weight_tune, share * 100);
	if (!(m->weight_tune > 0))
		return 1; /* the model alone: nothing to move */
	if (ctx->mode == NAV_EXPLORE) {
		share += 0.25;
		sbuf_adds(why, "; exploring: +25% model (new structure)");
	} else {
		share -= 0.25;
		sbuf_adds(why, "; exploiting: +25% tuner (the lineages' parameters)");
	}
	yield(ctx, is_model, &mran, &mimp);
	yield(ctx, is_tuner, &tran, &timp);
	if (mran >= 2 && !mimp && timp) {
		share -= 0.25;
		sbuf_addf(why,
			  "; the model improved none of its last %zu while the tuner improved "
			  "%zu: +25%% tuner",
			  mran, timp);
	} else if (tran >= 2 && !timp && mimp) {
		share += 0.25;
		sbuf_addf(why,
			  "; the tuner improved none of its last %zu while the model improved "
			  "%zu: +25%% model",
			  tran, mimp);
	}
	if (model_budget_spent(ctx->session, spent, sizeof(spent))) {
		share = 0;
		sbuf_addf(why, "; %s: all to the tuner", spent);
	}
	return share < 0 ? 0 : share > 1 ? 1 : share;
}

/* --- the sweep ------------------------------------------------------------- */

struct move {
	const char *name;
	int64_t from, to;
	size_t dist; /* positions apart in the value list */
};

static int move_cmp(const void *a, const void *b)
{
	const struct move *x = a, *y = b;

	return x->dist < y->dist ? -1 : x->dist > y->dist;
}

/* What the sweep has proposed this round, with each proposal's address. */
struct swept {
	struct proposal *p;
	size_t n;
	char (*hash)[65];
};

static int hash_known(const struct propose_ctx *ctx, const struct swept *w, const char *hash)
{
	for (size_t i = 0; i < ctx->nhistory; i++)
		if (ctx->history[i].hash && !strcmp(ctx->history[i].hash, hash))
			return 1;
	for (size_t i = 0; i < w->n; i++)
		if (!strcmp(w->hash[i], hash))
			return 1;
	return 0;
}

/* The tunables a model variant may be swept over: its own, and the spec's
 * #defines it kept (render: define) as [{name, values}]. */
static json_t *sweepable(const struct spec *sp, const struct cand *c)
{
	json_t *t = c->tunables ? json_deep_copy(c->tunables) : json_array();

	for (size_t j = 0; sp->render == RENDER_DEFINE && j < sp->ntunables; j++) {
		json_t *vals = json_array();
		size_t i, have = 0;
		json_t *e;

		json_array_foreach (t, i, e)
			have |= !strcmp(json_string_value(json_object_get(e, "name")),
					sp->tunables[j].name);
		if (have) {
			json_decref(vals);
			continue;
		}
		for (size_t k = 0; k < sp->tunables[j].nvalues; k++)
			json_array_append_new(vals, json_integer(sp->tunables[j].values[k]));
		json_array_append_new(
			t, json_pack("{s:s, s:o}", "name", sp->tunables[j].name, "values", vals));
	}
	return t;
}

/* Up to want one-step moves of parent's sweepable tunables, nearest first. */
static void sweep_parent(struct mix *x, const struct propose_ctx *ctx, const struct cand *c,
			 size_t want, struct swept *w)
{
	const struct spec *sp = x->sp;
	json_t *v = store_variant_get(ctx->session->st, ctx->session->id, c->id);
	const char *src = json_string_value(json_object_get(v, "source"));
	json_t *tun = sweepable(sp, c), *e;
	struct move *mv = NULL;
	size_t nmv = 0, i;
	char why[256];

	json_array_foreach (tun, i, e) {
		const char *name = json_string_value(json_object_get(e, "name"));
		json_t *vals = json_object_get(e, "values");
		size_t nv = json_array_size(vals), cur = SIZE_MAX;
		int64_t now;

		if (!src || !answer_get_define(src, sp->marker_start, sp->marker_end, name, &now))
			continue;
		for (size_t k = 0; k < nv && cur == SIZE_MAX; k++)
			if (json_integer_value(json_array_get(vals, k)) == now)
				cur = k;
		if (cur == SIZE_MAX)
			continue; /* a value off the list: no neighbours to step to */
		for (size_t k = 0; k < nv; k++) {
			if (k == cur)
				continue;
			mv = xreallocarray(mv, nmv + 1, sizeof(*mv));
			mv[nmv++] =
				(struct move){ name, json_integer_value(json_array_get(vals, cur)),
					       json_integer_value(json_array_get(vals, k)),
					       k > cur ? k - cur : cur - k };
		}
	}
	qsort(mv, nmv, sizeof(*mv), move_cmp);
	for (i = 0; i < nmv && want; i++) {
		char *s2 = answer_set_define(src, sp->marker_start, sp->marker_end, mv[i].name,
					     mv[i].to, why, sizeof(why)),
		     hash[65];
		const char *opts = json_string_value(json_object_get(v, "options"));

		if (!s2)
			continue;
		variant_hash(s2, opts ? opts : "", hash);
		if (hash_known(ctx, w, hash) ||
		    blocks_verify(sp->template_src, ctx->blocks, s2, sp->marker_start,
				  sp->marker_end, why, sizeof(why))) {
			free(s2);
			continue;
		}
		w->p = xreallocarray(w->p, w->n + 1, sizeof(*w->p));
		w->hash = xreallocarray(w->hash, w->n + 1, sizeof(*w->hash));
		memcpy(w->hash[w->n], hash, sizeof(hash));
		w->p[w->n++] = (struct proposal){
			.source = s2,
			.options = xstrdup(opts ? opts : ""),
			.parent = xstrdup(c->id),
			.rationale = xasprintf("sweep: %s %lld->%lld on %s", mv[i].name,
					       (long long)mv[i].from, (long long)mv[i].to, c->id),
			.origin = "sweep",
			.tunables = c->tunables ? json_incref(c->tunables) : NULL,
		};
		want--;
	}
	free(mv);
	json_decref(tun);
	json_decref(v);
}

/* Sweeps the lineages' bests that the model wrote (or swept), best first. */
static void sweep(struct mix *x, const struct propose_ctx *ctx, size_t want,
		  struct proposal **props, size_t *n)
{
	struct swept w = { 0 };

	for (size_t i = 0; i < ctx->nparents && want; i++) {
		const struct cand *c = ctx->parents[i];
		size_t before = w.n;

		if (!c->origin || (strcmp(c->origin, "model") && strcmp(c->origin, "sweep")))
			continue;
		/* the better parent gets at least half of what is left */
		sweep_parent(x, ctx, c, i + 1 < ctx->nparents ? (want + 1) / 2 : want, &w);
		want -= w.n - before;
	}
	free(w.hash);
	*props = w.p;
	*n = w.n;
}

/* --- one round ------------------------------------------------------------------ */

static void append(struct proposal **all, size_t *n, struct proposal *more, size_t nmore)
{
	if (!nmore) {
		free(more);
		return;
	}
	*all = xreallocarray(*all, *n + nmore, sizeof(**all));
	memcpy(*all + *n, more, nmore * sizeof(*more));
	*n += nmore;
	free(more);
}

/* Frees props[from..n) and keeps the first from. */
static void keep_first(struct proposal *props, size_t *n, size_t from)
{
	for (size_t i = from; i < *n; i++)
		proposal_release(&props[i]);
	*n = from;
}

/*
 * The tuner side (the sweep first, then the spec's tuner) offers up to the
 * whole round; the model is asked for its share plus what the tuner side
 * cannot fill; what the model does not give (answers it could not use)
 * goes back to the tuner side's offer, unless the spec's weights give the
 * tuner nothing.
 */
static int mix_propose(struct proposer *p, const struct propose_ctx *ctx, struct proposal **out,
		       size_t *n, char *msg, size_t mlen)
{
	struct mix *x = p->state;
	struct sbuf why = SBUF_INIT;
	struct proposal *all = NULL, *more = NULL;
	size_t nall = 0, nmore = 0, want_model, want_tune, nsweep, npool, take, nmodel = 0, nswept;
	size_t offer = x->sp->m.weight_tune > 0 ? ctx->want : 0; /* what the tuner side offers */
	double share = model_share(x, ctx, &why);
	struct propose_ctx sub = *ctx;
	int rc = 0;

	*out = NULL;
	*n = 0;
	want_model = (size_t)lround(share * (double)ctx->want);
	if (share > 0 && !want_model && ctx->want)
		want_model = 1;
	want_tune = ctx->want - want_model;
	sweep(x, ctx, offer, &all, &nall);
	nsweep = nall;
	if (nall < offer && x->tune.propose) {
		sub.want = offer - nall;
		rc = x->tune.propose(&x->tune, &sub, &more, &nmore, msg, mlen);
		append(&all, &nall, more, nmore);
	}
	npool = nall;
	take = want_tune < npool ? want_tune : npool;
	if (!rc && take < want_tune) {
		sbuf_addf(&why, "; the tuner side filled %zu of %zu: the rest to the model", take,
			  want_tune);
		want_model += want_tune - take;
	}
	if (!rc && want_model && share > 0) {
		sub.want = want_model;
		more = NULL;
		nmore = 0;
		rc = x->model.propose(&x->model, &sub, &more, &nmore, msg, mlen);
		nmodel = nmore;
		if (!rc && nmodel < want_model && take < npool) {
			size_t extra = want_model - nmodel < npool - take ? want_model - nmodel
									  : npool - take;

			sbuf_addf(&why, "; the model gave %zu of %zu: %zu more to the tuner side",
				  nmodel, want_model, extra);
			take += extra;
		}
		if (!rc) {
			keep_first(all, &nall, take);
			append(&all, &nall, more, nmore);
		} else {
			proposals_free(more, nmore);
		}
	} else {
		keep_first(all, &nall, take);
	}
	if (rc) {
		proposals_free(all, nall);
		sbuf_release(&why);
		return rc;
	}
	nswept = take < nsweep ? take : nsweep; /* of what was taken, the sweep's */
	if (ctx->plan) {
		json_object_set_new(ctx->plan, "slots",
				    json_pack("{s:I, s:I, s:I}", "model", (json_int_t)want_model,
					      "tune", (json_int_t)(take - nswept), "sweep",
					      (json_int_t)nswept));
		json_object_set_new(ctx->plan, "proposed",
				    json_pack("{s:I, s:I, s:I}", "model", (json_int_t)nmodel,
					      "tune", (json_int_t)(take - nswept), "sweep",
					      (json_int_t)nswept));
		json_object_set_new(ctx->plan, "why", json_string(why.buf));
	}
	log_info("round %d: %zu slots: model %zu (of %zu asked), tuner %zu, sweep %zu (%s)",
		 ctx->round, ctx->want, nmodel, want_model, take - nswept, nswept, why.buf);
	if (!nall && want_model)
		log_warn("round %d: nothing to evaluate: the model gave no direction that could "
			 "be used (rounds/r%03d/llm/ has its answers and what was wrong)",
			 ctx->round, ctx->round);
	sbuf_release(&why);
	*out = all;
	*n = nall;
	return 0;
}

static int mix_reflect(struct proposer *p, struct session *s, int round, char *msg, size_t n)
{
	struct mix *x = p->state;

	return x->model.reflect ? x->model.reflect(&x->model, s, round, msg, n) : 0;
}

static void mix_release(struct proposer *p)
{
	struct mix *x = p->state;

	if (!x)
		return;
	proposer_close(&x->model);
	if (x->tune.propose)
		proposer_close(&x->tune);
	free(x);
	p->state = NULL;
}

int mix_open(struct proposer *p, const struct spec *s, char *msg, size_t n)
{
	struct mix *x = xcalloc(1, sizeof(*x));
	int rc;

	memset(p, 0, sizeof(*p));
	x->sp = s;
	rc = model_open(&x->model, s, msg, n);
	if (!rc && s->ntunables && s->m.weight_tune > 0)
		rc = tune_open(&x->tune, s, msg, n);
	if (rc) {
		proposer_close(&x->model);
		free(x);
		return rc;
	}
	p->name = "mix";
	p->propose = mix_propose;
	p->reflect = mix_reflect;
	p->release = mix_release;
	p->state = x;
	return 0;
}
