/*
 * fake_evalpod.c - stands in for evalpod in bench/kube.sh, where a thousand
 * pods must finish without a thousand OpenCL runs: it reads its batch from
 * the presigned URL in the environment (as evalpod does), and uploads
 * through the batch's presigned PUTs an "ok" result for the baseline and
 * every variant, and a summary, shaped as docs/result.md has them, so kctl
 * records and ranks them as it does real ones.
 *
 * Nothing is built, run or timed.  Each program's samples are made up from
 * its id (the same id always gets the same times, 0.5 to 1.5 ms), the
 * reference's are FAKE_REF_MS, and every program passes its checks; the
 * launch plans, element counts and flops/bytes are the batch's own
 * expressions, evaluated.  The device is named bench/fake_evalpod and has
 * no measured peaks, so every bottleneck is "unknown".
 *
 * Uses common/ only: http, jsonx, expr and defines.
 */
#include "defines.h"
#include "expr.h"
#include "http.h"
#include "jsonx.h"
#include "stats.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Samples per program, one per timing round (evalpod's default min_samples). */
#define FAKE_SAMPLES 10
/* The reference's median in ms: the speedups are against it. */
#define FAKE_REF_MS 4.0

/* Each sample's offset from its program's median; the middle two sorted are 0. */
static const double fake_spread[FAKE_SAMPLES] = { -0.010, 0.004, -0.002, 0.008,  0.000,
						  -0.006, 0.002, 0.012,  -0.004, 0.000 };

/* The device every document names: none is opened. */
static const struct {
	const char *key, *text;
	json_int_t num;
} fake_device[] = {
	{ .key = "platform", .text = "bench/fake_evalpod" },
	{ .key = "platform_version", .text = "none" },
	{ .key = "name", .text = "bench/fake_evalpod" },
	{ .key = "vendor", .text = "kctl bench" },
	{ .key = "driver", .text = "none" },
	{ .key = "version", .text = "none" },
	{ .key = "type", .text = "other" },
	{ .key = "compute_units", .num = 1 },
	{ .key = "max_clock_mhz", .num = 0 },
	{ .key = "global_mem_bytes", .num = 0 },
	{ .key = "local_mem_bytes", .num = 0 },
	{ .key = "global_cache_bytes", .num = 0 },
	{ .key = "max_alloc_bytes", .num = 0 },
	{ .key = "max_work_group_size", .num = 1024 },
};

/* --- made-up times ------------------------------------------------------------ */

static uint64_t fake_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* id's samples around median: the spread, rotated by id, so per-round ratios differ. */
static void fake_samples(const char *id, double median, double *ms)
{
	uint64_t rot = fake_hash(id) % FAKE_SAMPLES;

	for (size_t i = 0; i < FAKE_SAMPLES; i++)
		ms[i] = median * (1 + fake_spread[(i + rot) % FAKE_SAMPLES]);
}

static double fake_program_ms(const char *id)
{
	return 0.5 + (double)(fake_hash(id) % 1000) / 1000.0;
}

static int fake_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The stats object of docs/result.md over x[0..FAKE_SAMPLES-1], as evalpod makes it. */
static json_t *fake_stats(const double *x)
{
	struct stats st;

	stats_compute(x, FAKE_SAMPLES, &st);
	return stats_json(&st);
}

static double fake_median(const double *x)
{
	struct stats st;

	stats_compute(x, FAKE_SAMPLES, &st);
	return st.median;
}

/* A speedup object of base over cand, timed in the same rounds (0..FAKE_SAMPLES-1). */
static json_t *fake_speedup(const double *base, const double *cand)
{
	double r[FAKE_SAMPLES];

	for (size_t i = 0; i < FAKE_SAMPLES; i++)
		r[i] = base[i] / cand[i];
	qsort(r, FAKE_SAMPLES, sizeof(r[0]), fake_cmp);
	return json_pack("{s:f, s:I, s:f, s:f, s:f}", "ratio_of_medians",
			 fake_median(base) / fake_median(cand), "pairs", (json_int_t)FAKE_SAMPLES,
			 "paired_median", stats_quantile(r, FAKE_SAMPLES, 0.5), "paired_p25",
			 stats_quantile(r, FAKE_SAMPLES, 0.25), "paired_p75",
			 stats_quantile(r, FAKE_SAMPLES, 0.75));
}

