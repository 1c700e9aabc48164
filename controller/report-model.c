/*
 * report-model.c - what a session's report shows, gathered once from the
 * store (report.h, report_model): `kctl report -o json` prints it and
 * report-html.c draws it.  Only the store is read, and of the session
 * folder only whether an artifact is there to link.
 */
#include "report.h"
#include "report-internal.h"
#include "bucket.h"
#include "diff.h"
#include "sbuf.h"
#include "store.h"
#include "winner.h"
#include "xalloc.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

/* Variants whose figures, timings and diffs the report shows in full. */
#define REPORT_TOP 10
/* Failed variants quoted per kind of failure. */
#define REPORT_FAIL_EXAMPLES 3
/* A quoted fault message is cut to this many bytes. */
#define REPORT_MSG_MAX 600

static json_t *or_null(json_t *v)
{
	return v ? v : json_null();
}

static void count(json_t *counts, const char *key)
{
	json_t *v = json_object_get(counts, key);

	json_object_set_new(counts, key, json_integer(json_integer_value(v) + 1));
}

/*
 * Drops from a store_variants_brief or store_variant_get row what the
 * report does not show (its source above all), in place: a copy would
 * double the memory of a large session.
 */
static void variant_trim(json_t *v)
{
	static const char *const drop[] = { "hash", "source", "tunables", "created" };

	for (size_t k = 0; k < sizeof(drop) / sizeof(drop[0]); k++)
		json_object_del(v, drop[k]);
}

/*
 * Marks where evalpod left variant v's files: "folder" (its results
 * folder, relative to the session folder) and "trace" (true when trace.json
 * is in it), when they are there.
 */
static void variant_files(json_t *v, const char *dir)
{
	char *rel = xasprintf("rounds/r%03d/results/%s",
			      (int)json_integer_value(json_object_get(v, "round")),
			      report_str(v, "id"));
	char *path = xasprintf("%s/%s", dir, rel), *trace = xasprintf("%s/trace.json", path);

	if (!strchr(report_str(v, "id"), '/') && !access(path, X_OK)) {
		json_object_set_new(v, "folder", json_string(rel));
		if (!access(trace, R_OK))
			json_object_set_new(v, "trace", json_true());
	}
	free(trace);
	free(path);
	free(rel);
}

/* One row per round: its mode and decision, and what became of its variants. */
static json_t *rounds(struct store *st, const char *id, json_t *vars)
{
	int last = store_round_last(st, id);
	json_t *out = json_array(), **at = xcalloc((size_t)(last < 0 ? 0 : last) + 1, sizeof(*at));
	json_t *v;
	size_t i;

	for (int r = 0; r <= last; r++) {
		json_t *row = store_round_get(st, id, r), *o;

		if (!row)
			continue;
		o = json_pack(
			"{s:i, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:i, s:{}, s:{}, s:{}}", "round",
			r, "mode", json_object_get(row, "mode"), "decision",
			json_object_get(row, "decision"), "reason", json_object_get(row, "reason"),
			"started", json_object_get(row, "started"), "finished",
			json_object_get(row, "finished"), "plan", json_object_get(row, "plan"),
			"variants", 0, "statuses", "bottlenecks", "faults");
		if (json_is_object(json_object_get(row, "confirm")))
			json_object_set(
				o, "retimed",
				json_object_get(json_object_get(row, "confirm"), "programs"));
		json_array_append_new(out, o);
		at[r] = o;
		json_decref(row);
	}
	/* one pass over the variants, each counted in its round's row */
	json_array_foreach (vars, i, v) {
		json_int_t r = json_integer_value(json_object_get(v, "round"));
		json_t *o = r >= 0 && r <= last ? at[r] : NULL;

		if (!o)
			continue;
		json_object_set_new(
			o, "variants",
			json_integer(json_integer_value(json_object_get(o, "variants")) + 1));
		count(json_object_get(o, "statuses"),
		      *report_str(v, "status") ? report_str(v, "status") : "pending");
		if (*report_str(v, "bottleneck"))
			count(json_object_get(o, "bottlenecks"), report_str(v, "bottleneck"));
		if (*report_str(v, "fault_kind"))
			count(json_object_get(o, "faults"), report_str(v, "fault_kind"));
	}
	free(at);
	return out;
}

