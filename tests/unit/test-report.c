/*
 * test-report.c - unit tests for the report page's parts: HTML escaping
 * and the renaming of a compiler's file (common/sbuf.c, sbuf_add_html,
 * sbuf_add_renamed), the chart frame's ranges and ticks (common/svg.c),
 * and report.html drawn from hand-made report models (controller/
 * report-html.c, report-plots.c): one point per evaluated variant in the
 * scatter, failures in their lane, hostile texts escaped,
 * and the page's promise of no script and nothing fetched.
 */
#include "report.h"
#include "sbuf.h"
#include "svg.h"
#include "test.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static char *html_of(const char *s)
{
	struct sbuf b = SBUF_INIT;

	sbuf_add_html(&b, s);
	return sbuf_detach(&b, NULL);
}

TEST(html_escapes_markup_quotes_controls_and_broken_utf8)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{ "a<b>&\"c'", "a&lt;b&gt;&amp;&quot;c&#39;" },
		{ "</script><!--", "&lt;/script&gt;&lt;!--" },
		{ "tab\tnew\nline", "tab\tnew\nline" },
		{ "bell\a esc\x1b del\x7f", "bell\xef\xbf\xbd esc\xef\xbf\xbd del\xef\xbf\xbd" },
		{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
		  "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80" },
		/* a lone continuation byte, a cut sequence, an overlong '/', a surrogate */
		{ "x\x80y", "x\xef\xbf\xbdy" },
		{ "cut\xe2\x82", "cut\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "", "" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = html_of(cases[i].in);

		CHECK_STR(got, cases[i].want);
		free(got);
	}
}

TEST(renaming_every_file_and_line_and_nothing_else)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{ "error: program.cl:11:45: x", "error: k.cl:11:45: x" },
		{ "program.cl:1:2: a; program.cl:3:4: b", "k.cl:1:2: a; k.cl:3:4: b" },
		{ "program.clx program.cl", "program.clx program.cl" }, /* no colon after */
		{ "program.cl:program.cl:", "k.cl:k.cl:" },
		{ "in program.cl, at program.cl:2:3", "in program.cl, at k.cl:2:3" },
		{ "", "" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sbuf b = SBUF_INIT;

		sbuf_adds(&b, "> ");
		sbuf_add_renamed(&b, cases[i].in, "program.cl", "k.cl");
		CHECK(!strncmp(b.buf, "> ", 2));
		CHECK_STR(b.buf + 2, cases[i].want);
		sbuf_release(&b);
	}
}

TEST(ranges_pad_and_survive_degenerate_data)
{
	struct svg_axis a;

	svg_range(&a, 10, 0, 0);
	CHECK(a.lo < 0 && a.hi > 10);
	svg_range(&a, 5, 5, 0);
	CHECK(a.lo < 5 && a.hi > 5);
	svg_range(&a, 0, 0, 0);
	CHECK(a.lo < 0 && a.hi > 0);
	svg_range(&a, NAN, INFINITY, 0);
	CHECK(isfinite(a.lo) && isfinite(a.hi) && a.lo < a.hi);
	svg_range(&a, 0.5, 2, 1);
	CHECK(a.log && a.lo > 0 && a.lo < 0.5 && a.hi > 2);
	/* a log axis drops what it cannot show */
	svg_range(&a, -3, 0, 1);
	CHECK(a.lo > 0 && a.hi > a.lo);
	svg_range(&a, 0, 100, 1);
	CHECK(a.lo > 0 && a.lo <= 10 && a.hi > 100);
}

