/*
 * report-plots.c - the charts of report.html (report-internal.h), as
 * inline SVG drawn from report_model's object.  Sizes stay bounded for
 * sessions of many thousand variants: lines keep only the points where
 * they change, the roofline draws at most ROOF_POINTS_MAX variants and the
 * lineage tree, past TREE_NODES_MAX, only the ancestry of the fastest.
 */
#include "report-internal.h"
#include "svg.h"
#include "xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ROOF_POINTS_MAX  2000
#define TREE_NODES_MAX   600
#define TREE_ANCESTRY_OF 100
/* Categories a stacked bar keeps apart; the rest are counted as "other". */
#define COUNTS_MAX 9
/* Classes l0..l7 and k0..k7 of the page's palette. */
#define PALETTE 8

/* The statuses and proposers the legends name, in their order. */
static const char *const statuses[] = {
	"ok",      "incorrect", "compile_error", "runtime_error", "crash", "timeout", "infra_error",
	"invalid", NULL,
};
static const char *const origins[] = { "start", "tune", "sweep", "model", NULL };

double report_num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

const char *report_str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

void report_class(struct sbuf *b, const char *prefix, const char *word)
{
	size_t n = strspn(word, "abcdefghijklmnopqrstuvwxyz0123456789_");

	sbuf_adds(b, prefix);
	sbuf_adds(b, n && !word[n] && n < 32 ? word : "other");
}

static void empty(struct sbuf *b, const char *why)
{
	sbuf_adds(b, "<p class=\"empty\">");
	sbuf_add_html(b, why);
	sbuf_adds(b, "</p>\n");
}

/*
 * A legend in the chart's right margin: one row per word of words (NULL
 * ends it) that some element of arr has as its key's value, a dot of class
 * prefix+word and the word.  The right margin must be wide enough.
 */
static void legend(struct svg_chart *c, json_t *arr, const char *key, const char *prefix,
		   const char *const *words)
{
	double y = c->top;

	for (size_t i = 0; words[i]; i++) {
		json_t *v;
		size_t j;
		int seen = 0;

		json_array_foreach (arr, j, v) {
			const char *w = report_str(v, key);

			if (!strcmp(w, words[i]) || (!strcmp(words[i], "other") && *w &&
						     !strspn(w, "abcdefghijklmnopqrstuvwxyz_"))) {
				seen = 1;
				break;
			}
		}
		if (!seen)
			continue;
		sbuf_adds(c->b, "<circle class=\"key ");
		report_class(c->b, prefix, words[i]);
		sbuf_addf(c->b, "\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\"/>", c->w - c->right + 14,
			  y + 5);
		sbuf_addf(c->b, "<text class=\"legend\" x=\"%.1f\" y=\"%.1f\">%s</text>\n",
			  c->w - c->right + 24, y + 9, words[i]);
		y += 16;
	}
}

/* " · 1.23x · 45.6 GFLOP/s" of an evaluated variant. */
static void figures(struct sbuf *b, json_t *v)
{
	if (isfinite(report_num(v, "speedup_ref")))
		sbuf_addf(b, " · %.3gx vs reference", report_num(v, "speedup_ref"));
	if (isfinite(report_num(v, "gflops")))
		sbuf_addf(b, " · %.4g GFLOP/s", report_num(v, "gflops"));
	if (isfinite(report_num(v, "median_ms")))
		sbuf_addf(b, " · %.4g ms", report_num(v, "median_ms"));
}

/* <title>id · status · figures · rationale</title> */
static void point_title(struct sbuf *b, json_t *v)
{
	struct sbuf t = SBUF_INIT;
	const char *why = report_str(v, "rationale");

	sbuf_addf(&t, "%s · round %lld · %s", report_str(v, "id"),
		  (long long)json_integer_value(json_object_get(v, "round")),
		  *report_str(v, "status") ? report_str(v, "status") : "not evaluated");
	figures(&t, v);
	if (*report_str(v, "fault_kind"))
		sbuf_addf(&t, " · %s", report_str(v, "fault_kind"));
	if (*why)
		sbuf_addf(&t, " · %.160s", why);
	sbuf_adds(b, "<title>");
	sbuf_add_html(b, t.buf ? t.buf : "");
	sbuf_adds(b, "</title>");
	sbuf_release(&t);
}

