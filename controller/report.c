/*
 * report.c - the files a session leaves for people (and for the LLM
 * proposer): learnings.md, best.cl and report.md.  All are rewritten from
 * the store, so they are the same after a resume.
 */
#include "session.h"
#include "report.h"
#include "round.h"
#include "winner.h"
#include "bucket.h"
#include "err.h"
#include "fileio.h"
#include "jsonx.h"
#include "sbuf.h"
#include "xalloc.h"

#include <math.h>
#include <stdarg.h>
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
		  "Kernel `%s`. Failure patterns are numbered [Fnnn], successes [Snnn], the "
		  "model's reflections [Mnnn]; numbers never change.\n\n## Failure patterns\n",
		  s->spec.name);
	for (i = 0; failure_groups[i]; i++)
		learnings_group(ls, failure_groups[i], &b);
	{
		json_t *w = session_winner(s->st, s->id);
		char noise[64];

		sbuf_adds(&b, "\n## Winner\n\n");
		winner_noise(w, noise, sizeof(noise));
		if (w)
			sbuf_addf(&b, "%s, %.2fx vs reference (%s, round %lld): %s.\n",
				  json_string_value(json_object_get(w, "variant")),
				  json_number_value(json_object_get(w, "speedup_vs_reference")),
				  noise, (long long)json_integer_value(json_object_get(w, "round")),
				  json_string_value(json_object_get(w, "verdict"))
					  ? json_string_value(json_object_get(w, "verdict"))
					  : "not confirmed");
		else
			sbuf_adds(&b, "None yet: no variant has passed its checks.\n");
		json_decref(w);
	}
	sbuf_adds(&b, "\n## Successes\n\nOnly improvements measured side by side: a 95% "
		      "interval above 1.15 in one evalpod process, the confirmation's passes "
		      "agreeing, or, between rounds, intervals against one program timed in "
		      "both that stay apart by more than 1.15 x 1.15.\n\n");
	json_array_foreach (ls, i, l)
		if (!strcmp(json_string_value(json_object_get(l, "kind")), "S"))
			sbuf_addf(&b, "- [S%03lld] %s\n",
				  (long long)json_integer_value(json_object_get(l, "number")),
				  json_string_value(json_object_get(l, "text")));
	{
		size_t nm = 0;

		json_array_foreach (ls, i, l)
			nm += !strcmp(json_string_value(json_object_get(l, "kind")), "M");
		if (nm)
			sbuf_adds(&b, "\n## The model's reflections\n\nWhat the model drew from "
				      "each round, kept only when every variant it cites is one of "
				      "the session's.\n\n");
		json_array_foreach (ls, i, l)
			if (!strcmp(json_string_value(json_object_get(l, "kind")), "M"))
				sbuf_addf(
					&b, "- [M%03lld] %s (round %lld)\n",
					(long long)json_integer_value(json_object_get(l, "number")),
					json_string_value(json_object_get(l, "text")),
					(long long)json_integer_value(json_object_get(l, "round")));
	}
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

static const char *text(json_t *o, const char *key, const char *dflt)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v ? v : dflt;
}

