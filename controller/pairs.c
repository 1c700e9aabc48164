/*
 * pairs.c - per-round ratios of two programs timed side by side, their
 * median and its sign-test interval.
 */
#include "pairs.h"
#include "sbuf.h"
#include "xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void pairs_add_ratio(struct pairs *p, double r)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 64;
		p->ratio = xreallocarray(p->ratio, p->cap, sizeof(*p->ratio));
	}
	p->ratio[p->n++] = r;
}

/* One timed sample: the timing round it was taken in, and its time. */
struct sample {
	json_int_t round;
	double ms;
};

static int by_round(const void *a, const void *b)
{
	json_int_t x = ((const struct sample *)a)->round, y = ((const struct sample *)b)->round;

	return (x > y) - (x < y);
}

/* perf's usable samples sorted by round (malloc'd); *n their count. */
static struct sample *samples_of(json_t *perf, size_t *n)
{
	json_t *rounds = json_object_get(perf, "rounds"), *ms = json_object_get(perf, "samples_ms");
	struct sample *out;
	size_t i;
	json_t *r;

	*n = 0;
	if (!json_is_array(rounds) || !json_is_array(ms) ||
	    json_array_size(rounds) != json_array_size(ms))
		return NULL;
	out = xcalloc(json_array_size(rounds) + 1, sizeof(*out));
	json_array_foreach (rounds, i, r) {
		double t = json_number_value(json_array_get(ms, i));

		if (json_is_integer(r) && json_is_number(json_array_get(ms, i)) && t > 0 &&
		    isfinite(t))
			out[(*n)++] = (struct sample){ json_integer_value(r), t };
	}
	qsort(out, *n, sizeof(*out), by_round);
	return out;
}

size_t pairs_add(struct pairs *p, json_t *a, json_t *b)
{
	const char *ba = json_string_value(json_object_get(a, "batch_id"));
	const char *bb = json_string_value(json_object_get(b, "batch_id"));
	struct sample *sa, *sb;
	size_t na, nb, i = 0, j = 0, added = 0;

	if (!ba || !bb || strcmp(ba, bb))
		return 0;
	sa = samples_of(json_object_get(a, "performance"), &na);
	sb = samples_of(json_object_get(b, "performance"), &nb);
	/* both sorted by round: one sample of each per round, matched in one sweep */
	while (i < na && j < nb) {
		if (sa[i].round < sb[j].round) {
			i++;
		} else if (sa[i].round > sb[j].round) {
			j++;
		} else {
			pairs_add_ratio(p, sa[i++].ms / sb[j++].ms);
			added++;
		}
	}
	free(sa);
	free(sb);
	return added;
}

void pairs_release(struct pairs *p)
{
	free(p->ratio);
	memset(p, 0, sizeof(*p));
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

long pairs_ci_index(size_t n)
{
	/* [x[j], x[n-1-j]] (0-based, sorted) misses the median with probability
	 * 2 P(B <= j), B ~ Binomial(n, 1/2): the largest j that keeps it at or
	 * under 5%.  P is summed in log space, so large n does not underflow. */
	double log_half_n = (double)n * log(0.5), cdf = 0;
	long k = -1;

	for (size_t j = 0; n >= 6 && j < n / 2; j++) {
		cdf += exp(lgamma((double)n + 1) - lgamma((double)j + 1) -
			   lgamma((double)(n - j) + 1) + log_half_n);
		if (2 * cdf > 0.05)
			break;
		k = (long)j;
	}
	return k;
}

struct pair_verdict pairs_verdict(struct pairs *p)
{
	struct pair_verdict v = { p->n, NAN, NAN, NAN };
	long k;

	if (!p->n)
		return v;
	qsort(p->ratio, p->n, sizeof(*p->ratio), cmp_double);
	v.median =
		p->n % 2 ? p->ratio[p->n / 2] : (p->ratio[p->n / 2 - 1] + p->ratio[p->n / 2]) / 2;
	k = pairs_ci_index(p->n);
	if (k >= 0) {
		v.lo = p->ratio[k];
		v.hi = p->ratio[p->n - 1 - (size_t)k];
	}
	return v;
}

void pairs_describe(struct sbuf *b, struct pair_verdict v)
{
	sbuf_addf(b, "%+.1f%%", (v.median - 1) * 100);
	if (isfinite(v.lo))
		sbuf_addf(b, " (95%% CI %+.1f%% to %+.1f%%, %zu paired samples)", (v.lo - 1) * 100,
			  (v.hi - 1) * 100, v.n);
	else
		sbuf_addf(b, " (%zu paired samples: too few for an interval)", v.n);
}

double pairs_t975(int df)
{
	static const double t[] = { 0,     12.706, 4.303, 3.182, 2.776, 2.571,
				    2.447, 2.365,  2.306, 2.262, 2.228 };

	return df < 1 ? INFINITY : df <= 10 ? t[df] : 1.96 + 2.5 / df;
}

int pairs_faster_across(const struct pair_verdict *v, int n)
{
	double sum = 0, sum2 = 0, mean, sd;
	int alone = 1;

	if (n < 2)
		return 0;
	for (int k = 0; k < n; k++) {
		if (!pairs_faster(v[k]))
			return 0;
		alone &= pairs_faster_alone(v[k]);
		sum += log(v[k].median);
		sum2 += log(v[k].median) * log(v[k].median);
	}
	if (alone)
		return 1;
	mean = sum / n;
	sd = sqrt(fmax(0, (sum2 - n * mean * mean) / (n - 1)));
	return mean - pairs_t975(n - 1) * sd / sqrt(n) > log(1 + PAIRS_MIN_GAIN);
}