/* --- the batch's expressions ------------------------------------------------ */

/* The shape's values, and with prog its -D options and #defines. */
static void fake_vars(json_t *shape, json_t *prog, struct expr_vars *vars)
{
	const char *key;
	json_t *v;

	json_object_foreach (json_object_get(shape, "values"), key, v)
		expr_vars_set(vars, key, json_integer_value(v));
	if (prog)
		defines_collect(json_string_value(json_object_get(prog, "source")),
				json_string_value(json_object_get(prog, "build_options")), vars);
}

/* e (an integer or an expression) over vars; null, said on stderr, when it has no value. */
static json_t *fake_eval(json_t *e, struct expr_vars *vars)
{
	char msg[256];
	int64_t out;

	if (json_is_integer(e))
		return json_integer(json_integer_value(e));
	if (json_is_string(e) &&
	    !expr_eval(json_string_value(e), expr_vars_lookup, vars, &out, msg, sizeof(msg)))
		return json_integer(out);
	fprintf(stderr, "fake_evalpod: '%s' has no value: %s\n",
		json_is_string(e) ? json_string_value(e) : "?",
		json_is_string(e) ? msg : "not an expression");
	return json_null();
}

static json_t *fake_eval_all(json_t *exprs, struct expr_vars *vars)
{
	json_t *out = json_array(), *e;
	size_t i;

	json_array_foreach (exprs, i, e)
		json_array_append_new(out, fake_eval(e, vars));
	return out;
}

/* The resolved plan of steps: {"kernel", "global", "local"} per step. */
static json_t *fake_launch(json_t *steps, json_t *shape, json_t *prog)
{
	struct expr_vars vars = EXPR_VARS_INIT;
	json_t *plan = json_array(), *st;
	size_t i;

	fake_vars(shape, prog, &vars);
	json_array_foreach (steps, i, st) {
		json_t *local = json_object_get(st, "local");

		json_array_append_new(plan,
				      json_pack("{s:O, s:o, s:o}", "kernel",
						json_object_get(st, "kernel"), "global",
						fake_eval_all(json_object_get(st, "global"), &vars),
						"local",
						json_is_array(local) ? fake_eval_all(local, &vars)
								     : json_null()));
	}
	expr_vars_release(&vars);
	return plan;
}

/* The batch's timed shape: the one marked timed, else the first. */
static json_t *fake_timed_shape(json_t *batch)
{
	json_t *shapes = json_object_get(batch, "shapes"), *sh;
	size_t i;

	json_array_foreach (shapes, i, sh)
		if (json_is_true(json_object_get(sh, "timed")))
			return sh;
	return json_array_get(shapes, 0);
}

/* --- the stages of a result ------------------------------------------------- */

static json_t *fake_compile(json_t *steps)
{
	json_t *kernels = json_array(), *st;
	size_t i;

	json_array_foreach (steps, i, st)
		json_array_append_new(kernels,
				      json_pack("{s:O, s:i, s:i, s:i, s:i, s:[i, i, i]}", "name",
						json_object_get(st, "kernel"), "work_group_size",
						1024, "preferred_multiple", 1, "private_mem_bytes",
						0, "local_mem_bytes", 0, "compile_work_group_size",
						0, 0, 0));
	return json_pack("{s:b, s:f, s:s, s:b, s:o, s:f}", "ok", 1, "build_ms", 1.0, "log", "",
			 "log_truncated", 0, "kernels", kernels, "first_launch_ms", 0.5);
}

