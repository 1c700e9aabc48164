/*
 * check.c - the reference worker and the per-program check worker
 * (stages 1 compile, 2 correctness and 5 IR analysis).  See worker.h.
 */
#include "worker.h"
#include "err.h"
#include "fileio.h"
#include "flush.h"
#include "ir.h"
#include "irpocl.h"
#include "judge.h"
#include "jsonx.h"
#include "log.h"
#include "pocladopt.h"
#include "prog.h"
#include "sandbox.h"
#include "screen.h"
#include "world.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

struct ck {
	const char *work, *id;
	char *dir; /* the worker's own directory */
	struct batch b;
	struct clrt rt;
	const struct source_spec *src;
	struct judge_client jc;
	int reorder;            /* the second run launches the work-groups in reverse order */
	const uint64_t *tseeds; /* the reference worker: this run's timing seeds */
	json_t *doc;            /* DIR/doc.json */
	json_t *ran;            /* names of the kernels launched at some shape: true */
	char msg[2048];
};

/* src without comments, string and character literals (a copy to search for names). */
static char *code_only(const char *src)
{
	char *out = xmalloc(strlen(src) + 1), *o = out;

	for (const char *p = src; *p;) {
		if (p[0] == '/' && p[1] == '/') {
			p += strcspn(p, "\n");
		} else if (p[0] == '/' && p[1] == '*') {
			const char *end = strstr(p + 2, "*/");

			p = end ? end + 2 : p + strlen(p);
			*o++ = ' ';
		} else if (*p == '"' || *p == '\'') {
			char q = *p++;

			while (*p && *p != q)
				p += p[0] == '\\' && p[1] ? 2 : 1;
			p += *p == q;
			*o++ = ' ';
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
	return out;
}

/*
 * Whether src may be launched in chunks: its code (comments and literals
 * aside) never asks where its group lies.  A kernel can still opt out by
 * naming one of these in dead code: reversal catches races a device's
 * schedule hides by accident, it is not a defence against a kernel that
 * wants to hide one (see docs/evalpod.md, what remains out of reach).
 */
static int source_reorderable(const char *src)
{
	static const char *const words[] = { "get_group_id", "get_num_groups", "get_global_size",
					     "get_global_offset", "get_enqueued_local_size" };
	char *code = code_only(src);
	int ok = 1;

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]) && ok; i++)
		ok = !strstr(code, words[i]);
	free(code);
	return ok;
}

/* Runs the plan once; *span_ms from events, *host_ms from the host clock. */
static int run_once(struct clrt *rt, struct plan *p, int reversed, double *span_ms, double *host_ms,
		    char *msg, size_t n)
{
	cl_event *ev = xcalloc(p->nsteps, sizeof(*ev));
	double t0 = clrt_now_ms();
	cl_int err, status = CL_COMPLETE;
	int rc = 0;

	if (reversed) {
		err = plan_enqueue_reversed(p, rt->queue, &ev[p->nsteps - 1]);
		if (err == CL_SUCCESS)
			err = clFinish(rt->queue);
		*host_ms = clrt_now_ms() - t0;
		*span_ms = 0;
		if (ev[p->nsteps - 1])
			clReleaseEvent(ev[p->nsteps - 1]);
		free(ev);
		if (err != CL_SUCCESS)
			return kerr_set(msg, n, KERR_OPENCL,
					"a launch in reverse group order failed: %s",
					clrt_errstr(err));
		return 0;
	}
	err = plan_enqueue(p, rt->queue, ev, msg, n);
	if (err != CL_SUCCESS) {
		free(ev);
		return err == CL_OUT_OF_HOST_MEMORY ? KERR_NOMEM : KERR_OPENCL;
	}
	err = clWaitForEvents(1, &ev[p->nsteps - 1]);
	*host_ms = clrt_now_ms() - t0;
	for (size_t i = 0; i < p->nsteps && !rc; i++) {
		clGetEventInfo(ev[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status), &status,
			       NULL);
		if (status < 0)
			rc = kerr_set(msg, n, KERR_OPENCL, "launch[%zu] kernel '%s' failed: %s",
				      p->steps[i].index, p->steps[i].name, clrt_errstr(status));
	}
	if (!rc && err != CL_SUCCESS)
		rc = kerr_set(msg, n, KERR_OPENCL, "waiting for the kernels: %s", clrt_errstr(err));
	*span_ms = rc ? 0 : clrt_event_span_ms(ev[0], ev[p->nsteps - 1]);
	for (size_t i = 0; i < p->nsteps; i++)
		clReleaseEvent(ev[i]);
	free(ev);
	return rc;
}

