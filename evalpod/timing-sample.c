/*
 * timing-sample.c - one sample of the timing worker and its verification:
 * the uploads of an input set before every run (the rotating timing sets,
 * or an audit's new inputs), the poisoned outputs, the cache flush before
 * the first run, the runs themselves from profiling events, the capture of
 * one run's outputs for the parent's judge, and the guard and input checks
 * after it (docs/evalpod.md, "One sample").
 *
 * May use: timing-internal.h (struct timer), world, clrt, judge, worker,
 * splitmix and common/.  timing.c (the rounds) and timing-audit.c (the
 * audit) call it; it calls neither.
 */
#include "timing-internal.h"
#include "judge.h"
#include "log.h"
#include "splitmix.h"
#include "worker.h"
#include "world.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRACE_MAX_SAMPLES 64 /* a program's trace keeps its first 64 samples */

uint64_t timing_rand(struct timer *t)
{
	return splitmix_next(&t->rng);
}

void timing_fail(struct tprog *p, const char *status, const char *origin, const char *kind,
		 const char *message)
{
	p->failed = 1;
	p->active = 0;
	json_object_set_new(p->doc, "status", json_string(status));
	json_object_set_new(
		p->doc, "fault",
		json_pack("{s:s, s:s, s:s}", "origin", origin, "kind", kind, "message", message));
}

static cl_int enqueue_flush(struct timer *t, cl_event *ev)
{
	/* Odd: the flush's buffer holds zeros, so it never writes (setup_flush). */
	cl_uint v = (cl_uint)timing_rand(t) | 1;
	cl_int err;

	if (!t->flush_k)
		return CL_SUCCESS;
	clSetKernelArg(t->flush_k, 2, sizeof(v), &v);
	err = clEnqueueNDRangeKernel(t->rt.queue, t->flush_k, 1, NULL, &t->flush_items, NULL, 0,
				     NULL, ev);
	t->nflushes += err == CL_SUCCESS;
	return err;
}

static double ev_us(struct timer *t, cl_event ev, cl_profiling_info what)
{
	cl_ulong v = 0;

	clGetEventProfilingInfo(ev, what, sizeof(v), &v, NULL);
	if (!t->t0 || v < t->t0)
		t->t0 = t->t0 ? t->t0 : v;
	return v >= t->t0 ? (double)(v - t->t0) / 1e3 : 0.0;
}

static void trace_add(struct timer *t, struct tprog *p, cl_event ev, const char *name, int tid,
		      size_t sample)
{
	double ts, end;

	if (sample >= TRACE_MAX_SAMPLES)
		return;
	ts = ev_us(t, ev, CL_PROFILING_COMMAND_START);
	end = ev_us(t, ev, CL_PROFILING_COMMAND_END);
	json_array_append_new(p->trace, json_pack("{s:s, s:s, s:f, s:f, s:i, s:i, s:{s:I}}", "name",
						  name, "ph", "X", "ts", ts, "dur",
						  end > ts ? end - ts : 0.0, "pid", 1, "tid", tid,
						  "args", "sample", (json_int_t)sample));
}

/*
 * Before one timed run: uploads input set k into every initialised buffer
 * (inputs, inout, scratch) and poisons the outputs, all without blocking.
 * Every run starts from the set's pristine contents, so whatever a kernel
 * did to its inputs stays with that run, and consecutive runs see
 * different inputs, so an answer remembered from the run before is wrong.
 */
static cl_int prepare_run(struct timer *t, unsigned k)
{
	char msg[256];

	for (size_t i = 0; i < t->b.nbuffers; i++) {
		struct wbuf *wb = &t->w.bufs[i];
		cl_int err;

		if (!t->sets[k][i])
			continue;
		err = clEnqueueWriteBuffer(t->rt.queue, wb->mem, CL_FALSE, 0, wb->bytes,
					   t->sets[k][i], 0, NULL, NULL);
		if (err != CL_SUCCESS)
			return err;
	}
	t->cur_set = k;
	if (world_poison(&t->w, POISON_A, msg, sizeof(msg)))
		return CL_OUT_OF_RESOURCES;
	return CL_SUCCESS;
}