/* The first line of a failed result's reason, cut to REPORT_MSG_MAX bytes. */
static json_t *fault_message(json_t *res)
{
	const char *m = report_str(json_object_get(res, "fault"), "message");
	struct sbuf b = SBUF_INIT;
	size_t len;
	json_t *out;

	if (!*m)
		m = report_str(json_object_get(res, "compile"), "log");
	len = strcspn(m, "\n");
	if (len > REPORT_MSG_MAX)
		len = REPORT_MSG_MAX;
	/* never cut a UTF-8 sequence: back off to the start of one */
	while (len && m[len] && ((unsigned char)m[len] & 0xc0) == 0x80)
		len--;
	sbuf_add(&b, m, len);
	out = json_stringn(b.buf ? b.buf : "", b.len);
	if (!out)
		out = json_string("");
	sbuf_release(&b);
	return out;
}

/* Failed variants grouped by (status, fault kind), each group with a few examples. */
static json_t *failures(struct store *st, const char *id, json_t *vars)
{
	json_t *groups = json_object(), *out = json_array(), *v, *g;
	const char *key;
	size_t i;

	json_array_foreach (vars, i, v) {
		const char *status = report_str(v, "status");
		char *k;

		if (!*status || !strcmp(status, "ok"))
			continue;
		k = xasprintf("%s/%s", status, report_str(v, "fault_kind"));
		g = json_object_get(groups, k);
		if (!g) {
			g = json_pack("{s:s, s:O?, s:i, s:[]}", "status", status, "kind",
				      json_object_get(v, "fault_kind"), "count", 0, "examples");
			json_object_set_new(groups, k, g);
		}
		json_object_set_new(
			g, "count",
			json_integer(json_integer_value(json_object_get(g, "count")) + 1));
		if (json_array_size(json_object_get(g, "examples")) < REPORT_FAIL_EXAMPLES) {
			json_t *res = store_result_get(st, id, report_str(v, "id"));

			json_array_append_new(json_object_get(g, "examples"),
					      json_pack("{s:O?, s:o}", "id",
							json_object_get(v, "id"), "message",
							fault_message(res)));
			json_decref(res);
		}
		free(k);
	}
	json_object_foreach (groups, key, g)
		json_array_append(out, g);
	json_decref(groups);
	return out;
}

static int by_speedup_desc(const void *a, const void *b)
{
	double x = report_num(*(json_t *const *)a, "speedup_ref");
	double y = report_num(*(json_t *const *)b, "speedup_ref");

	return (x < y) - (x > y);
}

/* The winner first, then the fastest other variants that passed. */
static json_t *top_ids(json_t *vars, json_t *winner)
{
	json_t **ok = xcalloc(json_array_size(vars) + 1, sizeof(*ok)), *out = json_array(), *v;
	const char *wid = report_str(winner, "variant");
	size_t i, n = 0;

	json_array_foreach (vars, i, v)
		if (!strcmp(report_str(v, "status"), "ok") && strcmp(report_str(v, "id"), wid) &&
		    isfinite(report_num(v, "speedup_ref")))
			ok[n++] = v;
	qsort(ok, n, sizeof(*ok), by_speedup_desc);
	if (*wid)
		json_array_append_new(out, json_string(wid));
	for (i = 0; i < n && json_array_size(out) < REPORT_TOP; i++)
		json_array_append(out, json_object_get(ok[i], "id"));
	free(ok);
	return out;
}

/* Links to the files evalpod kept for variant v (trace, IR), relative to the session folder. */
static json_t *artifacts(json_t *res, json_t *v, const char *dir)
{
	json_t *out = json_array(), *file;
	const char *name;

	json_object_foreach (json_object_get(res, "artifacts"), name, file) {
		char *href;
		int present = 1;

		if (!json_is_string(file) || strstr(json_string_value(file), ".."))
			continue;
		href = xasprintf("rounds/r%03d/results/%s/%s",
				 (int)json_integer_value(json_object_get(v, "round")),
				 report_str(v, "id"), json_string_value(file));
		if (dir) {
			char *path = xasprintf("%s/%s", dir, href);

			present = !access(path, R_OK);
			free(path);
		}
		json_array_append_new(out, json_pack("{s:s, s:s, s:b}", "name", name, "href", href,
						     "present", present));
		free(href);
	}
	return out;
}

