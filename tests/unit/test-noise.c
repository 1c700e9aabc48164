#include "err.h"
#include "noise.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>

static int near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * (fabs(b) > 1 ? fabs(b) : 1);
}

static const struct {
	const char *text;
	int ok;
	long long seed;
	double amplitude;
	const char *why; /* in the message when refused */
} parses[] = {
	{ "7:0.3", 1, 7, 0.3, NULL },
	{ "0:0", 1, 0, 0, NULL },
	{ "-5:10", 1, -5, 10, NULL },
	{ "3:.5", 1, 3, 0.5, NULL },
	{ "12:1e-1", 1, 12, 0.1, NULL },
	{ "9223372036854775807:1", 1, 9223372036854775807LL, 1, NULL },
	{ "7", 0, 0, 0, "no ':'" },
	{ "7:", 0, 0, 0, "AMPLITUDE is not a number" },
	{ ":0.3", 0, 0, 0, "SEED is not an integer" },
	{ "x:0.3", 0, 0, 0, "SEED is not an integer" },
	{ " 7:0.3", 0, 0, 0, "SEED is not an integer" },
	{ "+7:0.3", 0, 0, 0, "SEED is not an integer" },
	{ "7.5:0.3", 0, 0, 0, "SEED is not a 64-bit integer" },
	{ "9223372036854775808:1", 0, 0, 0, "SEED is not a 64-bit integer" },
	{ "7:abc", 0, 0, 0, "AMPLITUDE is not a number" },
	{ "7: 0.3", 0, 0, 0, "AMPLITUDE is not a number" },
	{ "7:0.3x", 0, 0, 0, "AMPLITUDE is not a number" },
	{ "7:0.3:1", 0, 0, 0, "AMPLITUDE is not a number" },
	{ "7:nan", 0, 0, 0, "AMPLITUDE is not a number" },
	{ "7:-0.1", 0, 0, 0, "AMPLITUDE is out of range" },
	{ "7:-", 0, 0, 0, "AMPLITUDE is not a number" },
	{ "7:-nan", 0, 0, 0, "AMPLITUDE is not a number" },
	{ "7:10.5", 0, 0, 0, "AMPLITUDE is out of range" },
	{ "7:1e400", 0, 0, 0, "AMPLITUDE is out of range" },
	{ "1234567890123456789012345678901234567890123456789012345678901234:1", 0, 0, 0,
	  "too long" },
};

TEST(parse)
{
	for (size_t i = 0; i < sizeof(parses) / sizeof(parses[0]); i++) {
		struct noise nz;
		char msg[512] = "";
		int rc = noise_parse(&nz, parses[i].text, msg, sizeof(msg));

		if (parses[i].ok) {
			CHECK(rc == 0);
			CHECK(nz.on);
			CHECK(nz.seed == parses[i].seed);
			CHECK(near(nz.amplitude, parses[i].amplitude));
			CHECK_STR(nz.text, parses[i].text);
		} else {
			CHECK(rc == KERR_INVALID);
			CHECK(!nz.on);
			CHECK_CONTAINS(msg, "invalid EVALPOD_TEST_NOISE");
			CHECK_CONTAINS(msg, parses[i].why);
		}
	}
}

TEST(from_env)
{
	struct noise nz;
	char msg[512] = "";

	unsetenv(NOISE_ENV);
	CHECK(noise_from_env(&nz, msg, sizeof(msg)) == 0 && !nz.on);
	setenv(NOISE_ENV, "", 1);
	CHECK(noise_from_env(&nz, msg, sizeof(msg)) == 0 && !nz.on);
	setenv(NOISE_ENV, "3:0.5", 1);
	CHECK(noise_from_env(&nz, msg, sizeof(msg)) == 0 && nz.on && nz.seed == 3);
	setenv(NOISE_ENV, "3:11", 1);
	CHECK(noise_from_env(&nz, msg, sizeof(msg)) == KERR_INVALID && !nz.on);
	CHECK_CONTAINS(msg, "'3:11'");
	unsetenv(NOISE_ENV);
}

static struct noise on(long long seed, double amplitude)
{
	struct noise nz = { .on = 1, .seed = seed, .amplitude = amplitude };

	return nz;
}

TEST(off_and_zero_change_nothing)
{
	struct noise off = { 0 }, zero = on(7, 0);

	for (uint64_t r = 0; r < 50; r++) {
		CHECK(noise_factor(&off, "b", "p", r, r) == 1);
		CHECK(noise_factor(&zero, "b", "p", r, r) == 1);
	}
}

/*
 * Bounds, and a spread over the whole range: the round factor's mean over
 * many rounds is near 1 + A/2, the jitter's near 1 + A/4.
 */
TEST(bounds_and_spread)
{
	struct noise nz = on(7, 0.3);
	double rmin = 2, rmax = 0, rsum = 0, jmin = 2, jmax = 0, jsum = 0;
	const unsigned n = 20000;

	for (uint64_t r = 0; r < n; r++) {
		double f = noise_round(&nz, "batch", r), j = noise_jitter(&nz, "batch", "v0", r, r);

		rmin = f < rmin ? f : rmin;
		rmax = f > rmax ? f : rmax;
		jmin = j < jmin ? j : jmin;
		jmax = j > jmax ? j : jmax;
		rsum += f;
		jsum += j;
		CHECK(near(noise_factor(&nz, "batch", "v0", r, r), f * j));
	}
	CHECK(rmin >= 1 && rmax < 1.3 && rmin < 1.01 && rmax > 1.29);
	CHECK(jmin >= 1 && jmax < 1.15 && jmin < 1.005 && jmax > 1.145);
	CHECK(fabs(rsum / n - 1.15) < 0.005);
	CHECK(fabs(jsum / n - 1.075) < 0.0025);
}

