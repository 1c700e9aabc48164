/*
 * report-html.c - report.html (report.h): one page, inline CSS and SVG,
 * no script at all, and a Content-Security-Policy that forbids fetching
 * anything, so it reads the same offline, as a CI artifact and printed.
 * Every text from the session (ids, rationales, learnings, messages,
 * options, diffs) goes through sbuf_add_html.
 */
#include "report.h"
#include "report-internal.h"
#include "err.h"
#include "fileio.h"
#include "store.h"
#include "xalloc.h"

#include <math.h>
#include <string.h>

/* Past this many variants the page has no table of them all (kctl show has). */
#define ALL_ROWS_MAX 2000

static const char page_css[] =
	":root{color-scheme:light dark;--bg:#fff;--fg:#1b1f24;--mute:#59636e;--line:#d1d9e0;"
	"--card:#f6f8fa;--grid:#e6eaef;--accent:#0969da;--ok:#1a7f37;--incorrect:#bc4c00;"
	"--compile_error:#cf222e;--runtime_error:#8250df;--crash:#82071e;--timeout:#9a6700;"
	"--infra_error:#6e7781;--invalid:#bf3989;--other:#57606a;--pending:#afb8c1;"
	"--p0:#0969da;--p1:#1a7f37;--p2:#bc4c00;--p3:#8250df;--p4:#bf3989;--p5:#9a6700;"
	"--p6:#1b7c83;--p7:#6e7781}\n"
	"@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--mute:#9198a1;"
	"--line:#3d444d;--card:#151b23;--grid:#262c36;--accent:#4493f8;--ok:#3fb950;"
	"--incorrect:#db6d28;--compile_error:#f85149;--runtime_error:#ab7df8;--crash:#ff7b72;"
	"--timeout:#d29922;--infra_error:#9198a1;--invalid:#db61a2;--other:#9198a1;"
	"--pending:#656c76;--p0:#4493f8;--p1:#3fb950;--p2:#db6d28;--p3:#ab7df8;--p4:#db61a2;"
	"--p5:#d29922;--p6:#39c5cf;--p7:#9198a1}}\n"
	"body{background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,sans-serif;"
	"max-width:1100px;margin:0 auto;padding:16px 24px}\n"
	"h1{font-size:1.6em;margin:.2em 0}h2{font-size:1.25em;margin-top:1.8em;"
	"border-bottom:1px solid var(--line)}code,pre{font:13px/1.4 ui-monospace,monospace}\n"
	"a{color:var(--accent)}nav a{margin-right:1em}.mute,.note,.empty{color:var(--mute)}\n"
	".cards{display:flex;flex-wrap:wrap;gap:12px}.card{background:var(--card);"
	"border:1px solid var(--line);border-radius:6px;padding:8px 14px;flex:1 1 200px;"
	"max-width:330px}"
	".card b{display:block;font-size:1.3em}\n"
	"table{border-collapse:collapse;width:100%;margin:.5em 0}th,td{border-bottom:1px solid "
	"var(--line);padding:4px 8px;text-align:left;vertical-align:top}td.n{text-align:right;"
	"font-variant-numeric:tabular-nums}\n"
	"pre{background:var(--card);border:1px solid var(--line);padding:8px;overflow-x:auto;"
	"white-space:pre-wrap;word-break:break-all}.add{color:var(--ok)}.del{color:"
	"var(--compile_error)}.hunk{color:var(--mute)}\n"
	"svg.chart{width:100%;height:auto;display:block;margin:.5em 0}\n"
	"svg text{fill:var(--fg);font:11px system-ui,sans-serif}svg .tick,svg .legend{fill:"
	"var(--mute)}svg .label{font-size:12px}\n"
	"svg .grid{stroke:var(--grid)}svg .axis{stroke:var(--mute);fill:none}"
	"svg line.lane{stroke:var(--line)}svg text.lane{fill:var(--mute)}\n"
	"svg .lin{fill:none;stroke-width:1.5;opacity:.8}svg .best{fill:none;stroke:var(--fg);"
	"stroke-width:2}svg .step{fill:var(--bg);stroke:var(--fg);stroke-width:2}\n"
	"svg .roof{fill:none;stroke:var(--fg);stroke-width:2}svg .ref{fill:var(--mute)}"
	"svg circle.win{stroke:var(--fg);stroke-width:2}svg .edge{stroke:var(--line);fill:none}\n"
	"svg .iqr{fill:var(--accent);opacity:.35}svg .whisker,svg .median{stroke:var(--fg);"
	"fill:none}svg .box.win .iqr{opacity:.7}\n"
	".s-ok{fill:var(--ok)}.s-incorrect{fill:var(--incorrect)}.s-compile_error{fill:"
	"var(--compile_error)}.s-runtime_error{fill:var(--runtime_error)}.s-crash{fill:"
	"var(--crash)}.s-timeout{fill:var(--timeout)}.s-infra_error{fill:var(--infra_error)}"
	".s-invalid{fill:var(--invalid)}.s-other{fill:var(--other)}.s-pending{fill:"
	"var(--pending)}\n"
	".o-start{fill:var(--fg)}.o-tune{fill:var(--p0)}.o-sweep{fill:var(--p5)}"
	".o-model{fill:var(--p3)}.o-other{fill:var(--p7)}"
	".node.s-compile_error,.node.s-incorrect,.node.s-crash,.node.s-timeout,"
	".node.s-runtime_error{fill-opacity:.35}\n"
	".l0{stroke:var(--p0)}.l1{stroke:var(--p1)}.l2{stroke:var(--p2)}.l3{stroke:var(--p3)}"
	".l4{stroke:var(--p4)}.l5{stroke:var(--p5)}.l6{stroke:var(--p6)}.l7{stroke:var(--p7)}\n"
	".k0{fill:var(--p0)}.k1{fill:var(--p1)}.k2{fill:var(--p2)}.k3{fill:var(--p3)}"
	".k4{fill:var(--p4)}.k5{fill:var(--p5)}.k6{fill:var(--p6)}.k7{fill:var(--p7)}\n"
	"span.st{display:inline-block;width:.8em;height:.8em;border-radius:50%;"
	"margin-right:.3em;background:var(--other)}\n"
	"@media print{:root{--bg:#fff;--fg:#000;--card:#fff}nav{display:none}"
	"section,figure,svg,tr{break-inside:avoid}details{display:block}body{max-width:none}}\n";

