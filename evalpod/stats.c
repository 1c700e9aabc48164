#include "stats.h"
#include "jsonx.h"
#include "xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double stats_quantile(const double *sorted, size_t n, double q)
{
	double pos = q * (double)(n - 1);
	size_t lo = (size_t)floor(pos);
	double frac = pos - (double)lo;

	if (lo + 1 >= n)
		return sorted[n - 1];
	return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

void stats_compute(const double *x, size_t n, struct stats *s)
{
	double *sorted, var = 0;

	memset(s, 0, sizeof(*s));
	if (!n)
		return;
	sorted = xmalloc(n * sizeof(*sorted));
	memcpy(sorted, x, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_double);
	s->n = n;
	s->min = sorted[0];
	s->max = sorted[n - 1];
	for (size_t i = 0; i < n; i++)
		s->sum += x[i];
	s->mean = s->sum / (double)n;
	for (size_t i = 0; i < n; i++)
		var += (x[i] - s->mean) * (x[i] - s->mean);
	s->stdev = n > 1 ? sqrt(var / (double)(n - 1)) : 0;
	s->p25 = stats_quantile(sorted, n, 0.25);
	s->median = stats_quantile(sorted, n, 0.5);
	s->p75 = stats_quantile(sorted, n, 0.75);
	s->iqr = s->p75 - s->p25;
	s->cv = (n > 1 && s->mean > 0) ? s->stdev / s->mean : 0;
	free(sorted);
}

double stats_low_mean(const double *x, size_t n, size_t drop)
{
	double *sorted = xmalloc(n * sizeof(*sorted)), sum = 0;

	memcpy(sorted, x, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_double);
	for (size_t i = 0; i < n - drop; i++)
		sum += sorted[i];
	free(sorted);
	return sum / (double)(n - drop);
}

double stats_median_ci(const double *x, size_t n, double *lo, double *hi)
{
	double *sorted, med, w;
	size_t l, h;

	*lo = -INFINITY;
	*hi = INFINITY;
	if (!n)
		return 0;
	sorted = xmalloc(n * sizeof(*sorted));
	memcpy(sorted, x, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_double);
	med = stats_quantile(sorted, n, 0.5);
	if (n >= 6) {
		w = 1.96 * sqrt((double)n);
		/* 1-based ranks floor((n - w) / 2) and ceil((n + w) / 2), at least 1 and at most n */
		l = (double)n > w + 2 ? (size_t)floor(((double)n - w) / 2) : 1;
		h = (size_t)ceil(((double)n + w) / 2);
		*lo = sorted[l - 1];
		*hi = sorted[(h > n ? n : h) - 1];
	}
	free(sorted);
	return med;
}

double stats_median_ci_rel(const double *x, size_t n)
{
	double lo, hi, med = stats_median_ci(x, n, &lo, &hi);

	if (n < 6 || !(med > 0))
		return INFINITY;
	return fmax(med - lo, hi - med) / med;
}

json_t *stats_json(const struct stats *s)
{
	json_t *o = json_object();

	json_object_set_new(o, "n", json_integer((json_int_t)s->n));
	jx_set_real(o, "min", s->min);
	jx_set_real(o, "max", s->max);
	jx_set_real(o, "mean", s->mean);
	jx_set_real(o, "stdev", s->stdev);
	jx_set_real(o, "p25", s->p25);
	jx_set_real(o, "median", s->median);
	jx_set_real(o, "p75", s->p75);
	jx_set_real(o, "iqr", s->iqr);
	jx_set_real(o, "cv", s->cv);
	return o;
}
