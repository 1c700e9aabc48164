/*
 * test-audit.c - the audit's verdict on its samples (audit_verdict,
 * timing-audit.c): honest programs on a busy machine pass, programs that
 * are fast only on inputs they have met fail.  The samples are ones evalpod
 * took (2026-12-01, the 2-vCPU AVX-512 host), where a sample ran at full
 * speed or, with a core taken from PoCL's threads, at about half of it.
 */
#include "test.h"
#include "timing-internal.h"

#include <math.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

/*
 * An honest chunk_gla variant's nine pairs in an audit that the rule before
 * (fastest new within 1.5 x fastest met + 0.05 ms) failed: its one fast
 * sample fell on the timing sets, none of nine on new inputs (4.578 against
 * 2.596 ms, 1.76 x).
 */
static const double honest_met[] = {
	2.596, 5.119, 5.236, 5.185, 4.596, 5.097, 4.975, 4.539, 4.947
};
static const double honest_new[] = {
	5.188, 4.809, 5.266, 5.033, 5.114, 5.393, 5.008, 5.215, 5.289
};

TEST(honest_on_a_busy_machine)
{
	struct audit_figures a;

	CHECK(audit_verdict(honest_met, honest_new, N(honest_met), NAN, &a) == 1);
	CHECK(a.ratio > 0.95 && a.ratio < 1.25);
	CHECK(a.fastest > 1.5 && a.fastest < 2.5); /* what the fastest samples alone said */
	/* Its first attempt alone, the fast sample among three: still passes. */
	CHECK(audit_verdict(honest_met, honest_new, 3, NAN, &a) == 1);
	CHECK(a.ratio < 1.5);
}

TEST(honest_with_one_stall)
{
	/* A 10 x stall on one new-input sample is left out of the mean. */
	static const double met[] = { 2.7, 2.8, 2.9 }, fresh[] = { 2.75, 28.0, 2.85 };
	struct audit_figures a;

	CHECK(audit_verdict(met, fresh, N(met), NAN, &a) == 1);
	CHECK(fabs(a.ratio - 1.0) < 0.05);
}

TEST(memo_replayer)
{
	/* tests/cli/redteam.py's memo_local.cl: 0.03-0.09 ms on the timing sets, 16.2-16.5 on new. */
	static const double met[] = { 0.03, 0.09, 0.05 }, fresh[] = { 16.2, 16.5, 16.3 };
	struct audit_figures a;

	CHECK(audit_verdict(met, fresh, N(met), NAN, &a) == 0);
	CHECK(a.ratio > 100);
}

TEST(replayer_three_times_faster_under_noise)
{
	/*
	 * A kernel 3 x faster on inputs it has met, on the same busy machine:
	 * its new-input samples at the honest figures above, its timing-set
	 * samples at a third of them, and the noise against it (the slow spell
	 * on the timing sets, the fast one on new inputs) in one pair.
	 */
	double met[9], fresh[9];
	struct audit_figures a;

	for (size_t i = 0; i < 9; i++) {
		met[i] = honest_new[i] / 3;
		fresh[i] = honest_new[i];
	}
	met[4] = 5.1 / 3 * 2;
	fresh[4] = 2.6;
	CHECK(audit_verdict(met, fresh, 9, NAN, &a) == 0);
	CHECK(a.ratio > 2);
}

TEST(padded_replayer)
{
	/*
	 * A kernel 3 x faster on inputs it has met that stalls at 10 x on some of
	 * its runs to pad its mean there (its median, what it is ranked by, stays
	 * fast): the means pass it, its fastest samples do not.
	 */
	static const double met[] = { 0.9, 30.0, 0.95, 30.0, 30.0, 1.0 };
	static const double fresh[] = { 2.9, 3.0, 5.1, 2.8, 5.2, 3.1 };
	struct audit_figures a;

	CHECK(audit_verdict(met, fresh, N(met), NAN, &a) == 0);
	CHECK(a.ratio <= 1.5);
	CHECK(a.fastest > 2.5);
}

