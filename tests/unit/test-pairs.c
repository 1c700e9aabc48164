/*
 * test-pairs.c - unit tests for controller/pairs.c: the sign-test interval
 * of a median, pairing samples by round and by process, and the verdicts.
 */
#include "pairs.h"
#include "sbuf.h"
#include "test.h"

#include <jansson.h>
#include <math.h>

/* A result document with samples ms[i] taken in rounds r[i], in batch bid. */
static json_t *result(const char *bid, const double *ms, const int *r, size_t n)
{
	json_t *s = json_array(), *rounds = json_array();

	for (size_t i = 0; i < n; i++) {
		json_array_append_new(s, json_real(ms[i]));
		json_array_append_new(rounds, json_integer(r[i]));
	}
	return json_pack("{s:s, s:s, s:{s:o, s:o}}", "status", "ok", "batch_id", bid, "performance",
			 "samples_ms", s, "rounds", rounds);
}

TEST(ci_index_matches_the_binomial_tables)
{
	/* published sign-test intervals: n=6..10 use the extremes or one in;
	 * n=20 cuts 5 from each end, n=100 cuts 39 */
	CHECK(pairs_ci_index(5) == -1);
	CHECK(pairs_ci_index(6) == 0);
	CHECK(pairs_ci_index(8) == 0);
	CHECK(pairs_ci_index(9) == 1);
	CHECK(pairs_ci_index(10) == 1);
	CHECK(pairs_ci_index(20) == 5);
	CHECK(pairs_ci_index(100) == 39);
	/* large n stays finite and near n/2 - 0.98 sqrt(n) */
	CHECK(labs(pairs_ci_index(10000) - 4901) <= 1);
}

TEST(pairs_only_same_round_and_same_process)
{
	double a[] = { 2, 2, 2, 2 }, b[] = { 1, 1, 1 };
	int ra[] = { 0, 1, 2, 3 }, rb[] = { 1, 3, 7 };
	json_t *x = result("B1", a, ra, 4), *y = result("B1", b, rb, 3),
	       *z = result("B2", b, rb, 3);
	struct pairs p = { 0 };

	CHECK(pairs_add(&p, x, y) == 2); /* rounds 1 and 3 */
	CHECK(p.n == 2 && p.ratio[0] == 2 && p.ratio[1] == 2);
	CHECK(pairs_add(&p, x, z) == 0); /* another process: never paired */
	pairs_release(&p);
	json_decref(x);
	json_decref(y);
	json_decref(z);
}

TEST(verdicts)
{
	struct pairs p = { 0 };
	struct pair_verdict v;
	struct sbuf b = SBUF_INIT;

	for (int i = 0; i < 40; i++) /* ratios 1.050 .. 1.145 */
		for (int k = 0; k < 2; k++)
			pairs_add_ratio(&p, 1.05 + 0.005 * (i % 20));
	v = pairs_verdict(&p);
	CHECK(v.n == 80 && fabs(v.median - 1.0975) < 1e-9);
	CHECK(v.lo > 1.06 && v.hi < 1.14 && v.lo <= v.median && v.median <= v.hi);
	/* faster by more than 1%, but not beyond what one process can be off by */
	CHECK(pairs_faster(v) && !pairs_equal(v) && !pairs_faster_alone(v));
	pairs_describe(&b, v);
	CHECK_CONTAINS(b.buf, "+9.8% (95% CI +");
	CHECK_CONTAINS(b.buf, "80 paired samples");
	pairs_release(&p);
	sbuf_release(&b);

	for (int i = 0; i < 50; i++)
		pairs_add_ratio(&p, 1 + 0.004 * ((i % 5) - 2));
	v = pairs_verdict(&p);
	CHECK(pairs_equal(v) && !pairs_faster(v));
	pairs_release(&p);

	pairs_add_ratio(&p, 2);
	v = pairs_verdict(&p);
	CHECK(v.n == 1 && v.median == 2 && isnan(v.lo) && !pairs_faster(v));
	pairs_release(&p);
	CHECK(pairs_t975(1) > 12 && fabs(pairs_t975(2) - 4.303) < 1e-9 && pairs_t975(0) > 1e9);
}

/* A pass's verdict: median m, interval [lo, hi], 40 pairs. */
static struct pair_verdict pass(double m, double lo, double hi)
{
	return (struct pair_verdict){ .n = 40, .median = m, .lo = lo, .hi = hi };
}

TEST(faster_across_passes)
{
	struct pair_verdict v[3];

	/* every pass beyond one process's bias: faster, however far apart the
	 * passes are (the t-interval of +60% and +250% spans 1 with t = 12.7) */
	v[0] = pass(1.60, 1.52, 1.66);
	v[1] = pass(3.50, 3.06, 3.60);
	CHECK(pairs_faster_across(v, 2));
	/* one pass is never enough, whatever it shows */
	CHECK(!pairs_faster_across(v, 1));
	/* a few percent, which one process can fake: only passes that agree */
	v[0] = pass(1.050, 1.03, 1.07);
	v[1] = pass(1.052, 1.03, 1.07);
	CHECK(pairs_faster_across(v, 2));
	v[1] = pass(1.20, 1.16, 1.25);
	CHECK(!pairs_faster_across(v, 2));
	/* under the bias, two passes of +6% and +8% are too few to agree
	 * (t = 12.7); a third at +7% settles it (t = 4.3) */
	v[0] = pass(1.06, 1.03, 1.09);
	v[1] = pass(1.08, 1.04, 1.12);
	v[2] = pass(1.07, 1.04, 1.10);
	CHECK(!pairs_faster_across(v, 2));
	CHECK(pairs_faster_across(v, 3));
	/* a pass that does not show it on its own, or has too few pairs */
	v[0] = pass(1.60, 1.52, 1.66);
	v[1] = pass(1.30, 0.99, 1.70);
	CHECK(!pairs_faster_across(v, 2));
	v[1] = pass(3.0, NAN, NAN);
	CHECK(!pairs_faster_across(v, 2));
	/* the other way round */
	v[0] = pass(1 / 1.6, 1 / 1.66, 1 / 1.52);
	v[1] = pass(1 / 3.5, 1 / 3.6, 1 / 3.06);
	CHECK(!pairs_faster_across(v, 2));
}

int main(void)
{
	RUN(ci_index_matches_the_binomial_tables);
	RUN(pairs_only_same_round_and_same_process);
	RUN(verdicts);
	RUN(faster_across_passes);
	return test_summary();
}