static void ck_save(struct ck *c)
{
	char *path = xasprintf("%s/doc.json", c->dir), *text = jx_dump(c->doc);
	char msg[512];

	if (file_write_atomic(path, text, strlen(text), msg, sizeof(msg)))
		log_error("%s", msg);
	free(text);
	free(path);
}

static void ck_status(struct ck *c, const char *status, const char *origin, const char *kind,
		      const char *message)
{
	json_object_set_new(c->doc, "status", json_string(status));
	if (kind)
		json_object_set_new(c->doc, "fault",
				    json_pack("{s:s, s:s, s:s}", "origin", origin, "kind", kind,
					      "message", message));
	ck_save(c);
}

/*
 * Hands the outputs of the run just made to the judge in the parent and
 * waits for its verdict.  Returns 0; KERR_INVALID with *kind set
 * ("unwritten_output", "wrong_values") and msg; or KERR_OPENCL/KERR_IO.
 */
static int judge_outputs(struct ck *c, struct world *w, size_t seed_index, int run,
			 const char **kind)
{
	struct judge_req q = { .magic = JUDGE_MAGIC, .what = JUDGE_CHECK };
	struct judge_rep rep;
	size_t off = 0;

	for (size_t i = 0; i < c->b.nbuffers; i++) {
		struct wbuf *wb = &w->bufs[i];
		cl_int err;

		if (wb->spec->role != ROLE_OUTPUT && wb->spec->role != ROLE_INOUT)
			continue;
		if (off + wb->bytes > c->jc.len) {
			*kind = "harness";
			return kerr_set(c->msg, sizeof(c->msg), KERR_IO,
					"the outputs do not fit the judge's memory");
		}
		err = clEnqueueReadBuffer(c->rt.queue, wb->mem, CL_TRUE, 0, wb->bytes,
					  (char *)c->jc.shm + off, 0, NULL, NULL);
		if (err != CL_SUCCESS) {
			*kind = "harness";
			return kerr_set(c->msg, sizeof(c->msg), KERR_OPENCL, "reading '%s': %s",
					wb->spec->name, clrt_errstr(err));
		}
		off += wb->bytes;
	}
	q.shape = (uint32_t)w->shape;
	q.seed = (uint32_t)seed_index;
	q.run = (uint32_t)run;
	if (worker_judge_ask(&c->jc, &q, &rep, c->msg, sizeof(c->msg))) {
		*kind = "harness";
		return KERR_IO;
	}
	if (rep.verdict == JUDGE_PASS)
		return 0;
	*kind = rep.verdict == JUDGE_UNWRITTEN ? "unwritten_output" : "wrong_values";
	return kerr_set(c->msg, sizeof(c->msg), KERR_INVALID, "%s", rep.message);
}

enum { CK_PASS = 0, CK_FAIL = 1, CK_INFRA = 2 };

#define FIRST_RUN "the first run at shape '%s', where drivers such as PoCL compile the kernels"

static int ck_fault(struct ck *c, const char *status, const char *kind)
{
	ck_status(c, status, "candidate", kind, c->msg);
	return CK_FAIL;
}

static int ck_infra(struct ck *c, const char *kind)
{
	ck_status(c, "infra_error", "infrastructure", kind, c->msg);
	return CK_INFRA;
}

