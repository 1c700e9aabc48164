/*
 * check.c - the reference worker and the per-program check worker
 * (stages 1 compile, 2 correctness and 5 IR analysis).  See worker.h.
 */
#include "worker.h"
#include "err.h"
#include "fileio.h"
#include "ir.h"
#include "irpocl.h"
#include "jsonx.h"
#include "log.h"
#include "prog.h"
#include "world.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

struct ck {
	const char *work, *id;
	struct batch b;
	struct clrt rt;
	const struct source_spec *src;
	json_t *doc; /* WORK/check/ID.json */
	char msg[2048];
};

/* Runs the plan once; *span_ms from events, *host_ms from the host clock. */
static int run_once(struct clrt *rt, struct plan *p, double *span_ms, double *host_ms, char *msg,
		    size_t n)
{
	cl_event *ev = xcalloc(p->nsteps, sizeof(*ev));
	double t0 = clrt_now_ms();
	cl_int err, status = CL_COMPLETE;
	int rc = 0;

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
			rc = kerr_set(msg, n, KERR_OPENCL, "launch[%zu] kernel '%s' failed: %s", i,
				      p->steps[i].name, clrt_errstr(status));
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
	char *path = xasprintf("%s/check/%s.json", c->work, c->id), *text = jx_dump(c->doc);
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

/* Merges the program's #defines and -D options over shape s's values. */
static void program_vars(const struct batch *b, const struct source_spec *src, size_t s,
			 struct expr_vars *vars)
{
	const struct expr_vars *sv = &b->shapes[s].vars;

	for (size_t i = 0; i < sv->nr; i++)
		expr_vars_set(vars, sv->v[i].name, sv->v[i].value);
	batch_collect_defines(src->source, src->options, vars);
}

static json_t *cmp_json(const struct wbuf *wb, const struct cmp_stats *s)
{
	json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I}", "buffer", wb->spec->name, "count",
			      (json_int_t)s->count, "mismatches", (json_int_t)s->mismatches,
			      "unwritten", (json_int_t)s->unwritten, "nonfinite",
			      (json_int_t)s->nonfinite, "worst_index", (json_int_t)s->worst);

	jx_set_real(o, "max_abs", s->max_abs);
	jx_set_real(o, "mean_abs", s->mean_abs);
	jx_set_real(o, "rel_l2", s->rel_l2);
	jx_set_real(o, "worst_got", s->worst_got);
	jx_set_real(o, "worst_ref", s->worst_ref);
	return o;
}

static int load_ref(const char *work, size_t shape, uint64_t seed, size_t bi, size_t bytes,
		    void **out, char *msg, size_t n)
{
	char *path = worker_ref_path(work, shape, seed, bi);
	size_t len = 0;
	int rc = file_read(path, bytes + 1, (char **)out, &len, msg, n);

	if (!rc && len != bytes)
		rc = kerr_set(msg, n, KERR_IO, "reference output '%s' has %zu bytes, expected %zu",
			      path, len, bytes);
	free(path);
	return rc;
}

/*
 * Compares every output and inout buffer with the reference for seed.
 * Appends per-buffer figures to arr.  Returns 0 or KERR_INVALID with
 * *kind set ("unwritten_output", "wrong_values") and msg.
 */
static int compare_outputs(struct ck *c, struct world *w, uint64_t seed, enum poison p, json_t *arr,
			   void **keep, const char **kind)
{
	int rc = 0;

	for (size_t i = 0; i < c->b.nbuffers && !rc; i++) {
		struct wbuf *wb = &w->bufs[i];
		void *got = NULL, *ref = NULL;
		struct cmp_stats s;

		if (wb->spec->role != ROLE_OUTPUT && wb->spec->role != ROLE_INOUT)
			continue;
		if ((rc = world_read(w, i, &got, c->msg, sizeof(c->msg))) ||
		    (rc = load_ref(c->work, w->shape, seed, i, wb->bytes, &ref, c->msg,
				   sizeof(c->msg)))) {
			*kind = "harness";
			free(got);
			return rc == KERR_OPENCL ? KERR_OPENCL : KERR_IO;
		}
		world_compare(wb, got, ref, c->b.correct.atol, c->b.correct.rtol,
			      wb->spec->role == ROLE_OUTPUT, p, &s);
		json_array_append_new(arr, cmp_json(wb, &s));
		if (s.unwritten) {
			*kind = "unwritten_output";
			rc = kerr_set(
				c->msg, sizeof(c->msg), KERR_INVALID,
				"left %zu of %zu elements of '%s' unwritten (first at index %zu)",
				s.unwritten, s.count, wb->spec->name, s.first_unwritten);
		} else if (s.mismatches) {
			*kind = "wrong_values";
			rc = kerr_set(
				c->msg, sizeof(c->msg), KERR_INVALID,
				"'%s' differs from the reference in %zu of %zu elements; worst at "
				"index %zu: got %.9g, expected %.9g (max abs error %.3g)",
				wb->spec->name, s.mismatches, s.count, s.worst, s.worst_got,
				s.worst_ref, s.max_abs);
		}
		if (keep)
			keep[i] = got;
		else
			free(got);
		free(ref);
	}
	return rc;
}