/* Same seed and batch: the same factors; another batch, seed or program: others. */
TEST(deterministic)
{
	struct noise a = on(7, 0.3), b = on(7, 0.3), c = on(8, 0.3);
	int same = 0, other_batch = 0, other_seed = 0, other_prog = 0, other_sample = 0;

	for (uint64_t r = 0; r < 16; r++) {
		double f = noise_factor(&a, "batch-1", "v0", r, 0);

		same += f == noise_factor(&b, "batch-1", "v0", r, 0);
		other_batch += f != noise_factor(&a, "batch-2", "v0", r, 0);
		other_seed += f != noise_factor(&c, "batch-1", "v0", r, 0);
		other_prog += f != noise_factor(&a, "batch-1", "v1", r, 0);
		other_sample += f != noise_factor(&a, "batch-1", "v0", r, 1);
	}
	CHECK(same == 16);
	CHECK(other_batch == 16 && other_seed == 16 && other_prog == 16 && other_sample == 16);
	/* The round factor is the programs' common part. */
	CHECK(noise_round(&a, "batch-1", 3) == noise_round(&b, "batch-1", 3));
	CHECK(noise_round(&a, "batch-1", 3) != noise_round(&a, "batch-1", 4));
}

/*
 * The hash is part of the contract (a perturbed session is reproducible
 * from its seed across builds): these values must never change.
 */
TEST(pinned)
{
	struct noise nz = on(3, 0.5);

	CHECK(fabs(noise_round(&nz, "cli", 0) - 1.1548336941364368) < 1e-12);
	CHECK(fabs(noise_jitter(&nz, "cli", "good", 2, 2) - 1.0650436953759763) < 1e-12);
}

static json_t *entry(const double *ms, size_t n, int reps)
{
	json_t *e = json_pack("{s:[], s:[], s:[], s:i, s:s}", "samples_ms", "host_ms", "rounds",
			      "reps_per_sample", reps, "status", "ok");

	for (size_t i = 0; i < n; i++) {
		json_array_append_new(json_object_get(e, "samples_ms"), json_real(ms[i]));
		json_array_append_new(json_object_get(e, "host_ms"), json_real(ms[i] * 1.25));
		json_array_append_new(json_object_get(e, "rounds"), json_integer((json_int_t)i));
	}
	return e;
}

static double at(json_t *e, const char *key, size_t i)
{
	return json_number_value(json_array_get(json_object_get(e, key), i));
}

/*
 * Every sample of every program is multiplied in place by its factor (the
 * host clock by the same), the statistics are those of the new samples,
 * and the per-round ratio of two programs moves only by the jitters.
 */
TEST(apply)
{
	static const double ms[6] = { 2, 2, 2, 2, 2, 2 };
	struct noise nz = on(3, 0.5);
	json_t *tdoc = json_pack("{s:{s:o, s:o}}", "programs", "reference", entry(ms, 6, 1), "v0",
				 entry(ms, 6, 4));
	json_t *ref = json_object_get(json_object_get(tdoc, "programs"), "reference");
	json_t *v0 = json_object_get(json_object_get(tdoc, "programs"), "v0");
	double sum = 0;

	noise_apply(&nz, "cli", tdoc);
	for (size_t i = 0; i < 6; i++) {
		double f = noise_factor(&nz, "cli", "v0", i, i),
		       ratio = at(ref, "samples_ms", i) / at(v0, "samples_ms", i);

		CHECK(near(at(v0, "samples_ms", i), 2 * f));
		CHECK(near(at(v0, "host_ms", i), 2.5 * f));
		CHECK(near(at(ref, "samples_ms", i),
			   2 * noise_factor(&nz, "cli", "reference", i, i)));
		CHECK(ratio > 1 / 1.25 && ratio < 1.25);
		sum += 2 * f;
	}
	CHECK(json_integer_value(json_object_get(json_object_get(v0, "stats"), "n")) == 6);
	CHECK(near(json_number_value(json_object_get(json_object_get(v0, "stats"), "mean")),
		   sum / 6));
	CHECK(near(json_number_value(json_object_get(json_object_get(v0, "host_stats"), "mean")),
		   sum / 6 * 1.25));
	CHECK(near(json_number_value(json_object_get(v0, "timed_ms")), sum * 4));
	CHECK(json_number_value(json_object_get(json_object_get(v0, "stats"), "cv")) > 0);
	json_decref(tdoc);
}

TEST(warning_and_json)
{
	struct noise nz;
	json_t *w, *j;

	CHECK(noise_parse(&nz, "7:0.3", NULL, 0) == 0);
	w = noise_warning(&nz);
	j = noise_json(&nz);
	CHECK_STR(json_string_value(w),
		  "timings perturbed by EVALPOD_TEST_NOISE=7:0.3 (test mode)");
	CHECK(json_integer_value(json_object_get(j, "seed")) == 7);
	CHECK(near(json_real_value(json_object_get(j, "amplitude")), 0.3));
	json_decref(w);
	json_decref(j);
}

int main(void)
{
	RUN(parse);
	RUN(from_env);
	RUN(off_and_zero_change_nothing);
	RUN(bounds_and_spread);
	RUN(deterministic);
	RUN(pinned);
	RUN(apply);
	RUN(warning_and_json);
	return test_summary();
}
