/*
 * context.c - what a proposer model is told about the session, gathered
 * from the store into the document prompt.h describes.  Only the parent,
 * the inspirations and the last round's failures are read in full; the
 * tuner's summary is one pass over the history the round already holds,
 * so a request costs the same in a session of 1,000 variants as in one of
 * ten.
 */
#include "context.h"
#include "session.h"
#include "winner.h"
#include "jsonx.h"
#include "sbuf.h"
#include "xalloc.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Failure evidence kept per variant (a compile log can be long). */
#define EVIDENCE_MAX 1500
/* Failures of the last round given to the model. */
#define FAILURES_MAX 8

static json_t *get2(json_t *o, const char *a, const char *b)
{
	return json_object_get(json_object_get(o, a), b);
}

/* A new reference to v when it is an array, else a new empty array. */
static json_t *array_or_empty(json_t *v)
{
	return json_is_array(v) ? json_incref(v) : json_array();
}

json_t *context_kernel(const struct spec *sp, const struct blocks *bl)
{
	json_t *k = json_object(), *bufs = json_array(), *types = json_array(), *b, *tun;
	json_t *blocks = json_array(), *shapes = json_array(), *sh, *launch;
	struct sbuf dt = SBUF_INIT;
	size_t i;
	int primary_seen = 0;

	json_object_set_new(k, "name", json_string(sp->name));
	json_object_set_new(k, "semantics",
			    sp->semantics ? json_string(sp->semantics) : json_null());
	json_array_foreach (json_object_get(sp->problem, "buffers"), i, b) {
		const char *t = json_string_value(json_object_get(b, "type"));
		json_t *role = json_object_get(b, "role");
		int known = 0;

		json_array_append_new(bufs, json_pack("{s:O, s:O, s:O, s:O}", "name",
						      json_object_get(b, "name"), "type",
						      json_object_get(b, "type"), "role",
						      role ? role : json_string("input"), "count",
						      json_object_get(b, "count")));
		for (size_t j = 0; t && j < json_array_size(types); j++)
			known |= !strcmp(json_string_value(json_array_get(types, j)), t);
		if (t && !known) {
			json_array_append_new(types, json_string(t));
			sbuf_addf(&dt, "%s%s", dt.len ? ", " : "", t);
		}
	}
	json_decref(types);
	json_object_set_new(k, "dtype", json_string(dt.len ? dt.buf : ""));
	sbuf_release(&dt);
	json_object_set_new(k, "buffers", bufs);
	json_object_set_new(k, "scalars", array_or_empty(json_object_get(sp->problem, "scalars")));
	launch = json_object_get(sp->problem, "launch");
	json_object_set_new(k, "launch", array_or_empty(launch));
	json_object_set(k, "flops",
			json_object_get(sp->problem, "flops")
				? json_object_get(sp->problem, "flops")
				: json_null());
	json_object_set(k, "bytes",
			json_object_get(sp->problem, "bytes")
				? json_object_get(sp->problem, "bytes")
				: json_null());
	json_array_foreach (sp->shapes, i, sh) {
		int timed = json_is_true(json_object_get(sh, "timed"));
		json_t *e =
			json_pack("{s:O, s:O, s:b}", "name", json_object_get(sh, "name"), "values",
				  json_object_get(sh, "values"), "primary", timed && !primary_seen);

		/* Several shape buckets: the others are timed too (bucket.h). */
		if (timed && primary_seen)
			json_object_set_new(e, "bucket", json_true());
		primary_seen |= timed;
		json_array_append_new(shapes, e);
	}
	json_object_set_new(k, "shapes", shapes);
	json_object_set_new(k, "build_options",
			    json_string(sp->build_options ? sp->build_options : ""));
	tun = json_array();
	for (i = 0; i < sp->ntunables; i++) {
		json_t *vals = json_array();

		for (size_t j = 0; j < sp->tunables[i].nvalues; j++)
			json_array_append_new(vals, json_integer(sp->tunables[i].values[j]));
		json_array_append_new(
			tun, json_pack("{s:s, s:o}", "name", sp->tunables[i].name, "values", vals));
	}
	json_object_set_new(k, "tunables", tun);
	json_object_set_new(k, "render",
			    json_string(sp->render == RENDER_OPTIONS ? "options" : "define"));
	json_object_set_new(
		k, "markers",
		json_pack("{s:s, s:s}", "start", sp->marker_start, "end", sp->marker_end));
	json_object_set_new(k, "template", json_string(sp->template_src));
	for (i = 0; i < bl->n; i++)
		json_array_append_new(blocks, json_string(bl->b[i].name));
	json_object_set_new(k, "blocks", blocks);
	return k;
}

