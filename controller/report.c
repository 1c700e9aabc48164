/*
 * report.c - the files a session leaves for people (and for the LLM
 * proposer): learnings.md, best.cl and report.md.  All are rewritten from
 * the store, so they are the same after a resume.
 */
#include "session.h"
#include "err.h"
#include "fileio.h"
#include "jsonx.h"
#include "sbuf.h"
#include "xalloc.h"

#include <math.h>
#include <string.h>

static const char *const failure_groups[] = {
	"compile_error", "incorrect", "runtime_error", "crash", "timeout", "invalid", NULL,
};

static void learnings_group(json_t *ls, const char *group, struct sbuf *b)
{
	size_t i;
	json_t *l;
	int header = 0;

	json_array_foreach (ls, i, l) {
		const char *kind = json_string_value(json_object_get(l, "kind"));
		const char *g = json_string_value(json_object_get(l, "group"));

		if (!kind || strcmp(kind, "F") || !g || strcmp(g, group))
			continue;
		if (!header++)
			sbuf_addf(b, "\n### %s\n\n", group);
		sbuf_addf(b, "- [F%03lld] %s (seen %lld time%s)\n",
			  (long long)json_integer_value(json_object_get(l, "number")),
			  json_string_value(json_object_get(l, "text")),
			  (long long)json_integer_value(json_object_get(l, "count")),
			  json_integer_value(json_object_get(l, "count")) == 1 ? "" : "s");
	}
}

int learnings_write(struct session *s, char *msg, size_t n)
{
	json_t *ls = store_learnings(s->st, s->id), *l;
	struct sbuf b = SBUF_INIT;
	char *path = xasprintf("%s/learnings.md", s->dir);
	size_t i;
	int rc;

	sbuf_addf(&b, "# Learnings of session %s\n\n", s->id);
	sbuf_addf(&b,
		  "Kernel `%s`. Failure patterns are numbered [Fnnn], successes [Snnn]; "
		  "numbers never change.\n\n## Failure patterns\n",
		  s->spec.name);
	for (i = 0; failure_groups[i]; i++)
		learnings_group(ls, failure_groups[i], &b);
	sbuf_adds(&b, "\n## Successes\n\n");
	json_array_foreach (ls, i, l)
		if (!strcmp(json_string_value(json_object_get(l, "kind")), "S"))
			sbuf_addf(&b, "- [S%03lld] %s\n",
				  (long long)json_integer_value(json_object_get(l, "number")),
				  json_string_value(json_object_get(l, "text")));
	rc = file_write_atomic(path, b.buf, b.len, msg, n);
	sbuf_release(&b);
	free(path);
	json_decref(ls);
	return rc;
}