/* One run of a seed: fresh inputs and poison p, run, guards, inputs, verdict. */
static int check_run(struct ck *c, struct world *w, struct plan *p, size_t k, int run, json_t *out,
		     double *first_launch)
{
	const char *kind = "";
	double span = 0, host = 0;
	int rc;

	/* The second run takes the inputs the first was given, not made again. */
	rc = run ? world_refill(w, POISON_B, c->msg, sizeof(c->msg))
		 : world_fill(w, c->b.correct.seeds[k], POISON_A, c->msg, sizeof(c->msg));
	if (rc)
		return ck_infra(c, "harness");
	rc = run_once(&c->rt, p, run && c->reorder, &span, &host, c->msg, sizeof(c->msg));
	if (rc)
		return rc == KERR_NOMEM ? ck_infra(c, "out_of_memory")
					: ck_fault(c, "runtime_error", "launch_failed");
	if (first_launch) {
		*first_launch += host > span ? host - span : 0;
		json_object_set_new(out, "first_run_host_ms", json_real(host));
	}
	if (world_check_guards(w, c->msg, sizeof(c->msg)))
		return ck_fault(c, "runtime_error", "out_of_bounds_write");
	if (!run && world_check_inputs(w, c->msg, sizeof(c->msg)))
		return ck_fault(c, "incorrect", "input_modified");
	rc = judge_outputs(c, w, k, run, &kind);
	if (rc == KERR_INVALID && run) /* the judge's message says it was the second run */
		return ck_fault(c, "incorrect", "nondeterministic");
	if (rc)
		return rc == KERR_INVALID ? ck_fault(c, "incorrect", kind) : ck_infra(c, kind);
	return CK_PASS;
}

/* One seed: fresh inputs, run, guards, inputs, outputs; again for determinism. */
static int check_seed(struct ck *c, struct world *w, struct plan *p, size_t k, json_t *out,
		      double *first_launch)
{
	int verdict;

	json_object_set_new(out, "seed", json_integer((json_int_t)c->b.correct.seeds[k]));
	verdict = check_run(c, w, p, k, 0, out, first_launch);
	if (verdict == CK_PASS && c->b.correct.determinism)
		verdict = check_run(c, w, p, k, 1, out, NULL);
	return verdict;
}

static int check_shape(struct ck *c, struct prog *pg, size_t s, json_t *shapes,
		       double *first_launch)
{
	struct expr_vars vars = EXPR_VARS_INIT;
	struct world w;
	struct plan p = { NULL, 0 };
	json_t *js = json_pack("{s:s, s:[]}", "shape", c->b.shapes[s].name, "seeds");
	int verdict = CK_PASS, rc;

	json_array_append_new(shapes, js);
	batch_program_vars(&c->b, c->src, s, &vars);
	rc = world_open(&w, &c->rt, &c->b, s, c->msg, sizeof(c->msg));
	if (rc) {
		verdict = ck_infra(c, rc == KERR_NOMEM ? "out_of_memory" : "problem");
		goto out;
	}
	rc = plan_bind(&p, &w, pg->program, c->b.launch, c->b.nlaunch, &vars, c->msg,
		       sizeof(c->msg));
	if (rc) {
		verdict = ck_fault(c, "runtime_error",
				   rc == KERR_INVALID ? "bad_geometry" : "launch_setup");
		goto out;
	}
	for (size_t i = 0; i < p.nsteps; i++)
		json_object_set_new(c->ran, p.steps[i].name, json_true());
	c->reorder = plan_reorder_ok(&p) && source_reorderable(c->src->source);
	for (size_t i = 0; i < c->b.correct.nseeds && verdict == CK_PASS; i++) {
		json_t *jseed = json_object();
		/* a shape's first run is its geometry's first launch: PoCL compiles then */
		char *at = i ? NULL : xasprintf(FIRST_RUN, c->b.shapes[s].name);

		json_array_append_new(json_object_get(js, "seeds"), jseed);
		worker_progress_at(c->dir, "correctness", at);
		free(at);
		verdict = check_seed(c, &w, &p, i, jseed, i == 0 ? first_launch : NULL);
		ck_save(c);
	}
out:
	plan_release(&p);
	world_close(&w);
	expr_vars_release(&vars);
	return verdict;
}