/* The device and peaks of the result of variant id, or NULL. */
static json_t *device_of(struct session *s, const char *id)
{
	json_t *r = store_result_get(s->st, s->id, id), *d = json_object_get(r, "device"),
	       *dev = NULL;

	if (json_is_object(d)) {
		json_t *roof = json_object_get(r, "roofline");

		dev = json_pack("{s:O?, s:O?, s:O?, s:O?}", "name", json_object_get(d, "name"),
				"vendor", json_object_get(d, "vendor"), "driver",
				json_object_get(d, "driver"), "compute_units",
				json_object_get(d, "compute_units"));
		jx_set_real(dev, "peak_gflops",
			    json_number_value(json_object_get(roof, "peak_gflops")));
		jx_set_real(dev, "peak_gbs", json_number_value(json_object_get(roof, "peak_gbs")));
	}
	json_decref(r);
	return dev;
}

/* The device of the newest ok result in history, else of any result. */
static json_t *device_of_history(const struct propose_ctx *ctx)
{
	for (size_t i = ctx->nhistory; i-- > 0;) {
		const struct cand *c = &ctx->history[i];

		if (c->status && !strcmp(c->status, "ok"))
			return device_of(ctx->session, c->id);
	}
	return context_device(ctx->session);
}

json_t *context_device(struct session *s)
{
	json_t *vars = store_variants_brief(s->st, s->id, -1), *dev = NULL;

	/* the newest result that was timed says what the device is */
	for (size_t i = json_array_size(vars); i-- > 0 && !dev;) {
		json_t *v = json_array_get(vars, i), *r, *d;

		if (!json_is_number(json_object_get(v, "median_ms")))
			continue;
		r = store_result_get(s->st, s->id, json_string_value(json_object_get(v, "id")));
		d = json_object_get(r, "device");
		if (json_is_object(d)) {
			json_t *roof = json_object_get(r, "roofline");

			dev = json_pack("{s:O?, s:O?, s:O?, s:O?}", "name",
					json_object_get(d, "name"), "vendor",
					json_object_get(d, "vendor"), "driver",
					json_object_get(d, "driver"), "compute_units",
					json_object_get(d, "compute_units"));
			jx_set_real(dev, "peak_gflops",
				    json_number_value(json_object_get(roof, "peak_gflops")));
			jx_set_real(dev, "peak_gbs",
				    json_number_value(json_object_get(roof, "peak_gbs")));
		}
		json_decref(r);
	}
	json_decref(vars);
	return dev;
}

/* The IR figures of the first kernel: machine code when there is, else LLVM IR. */
static json_t *ir_figures(json_t *result)
{
	static const char *const keys[] = { "vector_width_unit",
					    "max_vector_width",
					    "vector_widths",
					    "fma",
					    "loads",
					    "stores",
					    "branches",
					    "private_bytes",
					    "stack_spills",
					    "stack_reloads",
					    "scalar_sse",
					    "calls",
					    "instructions" };
	json_t *kernels = get2(result, "ir", "kernels"), *k, *src, *ir;
	const char *name;

	json_object_foreach (kernels, name, k) {
		src = json_object_get(k, "machine_code");
		if (!json_is_object(src))
			src = json_object_get(k, "llvm_ir");
		if (!json_is_object(src))
			continue;
		ir = json_pack("{s:s, s:O?}", "kernel", name, "flavor",
			       json_object_get(src, "kind"));
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (json_object_get(src, keys[i]))
				json_object_set(ir, keys[i], json_object_get(src, keys[i]));
		if (!json_object_get(ir, "private_bytes") &&
		    json_is_object(json_object_get(k, "llvm_ir")))
			json_object_set(ir, "private_bytes", get2(k, "llvm_ir", "private_bytes"));
		return ir;
	}
	return NULL;
}