/* One comparison per output/inout buffer of prog at shape: every element matches. */
static json_t *fake_comparisons(json_t *batch, json_t *shape, json_t *prog)
{
	struct expr_vars vars = EXPR_VARS_INIT;
	json_t *out = json_array(), *buf;
	size_t i;

	fake_vars(shape, prog, &vars);
	json_array_foreach (json_object_get(json_object_get(batch, "problem"), "buffers"), i, buf) {
		const char *role = json_string_value(json_object_get(buf, "role"));

		if (!role || (strcmp(role, "output") && strcmp(role, "inout")))
			continue;
		json_array_append_new(
			out, json_pack("{s:O, s:o, s:i, s:i, s:i, s:f, s:f, s:f, s:i, s:f, s:f}",
				       "buffer", json_object_get(buf, "name"), "count",
				       fake_eval(json_object_get(buf, "count"), &vars),
				       "mismatches", 0, "unwritten", 0, "nonfinite", 0, "max_abs",
				       0.0, "mean_abs", 0.0, "rel_l2", 0.0, "worst_index", 0,
				       "worst_got", 0.0, "worst_ref", 0.0));
	}
	expr_vars_release(&vars);
	return out;
}

/* obj's number key, or dflt when it has none. */
static double fake_num(json_t *obj, const char *key, double dflt)
{
	json_t *v = json_object_get(obj, key);

	return json_is_number(v) ? json_number_value(v) : dflt;
}

/* Every shape and seed of the batch's correctness settings (evalpod's defaults), passed. */
static json_t *fake_correctness(json_t *batch, json_t *prog)
{
	json_t *c = json_object_get(batch, "correctness"), *seeds = json_object_get(c, "seeds");
	json_t *det = json_object_get(c, "determinism"), *shapes = json_array(), *sh, *seed;
	json_t *dflt = json_pack("[i, i, i]", 1, 2, 3);
	size_t i, k;

	json_array_foreach (json_object_get(batch, "shapes"), i, sh) {
		json_t *cmp = fake_comparisons(batch, sh, prog), *list = json_array();

		json_array_foreach (json_is_array(seeds) ? seeds : dflt, k, seed) {
			json_t *e = json_pack("{s:O, s:O}", "seed", seed, "buffers", cmp);

			if (!k)
				json_object_set_new(e, "first_run_host_ms", json_real(0.1));
			if (!json_is_false(det)) {
				json_object_set(e, "rerun", cmp);
				json_object_set_new(e, "bitwise_identical", json_true());
			}
			json_array_append_new(list, e);
		}
		json_array_append_new(shapes,
				      json_pack("{s:O, s:o}", "shape", json_object_get(sh, "name"),
						"seeds", list));
		json_decref(cmp);
	}
	json_decref(dflt);
	return json_pack("{s:f, s:f, s:b, s:o}", "atol", fake_num(c, "atol", 1e-4), "rtol",
			 fake_num(c, "rtol", 1e-4), "passed", 1, "shapes", shapes);
}

static json_t *fake_ir(json_t *steps)
{
	json_t *kernels = json_object(), *st;
	size_t i;

	json_array_foreach (steps, i, st)
		json_object_set_new(
			kernels, json_string_value(json_object_get(st, "kernel")),
			json_pack("{s:s}", "note", "bench/fake_evalpod builds no code"));
	return json_pack("{s:o, s:[]}", "kernels", kernels, "artifacts");
}

static json_t *fake_device_json(void)
{
	json_t *d = json_object();

	for (size_t i = 0; i < sizeof(fake_device) / sizeof(fake_device[0]); i++)
		json_object_set_new(d, fake_device[i].key,
				    fake_device[i].text ? json_string(fake_device[i].text)
							: json_integer(fake_device[i].num));
	return d;
}