static int is_ok(json_t *v)
{
	return !strcmp(report_str(v, "status"), "ok") && report_num(v, "speedup_ref") > 0;
}

/* --- best over evaluations ---------------------------------------------- */

struct line {
	long long lineage;
	double best;
	struct sbuf d;
};

static struct line *line_of(struct line **ls, size_t *n, long long lineage)
{
	for (size_t i = 0; i < *n; i++)
		if ((*ls)[i].lineage == lineage)
			return &(*ls)[i];
	*ls = xrealloc(*ls, (*n + 1) * sizeof(**ls));
	(*ls)[*n] = (struct line){ .lineage = lineage, .best = 0, .d = SBUF_INIT };
	return &(*ls)[(*n)++];
}

/* Moves a step line to (x, y): across at the old height, then up. */
static void step_to(struct sbuf *d, double x, double y)
{
	if (!d->len)
		sbuf_addf(d, "M%.1f %.1f", x, y);
	else
		sbuf_addf(d, "H%.1fV%.1f", x, y);
}

static void right_axis(struct svg_chart *c, double ref_gflops)
{
	double t[12];
	int n = svg_ticks(&c->y, t, 12);

	if (!(ref_gflops > 0))
		return;
	sbuf_adds(c->b, "<g class=\"axes\">");
	for (int i = 0; i < n; i++) {
		sbuf_addf(c->b, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\">", c->w - c->right + 4,
			  svg_y(c, t[i]) + 4);
		svg_num(c->b, t[i] * ref_gflops);
		sbuf_adds(c->b, "</text>");
	}
	sbuf_addf(c->b,
		  "<text class=\"label\" transform=\"translate(%.1f %.1f) rotate(90)\" "
		  "text-anchor=\"middle\">GFLOP/s</text></g>\n",
		  c->w - 8, (c->top + c->h - c->bottom) / 2);
}

void report_plot_progress(json_t *m, struct sbuf *b)
{
	json_t *vars = json_object_get(m, "variants"), *v;
	struct line *ls = NULL, all = { .best = 0, .d = SBUF_INIT };
	struct sbuf marks = SBUF_INIT;
	struct svg_chart c;
	double lo = INFINITY, hi = 0, e = 0;
	size_t i, nl = 0;

	json_array_foreach (vars, i, v)
		if (is_ok(v)) {
			lo = fmin(lo, report_num(v, "speedup_ref"));
			hi = fmax(hi, report_num(v, "speedup_ref"));
		}
	if (!(hi > 0))
		return empty(b, "No variant has passed its checks yet: no progress to draw.");
	svg_begin(&c, b, "progress", "Best speedup over evaluations, per lineage", 760, 320);
	c.right = 64;
	svg_range(&c.x, 1, (double)json_array_size(vars), 0);
	svg_range(&c.y, lo, hi, 1);
	c.x.label = "evaluations (in the order they were proposed)";
	c.y.label = "speedup vs reference (x)";
	svg_axes(&c);
	right_axis(&c, report_num(json_object_get(m, "reference"), "gflops"));
	json_array_foreach (vars, i, v) {
		double s = report_num(v, "speedup_ref");
		json_t *lin = json_object_get(v, "lineage");
		struct line *l;

		if (!*report_str(v, "status"))
			continue;
		e++;
		if (!is_ok(v))
			continue;
		l = line_of(&ls, &nl, json_is_integer(lin) ? json_integer_value(lin) : -1);
		if (s > l->best) {
			l->best = s;
			step_to(&l->d, svg_x(&c, e), svg_y(&c, s));
		}
		if (s > all.best) {
			all.best = s;
			step_to(&all.d, svg_x(&c, e), svg_y(&c, s));
			sbuf_addf(&marks, "<circle class=\"step\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\">",
				  svg_x(&c, e), svg_y(&c, s));
			point_title(&marks, v);
			sbuf_adds(&marks, "</circle>");
		}
	}
	for (i = 0; i < nl; i++) {
		sbuf_addf(b,
			  "<path class=\"lin l%lld\" d=\"%sH%.1f\"><title>lineage %lld: best "
			  "%.3gx</title></path>\n",
			  ((ls[i].lineage % PALETTE) + PALETTE) % PALETTE, ls[i].d.buf,
			  svg_x(&c, e), ls[i].lineage, ls[i].best);
		sbuf_release(&ls[i].d);
	}
	sbuf_addf(b, "<path class=\"best\" d=\"%sH%.1f\"/>\n<g class=\"steps\">%s</g>\n", all.d.buf,
		  svg_x(&c, e), marks.buf);
	svg_end(&c);
	free(ls);
	sbuf_release(&all.d);
	sbuf_release(&marks);
}