static int save_artifact(struct ck *c, const char *name, const char *text, size_t len, json_t *list)
{
	char *dir = xasprintf("%s/art", c->dir), *path = xasprintf("%s/%s", dir, name);
	char msg[512];
	int rc = dir_make(dir, msg, sizeof(msg));

	if (!rc)
		rc = file_write_atomic(path, text, len, msg, sizeof(msg));
	if (rc)
		log_warn("%s", msg);
	else
		json_array_append_new(list, json_string(name));
	free(path);
	free(dir);
	return rc;
}

/* Stage 5 (static part): what the driver exposes about the code. */
static void stage_ir(struct ck *c, struct prog *pg)
{
	json_t *ir = json_object(), *kernels = json_object(), *arts = json_array();
	char *cache = xasprintf("%s/pocl", c->dir);
	int pocl = clrt_is_pocl(&c->rt.info);

	json_object_set_new(ir, "kernels", kernels);
	json_object_set_new(ir, "artifacts", arts);
	for (size_t i = 0; i < c->b.nlaunch; i++) {
		const char *k = c->b.launch[i].kernel;
		char *irt = NULL, *asmt = NULL, msg[512];
		size_t irl = 0, asml = 0;
		json_t *entry = json_object(), *a = NULL;

		if (json_object_get(kernels, k)) {
			json_decref(entry);
			continue;
		}
		json_object_set_new(kernels, k, entry);
		if (!pocl) {
			/* Other drivers keep no per-kernel IR; NVIDIA's PTX is ir.ptx. */
			snprintf(msg, sizeof(msg),
				 "per-kernel IR and machine code are read from PoCL's cache only; "
				 "platform '%s'%s",
				 c->rt.info.platform,
				 strstr(c->rt.info.platform, "NVIDIA") ? ": see ir.ptx" : "");
			json_object_set_new(entry, "note", json_string(msg));
			continue;
		}
		if (!json_object_get(c->ran, k)) {
			json_object_set_new(
				entry, "note",
				json_string("not launched at any checked shape (its "
					    "global size is 0 there), so never compiled"));
			continue;
		}
		if (irpocl_collect(cache, k, 8u << 20, &irt, &irl, &asmt, &asml, msg,
				   sizeof(msg))) {
			json_object_set_new(entry, "note", json_string(msg));
			continue;
		}
		if (irt && !ir_analyze_text("llvm-ir", irt, irl, &a, msg, sizeof(msg))) {
			json_object_set_new(entry, "llvm_ir", a);
			char *name = xasprintf("%s.ll", k);
			save_artifact(c, name, irt, irl, arts);
			free(name);
		}
		if (asmt && !ir_analyze_text("x86-asm", asmt, asml, &a, msg, sizeof(msg))) {
			json_object_set_new(entry, "machine_code", a);
			char *name = xasprintf("%s.s", k);
			save_artifact(c, name, asmt, asml, arts);
			free(name);
		}
		free(irt);
		free(asmt);
	}
	if (strstr(c->rt.info.platform, "NVIDIA")) {
		void *bin = NULL;
		size_t len = 0;
		json_t *a = NULL;
		char msg[512];

		if (!prog_binary(pg, &bin, &len, msg, sizeof(msg)) &&
		    !ir_analyze_text("ptx", bin, strnlen(bin, len), &a, msg, sizeof(msg))) {
			json_object_set_new(ir, "ptx", a);
			save_artifact(c, "program.ptx", bin, strnlen(bin, len), arts);
		}
		free(bin);
	}
	json_object_set_new(c->doc, "ir", ir);
	free(cache);
}

/* The program binary, for the timing worker to build from. */
static void save_binary(struct ck *c, struct prog *pg)
{
	void *bin = NULL;
	size_t len = 0;
	char *path = xasprintf("%s/bin.bin", c->dir), msg[512];

	if (prog_binary(pg, &bin, &len, msg, sizeof(msg)) ||
	    file_write_atomic(path, bin, len, msg, sizeof(msg)))
		log_warn("program '%s' binary not kept, timing rebuilds it: %s", c->id, msg);
	free(bin);
	free(path);
}

/*
 * Program-scope variables in the global address space (OpenCL 2.0) keep
 * their contents from one launch to the next, so a kernel could remember
 * answers across timed runs: refused.  Constant tables are not counted.
 * Returns nonzero (msg set) when the program has any.
 */
