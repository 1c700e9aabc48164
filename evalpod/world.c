#include "world-internal.h"
#include "err.h"
#include "xalloc.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define GUARD_BYTE       0x5c
#define GUARD_MIN_DEVICE (64 * 1024)

static const uint32_t poison32[2] = { 0x7fe5a5a5u, 0x7fd3c3c3u };
static const uint64_t poison64[2] = { 0x7ffa5a5a5a5a5a5aull, 0x7ff9c3c3c3c3c3c3ull };

static int shape_expr(const struct world *w, const char *text, const char *what, int64_t *v,
		      char *msg, size_t n)
{
	char why[256];
	struct expr_vars *vars = (struct expr_vars *)&w->b->shapes[w->shape].vars;

	if (expr_eval(text, expr_vars_lookup, vars, v, why, sizeof(why)))
		return kerr_set(msg, n, KERR_INVALID, "%s '%s' at shape '%s': %s", what, text,
				w->b->shapes[w->shape].name, why);
	return 0;
}

/*
 * Device memory: a fault there cannot reach the host, so the guards only
 * need to be wide enough to see writes a little outside the buffer.
 */
static int device_alloc(struct world *w, struct wbuf *wb, char *msg, size_t n)
{
	size_t align = w->rt->info.base_align_bytes;
	cl_int err;

	wb->guard = world__round_up(GUARD_MIN_DEVICE > align ? GUARD_MIN_DEVICE : align, align);
	if (wb->bytes > SIZE_MAX - 2 * wb->guard)
		return kerr_set(msg, n, KERR_NOMEM, "cannot allocate buffer '%s' (%zu bytes): %s",
				wb->spec->name, wb->bytes, "too large");
	wb->parent = clCreateBuffer(w->rt->ctx, CL_MEM_READ_WRITE, wb->bytes + 2 * wb->guard, NULL,
				    &err);
	if (err != CL_SUCCESS)
		return kerr_set(msg, n, KERR_NOMEM, "cannot allocate buffer '%s' (%zu bytes): %s",
				wb->spec->name, wb->bytes, clrt_errstr(err));
	return 0;
}

static int wbuf_alloc(struct world *w, struct wbuf *wb, char *msg, size_t n)
{
	cl_buffer_region region;
	cl_int err;
	int rc;

	if (!strcmp(w->rt->info.type, "cpu"))
		rc = world__map_alloc(w, wb, msg, n);
	else
		rc = device_alloc(w, wb, msg, n);
	if (rc)
		return rc;
	region.origin = wb->guard;
	region.size = wb->bytes;
	wb->mem = clCreateSubBuffer(wb->parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION,
				    &region, &err);
	if (err != CL_SUCCESS)
		return kerr_set(msg, n, KERR_NOMEM, "cannot create sub-buffer for '%s': %s",
				wb->spec->name, clrt_errstr(err));
	return 0;
}

static int world_scalars(struct world *w, char *msg, size_t n)
{
	const struct batch *b = w->b;

	w->scal = xcalloc(b->nscalars ? b->nscalars : 1, sizeof(*w->scal));
	for (size_t i = 0; i < b->nscalars; i++) {
		const struct scalar_spec *s = &b->scalars[i];
		int64_t v = 0;
		int rc;

		if (s->type == ELEM_FLOAT) {
			w->scal[i].f = (float)s->fvalue;
			continue;
		}
		if (s->type == ELEM_DOUBLE) {
			w->scal[i].d = s->fvalue;
			continue;
		}
		rc = shape_expr(w, s->expr, "scalar", &v, msg, n);
		if (rc)
			return rc;
		if (s->type == ELEM_INT && (v < INT32_MIN || v > INT32_MAX))
			return kerr_set(msg, n, KERR_INVALID,
					"scalar '%s' = %lld does not fit in int", s->name,
					(long long)v);
		if (s->type == ELEM_INT)
			w->scal[i].i = (int32_t)v;
		else if (s->type == ELEM_UINT)
			w->scal[i].u = (uint32_t)v;
		else if (s->type == ELEM_LONG)
			w->scal[i].l = v;
		else
			w->scal[i].ul = (uint64_t)v;
	}
	return 0;
}

