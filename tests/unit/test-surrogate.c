#include "surrogate.h"
#include "err.h"
#include "test.h"
#include "arraysize.h"

#include <math.h>
#include <stddef.h>

/* A smooth function of two features with its peak at (0.7, 0.3). */
static double bowl(const double *x)
{
	return 3 - 4 * (x[0] - 0.7) * (x[0] - 0.7) - 2 * (x[1] - 0.3) * (x[1] - 0.3);
}

/* A 5 x 5 grid over [0, 1]^2 and bowl() on it. */
static void grid(double *x, double *y)
{
	for (size_t i = 0; i < 25; i++) {
		x[2 * i] = (double)(i % 5) / 4;
		x[2 * i + 1] = (double)(i / 5) / 4;
		y[i] = bowl(x + 2 * i);
	}
}

TEST(fit_interpolates_a_smooth_function)
{
	static const double probes[][2] = {
		{ 0.7, 0.3 }, { 0.1, 0.9 }, { 0.4, 0.6 }, { 0.9, 0.1 }
	};
	struct surrogate m;
	double x[50], y[25], mean, sd;

	grid(x, y);
	CHECK(surrogate_fit(&m, x, y, 25, 2) == 0);
	CHECK(m.n == 25 && m.d == 2);
	CHECK(m.noise < 0.05); /* exact data: a small nugget explains it best */
	for (size_t i = 0; i < 25; i++) {
		surrogate_predict(&m, x + 2 * i, &mean, &sd);
		CHECK(fabs(mean - y[i]) < 0.05);
	}
	/* between the grid points too: the model learned the shape, not the points */
	for (size_t i = 0; i < ARRAY_SIZE(probes); i++) {
		surrogate_predict(&m, probes[i], &mean, &sd);
		CHECK(fabs(mean - bowl(probes[i])) < 0.2); /* the grid spans 0.06 to 3 */
	}
	surrogate_release(&m);
}

TEST(uncertainty_grows_away_from_the_data)
{
	/* data only in the left half */
	double x[] = { 0, 0, 0.1, 0.5, 0.2, 0.2, 0.3, 0.8, 0.4, 0.4, 0.1, 0.9 };
	double y[6], near[] = { 0.2, 0.25 }, far[] = { 1, 0.5 }, mn, sdn, mf, sdf;
	struct surrogate m;

	for (size_t i = 0; i < 6; i++)
		y[i] = bowl(x + 2 * i);
	CHECK(surrogate_fit(&m, x, y, 6, 2) == 0);
	surrogate_predict(&m, near, &mn, &sdn);
	surrogate_predict(&m, far, &mf, &sdf);
	CHECK(sdn < sdf);
	CHECK(sdf > 0);
	CHECK(surrogate_corr(&m, near, near) == 1);
	CHECK(surrogate_corr(&m, near, far) < surrogate_corr(&m, near, x + 2 * 2));
	surrogate_release(&m);
}

TEST(noisy_data_gets_a_nugget)
{
	/* a flat function measured with +-10% noise: the nugget explains the spread */
	static const double wiggle[] = { 0.1, -0.1, 0.08, -0.12, 0.1, -0.07, 0.11, -0.09 };
	double x[16], y[8], mean, sd;
	struct surrogate m;

	for (size_t i = 0; i < 8; i++) {
		x[2 * i] = (double)i / 7;
		x[2 * i + 1] = (double)((i * 3) % 8) / 7;
		y[i] = 2 + wiggle[i];
	}
	CHECK(surrogate_fit(&m, x, y, 8, 2) == 0);
	CHECK(m.noise >= 0.05);
	/* the mean at a measured point is pulled toward the others: no lucky point */
	surrogate_predict(&m, x, &mean, &sd);
	CHECK(mean < y[0] && mean > 2 - 0.1);
	surrogate_release(&m);
}

TEST(expected_improvement)
{
	static const struct {
		double mean, sd, best, xi, want;
	} cases[] = {
		{ 1.0, 0, 0.5, 0, 0.5 },          /* certain: the improvement itself */
		{ 0.2, 0, 0.5, 0, 0 },            /* certain and worse: none */
		{ 0.5, 1, 0.5, 0, 0.3989422804 }, /* sd * phi(0) */
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		CHECK(fabs(surrogate_ei(cases[i].mean, cases[i].sd, cases[i].best, cases[i].xi) -
			   cases[i].want) < 1e-9);
	/* more mean, more uncertainty or a lower bar: more to expect */
	CHECK(surrogate_ei(0.6, 0.2, 0.5, 0) > surrogate_ei(0.5, 0.2, 0.5, 0));
	CHECK(surrogate_ei(0.4, 0.4, 0.5, 0) > surrogate_ei(0.4, 0.2, 0.5, 0));
	CHECK(surrogate_ei(0.4, 0.2, 0.5, 0) > surrogate_ei(0.4, 0.2, 0.5, 0.1));
	CHECK(surrogate_ei(-10, 0.1, 0.5, 0) >= 0);
}

TEST(bad_input)
{
	double x[] = { 0.5 }, y[] = { NAN };
	struct surrogate m;

	CHECK(surrogate_fit(&m, x, y, 0, 1) == KERR_INVALID);
	CHECK(surrogate_fit(&m, x, y, 1, 1) == KERR_INVALID);
	CHECK(m.n == 0 && m.x == NULL);
	surrogate_release(&m);
}

int main(void)
{
	RUN(fit_interpolates_a_smooth_function);
	RUN(uncertainty_grows_away_from_the_data);
	RUN(noisy_data_gets_a_nugget);
	RUN(expected_improvement);
	RUN(bad_input);
	return test_summary();
}