enum { CK_PASS = 0, CK_FAIL = 1, CK_INFRA = 2 };

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

/* One seed: fresh inputs, run, guards, inputs, outputs; again for determinism. */
static int check_seed(struct ck *c, struct world *w, struct plan *p, uint64_t seed, json_t *out,
		      double *first_launch)
{
	const char *kind = "";
	void **first = xcalloc(c->b.nbuffers, sizeof(*first));
	json_t *bufs = json_array(), *bufs2;
	double span = 0, host = 0;
	int rc, verdict = CK_PASS;

	json_object_set_new(out, "seed", json_integer((json_int_t)seed));
	json_object_set_new(out, "buffers", bufs);
	if ((rc = world_fill(w, seed, POISON_A, c->msg, sizeof(c->msg)))) {
		verdict = ck_infra(c, "harness");
		goto out;
	}
	rc = run_once(&c->rt, p, &span, &host, c->msg, sizeof(c->msg));
	if (rc) {
		verdict = rc == KERR_NOMEM ? ck_infra(c, "out_of_memory")
					   : ck_fault(c, "runtime_error", "launch_failed");
		goto out;
	}
	if (first_launch) {
		*first_launch += host > span ? host - span : 0;
		json_object_set_new(out, "first_run_host_ms", json_real(host));
	}
	if (world_check_guards(w, c->msg, sizeof(c->msg))) {
		verdict = ck_fault(c, "runtime_error", "out_of_bounds_write");
		goto out;
	}
	if (world_check_inputs(w, c->msg, sizeof(c->msg))) {
		verdict = ck_fault(c, "incorrect", "input_modified");
		goto out;
	}
	rc = compare_outputs(c, w, seed, POISON_A, bufs, first, &kind);
	if (rc) {
		verdict = rc == KERR_INVALID ? ck_fault(c, "incorrect", kind) : ck_infra(c, kind);
		goto out;
	}
	if (!c->b.correct.determinism)
		goto out;
	/* Second run: same inputs, the other poison pattern. */
	bufs2 = json_array();
	json_object_set_new(out, "rerun", bufs2);
	if ((rc = world_fill(w, seed, POISON_B, c->msg, sizeof(c->msg)))) {
		verdict = ck_infra(c, "harness");
		goto out;
	}
	if ((rc = run_once(&c->rt, p, &span, &host, c->msg, sizeof(c->msg)))) {
		verdict = rc == KERR_NOMEM ? ck_infra(c, "out_of_memory")
					   : ck_fault(c, "runtime_error", "launch_failed");
		goto out;
	}
	if (world_check_guards(w, c->msg, sizeof(c->msg))) {
		verdict = ck_fault(c, "runtime_error", "out_of_bounds_write");
		goto out;
	}
	rc = compare_outputs(c, w, seed, POISON_B, bufs2, NULL, &kind);
	if (rc == KERR_INVALID) {
		char why[2048];

		strlcpy(why, c->msg, sizeof(why));
		snprintf(c->msg, sizeof(c->msg), "second identical run differs: %s", why);
		verdict = ck_fault(c, "incorrect", "nondeterministic");
	} else if (rc) {
		verdict = ck_infra(c, kind);
	} else {
		int identical = 1;

		for (size_t i = 0; i < c->b.nbuffers; i++) {
			void *again = NULL;
			size_t where = 0;

			if (!first[i] || world_read(w, i, &again, c->msg, sizeof(c->msg)))
				continue;
			if (world_bitdiff(&w->bufs[i], first[i], again, &where))
				identical = 0;
			free(again);
		}
		json_object_set_new(out, "bitwise_identical", json_boolean(identical));
	}
out:
	for (size_t i = 0; i < c->b.nbuffers; i++)
		free(first[i]);
	free(first);
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
	program_vars(&c->b, c->src, s, &vars);
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
	for (size_t i = 0; i < c->b.correct.nseeds && verdict == CK_PASS; i++) {
		json_t *jseed = json_object();

		json_array_append_new(json_object_get(js, "seeds"), jseed);
		worker_progress(c->work, c->id, "correctness");
		verdict = check_seed(c, &w, &p, c->b.correct.seeds[i], jseed,
				     i == 0 ? first_launch : NULL);
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
	char *dir = xasprintf("%s/art/%s", c->work, c->id), *path = xasprintf("%s/%s", dir, name);
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
	char *cache = xasprintf("%s/pocl/%s", c->work, c->id);

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

static void save_binary(struct ck *c, struct prog *pg)
{
	void *bin = NULL;
	size_t len = 0;
	char *path = xasprintf("%s/bin/%s.bin", c->work, c->id), msg[512];

	if (prog_binary(pg, &bin, &len, msg, sizeof(msg)) ||
	    file_write_atomic(path, bin, len, msg, sizeof(msg)))
		log_warn("program '%s' binary not kept, timing rebuilds it: %s", c->id, msg);
	free(bin);
	free(path);
}

/* Stage 1.  Returns CK_PASS, CK_FAIL (compile error recorded) or CK_INFRA. */
static int stage_compile(struct ck *c, struct prog *pg)
{
	json_t *comp = json_object(), *kernels;
	int rc;

	json_object_set_new(c->doc, "compile", comp);
	worker_progress(c->work, c->id, "compile");
	rc = prog_build_source(pg, &c->rt, c->src->source, c->src->options,
			       c->b.limits.log_max_bytes, c->msg, sizeof(c->msg));
	json_object_set_new(comp, "ok", json_boolean(rc == 0));
	json_object_set_new(comp, "build_ms", json_real(pg->build_ms));
	json_object_set_new(comp, "log", json_string(pg->log ? pg->log : ""));
	json_object_set_new(comp, "log_truncated", json_boolean(pg->log_truncated));
	if (rc == KERR_INVALID)
		return ck_fault(c, "compile_error", "compile_error");
	if (rc)
		return ck_infra(c, rc == KERR_NOMEM ? "out_of_memory" : "opencl");
	kernels = json_array();
	for (size_t i = 0; i < c->b.nlaunch; i++)
		json_array_append_new(kernels, prog_kernel_info(pg, &c->rt, c->b.launch[i].kernel));
	json_object_set_new(comp, "kernels", kernels);
	ck_save(c);
	return CK_PASS;
}

static int ck_open(struct ck *c, const char *work, const char *id)
{
	memset(c, 0, sizeof(*c));
	c->work = work;
	c->id = id;
	c->doc = json_pack("{s:s, s:s}", "id", id, "status", "running");
	if (worker_load(&c->b, work, c->msg, sizeof(c->msg)))
		return ck_infra(c, "batch");
	if (!strcmp(id, "reference"))
		c->src = &c->b.reference;
	else if (c->b.baseline && !strcmp(id, c->b.baseline->id))
		c->src = c->b.baseline;
	else
		c->src = batch_variant(&c->b, id);
	if (!c->src) {
		kerr_set(c->msg, sizeof(c->msg), KERR_NOTFOUND, "no program '%s' in the batch", id);
		return ck_infra(c, "batch");
	}
	if (clrt_open(&c->rt, &c->b.device, c->msg, sizeof(c->msg)))
		return ck_infra(c, "no_device");
	return CK_PASS;
}

static void ck_close(struct ck *c)
{
	clrt_close(&c->rt);
	batch_release(&c->b);
	json_decref(c->doc);
}

int worker_check(const char *work, const char *id)
{
	struct ck c;
	struct prog pg;
	json_t *corr, *shapes;
	double first_launch = 0;
	int verdict;

	memset(&pg, 0, sizeof(pg));
	verdict = ck_open(&c, work, id);
	if (verdict == CK_PASS)
		verdict = stage_compile(&c, &pg);
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
		ck_save(&c); /* a failure was saved before these two were known */
	}
	if (verdict == CK_PASS) {
		worker_progress(work, id, "ir");
		stage_ir(&c, &pg);
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
	    (rc = run_once(&c->rt, p, &span, &host, c->msg, sizeof(c->msg))) ||
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
			path = worker_ref_path(c->work, w->shape, seed, i);
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

	program_vars(&c->b, c->src, s, &vars);
	rc = world_open(&w, &c->rt, &c->b, s, c->msg, sizeof(c->msg));
	if (!rc)
		rc = plan_bind(&p, &w, pg->program, c->b.ref_launch, c->b.nref_launch, &vars,
			       c->msg, sizeof(c->msg));
	for (size_t i = 0; i < c->b.correct.nseeds && !rc; i++)
		rc = reference_seed(c, &w, &p, c->b.correct.seeds[i]);
	for (unsigned k = 0; !rc && s == c->b.timed_shape && k < WORKER_TIMING_SETS; k++)
		rc = reference_seed(c, &w, &p, worker_timing_seed(&c->b, k));
	plan_release(&p);
	world_close(&w);
	expr_vars_release(&vars);
	return rc;
}

int worker_reference(const char *work)
{
	struct ck c;
	struct prog pg;
	int verdict, rc = 0;
	char why[2048];

	memset(&pg, 0, sizeof(pg));
	verdict = ck_open(&c, work, "reference");
	if (verdict != CK_PASS)
		goto out;
	worker_progress(work, "reference", "compile");
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
	worker_progress(work, "reference", "outputs");
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
		ck_status(&c, "ok", NULL, NULL, NULL);
	}
out:
	prog_release(&pg);
	ck_close(&c);
	return verdict == CK_INFRA ? WORKER_EXIT_INFRA : verdict == CK_FAIL ? WORKER_EXIT_BAD : 0;
}