/* --- every variant by round --------------------------------------------- */

void report_plot_scatter(json_t *m, struct sbuf *b)
{
	json_t *vars = json_object_get(m, "variants"), *v;
	long long last = 0, *in_round, *seen;
	double lo = INFINITY, hi = 0, lane = 22;
	struct svg_chart c;
	size_t i, evaluated = 0;

	json_array_foreach (vars, i, v) {
		last = json_integer_value(json_object_get(v, "round")) > last
			       ? json_integer_value(json_object_get(v, "round"))
			       : last;
		evaluated += !!*report_str(v, "status");
		if (is_ok(v)) {
			lo = fmin(lo, report_num(v, "speedup_ref"));
			hi = fmax(hi, report_num(v, "speedup_ref"));
		}
	}
	if (!evaluated)
		return empty(b, "No variant has been evaluated yet.");
	in_round = xcalloc((size_t)last + 1, sizeof(*in_round));
	seen = xcalloc((size_t)last + 1, sizeof(*seen));
	json_array_foreach (vars, i, v)
		if (*report_str(v, "status"))
			in_round[json_integer_value(json_object_get(v, "round"))]++;
	svg_begin(&c, b, "scatter", "Every variant by round, coloured by status", 760, 340);
	c.top = 44;
	c.right = 120;
	/* rounds are whole numbers: no padding beyond half a round */
	c.x = (struct svg_axis){ .lo = -0.5, .hi = (double)last + 0.5 };
	svg_range(&c.y, lo, hi, 1);
	c.x.label = "round";
	c.y.label = "speedup vs reference (x)";
	svg_axes(&c);
	sbuf_addf(b,
		  "<text class=\"lane\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">failed</text>"
		  "<line class=\"lane\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
		  c.left - 4, lane + 4, c.left, lane + 12, c.w - c.right, lane + 12);
	json_array_foreach (vars, i, v) {
		long long r = json_integer_value(json_object_get(v, "round"));
		double k, n, x, y;

		if (!*report_str(v, "status"))
			continue;
		k = (double)seen[r]++;
		n = (double)in_round[r];
		x = svg_x(&c, (double)r + (n > 1 ? (k / (n - 1) - 0.5) * 0.7 : 0));
		/* failed: spread a little in their lane so that they do not all coincide */
		y = is_ok(v) ? svg_y(&c, report_num(v, "speedup_ref"))
			     : lane + (double)((i * 7) % 11) - 5;
		sbuf_adds(b, "<circle class=\"pt ");
		report_class(b, "s-", report_str(v, "status"));
		sbuf_addf(b, "\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\">", x, y);
		point_title(b, v);
		sbuf_adds(b, "</circle>\n");
	}
	legend(&c, vars, "status", "s-", statuses);
	svg_end(&c);
	free(in_round);
	free(seen);
}

/* --- the roofline ------------------------------------------------------- */