static int program_state(struct ck *c, struct prog *pg)
{
	size_t bytes = 0;

	if (clGetProgramBuildInfo(pg->program, c->rt.device,
				  CL_PROGRAM_BUILD_GLOBAL_VARIABLE_TOTAL_SIZE, sizeof(bytes),
				  &bytes, NULL) != CL_SUCCESS ||
	    !bytes)
		return 0;
	kerr_set(c->msg, sizeof(c->msg), KERR_INVALID,
		 "the program has %zu bytes of program-scope global variables: they would keep "
		 "state from one launch to the next (use __constant tables or kernel arguments)",
		 bytes);
	return 1;
}

/*
 * Longest wait for the front end to build this program: its first build
 * reads PoCL's kernel library (0.5 to 0.7 s on the CI host, quiet), and a
 * check worker that compiles for itself reads it too, so a wait costs
 * nothing the compile would not; past this the machine is too busy to
 * count on it.
 */
#define FRONTEND_WAIT_MS 5000

static int exists(const char *path)
{
	struct stat st;

	return !lstat(path, &st);
}

/*
 * Whether id is a line of the file at path (the parent's, in a directory
 * the front end can write to: read as untrusted, so no FIFO blocks it).
 */
static int listed(const char *path, const char *id)
{
	char *text = NULL, *save = NULL;
	int found = 0;

	if (file_read_untrusted(path, 1u << 24, &text, NULL, NULL, 0))
		return 0;
	for (char *line = strtok_r(text, "\n", &save); line && !found;
	     line = strtok_r(NULL, "\n", &save))
		found = !strcmp(line, id);
	free(text);
	return found;
}

/*
 * When the front end builds this program (its id in pdir/.ids), waits
 * until the program is there (mine, pdir/ID), the front end gave up on it
 * (pdir/.failed-ID) or ended (pdir/.end, the parent's), at most
 * FRONTEND_WAIT_MS.  Returns the milliseconds waited, or -1 when there was
 * nothing to wait for.
 */
static double frontend_wait(const char *pdir, const char *id, const char *mine)
{
	char *ids = xasprintf("%s/.ids", pdir), *failed = xasprintf("%s/.failed-%s", pdir, id);
	char *end = xasprintf("%s/.end", pdir);
	double t0 = clrt_now_ms(), waited = -1;

	if (listed(ids, id)) {
		while (!exists(mine) && !exists(failed) && !exists(end) &&
		       clrt_now_ms() - t0 < FRONTEND_WAIT_MS)
			nanosleep(&(struct timespec){ 0, 5 * 1000 * 1000 }, NULL);
		waited = clrt_now_ms() - t0;
	}
	free(ids);
	free(failed);
	free(end);
	return waited;
}

/*
 * PoCL: the program as the front-end worker built it (frontend.c), waited
 * for when the front end builds it, so that this build finds it in the
 * cache and PoCL does not read its kernel library in this process.
 * Returns the adopted directory (for pocladopt_verify after the build) or
 * NULL, the front end's build time in *fe_ms (-1 when unknown) and the
 * time waited for it in *wait_ms (-1: no wait).
 */
static char *adopt_frontend(struct ck *c, struct pocl_progs *before, double *fe_ms, double *wait_ms)
{
	const char *cache = getenv("POCL_CACHE_DIR");
	char *from, *adopted, *pdir, why[1024];

	*fe_ms = *wait_ms = -1;
	if (!cache || !strcmp(c->id, "reference") || !clrt_is_pocl(&c->rt.info))
		return NULL;
	pdir = xasprintf("%s/w/frontend/p", c->work);
	from = xasprintf("%s/%s", pdir, c->id);
	*wait_ms = frontend_wait(pdir, c->id, from);
	free(pdir);
	adopted = pocladopt_take(from, cache, before, why, sizeof(why));
	if (!adopted && *why)
		log_info("compiling here: %s", why);
	if (adopted)
		*fe_ms = pocladopt_read_ms(from);
	free(from);
	return adopted;
}

