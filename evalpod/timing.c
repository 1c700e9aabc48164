/*
 * timing.c - the timing worker: stages 3 (performance) and 4 (trace).
 *
 * Every program that passed its checks (the reference and the baseline
 * included) is rebuilt from its saved binary in this one process and timed
 * on the same buffers, in rounds: each round visits the unfinished programs
 * in a freshly shuffled order and takes one sample of each, so slow drift
 * of the machine lands on all of them alike and every speedup is a ratio
 * of samples taken side by side.
 *
 * A sample is R runs of the whole launch plan (R calibrated during warm-up
 * so that a sample lasts at least sample_min_ms).  Before each run one of
 * WORKER_TIMING_SETS input sets is uploaded afresh (the sets rotate from
 * run to run) and the outputs are poisoned; before the first run a kernel
 * writes over a buffer twice the last-level cache to flush it.  The
 * sample's time is the mean over its runs of (END of the last kernel -
 * START of the first) from profiling events, so uploads and poisoning are
 * never timed; the host clock around the sample is the cross-check.
 *
 * Every sample is verified: the outputs of one of its runs, picked at
 * random, are compared with the reference outputs for that run's input
 * set, and the guards are checked; the read-only inputs are checked after
 * the first and the last sample.  A kernel therefore cannot behave during
 * the checks and idle, replay an earlier answer or scribble while timed,
 * and damage is repaired so that it is blamed on the kernel that did it.
 *
 * This file opens the timer, builds and warms up the programs and runs the
 * rounds; timing-sample.c takes and verifies one sample; timing-audit.c
 * then times the fastest programs on inputs new to them; timing-report.c
 * writes what they measured (time.json, traces) and looks after the device
 * peaks (timing-internal.h).  May use the other evalpod modules (world,
 * prog, clrt, judge, worker, pocladopt) and common/.
 */
#include "timing-internal.h"
#include "worker.h"
#include "err.h"
#include "fileio.h"
#include "flush.h"
#include "judge.h"
#include "jsonx.h"
#include "log.h"
#include "peaks.h"
#include "pocladopt.h"
#include "prog.h"
#include "screen.h"
#include "splitmix.h"
#include "stats.h"
#include "world.h"
#include "xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_REPS         1000
#define GPU_FLUSH_MIN    ((int64_t)512 << 20) /* a GPU's cache flush, at least */
#define CPU_FLUSH_MAX    ((int64_t)256 << 20) /* a CPU's, at most (setup_flush) */
#define CALIBRATION_RUNS 3  /* warm-up runs at least: the fastest sets the repetitions */
#define SHARED_REPS_SPAN 16 /* programs whose samples stay under 16 x sample_min_ms share R */

static int load_ids(struct timer *t)
{
	char *path = xasprintf("%s/ids.txt", t->dir), *text = NULL, *save = NULL;
	int rc = file_read(path, 1 << 20, &text, NULL, t->msg, sizeof(t->msg));

	free(path);
	if (rc)
		return rc;
	t->progs = xcalloc(t->b.nvariants + 2, sizeof(*t->progs));
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct tprog *p;

		if (!*line || t->nprogs >= t->b.nvariants + 2)
			continue;
		p = &t->progs[t->nprogs];
		p->line = (uint32_t)t->nprogs++;
		p->id = xstrdup(line);
		p->src = batch_source(&t->b, line);
		p->doc = json_pack("{s:s}", "status", "ok");
		p->trace = json_array();
		p->active = 1;
		if (!p->src)
			timing_fail(p, "infra_error", "infrastructure", "batch",
				    "program not in the batch");
	}
	free(text);
	return 0;
}

static json_t *launch_json(const struct plan *pl)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < pl->nsteps; i++) {
		const struct pstep *st = &pl->steps[i];
		json_t *g = json_array(), *l = st->has_local ? json_array() : json_null();

		for (unsigned d = 0; d < st->dims; d++) {
			json_array_append_new(g, json_integer((json_int_t)st->global[d]));
			if (st->has_local)
				json_array_append_new(l, json_integer((json_int_t)st->local[d]));
		}
		json_array_append_new(arr, json_pack("{s:s, s:o, s:o}", "kernel", st->name,
						     "global", g, "local", l));
	}
	return arr;
}