int world_open(struct world *w, struct clrt *rt, const struct batch *b, size_t shape, char *msg,
	       size_t n)
{
	int rc;

	memset(w, 0, sizeof(*w));
	w->rt = rt;
	w->b = b;
	w->shape = shape;
	w->bufs = xcalloc(b->nbuffers ? b->nbuffers : 1, sizeof(*w->bufs));
	for (size_t i = 0; i < b->nbuffers; i++) {
		struct wbuf *wb = &w->bufs[i];
		int64_t count = 0;

		wb->spec = &b->buffers[i];
		rc = shape_expr(w, wb->spec->count, "buffer count", &count, msg, n);
		if (rc)
			return rc;
		if (count <= 0 || (uint64_t)count > rt->info.max_alloc)
			return kerr_set(
				msg, n, KERR_INVALID,
				"buffer '%s' count %lld at shape '%s' is not in 1..device limit",
				wb->spec->name, (long long)count, b->shapes[shape].name);
		wb->count = (size_t)count;
		wb->esize = elem_type_size(wb->spec->type);
		wb->bytes = wb->count * wb->esize;
		rc = wbuf_alloc(w, wb, msg, n);
		if (rc)
			return rc;
		if (wb->spec->role != ROLE_OUTPUT)
			wb->init = xmalloc(wb->bytes);
	}
	return world_scalars(w, msg, n);
}

void world_close(struct world *w)
{
	int mapped = 0;

	if (!w->b)
		return;
	for (size_t i = 0; i < w->b->nbuffers && w->bufs; i++)
		mapped |= w->bufs[i].map != NULL;
	/* A command still queued on a mapping would fault once it is unmapped. */
	if (mapped)
		clFinish(w->rt->queue);
	for (size_t i = 0; i < w->b->nbuffers && w->bufs; i++) {
		struct wbuf *wb = &w->bufs[i];

		if (wb->mem)
			clReleaseMemObject(wb->mem);
		if (wb->parent)
			clReleaseMemObject(wb->parent);
		world__map_release(wb);
		free(wb->init);
	}
	free(w->bufs);
	free(w->scal);
	memset(w, 0, sizeof(*w));
}

static cl_int paint_guards(struct world *w, struct wbuf *wb)
{
	unsigned char byte = GUARD_BYTE;
	cl_int err;

	err = clEnqueueFillBuffer(w->rt->queue, wb->parent, &byte, 1, 0, wb->guard, 0, NULL, NULL);
	if (err == CL_SUCCESS)
		err = clEnqueueFillBuffer(w->rt->queue, wb->parent, &byte, 1, wb->guard + wb->bytes,
					  wb->guard, 0, NULL, NULL);
	return err;
}

int world_paint_guards(struct world *w, char *msg, size_t n)
{
	for (size_t i = 0; i < w->b->nbuffers; i++) {
		cl_int err = paint_guards(w, &w->bufs[i]);

		if (err != CL_SUCCESS)
			return kerr_set(msg, n, KERR_OPENCL, "painting guards of '%s': %s",
					w->bufs[i].spec->name, clrt_errstr(err));
	}
	return clFinish(w->rt->queue) == CL_SUCCESS ? 0 : KERR_OPENCL;
}

int world_poison(struct world *w, enum poison p, char *msg, size_t n)
{
	w->poisoned = p;
	for (size_t i = 0; i < w->b->nbuffers; i++) {
		struct wbuf *wb = &w->bufs[i];
		cl_int err;

		if (wb->spec->role != ROLE_OUTPUT)
			continue;
		if (wb->esize == 8)
			err = clEnqueueFillBuffer(w->rt->queue, wb->mem, &poison64[p], 8, 0,
						  wb->bytes, 0, NULL, NULL);
		else
			err = clEnqueueFillBuffer(w->rt->queue, wb->mem, &poison32[p], 4, 0,
						  wb->bytes, 0, NULL, NULL);
		if (err != CL_SUCCESS)
			return kerr_set(msg, n, KERR_OPENCL, "poisoning '%s': %s", wb->spec->name,
					clrt_errstr(err));
	}
	return 0;
}