/* Figures, timing spread, build and diff of each top variant. */
static json_t *top(struct store *st, const char *id, json_t *ids, const char *dir)
{
	json_t *out = json_array(), *tmpl = store_variant_get(st, id, "r00-start"), *vid;
	size_t i;

	json_array_foreach (ids, i, vid) {
		json_t *v = store_variant_get(st, id, json_string_value(vid));
		json_t *res = store_result_get(st, id, json_string_value(vid)), *perf;
		const char *src = report_str(v, "source"), *base = report_str(tmpl, "source");

		if (!v)
			continue;
		if (tmpl && strcmp(src, base)) {
			struct sbuf d = SBUF_INIT;
			json_t *text;

			diff_unified("template", base, report_str(v, "id"), src, &d);
			text = json_stringn(d.buf ? d.buf : "", d.len);
			json_object_set_new(v, "diff",
					    text ? text : json_string("(diff not valid UTF-8)"));
			sbuf_release(&d);
		}
		variant_trim(v);
		perf = json_object_get(res, "performance");
		json_object_set(v, "stats", json_object_get(perf, "stats"));
		json_object_set(v, "shape", json_object_get(perf, "shape"));
		json_object_set_new(v, "artifacts", artifacts(res, v, dir));
		json_array_append_new(out, v);
		json_decref(res);
	}
	json_decref(tmpl);
	return out;
}

/* Device, roofline ceilings and the reference, from one result that passed. */
static void hardware(struct store *st, const char *id, json_t *model, json_t *ids)
{
	json_t *res = ids && json_array_size(ids)
			      ? store_result_get(st, id, json_string_value(json_array_get(ids, 0)))
			      : NULL;
	json_t *roof = json_object_get(res, "roofline"),
	       *perf = json_object_get(res, "performance");
	double ref_ms = report_num(perf, "reference_median_ms"), flops = report_num(roof, "flops");

	json_object_set(model, "device", res ? json_object_get(res, "device") : json_null());
	if (json_is_object(roof))
		json_object_set_new(model, "roofline",
				    json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?, s:O?}", "peak_gflops",
					      json_object_get(roof, "peak_gflops"), "peak_gbs",
					      json_object_get(roof, "peak_gbs"), "ridge_point",
					      json_object_get(roof, "ridge_point"), "flops",
					      json_object_get(roof, "flops"), "bytes",
					      json_object_get(roof, "bytes"),
					      "arithmetic_intensity",
					      json_object_get(roof, "arithmetic_intensity")));
	else
		json_object_set_new(model, "roofline", json_null());
	if (isfinite(ref_ms) && ref_ms > 0)
		json_object_set_new(model, "reference",
				    json_pack("{s:f, s:o}", "median_ms", ref_ms, "gflops",
					      isfinite(flops) ? json_real(flops / (ref_ms * 1e6))
							      : json_null()));
	else
		json_object_set_new(model, "reference", json_null());
	json_decref(res);
}

json_t *report_model(struct store *st, const char *id, const char *dir)
{
	json_t *row = store_session_get(st, id), *model, *vars, *all, *v, *w, *ids, *llm;
	json_t *r0;
	size_t i;

	if (!row)
		return NULL;
	all = store_variants_brief(st, id, -1);
	if (!all) {
		json_decref(row);
		return NULL;
	}
	json_array_foreach (all, i, v) {
		variant_trim(v);
		if (dir)
			variant_files(v, dir);
	}
	vars = all;
	w = session_winner(st, id);
	r0 = store_round_get(st, id, 0);
	model = json_pack("{s:s, s:i, s:{s:s, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:s, s:i}}",
			  "schema", "kctl.report", "version", 1, "session", "id", id, "state",
			  json_object_get(row, "state"), "reason", json_object_get(row, "reason"),
			  "spec", json_object_get(row, "spec_path"), "created",
			  json_object_get(row, "created"), "updated",
			  json_object_get(row, "updated"), "output_dir",
			  json_object_get(row, "output_dir"), "kind",
			  !strcmp(report_str(r0, "mode"), "eval") ? "eval" : "search",
			  "evaluations", store_result_count(st, id));
	json_object_set_new(model, "winner", w ? w : json_null());
	ids = top_ids(vars, w);
	hardware(st, id, model, ids);
	json_object_set_new(model, "rounds", rounds(st, id, vars));
	json_object_set_new(model, "top", top(st, id, ids, dir));
	json_object_set_new(model, "failures", failures(st, id, vars));
	/* several timed shapes: each bucket's best (absent for one bucket) */
	if ((v = bucket_bests(st, id, all)))
		json_object_set_new(model, "buckets", v);
	json_object_set_new(model, "lineages", or_null(store_lineages(st, id)));
	json_object_set_new(model, "learnings", or_null(store_learnings(st, id)));
	json_object_set_new(model, "settings", or_null(store_settings(st, id)));
	llm = store_llm_totals(st, id);
	if (llm && !json_integer_value(json_object_get(llm, "calls"))) {
		json_decref(llm);
		llm = NULL;
	}
	json_object_set_new(model, "llm", llm ? llm : json_null());
	json_object_set_new(model, "variants", vars);
	json_decref(ids);
	json_decref(r0);
	json_decref(row);
	return model;
}
