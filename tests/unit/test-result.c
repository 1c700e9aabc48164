/*
 * test-result.c - unit tests for evalpod/result.c: how check and timing
 * documents become a result, how speedups are paired, the roofline figures,
 * the bottleneck classes and the above-peak gate.
 */
#include "batch.h"
#include "run.h"

#include "test.h"

#include <math.h>
#include <string.h>

/* A matmul-like problem at 100x100x100: 2e6 flops, 120000 bytes. */
static const char batch_text[] =
	"{\"schema\": \"evalpod.batch\", \"version\": 1, \"batch_id\": \"t\","
	" \"problem\": {\"name\": \"mm\","
	"  \"buffers\": [{\"name\": \"A\", \"type\": \"float\", \"count\": \"M*K\"},"
	"               {\"name\": \"C\", \"type\": \"float\", \"count\": \"M*N\","
	"                \"role\": \"output\"}],"
	"  \"launch\": [{\"kernel\": \"k\", \"args\": [\"A\", \"C\"], \"global\": [\"M\"]}],"
	"  \"flops\": \"2*M*N*K\", \"bytes\": \"4*(M*K+K*N+M*N)\"},"
	" \"shapes\": [{\"name\": \"s\", \"values\": {\"M\": 100, \"N\": 100, \"K\": 100}}],"
	" \"reference\": {\"source\": \"x\"},"
	" \"variants\": [{\"id\": \"v1\", \"parent\": \"p0\", \"source\": \"y\"}]}";

static struct batch b;