/* The POCL_CACHE_DIR the parent gave this worker, when PoCL is the driver. */
static const char *pocl_cache_dir(void)
{
	return getenv("POCL_CACHE_DIR");
}

/*
 * PoCL: the program as its check worker compiled it (pocladopt.h), so that
 * neither the build nor the first launch compiles it again.  Returns the
 * adopted directory (for pocladopt_verify after the build) or NULL: then
 * the program is compiled here, as it would be without the check worker's.
 */
static char *adopt_compiled(struct timer *t, const char *dir, struct pocl_progs *before)
{
	const char *cache = pocl_cache_dir();
	char *from, *adopted, why[1024];

	if (!cache || !clrt_is_pocl(&t->rt.info))
		return NULL;
	from = xasprintf("%s/pocl", dir);
	adopted = pocladopt_take(from, cache, before, why, sizeof(why));
	if (!adopted && *why)
		log_info("compiling again for timing: %s", why);
	free(from);
	return adopted;
}

static int prepare_prog(struct timer *t, struct tprog *p)
{
	struct expr_vars vars = EXPR_VARS_INIT;
	int is_ref = !strcmp(p->id, "reference");
	char *dir = is_ref ? worker_dir(t->work, "reference") : worker_prog_dir(t->work, p->id);
	char *path = xasprintf("%s/bin.bin", dir), *bin = NULL;
	char *opts = is_ref ? xstrdup(p->src->options) : screen_build_options(p->src->options);
	const struct launch_spec *launch = t->b.launch;
	size_t len = 0, nlaunch = t->b.nlaunch;
	int rc;

	if (is_ref) {
		launch = t->b.ref_launch;
		nlaunch = t->b.nref_launch;
	}
	if (!file_read_untrusted(path, 1u << 30, &bin, &len, t->msg, sizeof(t->msg))) {
		rc = prog_build_binary(&p->pg, &t->rt, bin, len, opts, t->b.limits.log_max_bytes,
				       t->msg, sizeof(t->msg));
	} else {
		struct pocl_progs before = { NULL, 0, 0 };
		char *adopted = adopt_compiled(t, dir, &before), why[1024];

		rc = prog_build_source(&p->pg, &t->rt, p->src->source, opts,
				       t->b.limits.log_max_bytes, t->msg, sizeof(t->msg));
		if (adopted &&
		    pocladopt_verify(pocl_cache_dir(), &before, adopted, why, sizeof(why)))
			log_warn("program '%s': %s", p->id, why);
		json_object_set_new(p->doc, "compiled_by_check", json_boolean(adopted != NULL));
		pocladopt_release(&before);
		free(adopted);
	}
	p->rebuild_ms = p->pg.build_ms;
	free(opts);
	free(bin);
	free(path);
	free(dir);
	if (rc) {
		timing_fail(p, rc == KERR_INVALID ? "compile_error" : "infra_error",
			    rc == KERR_INVALID ? "candidate" : "infrastructure", "rebuild", t->msg);
		return 0;
	}
	batch_program_vars(&t->b, p->src, t->shape, &vars);
	rc = plan_bind(&p->plan, &t->w, p->pg.program, launch, nlaunch, &vars, t->msg,
		       sizeof(t->msg));
	expr_vars_release(&vars);
	if (rc) {
		timing_fail(p, "runtime_error", "candidate", "launch_setup", t->msg);
		return 0;
	}
	json_object_set_new(p->doc, "launch", launch_json(&p->plan));
	return 0;
}