static int by_gflops_desc(const void *a, const void *b)
{
	double x = report_num(*(json_t *const *)a, "gflops");
	double y = report_num(*(json_t *const *)b, "gflops");

	return (x < y) - (x > y);
}

static double intensity(json_t *v, double dflt)
{
	double f = report_num(v, "gflops"), g = report_num(v, "gbs");

	return f > 0 && g > 0 ? f / g : dflt;
}

static void roof_label(struct svg_chart *c, double x, double y, const char *cls, const char *text)
{
	sbuf_addf(c->b, "<text class=\"%s\" x=\"%.1f\" y=\"%.1f\">", cls, x, y);
	sbuf_add_html(c->b, text);
	sbuf_adds(c->b, "</text>\n");
}

void report_plot_roofline(json_t *m, struct sbuf *b)
{
	json_t *roof = json_object_get(m, "roofline"), *vars = json_object_get(m, "variants"), *v;
	double pf = report_num(roof, "peak_gflops"), pb = report_num(roof, "peak_gbs");
	double ai0 = report_num(roof, "arithmetic_intensity"), ridge = pf / pb;
	double ref = report_num(json_object_get(m, "reference"), "gflops");
	double xlo, xhi, ylo = isfinite(ref) && ref > 0 ? ref : pf;
	const char *wid = report_str(json_object_get(m, "winner"), "variant");
	json_t **ok = xcalloc(json_array_size(vars) + 1, sizeof(*ok));
	struct svg_chart c;
	char label[160];
	size_t i, n = 0;

	if (!(pf > 0) || !(pb > 0)) {
		free(ok);
		return empty(b, "No roofline: no evaluated variant reported the device's peaks.");
	}
	xlo = xhi = isfinite(ai0) && ai0 > 0 ? ai0 : ridge;
	json_array_foreach (vars, i, v)
		if (is_ok(v) && report_num(v, "gflops") > 0)
			ok[n++] = v;
	qsort(ok, n, sizeof(*ok), by_gflops_desc);
	if (n > ROOF_POINTS_MAX)
		n = ROOF_POINTS_MAX;
	for (i = 0; i < n; i++) {
		xlo = fmin(xlo, intensity(ok[i], ai0));
		xhi = fmax(xhi, intensity(ok[i], ai0));
		ylo = fmin(ylo, report_num(ok[i], "gflops"));
	}
	xlo = fmin(xlo, ridge) / 4;
	xhi = fmax(xhi, ridge) * 4;
	svg_begin(&c, b, "roofline",
		  "Roofline: every variant that passed against the device's peaks", 760, 360);
	svg_range(&c.x, xlo, xhi, 1);
	svg_range(&c.y, ylo / 2, pf * 1.5, 1);
	c.x.label = "arithmetic intensity (FLOP/byte)";
	c.y.label = "GFLOP/s";
	svg_axes(&c);
	sbuf_addf(b, "<path class=\"roof\" d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1f\"/>\n",
		  svg_x(&c, c.x.lo), svg_y(&c, c.x.lo * pb), svg_x(&c, ridge), svg_y(&c, pf),
		  svg_x(&c, c.x.hi), svg_y(&c, pf));
	snprintf(label, sizeof(label), "compute peak %.4g GFLOP/s", pf);
	roof_label(&c, svg_x(&c, ridge) + 6, svg_y(&c, pf) - 6, "rooflabel", label);
	snprintf(label, sizeof(label), "memory %.4g GB/s", pb);
	roof_label(&c, svg_x(&c, c.x.lo) + 6, svg_y(&c, c.x.lo * pb) - 8, "rooflabel", label);
	for (i = n; i-- > 0;) {
		int win = !strcmp(report_str(ok[i], "id"), wid);

		sbuf_addf(b, "<circle class=\"pt s-ok%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%d\">",
			  win ? " win" : "", svg_x(&c, intensity(ok[i], ai0)),
			  svg_y(&c, report_num(ok[i], "gflops")), win ? 6 : 3);
		point_title(b, ok[i]);
		sbuf_adds(b, "</circle>\n");
		if (win)
			roof_label(&c, svg_x(&c, intensity(ok[i], ai0)) + 8,
				   svg_y(&c, report_num(ok[i], "gflops")) + 4, "pointlabel",
				   report_str(ok[i], "id"));
	}
	if (ref > 0) {
		double x = svg_x(&c, isfinite(ai0) && ai0 > 0 ? ai0 : ridge), y = svg_y(&c, ref);

		snprintf(label, sizeof(label), "reference: %.4g GFLOP/s", ref);
		sbuf_addf(b, "<rect class=\"ref\" x=\"%.1f\" y=\"%.1f\" width=\"8\" height=\"8\">",
			  x - 4, y - 4);
		sbuf_adds(b, "<title>");
		sbuf_add_html(b, label);
		sbuf_adds(b, "</title></rect>\n");
		sbuf_addf(b,
			  "<text class=\"pointlabel\" x=\"%.1f\" y=\"%.1f\" "
			  "text-anchor=\"end\">reference</text>\n",
			  x - 8, y + 4);
	}
	svg_end(&c);
	if (json_array_size(vars) && n == ROOF_POINTS_MAX)
		sbuf_addf(b, "<p class=\"note\">The %d fastest variants are drawn.</p>\n",
			  ROOF_POINTS_MAX);
	free(ok);
}

