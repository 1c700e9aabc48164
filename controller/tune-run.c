/*
 * tune-run.c - what the tuner's strategies do with one round (struct run):
 * a candidate's vector, whether a vector is fresh, a random draw, and
 * offering a vector as a proposal (rendered, and kept unless the session
 * already has its variant).
 *
 * The layer between tune.c and tune-model.c above it and tune-space.c
 * below: both strategy files call it; it calls neither.  May use:
 * tune-internal.h (struct run, the space of tune-space.c), propose and
 * common/.
 */
#include "tune-internal.h"
#include "xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int vec_of_params(const struct tune *t, json_t *params, uint32_t *v)
{
	for (size_t j = 0; j < t->k; j++) {
		json_t *x = json_object_get(params, t->s->tunables[j].name);

		if (!json_is_integer(x) ||
		    !tune_value_index(&t->s->tunables[j], json_integer_value(x), &v[j]))
			return 0;
	}
	return 1;
}

/*
 * Fills v with c's vector.  A variant without params that is the template
 * itself (the starting point) has the template's own vector.  Returns 0
 * when c has no vector in the space.
 */
int tune_vec_of_cand(const struct tune *t, const struct cand *c, uint32_t *v)
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

/* Valid, and neither tried nor refused before. */
int tune_fresh(struct run *r, const uint32_t *v)
{
	return !vset_has(&r->seen, v) && !vset_has(&r->refused, v) &&
	       (!r->t->listed.n || vset_has(&r->t->listed, v)) && tune_vec_valid(r->t, v, NULL, 0);
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
int tune_offer(struct run *r, const uint32_t *v, const char *parent, char *why)
{
	json_t *params = NULL;
	char *src = NULL, *opt = NULL, hash[65];
	int rc = 0;

	if (r->n >= r->ctx->want || !tune_fresh(r, v))
		goto out;
	params = tune_params_of(r->t, v);
	rc = spec_render_point(r->t->s, r->ctx->blocks, params, &src, &opt, r->msg, r->mlen);
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

/* One random vector: an untried valid one of a listed space, any of a large one. */
int tune_draw(struct run *r, uint32_t *v)
{
	const struct tune *t = r->t;

	if (t->enumerated) {
		if (!r->nfresh)
			return 0;
		memcpy(v, t->space + r->fresh[tune_rng_below(r->rng, r->nfresh)] * t->k,
		       t->k * sizeof(*v));
		return 1;
	}
	for (size_t j = 0; j < t->k; j++)
		v[j] = (uint32_t)tune_rng_below(r->rng, t->s->tunables[j].nvalues);
	return 1;
}

/*
 * A valid vector to walk from: the round's seen vectors (the history's
 * and this round's proposals), the template's own and the spec's starts,
 * one picked at random; 0 when none is valid.
 */
static int walk_anchor(struct run *r, uint32_t *v)
{
	const struct tune *t = r->t;
	size_t n = r->seen.n + (t->defaults != NULL) + t->nstarts, first;

	if (!n)
		return 0;
	first = tune_rng_below(r->rng, n);
	for (size_t step = 0; step < n; step++) {
		size_t i = (first + step) % n;
		const uint32_t *a =
			i < r->seen.n ? r->seen.v + i * t->k
			: t->defaults && i == r->seen.n
				? t->defaults
				: t->starts + (i - r->seen.n - (t->defaults != NULL)) * t->k;

		memcpy(v, a, t->k * sizeof(*v));
		if (tune_vec_valid(r->t, v, NULL, 0))
			return 1;
	}
	return 0;
}

/* From valid v, TUNE_WALK_STEPS x k steps: one tunable set to another value, kept if still valid. */
static void walk(struct run *r, uint32_t *v)
{
	const struct tune *t = r->t;

	for (size_t step = 0; step < TUNE_WALK_STEPS * t->k; step++) {
		size_t j = tune_rng_below(r->rng, t->k), nv = t->s->tunables[j].nvalues, x;
		uint32_t was = v[j];

		if (nv < 2)
			continue;
		x = tune_rng_below(r->rng, nv - 1);
		v[j] = (uint32_t)(x >= was ? x + 1 : x);
		if (!tune_vec_valid_after(r->t, v, j))
			v[j] = was;
	}
}

int tune_build_fresh(struct run *r, uint32_t *v)
{
	if (r->t->enumerated)
		return 0;
	for (size_t i = 0; i < TUNE_BUILDS; i++) {
		if (tune_build(r->t, r->rng, v) && tune_fresh(r, v))
			return 1;
		if (walk_anchor(r, v)) {
			walk(r, v);
			if (tune_fresh(r, v))
				return 1;
		}
	}
	return 0;
}