static int setup_flush(struct timer *t)
{
	int64_t bytes = t->b.measure.flush_bytes;
	char *refdir, *bin;
	cl_uint zero = 0;
	cl_int err;
	int rc;

	if (!t->b.measure.flush)
		return 0;
	if (bytes <= 0) {
		bytes = (int64_t)(t->rt.info.global_cache ? t->rt.info.global_cache : 8u << 20) * 2;
		/*
		 * A GPU's reported cache is no guide: the H200 reports 4 MiB for
		 * an L2 of 60 MB, and AMD's Infinity Cache is not reported at all.
		 * At 4 TB/s, 512 MiB costs ~0.13 ms a sample.
		 */
		if (!strcmp(t->rt.info.type, "gpu") && bytes < GPU_FLUSH_MIN)
			bytes = GPU_FLUSH_MIN;
		/*
		 * A CPU in a VM may report its host's whole L3, which the VM
		 * cannot fill: a 2-vCPU guest of a 2026 Xeon reports 480 MiB,
		 * and reading a buffer there slows to memory's pace between 64
		 * and 128 MiB.  Its 960 MiB flush made a 512^3 batch take 53.0 s,
		 * against 24.6 s with this bound.  256 MiB is 2 x what that guest can use,
		 * and 2 x the L3 of most servers' 2-core slices.
		 */
		if (strcmp(t->rt.info.type, "gpu") && bytes > CPU_FLUSH_MAX)
			bytes = CPU_FLUSH_MAX;
	}
	/*
	 * On a CPU device the buffers are this process's memory, so their own
	 * lines can be evicted from the host instead (world_flush_lines, before
	 * every sample; world_lines_bytes only counts what that evicts):
	 * on the Xeon guest (build/bench/flush_probe, 21 rounds) a 4 MiB
	 * buffer read back after it no faster than after the 256 MiB read
	 * flush (the fastest of 21: 0.250 and 0.288 ms against 0.239 and
	 * 0.265; 0.199 and 0.237 ms with no flush), which it did in 0.26 ms
	 * against 10.5-14.7 ms.  Both go at about 20 GB/s there, so where the
	 * buffers outgrow the read flush that would evict the caches (bytes,
	 * before the memory bounds below) that one is cheaper, and it runs
	 * instead; the reference worker saved no binary of it then, so this
	 * worker builds its source (timing.flush_built_from "source").
	 * flush_kind "read", or a flush_bytes, asks for the read flush.
	 */
	if (flush_uses_lines(&t->b.measure, t->rt.info.type) &&
	    !world_lines_bytes(&t->w, &t->flush_lines_bytes) &&
	    t->flush_lines_bytes <= (uint64_t)bytes) {
		t->flush_by_lines = 1;
		return 0;
	}
	if ((uint64_t)bytes > t->rt.info.max_alloc / 2)
		bytes = (int64_t)(t->rt.info.max_alloc / 2);
	if ((uint64_t)bytes > FLUSH_MEM_SHARE(t))
		bytes = (int64_t)FLUSH_MEM_SHARE(t);
	refdir = worker_dir(t->work, "reference");
	t->flush_items = (size_t)bytes / FLUSH_GRAIN;
	if (!t->flush_items)
		t->flush_items = 1;
	bin = xasprintf("%s/" FLUSH_BINARY, refdir);
	rc = flush_kernel(&t->flush_k, &t->rt, bin, &t->flush_from_binary, t->msg, sizeof(t->msg));
	free(bin);
	free(refdir);
	if (rc)
		return rc;
	t->flush_buf = clCreateBuffer(t->rt.ctx, CL_MEM_READ_WRITE, t->flush_items * FLUSH_GRAIN,
				      NULL, &err);
	if (err != CL_SUCCESS)
		return kerr_set(t->msg, sizeof(t->msg), KERR_NOMEM,
				"cache flush buffer (%zu bytes): %s", t->flush_items * FLUSH_GRAIN,
				clrt_errstr(err));
	t->flush_out = clCreateBuffer(t->rt.ctx, CL_MEM_WRITE_ONLY, 16, NULL, &err);
	if (err != CL_SUCCESS)
		return kerr_set(t->msg, sizeof(t->msg), KERR_NOMEM,
				"cache flush result buffer (16 bytes): %s", clrt_errstr(err));
	/* Zeros, which XOR to 0: the flush never writes (enqueue_flush's v is odd). */
	err = clEnqueueFillBuffer(t->rt.queue, t->flush_buf, &zero, sizeof(zero), 0,
				  t->flush_items * FLUSH_GRAIN, 0, NULL, NULL);
	if (err == CL_SUCCESS)
		err = clFinish(t->rt.queue);
	if (err != CL_SUCCESS)
		return kerr_set(t->msg, sizeof(t->msg), KERR_OPENCL,
				"cache flush buffer: zeroing it failed: %s", clrt_errstr(err));
	clSetKernelArg(t->flush_k, 0, sizeof(cl_mem), &t->flush_buf);
	clSetKernelArg(t->flush_k, 1, sizeof(cl_mem), &t->flush_out);
	return 0;
}

/*
 * Prepares the timing input sets (host copies of every initialised buffer)
 * and places each output buffer's capture in the judge's memory; every run
 * uploads its set itself (timing_sample).  The reference outputs never enter
 * this process.
 */