/* A timing entry: samples (ms) taken in rounds 0..n-1, 1 run per sample. */
static json_t *time_entry(const double *ms, size_t n, long items, long local)
{
	json_t *t = json_pack("{s:s, s:[], s:[], s:{}, s:i, s:f}", "status", "ok", "samples_ms",
			      "rounds", "stats", "reps_per_sample", 1, "timed_ms", 1.0);
	double sorted[16];

	for (size_t i = 0; i < n; i++) {
		json_array_append_new(json_object_get(t, "samples_ms"), json_real(ms[i]));
		json_array_append_new(json_object_get(t, "rounds"), json_integer((json_int_t)i));
		sorted[i] = ms[i];
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (sorted[j] < sorted[i]) {
				double x = sorted[i];

				sorted[i] = sorted[j];
				sorted[j] = x;
			}
	json_object_set_new(json_object_get(t, "stats"), "median", json_real(sorted[n / 2]));
	json_object_set_new(
		t, "launch",
		json_pack("[{s:s, s:[i], s:[i]}]", "kernel", "k", "global", items, "local", local));
	return t;
}

static json_t *tdoc_new(double gflops, double gbs, double launch_us, int cus)
{
	return json_pack("{s:{s:f, s:f, s:f}, s:{s:i}}", "peaks", "gflops", gflops, "gbs", gbs,
			 "launch_us", launch_us, "device", "compute_units", cus);
}

static const char *str(json_t *o, const char *a, const char *k)
{
	json_t *v = a ? json_object_get(o, a) : o;

	return json_string_value(json_object_get(v, k));
}

static double num(json_t *o, const char *a, const char *k)
{
	return json_number_value(json_object_get(json_object_get(o, a), k));
}

TEST(status_and_paired_speedup)
{
	double ref_ms[] = { 10, 12, 10, 30 }, v_ms[] = { 1, 1.2, 2, 1 };
	struct outcome ref = { &b.reference, 0, json_pack("{s:s}", "status", "ok"),
			       time_entry(ref_ms, 4, 10000, 100), 0 };
	struct outcome v = { &b.variants[0], 0,
			     json_pack("{s:s, s:{s:b}}", "status", "ok", "compile", "ok", 1),
			     time_entry(v_ms, 4, 10000, 100), 5 };
	json_t *tdoc = tdoc_new(1000, 100, 1, 2), *r = result_build(&b, &v, &ref, NULL, tdoc);
	json_t *sp = json_object_get(json_object_get(r, "performance"), "speedup_vs_reference");

	CHECK_STR(str(r, NULL, "schema"), "evalpod.result");
	CHECK(json_integer_value(json_object_get(r, "version")) == 1);
	CHECK_STR(str(r, NULL, "status"), "ok");
	CHECK_STR(str(r, NULL, "id"), "v1");
	CHECK_STR(str(r, NULL, "parent"), "p0");
	CHECK(json_is_true(json_object_get(json_object_get(r, "compile"), "ok")));
	/* medians: ref 12 (sorted 10,10,12,30 -> index 2), variant 1.2 */
	CHECK(fabs(json_number_value(json_object_get(sp, "ratio_of_medians")) - 10.0) < 1e-9);
	/* per-round ratios 10, 10, 5, 30 -> median 10 */
	CHECK(json_integer_value(json_object_get(sp, "pairs")) == 4);
	CHECK(fabs(json_number_value(json_object_get(sp, "paired_median")) - 10.0) < 1e-9);
	CHECK(json_object_get(json_object_get(r, "performance"), "speedup_vs_baseline") == NULL);
	json_decref(r);
	json_decref(tdoc);
	json_decref(ref.check);
	json_decref(ref.time);
	json_decref(v.check);
	json_decref(v.time);
}

TEST(failed_check_is_not_timed)
{
	struct outcome v = { &b.variants[0], 0,
			     json_pack("{s:s, s:{s:s, s:s, s:s}}", "status", "incorrect", "fault",
				       "origin", "candidate", "kind", "wrong_values", "message",
				       "m"),
			     NULL, 0 };
	json_t *r = result_build(&b, &v, NULL, NULL, NULL);

	CHECK_STR(str(r, NULL, "status"), "incorrect");
	CHECK_STR(str(r, "fault", "kind"), "wrong_values");
	CHECK(json_object_get(r, "performance") == NULL);
	CHECK(json_object_get(r, "roofline") == NULL);
	json_decref(r);
	json_decref(v.check);
}

TEST(timing_fault_overrides_ok_check)
{
	double ms[] = { 1, 1, 1 };
	json_t *t = time_entry(ms, 3, 10000, 100);
	struct outcome v = { &b.variants[0], 0, json_pack("{s:s}", "status", "ok"), t, 0 };
	json_t *r;

	json_object_set_new(t, "status", json_string("invalid"));
	json_object_set_new(t, "fault",
			    json_pack("{s:s, s:s, s:s}", "origin", "candidate", "kind",
				      "wrong_when_timed", "message", "m"));
	r = result_build(&b, &v, NULL, NULL, NULL);
	CHECK_STR(str(r, NULL, "status"), "invalid");
	CHECK_STR(str(r, "fault", "kind"), "wrong_when_timed");
	CHECK(json_object_get(r, "performance") == NULL);
	json_decref(r);
	json_decref(v.check);
	json_decref(t);
}

/* Variant at median_ms against peaks; returns the result (caller frees). */
static json_t *classify_at(double ms, double pf, double pb, double launch_us, long items,
			   long local, int cus)
{
	double s[] = { ms, ms, ms };
	struct outcome v = { &b.variants[0], 0, json_pack("{s:s}", "status", "ok"),
			     time_entry(s, 3, items, local), 0 };
	json_t *tdoc = tdoc_new(pf, pb, launch_us, cus),
	       *r = result_build(&b, &v, NULL, NULL, tdoc);

	json_decref(tdoc);
	json_decref(v.check);
	json_decref(v.time);
	return r;
}

static const struct {
	double ms, peak_gflops, peak_gbs, launch_us;
	long items, local;
	int cus;
	const char *status, *bottleneck;
} classes[] = {
	/* 2e6 flops, 120000 bytes (AI 16.7) */
	{ 0.004, 1000, 100, 1, 10000, 100, 2, "ok", "launch" },     /* 4 us < 5 x 1 us */
	{ 1.0, 1000, 100, 1, 10000, 10000, 2, "ok", "occupancy" },  /* 1 group, 2 CUs */
	{ 1.0, 1000, 100, 1, 4, 0, 2, "ok", "occupancy" },          /* 4 items < 4 x 2 CUs */
	{ 1.0, 100, 100, 1, 10000, 100, 2, "ok", "latency" },       /* 2% flops, 0.1% bw */
	{ 0.005, 1000, 100, 0.1, 10000, 100, 2, "ok", "compute" },  /* AI 16.7 > ridge 10 */
	{ 0.01, 1000, 20, 0.1, 10000, 100, 2, "ok", "memory" },     /* ridge 50 > AI */
	{ 0.001, 1000, 100, 0.01, 10000, 100, 2, "invalid", NULL }, /* 2000 GFLOP/s > 1150 */
	{ 0.001, 2000, 100, 0.01, 10000, 100, 2, "invalid", NULL }, /* 120 GB/s > 115, cold */
};

TEST(roofline_classes_and_peak_gate)
{
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		json_t *r = classify_at(classes[i].ms, classes[i].peak_gflops, classes[i].peak_gbs,
					classes[i].launch_us, classes[i].items, classes[i].local,
					classes[i].cus);

		CHECK_STR(str(r, NULL, "status"), classes[i].status);
		if (classes[i].bottleneck)
			CHECK_STR(str(r, "roofline", "bottleneck"), classes[i].bottleneck);
		else
			CHECK_STR(str(r, "fault", "kind"), "above_peak");
		CHECK(fabs(num(r, "roofline", "gflops") - 2e6 / (classes[i].ms * 1e6)) < 1e-6);
		CHECK(fabs(num(r, "roofline", "arithmetic_intensity") - 2e6 / 120000.0) < 1e-9);
		CHECK(json_array_size(json_object_get(json_object_get(r, "roofline"), "evidence")));
		if (strcmp(str(r, NULL, "status"), classes[i].status))
			fprintf(stderr, "case %zu\n", i);
		json_decref(r);
	}
}