/* Stage 1.  Returns CK_PASS, CK_FAIL (compile error recorded) or CK_INFRA. */
static int stage_compile(struct ck *c, struct prog *pg)
{
	json_t *comp = json_object(), *kernels;
	struct pocl_progs before = { NULL, 0, 0 };
	char *opts, *adopted, why[1024];
	double fe_ms, wait_ms;
	int rc;

	json_object_set_new(c->doc, "compile", comp);
	worker_progress(c->dir, "compile");
	adopted = adopt_frontend(c, &before, &fe_ms, &wait_ms);
	/* The guard definitions come last, so the candidate's own cannot undo them. */
	opts = screen_build_options(c->src->options);
	rc = prog_build_source(pg, &c->rt, c->src->source, opts, c->b.limits.log_max_bytes, c->msg,
			       sizeof(c->msg));
	free(opts);
	/* A directory PoCL did not use for this source was not this program's. */
	if (adopted &&
	    pocladopt_verify(getenv("POCL_CACHE_DIR"), &before, adopted, why, sizeof(why))) {
		log_warn("program '%s': %s", c->id, why);
		free(adopted);
		adopted = NULL;
	}
	pocladopt_release(&before);
	json_object_set_new(comp, "front_end", json_string(adopted ? "frontend" : "check"));
	if (adopted && fe_ms >= 0)
		json_object_set_new(comp, "front_end_build_ms", json_real(fe_ms));
	if (wait_ms >= 0)
		json_object_set_new(comp, "front_end_wait_ms", json_real(wait_ms));
	free(adopted);
	json_object_set_new(comp, "ok", json_boolean(rc == 0));
	json_object_set_new(comp, "build_ms", json_real(pg->build_ms));
	json_object_set_new(comp, "log", json_string(pg->log ? pg->log : ""));
	json_object_set_new(comp, "log_truncated", json_boolean(pg->log_truncated));
	if (rc == KERR_INVALID)
		return ck_fault(c, "compile_error", "compile_error");
	if (rc)
		return ck_infra(c, rc == KERR_NOMEM ? "out_of_memory" : "opencl");
	if (program_state(c, pg))
		return ck_fault(c, "compile_error", "program_scope_state");
	kernels = json_array();
	for (size_t i = 0; i < c->b.nlaunch; i++)
		json_array_append_new(kernels, prog_kernel_info(pg, &c->rt, c->b.launch[i].kernel));
	json_object_set_new(comp, "kernels", kernels);
	return CK_PASS; /* saved by worker_check, with the stage's time */
}

static int ck_open(struct ck *c, const char *work, const char *id)
{
	char *reads[3] = { xasprintf("%s/batch.json", work), xasprintf("%s/w/frontend/p", work),
			   NULL },
	     *note;
	json_t *report = NULL;
	int rc;

	memset(c, 0, sizeof(*c));
	c->work = work;
	c->id = id;
	c->dir = strcmp(id, "reference") ? worker_prog_dir(work, id) : worker_dir(work, id);
	c->doc = json_pack("{s:s, s:s}", "id", id, "status", "running");
	c->ran = json_object();
	/* Before the device is opened, so that the driver's threads are confined too. */
	rc = worker_confine(c->dir, (const char *const *)reads, 0, &report, c->msg, sizeof(c->msg));
	free(reads[0]);
	free(reads[1]);
	if (report)
		json_object_set_new(c->doc, "sandbox", report);
	if (rc)
		return ck_infra(c, "sandbox");
	note = xasprintf("%s/fault", c->dir);
	world_fault_handler_install(note);
	free(note);
	if (strcmp(id, "reference") && worker_judge_open(&c->jc, c->msg, sizeof(c->msg)))
		return ck_infra(c, "harness");
	if (worker_load(&c->b, work, c->msg, sizeof(c->msg)))
		return ck_infra(c, "batch");
	if (!(c->src = batch_source(&c->b, id))) {
		kerr_set(c->msg, sizeof(c->msg), KERR_NOTFOUND, "no program '%s' in the batch", id);
		return ck_infra(c, "batch");
	}
	if (clrt_open(&c->rt, &c->b.device, c->msg, sizeof(c->msg)))
		return ck_infra(c, "no_device");
	if (worker_lock_spawn(&c->rt, json_object_get(c->doc, "sandbox"), c->msg, sizeof(c->msg)))
		return ck_infra(c, "sandbox");
	return CK_PASS;
}