static int load_timing_sets(struct timer *t)
{
	size_t nb = t->b.nbuffers, off = 0;

	t->seen = xcalloc(nb, sizeof(*t->seen));
	for (size_t i = 0; i < nb; i++) {
		struct wbuf *wb = &t->w.bufs[i];

		if (wb->spec->role != ROLE_OUTPUT && wb->spec->role != ROLE_INOUT)
			continue;
		if (off + wb->bytes > t->jc.len)
			return kerr_set(t->msg, sizeof(t->msg), KERR_IO,
					"the outputs do not fit the judge's memory");
		t->seen[i] = (char *)t->jc.shm + off;
		off += wb->bytes;
	}
	for (unsigned k = 0; k < WORKER_TIMING_SETS; k++) {
		t->sets[k] = xcalloc(nb, sizeof(void *));
		world_generate(&t->w, t->tseeds[k]);
		for (size_t i = 0; i < nb; i++) {
			struct wbuf *wb = &t->w.bufs[i];

			if (wb->init) {
				t->sets[k][i] = xmalloc(wb->bytes);
				memcpy(t->sets[k][i], wb->init, wb->bytes);
			}
		}
	}
	t->cur_set = WORKER_TIMING_SETS - 1;
	return 0;
}

/* Runs of the plan per sample for a plan that takes ms: until sample_min_ms. */
static int reps_for(const struct timer *t, double ms)
{
	double r = ms > 0 ? ceil(t->b.measure.sample_min_ms / ms) : 1;

	return r < 1 ? 1 : r > MAX_REPS ? MAX_REPS : (int)r;
}

/*
 * Warms p up and calibrates its repetitions from its fastest warm-up run
 * (a load spike only ever slows a run down, so the fastest is the least
 * disturbed).
 */
static void warm_up(struct timer *t, struct tprog *p)
{
	double ms = 0, host = 0, t0 = clrt_now_ms();
	int warm = t->b.measure.warmup > CALIBRATION_RUNS ? t->b.measure.warmup : CALIBRATION_RUNS;

	p->cal_ms = INFINITY;
	for (int i = 0; i < warm && !p->failed; i++) {
		double h0 = clrt_now_ms();

		timing_sample(t, p, 1, &ms, &host, 0, NULL);
		if (i == 0)
			p->first_launch_ms = clrt_now_ms() - h0 - ms;
		if (ms > 0 && ms < p->cal_ms)
			p->cal_ms = ms;
	}
	if (!p->failed)
		timing_verify_memory(t, p, 0, 1);
	if (p->failed)
		return;
	p->reps = reps_for(t, isfinite(p->cal_ms) ? p->cal_ms : 0);
	json_object_set_new(p->doc, "warmup_ms", json_real(clrt_now_ms() - t0));
}

/*
 * Every sample starts after a cache flush, so its first run is cold and
 * weighs 1/R in the sample.  Two programs of similar speed with different
 * R would differ by that alone (measured: 10 to 19% between identical
 * kernels timed with R = 1 and R = 13).  So every program whose samples
 * stay within SHARED_REPS_SPAN x sample_min_ms at the R of the fastest
 * program takes that R; only much slower ones keep their own.
 */
static void share_reps(struct timer *t)
{
	double fastest = INFINITY, span = SHARED_REPS_SPAN * t->b.measure.sample_min_ms;
	int r0;

	for (size_t i = 0; i < t->nprogs; i++)
		if (!t->progs[i].failed && t->progs[i].cal_ms > 0 && t->progs[i].cal_ms < fastest)
			fastest = t->progs[i].cal_ms;
	if (!isfinite(fastest))
		return;
	r0 = reps_for(t, fastest);
	for (size_t i = 0; i < t->nprogs; i++) {
		struct tprog *p = &t->progs[i];

		if (!p->failed && isfinite(p->cal_ms) && p->cal_ms * r0 <= span)
			p->reps = r0;
	}
}