/* --- the lineage tree --------------------------------------------------- */

struct node {
	json_t *v;
	long long round, parent; /* parent: index in the node table, -1 if none */
	double x, y;
	int keep;
};

static int by_speedup_desc(const void *a, const void *b)
{
	double x = report_num(((const struct node *)a)->v, "speedup_ref");
	double y = report_num(((const struct node *)b)->v, "speedup_ref");

	x = isfinite(x) ? x : -1;
	y = isfinite(y) ? y : -1;
	return (x < y) - (x > y);
}

/* Past TREE_NODES_MAX variants, keeps the ancestry of the fastest TREE_ANCESTRY_OF. */
static size_t tree_keep(struct node *ns, size_t n)
{
	struct node *order;
	size_t i, kept = 0;

	for (i = 0; i < n; i++)
		ns[i].keep = n <= TREE_NODES_MAX;
	if (n <= TREE_NODES_MAX)
		return n;
	order = xcalloc(n, sizeof(*order));
	for (i = 0; i < n; i++) {
		order[i] = ns[i];
		order[i].parent = (long long)i; /* its place in ns */
	}
	qsort(order, n, sizeof(*order), by_speedup_desc);
	for (i = 0; i < n && i < TREE_ANCESTRY_OF; i++)
		for (long long j = order[i].parent; j >= 0 && !ns[j].keep; j = ns[j].parent)
			ns[j].keep = 1;
	free(order);
	for (i = 0; i < n; i++)
		kept += ns[i].keep;
	return kept;
}

struct slot {
	double key; /* the parent's height, so that siblings sit together */
	size_t i;
};

