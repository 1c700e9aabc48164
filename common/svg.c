/*
 * svg.c - chart frames as inline SVG (svg.h).
 */
#include "svg.h"

#include <math.h>

/* At most this many ticks on an axis: enough to read, few enough to not collide. */
#define SVG_TICKS_MAX 12

void svg_begin(struct svg_chart *c, struct sbuf *b, const char *name, const char *title, double w,
	       double h)
{
	c->b = b;
	c->w = w;
	c->h = h;
	c->left = 64;
	c->right = 16;
	c->top = 12;
	c->bottom = 44;
	sbuf_adds(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" data-plot=\"");
	sbuf_add_html(b, name);
	sbuf_addf(b, "\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"", w, h);
	sbuf_add_html(b, title);
	sbuf_adds(b, "\"><title>");
	sbuf_add_html(b, title);
	sbuf_adds(b, "</title>\n");
}

void svg_range(struct svg_axis *a, double lo, double hi, int log)
{
	double t;

	a->log = log;
	if (lo > hi) {
		t = lo;
		lo = hi;
		hi = t;
	}
	if (log) {
		if (!(hi > 0) || !isfinite(hi)) {
			lo = 0.1;
			hi = 10;
		} else if (!(lo > 0) || !isfinite(lo)) {
			lo = hi / 10;
		}
		if (hi / lo < 1.5) {
			lo /= 1.5;
			hi *= 1.5;
		}
		a->lo = lo / 1.15;
		a->hi = hi * 1.15;
		return;
	}
	if (!isfinite(lo) || !isfinite(hi)) {
		lo = isfinite(lo) ? lo : isfinite(hi) ? hi : 0;
		hi = lo;
	}
	if (hi - lo <= 1e-12 * fmax(fabs(lo), fabs(hi))) {
		t = lo ? fabs(lo) * 0.1 : 1;
		lo -= t;
		hi += t;
	}
	t = (hi - lo) * 0.05;
	a->lo = lo - t;
	a->hi = hi + t;
}

static double frac(const struct svg_axis *a, double v)
{
	double f;

	if (a->log)
		f = v > 0 ? (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo)) : 0;
	else
		f = (v - a->lo) / (a->hi - a->lo);
	if (!isfinite(f))
		return 0;
	return f < 0 ? 0 : f > 1 ? 1 : f;
}

double svg_x(const struct svg_chart *c, double v)
{
	return c->left + frac(&c->x, v) * (c->w - c->left - c->right);
}

double svg_y(const struct svg_chart *c, double v)
{
	return c->h - c->bottom - frac(&c->y, v) * (c->h - c->top - c->bottom);
}

void svg_num(struct sbuf *b, double v)
{
	double a = fabs(v);

	if (!isfinite(v))
		sbuf_adds(b, "-");
	else if (a >= 1e6 || (a && a < 1e-3))
		sbuf_addf(b, "%.2g", v);
	else
		sbuf_addf(b, "%.3g", v);
}

/* 1, 2 or 5 times a power of ten, the smallest at least x. */
static double nice_step(double x)
{
	double p = pow(10, floor(log10(x))), m = x / p;

	return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

/* The tick values of a, ascending, into t (at most SVG_TICKS_MAX); their count. */
static int ticks_max(const struct svg_axis *a, double *t)
{
	int n = 0;

	if (a->log) {
		static const double steps[][3] = { { 1, 0, 0 }, { 1, 3, 0 }, { 1, 2, 5 } };
		double e0 = floor(log10(a->lo)), e1 = ceil(log10(a->hi));

		for (int k = 0; k < 3 && n < 3; k++) {
			n = 0;
			for (double e = e0; e <= e1 && n < SVG_TICKS_MAX; e++)
				for (int j = 0; j < 3 && steps[k][j] && n < SVG_TICKS_MAX; j++) {
					double v = steps[k][j] * pow(10, e);

					if (v >= a->lo && v <= a->hi)
						t[n++] = v;
				}
		}
		if (n >= 2)
			return n;
		/* less than a decade: linear ticks read better */
	}
	{
		double step = nice_step((a->hi - a->lo) / 5), v = ceil(a->lo / step) * step;

		for (n = 0; v <= a->hi + step * 1e-9 && n < SVG_TICKS_MAX; v += step)
			if (!a->log || v > 0)
				t[n++] = fabs(v) < step * 1e-9 ? 0 : v;
	}
	return n;
}

int svg_ticks(const struct svg_axis *a, double *t, int max)
{
	double all[SVG_TICKS_MAX];
	int n = ticks_max(a, all);

	if (n > max)
		n = max;
	for (int i = 0; i < n; i++)
		t[i] = all[i];
	return n;
}

void svg_axes(struct svg_chart *c)
{
	double t[SVG_TICKS_MAX], x0 = c->left, x1 = c->w - c->right;
	double y0 = c->h - c->bottom, y1 = c->top;
	int n;

	sbuf_adds(c->b, "<g class=\"axes\">");
	n = ticks_max(&c->x, t);
	for (int i = 0; i < n; i++) {
		double x = svg_x(c, t[i]);

		sbuf_addf(c->b,
			  "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
			  "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
			  x, y0, x, y1, x, y0 + 14);
		svg_num(c->b, t[i]);
		sbuf_adds(c->b, "</text>");
	}
	n = ticks_max(&c->y, t);
	for (int i = 0; i < n; i++) {
		double y = svg_y(c, t[i]);

		sbuf_addf(c->b,
			  "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
			  "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">",
			  x0, y, x1, y, x0 - 4, y + 4);
		svg_num(c->b, t[i]);
		sbuf_adds(c->b, "</text>");
	}
	sbuf_addf(c->b, "<path class=\"axis\" d=\"M%.1f %.1fV%.1fH%.1f\"/>", x0, y1, y0, x1);
	if (c->x.label) {
		sbuf_addf(c->b,
			  "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
			  (x0 + x1) / 2, c->h - 8);
		sbuf_add_html(c->b, c->x.label);
		sbuf_adds(c->b, "</text>");
	}
	if (c->y.label) {
		sbuf_addf(c->b,
			  "<text class=\"label\" transform=\"translate(14 %.1f) rotate(-90)\" "
			  "text-anchor=\"middle\">",
			  (y0 + y1) / 2);
		sbuf_add_html(c->b, c->y.label);
		sbuf_adds(c->b, "</text>");
	}
	sbuf_adds(c->b, "</g>\n");
}

void svg_end(struct svg_chart *c)
{
	sbuf_adds(c->b, "</svg>\n");
}