/* res.a.b (or res.a when b is NULL) as a number; NAN when absent. */
static double fig(json_t *res, const char *a, const char *b)
{
	json_t *v = b ? json_object_get(json_object_get(res, a), b) : json_object_get(res, a);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* best.cl: the incumbent's source under a comment with its measured figures. */
static int write_best(struct session *s, json_t *inc, char *msg, size_t n)
{
	const char *id = json_string_value(json_object_get(inc, "id"));
	json_t *res = store_result_get(s->st, s->id, id);
	json_t *perf = json_object_get(res, "performance");
	struct sbuf b = SBUF_INIT;
	char *path = xasprintf("%s/best.cl", s->dir);
	int rc;

	sbuf_addf(&b, "/*\n * Best variant of kctl session %s: %s\n", s->id, id);
	sbuf_addf(&b, " * build options: %s\n", json_string_value(json_object_get(inc, "options")));
	sbuf_addf(&b, " * device: %s\n",
		  json_string_value(json_object_get(json_object_get(res, "device"), "name")));
	sbuf_addf(
		&b, " * shape %s: median %.4f ms over %lld samples (robust CV %.1f%%)\n",
		json_string_value(json_object_get(perf, "shape")),
		fig(res, "performance", "median_ms"),
		(long long)json_integer_value(json_object_get(json_object_get(perf, "stats"), "n")),
		fig(res, "performance", "robust_cv") * 100);
	sbuf_addf(&b, " * speedup %.2fx vs the reference (measured side by side)\n",
		  fig(perf, "speedup_vs_reference", "ratio_of_medians"));
	sbuf_addf(
		&b, " * %.2f GFLOP/s, %.2f GB/s; bottleneck: %s\n", fig(res, "roofline", "gflops"),
		fig(res, "roofline", "gbs"),
		json_string_value(json_object_get(json_object_get(res, "roofline"), "bottleneck")));
	sbuf_adds(&b, " */\n");
	sbuf_adds(&b, json_string_value(json_object_get(inc, "source")));
	rc = file_write_atomic(path, b.buf, b.len, msg, n);
	sbuf_release(&b);
	free(path);
	json_decref(res);
	return rc;
}

static int by_speedup(const void *a, const void *b)
{
	double x = fig(*(json_t *const *)a, "speedup_ref", NULL);
	double y = fig(*(json_t *const *)b, "speedup_ref", NULL);

	return (x < y) - (x > y);
}

/* The five fastest variants that passed, against the reference. */
static void report_best(struct session *s, struct sbuf *b)
{
	json_t *all = store_variants_brief(s->st, s->id, -1), *v;
	json_t **ok = xcalloc(json_array_size(all) + 1, sizeof(*ok));
	size_t i, n = 0;

	json_array_foreach (all, i, v) {
		const char *st = json_string_value(json_object_get(v, "status"));

		if (st && !strcmp(st, "ok"))
			ok[n++] = v;
	}
	qsort(ok, n, sizeof(*ok), by_speedup);
	sbuf_adds(b, "\n## Best variants\n\n| variant | vs reference | GFLOP/s | bottleneck | "
		     "options | rationale |\n|---|---|---|---|---|---|\n");
	for (i = 0; i < n && i < 5; i++)
		sbuf_addf(b, "| %s | %.2fx | %.2f | %s | `%s` | %s |\n",
			  json_string_value(json_object_get(ok[i], "id")),
			  fig(ok[i], "speedup_ref", NULL), fig(ok[i], "gflops", NULL),
			  json_string_value(json_object_get(ok[i], "bottleneck"))
				  ? json_string_value(json_object_get(ok[i], "bottleneck"))
				  : "-",
			  json_string_value(json_object_get(ok[i], "options")),
			  json_string_value(json_object_get(ok[i], "rationale"))
				  ? json_string_value(json_object_get(ok[i], "rationale"))
				  : "");
	if (!n)
		sbuf_adds(b, "| (no variant passed its checks) | | | | | |\n");
	free(ok);
	json_decref(all);
}

static void report_rounds(struct session *s, struct sbuf *b)
{
	int last = store_round_last(s->st, s->id);

	sbuf_adds(b, "\n## Rounds\n\n| round | mode | variants | ok | decision | reason |\n"
		     "|---|---|---|---|---|---|\n");
	for (int r = 0; r <= last; r++) {
		json_t *row = store_round_get(s->st, s->id, r), *vars, *v;
		size_t i, ok = 0;

		if (!row)
			continue;
		vars = store_variants_brief(s->st, s->id, r);
		json_array_foreach (vars, i, v) {
			const char *st = json_string_value(json_object_get(v, "status"));

			ok += st && !strcmp(st, "ok");
		}
		sbuf_addf(b, "| %d | %s | %zu | %zu | %s | %s |\n", r,
			  json_string_value(json_object_get(row, "mode")), json_array_size(vars),
			  ok,
			  json_string_value(json_object_get(row, "decision"))
				  ? json_string_value(json_object_get(row, "decision"))
				  : "-",
			  json_string_value(json_object_get(row, "reason"))
				  ? json_string_value(json_object_get(row, "reason"))
				  : "");
		json_decref(vars);
		json_decref(row);
	}
}

int report_write(struct session *s, char *msg, size_t n)
{
	json_t *inc = session_incumbent(s), *st = session_status_json(s->st, s->id);
	struct sbuf b = SBUF_INIT;
	char *path = xasprintf("%s/report.md", s->dir), *js = jx_dump(st);
	int rc = inc ? write_best(s, inc, msg, n) : 0;

	sbuf_addf(&b, "# kctl session %s\n\nSpec: `%s`\n\n```json\n%s```\n", s->id, s->spec.path,
		  js);
	report_best(s, &b);
	report_rounds(s, &b);
	if (!rc)
		rc = file_write_atomic(path, b.buf, b.len, msg, n);
	sbuf_release(&b);
	free(js);
	free(path);
	json_decref(st);
	json_decref(inc);
	return rc;
}