static void add_sample(struct tprog *p, double ms, double host, size_t round)
{
	struct stats st;

	p->samples = xreallocarray(p->samples, p->nsamples + 1, sizeof(double));
	p->host = xreallocarray(p->host, p->nsamples + 1, sizeof(double));
	p->round_of = xreallocarray(p->round_of, p->nsamples + 1, sizeof(size_t));
	p->samples[p->nsamples] = ms;
	p->host[p->nsamples] = host;
	p->round_of[p->nsamples] = round;
	p->nsamples++;
	p->total_ms += ms * p->reps;
	stats_compute(p->samples, p->nsamples, &st);
	p->median = st.median;
	p->fastest = st.min;
	stats_median_ci(p->samples, p->nsamples, &p->ci_lo, &p->ci_hi);
}

/*
 * measurement.peak_probe: one run of the FMA probe in this round, as
 * t->probe_gf[round] (0 when it failed: a round without a figure).
 */
static void probe_round(struct timer *t, size_t round)
{
	double gf = 0;
	char msg[512];

	if (fma_probe_run(&t->rt, &t->probe, &gf, msg, sizeof(msg)))
		log_warn("the FMA probe in round %zu: %s", round, msg);
	t->probe_gf = xreallocarray(t->probe_gf, round + 1, sizeof(*t->probe_gf));
	for (size_t r = t->nprobe; r < round; r++)
		t->probe_gf[r] = 0;
	t->probe_gf[round] = gf;
	t->nprobe = round + 1;
}

/*
 * Visits the active programs in a shuffled order, the FMA probe at a random
 * place among them when it is open; returns how many programs remain.
 */
static size_t run_round(struct timer *t, size_t round, size_t *order)
{
	size_t active = 0, probe_at;

	for (size_t i = 0; i < t->nprogs; i++)
		if (t->progs[i].active)
			order[active++] = i;
	for (size_t i = active; i > 1; i--) {
		size_t j = (size_t)(timing_rand(t) % i), tmp = order[i - 1];

		order[i - 1] = order[j];
		order[j] = tmp;
	}
	probe_at = t->probe.k ? (size_t)(timing_rand(t) % (active + 1)) : SIZE_MAX;
	for (size_t k = 0; k <= active; k++) {
		struct tprog *p;
		double ms = 0, host = 0;

		if (k == probe_at)
			probe_round(t, round);
		if (k == active)
			break;
		p = &t->progs[order[k]];

		worker_progress(t->dir, p->id);
		if (timing_sample(t, p, p->reps, &ms, &host, 1, NULL)) {
			if (t->lost)
				return 0;
			/* whatever else it damaged must not be blamed on the next program */
			world_paint_guards(&t->w, t->msg, sizeof(t->msg));
			continue;
		}
		add_sample(p, ms, host, round);
		timing_verify_outputs(t, p, p->nsamples, 0);
		if (!p->failed)
			timing_verify_memory(t, p, p->nsamples,
					     p->nsamples == 1 || timing_done(t, p));
		else
			world_paint_guards(&t->w, t->msg, sizeof(t->msg));
		if (!p->failed && timing_done(t, p))
			p->active = 0;
	}
	active = 0;
	for (size_t i = 0; i < t->nprogs; i++)
		active += (size_t)t->progs[i].active;
	return active;
}

static int timer_open(struct timer *t, const char *work, const uint64_t *tseeds, long shape)
{
	char *reads[3] = { xasprintf("%s/batch.json", work), xasprintf("%s/w", work), NULL };
	char *note;
	int rc;

	memset(t, 0, sizeof(*t));
	t->work = work;
	t->tseeds = tseeds;
	t->dir = worker_dir(work, "time");
	/* Before the device is opened, so that the driver's threads are confined too. */
	rc = worker_confine(t->dir, (const char *const *)reads, 0, &t->sandbox, t->msg,
			    sizeof(t->msg));
	free(reads[0]);
	free(reads[1]);
	if (rc || (rc = worker_judge_open(&t->jc, t->msg, sizeof(t->msg))))
		return rc;
	note = xasprintf("%s/fault", t->dir);
	world_fault_handler_install(note);
	free(note);
	if ((rc = worker_load(&t->b, work, t->msg, sizeof(t->msg))))
		return rc;
	t->shape = shape < 0 ? t->b.timed_shape : (size_t)shape;
	if (t->shape >= t->b.nshapes || !t->b.shapes[t->shape].timed)
		return kerr_set(t->msg, sizeof(t->msg), KERR_INVALID,
				"shape %ld is not a timed shape of the batch", shape);
	t->rng = t->b.measure.order_seed;
	if ((rc = clrt_open(&t->rt, &t->b.device, t->msg, sizeof(t->msg))) ||
	    (rc = worker_lock_spawn(&t->rt, t->sandbox, t->msg, sizeof(t->msg))))
		return rc;
	if ((rc = load_ids(t)))
		return rc;
	if ((rc = world_open(&t->w, &t->rt, &t->b, t->shape, t->msg, sizeof(t->msg))))
		return rc;
	if ((rc = world_fill(&t->w, t->tseeds[0], POISON_A, t->msg, sizeof(t->msg))))
		return rc;
	if ((rc = load_timing_sets(t)))
		return rc;
	return setup_flush(t);
}