int world_restore_inputs(struct world *w, char *msg, size_t n)
{
	for (size_t i = 0; i < w->b->nbuffers; i++) {
		struct wbuf *wb = &w->bufs[i];
		cl_int err;

		if (!wb->init)
			continue;
		err = clEnqueueWriteBuffer(w->rt->queue, wb->mem, CL_TRUE, 0, wb->bytes, wb->init,
					   0, NULL, NULL);
		if (err != CL_SUCCESS)
			return kerr_set(msg, n, KERR_OPENCL, "uploading '%s': %s", wb->spec->name,
					clrt_errstr(err));
	}
	return 0;
}

void world_generate(struct world *w, uint64_t seed)
{
	for (size_t i = 0; i < w->b->nbuffers; i++)
		if (w->bufs[i].init)
			world_gen(w->bufs[i].spec, seed, i, w->bufs[i].init, w->bufs[i].count);
}

int world_fill(struct world *w, uint64_t seed, enum poison p, char *msg, size_t n)
{
	world_generate(w, seed);
	return world_refill(w, p, msg, n);
}

int world_refill(struct world *w, enum poison p, char *msg, size_t n)
{
	int rc = world_paint_guards(w, msg, n);
	cl_int err;

	if (!rc)
		rc = world_restore_inputs(w, msg, n);
	if (!rc)
		rc = world_poison(w, p, msg, n);
	if (!rc && (err = clFinish(w->rt->queue)) != CL_SUCCESS)
		rc = kerr_set(msg, n, KERR_OPENCL, "preparing buffers: %s", clrt_errstr(err));
	return rc;
}

int world_read(struct world *w, size_t i, void **out, char *msg, size_t n)
{
	struct wbuf *wb = &w->bufs[i];
	void *p = xmalloc(wb->bytes);
	cl_int err;

	err = clEnqueueReadBuffer(w->rt->queue, wb->mem, CL_TRUE, 0, wb->bytes, p, 0, NULL, NULL);
	if (err != CL_SUCCESS) {
		free(p);
		*out = NULL;
		return kerr_set(msg, n, KERR_OPENCL, "reading '%s': %s", wb->spec->name,
				clrt_errstr(err));
	}
	*out = p;
	return 0;
}

/* Counts changed guard bytes in g (len); sets *first to the first one. */
static size_t guard_damage(const unsigned char *g, size_t len, size_t *first)
{
	size_t bad = 0;

	for (size_t i = len; i-- > 0;) {
		if (g[i] != GUARD_BYTE) {
			bad++;
			*first = i;
		}
	}
	return bad;
}

int world_check_guards(struct world *w, char *msg, size_t n)
{
	int rc = 0;

	for (size_t i = 0; i < w->b->nbuffers && !rc; i++) {
		struct wbuf *wb = &w->bufs[i];
		unsigned char *g = xmalloc(2 * wb->guard);
		size_t before, after, fb = 0, fa = 0;
		cl_int err;

		err = clEnqueueReadBuffer(w->rt->queue, wb->parent, CL_FALSE, 0, wb->guard, g, 0,
					  NULL, NULL);
		if (err == CL_SUCCESS)
			err = clEnqueueReadBuffer(w->rt->queue, wb->parent, CL_TRUE,
						  wb->guard + wb->bytes, wb->guard, g + wb->guard,
						  0, NULL, NULL);
		if (err != CL_SUCCESS) {
			rc = kerr_set(msg, n, KERR_OPENCL, "reading guards of '%s': %s",
				      wb->spec->name, clrt_errstr(err));
		} else {
			before = guard_damage(g, wb->guard, &fb);
			after = guard_damage(g + wb->guard, wb->guard, &fa);
			if (after)
				rc = kerr_set(
					msg, n, KERR_INVALID,
					"wrote outside buffer '%s': %zu bytes after its end were "
					"changed (first at end+%zu)",
					wb->spec->name, after, fa);
			else if (before)
				rc = kerr_set(msg, n, KERR_INVALID,
					      "wrote outside buffer '%s': %zu bytes before its "
					      "start were "
					      "changed (first at start-%zu)",
					      wb->spec->name, before, wb->guard - fb);
		}
		free(g);
	}
	return rc;
}

