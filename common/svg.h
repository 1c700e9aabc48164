/*
 * svg.h - the frame of a chart drawn as inline SVG: two axes (linear or
 * logarithmic) with readable ticks, the mapping from data to the drawing,
 * and the element that encloses it.  What is drawn inside (points, lines,
 * bars) is the caller's: svg_x/svg_y place it.
 *
 * The SVG is meant to sit inside an HTML page (kctl's report.html) and
 * carries classes, not colours: the page's CSS colours it, so one drawing
 * serves light mode, dark mode and print.  Text goes through
 * sbuf_add_html, so no string can add markup.
 */
#ifndef KCTL_SVG_H
#define KCTL_SVG_H

#include "sbuf.h"

struct svg_axis {
	double lo, hi;     /* data range shown; svg_range widens it to ticks */
	int log;           /* base-10 logarithmic (lo must be > 0) */
	const char *label; /* under the x axis, beside the y axis; may be NULL */
};

struct svg_chart {
	struct sbuf *b;
	double w, h;                     /* the viewBox */
	double left, right, top, bottom; /* margins around the plot area */
	struct svg_axis x, y;
};

/*
 * Starts a chart of w x h units into b: <svg> with data-plot=name (what
 * tests and CSS select on), role=img and title as its accessible name.
 * Sets default margins; the axes' ranges must be set (svg_range) before
 * svg_axes, svg_x and svg_y are used.
 */
void svg_begin(struct svg_chart *c, struct sbuf *b, const char *name, const char *title, double w,
	       double h);
/*
 * Sets axis a to cover the finite values lo..hi (in either order), padded
 * a little; an empty or one-value range becomes a small one around it.  A
 * log axis ignores values <= 0; with none left it covers 0.1..10.
 */
void svg_range(struct svg_axis *a, double lo, double hi, int log);
/* Draws the grid, the ticks with their numbers, and the axes' labels. */
void svg_axes(struct svg_chart *c);
/* The drawing coordinates of data value v on each axis (clamped to the plot area). */
double svg_x(const struct svg_chart *c, double v);
double svg_y(const struct svg_chart *c, double v);
/* Closes the <svg>. */
void svg_end(struct svg_chart *c);

/* The tick values of axis a, ascending, into t (room for max); their count. */
int svg_ticks(const struct svg_axis *a, double *t, int max);

/* A short number for a tick or a label: 3 significant digits, no trailing zeros. */
void svg_num(struct sbuf *b, double v);

#endif