static void timer_close(struct timer *t)
{
	for (size_t i = 0; i < t->nprogs; i++) {
		struct tprog *p = &t->progs[i];

		plan_release(&p->plan);
		prog_release(&p->pg);
		json_decref(p->doc);
		json_decref(p->trace);
		free(p->samples);
		free(p->host);
		free(p->round_of);
		free(p->id);
	}
	free(t->progs);
	free(t->seen);
	fma_probe_close(&t->probe);
	free(t->probe_gf);
	for (unsigned k = 0; k < WORKER_TIMING_SETS; k++) {
		for (size_t i = 0; t->sets[k] && i < t->b.nbuffers; i++)
			free(t->sets[k][i]);
		free(t->sets[k]);
	}
	worker_judge_close(&t->jc);
	json_decref(t->sandbox);
	free(t->dir);
	if (t->flush_k)
		clReleaseKernel(t->flush_k);
	if (t->flush_buf)
		clReleaseMemObject(t->flush_buf);
	if (t->flush_out)
		clReleaseMemObject(t->flush_out);
	world_close(&t->w);
	clrt_close(&t->rt);
	batch_release(&t->b);
}

int worker_time(const char *work, const uint64_t *tseeds)
{
	return worker_time_at(work, tseeds, -1);
}

int worker_time_at(const char *work, const uint64_t *tseeds, long shape)
{
	struct timer t;
	struct peaks pk;
	size_t rounds = 0, *order = NULL;
	double t0 = clrt_now_ms(), need_gf, need_gb;
	int rc;

	memset(&pk, 0, sizeof(pk));
	rc = timer_open(&t, work, tseeds, shape);
	if (!rc) {
		/* Measured before any candidate runs here; the parent keeps the cache. */
		worker_progress(t.dir, "peaks");
		rc = first_peaks(&t, &pk);
	}
	for (size_t i = 0; !rc && !t.lost && i < t.nprogs; i++) {
		worker_progress(t.dir, t.progs[i].id);
		if (!t.progs[i].failed)
			prepare_prog(&t, &t.progs[i]);
		if (!t.progs[i].failed)
			warm_up(&t, &t.progs[i]);
	}
	if (!rc && !t.lost && t.b.measure.peak_probe) {
		char msg[512];

		worker_progress(t.dir, "peak probe");
		if (fma_probe_open(&t.rt, &t.probe, msg, sizeof(msg))) {
			log_warn("no FMA probe beside the programs: %s", msg);
			fma_probe_close(&t.probe);
		}
	}
	if (!rc && !t.lost) {
		share_reps(&t);
		order = xcalloc(t.nprogs + 1, sizeof(*order));
		while (run_round(&t, rounds, order))
			rounds++;
		if (!t.lost)
			audit_programs(&t);
	}
	if (!rc && t.lost) {
		/* The progress record names the culprit; the note says what failed. */
		char *note = xasprintf("%s/fault", t.dir), msg[512];
		char *line = xasprintf("%s; the device context was unusable after it\n", t.msg);

		if (file_write_atomic(note, line, strlen(line), msg, sizeof(msg)))
			log_warn("%s", msg);
		free(line);
		free(note);
		free(order);
		timer_close(&t);
		return WORKER_EXIT_DEVICE_LOST;
	}
	if (!rc) {
		if (above_peaks(&t, &pk, &need_gf, &need_gb))
			confirm_peaks(&t, &pk, need_gf, need_gb);
		rc = write_time_doc(&t, &pk, rounds + 1, clrt_now_ms() - t0);
	}
	if (rc)
		log_error("timing: %s", t.msg);
	free(order);
	timer_close(&t);
	return rc ? WORKER_EXIT_INFRA : 0;
}