int world_check_inputs(struct world *w, char *msg, size_t n)
{
	int rc = 0;

	for (size_t i = 0; i < w->b->nbuffers && !rc; i++) {
		struct wbuf *wb = &w->bufs[i];
		void *now = NULL;
		size_t first = 0, diff;

		if (wb->spec->role != ROLE_INPUT)
			continue;
		rc = world_read(w, i, &now, msg, n);
		if (rc)
			break;
		diff = world_bitdiff(wb, now, wb->init, &first);
		if (diff)
			rc = kerr_set(msg, n, KERR_INVALID,
				      "modified read-only input '%s': %zu of %zu elements changed "
				      "(first at index %zu)",
				      wb->spec->name, diff, wb->count, first);
		free(now);
	}
	return rc;
}

size_t world_bitdiff(const struct wbuf *wb, const void *a, const void *b, size_t *first)
{
	const unsigned char *pa = a, *pb = b;
	size_t diff = 0;

	for (size_t i = 0; i < wb->count; i++) {
		if (memcmp(pa + i * wb->esize, pb + i * wb->esize, wb->esize)) {
			if (!diff)
				*first = i;
			diff++;
		}
	}
	return diff;
}

#define CMP_BLOCK 256 /* elements converted to double at a time */

/* Elements i0..i0+m of base, of type t, as doubles: the type's switch once per block. */
static void load_block(const void *base, enum elem_type t, size_t i0, size_t m, double *out)
{
	switch (t) {
	case ELEM_FLOAT:
		for (size_t j = 0; j < m; j++)
			out[j] = ((const float *)base)[i0 + j];
		return;
	case ELEM_DOUBLE:
		for (size_t j = 0; j < m; j++)
			out[j] = ((const double *)base)[i0 + j];
		return;
	case ELEM_INT:
		for (size_t j = 0; j < m; j++)
			out[j] = ((const int32_t *)base)[i0 + j];
		return;
	case ELEM_UINT:
		for (size_t j = 0; j < m; j++)
			out[j] = ((const uint32_t *)base)[i0 + j];
		return;
	case ELEM_LONG:
		for (size_t j = 0; j < m; j++)
			out[j] = (double)((const int64_t *)base)[i0 + j];
		return;
	case ELEM_ULONG:
		for (size_t j = 0; j < m; j++)
			out[j] = (double)((const uint64_t *)base)[i0 + j];
		return;
	case ELEM_NR: break;
	}
	memset(out, 0, m * sizeof(*out));
}

/* Whether element i of base holds poison pattern p. */
static inline int poison_at(const struct wbuf *wb, const void *base, size_t i, enum poison p)
{
	if (wb->esize == 8) {
		uint64_t v;

		memcpy(&v, (const char *)base + i * 8, 8);
		return v == poison64[p];
	}
	uint32_t v;

	memcpy(&v, (const char *)base + i * 4, 4);
	return v == poison32[p];
}

/*
 * One pass over the buffer, a block at a time: the elements are converted
 * before the loop that judges them, so that loop calls nothing and keeps its
 * sums in registers (a call per element spilled them: 2-3 times slower).
 */
void world_compare(const struct wbuf *wb, const void *got, const void *ref, double atol,
		   double rtol, int poison_check, enum poison p, struct cmp_stats *s)
{
	double sum_abs = 0, sum_d2 = 0, sum_r2 = 0, worst_score = -1, max_abs = 0;
	double worst_got = 0, worst_ref = 0, gb[CMP_BLOCK], rb[CMP_BLOCK];
	size_t mismatches = 0, nonfinite = 0, worst = 0;

	memset(s, 0, sizeof(*s));
	s->count = wb->count;
	for (size_t i0 = 0; i0 < wb->count; i0 += CMP_BLOCK) {
		size_t m = wb->count - i0 < CMP_BLOCK ? wb->count - i0 : CMP_BLOCK;

		load_block(got, wb->spec->type, i0, m, gb);
		load_block(ref, wb->spec->type, i0, m, rb);
		for (size_t j = 0; poison_check && j < m; j++) {
			if (!poison_at(wb, got, i0 + j, p))
				continue;
			if (!s->unwritten++)
				s->first_unwritten = i0 + j;
		}
		for (size_t j = 0; j < m; j++) {
			double g = gb[j], r = rb[j];
			double d = fabs(g - r), tol = atol + rtol * fabs(r), div;

			if (!isfinite(g) && isfinite(r)) {
				nonfinite++;
				d = INFINITY;
			} else if (!isfinite(r)) {
				/* only the same NaN-ness or infinity matches (atol + rtol * inf took any) */
				d = (isnan(r) ? isnan(g) : g == r) ? 0.0 : INFINITY;
				tol = atol;
			}
			div = tol > 0 ? tol : 1e-300;
			mismatches += (size_t) !(d <= tol);
			/*
			 * The score d / div, divided only where it can beat the
			 * worst so far: the margin keeps a rounding of the product
			 * from skipping an element the quotient would keep.
			 */
			if (!(d * (1 + 1e-9) < worst_score * div)) {
				double score = isfinite(d) ? d / div : HUGE_VAL;

				if (score > worst_score) {
					worst_score = score;
					worst = i0 + j;
					worst_got = g;
					worst_ref = r;
				}
			}
			if (d > max_abs)
				max_abs = d;
			if (isfinite(d)) {
				sum_abs += d;
				sum_d2 += d * d;
			}
			if (isfinite(r))
				sum_r2 += r * r;
		}
	}
	s->mismatches = mismatches;
	s->nonfinite = nonfinite;
	s->max_abs = max_abs;
	s->worst = worst;
	s->worst_got = worst_got;
	s->worst_ref = worst_ref;
	s->mean_abs = wb->count ? sum_abs / (double)wb->count : 0;
	s->rel_l2 = sum_r2 > 0 ? sqrt(sum_d2 / sum_r2) : sqrt(sum_d2);
	if (s->nonfinite || !isfinite(s->max_abs))
		s->rel_l2 = INFINITY;
}