/* The timing record of ms, as the reference's in the summary and a program's performance. */
static json_t *fake_timing(const double *ms, json_t *launch)
{
	json_t *samples = json_array(), *host = json_array(), *rounds = json_array();
	double hms[FAKE_SAMPLES], timed = 0;

	for (size_t i = 0; i < FAKE_SAMPLES; i++) {
		hms[i] = ms[i] + 0.02;
		timed += ms[i];
		json_array_append_new(samples, json_real(ms[i]));
		json_array_append_new(host, json_real(hms[i]));
		json_array_append_new(rounds, json_integer((json_int_t)i));
	}
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:i, s:f, s:f, s:f, s:f}", "launch",
			 launch, "samples_ms", samples, "host_ms", host, "rounds", rounds, "stats",
			 fake_stats(ms), "host_stats", fake_stats(hms), "reps_per_sample", 1,
			 "timed_ms", timed, "warmup_ms", 3 * fake_median(ms), "first_launch_ms",
			 0.5, "rebuild_ms", 1.0);
}

/* "stable", "noisy" or "unstable", by robust_cv as evalpod grades it. */
static const char *fake_quality(double robust_cv)
{
	return robust_cv <= 0.02 ? "stable" : robust_cv <= 0.05 ? "noisy" : "unstable";
}

/* performance of ms at shape, against the reference's ref and (when not NULL) the baseline's. */
static json_t *fake_performance(const double *ms, const double *ref, const double *base,
				json_t *shape, json_t *launch)
{
	json_t *p = fake_timing(ms, launch), *st = json_object_get(p, "stats");
	double med = json_number_value(json_object_get(st, "median"));
	double iqr = json_number_value(json_object_get(st, "iqr"));
	double hi = json_number_value(json_object_get(st, "p75")) + 1.5 * iqr;
	double rcv = (iqr / 1.349) / med;
	json_int_t out = 0;

	for (size_t i = 0; i < FAKE_SAMPLES; i++)
		out += ms[i] > hi;
	json_object_set(p, "shape", json_object_get(shape, "name"));
	json_object_set_new(p, "median_ms", json_real(med));
	json_object_set_new(p, "host_over_event",
			    json_real(json_number_value(json_object_get(
					      json_object_get(p, "host_stats"), "median")) /
				      med));
	json_object_set_new(p, "stopped_by", json_string("min_time_ms"));
	json_object_set_new(p, "robust_cv", json_real(rcv));
	json_object_set_new(p, "outliers", json_integer(out));
	json_object_set_new(p, "quality", json_string(fake_quality(rcv)));
	json_object_set_new(p, "warnings", json_array());
	json_object_set_new(p, "reference_median_ms", json_real(fake_median(ref)));
	json_object_set_new(p, "speedup_vs_reference", fake_speedup(ref, ms));
	if (base) {
		json_object_set_new(p, "baseline_median_ms", json_real(fake_median(base)));
		json_object_set_new(p, "speedup_vs_baseline", fake_speedup(base, ms));
	}
	return p;
}

/* The roofline at the timed shape: its flops and bytes, no peaks to hold them against. */
static json_t *fake_roofline(json_t *batch, json_t *shape, double median_ms)
{
	json_t *prob = json_object_get(batch, "problem"), *r = json_object(), *f = NULL, *b = NULL;
	struct expr_vars vars = EXPR_VARS_INIT;
	double flops = NAN, bytes = NAN;

	fake_vars(shape, NULL, &vars);
	if (json_object_get(prob, "flops"))
		f = fake_eval(json_object_get(prob, "flops"), &vars);
	if (json_object_get(prob, "bytes"))
		b = fake_eval(json_object_get(prob, "bytes"), &vars);
	if (json_is_integer(f))
		flops = (double)json_integer_value(f);
	if (json_is_integer(b))
		bytes = (double)json_integer_value(b);
	jx_set_real(r, "flops", flops);
	jx_set_real(r, "bytes", bytes);
	jx_set_real(r, "gflops", flops / (median_ms * 1e6));
	jx_set_real(r, "gbs", bytes / (median_ms * 1e6));
	jx_set_real(r, "peak_gflops", NAN);
	jx_set_real(r, "peak_gbs", NAN);
	jx_set_real(r, "fraction_of_peak_flops", NAN);
	jx_set_real(r, "fraction_of_peak_bw", NAN);
	jx_set_real(r, "arithmetic_intensity", bytes > 0 ? flops / bytes : NAN);
	jx_set_real(r, "ridge_point", NAN);
	json_object_set_new(r, "bottleneck", json_string("unknown"));
	json_object_set_new(r, "evidence",
			    json_pack("[s]", "no flops or bytes figure (or no measured peaks)"));
	json_decref(f);
	json_decref(b);
	expr_vars_release(&vars);
	return r;
}