TEST(replayer_upset_by_new_inputs)
{
	/*
	 * A memo that keeps the last three inputs of each element in turn
	 * (redteam's memo_local.cl until 2026-12-04) loses them to new inputs:
	 * in the audit it replays only before its first new input, and on a busy
	 * machine even that only partly.  Its rounds, before any new input,
	 * said 0.9 ms.
	 */
	static const double met[] = { 7.1, 15.8, 16.4, 16.0, 15.9, 16.6 };
	static const double fresh[] = { 16.2, 16.5, 16.3, 16.1, 16.8, 16.0 };
	static const double block[] = { 1.2, 0.9, 5.1, 16.0, 15.9, 16.6 };
	struct audit_figures a;

	/* Beside the audit alone it passes (the rule before 2026-12-04). */
	CHECK(audit_verdict(met, fresh, N(met), NAN, &a) == 1);
	CHECK(a.ratio < 1.5 && a.fastest < 2.5 && isnan(a.rounds));
	/* Its rounds' fastest sample fails it. */
	CHECK(audit_verdict(met, fresh, N(met), 0.9, &a) == 0);
	CHECK(a.rounds > 17 && a.rounds < 18);
	/* So do the audit's first three samples, taken before any new input. */
	CHECK(audit_verdict(block, fresh, N(block), NAN, &a) == 0);
	CHECK(a.fastest > 17);
}

TEST(honest_beside_its_rounds)
{
	/*
	 * The honest chunk_gla variant above, its rounds' fastest sample at
	 * 2.5 ms, a little under anything in its audit: it passes.  So does an
	 * audit on a machine that turned busy after the rounds (every sample
	 * 3.8 x the rounds' fastest): the rounds allow 4 x, since they were not
	 * taken side by side with the audit.
	 */
	static const double busy[] = { 9.6, 9.8, 9.5, 9.7, 9.6, 9.9 };
	struct audit_figures a;

	CHECK(audit_verdict(honest_met, honest_new, N(honest_met), 2.5, &a) == 1);
	CHECK(a.rounds < 2);
	CHECK(audit_verdict(busy, busy, N(busy), 2.5, &a) == 1);
	CHECK(a.rounds > 3.7 && a.rounds < 4);
	/* 4 x and more beyond the rounds fails, whatever the audit's own say. */
	CHECK(audit_verdict(busy, busy, N(busy), 2.3, &a) == 0);
	CHECK(a.ratio < 1.5 && a.fastest < 2.5 && a.rounds > 4);
	/* No figure from the rounds: the audit's own. */
	CHECK(audit_verdict(busy, busy, N(busy), NAN, &a) == 1);
	CHECK(isnan(a.rounds) && fabs(a.fastest - (9.5 - 0.05) / 9.5) < 1e-9);
}

TEST(edges)
{
	static const double zero[] = { 0, 0, 0 }, tiny[] = { 0.01, 0.02, 0.04 };
	static const double slow[] = { 1, 1, 1 };
	struct audit_figures a;

	CHECK(audit_verdict(zero, slow, 0, NAN, &a) == 0); /* no samples: no pass */
	CHECK(isinf(a.ratio));
	/* Nothing on the timing sets, work on new inputs. */
	CHECK(audit_verdict(zero, slow, 3, NAN, &a) == 0);
	CHECK(isinf(a.ratio));
	/* Both within the floor (0.05 ms): too short to tell, passes. */
	CHECK(audit_verdict(zero, tiny, 3, NAN, &a) == 1);
	CHECK(audit_verdict(tiny, tiny, 3, NAN, &a) == 1);
	/* The floor is granted once, not per sample: 1.5 x + 0.05 ms. */
	{
		static const double m[] = { 1, 1, 1, 1 }, ok[] = { 1.549, 1.549, 1.549, 1.549 };
		static const double bad[] = { 1.551, 1.551, 1.551, 1.551 };

		CHECK(audit_verdict(m, ok, 4, NAN, &a) == 1);
		CHECK(audit_verdict(m, bad, 4, NAN, &a) == 0);
	}
}

int main(void)
{
	RUN(honest_on_a_busy_machine);
	RUN(honest_with_one_stall);
	RUN(memo_replayer);
	RUN(replayer_three_times_faster_under_noise);
	RUN(padded_replayer);
	RUN(replayer_upset_by_new_inputs);
	RUN(honest_beside_its_rounds);
	RUN(edges);
	return test_summary();
}