/*
 * Floats, the common case, without the conversion.  An element is suspect
 * where its bits are the poison, where d <= tol fails (it does for a NaN on
 * either side, and for an infinity in got where ref is finite), or where ref
 * is not finite.  So a buffer without suspects is one where world_compare
 * finds nothing unwritten and no mismatch; a suspect may still pass there
 * (a NaN or an infinity matched), which world_compare decides.
 */
static size_t float_suspects(const float *got, const float *ref, size_t n, double atol, double rtol,
			     int poison_check, uint32_t poison)
{
	size_t bad = 0;

	for (size_t i = 0; i < n; i++) {
		double g = got[i], r = ref[i];
		uint32_t bits;

		memcpy(&bits, &got[i], sizeof(bits));
		bad += (size_t)(!(fabs(g - r) <= atol + rtol * fabs(r)) | !(fabs(r) <= DBL_MAX) |
				(poison_check && bits == poison));
	}
	return bad;
}

size_t world_suspects(const struct wbuf *wb, const void *got, const void *ref, double atol,
		      double rtol, int poison_check, enum poison p)
{
	double gb[CMP_BLOCK], rb[CMP_BLOCK];
	size_t bad = 0;

	if (wb->spec->type == ELEM_FLOAT)
		return float_suspects(got, ref, wb->count, atol, rtol, poison_check, poison32[p]);
	for (size_t i0 = 0; i0 < wb->count; i0 += CMP_BLOCK) {
		size_t m = wb->count - i0 < CMP_BLOCK ? wb->count - i0 : CMP_BLOCK;

		load_block(got, wb->spec->type, i0, m, gb);
		load_block(ref, wb->spec->type, i0, m, rb);
		for (size_t j = 0; j < m; j++)
			bad += (size_t)(!(fabs(gb[j] - rb[j]) <= atol + rtol * fabs(rb[j])) |
					!(fabs(rb[j]) <= DBL_MAX) |
					(poison_check && poison_at(wb, got, i0 + j, p)));
	}
	return bad;
}

static int bind_arg(struct world *w, struct pstep *st, size_t si, size_t ai,
		    const struct arg_spec *a, const struct expr_vars *vars, char *msg, size_t n)
{
	cl_int err = CL_SUCCESS;
	const char *what = "";

	if (a->kind == ARG_BUFFER) {
		what = w->b->buffers[a->index].name;
		err = clSetKernelArg(st->kernel, (cl_uint)ai, sizeof(cl_mem),
				     &w->bufs[a->index].mem);
	} else if (a->kind == ARG_SCALAR) {
		what = w->b->scalars[a->index].name;
		err = clSetKernelArg(st->kernel, (cl_uint)ai,
				     elem_type_size(w->b->scalars[a->index].type),
				     &w->scal[a->index]);
	} else {
		char why[256];
		int64_t bytes = 0;

		what = a->local_bytes;
		if (expr_eval(a->local_bytes, expr_vars_lookup, (void *)vars, &bytes, why,
			      sizeof(why)) ||
		    bytes <= 0)
			return kerr_set(msg, n, KERR_INVALID,
					"launch[%zu] argument %zu local size '%s': %s", si, ai,
					a->local_bytes, bytes <= 0 ? "not positive" : why);
		err = clSetKernelArg(st->kernel, (cl_uint)ai, (size_t)bytes, NULL);
	}
	if (err != CL_SUCCESS)
		return kerr_set(msg, n, KERR_OPENCL,
				"launch[%zu] kernel '%s' argument %zu ('%s'): %s", si, st->name, ai,
				what, clrt_errstr(err));
	return 0;
}