TEST(ticks_are_round_numbers_inside_the_axis)
{
	static const struct {
		double lo, hi;
		int log;
		double first, second;
	} cases[] = {
		{ 0, 10, 0, 0, 2 },       { 0.3, 0.72, 0, 0.3, 0.4 }, { -5, 5, 0, -4, -2 },
		{ 0.05, 500, 1, 0.1, 1 }, { 2, 9, 1, 2, 5 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct svg_axis a = { .lo = cases[i].lo, .hi = cases[i].hi, .log = cases[i].log };
		double t[16];
		int n = svg_ticks(&a, t, 16);

		CHECK(n >= 2);
		CHECK(fabs(t[0] - cases[i].first) < 1e-9);
		CHECK(fabs(t[1] - cases[i].second) < 1e-9);
		for (int k = 0; k < n; k++)
			CHECK(t[k] >= a.lo - 1e-9 && t[k] <= a.hi + 1e-9);
		for (int k = 1; k < n; k++)
			CHECK(t[k] > t[k - 1]);
	}
}

TEST(chart_maps_data_into_its_plot_area)
{
	struct sbuf b = SBUF_INIT;
	struct svg_chart c;

	svg_begin(&c, &b, "p<x>", "a \"title\"", 400, 200);
	c.x = (struct svg_axis){ .lo = 0, .hi = 10 };
	c.y = (struct svg_axis){ .lo = 1, .hi = 100, .log = 1 };
	CHECK(fabs(svg_x(&c, 0) - c.left) < 1e-9);
	CHECK(fabs(svg_x(&c, 10) - (400 - c.right)) < 1e-9);
	CHECK(fabs(svg_y(&c, 10) - (200 - c.bottom + c.top) / 2) < 1e-9);
	/* outside the range: clamped to the area, never drawn elsewhere */
	CHECK(fabs(svg_x(&c, 1e9) - (400 - c.right)) < 1e-9);
	CHECK(fabs(svg_y(&c, -1) - (200 - c.bottom)) < 1e-9);
	svg_axes(&c);
	svg_end(&c);
	CHECK_CONTAINS(b.buf, "data-plot=\"p&lt;x&gt;\"");
	CHECK_CONTAINS(b.buf, "<title>a &quot;title&quot;</title>");
	CHECK(!strstr(b.buf, "\"title\""));
	sbuf_release(&b);
}

/* A variant of a hand-made model. */
static json_t *variant(const char *id, int round, const char *parent, const char *status,
		       double speedup, const char *why)
{
	json_t *v = json_pack("{s:s, s:i, s:s?, s:i, s:s, s:s?, s:s?, s:s}", "id", id, "round",
			      round, "parent", parent, "lineage", round % 3, "origin", "tune",
			      "status", status, "rationale", why, "options", "-DTM=4");

	if (speedup > 0) {
		json_object_set_new(v, "speedup_ref", json_real(speedup));
		json_object_set_new(v, "gflops", json_real(10 * speedup));
		json_object_set_new(v, "gbs", json_real(5 * speedup));
		json_object_set_new(v, "median_ms", json_real(1 / speedup));
		json_object_set_new(v, "bottleneck", json_string("memory"));
	} else if (status) {
		json_object_set_new(v, "fault_kind", json_string("wrong_values"));
	}
	return v;
}

static json_t *model(size_t n, int failed_only, const char *hostile)
{
	json_t *vars = json_array(), *rounds = json_array(), *m;

	for (size_t i = 0; i < n; i++) {
		char id[32], parent[32];
		int fail = failed_only || i % 5 == 4;

		snprintf(id, sizeof(id), "r%02zu-v%03zu", i / 4, i);
		snprintf(parent, sizeof(parent), "r%02zu-v%03zu", i ? (i - 1) / 4 : 0,
			 i ? i - 1 : 0);
		json_array_append_new(vars, variant(id, (int)(i / 4), i ? parent : NULL,
						    fail ? "incorrect" : "ok",
						    fail ? 0 : 1 + (double)(i % 7) / 3, hostile));
	}
	for (size_t r = 0; r * 4 < n; r++)
		json_array_append_new(rounds, json_pack("{s:i, s:s, s:{s:i}, s:{}, s:{}}", "round",
							(int)r, "mode", "explore", "statuses", "ok",
							3, "bottlenecks", "faults"));
	m = json_pack("{s:{s:s, s:s, s:s, s:s}, s:o, s:o, s:{s:f, s:f, s:f, s:f},"
		      " s:{s:f}, s:[], s:[], s:[{s:s, s:i, s:s}]}",
		      "session", "id", "s-1", "state", "done", "reason", hostile ? hostile : "done",
		      "kind", "search", "variants", vars, "rounds", rounds, "roofline",
		      "peak_gflops", 500.0, "peak_gbs", 50.0, "ridge_point", 10.0,
		      "arithmetic_intensity", 2.0, "reference", "gflops", 5.0, "top", "failures",
		      "learnings", "kind", "F", "number", 1, "text", hostile ? hostile : "x");
	return m;
}

static size_t occurrences(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The text of the <svg data-plot=name> element of page. */
static char *plot_of(const char *page, const char *name)
{
	char key[64];
	const char *a, *e;

	snprintf(key, sizeof(key), "data-plot=\"%s\"", name);
	a = strstr(page, key);
	e = a ? strstr(a, "</svg>") : NULL;
	return a && e ? strndup(a, (size_t)(e - a)) : NULL;
}

TEST(scatter_has_one_point_per_evaluated_variant)
{
	json_t *m = model(40, 0, NULL);
	struct sbuf b = SBUF_INIT;
	char *scatter, *roof;

	report_html(m, &b);
	scatter = plot_of(b.buf, "scatter");
	roof = plot_of(b.buf, "roofline");
	CHECK(scatter && roof);
	CHECK(occurrences(scatter ? scatter : "", "<circle class=\"pt ") == 40);
	CHECK(occurrences(scatter ? scatter : "", "class=\"pt s-incorrect\"") == 8);
	/* the roofline draws those that passed */
	CHECK(occurrences(roof ? roof : "", "<circle class=\"pt ") == 32);
	free(scatter);
	scatter = plot_of(b.buf, "progress");
	CHECK(scatter != NULL);
	free(scatter);
	scatter = plot_of(b.buf, "lineage");
	CHECK(scatter && occurrences(scatter, "<circle class=\"node ") == 40);
	/* each variant but the first has its parent drawn: one edge each */
	CHECK(scatter && occurrences(scatter, "class=\"edge\"") == 39);
	free(scatter);
	free(roof);
	sbuf_release(&b);
	json_decref(m);
}

TEST(a_session_where_everything_failed_still_draws_a_page)
{
	json_t *m = model(12, 1, NULL);
	struct sbuf b = SBUF_INIT;
	char *scatter;

	report_html(m, &b);
	scatter = plot_of(b.buf, "scatter");
	CHECK(scatter && occurrences(scatter, "class=\"pt s-incorrect\"") == 12);
	CHECK_CONTAINS(b.buf, "No variant has passed its checks yet");
	free(scatter);
	scatter = plot_of(b.buf, "progress");
	CHECK(!scatter);
	free(scatter);
	CHECK_CONTAINS(b.buf, "</html>");
	sbuf_release(&b);
	json_decref(m);
}

/* Whether word appears inside some tag of page (between a '<' and its '>'). */
static int in_a_tag(const char *page, const char *word)
{
	for (const char *p = strchr(page, '<'); p; p = strchr(p + 1, '<')) {
		const char *e = strchr(p, '>');
		const char *w = strstr(p, word);

		if (w && (!e || w < e))
			return 1;
	}
	return 0;
}

TEST(hostile_text_cannot_add_markup)
{
	const char *evil = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"
			   "\"'&amp;<!-- ]]>";
	json_t *m = model(6, 0, evil);
	struct sbuf b = SBUF_INIT;

	CHECK(m != NULL);
	report_html(m, &b);
	CHECK(!strstr(b.buf, "<script"));
	CHECK(!strstr(b.buf, "<img"));
	CHECK(!in_a_tag(b.buf, "onerror"));
	CHECK(!strstr(b.buf, "<!-- ]]>"));
	CHECK_CONTAINS(b.buf, "&lt;/script&gt;&lt;script&gt;alert(1)");
	CHECK_CONTAINS(b.buf, "&quot;&#39;&amp;amp;&lt;!--");
	/* nothing may be fetched, whatever a text says */
	CHECK_CONTAINS(b.buf, "Content-Security-Policy\" content=\"default-src 'none'");
	sbuf_release(&b);
	json_decref(m);
}

/*
 * text_defang: every control character but tab and newline, C1 ones
 * written as UTF-8 included, becomes one '?'; other text (UTF-8 included)
 * is left as it was.
 */
TEST(defang_leaves_no_terminal_control)
{
	char osc[] = "faster \x1b]0;owned\x07 tiles\x1b[2J\r\x7f";
	char c1[] = "a\xc2\x9b[31mb \xc2\xa0 \xc3\xa9\tt\nu";
	char plain[] = "tile 4x4: +12 % \xe2\x86\x92 fma";

	CHECK(text_defang(osc) == 5);
	CHECK_STR(osc, "faster ?]0;owned? tiles?[2J??");
	CHECK(text_defang(c1) == 1);
	CHECK_STR(c1, "a?[31mb \xc2\xa0 \xc3\xa9\tt\nu");
	CHECK(text_defang(plain) == 0);
	CHECK_STR(plain, "tile 4x4: +12 % \xe2\x86\x92 fma");
	CHECK(text_defang(NULL) == 0);
}

int main(void)
{
	RUN(defang_leaves_no_terminal_control);
	RUN(html_escapes_markup_quotes_controls_and_broken_utf8);
	RUN(renaming_every_file_and_line_and_nothing_else);
	RUN(ranges_pad_and_survive_degenerate_data);
	RUN(ticks_are_round_numbers_inside_the_axis);
	RUN(chart_maps_data_into_its_plot_area);
	RUN(scatter_has_one_point_per_evaluated_variant);
	RUN(a_session_where_everything_failed_still_draws_a_page);
	RUN(hostile_text_cannot_add_markup);
	return test_summary();
}
