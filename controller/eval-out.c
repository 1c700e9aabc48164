/*
 * eval-out.c - the forms of kctl eval's findings (eval-out.h): a table,
 * JSON, Markdown, GitHub workflow commands and step outputs.  Every string
 * that comes from a result (messages, build logs) or a command line (file
 * names) is escaped for the form it lands in.
 */
#include "eval-out.h"
#include "err.h"
#include "sbuf.h"
#include "xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *eval_verdict_name(enum eval_verdict v)
{
	switch (v) {
	case EVAL_PASS: return "pass";
	case EVAL_REGRESSION: return "regression";
	case EVAL_INCORRECT: return "incorrect";
	default: return "infra_error";
	}
}

int eval_exit_status(enum eval_verdict v)
{
	switch (v) {
	case EVAL_PASS: return EVAL_EXIT_PASS;
	case EVAL_REGRESSION: return EVAL_EXIT_REGRESSION;
	case EVAL_INCORRECT: return EVAL_EXIT_INCORRECT;
	default: return EVAL_EXIT_INFRA;
	}
}

/* --- reading a result ------------------------------------------------------ */

/* o.a.b as a number, NAN when absent or not a number. */
static double num2(json_t *o, const char *a, const char *b)
{
	json_t *v = json_object_get(json_object_get(o, a), b);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *str2(json_t *o, const char *a, const char *b)
{
	return json_string_value(json_object_get(json_object_get(o, a), b));
}

static double speedup_vs_reference(json_t *res)
{
	json_t *s = json_object_get(json_object_get(res, "performance"), "speedup_vs_reference");
	json_t *v = json_object_get(s, "paired_median");

	if (!json_is_number(v))
		v = json_object_get(s, "ratio_of_medians");
	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* The fault's message, "" when none. */
static const char *fault_message(json_t *res)
{
	const char *m = str2(res, "fault", "message");

	return m ? m : "";
}

/*
 * The fault's message as its reader knows the source, appended to b:
 * evalpod calls every source "program.cl", so its compile errors say
 * "program.cl:LINE:COL"; here they name file (as given) instead.
 */
static void add_fault(struct sbuf *b, json_t *res, const char *file)
{
	sbuf_add_renamed(b, fault_message(res), "program.cl", file);
}

/* What a kernel's verdict column says. */
static void kernel_verdict(struct sbuf *b, const struct eval_kernel *k)
{
	if (strcmp(k->status, "ok"))
		sbuf_adds(b, "failed");
	else if (k->same_as_base)
		sbuf_adds(b, "same as baseline");
	else if (k->regression)
		sbuf_addf(b, "regression (%+.1f%%, allowed -%.1f%%)", (k->speedup - 1) * 100,
			  k->allowed * 100);
	else if (!isnan(k->speedup))
		sbuf_adds(b, "ok");
	else
		sbuf_adds(b, "ok (baseline not timed)");
	if (k->across && !strcmp(k->status, "ok"))
		sbuf_addf(b, "; over the runs: %s",
			  strcmp(k->across, "equal") ? k->across : "equal within 1%");
}

static void speedup_text(struct sbuf *b, const struct eval_kernel *k)
{
	if (isnan(k->speedup))
		sbuf_adds(b, "-");
	else if (isnan(k->lo))
		sbuf_addf(b, "%.3fx", k->speedup);
	else
		sbuf_addf(b, "%.3fx [%.3f, %.3f]", k->speedup, k->lo, k->hi);
}

void eval_verdict_text(struct sbuf *b, const struct eval_report *r)
{
	size_t failed = 0, slower = 0;

	for (size_t i = 0; i < r->nk; i++) {
		failed += strcmp(r->k[i].status, "ok") != 0;
		slower += r->k[i].regression;
	}
	switch (r->verdict) {
	case EVAL_PASS:
		sbuf_addf(b,
			  "pass: every kernel is correct and none is slower than the baseline "
			  "by more than %.1f%% or the measured noise, whichever is larger",
			  r->threshold * 100);
		break;
	case EVAL_REGRESSION:
		sbuf_addf(b,
			  "regression: %zu of %zu kernels slower than the baseline beyond "
			  "the allowed slowdown",
			  slower, r->nk);
		break;
	case EVAL_INCORRECT:
		sbuf_addf(b, "incorrect: %zu of %zu kernels failed their checks", failed, r->nk);
		break;
	default:
		sbuf_adds(b, "infra_error: the evaluation itself failed (not the kernels); "
			     "run it again");
		break;
	}
}

/* --- the table -------------------------------------------------------------- */

/* Each run's speedup and its interval, after a space each, appended to b. */
static void runs_text(struct sbuf *b, const struct eval_pass *pass, int npass)
{
	for (int p = 0; p < npass; p++)
		sbuf_addf(b, isnan(pass[p].lo) ? " %.3fx" : " %.3fx [%.3f, %.3f]", pass[p].median,
			  pass[p].lo, pass[p].hi);
}

void eval_print_table(FILE *f, const struct eval_report *r)
{
	struct sbuf b = SBUF_INIT;
	size_t w = 6;

	for (size_t i = 0; i < r->nk; i++)
		if (strlen(r->k[i].file) > w)
			w = strlen(r->k[i].file);
	fprintf(f, "%-*s  %-14s %-26s %9s %10s  %-10s %s\n", (int)w, "kernel", "status",
		"vs baseline [95% CI]", "GFLOP/s", "vs ref", "bottleneck", "verdict");
	for (size_t i = 0; i < r->nk; i++) {
		const struct eval_kernel *k = &r->k[i];
		const char *bn = str2(k->res, "roofline", "bottleneck");
		char gf[32] = "-", vr[32] = "-";
		double g = num2(k->res, "roofline", "gflops"), sr = speedup_vs_reference(k->res);

		if (!isnan(g))
			snprintf(gf, sizeof(gf), "%.2f", g);
		if (!isnan(sr))
			snprintf(vr, sizeof(vr), "%.2fx", sr);
		sbuf_reset(&b);
		speedup_text(&b, k);
		fprintf(f, "%-*s  %-14s %-26s %9s %10s  %-10s ", (int)w, k->file, k->status, b.buf,
			gf, vr, bn ? bn : "-");
		sbuf_reset(&b);
		kernel_verdict(&b, k);
		fprintf(f, "%s\n", b.buf);
	}
	for (size_t i = 0; i < r->nk; i++) {
		if (!strcmp(r->k[i].status, "ok"))
			continue;
		sbuf_reset(&b);
		add_fault(&b, r->k[i].res, r->k[i].file);
		fprintf(f, "%s: %s: %s\n", r->k[i].file, r->k[i].status, b.buf);
	}
	if (r->base_res &&
	    strcmp(json_string_value(json_object_get(r->base_res, "status")), "ok")) {
		sbuf_reset(&b);
		add_fault(&b, r->base_res, r->baseline ? r->baseline : r->template_path);
		fprintf(f, "baseline (%s): %s: %s\n", r->baseline ? r->baseline : "the template",
			json_string_value(json_object_get(r->base_res, "status")), b.buf);
	}
	for (size_t i = 0; i < r->nk && r->npass > 1; i++) {
		const struct eval_kernel *k = &r->k[i];

		if (!k->across)
			continue;
		sbuf_reset(&b);
		runs_text(&b, k->pass, r->npass);
		fprintf(f, "%s by run:%s\n", k->file, b.buf);
	}
	for (size_t i = 0; i < r->npair; i++) {
		const struct eval_pair *q = &r->pair[i];

		sbuf_reset(&b);
		runs_text(&b, q->pass, r->npass);
		fprintf(f, "%s over %s by run:%s; over the runs: %s\n", r->k[q->b].file,
			r->k[q->a].file, b.buf,
			strcmp(q->across, "equal") ? q->across : "equal within 1%");
	}
	sbuf_reset(&b);
	eval_verdict_text(&b, r);
	fprintf(f, "verdict: %s\nresults: %s%s\n", b.buf, r->results,
		r->npass > 1 ? " (the first run's; the others in the rounds after it)" : "");
	sbuf_release(&b);
}

/* --- JSON --------------------------------------------------------------------- */

static json_t *num_or_null(double v)
{
	return isnan(v) || isinf(v) ? json_null() : json_real(v);
}

static json_t *program_json(const char *file, const char *id, json_t *res)
{
	json_t *o = json_object(), *fault = json_object_get(res, "fault");
	const char *st = json_string_value(json_object_get(res, "status"));

	json_object_set_new(o, "file", file ? json_string(file) : json_null());
	json_object_set_new(o, "id", json_string(id));
	json_object_set_new(o, "status", json_string(st ? st : "missing"));
	json_object_set_new(
		o, "fault",
		json_is_object(fault)
			? json_pack("{s:s?, s:s?}", "kind",
				    json_string_value(json_object_get(fault, "kind")), "message",
				    json_string_value(json_object_get(fault, "message")))
			: json_null());
	json_object_set_new(o, "median_ms", num_or_null(num2(res, "performance", "median_ms")));
	json_object_set_new(o, "gflops", num_or_null(num2(res, "roofline", "gflops")));
	json_object_set_new(o, "gbs", num_or_null(num2(res, "roofline", "gbs")));
	json_object_set_new(o, "fraction_of_peak_flops",
			    num_or_null(num2(res, "roofline", "fraction_of_peak_flops")));
	json_object_set_new(o, "bottleneck",
			    str2(res, "roofline", "bottleneck")
				    ? json_string(str2(res, "roofline", "bottleneck"))
				    : json_null());
	json_object_set_new(o, "speedup_vs_reference", num_or_null(speedup_vs_reference(res)));
	json_object_set_new(o, "robust_cv", num_or_null(num2(res, "performance", "robust_cv")));
	return o;
}

/* Each run's speedup: [{"median", "lo", "hi", "pairs"}]. */
static json_t *runs_json(const struct eval_pass *pass, int npass)
{
	json_t *by = json_array();

	for (int p = 0; p < npass; p++)
		json_array_append_new(
			by, json_pack("{s:o, s:o, s:o, s:I}", "median", num_or_null(pass[p].median),
				      "lo", num_or_null(pass[p].lo), "hi", num_or_null(pass[p].hi),
				      "pairs", (json_int_t)pass[p].pairs));
	return by;
}

json_t *eval_json(const struct eval_report *r)
{
	json_t *doc = json_object(), *ks = json_array();
	json_t *dev = json_object_get(r->base_res, "device");

	for (size_t i = 0; i < r->nk && !json_is_object(dev); i++)
		dev = json_object_get(r->k[i].res, "device");
	json_object_set_new(doc, "schema", json_string("kctl.eval"));
	json_object_set_new(doc, "version", json_integer(1));
	json_object_set_new(doc, "spec", json_string(r->spec));
	json_object_set_new(doc, "session", json_string(r->session));
	json_object_set_new(doc, "results", json_string(r->results));
	json_object_set_new(doc, "verdict", json_string(eval_verdict_name(r->verdict)));
	json_object_set_new(doc, "exit_status", json_integer(eval_exit_status(r->verdict)));
	json_object_set_new(doc, "threshold", json_real(r->threshold));
	json_object_set_new(doc, "passes", json_integer(r->npass > 1 ? r->npass : 1));
	json_object_set_new(doc, "device",
			    json_is_object(dev)
				    ? json_pack("{s:s?, s:s?}", "name",
						json_string_value(json_object_get(dev, "name")),
						"driver",
						json_string_value(json_object_get(dev, "driver")))
				    : json_null());
	json_object_set_new(doc, "baseline",
			    program_json(r->baseline ? r->baseline : r->template_path, "baseline",
					 r->base_res));
	for (size_t i = 0; i < r->nk; i++) {
		const struct eval_kernel *k = &r->k[i];
		json_t *o = program_json(k->file, k->id, k->res);

		json_object_set_new(
			o, "speedup_vs_baseline",
			isnan(k->speedup)
				? json_null()
				: json_pack("{s:o, s:o, s:o, s:I}", "median", json_real(k->speedup),
					    "lo", num_or_null(k->lo), "hi", num_or_null(k->hi),
					    "pairs", (json_int_t)k->pairs));
		json_object_set_new(o, "allowed_slowdown", num_or_null(k->allowed));
		json_object_set_new(o, "regression", json_boolean(k->regression));
		json_object_set_new(o, "same_as_baseline", json_boolean(k->same_as_base));
		if (k->across) {
			json_object_set_new(o, "speedup_by_pass", runs_json(k->pass, r->npass));
			json_object_set_new(o, "across_passes", json_string(k->across));
		}
		json_array_append_new(ks, o);
	}
	json_object_set_new(doc, "kernels", ks);
	if (r->npass > 1) {
		json_t *pairs = json_array();

		for (size_t i = 0; i < r->npair; i++) {
			const struct eval_pair *q = &r->pair[i];

			json_array_append_new(pairs, json_pack("{s:s, s:s, s:o, s:s}", "a",
							       r->k[q->a].file, "b",
							       r->k[q->b].file, "speedup_by_pass",
							       runs_json(q->pass, r->npass),
							       "across_passes", q->across));
		}
		json_object_set_new(doc, "pairs", pairs);
	}
	return doc;
}

/* --- Markdown ----------------------------------------------------------------- */

/* Whether s is made only of the characters in set, and not empty. */
static int only(const char *s, const char *set)
{
	return s && *s && strspn(s, set) == strlen(s);
}

/*
 * " (the run's artifacts: URL)" on GitHub Actions, where the run's page
 * lists them: $GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID,
 * each checked for what GitHub puts there, else nothing.
 */
static void run_link(struct sbuf *b)
{
	static const char word[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.";
	const char *server = getenv("GITHUB_SERVER_URL"), *repo = getenv("GITHUB_REPOSITORY");
	const char *run = getenv("GITHUB_RUN_ID"), *slash = repo ? strchr(repo, '/') : NULL;

	if (!server || strncmp(server, "https://", 8) || !only(server + 8, word) || !slash ||
	    strchr(slash + 1, '/') || !only(slash + 1, word) || (size_t)(slash - repo) < 1 ||
	    strspn(repo, word) != (size_t)(slash - repo) || !only(run, "0123456789"))
		return;
	sbuf_addf(b, " (the run's artifacts: %s/%s/actions/runs/%s)", server, repo, run);
}

void eval_markdown(struct sbuf *b, const struct eval_report *r)
{
	struct sbuf t = SBUF_INIT;
	json_t *dev = json_object_get(r->base_res, "device");
	int any_fault = 0;

	for (size_t i = 0; i < r->nk && !json_is_object(dev); i++)
		dev = json_object_get(r->k[i].res, "device");
	sbuf_addf(b, "### kctl eval: %s\n\n", eval_verdict_name(r->verdict));
	eval_verdict_text(&t, r);
	sbuf_add_md(b, t.buf, 1000);
	sbuf_adds(b, "\n\nSpec ");
	sbuf_add_md(b, r->spec, 300);
	sbuf_adds(b, ", baseline ");
	sbuf_add_md(b, r->baseline ? r->baseline : "the spec's template", 300);
	if (json_is_object(dev)) {
		sbuf_adds(b, ", device ");
		sbuf_add_md(b, json_string_value(json_object_get(dev, "name")), 200);
		sbuf_adds(b, " (");
		sbuf_add_md(b, json_string_value(json_object_get(dev, "driver")), 100);
		sbuf_adds(b, ")");
	}
	sbuf_adds(b, ", session ");
	sbuf_add_md(b, r->session, 200);
	if (r->npass > 1)
		sbuf_addf(b, ", %d evalpod runs (the speedups pool them)", r->npass);
	sbuf_adds(b,
		  ".\n\n| kernel | status | vs baseline [95% CI] | GFLOP/s | of peak | "
		  "vs reference | bottleneck | verdict |\n|---|---|---|---:|---:|---:|---|---|\n");
	for (size_t i = 0; i < r->nk; i++) {
		const struct eval_kernel *k = &r->k[i];
		double g = num2(k->res, "roofline", "gflops"), sr = speedup_vs_reference(k->res);
		double pk = num2(k->res, "roofline", "fraction_of_peak_flops");

		sbuf_adds(b, "| ");
		sbuf_add_md(b, k->file, 300);
		sbuf_adds(b, " | ");
		sbuf_add_md(b, k->status, 40);
		sbuf_adds(b, " | ");
		sbuf_reset(&t);
		speedup_text(&t, k);
		sbuf_add_md(b, t.buf, 100);
		sbuf_adds(b, isnan(g) ? " | - | " : "");
		if (!isnan(g))
			sbuf_addf(b, " | %.2f | ", g);
		sbuf_adds(b, isnan(pk) ? "- | " : "");
		if (!isnan(pk))
			sbuf_addf(b, "%.2f | ", pk);
		sbuf_adds(b, isnan(sr) ? "- | " : "");
		if (!isnan(sr))
			sbuf_addf(b, "%.2fx | ", sr);
		sbuf_add_md(b,
			    str2(k->res, "roofline", "bottleneck")
				    ? str2(k->res, "roofline", "bottleneck")
				    : "-",
			    40);
		sbuf_adds(b, " | ");
		sbuf_reset(&t);
		kernel_verdict(&t, k);
		sbuf_add_md(b, t.buf, 200);
		sbuf_adds(b, " |\n");
	}
	for (size_t i = 0; i < r->npair; i++) {
		const struct eval_pair *q = &r->pair[i];

		if (!i)
			sbuf_adds(b, "\n**Every two kernels** (B over A: the speed of B over A, "
				     "run by run, and what the runs say together)\n\n");
		sbuf_adds(b, "- ");
		sbuf_add_md(b, r->k[q->b].file, 300);
		sbuf_adds(b, " over ");
		sbuf_add_md(b, r->k[q->a].file, 300);
		sbuf_adds(b, ":");
		sbuf_reset(&t);
		runs_text(&t, q->pass, r->npass);
		sbuf_addf(&t, ": %s", strcmp(q->across, "equal") ? q->across : "equal within 1%");
		sbuf_add_md(b, t.buf, 400);
		sbuf_adds(b, "\n");
	}
	for (size_t i = 0; i < r->nk; i++) {
		if (!strcmp(r->k[i].status, "ok"))
			continue;
		if (!any_fault++)
			sbuf_adds(b, "\n**Failures**\n\n");
		sbuf_adds(b, "- ");
		sbuf_add_md(b, r->k[i].file, 300);
		sbuf_adds(b, ": ");
		sbuf_add_md(b, r->k[i].status, 40);
		sbuf_adds(b, ": ");
		sbuf_reset(&t);
		add_fault(&t, r->k[i].res, r->k[i].file);
		sbuf_add_md(b, t.buf, 2000);
		sbuf_adds(b, "\n");
	}
	if (r->base_res &&
	    strcmp(json_string_value(json_object_get(r->base_res, "status")), "ok")) {
		sbuf_adds(b, "\nThe baseline failed its own checks (");
		sbuf_reset(&t);
		add_fault(&t, r->base_res, r->baseline ? r->baseline : r->template_path);
		sbuf_add_md(b, t.buf, 2000);
		sbuf_adds(b, "): the kernels are not compared with it.\n");
	}
	sbuf_addf(b,
		  "\nA kernel regresses when its paired speedup over the baseline is below 1 by "
		  "more than %.1f%% or the half-width of its 95%% interval, whichever is larger. "
		  "Result documents, traces and IR: ",
		  r->threshold * 100);
	sbuf_add_md(b, r->results, 500);
	run_link(b);
	sbuf_adds(b, ".\n");
	sbuf_release(&t);
}

/* --- workflow commands -------------------------------------------------------------- */

void eval_gh_escape(struct sbuf *b, const char *s, int prop)
{
	for (; s && *s; s++) {
		if (*s == '%')
			sbuf_adds(b, "%25");
		else if (*s == '\r')
			sbuf_adds(b, "%0D");
		else if (*s == '\n')
			sbuf_adds(b, "%0A");
		else if (prop && *s == ':')
			sbuf_adds(b, "%3A");
		else if (prop && *s == ',')
			sbuf_adds(b, "%2C");
		else
			sbuf_addch(b, *s);
	}
}

static void command(FILE *f, const char *file, long line, long col, const char *title,
		    const char *message)
{
	struct sbuf b = SBUF_INIT;

	sbuf_adds(&b, "::error file=");
	eval_gh_escape(&b, file, 1);
	if (line > 0)
		sbuf_addf(&b, ",line=%ld", line);
	if (line > 0 && col > 0)
		sbuf_addf(&b, ",col=%ld", col);
	sbuf_adds(&b, ",title=");
	eval_gh_escape(&b, title, 1);
	sbuf_adds(&b, "::");
	eval_gh_escape(&b, message, 0);
	fprintf(f, "%s\n", b.buf);
	sbuf_release(&b);
}

/*
 * The errors of a build log, located in the program as the compiler names
 * it (evalpod calls the source "program.cl"): "program.cl:LINE:COL: error:
 * TEXT" as clang prints it, or "error: program.cl:LINE:COL: TEXT" as PoCL
 * passes it on.  One annotation each, at most EVAL_MAX_ANNOTATIONS;
 * warnings and notes are left out.  Returns how many.
 */
static int log_annotations(FILE *f, const char *file, const char *log)
{
	static const char name[] = "program.cl:";
	int count = 0;

	for (const char *p = log; p && *p && count < EVAL_MAX_ANNOTATIONS;) {
		const char *eol = strchr(p, '\n'), *at = strstr(p, name), *text = NULL;
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		char *end;
		long line = 0, col = 0;

		if (at && at < p + len && isdigit((unsigned char)at[sizeof(name) - 1])) {
			line = strtol(at + sizeof(name) - 1, &end, 10);
			if (*end == ':' && isdigit((unsigned char)end[1]))
				col = strtol(end + 1, &end, 10);
			if (!strncmp(end, ": error: ", 9))
				text = end + 9;
			else if (!strncmp(end, ": fatal error: ", 15))
				text = end + 15;
			else if (!strncmp(end, ": ", 2) && at - p >= 7 &&
				 !strncmp(at - 7, "error: ", 7))
				text = end + 2;
		}
		if (text && line > 0 && text < p + len) {
			char *msg = xstrndup(text, len - (size_t)(text - p));

			command(f, file, line, col, "kctl eval: compile error", msg);
			free(msg);
			count++;
		}
		p = eol ? eol + 1 : p + len;
	}
	return count;
}

/* "(line N)" or "line N" in a message: where the static screen found a construct. */
static long message_line(const char *m)
{
	for (const char *p = m; p && (p = strstr(p, "line ")); p += 5)
		if (isdigit((unsigned char)p[5]) && (p == m || !isalpha((unsigned char)p[-1])))
			return strtol(p + 5, NULL, 10);
	return 0;
}

void eval_annotations(FILE *f, const struct eval_report *r)
{
	for (size_t i = 0; i < r->nk; i++) {
		const struct eval_kernel *k = &r->k[i];
		const char *m = fault_message(k->res);
		char title[64];

		if (!strcmp(k->status, "compile_error") &&
		    log_annotations(f, k->file, str2(k->res, "compile", "log")) > 0)
			continue;
		if (strcmp(k->status, "ok")) {
			snprintf(title, sizeof(title), "kctl eval: %s", k->status);
			command(f, k->file,
				!strcmp(k->status, "compile_error") ? message_line(m) : 0, 0, title,
				*m ? m : k->status);
		} else if (k->regression) {
			char *text = xasprintf("slower than the baseline: %+.1f%% (95%% CI %+.1f%% "
					       "to %+.1f%%, %zu "
					       "paired samples), more than the %.1f%% allowed",
					       (k->speedup - 1) * 100, (k->lo - 1) * 100,
					       (k->hi - 1) * 100, k->pairs, k->allowed * 100);

			command(f, k->file, 0, 0, "kctl eval: regression", text);
			free(text);
		}
	}
}

/* --- $GITHUB_OUTPUT ------------------------------------------------------------ */

/* NAME<<DELIM, the value, DELIM: a delimiter the value does not hold. */
static void output_value(struct sbuf *b, const char *name, const char *value)
{
	char delim[40];

	do
		snprintf(delim, sizeof(delim), "ghadelimiter_%08x%08x", arc4random(), arc4random());
	while (strstr(value, delim));
	sbuf_addf(b, "%s<<%s\n%s\n%s\n", name, delim, value, delim);
}

int eval_github_output(const char *path, const struct eval_report *r, const char *summary_path,
		       char *msg, size_t n)
{
	struct sbuf b = SBUF_INIT;
	double worst = NAN, best = NAN;
	char num[64];
	int fd, rc = 0;

	for (size_t i = 0; i < r->nk; i++) {
		double g = num2(r->k[i].res, "roofline", "gflops");

		if (!isnan(r->k[i].speedup) && (isnan(worst) || r->k[i].speedup < worst))
			worst = r->k[i].speedup;
		if (!isnan(g) && (isnan(best) || g > best))
			best = g;
	}
	output_value(&b, "verdict", eval_verdict_name(r->verdict));
	snprintf(num, sizeof(num), "%zu", r->nk);
	output_value(&b, "kernels", num);
	num[0] = '\0';
	if (!isnan(worst))
		snprintf(num, sizeof(num), "%.4f", worst);
	output_value(&b, "worst_speedup", num);
	num[0] = '\0';
	if (!isnan(best))
		snprintf(num, sizeof(num), "%.2f", best);
	output_value(&b, "best_gflops", num);
	output_value(&b, "summary", summary_path);
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, b.buf, b.len) != (ssize_t)b.len)
		rc = kerr_set(msg, n, KERR_IO, "cannot append to $GITHUB_OUTPUT '%s': %s", path,
			      strerror(errno));
	if (fd >= 0)
		close(fd);
	sbuf_release(&b);
	return rc;
}