/*
 * The bottleneck is judged on the step the time goes to: a one-item step
 * that does nothing (a pack kernel switched off) beside a main step of many
 * work-groups is not short of work; without step times, the smallest step
 * still decides, and a serial step that takes the time is short of work.
 */
TEST(roofline_judges_the_main_step)
{
	static const struct {
		double noop_ms, main_ms; /* < 0: no median_ms on that step */
		const char *bottleneck, *kernel;
	} cases[] = {
		{ 0.001, 0.9, "latency", NULL },     /* main step: 100 groups, 2 CUs */
		{ -1, -1, "occupancy", "pack" },     /* no step times: the smallest */
		{ 0.9, 0.001, "occupancy", "pack" }, /* the one-item step takes the time */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double s[] = { 1.0, 1.0, 1.0 };
		struct outcome v = { &b.variants[0], 0, json_pack("{s:s}", "status", "ok"),
				     time_entry(s, 3, 10000, 100), 0 };
		json_t *launch = json_object_get(v.time, "launch"),
		       *noop = json_pack("{s:s, s:[i], s:[i]}", "kernel", "pack", "global", 1,
					 "local", 1),
		       *tdoc = tdoc_new(100, 100, 1, 2), *r, *ev;

		if (cases[i].noop_ms >= 0) {
			json_object_set_new(noop, "median_ms", json_real(cases[i].noop_ms));
			json_object_set_new(json_array_get(launch, 0), "median_ms",
					    json_real(cases[i].main_ms));
		}
		json_array_insert_new(launch, 0, noop);
		r = result_build(&b, &v, NULL, NULL, tdoc);
		CHECK_STR(str(r, NULL, "status"), "ok");
		CHECK_STR(str(r, "roofline", "bottleneck"), cases[i].bottleneck);
		ev = json_array_get(json_object_get(json_object_get(r, "roofline"), "evidence"), 0);
		if (cases[i].kernel)
			CHECK(strstr(json_string_value(ev), "(kernel pack)") != NULL);
		json_decref(r);
		json_decref(tdoc);
		json_decref(v.check);
		json_decref(v.time);
	}
}

int main(void)
{
	char msg[512];

	if (batch_parse(&b, batch_text, strlen(batch_text), msg, sizeof(msg))) {
		fprintf(stderr, "test batch does not parse: %s\n", msg);
		return 1;
	}
	RUN(status_and_paired_speedup);
	RUN(failed_check_is_not_timed);
	RUN(timing_fault_overrides_ok_check);
	RUN(roofline_classes_and_peak_gate);
	RUN(roofline_judges_the_main_step);
	batch_release(&b);
	return test_summary();
}