/* One line of a C comment: "*" "/" inside the text cannot end it early. */
static void comment_line(struct sbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void comment_line(struct sbuf *b, const char *fmt, ...)
{
	struct sbuf t = SBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sbuf_addv(&t, fmt, ap);
	va_end(ap);
	sbuf_adds(b, " * ");
	for (size_t i = 0; i < t.len; i++) {
		sbuf_add(b, &t.buf[i], 1);
		if (t.buf[i] == '*' && t.buf[i + 1] == '/')
			sbuf_adds(b, " ");
		if (t.buf[i] == '\n' && i + 1 < t.len)
			sbuf_adds(b, " * ");
	}
	sbuf_adds(b, "\n");
	sbuf_release(&t);
}

/* "TM=16 VN=16" */
static void params_text(json_t *params, struct sbuf *b)
{
	const char *key;
	json_t *val;

	json_object_foreach (params, key, val)
		sbuf_addf(b, "%s%s=%lld", b->len ? " " : "", key,
			  (long long)json_integer_value(val));
}

/* "global [65536] local [64]" for each step of a resolved plan */
static void launch_text(json_t *steps, struct sbuf *b)
{
	size_t i, j;
	json_t *st, *x;

	json_array_foreach (steps, i, st) {
		int empty = 0;

		json_array_foreach (json_object_get(st, "global"), j, x)
			empty |= json_integer_value(x) == 0;
		if (empty) { /* evalpod skips it (docs/spec.md, launch) */
			sbuf_addf(b, "%s%s not run (a global size of 0)", i ? "; " : "",
				  text(st, "kernel", "?"));
			continue;
		}
		sbuf_addf(b, "%s%s global [", i ? "; " : "", text(st, "kernel", "?"));
		json_array_foreach (json_object_get(st, "global"), j, x)
			sbuf_addf(b, "%s%lld", j ? ", " : "", (long long)json_integer_value(x));
		if (json_is_array(json_object_get(st, "local"))) {
			sbuf_adds(b, "] local [");
			json_array_foreach (json_object_get(st, "local"), j, x)
				sbuf_addf(b, "%s%lld", j ? ", " : "",
					  (long long)json_integer_value(x));
			sbuf_adds(b, "]");
		} else {
			sbuf_adds(b, "] local: the driver's choice");
		}
	}
}

/* best.cl: the winner's source, ready to build, under a comment with its figures. */
static int write_best(struct session *s, json_t *w, char *msg, size_t n)
{
	const char *id = text(w, "variant", "?");
	json_t *v = store_variant_get(s->st, s->id, id), *params = json_object_get(w, "params");
	json_t *launch = json_object_get(w, "launch"), *steps;
	struct sbuf b = SBUF_INIT;
	char *path = xasprintf("%s/best.cl", s->dir), noise[64];
	int applied = s->spec.render == RENDER_OPTIONS && json_is_object(params) &&
		      json_object_size(params);
	const char *shape;
	long long links = json_integer_value(json_object_get(w, "speedup_vs_reference_links"));
	int rc;

	winner_noise(w, noise, sizeof(noise));
	sbuf_adds(&b, "/*\n");
	comment_line(&b, "Best kernel of kctl session %s: %s", s->id, id);
	comment_line(&b, "%s", text(w, "verdict", "not confirmed"));
	comment_line(&b, "device: %s", text(w, "device", "?"));
	comment_line(&b, "shape %s: median %.4f ms over %lld samples (%s), measured in round %lld",
		     text(w, "shape", "?"), fig(w, "median_ms", NULL),
		     (long long)json_integer_value(json_object_get(w, "samples")), noise,
		     (long long)json_integer_value(json_object_get(w, "round")));
	if (links > 0)
		comment_line(&b,
			     "speedup %.2fx vs the reference (a product of %lld ratios, each "
			     "measured side by side: the incumbent carried the reference's speed)",
			     fig(w, "speedup_vs_reference", NULL), links + 1);
	else
		comment_line(&b, "speedup %.2fx vs the reference (measured side by side)",
			     fig(w, "speedup_vs_reference", NULL));
	comment_line(&b, "%.2f GFLOP/s, %.2f GB/s; bottleneck: %s", fig(w, "gflops", NULL),
		     fig(w, "gbps", NULL), text(w, "bottleneck", "-"));
	if (json_is_object(params) && json_object_size(params)) {
		struct sbuf p = SBUF_INIT;

		params_text(params, &p);
		comment_line(&b, "parameters: %s%s", p.buf,
			     applied ? " (applied below as #defines; the search passed them as "
				       "-D options)"
				     : "");
		sbuf_release(&p);
	}
	comment_line(&b, "build options: %s",
		     *text(w, "best_cl_build_options", "") ? text(w, "best_cl_build_options", "")
							   : "(none)");
	if (json_is_object(launch)) {
		comment_line(&b, "launch at each shape:");
		json_object_foreach (launch, shape, steps) {
			struct sbuf l = SBUF_INIT;

			launch_text(steps, &l);
			comment_line(&b, "  %s: %s", shape, l.buf);
			sbuf_release(&l);
		}
	}
	sbuf_adds(&b, " */\n");
	if (applied) {
		const char *key;
		json_t *val;

		json_object_foreach (params, key, val)
			sbuf_addf(&b, "#define %s %lld\n", key, (long long)json_integer_value(val));
	}
	sbuf_adds(&b, text(v, "source", ""));
	rc = file_write_atomic(path, b.buf, b.len, msg, n);
	sbuf_release(&b);
	free(path);
	json_decref(v);
	return rc;
}

static int by_speedup(const void *a, const void *b)
{
	double x = fig(*(json_t *const *)a, "speedup_ref", NULL);
	double y = fig(*(json_t *const *)b, "speedup_ref", NULL);

	return (x < y) - (x > y);
}

static void cell_noise(struct sbuf *b, json_t *o)
{
	double cv = fig(o, "robust_cv", NULL);

	if (isfinite(cv))
		sbuf_addf(b, "%.1f%% %s", cv * 100, text(o, "quality", ""));
	else
		sbuf_adds(b, "-");
}

/* The winner's speedup over id as the confirmation measured it, into b; 0 if none. */
static int cell_vs_winner(json_t *w, const char *id, struct sbuf *b)
{
	size_t i;
	json_t *c;

	json_array_foreach (json_object_get(w, "candidates"), i, c) {
		json_t *ci = json_object_get(c, "ci");

		if (strcmp(text(c, "variant", ""), id))
			continue;
		sbuf_addf(b, "%.3fx", fig(c, "winner_speedup", NULL));
		if (json_is_array(ci))
			sbuf_addf(b, " [%.3f, %.3f]", json_number_value(json_array_get(ci, 0)),
				  json_number_value(json_array_get(ci, 1)));
		sbuf_addf(b, " %s", text(c, "verdict", ""));
		return 1;
	}
	return 0;
}

static void best_row(struct sbuf *b, json_t *v, const char *vs_ref_note, json_t *w)
{
	struct sbuf noise = SBUF_INIT, vs = SBUF_INIT;
	const char *id = text(v, "id", text(v, "variant", "?"));

	cell_noise(&noise, v);
	if (w && !strcmp(id, text(w, "variant", "")))
		sbuf_adds(&vs, "(the winner)");
	else if (!w || !cell_vs_winner(w, id, &vs))
		sbuf_adds(&vs, "not compared");
	sbuf_addf(b, "| %s | %.2fx%s | %.2f | %s | %s | %s | `%s` | %s |\n", id,
		  fig(v, json_object_get(v, "speedup_ref") ? "speedup_ref" : "speedup_vs_reference",
		      NULL),
		  vs_ref_note, fig(v, "gflops", NULL), noise.buf, vs.buf,
		  text(v, "bottleneck", "-"), text(v, "options", text(v, "build_options", "")),
		  text(v, "rationale", ""));
	sbuf_release(&noise);
	sbuf_release(&vs);
}

/* The winner first, then the fastest others that passed, by their own rounds' figures. */
static void report_best(struct session *s, json_t *w, struct sbuf *b)
{
	json_t *all = store_variants_brief(s->st, s->id, -1), *v;
	json_t **ok = xcalloc(json_array_size(all) + 1, sizeof(*ok));
	const char *wid = text(w, "variant", "");
	size_t i, n = 0, shown = 0;

	json_array_foreach (all, i, v) {
		const char *st = json_string_value(json_object_get(v, "status"));

		if (st && !strcmp(st, "ok") && strcmp(text(v, "id", ""), wid))
			ok[n++] = v;
	}
	qsort(ok, n, sizeof(*ok), by_speedup);
	sbuf_adds(b, "\n## Best variants\n\nThe winner first, with its figures from round ");
	sbuf_addf(b,
		  "%lld; the others by the figures of their own rounds, which were measured "
		  "apart and differ by their noise. `winner vs it` is the winner's speedup over "
		  "the variant timed side by side in the confirmation, with its 95%% interval.\n\n",
		  (long long)json_integer_value(json_object_get(w, "round")));
	sbuf_adds(b, "| variant | vs reference | GFLOP/s | noise (robust CV) | winner vs it | "
		     "bottleneck | options | rationale |\n|---|---|---|---|---|---|---|---|\n");
	if (w) {
		json_t *wv = store_variant_get(s->st, s->id, wid), *row = json_deep_copy(w);

		json_object_set(row, "id", json_object_get(w, "variant"));
		json_object_set(row, "options", json_object_get(wv, "options"));
		json_object_set(row, "rationale", json_object_get(wv, "rationale"));
		best_row(b, row, "", w);
		shown++;
		json_decref(row);
		json_decref(wv);
	}
	for (i = 0; i < n && shown < 5; i++, shown++)
		best_row(b, ok[i], "", w);
	if (!shown)
		sbuf_adds(b, "| (no variant passed its checks) | | | | | | | |\n");
	free(ok);
	json_decref(all);
}

static void report_winner(json_t *w, struct sbuf *b)
{
	char noise[64];
	struct sbuf p = SBUF_INIT;

	sbuf_adds(b, "\n## Winner\n\n");
	if (!w) {
		sbuf_adds(b, "No variant passed its checks: see learnings.md.\n");
		return;
	}
	winner_noise(w, noise, sizeof(noise));
	sbuf_addf(b,
		  "**%s**: %.2fx vs the reference, %.2f GFLOP/s, %.2f GB/s (%s), %s, "
		  "measured in round %lld.\n\n",
		  text(w, "variant", "?"), fig(w, "speedup_vs_reference", NULL),
		  fig(w, "gflops", NULL), fig(w, "gbps", NULL), text(w, "bottleneck", "-"), noise,
		  (long long)json_integer_value(json_object_get(w, "round")));
	if (json_is_false(json_object_get(w, "settled")))
		sbuf_adds(b, "**The noise was too large to separate the top candidates.** ");
	sbuf_addf(b, "%s.\n\n", text(w, "verdict", "not confirmed"));
	params_text(json_object_get(w, "params"), &p);
	if (*text(w, "best_cl_build_options", ""))
		sbuf_addf(b, "`best.cl` builds with `%s`", text(w, "best_cl_build_options", ""));
	else
		sbuf_adds(b, "`best.cl` builds with no build options");
	sbuf_addf(b, "%s%s.\n", p.len ? "; parameters " : "", p.len ? p.buf : "");
	sbuf_release(&p);
}

/*
 * A session with several shape buckets: the objective the winner was
 * chosen on, and the best variant of each bucket by its recorded figures.
 */
static void report_buckets(struct session *s, json_t *w, struct sbuf *b)
{
	json_t *bests = bucket_bests(s->st, s->id, NULL), *e, *res;
	double obj;
	size_t i;

	if (!bests)
		return;
	res = w ? store_result_get(s->st, s->id, text(w, "variant", "")) : NULL;
	obj = bucket_objective(&s->spec, res, "reference");
	sbuf_adds(b, "\n## Best per shape bucket\n\n");
	if (isfinite(obj))
		sbuf_addf(b,
			  "The winner was chosen on the geometric mean of its speedups over the "
			  "reference at every bucket: %.2fx. ",
			  obj);
	sbuf_adds(b, "Each bucket's best is the variant that passed with the highest speedup over "
		     "the reference at that bucket, by the figures of its own round. Only the "
		     "overall winner goes through the confirmation; each bucket's best carries "
		     "its recorded noise.\n\n| bucket | variant | round | median ms | vs reference "
		     "| GFLOP/s | noise (robust CV) |\n|---|---|---|---|---|---|---|\n");
	json_array_foreach (bests, i, e)
		sbuf_addf(b, "| %s%s | %s | %lld | %.4f | %.2fx | %.2f | %.1f%% (%s) |\n",
			  text(e, "bucket", "?"),
			  json_is_true(json_object_get(e, "primary")) ? " (primary)" : "",
			  text(e, "variant", "?"),
			  (long long)json_integer_value(json_object_get(e, "round")),
			  fig(e, "median_ms", NULL), fig(e, "speedup_vs_reference", NULL),
			  fig(e, "gflops", NULL), fig(e, "robust_cv", NULL) * 100,
			  text(e, "quality", "-"));
	json_decref(res);
	json_decref(bests);
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
		vars = round_programs(s, r);
		json_array_foreach (vars, i, v) {
			json_t *res = json_is_object(json_object_get(row, "confirm"))
					      ? session_round_result(s, r, text(v, "id", ""))
					      : json_incref(v);
			const char *st = json_string_value(json_object_get(res, "status"));

			ok += st && !strcmp(st, "ok");
			json_decref(res);
		}
		sbuf_addf(b, "| %d | %s", r, text(row, "mode", "-"));
		/* a model session's rounds say how their slots were shared, and why */
		if (json_is_object(json_object_get(row, "plan"))) {
			json_t *plan = json_object_get(row, "plan");
			json_t *got = json_object_get(plan, "proposed");

			sbuf_addf(b, " (model %lld, tuner %lld, sweep %lld: %s)",
				  (long long)json_integer_value(json_object_get(got, "model")),
				  (long long)json_integer_value(json_object_get(got, "tune")),
				  (long long)json_integer_value(json_object_get(got, "sweep")),
				  text(plan, "why", ""));
		}
		sbuf_addf(b, " | %zu | %zu | %s | %s |\n", json_array_size(vars), ok,
			  text(row, "decision", "-"), text(row, "reason", ""));
		json_decref(vars);
		json_decref(row);
	}
}