static json_t *figures(json_t *result)
{
	json_t *f = winner_figures(result), *roof = json_object_get(result, "roofline"), *ir;
	static const char *const drop[] = { "samples",
					    "quality",
					    "speedup_vs_reference_iqr",
					    "speedup_vs_reference_links",
					    "speedup_vs_baseline",
					    "device" };

	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		json_object_del(f, drop[i]);
	json_object_set(f, "fraction_of_peak_flops",
			json_object_get(roof, "fraction_of_peak_flops"));
	json_object_set(f, "fraction_of_peak_bw", json_object_get(roof, "fraction_of_peak_bw"));
	json_object_set(f, "arithmetic_intensity", json_object_get(roof, "arithmetic_intensity"));
	json_object_set_new(f, "evidence", array_or_empty(json_object_get(roof, "evidence")));
	ir = ir_figures(result);
	json_object_set_new(f, "ir", ir ? ir : json_null());
	/* no null members: the prompt leaves out what is unknown */
	{
		const char *key;
		json_t *v, *tmp;

		json_object_foreach_safe(f, tmp, key, v) if (json_is_null(v))
			json_object_del(f, key);
	}
	return f;
}

json_t *context_variant(struct session *s, const char *id)
{
	json_t *v = store_variant_get(s->st, s->id, id), *out, *blocks, *res;
	const char *src;
	struct blocks bl;
	char why[256];

	if (!v)
		return NULL;
	src = json_string_value(json_object_get(v, "source"));
	blocks = json_object();
	if (src &&
	    !blocks_find(src, s->spec.marker_start, s->spec.marker_end, &bl, why, sizeof(why))) {
		for (size_t i = 0; i < bl.n; i++) {
			char *body = block_body(src, &bl, i);

			json_object_set_new(blocks, bl.b[i].name, json_string(body));
			free(body);
		}
		blocks_release(&bl);
	}
	out = json_pack("{s:O, s:O, s:O, s:O, s:o, s:O}", "id", json_object_get(v, "id"),
			"rationale", json_object_get(v, "rationale"), "lineage",
			json_object_get(v, "lineage"), "params", json_object_get(v, "params"),
			"blocks", blocks, "options", json_object_get(v, "options"));
	json_object_set_new(out, "tunables", array_or_empty(json_object_get(v, "tunables")));
	res = store_result_get(s->st, s->id, id);
	json_object_set_new(out, "figures", res ? figures(res) : json_object());
	json_decref(res);
	json_decref(v);
	return out;
}

/* The one line that says what failed and where, from a result. */
static json_t *evidence_of(json_t *res)
{
	const char *fmsg = json_string_value(get2(res, "fault", "message"));
	const char *log = json_string_value(get2(res, "compile", "log"));
	struct sbuf b = SBUF_INIT;
	json_t *out;

	if (fmsg)
		sbuf_adds(&b, fmsg);
	if (log && *log && !(fmsg && strstr(fmsg, log)))
		sbuf_addf(&b, "%sbuild log:\n%s", b.len ? "\n" : "", log);
	if (b.len > EVIDENCE_MAX) {
		b.len = EVIDENCE_MAX;
		/* do not cut a UTF-8 sequence */
		while (b.len && ((unsigned char)b.buf[b.len] & 0xc0) == 0x80)
			b.len--;
		b.buf[b.len] = '\0';
		sbuf_adds(&b, " [...]");
	}
	out = json_string(b.len ? b.buf : "");
	sbuf_release(&b);
	return out ? out : json_string("");
}

static json_t *failures(const struct propose_ctx *ctx)
{
	json_t *out = json_array();
	int last = 0;

	for (size_t i = 0; i < ctx->nhistory; i++)
		if (ctx->history[i].status && ctx->history[i].round > last)
			last = ctx->history[i].round;
	for (size_t i = 0; i < ctx->nhistory && json_array_size(out) < FAILURES_MAX; i++) {
		const struct cand *c = &ctx->history[i];
		json_t *res;

		if (c->round != last || !c->status || !strcmp(c->status, "ok"))
			continue;
		res = store_result_get(ctx->session->st, ctx->session->id, c->id);
		json_array_append_new(out, json_pack("{s:s, s:O?, s:s, s:s?, s:o}", "id", c->id,
						     "rationale", json_object_get(res, "rationale"),
						     "status", c->status, "fault_kind",
						     c->fault_kind, "evidence", evidence_of(res)));
		json_decref(res);
	}
	return out;
}