/* Enqueues non-blocking reads of every output/inout buffer into t->seen. */
static cl_int capture_outputs(struct timer *t)
{
	for (size_t i = 0; i < t->b.nbuffers; i++) {
		struct wbuf *wb = &t->w.bufs[i];
		cl_int err;

		if (!t->seen[i])
			continue;
		err = clEnqueueReadBuffer(t->rt.queue, wb->mem, CL_FALSE, 0, wb->bytes, t->seen[i],
					  0, NULL, NULL);
		if (err != CL_SUCCESS)
			return err;
	}
	return CL_SUCCESS;
}

static void release_events(cl_event *ev, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ev[i])
			clReleaseEvent(ev[i]);
}

/*
 * Whether the context still works after a failed launch: a GPU fault is
 * sticky (after an illegal address, NVIDIA's driver fails every later call
 * of the process), and the programs timed after the culprit would take the
 * blame for it.  PoCL's contexts survive a failed launch (a kernel's crash
 * is a signal there), so this answers no on it.
 */
static int context_lost(struct timer *t)
{
	cl_uint v = 0;
	cl_int err;
	cl_mem m = clCreateBuffer(t->rt.ctx, CL_MEM_READ_WRITE, 64, NULL, &err);

	if (err == CL_SUCCESS)
		err = clEnqueueFillBuffer(t->rt.queue, m, &v, sizeof(v), 0, 64, 0, NULL, NULL);
	if (err == CL_SUCCESS)
		err = clFinish(t->rt.queue);
	if (m)
		clReleaseMemObject(m);
	if (err != CL_SUCCESS)
		log_warn("timing: the device context is unusable after a failed launch (%s)",
			 clrt_errstr(err));
	return err != CL_SUCCESS;
}

/* Before run r of an audit sample: its inputs uploaded, the outputs poisoned. */
static cl_int prepare_audit_run(struct timer *t, const struct audit_inputs *a, int r)
{
	size_t off = 0;
	char msg[256];

	if (r == a->vrun)
		return prepare_run(t, a->vset);
	for (size_t i = 0; i < t->b.nbuffers; i++) {
		struct wbuf *wb = &t->w.bufs[i];
		cl_int err;

		if (!wb->init)
			continue;
		err = clEnqueueWriteBuffer(t->rt.queue, wb->mem, CL_FALSE, 0, wb->bytes,
					   a->fresh[r] + off, 0, NULL, NULL);
		if (err != CL_SUCCESS)
			return err;
		off += wb->bytes;
	}
	if (world_poison(&t->w, POISON_A, msg, sizeof(msg)))
		return CL_OUT_OF_RESOURCES;
	return CL_SUCCESS;
}

/*
 * One sample of p: R runs of the plan, each preceded by re-poisoned
 * outputs and a fresh upload of its input set, the first by a cache flush.  The
 * sample's time is the mean over runs of (END of the last kernel - START of
 * the first), so the poisoning between runs is never timed.  The outputs of
 * one run chosen at random are captured for timing_verify_outputs(): whatever a
 * run leaves behind was written by that run.  With audit, the runs take its
 * inputs instead, and only its run on the audit set is captured.  Returns
 * 0, or -1 when the plan failed to run (p is marked failed).
 */
