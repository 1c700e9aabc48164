/*
 * winner.c - the one record that names the session's best kernel.
 *
 * best.cl, report.md, learnings.md, `kctl status` and the progress line
 * all read the winner from here: the incumbent (lineage 0), the figures of
 * its latest measurement with their noise, whether a confirmation has
 * re-timed it side by side with the other top candidates and what that
 * showed, and what a user needs to run it (parameters, build options,
 * launch geometry at every shape).  The record is written in the same
 * transaction that moves lineage 0, so the two never disagree.
 */
#include "session.h"
#include "winner.h"
#include "err.h"
#include "jsonx.h"
#include "log.h"
#include "sbuf.h"
#include "xalloc.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static json_t *get2(json_t *o, const char *a, const char *b)
{
	return json_object_get(json_object_get(o, a), b);
}

static double getnum(json_t *v)
{
	return json_is_number(v) ? json_number_value(v) : NAN;
}

json_t *winner_figures(json_t *result)
{
	json_t *perf = json_object_get(result, "performance");
	json_t *roof = json_object_get(result, "roofline"), *w = json_object();
	json_t *ref = json_object_get(perf, "speedup_vs_reference");

	json_object_set(w, "status", json_object_get(result, "status"));
	json_object_set(w, "shape", json_object_get(perf, "shape"));
	jx_set_real(w, "median_ms", getnum(json_object_get(perf, "median_ms")));
	json_object_set(w, "samples", get2(perf, "stats", "n"));
	jx_set_real(w, "robust_cv", getnum(json_object_get(perf, "robust_cv")));
	json_object_set(w, "quality", json_object_get(perf, "quality"));
	jx_set_real(w, "speedup_vs_reference", getnum(json_object_get(ref, "ratio_of_medians")));
	if (json_is_number(json_object_get(ref, "paired_p25")))
		json_object_set_new(w, "speedup_vs_reference_iqr",
				    json_pack("[O, O]", json_object_get(ref, "paired_p25"),
					      json_object_get(ref, "paired_p75")));
	else
		json_object_set_new(w, "speedup_vs_reference_iqr", json_null());
	/* evalpod's anchors: the links between the figure and a timed reference (0: none) */
	json_object_set_new(w, "speedup_vs_reference_links",
			    json_integer(json_integer_value(get2(ref, "via", "links"))));
	jx_set_real(w, "speedup_vs_baseline",
		    getnum(get2(perf, "speedup_vs_baseline", "ratio_of_medians")));
	jx_set_real(w, "gflops", getnum(json_object_get(roof, "gflops")));
	jx_set_real(w, "gbps", getnum(json_object_get(roof, "gbs")));
	json_object_set(w, "bottleneck", json_object_get(roof, "bottleneck"));
	json_object_set(w, "device", get2(result, "device", "name"));
	/* JSON null for what is absent, never a missing key */
	{
		const char *keys[] = { "status",  "shape",      "samples",
				       "quality", "bottleneck", "device" };

		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (!json_object_get(w, keys[i]))
				json_object_set_new(w, keys[i], json_null());
	}
	return w;
}

/* Whether word is "-DNAME=VALUE" for a parameter of params. */
static int is_param_define(const char *word, size_t len, json_t *params)
{
	const char *key;
	json_t *val;

	json_object_foreach (params, key, val) {
		char want[192];
		int w = snprintf(want, sizeof(want), "-D%s=%lld", key,
				 (long long)json_integer_value(val));

		if (w > 0 && (size_t)w == len && !memcmp(word, want, len))
			return 1;
	}
	return 0;
}

char *winner_best_options(const struct spec *sp, json_t *variant)
{
	const char *opt = json_string_value(json_object_get(variant, "options"));
	json_t *params = json_object_get(variant, "params");
	struct sbuf b = SBUF_INIT;

	if (!opt)
		opt = "";
	if (sp->render != RENDER_OPTIONS || !json_is_object(params) || !json_object_size(params))
		return xstrdup(opt);
	while (*opt) {
		size_t sp_len = strspn(opt, " \t"), len;

		opt += sp_len;
		len = strcspn(opt, " \t");
		if (len && !is_param_define(opt, len, params))
			sbuf_addf(&b, "%s%.*s", b.len ? " " : "", (int)len, opt);
		opt += len;
	}
	return b.len ? sbuf_detach(&b, NULL) : xstrdup("");
}

int winner_record(struct session *s, int round, json_t *variant, json_t *result, json_t *extra,
		  char *msg, size_t n)
{
	const char *id = json_string_value(json_object_get(variant, "id"));
	json_t *w = winner_figures(result), *launch;
	char why[512], *best_opts = winner_best_options(&s->spec, variant);
	int rc;

	json_object_set_new(w, "variant", json_string(id));
	json_object_set_new(w, "round", json_integer(round));
	json_object_set(w, "params", json_object_get(variant, "params"));
	json_object_set(w, "build_options", json_object_get(variant, "options"));
	json_object_set_new(w, "best_cl_build_options", json_string(best_opts));
	if (!json_object_get(w, "params"))
		json_object_set_new(w, "params", json_null());
	launch = spec_launch_geometry(
		&s->spec, json_string_value(json_object_get(variant, "source")),
		json_string_value(json_object_get(variant, "options")), why, sizeof(why));
	if (!launch)
		log_warn("the launch geometry of %s: %s", id, why);
	json_object_set_new(w, "launch", launch ? launch : json_null());
	json_object_set_new(w, "confirmed", json_false());
	json_object_set_new(w, "settled", json_null());
	json_object_set_new(w, "runner_up", json_null());
	if (extra)
		json_object_update(w, extra);
	rc = store_session_set_winner(s->st, s->id, w, msg, n);
	free(best_opts);
	json_decref(w);
	return rc;
}

json_t *session_winner(struct store *st, const char *id)
{
	json_t *row = store_session_get(st, id), *lins, *l, *w = NULL;
	const char *inc_id = NULL;
	size_t i;

	if (!row)
		return NULL;
	lins = store_lineages(st, id);
	json_array_foreach (lins, i, l)
		if (json_integer_value(json_object_get(l, "lineage")) == 0)
			inc_id = json_string_value(json_object_get(l, "best"));
	w = json_object_get(row, "winner");
	if (inc_id && json_is_object(w) && json_string_value(json_object_get(w, "variant")) &&
	    !strcmp(json_string_value(json_object_get(w, "variant")), inc_id)) {
		json_incref(w);
	} else if (inc_id) {
		/* a session from before the winner record: its own round's figures */
		json_t *res = store_result_get(st, id, inc_id),
		       *v = store_variant_get(st, id, inc_id);

		w = winner_figures(res);
		json_object_set_new(w, "variant", json_string(inc_id));
		json_object_set(w, "round", json_object_get(v, "round"));
		json_object_set(w, "params", json_object_get(v, "params"));
		json_object_set(w, "build_options", json_object_get(v, "options"));
		json_object_set_new(w, "confirmed", json_false());
		json_object_set_new(w, "settled", json_null());
		json_object_set_new(w, "verdict",
				    json_string("figures of its own round; not confirmed"));
		json_decref(res);
		json_decref(v);
	} else {
		w = NULL;
	}
	json_decref(lins);
	json_decref(row);
	return w;
}

void winner_noise(json_t *w, char *out, size_t n)
{
	double cv = getnum(json_object_get(w, "robust_cv"));
	const char *q = json_string_value(json_object_get(w, "quality"));

	if (isfinite(cv))
		snprintf(out, n, "robust CV %.1f%%, %s", cv * 100, q ? q : "?");
	else
		snprintf(out, n, "noise not measured");
}