/* A global size may be 0 (the step does not run); a local size may not. */
static int eval_dim(const char *text, const struct expr_vars *vars, size_t si, const char *kind,
		    unsigned d, size_t *out, char *msg, size_t n)
{
	const int64_t least = strcmp(kind, "global") ? 1 : 0;
	char why[256];
	int64_t v = 0;

	if (expr_eval(text, expr_vars_lookup, (void *)vars, &v, why, sizeof(why)))
		return kerr_set(msg, n, KERR_INVALID, "launch[%zu] %s[%u] '%s': %s", si, kind, d,
				text, why);
	if (v < least)
		return kerr_set(msg, n, KERR_INVALID, "launch[%zu] %s[%u] '%s' = %lld is %s", si,
				kind, d, text, (long long)v, least ? "not positive" : "negative");
	*out = (size_t)v;
	return 0;
}

/*
 * Whether the step's local memory, static and from __local arguments
 * (CL_KERNEL_LOCAL_MEM_SIZE counts both once they are set), fits the device:
 * asked before the first launch so that a step over it is named with its
 * figures, where a GPU answers the launch with a bare CL_OUT_OF_RESOURCES.
 * The work-group size is not asked: NVIDIA's CL_KERNEL_WORK_GROUP_SIZE says
 * 256 for kernels that launch and run right with 1024 work-items.
 */
static int step_fits(struct world *w, struct pstep *st, size_t si, char *msg, size_t n)
{
	cl_ulong lmem = 0;

	if (clGetKernelWorkGroupInfo(st->kernel, w->rt->device, CL_KERNEL_LOCAL_MEM_SIZE,
				     sizeof(lmem), &lmem, NULL) == CL_SUCCESS &&
	    w->rt->info.local_mem && lmem > w->rt->info.local_mem)
		return kerr_set(msg, n, KERR_INVALID,
				"launch[%zu] kernel '%s' needs %llu bytes of local memory (its own "
				"and its __local arguments'); the device has %llu",
				si, st->name, (unsigned long long)lmem,
				(unsigned long long)w->rt->info.local_mem);
	return 0;
}

/* Whether the step's range is empty (some global size 0): it does not run. */
static int step_empty(const struct pstep *st)
{
	for (unsigned d = 0; d < st->dims; d++)
		if (!st->global[d])
			return 1;
	return 0;
}

static int bind_step(struct world *w, struct pstep *st, size_t si, cl_program prog,
		     const struct launch_spec *l, const struct expr_vars *vars, char *msg, size_t n)
{
	cl_uint nargs = 0;
	cl_int err;
	int rc;

	st->name = l->kernel;
	st->index = si;
	st->dims = l->dims;
	st->kernel = clCreateKernel(prog, l->kernel, &err);
	if (err != CL_SUCCESS)
		return kerr_set(msg, n, KERR_OPENCL,
				"launch[%zu]: no kernel '%s' in the program: %s", si, l->kernel,
				clrt_errstr(err));
	clGetKernelInfo(st->kernel, CL_KERNEL_NUM_ARGS, sizeof(nargs), &nargs, NULL);
	if (nargs != l->nargs)
		return kerr_set(
			msg, n, KERR_OPENCL,
			"launch[%zu]: kernel '%s' takes %u arguments, the problem passes %zu", si,
			l->kernel, nargs, l->nargs);
	for (size_t a = 0; a < l->nargs; a++)
		if ((rc = bind_arg(w, st, si, a, &l->args[a], vars, msg, n)))
			return rc;
	for (unsigned d = 0; d < l->dims; d++) {
		if ((rc = eval_dim(l->global[d], vars, si, "global", d, &st->global[d], msg, n)))
			return rc;
		st->has_local = l->local[0] != NULL;
		if (st->has_local &&
		    (rc = eval_dim(l->local[d], vars, si, "local", d, &st->local[d], msg, n)))
			return rc;
	}
	return step_empty(st) ? 0 : step_fits(w, st, si, msg, n);
}