int timing_sample(struct timer *t, struct tprog *p, int reps, double *ms, double *host_ms,
		  int record, const struct audit_inputs *audit)
{
	size_t ns = p->plan.nsteps, pick = (size_t)(timing_rand(t) % (uint64_t)reps);
	cl_event *ev = xcalloc((size_t)reps * ns, sizeof(*ev)), fl = NULL;
	cl_int err = CL_SUCCESS, status = CL_COMPLETE;
	double t0 = 0, sum = 0;

	if (audit)
		pick = audit->vrun < 0 ? (size_t)reps : (size_t)audit->vrun;
	/* A program's runs go round the input sets: no two in a row share one. */
	for (int r = 0; r < reps && err == CL_SUCCESS; r++) {
		unsigned k = (unsigned)((p->runs + (size_t)r) % WORKER_ROTATING_SETS);

		if (audit)
			k = audit->vset;
		err = audit ? prepare_audit_run(t, audit, r) : prepare_run(t, k);
		if (err == CL_SUCCESS && r == 0)
			err = enqueue_flush(t, record ? &fl : NULL);
		if (err == CL_SUCCESS && r == 0 && (err = clFinish(t->rt.queue)) == CL_SUCCESS) {
			/* After the uploads and the poisoning, which it writes back. */
			if (t->flush_by_lines)
				t->nflushes += world_flush_lines(&t->w) == 0;
			t0 = clrt_now_ms();
		}
		if (err == CL_SUCCESS)
			err = plan_enqueue(&p->plan, t->rt.queue, ev + (size_t)r * ns, t->msg,
					   sizeof(t->msg));
		if (err == CL_SUCCESS && (size_t)r == pick) {
			err = capture_outputs(t);
			t->sample_set = k;
		}
	}
	if (err == CL_SUCCESS)
		err = clWaitForEvents(1, &ev[(size_t)reps * ns - 1]);
	*host_ms = (clrt_now_ms() - t0) / reps;
	for (size_t i = 0; i < (size_t)reps * ns && err == CL_SUCCESS; i++) {
		clGetEventInfo(ev[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status), &status,
			       NULL);
		if (status < 0)
			err = status;
	}
	if (err != CL_SUCCESS) {
		snprintf(t->msg, sizeof(t->msg), "a timed run failed: %s", clrt_errstr(err));
		if (err == CL_OUT_OF_HOST_MEMORY || err == CL_MEM_OBJECT_ALLOCATION_FAILURE)
			timing_fail(p, "infra_error", "infrastructure", "out_of_memory", t->msg);
		else
			timing_fail(p, "runtime_error", "candidate", "launch_failed", t->msg);
		t->lost = context_lost(t);
	} else {
		for (int r = 0; r < reps; r++)
			sum += clrt_event_span_ms(ev[(size_t)r * ns], ev[(size_t)r * ns + ns - 1]);
		*ms = sum / reps;
		if (record && fl)
			trace_add(t, p, fl, "cache flush", 2, p->nsamples);
		for (size_t i = 0; record && i < ns; i++)
			trace_add(t, p, ev[(size_t)(reps - 1) * ns + i], p->plan.steps[i].name, 1,
				  p->nsamples);
	}
	p->runs += (size_t)reps;
	if (fl)
		clReleaseEvent(fl);
	clFinish(t->rt.queue);
	release_events(ev, (size_t)reps * ns);
	free(ev);
	return p->failed ? -1 : 0;
}

/*
 * Has the judge in the parent compare the outputs timing_sample captured (in
 * the judge's memory) with the reference for that run's input set.  The
 * parent records the verdict itself; this worker only stops timing p.
 */
void timing_verify_outputs(struct timer *t, struct tprog *p, size_t sample, int audit)
{
	struct judge_req q = { .magic = JUDGE_MAGIC, .what = audit ? JUDGE_AUDIT : JUDGE_TIMED };
	struct judge_rep rep;

	q.seed = t->sample_set;
	q.prog = p->line;
	q.sample = sample;
	if (worker_judge_ask(&t->jc, &q, &rep, t->msg, sizeof(t->msg)))
		timing_fail(p, "infra_error", "infrastructure", "harness", t->msg);
	else if (rep.verdict != JUDGE_PASS)
		timing_fail(p, "invalid", "candidate", "wrong_when_timed", rep.message);
}

/*
 * Checks the guards (after every sample: cheap) and, when inputs is set,
 * that the read-only inputs still hold the set the last run started from.
 * Damage is repaired so that it is blamed on p alone.
 */
void timing_verify_memory(struct timer *t, struct tprog *p, size_t sample, int inputs)
{
	char why[1024];

	if (world_check_guards(&t->w, why, sizeof(why))) {
		snprintf(t->msg, sizeof(t->msg), "timed sample %zu: %s", sample, why);
		timing_fail(p, "runtime_error", "candidate", "out_of_bounds_write", t->msg);
		world_paint_guards(&t->w, why, sizeof(why));
		return;
	}
	if (!inputs)
		return;
	for (size_t i = 0; i < t->b.nbuffers; i++)
		if (t->w.bufs[i].init)
			memcpy(t->w.bufs[i].init, t->sets[t->cur_set][i], t->w.bufs[i].bytes);
	if (world_check_inputs(&t->w, why, sizeof(why))) {
		snprintf(t->msg, sizeof(t->msg), "timed sample %zu: %s", sample, why);
		timing_fail(p, "invalid", "candidate", "input_modified_when_timed", t->msg);
	}
}