/* --- small pieces ------------------------------------------------------- */

static void esc(struct sbuf *b, const char *s)
{
	sbuf_add_html(b, s);
}

/* A number cell: v with prec digits after the point (fixed) or significant, then unit. */
static void cell_num(struct sbuf *b, double v, int fixed, int prec, const char *unit)
{
	sbuf_adds(b, "<td class=\"n\">");
	if (isfinite(v))
		sbuf_addf(b, fixed ? "%.*f%s" : "%.*g%s", prec, v, unit);
	else
		sbuf_adds(b, "-");
	sbuf_adds(b, "</td>");
}

static void cell(struct sbuf *b, const char *s)
{
	sbuf_adds(b, "<td>");
	esc(b, s && *s ? s : "-");
	sbuf_adds(b, "</td>");
}

static void card(struct sbuf *b, const char *title, const char *value, const char *sub)
{
	sbuf_adds(b, "<div class=\"card\">");
	esc(b, title);
	sbuf_adds(b, "<b>");
	esc(b, value);
	sbuf_adds(b, "</b><span class=\"mute\">");
	esc(b, sub);
	sbuf_adds(b, "</span></div>\n");
}

/* A link to path under base, every byte outside [A-Za-z0-9._~/-] percent-encoded. */
static void href(struct sbuf *b, const char *base, const char *path)
{
	for (int k = 0; k < 2; k++)
		for (const unsigned char *p = (const unsigned char *)(k ? path : base); *p; p++)
			if (strchr("._~/-", *p) || (*p >= '0' && *p <= '9') ||
			    ((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z'))
				sbuf_addch(b, *p);
			else
				sbuf_addf(b, "%%%02X", *p);
}

/* "TM=8 VN=16" */
static void params(struct sbuf *b, json_t *p)
{
	const char *k;
	json_t *v;
	int first = 1;

	json_object_foreach (p, k, v) {
		char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);

		sbuf_adds(b, first ? "" : " ");
		esc(b, k);
		sbuf_adds(b, "=");
		esc(b, t ? t : "?");
		free(t);
		first = 0;
	}
}

/* --- sections ----------------------------------------------------------- */

static void head(json_t *m, struct sbuf *b)
{
	json_t *s = json_object_get(m, "session");

	sbuf_adds(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
		     "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
		     "style-src 'unsafe-inline'; img-src data:\">\n"
		     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		     "<meta name=\"color-scheme\" content=\"light dark\">\n"
		     "<meta name=\"generator\" content=\"kctl\">\n<title>kctl session ");
	esc(b, report_str(s, "id"));
	sbuf_addf(b,
		  "</title>\n<style>\n%s</style></head>\n<body>\n<header><h1>kctl session <code>",
		  page_css);
	esc(b, report_str(s, "id"));
	sbuf_adds(b, "</code></h1>\n<p class=\"mute\">Spec <code>");
	esc(b, report_str(s, "spec"));
	sbuf_adds(b, "</code>, started ");
	esc(b, report_str(s, "created"));
	sbuf_adds(b, ", last recorded ");
	esc(b, report_str(s, "updated"));
	sbuf_adds(b,
		  ".</p></header>\n<nav><a href=\"#progress\">Progress</a><a href=\"#variants\">"
		  "Variants</a><a href=\"#roofline\">Roofline</a><a href=\"#lineage\">Lineages</a>"
		  "<a href=\"#rounds\">Rounds</a><a href=\"#top\">Top variants</a>"
		  "<a href=\"#failures\">Failures</a><a href=\"#learnings\">Learnings</a></nav>\n");
}

static void summary(json_t *m, struct sbuf *b)
{
	json_t *s = json_object_get(m, "session"), *w = json_object_get(m, "winner");
	json_t *roof = json_object_get(m, "roofline"), *d = json_object_get(m, "device");
	char v[96], sub[160];

	sbuf_adds(b, "<section id=\"summary\"><div class=\"cards\">\n");
	card(b, "State", report_str(s, "state"),
	     !strcmp(report_str(s, "kind"), "eval") ? "a kctl eval" : "a search");
	snprintf(v, sizeof(v), "%lld",
		 (long long)json_integer_value(json_object_get(s, "evaluations")));
	snprintf(sub, sizeof(sub), "%zu rounds recorded",
		 json_array_size(json_object_get(m, "rounds")));
	card(b, "Evaluations", v, sub);
	if (json_is_object(w)) {
		snprintf(v, sizeof(v), "%.3gx", report_num(w, "speedup_vs_reference"));
		snprintf(sub, sizeof(sub), "%s, %s", report_str(w, "variant"),
			 json_is_true(json_object_get(w, "confirmed")) ? "confirmed"
								       : "not confirmed");
		card(b, "Best vs reference", v, sub);
		snprintf(v, sizeof(v), "%.4g GFLOP/s", report_num(w, "gflops"));
		if (report_num(roof, "peak_gflops") > 0)
			snprintf(sub, sizeof(sub), "%.2f of the compute peak, %.4g GB/s",
				 report_num(w, "gflops") / report_num(roof, "peak_gflops"),
				 report_num(w, "gbps"));
		else
			snprintf(sub, sizeof(sub), "%.4g GB/s", report_num(w, "gbps"));
		card(b, "Best throughput", v, sub);
	} else {
		card(b, "Best", "none yet", "no variant has passed its checks");
	}
	if (json_is_object(d)) {
		snprintf(sub, sizeof(sub), "%s; driver %s; %lld compute units",
			 report_str(d, "platform"), report_str(d, "driver"),
			 (long long)json_integer_value(json_object_get(d, "compute_units")));
		card(b, "Device", report_str(d, "name"), sub);
	}
	if (report_num(roof, "peak_gflops") > 0) {
		snprintf(v, sizeof(v), "%.4g GFLOP/s", report_num(roof, "peak_gflops"));
		snprintf(sub, sizeof(sub), "%.4g GB/s measured; ridge at %.3g FLOP/byte",
			 report_num(roof, "peak_gbs"), report_num(roof, "ridge_point"));
		card(b, "Device peaks", v, sub);
	}
	sbuf_adds(b, "</div>\n");
	if (*report_str(s, "reason")) {
		sbuf_adds(b, "<p><b>Why it stopped or where it stands:</b> ");
		esc(b, report_str(s, "reason"));
		sbuf_adds(b, "</p>\n");
	}
	if (json_is_object(w) && *report_str(w, "verdict") &&
	    !strstr(report_str(s, "reason"), report_str(w, "verdict"))) {
		sbuf_adds(b, "<p><b>The winner's confirmation:</b> ");
		esc(b, report_str(w, "verdict"));
		sbuf_adds(b, "</p>\n");
	}
	sbuf_adds(b, "</section>\n");
}

static void section(struct sbuf *b, const char *id, const char *title, const char *about)
{
	sbuf_addf(b, "<section id=\"%s\"><h2>", id);
	esc(b, title);
	sbuf_adds(b, "</h2>\n");
	if (about) {
		sbuf_adds(b, "<p class=\"mute\">");
		esc(b, about);
		sbuf_adds(b, "</p>\n");
	}
}

static void rounds_table(json_t *m, struct sbuf *b)
{
	json_t *r;
	size_t i;

	sbuf_adds(b, "<table><tr><th>round</th><th>mode</th><th>variants</th><th>outcomes</th>"
		     "<th>decision</th><th>reason</th></tr>\n");
	json_array_foreach (json_object_get(m, "rounds"), i, r) {
		const char *k;
		json_t *v;
		int first = 1;

		sbuf_addf(b, "<tr><td class=\"n\">%lld</td>",
			  (long long)json_integer_value(json_object_get(r, "round")));
		cell(b, report_str(r, "mode"));
		if (json_is_array(json_object_get(r, "retimed")))
			sbuf_addf(b, "<td class=\"n\">%zu re-timed</td>",
				  json_array_size(json_object_get(r, "retimed")));
		else
			sbuf_addf(b, "<td class=\"n\">%lld</td>",
				  (long long)json_integer_value(json_object_get(r, "variants")));
		sbuf_adds(b, "<td>");
		json_object_foreach (json_object_get(r, "statuses"), k, v) {
			sbuf_addf(b, "%s%lld ", first ? "" : ", ",
				  (long long)json_integer_value(v));
			esc(b, k);
			first = 0;
		}
		sbuf_adds(b, "</td>");
		cell(b, report_str(r, "decision"));
		cell(b, report_str(r, "reason"));
		sbuf_adds(b, "</tr>\n");
	}
	sbuf_adds(b, "</table>\n");
}

static void diff_block(struct sbuf *b, const char *diff)
{
	const char *p = diff, *e;

	sbuf_adds(b, "<pre>");
	for (; *p; p = *e ? e + 1 : e) {
		struct sbuf line = SBUF_INIT;
		const char *cls = *p == '+' ? "add" : *p == '-' ? "del" : *p == '@' ? "hunk" : NULL;

		e = strchr(p, '\n');
		e = e ? e : p + strlen(p);
		sbuf_add(&line, p, (size_t)(e - p));
		if (cls)
			sbuf_addf(b, "<span class=\"%s\">", cls);
		esc(b, line.buf ? line.buf : "");
		sbuf_adds(b, cls ? "</span>\n" : "\n");
		sbuf_release(&line);
	}
	sbuf_adds(b, "</pre>\n");
}

static void top_table(json_t *m, struct sbuf *b)
{
	double peak = report_num(json_object_get(m, "roofline"), "peak_gflops");
	json_t *v, *a;
	size_t i, j;

	sbuf_adds(b, "<table><tr><th>variant</th><th>round</th><th>lineage</th><th>by</th>"
		     "<th>vs reference</th><th>GFLOP/s</th><th>of peak</th><th>median ms</th>"
		     "<th>noise</th><th>bottleneck</th><th>parameters, options</th>"
		     "<th>trace, IR</th></tr>\n");
	json_array_foreach (json_object_get(m, "top"), i, v) {
		sbuf_adds(b, "<tr><td><code>");
		esc(b, report_str(v, "id"));
		sbuf_addf(b, "</code></td><td class=\"n\">%lld</td>",
			  (long long)json_integer_value(json_object_get(v, "round")));
		cell_num(b,
			 json_is_integer(json_object_get(v, "lineage"))
				 ? (double)json_integer_value(json_object_get(v, "lineage"))
				 : NAN,
			 1, 0, "");
		cell(b, report_str(v, "origin"));
		cell_num(b, report_num(v, "speedup_ref"), 0, 3, "x");
		cell_num(b, report_num(v, "gflops"), 0, 4, "");
		cell_num(b, peak > 0 ? report_num(v, "gflops") / peak : NAN, 1, 2, "");
		cell_num(b, report_num(v, "median_ms"), 0, 4, "");
		cell_num(b, report_num(v, "robust_cv") * 100, 1, 1, "%");
		cell(b, report_str(v, "bottleneck"));
		sbuf_adds(b, "<td><code>");
		params(b, json_object_get(v, "params"));
		sbuf_adds(b, "</code> <code>");
		esc(b, report_str(v, "options"));
		sbuf_adds(b, "</code></td><td>");
		json_array_foreach (json_object_get(v, "artifacts"), j, a) {
			if (json_is_true(json_object_get(a, "present"))) {
				sbuf_adds(b, "<a href=\"");
				href(b, report_str(m, "link_base"), report_str(a, "href"));
				sbuf_adds(b, "\">");
				esc(b, report_str(a, "name"));
				sbuf_adds(b, "</a> ");
			}
		}
		sbuf_adds(b, "</td></tr>\n");
	}
	sbuf_adds(b, "</table>\n");
	json_array_foreach (json_object_get(m, "top"), i, v) {
		sbuf_adds(b, "<details><summary><code>");
		esc(b, report_str(v, "id"));
		sbuf_adds(b, "</code>: ");
		esc(b, *report_str(v, "rationale") ? report_str(v, "rationale") : "no rationale");
		sbuf_adds(b, "</summary>\n");
		if (*report_str(v, "diff"))
			diff_block(b, report_str(v, "diff"));
		else
			sbuf_adds(b, "<p class=\"mute\">Same source as the template: only its "
				     "parameters and options differ.</p>\n");
		sbuf_adds(b, "</details>\n");
	}
}

/* Every variant, one row each, in a <details>: up to ALL_ROWS_MAX of them. */
static void all_table(json_t *m, struct sbuf *b)
{
	json_t *vars = json_object_get(m, "variants"), *v;
	const char *base = report_str(m, "link_base");
	size_t i;

	if (json_array_size(vars) > ALL_ROWS_MAX) {
		sbuf_addf(b,
			  "<p class=\"mute\">%zu variants: too many for one table here; "
			  "<code>kctl show SESSION</code> lists them all.</p>\n",
			  json_array_size(vars));
		return;
	}
	sbuf_addf(b,
		  "<details><summary>All %zu variants</summary>\n<table><tr><th>variant</th>"
		  "<th>parent</th><th>by</th><th>status</th><th>vs reference</th><th>GFLOP/s</th>"
		  "<th>bottleneck or fault</th><th>rationale</th><th>files</th></tr>\n",
		  json_array_size(vars));
	json_array_foreach (vars, i, v) {
		sbuf_adds(b, "<tr><td><code>");
		esc(b, report_str(v, "id"));
		sbuf_adds(b, "</code></td>");
		cell(b, report_str(v, "parent"));
		cell(b, report_str(v, "origin"));
		sbuf_adds(b, "<td><span class=\"st ");
		report_class(b, "s-",
			     *report_str(v, "status") ? report_str(v, "status") : "pending");
		sbuf_adds(b, "\"></span>");
		esc(b, *report_str(v, "status") ? report_str(v, "status") : "not evaluated");
		sbuf_adds(b, "</td>");
		cell_num(b, report_num(v, "speedup_ref"), 0, 3, "x");
		cell_num(b, report_num(v, "gflops"), 0, 4, "");
		cell(b, *report_str(v, "fault_kind") ? report_str(v, "fault_kind")
						     : report_str(v, "bottleneck"));
		cell(b, report_str(v, "rationale"));
		sbuf_adds(b, "<td>");
		if (*report_str(v, "folder")) {
			sbuf_adds(b, "<a href=\"");
			href(b, base, report_str(v, "folder"));
			sbuf_adds(b, "/\">folder</a>");
		}
		if (json_is_true(json_object_get(v, "trace"))) {
			sbuf_adds(b, " <a href=\"");
			href(b, base, report_str(v, "folder"));
			sbuf_adds(b, "/trace.json\">trace</a>");
		}
		sbuf_adds(b, "</td></tr>\n");
	}
	sbuf_adds(b, "</table></details>\n");
}

static void failures_table(json_t *m, struct sbuf *b)
{
	json_t *f, *e;
	size_t i, j;

	if (!json_array_size(json_object_get(m, "failures"))) {
		sbuf_adds(b, "<p class=\"empty\">No variant failed.</p>\n");
		return;
	}
	sbuf_adds(b, "<table><tr><th>status</th><th>kind</th><th>variants</th><th>examples</th>"
		     "</tr>\n");
	json_array_foreach (json_object_get(m, "failures"), i, f) {
		sbuf_adds(b, "<tr><td><span class=\"st ");
		report_class(b, "s-", report_str(f, "status"));
		sbuf_adds(b, "\"></span>");
		esc(b, report_str(f, "status"));
		sbuf_adds(b, "</td>");
		cell(b, report_str(f, "kind"));
		cell_num(b, (double)json_integer_value(json_object_get(f, "count")), 1, 0, "");
		sbuf_adds(b, "<td>");
		json_array_foreach (json_object_get(f, "examples"), j, e) {
			sbuf_adds(b, "<div><code>");
			esc(b, report_str(e, "id"));
			sbuf_adds(b, "</code> ");
			esc(b, report_str(e, "message"));
			sbuf_adds(b, "</div>");
		}
		sbuf_adds(b, "</td></tr>\n");
	}
	sbuf_adds(b, "</table>\n");
}

static void learnings_list(json_t *m, struct sbuf *b)
{
	static const struct {
		const char *kind, *title;
	} kinds[] = { { "F", "Failure patterns" },
		      { "S", "Successes" },
		      { "M", "The model's reflections" } };
	json_t *l;
	size_t i;

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		int header = 0;

		json_array_foreach (json_object_get(m, "learnings"), i, l) {
			if (strcmp(report_str(l, "kind"), kinds[k].kind))
				continue;
			if (!header++)
				sbuf_addf(b, "<h3>%s</h3>\n<ul>\n", kinds[k].title);
			sbuf_addf(b, "<li>[%s%03lld] ", kinds[k].kind,
				  (long long)json_integer_value(json_object_get(l, "number")));
			esc(b, report_str(l, "text"));
			if (json_integer_value(json_object_get(l, "count")) > 1)
				sbuf_addf(
					b, " <span class=\"mute\">(seen %lld times)</span>",
					(long long)json_integer_value(json_object_get(l, "count")));
			sbuf_adds(b, "</li>\n");
		}
		if (header)
			sbuf_adds(b, "</ul>\n");
	}
	if (!json_array_size(json_object_get(m, "learnings")))
		sbuf_adds(b, "<p class=\"empty\">Nothing learned yet.</p>\n");
}

static void model_table(json_t *m, struct sbuf *b)
{
	json_t *t = json_object_get(m, "llm"), *v;
	const char *k;

	if (!json_is_object(t))
		return;
	section(b, "model", "The language model",
		"Exchanges with the model proposer, as recorded.");
	sbuf_adds(b, "<table><tr><th>exchanges</th><th>failed</th><th>tokens in</th>"
		     "<th>tokens out</th><th>cost</th><th>waiting</th></tr><tr>");
	cell_num(b, (double)json_integer_value(json_object_get(t, "calls")), 1, 0, "");
	cell_num(b, (double)json_integer_value(json_object_get(t, "errors")), 1, 0, "");
	cell_num(b, (double)json_integer_value(json_object_get(t, "input_tokens")), 1, 0, "");
	cell_num(b, (double)json_integer_value(json_object_get(t, "output_tokens")), 1, 0, "");
	cell_num(b, report_num(t, "cost"), 0, 4, "");
	cell_num(b, report_num(t, "ms") / 1e3, 1, 1, " s");
	sbuf_adds(b, "</tr></table>\n<p>What became of the directions it gave: ");
	json_object_foreach (json_object_get(t, "outcomes"), k, v) {
		sbuf_addf(b, "%lld ", (long long)json_integer_value(v));
		esc(b, k);
		sbuf_adds(b, "; ");
	}
	sbuf_adds(b, "</p></section>\n");
}

/* A session with several timed shapes: the best variant of each bucket. */
static void buckets_table(json_t *m, struct sbuf *b)
{
	json_t *e;
	size_t i;

	if (!json_array_size(json_object_get(m, "buckets")))
		return;
	section(b, "buckets", "Best per shape bucket",
		"The session ranked on the geometric mean of the per-bucket speedups; here is the "
		"variant that passed with the highest speedup over the reference at each bucket, "
		"by its own round's figures. Only the winner went through the confirmation.");
	sbuf_adds(b,
		  "<table><tr><th>bucket</th><th>variant</th><th>round</th><th>median</th>"
		  "<th>vs reference</th><th>GFLOP/s</th><th>robust CV</th><th>quality</th></tr>\n");
	json_array_foreach (json_object_get(m, "buckets"), i, e) {
		char *name =
			xasprintf("%s%s", report_str(e, "bucket"),
				  json_is_true(json_object_get(e, "primary")) ? " (primary)" : "");

		sbuf_adds(b, "<tr>");
		cell(b, name);
		cell(b, report_str(e, "variant"));
		cell_num(b, report_num(e, "round"), 1, 0, "");
		cell_num(b, report_num(e, "median_ms"), 0, 4, " ms");
		cell_num(b, report_num(e, "speedup_vs_reference"), 1, 2, "&times;");
		cell_num(b, report_num(e, "gflops"), 1, 1, "");
		cell_num(b, 100 * report_num(e, "robust_cv"), 1, 1, "%");
		cell(b, report_str(e, "quality"));
		sbuf_adds(b, "</tr>\n");
		free(name);
	}
	sbuf_adds(b, "</table></section>\n");
}

static void settings_table(json_t *m, struct sbuf *b)
{
	json_t *s;
	size_t i;

	if (!json_array_size(json_object_get(m, "settings")))
		return;
	section(b, "settings", "Settings changed on resume", NULL);
	sbuf_adds(b, "<table><tr><th>when</th><th>key</th><th>was</th><th>now</th></tr>\n");
	json_array_foreach (json_object_get(m, "settings"), i, s) {
		char *was = json_dumps(json_object_get(s, "was"), JSON_ENCODE_ANY | JSON_COMPACT);
		char *now = json_dumps(json_object_get(s, "value"), JSON_ENCODE_ANY | JSON_COMPACT);

		sbuf_adds(b, "<tr>");
		cell(b, report_str(s, "created"));
		cell(b, report_str(s, "key"));
		cell(b, was ? was : "(not set)");
		cell(b, now);
		sbuf_adds(b, "</tr>\n");
		free(was);
		free(now);
	}
	sbuf_adds(b, "</table></section>\n");
}

void report_html(json_t *m, struct sbuf *b)
{
	head(m, b);
	summary(m, b);
	section(b, "progress", "Best speedup over evaluations",
		"The running best of each lineage (one colour each) and of the session (black, "
		"its steps marked). Figures are each variant's own round's measurements.");
	report_plot_progress(m, b);
	sbuf_adds(b, "</section>\n");
	section(b, "variants", "Every variant",
		"One point per evaluated variant; variants that failed their checks sit in the "
		"lane at the top. Hover a point for its id and figures.");
	report_plot_scatter(m, b);
	sbuf_adds(b, "</section>\n");
	section(b, "roofline", "Roofline",
		"The device's measured compute peak and memory bandwidth; each variant that passed "
		"at its arithmetic intensity and achieved GFLOP/s.");
	report_plot_roofline(m, b);
	sbuf_adds(b, "</section>\n");
	section(b, "lineage", "Lineages",
		"Edges run from parent to child; colour says which "
		"proposer wrote the variant (black: the template, blue: the tuner, purple: the "
		"model, ochre: a sweep); faded points failed.");
	report_plot_lineage(m, b);
	sbuf_adds(b, "</section>\n");
	section(b, "rounds", "Rounds", NULL);
	report_plot_counts(m, "statuses", "Outcomes per round", b);
	report_plot_counts(m, "bottlenecks", "Bottleneck classes per round (variants that passed)",
			   b);
	report_plot_counts(m, "faults", "Fault kinds per round", b);
	rounds_table(m, b);
	sbuf_adds(b, "</section>\n");
	section(b, "top", "Top variants",
		"The winner first, then the fastest others by their own rounds' figures; each "
		"with its blocks' diff against the template.");
	report_plot_timing(m, b);
	top_table(m, b);
	all_table(m, b);
	sbuf_adds(b, "</section>\n");
	buckets_table(m, b);
	section(b, "failures", "Failures", NULL);
	failures_table(m, b);
	sbuf_adds(b, "</section>\n");
	section(b, "learnings", "Learnings", NULL);
	learnings_list(m, b);
	sbuf_adds(b, "</section>\n");
	model_table(m, b);
	settings_table(m, b);
	sbuf_adds(b, "<footer class=\"mute\"><p>Written by kctl from the session's state as "
		     "recorded at ");
	esc(b, report_str(json_object_get(m, "session"), "updated"));
	sbuf_adds(b,
		  "; <code>kctl report SESSION -o json</code> gives the same data.</p></footer>\n"
		  "</body></html>\n");
}

int report_html_write(struct store *st, const char *id, const char *dir, char *msg, size_t n)
{
	json_t *m = report_model(st, id, dir);
	struct sbuf b = SBUF_INIT;
	char *path;
	int rc;

	if (!m) {
		snprintf(msg, n, "report of session '%s': not in the state database", id);
		return KERR_NOTFOUND;
	}
	path = xasprintf("%s/report.html", dir);
	report_html(m, &b);
	rc = file_write_atomic(path, b.buf, b.len, msg, n);
	sbuf_release(&b);
	free(path);
	json_decref(m);
	return rc;
}