static void ck_close(struct ck *c)
{
	clrt_close(&c->rt);
	batch_release(&c->b);
	json_decref(c->doc);
	json_decref(c->ran);
	worker_judge_close(&c->jc);
	free(c->dir);
}

/*
 * Records that the stage `name` took from *t until now, in the document's
 * stages_ms (docs/result.md), and moves *t on.
 */
static void stage_time(struct ck *c, const char *name, double *t)
{
	json_t *st = json_object_get(c->doc, "stages_ms");
	double now = clrt_now_ms();

	if (!st) {
		st = json_object();
		json_object_set_new(c->doc, "stages_ms", st);
	}
	json_object_set_new(st, name, json_real(now - *t));
	*t = now;
}

int worker_check(const char *work, const char *id)
{
	struct ck c;
	struct prog pg;
	json_t *corr, *shapes;
	double first_launch = 0, t = clrt_now_ms();
	int verdict;

	memset(&pg, 0, sizeof(pg));
	verdict = ck_open(&c, work, id);
	stage_time(&c, "open", &t);
	if (verdict == CK_PASS) {
		verdict = stage_compile(&c, &pg);
		stage_time(&c, "compile", &t);
		if (verdict == CK_PASS)
			ck_save(&c); /* stage 1's outcome, kept if a kernel ends the process */
	}
	if (verdict == CK_PASS) {
		shapes = json_array();
		corr = json_pack("{s:o, s:f, s:f}", "shapes", shapes, "atol", c.b.correct.atol,
				 "rtol", c.b.correct.rtol);
		json_object_set_new(c.doc, "correctness", corr);
		for (size_t s = 0; s < c.b.nshapes && verdict == CK_PASS; s++)
			verdict = check_shape(&c, &pg, s, shapes, &first_launch);
		json_object_set_new(corr, "passed", json_boolean(verdict == CK_PASS));
		json_object_set_new(json_object_get(c.doc, "compile"), "first_launch_ms",
				    json_real(first_launch));
		stage_time(&c, "correctness", &t);
		ck_save(&c); /* a failure was saved before these three were known */
	} else {
		ck_save(&c); /* with the stages' times, after the failure's own save */
	}
	if (verdict == CK_PASS) {
		worker_progress(c.dir, "ir");
		stage_ir(&c, &pg);
		stage_time(&c, "ir", &t);
		/*
		 * Not on PoCL: there a binary costs one more compile of every
		 * kernel (for no particular local size), and the timing worker
		 * adopts the program from this worker's PoCL cache instead
		 * (pocladopt.h).  The reference keeps its binary: the session's
		 * reference cache holds it for every later batch.
		 */
		if (!clrt_is_pocl(&c.rt.info))
			save_binary(&c, &pg);
		ck_status(&c, "ok", NULL, NULL, NULL);
	}
	prog_release(&pg);
	ck_close(&c);
	return verdict == CK_INFRA ? WORKER_EXIT_INFRA : 0;
}

/* Runs the reference for one seed and stores its outputs. */
static int reference_seed(struct ck *c, struct world *w, struct plan *p, uint64_t seed)
{
	double span = 0, host = 0;
	int rc;

	if ((rc = world_fill(w, seed, POISON_A, c->msg, sizeof(c->msg))) ||
	    (rc = run_once(&c->rt, p, 0, &span, &host, c->msg, sizeof(c->msg))) ||
	    (rc = world_check_guards(w, c->msg, sizeof(c->msg))))
		return rc;
	for (size_t i = 0; i < c->b.nbuffers && !rc; i++) {
		struct wbuf *wb = &w->bufs[i];
		struct cmp_stats s;
		void *got = NULL;
		char *path;

		if (wb->spec->role != ROLE_OUTPUT && wb->spec->role != ROLE_INOUT)
			continue;
		if ((rc = world_read(w, i, &got, c->msg, sizeof(c->msg))))
			break;
		world_compare(wb, got, got, 0, 0, wb->spec->role == ROLE_OUTPUT, POISON_A, &s);
		if (s.unwritten) {
			rc = kerr_set(c->msg, sizeof(c->msg), KERR_INVALID,
				      "the reference left %zu of %zu elements of '%s' unwritten at "
				      "shape '%s' (first at index %zu)",
				      s.unwritten, s.count, wb->spec->name,
				      c->b.shapes[w->shape].name, s.first_unwritten);
		} else {
			path = worker_ref_path(c->dir, w->shape, seed, i);
			rc = file_write_atomic(path, got, wb->bytes, c->msg, sizeof(c->msg));
			free(path);
		}
		free(got);
	}
	return rc;
}