static int by_key(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

/* Each kept node's place: its round's column, ordered by where its parent sits. */
static void tree_place(struct node *ns, size_t n, long long last, const long long *rows,
		       const struct svg_chart *c)
{
	struct slot *s = xcalloc(n + 1, sizeof(*s));
	size_t *at = xcalloc((size_t)last + 2, sizeof(*at)), k;

	/* the kept nodes by round: round r's are s[at[r]] .. s[at[r + 1] - 1] */
	for (long long r = 0; r <= last; r++)
		at[r + 1] = at[r] + (size_t)rows[r];
	for (size_t i = 0; i < n; i++)
		if (ns[i].keep)
			s[at[ns[i].round]++].i = i;
	for (long long r = last; r >= 0; r--)
		at[r + 1] = at[r];
	at[0] = 0;
	for (long long r = 0; r <= last; r++) {
		struct slot *sr = s + at[r];

		/* parents are in earlier rounds: already placed */
		for (k = 0; k < (size_t)rows[r]; k++) {
			struct node *v = &ns[sr[k].i];

			sr[k].key = v->parent >= 0 && ns[v->parent].keep ? ns[v->parent].y : -1;
		}
		qsort(sr, (size_t)rows[r], sizeof(*sr), by_key);
		for (k = 0; k < (size_t)rows[r]; k++) {
			ns[sr[k].i].x = svg_x(c, (double)r);
			ns[sr[k].i].y = svg_y(c, 1 - ((double)k + 0.5) / (double)rows[r]);
		}
	}
	free(at);
	free(s);
}

void report_plot_lineage(json_t *m, struct sbuf *b)
{
	json_t *vars = json_object_get(m, "variants"), *index = json_object(), *v;
	size_t i, n = json_array_size(vars), kept;
	struct node *ns = xcalloc(n + 1, sizeof(*ns));
	long long last = 0, *rows, most = 1;
	const char *wid = report_str(json_object_get(m, "winner"), "variant");
	struct svg_chart c;
	double h;

	json_array_foreach (vars, i, v) {
		json_t *p = json_object_get(index, report_str(v, "parent"));

		ns[i] = (struct node){ .v = v,
				       .round = json_integer_value(json_object_get(v, "round")),
				       .parent = p ? (long long)json_integer_value(p) : -1 };
		json_object_set_new(index, report_str(v, "id"), json_integer((json_int_t)i));
		last = ns[i].round > last ? ns[i].round : last;
	}
	json_decref(index);
	if (!n) {
		free(ns);
		return empty(b, "No variants yet.");
	}
	kept = tree_keep(ns, n);
	rows = xcalloc((size_t)last + 1, sizeof(*rows));
	for (i = 0; i < n; i++)
		if (ns[i].keep && ++rows[ns[i].round] > most)
			most = rows[ns[i].round];
	h = fmin(1200, fmax(200, 70 + 9.0 * (double)most));
	svg_begin(&c, b, "lineage", "Lineage tree: who descends from whom, by proposer", 760, h);
	c.right = 100;
	c.x = (struct svg_axis){ .lo = -0.5, .hi = (double)last + 0.5, .label = "round" };
	c.y = (struct svg_axis){ .lo = 0, .hi = 1 };
	for (long long r = 0; r <= last; r++)
		sbuf_addf(b,
			  "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" "
			  "text-anchor=\"middle\">%lld</text>",
			  svg_x(&c, (double)r), h - c.bottom + 16, r);
	sbuf_addf(
		b,
		"<text class=\"label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">round</text>\n",
		(c.left + c.w - c.right) / 2, h - 8);
	tree_place(ns, n, last, rows, &c);
	sbuf_adds(b, "<g class=\"edges\">");
	for (i = 0; i < n; i++)
		if (ns[i].keep && ns[i].parent >= 0 && ns[ns[i].parent].keep)
			sbuf_addf(b, "<path class=\"edge\" d=\"M%.1f %.1fL%.1f %.1f\"/>",
				  ns[ns[i].parent].x, ns[ns[i].parent].y, ns[i].x, ns[i].y);
	sbuf_adds(b, "</g>\n");
	for (i = 0; i < n; i++) {
		int win;

		if (!ns[i].keep)
			continue;
		win = !strcmp(report_str(ns[i].v, "id"), wid);
		sbuf_adds(b, "<circle class=\"node ");
		report_class(b, "o-", report_str(ns[i].v, "origin"));
		sbuf_adds(b, " ");
		report_class(b, "s-",
			     *report_str(ns[i].v, "status") ? report_str(ns[i].v, "status")
							    : "pending");
		sbuf_addf(b, "%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%d\">", win ? " win" : "", ns[i].x,
			  ns[i].y, win ? 6 : 3);
		point_title(b, ns[i].v);
		sbuf_adds(b, "</circle>\n");
	}
	legend(&c, vars, "origin", "o-", origins);
	svg_end(&c);
	if (kept < n)
		sbuf_addf(b,
			  "<p class=\"note\">%zu of %zu variants drawn: the ancestry of the %d "
			  "fastest.</p>\n",
			  kept, n, TREE_ANCESTRY_OF);
	free(rows);
	free(ns);
}

/* --- counts per round --------------------------------------------------- */

/* The categories of key over all rounds, most frequent first, at most COUNTS_MAX. */
static json_t *categories(json_t *rounds, const char *key)
{
	json_t *tot = json_object(), *r, *val, *out = json_array();
	const char *k;
	size_t i;

	json_array_foreach (rounds, i, r)
		json_object_foreach (json_object_get(r, key), k, val)
			json_object_set_new(
				tot, k,
				json_integer(json_integer_value(json_object_get(tot, k)) +
					     json_integer_value(val)));
	while (json_object_size(tot) && json_array_size(out) < COUNTS_MAX) {
		const char *best = NULL;
		json_int_t most = -1;

		json_object_foreach (tot, k, val)
			if (json_integer_value(val) > most) {
				most = json_integer_value(val);
				best = k;
			}
		json_array_append_new(out, json_string(best));
		json_object_del(tot, best);
	}
	json_decref(tot);
	return out;
}

static void count_class(struct sbuf *b, const char *key, const char *cat, size_t idx)
{
	if (!strcmp(key, "statuses"))
		report_class(b, "s-", cat);
	else
		sbuf_addf(b, "k%zu", idx % PALETTE);
}

void report_plot_counts(json_t *m, const char *key, const char *title, struct sbuf *b)
{
	json_t *rounds = json_object_get(m, "rounds"), *cats = categories(rounds, key), *r, *cat;
	double most = 0, bw;
	struct svg_chart c;
	size_t i, j;

	json_array_foreach (rounds, i, r) {
		double t = 0;
		const char *k;
		json_t *val;

		json_object_foreach (json_object_get(r, key), k, val)
			t += (double)json_integer_value(val);
		most = fmax(most, t);
	}
	if (!json_array_size(cats)) {
		json_decref(cats);
		sbuf_adds(b, "<p class=\"empty\">");
		sbuf_add_html(b, title);
		sbuf_adds(b, ": none recorded.</p>\n");
		return;
	}
	svg_begin(&c, b, key, title, 760, 240);
	c.right = 140;
	c.x = (struct svg_axis){ .lo = -0.5,
				 .hi = (double)json_array_size(rounds) - 0.5,
				 .label = "round" };
	svg_range(&c.y, 0, most, 0);
	c.y.lo = 0;
	c.y.label = "variants";
	svg_axes(&c);
	bw = fmax(1, (c.w - c.left - c.right) / (double)json_array_size(rounds) * 0.7);
	json_array_foreach (rounds, i, r) {
		double base = 0, x = svg_x(&c, (double)i) - bw / 2, other = 0;
		const char *k;
		json_t *val;

		json_object_foreach (json_object_get(r, key), k, val) {
			int listed = 0;

			json_array_foreach (cats, j, cat)
				listed |= !strcmp(json_string_value(cat), k);
			if (!listed)
				other += (double)json_integer_value(val);
		}
		for (j = 0; j <= json_array_size(cats); j++) {
			const char *name = j < json_array_size(cats)
						   ? json_string_value(json_array_get(cats, j))
						   : "other";
			double cnt = j < json_array_size(cats)
					     ? (double)json_integer_value(json_object_get(
						       json_object_get(r, key), name))
					     : other;

			if (!(cnt > 0))
				continue;
			sbuf_adds(b, "<rect class=\"bar ");
			count_class(b, key, name, j);
			sbuf_addf(b,
				  "\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"><title>",
				  x, svg_y(&c, base + cnt), bw,
				  svg_y(&c, base) - svg_y(&c, base + cnt));
			sbuf_addf(b, "round %lld: %.0f ",
				  (long long)json_integer_value(json_object_get(r, "round")), cnt);
			sbuf_add_html(b, name);
			sbuf_adds(b, "</title></rect>\n");
			base += cnt;
		}
	}
	json_array_foreach (cats, j, cat) {
		double y = c.top + 16 * (double)j;

		sbuf_adds(b, "<rect class=\"bar ");
		count_class(b, key, json_string_value(cat), j);
		sbuf_addf(b, "\" x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\"/>",
			  c.w - c.right + 10, y);
		sbuf_addf(b, "<text class=\"legend\" x=\"%.1f\" y=\"%.1f\">", c.w - c.right + 24,
			  y + 9);
		sbuf_add_html(b, json_string_value(cat));
		sbuf_adds(b, "</text>\n");
	}
	svg_end(&c);
	json_decref(cats);
}

/* --- timing spread of the top variants ---------------------------------- */

void report_plot_timing(json_t *m, struct sbuf *b)
{
	json_t *top = json_object_get(m, "top"), *v;
	const char *wid = report_str(json_object_get(m, "winner"), "variant");
	double lo = INFINITY, hi = 0, y;
	struct svg_chart c;
	size_t i, rows = 0;

	json_array_foreach (top, i, v) {
		json_t *s = json_object_get(v, "stats");

		if (report_num(s, "min") > 0 && report_num(s, "max") > 0) {
			lo = fmin(lo, report_num(s, "min"));
			hi = fmax(hi, report_num(s, "max"));
			rows++;
		}
	}
	if (!rows)
		return empty(b, "No timings: no variant has passed its checks yet.");
	svg_begin(&c, b, "timing", "Timing spread of the top variants", 760,
		  60 + 26 * (double)rows);
	c.left = 110;
	svg_range(&c.x, lo, hi, 0);
	c.y = (struct svg_axis){ .lo = 0, .hi = (double)rows };
	c.x.label = "time per run (ms): min to max, quartiles boxed, median marked";
	svg_axes(&c);
	y = 0;
	json_array_foreach (top, i, v) {
		json_t *s = json_object_get(v, "stats");
		double yc, cv = report_num(v, "robust_cv");
		struct sbuf t = SBUF_INIT;

		if (!(report_num(s, "min") > 0 && report_num(s, "max") > 0))
			continue;
		yc = svg_y(&c, (double)rows - y - 0.5);
		y++;
		sbuf_addf(
			&t,
			"%s: median %.4g ms, quartiles %.4g to %.4g, min %.4g, max %.4g, %lld runs",
			report_str(v, "id"), report_num(s, "median"), report_num(s, "p25"),
			report_num(s, "p75"), report_num(s, "min"), report_num(s, "max"),
			(long long)json_integer_value(json_object_get(s, "n")));
		if (isfinite(cv))
			sbuf_addf(&t, "; robust CV %.1f%% (%s), the noise the ranking used",
				  cv * 100, report_str(v, "quality"));
		sbuf_addf(b, "<g class=\"box%s\"><title>",
			  strcmp(report_str(v, "id"), wid) ? "" : " win");
		sbuf_add_html(b, t.buf);
		sbuf_addf(
			b,
			"</title><path class=\"whisker\" d=\"M%.1f %.1fH%.1fM%.1f %.1fv8M%.1f "
			"%.1fv8\"/>"
			"<rect class=\"iqr\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"12\"/>"
			"<path class=\"median\" d=\"M%.1f %.1fv16\"/>",
			svg_x(&c, report_num(s, "min")), yc, svg_x(&c, report_num(s, "max")),
			svg_x(&c, report_num(s, "min")), yc - 4, svg_x(&c, report_num(s, "max")),
			yc - 4, svg_x(&c, report_num(s, "p25")), yc - 6,
			fmax(1, svg_x(&c, report_num(s, "p75")) - svg_x(&c, report_num(s, "p25"))),
			svg_x(&c, report_num(s, "median")), yc - 8);
		sbuf_addf(b, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">",
			  c.left - 6, yc + 4);
		sbuf_add_html(b, report_str(v, "id"));
		sbuf_adds(b, "</text></g>\n");
		sbuf_release(&t);
	}
	svg_end(&c);
}