/* Whether s is a kctl eval session: its rounds (one per --passes run) are of its own mode. */
static int is_eval(struct session *s)
{
	json_t *row = store_round_get(s->st, s->id, 0);
	const char *mode = json_string_value(json_object_get(row, "mode"));
	int yes = mode && !strcmp(mode, SESSION_EVAL_MODE);

	json_decref(row);
	return yes;
}

void report_md(struct session *s, struct sbuf *b)
{
	json_t *w = session_winner(s->st, s->id), *st = session_status_json(s->st, s->id);
	char *js = jx_dump(st);

	/* the path the session recorded (absolute), as kctl status shows it */
	sbuf_addf(b, "# kctl session %s\n\nSpec: `%s`\n", s->id,
		  json_string_value(json_object_get(st, "spec"))
			  ? json_string_value(json_object_get(st, "spec"))
			  : s->spec.path);
	if (is_eval(s))
		sbuf_addf(b,
			  "\n## Evaluation\n\nA `kctl eval` of the files in the table below, "
			  "the baseline first: %s. Its summary is summary.md in the folder "
			  "above this one.\n",
			  json_string_value(json_object_get(st, "reason"))
				  ? json_string_value(json_object_get(st, "reason"))
				  : "not finished");
	else
		report_winner(w, b);
	report_buckets(s, w, b);
	report_best(s, w, b);
	report_rounds(s, b);
	if (json_integer_value(json_object_get(st, "cached")) > 0)
		sbuf_addf(b,
			  "\n%lld of the %lld evaluations came from the result cache (`kctl show` "
			  "marks them `(cached)`).\n",
			  (long long)json_integer_value(json_object_get(st, "cached")),
			  (long long)json_integer_value(json_object_get(st, "evaluations")));
	sbuf_addf(b, "\n## Status\n\n```json\n%s```\n", js);
	free(js);
	json_decref(st);
	json_decref(w);
}

int report_write(struct session *s, char *msg, size_t n)
{
	json_t *w = session_winner(s->st, s->id);
	struct sbuf b = SBUF_INIT;
	char *path = xasprintf("%s/report.md", s->dir);
	int rc = w ? write_best(s, w, msg, n) : 0;

	report_md(s, &b);
	if (!rc)
		rc = file_write_atomic(path, b.buf, b.len, msg, n);
	if (!rc)
		rc = report_html_write(s->st, s->id, s->dir, msg, n);
	sbuf_release(&b);
	free(path);
	json_decref(w);
	return rc;
}