static int reference_shape(struct ck *c, struct prog *pg, size_t s)
{
	struct expr_vars vars = EXPR_VARS_INIT;
	struct world w;
	struct plan p = { NULL, 0 };
	int rc;

	batch_program_vars(&c->b, c->src, s, &vars);
	rc = world_open(&w, &c->rt, &c->b, s, c->msg, sizeof(c->msg));
	if (!rc)
		rc = plan_bind(&p, &w, pg->program, c->b.ref_launch, c->b.nref_launch, &vars,
			       c->msg, sizeof(c->msg));
	for (size_t i = 0; i < c->b.correct.nseeds && !rc; i++)
		rc = reference_seed(c, &w, &p, c->b.correct.seeds[i]);
	for (unsigned k = 0; !rc && c->b.shapes[s].timed && k < WORKER_TIMING_SETS; k++)
		rc = reference_seed(c, &w, &p, c->tseeds[k]);
	plan_release(&p);
	world_close(&w);
	expr_vars_release(&vars);
	return rc;
}

int worker_reference(const char *work, const uint64_t *tseeds)
{
	struct ck c;
	struct prog pg;
	int verdict, rc = 0;
	char why[2048];

	memset(&pg, 0, sizeof(pg));
	verdict = ck_open(&c, work, "reference");
	c.tseeds = tseeds;
	if (verdict != CK_PASS)
		goto out;
	worker_progress(c.dir, "compile");
	rc = prog_build_source(&pg, &c.rt, c.src->source, c.src->options, c.b.limits.log_max_bytes,
			       c.msg, sizeof(c.msg));
	json_object_set_new(c.doc, "compile",
			    json_pack("{s:b, s:f, s:s}", "ok", rc == 0, "build_ms", pg.build_ms,
				      "log", pg.log ? pg.log : ""));
	if (rc) {
		strlcpy(why, c.msg, sizeof(why));
		snprintf(c.msg, sizeof(c.msg), "the reference does not compile: %s%s%s", why,
			 pg.log ? "\n" : "", pg.log ? pg.log : "");
	}
	worker_progress(c.dir, "outputs");
	for (size_t s = 0; s < c.b.nshapes && !rc; s++) {
		rc = reference_shape(&c, &pg, s);
		if (rc) {
			strlcpy(why, c.msg, sizeof(why));
			snprintf(c.msg, sizeof(c.msg), "reference at shape '%s': %s",
				 c.b.shapes[s].name, why);
		}
	}
	if (rc == KERR_NOMEM || rc == KERR_IO) {
		verdict = ck_infra(&c, rc == KERR_NOMEM ? "out_of_memory" : "io");
	} else if (rc) {
		ck_status(&c, "bad_batch", "batch", "reference", c.msg);
		verdict = CK_FAIL;
	} else {
		save_binary(&c, &pg);
		if (c.b.measure.flush && !flush_uses_lines(&c.b.measure, c.rt.info.type)) {
			char *path = xasprintf("%s/" FLUSH_BINARY, c.dir);

			flush_save_binary(&c.rt, path);
			free(path);
		}
		ck_status(&c, "ok", NULL, NULL, NULL);
	}
out:
	prog_release(&pg);
	ck_close(&c);
	return verdict == CK_INFRA ? WORKER_EXIT_INFRA : verdict == CK_FAIL ? WORKER_EXIT_BAD : 0;
}