/* --- the documents ---------------------------------------------------------- */

/* What one run of the batch shares among its documents. */
struct fake_run {
	json_t *batch, *shape, *steps;
	double ref[FAKE_SAMPLES], base[FAKE_SAMPLES];
	int has_base;
};

/* prog's result document ("baseline" or "variant"), every stage passed. */
static json_t *fake_result(struct fake_run *run, json_t *prog, const char *role)
{
	const char *id = json_string_value(json_object_get(prog, "id"));
	json_t *parent = json_object_get(prog, "parent"), *why = json_object_get(prog, "rationale");
	const char *opts = json_string_value(json_object_get(prog, "build_options"));
	json_t *res;
	double ms[FAKE_SAMPLES];

	fake_samples(id, fake_program_ms(id), ms);
	res = json_pack(
		"{s:s, s:i, s:O, s:s, s:O, s:s, s:s, s:O, s:s, s:f, s:{}}", "schema",
		"evalpod.result", "version", 1, "batch_id", json_object_get(run->batch, "batch_id"),
		"id", id, "parent", parent ? parent : json_null(), "role", role, "build_options",
		opts ? opts : "", "rationale", why && !strcmp(role, "variant") ? why : json_null(),
		"status", "ok", "check_wall_ms", 0.0, "artifacts");
	json_object_set_new(res, "device", fake_device_json());
	json_object_set_new(res, "compile", fake_compile(run->steps));
	json_object_set_new(res, "correctness", fake_correctness(run->batch, prog));
	json_object_set_new(res, "ir", fake_ir(run->steps));
	json_object_set_new(res, "performance",
			    fake_performance(ms, run->ref, run->has_base ? run->base : NULL,
					     run->shape,
					     fake_launch(run->steps, run->shape, prog)));
	json_object_set_new(res, "roofline",
			    fake_roofline(run->batch, run->shape, fake_median(ms)));
	return res;
}

/* The summary: the results' outcomes, the reference's build and timing, the fake device. */
static json_t *fake_summary(struct fake_run *run, json_t *outcomes, double wall_ms)
{
	json_t *b = run->batch, *ref = json_object_get(b, "reference");
	json_t *steps = json_object_get(json_object_get(b, "problem"), "reference_launch");
	json_t *perf, *sum;

	perf = fake_timing(run->ref, fake_launch(steps ? steps : run->steps, run->shape, ref));
	json_object_set_new(perf, "status", json_string("ok"));
	sum = json_pack("{s:s, s:i, s:O, s:O, s:{s:{s:b, s:f, s:s}, s:o, s:b, s:{}}, s:o}",
			"schema", "evalpod.summary", "version", 1, "batch_id",
			json_object_get(b, "batch_id"), "results", outcomes, "reference", "compile",
			"ok", 1, "build_ms", 1.0, "log", "", "performance", perf, "outputs_cached",
			0, "artifacts", "device", fake_device_json());
	json_object_set_new(sum, "peaks",
			    json_pack("{s:f, s:f, s:f, s:b}", "gflops", 0.0, "gbs", 0.0,
				      "launch_us", 0.0, "cached", 0));
	json_object_set_new(sum, "timing",
			    json_pack("{s:i, s:f, s:i, s:[i, i, i]}", "rounds", FAKE_SAMPLES,
				      "wall_ms", wall_ms, "flush_bytes", 0, "timing_seeds", 1, 2,
				      3));
	json_object_set_new(sum, "wall_ms", json_real(wall_ms));
	return sum;
}