int plan_bind(struct plan *p, struct world *w, cl_program prog, const struct launch_spec *launch,
	      size_t nlaunch, const struct expr_vars *vars, char *msg, size_t n)
{
	int rc = 0;

	p->steps = xcalloc(nlaunch ? nlaunch : 1, sizeof(*p->steps));
	p->nsteps = 0;
	for (size_t i = 0; i < nlaunch && !rc; i++) {
		struct pstep *st = &p->steps[p->nsteps];

		rc = bind_step(w, st, i, prog, &launch[i], vars, msg, n);
		if (!rc && step_empty(st)) {
			clReleaseKernel(st->kernel);
			memset(st, 0, sizeof(*st));
		} else if (st->kernel) {
			p->nsteps++; /* counted once it holds a kernel to release */
		}
	}
	if (!rc && !p->nsteps)
		rc = kerr_set(msg, n, KERR_INVALID,
			      "the launch plan runs no kernel at this shape: every step has a "
			      "global size of 0");
	return rc;
}

void plan_release(struct plan *p)
{
	for (size_t i = 0; i < p->nsteps; i++)
		if (p->steps[i].kernel)
			clReleaseKernel(p->steps[i].kernel);
	free(p->steps);
	p->steps = NULL;
	p->nsteps = 0;
}

cl_int plan_enqueue(struct plan *p, cl_command_queue q, cl_event *events, char *msg, size_t n)
{
	for (size_t i = 0; i < p->nsteps; i++) {
		struct pstep *st = &p->steps[i];
		cl_int err = clEnqueueNDRangeKernel(q, st->kernel, st->dims, NULL, st->global,
						    st->has_local ? st->local : NULL, 0, NULL,
						    events ? &events[i] : NULL);

		if (err != CL_SUCCESS) {
			for (size_t j = 0; events && j < i; j++)
				clReleaseEvent(events[j]);
			kerr_set(msg, n, KERR_OPENCL,
				 "launch[%zu] kernel '%s' (global %zux%zux%zu, local "
				 "%s%zux%zux%zu): %s",
				 st->index, st->name, st->global[0],
				 st->dims > 1 ? st->global[1] : 1, st->dims > 2 ? st->global[2] : 1,
				 st->has_local ? "" : "auto ", st->local[0],
				 st->dims > 1 ? st->local[1] : 1, st->dims > 2 ? st->local[2] : 1,
				 clrt_errstr(err));
			return err;
		}
	}
	return CL_SUCCESS;
}

/* Dimension 0's range in at most 64 chunks of whole work-groups, last first. */
cl_int plan_enqueue_reversed(struct plan *p, cl_command_queue q, cl_event *ev)
{
	for (size_t i = 0; i < p->nsteps; i++) {
		struct pstep *st = &p->steps[i];
		size_t groups = st->global[0] / st->local[0], per = (groups + 63) / 64;
		size_t chunks = (groups + per - 1) / per;
		cl_int err = CL_SUCCESS;

		for (size_t c = chunks; c-- > 0 && err == CL_SUCCESS;) {
			size_t off[3] = { c * per * st->local[0], 0, 0 }, glob[3];

			memcpy(glob, st->global, sizeof(glob));
			glob[0] = (c + 1 == chunks ? groups - c * per : per) * st->local[0];
			err = clEnqueueNDRangeKernel(q, st->kernel, st->dims, off, glob, st->local,
						     0, NULL,
						     c == 0 && i + 1 == p->nsteps ? ev : NULL);
		}
		if (err != CL_SUCCESS)
			return err;
	}
	return CL_SUCCESS;
}

int plan_reorder_ok(const struct plan *p)
{
	for (size_t i = 0; i < p->nsteps; i++)
		if (!p->steps[i].has_local || p->steps[i].global[0] % p->steps[i].local[0])
			return 0;
	return p->nsteps > 0;
}
