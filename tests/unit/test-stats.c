#include "stats.h"
#include "test.h"

#include <math.h>

static int near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * (fabs(b) > 1 ? fabs(b) : 1);
}

static const struct {
	double x[8];
	size_t n;
	double median, p25, p75, mean, stdev, min, max;
} cases[] = {
	{ { 5 }, 1, 5, 5, 5, 5, 0, 5, 5 },
	{ { 1, 2 }, 2, 1.5, 1.25, 1.75, 1.5, 0.70710678118654757, 1, 2 },
	{ { 3, 1, 2 }, 3, 2, 1.5, 2.5, 2, 1, 1, 3 },
	{ { 4, 1, 3, 2 }, 4, 2.5, 1.75, 3.25, 2.5, 1.2909944487358056, 1, 4 },
	{ { 10, 10, 10, 10, 10 }, 5, 10, 10, 10, 10, 0, 10, 10 },
	{ { 1, 2, 3, 4, 100 }, 5, 3, 2, 4, 22, 43.617656975128774, 1, 100 },
};

TEST(table)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct stats s;

		stats_compute(cases[i].x, cases[i].n, &s);
		CHECK(s.n == cases[i].n);
		CHECK(near(s.median, cases[i].median));
		CHECK(near(s.p25, cases[i].p25));
		CHECK(near(s.p75, cases[i].p75));
		CHECK(near(s.iqr, cases[i].p75 - cases[i].p25));
		CHECK(near(s.mean, cases[i].mean));
		CHECK(fabs(s.stdev - cases[i].stdev) < 1e-9);
		CHECK(near(s.min, cases[i].min));
		CHECK(near(s.max, cases[i].max));
		CHECK(cases[i].n < 2 || near(s.cv, cases[i].stdev / cases[i].mean));
	}
}

TEST(empty_and_input_untouched)
{
	double x[3] = { 3, 1, 2 };
	struct stats s;

	stats_compute(x, 0, &s);
	CHECK(s.n == 0 && s.median == 0 && s.cv == 0);
	stats_compute(x, 3, &s);
	CHECK(x[0] == 3 && x[1] == 1 && x[2] == 2);
}

TEST(json)
{
	double x[4] = { 1, 2, 3, 4 };
	struct stats s;
	json_t *o;

	stats_compute(x, 4, &s);
	o = stats_json(&s);
	CHECK(json_integer_value(json_object_get(o, "n")) == 4);
	CHECK(near(json_real_value(json_object_get(o, "median")), 2.5));
	CHECK(json_object_get(o, "iqr") != NULL);
	json_decref(o);
}

/* The 95% interval of the median: order statistics around it, distribution-free. */
TEST(median_ci)
{
	double x[40];

	CHECK(isinf(stats_median_ci_rel((double[]){ 1, 2, 3, 4, 5 }, 5)));
	/* 1..10: median 5.5, ranks 1 and 9 (n = 10, 1.96 sqrt(10) = 6.2) */
	for (int i = 0; i < 10; i++)
		x[i] = 10 - i;
	CHECK(near(stats_median_ci_rel(x, 10), 4.5 / 5.5));
	/* 40 samples: ranks floor(13.8) = 13 and ceil(26.2) = 27, 7.5 and 6.5 steps
	 * from the median of 100: the larger side counts */
	for (int i = 0; i < 40; i++)
		x[i] = 100 + (i - 19.5) * 0.1;
	CHECK(near(stats_median_ci_rel(x, 40), 0.75 / 100));
	/* the same spread, ten times wider: ten times less certain */
	for (int i = 0; i < 40; i++)
		x[i] = 100 + (i - 19.5);
	CHECK(near(stats_median_ci_rel(x, 40), 7.5 / 100));
	CHECK(isinf(stats_median_ci_rel((double[]){ 0, 0, 0, 0, 0, 0 }, 6)));
}

/* The interval's bounds themselves: the same order statistics. */
TEST(median_ci_bounds)
{
	double x[40], lo, hi;

	for (int i = 0; i < 10; i++)
		x[i] = 10 - i;
	CHECK(near(stats_median_ci(x, 10, &lo, &hi), 5.5));
	CHECK(near(lo, 1) && near(hi, 9)); /* ranks 1 and 9 */
	for (int i = 0; i < 40; i++)
		x[i] = 100 + (i - 19.5);
	CHECK(near(stats_median_ci(x, 40, &lo, &hi), 100));
	CHECK(near(lo, 92.5) && near(hi, 106.5)); /* ranks 13 and 27 */
	/* under 6 samples the interval is unbounded; none at all, no median */
	CHECK(near(stats_median_ci(x, 5, &lo, &hi), 82.5) && isinf(lo) && lo < 0 && isinf(hi));
	CHECK(stats_median_ci(x, 0, &lo, &hi) == 0 && isinf(lo) && isinf(hi));
}

TEST(low_mean)
{
	double x[] = { 4, 100, 1, 3, 2 };

	CHECK(near(stats_low_mean(x, 5, 0), 22));
	CHECK(near(stats_low_mean(x, 5, 1), 2.5)); /* 100 left out */
	CHECK(near(stats_low_mean(x, 5, 4), 1));
	CHECK(x[0] == 4 && x[1] == 100 && x[4] == 2); /* input untouched */
}

int main(void)
{
	RUN(table);
	RUN(empty_and_input_untouched);
	RUN(json);
	RUN(median_ci);
	RUN(median_ci_bounds);
	RUN(low_mean);
	return test_summary();
}