static int fake_put(const char *url, json_t *doc)
{
	char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS), msg[512];
	struct http_response r;
	int rc = http_request("PUT", url, text, strlen(text), NULL, &r, msg, sizeof(msg));

	if (rc)
		fprintf(stderr, "fake_evalpod: %s\n", msg);
	http_response_release(&r);
	free(text);
	return rc;
}

/* Uploads prog's result; appends its outcome to outcomes.  Nonzero when it could not. */
static int fake_upload(struct fake_run *run, json_t *prog, const char *role, json_t *outcomes)
{
	const char *id = json_string_value(json_object_get(prog, "id"));
	const char *url = json_string_value(json_object_get(
		json_object_get(json_object_get(run->batch, "outputs"), "results"), id));
	json_t *res = fake_result(run, prog, role);
	int failed = 1;

	if (!url)
		fprintf(stderr, "fake_evalpod: the batch has no result URL for '%s'\n", id);
	else
		failed = fake_put(url, res);
	json_array_append_new(outcomes,
			      json_pack("{s:s, s:s, s:O}", "id", id, "status", "ok", "performance",
					json_object_get(res, "performance")));
	json_decref(res);
	return failed;
}

/* The batch the environment names (parsed; caller frees), or NULL, said on stderr. */
static json_t *fake_batch(void)
{
	const char *url = getenv("EVALPOD_BATCH_URL"), *idx = getenv("JOB_COMPLETION_INDEX");
	char name[64], msg[512];
	struct http_response r;
	json_t *b;

	if (!url && idx) {
		snprintf(name, sizeof(name), "EVALPOD_BATCH_URL_%s", idx);
		url = getenv(name);
	}
	if (!url || http_request("GET", url, NULL, 0, NULL, &r, msg, sizeof(msg))) {
		fprintf(stderr, "fake_evalpod: no batch: %s\n", url ? msg : "no URL");
		if (url)
			http_response_release(&r);
		return NULL;
	}
	b = json_loadb(r.body, r.body_len, 0, NULL);
	http_response_release(&r);
	if (!b)
		fprintf(stderr, "fake_evalpod: the batch is not JSON\n");
	return b;
}

static double fake_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(void)
{
	double t0 = fake_now_ms();
	struct fake_run run = { .batch = fake_batch() };
	json_t *outs = json_object_get(run.batch, "outputs"), *outcomes = json_array(), *v;
	json_t *base = json_object_get(run.batch, "baseline"), *sum;
	size_t i;
	int failed = 0;

	if (!run.batch) {
		json_decref(outcomes);
		return 3;
	}
	run.shape = fake_timed_shape(run.batch);
	run.steps = json_object_get(json_object_get(run.batch, "problem"), "launch");
	fake_samples("reference", FAKE_REF_MS, run.ref);
	run.has_base = json_is_object(base);
	if (run.has_base) {
		const char *id = json_string_value(json_object_get(base, "id"));

		fake_samples(id, fake_program_ms(id), run.base);
		failed |= fake_upload(&run, base, "baseline", outcomes);
	}
	json_array_foreach (json_object_get(run.batch, "variants"), i, v)
		failed |= fake_upload(&run, v, "variant", outcomes);
	sum = fake_summary(&run, outcomes, fake_now_ms() - t0);
	if (json_string_value(json_object_get(outs, "summary")))
		failed |= fake_put(json_string_value(json_object_get(outs, "summary")), sum);
	json_decref(sum);
	json_decref(outcomes);
	json_decref(run.batch);
	return failed ? 3 : 0;
}