/* What the tuner found: how much it tried, its best, and per tunable the best value. */
static json_t *tuner(const struct propose_ctx *ctx)
{
	const struct spec *sp = ctx->spec;
	const struct cand *best = NULL;
	json_t *notes = json_array(), *t;
	size_t tried = 0;

	for (size_t i = 0; i < ctx->nhistory; i++) {
		const struct cand *c = &ctx->history[i];

		if (!c->params || !c->status)
			continue;
		tried++;
		if (isfinite(c->speedup) && (!best || c->speedup > best->speedup))
			best = c;
	}
	for (size_t j = 0; j < sp->ntunables && tried; j++) {
		const struct tunable *tu = &sp->tunables[j];
		struct sbuf b = SBUF_INIT;

		sbuf_addf(&b, "%s: best speedup by value:", tu->name);
		for (size_t k = 0; k < tu->nvalues; k++) {
			double top = NAN;
			size_t n = 0;

			for (size_t i = 0; i < ctx->nhistory; i++) {
				const struct cand *c = &ctx->history[i];
				json_t *x = json_object_get(c->params, tu->name);

				if (!c->params || !c->status || !json_is_integer(x) ||
				    json_integer_value(x) != tu->values[k])
					continue;
				n++;
				if (isfinite(c->speedup) && !(c->speedup <= top))
					top = c->speedup;
			}
			if (n && isfinite(top))
				sbuf_addf(&b, " %lld -> %.2fx (%zu tried);",
					  (long long)tu->values[k], top, n);
			else if (n)
				sbuf_addf(&b, " %lld -> none ran (%zu tried);",
					  (long long)tu->values[k], n);
		}
		json_array_append_new(notes, json_string(b.buf));
		sbuf_release(&b);
	}
	t = json_pack("{s:I, s:o}", "tried", (json_int_t)tried, "notes", notes);
	if (best) {
		json_t *bj = json_pack("{s:s, s:O}", "id", best->id, "params", best->params);

		jx_set_real(bj, "speedup_vs_reference", best->speedup);
		json_object_set_new(t, "best", bj);
	} else {
		json_object_set_new(t, "best", json_null());
	}
	return t;
}

json_t *context_build(const struct propose_ctx *ctx, const char *parent,
		      const char *const *inspirations, size_t ninsp, size_t directions)
{
	struct session *s = ctx->session;
	json_t *c = json_object(), *insp = json_array(), *dev, *p;

	json_object_set_new(c, "round", json_integer(ctx->round));
	json_object_set_new(c, "mode",
			    json_string(ctx->mode == NAV_EXPLORE ? "explore" : "exploit"));
	json_object_set_new(c, "directions", json_integer((json_int_t)directions));
	json_object_set_new(c, "kernel", context_kernel(ctx->spec, ctx->blocks));
	dev = device_of_history(ctx);
	json_object_set_new(c, "device", dev ? dev : json_null());
	p = parent ? context_variant(s, parent) : NULL;
	json_object_set_new(c, "parent", p ? p : json_null());
	for (size_t i = 0; i < ninsp; i++) {
		json_t *v = context_variant(s, inspirations[i]);

		if (v)
			json_array_append_new(insp, v);
	}
	json_object_set_new(c, "inspirations", insp);
	json_object_set_new(c, "learnings",
			    ctx->learnings ? json_string(ctx->learnings) : json_null());
	json_object_set_new(c, "failures", failures(ctx));
	json_object_set_new(c, "tuner", tuner(ctx));
	return c;
}

json_t *context_reflect(struct session *s, int round, const char *learnings)
{
	json_t *vars = store_variants_brief(s->st, s->id, round), *v, *out = json_array();
	size_t i;

	json_array_foreach (vars, i, v) {
		const char *id = json_string_value(json_object_get(v, "id"));
		json_t *cv = context_variant(s, id);

		if (!cv)
			continue;
		json_object_set(cv, "parent", json_object_get(v, "parent"));
		json_object_set(cv, "status", json_object_get(v, "status"));
		json_array_append_new(out, cv);
	}
	json_decref(vars);
	return json_pack("{s:i, s:o, s:o, s:s?}", "round", round, "kernel",
			 context_kernel(&s->spec, &s->blocks), "variants", out, "learnings",
			 learnings);
}
