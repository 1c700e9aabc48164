/*
 * stats.h - summary statistics of timing samples.
 */
#ifndef EVALPOD_STATS_H
#define EVALPOD_STATS_H

#include <jansson.h>
#include <stddef.h>

struct stats {
	size_t n;
	double min, max, mean, stdev; /* stdev: sample (n-1) */
	double p25, median, p75, iqr;
	double cv; /* stdev / mean; 0 when n < 2 */
	double sum;
};

/*
 * Summarises x[0..n) (not modified).  Quantiles interpolate linearly
 * between order statistics (type 7, as numpy's default).  n == 0 yields
 * all zeros.
 */
void stats_compute(const double *x, size_t n, struct stats *s);

/* Quantile q in [0,1] of sorted[0..n), n > 0. */
double stats_quantile(const double *sorted, size_t n, double q);

/*
 * How well x[0..n) pins its median down: the half-width of the
 * distribution-free 95% confidence interval of the median (the order
 * statistics of ranks (n -+ 1.96 sqrt(n)) / 2, rounded outwards), the larger
 * side, over the median.  INFINITY when n < 6 (the interval is then the
 * whole sample or more) or the median is not positive.
 */
double stats_median_ci_rel(const double *x, size_t n);

/*
 * The bounds of that interval in *lo and *hi, and returns the median;
 * when n < 6, *lo is -INFINITY and *hi INFINITY (n == 0: the median is 0).
 */
double stats_median_ci(const double *x, size_t n, double *lo, double *hi);

/*
 * The mean of x[0..n) (not modified) without its drop largest values;
 * drop < n.
 */
double stats_low_mean(const double *x, size_t n, size_t drop);

/* New JSON object {"n","min","max","mean","stdev","p25","median","p75","iqr","cv"}. */
json_t *stats_json(const struct stats *s);

#endif
