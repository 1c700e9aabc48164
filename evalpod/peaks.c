#include "peaks.h"
#include "err.h"
#include "fileio.h"
#include "jsonx.h"
#include "log.h"
#include "prog.h"
#include "stats.h"
#include "xalloc.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define PEAK_RUNS      7
#define FMA_ITERS      4096
#define PEAKS_FILE_MAX (1 << 16)             /* a cache file, at most */
#define TRIAD_MIN      ((uint64_t)256 << 20) /* a triad array, at least */
#define TRIAD_MAX      ((uint64_t)1 << 30)   /* and at most */

/*
 * The FMA micro-kernel comes in several forms (vector width x independent
 * chains), and the peak is the best of them: one form cannot fit every
 * register file.  8 chains of float16 need 16 ymm registers on AVX2 before
 * the operands, so it spills and read half the throughput on a Zen 3
 * (99 against 189 GFLOP/s, where OpenBLAS ran at 128); fewer or narrower
 * chains cannot keep two 512-bit FMA pipes busy.  Every form does the same
 * number of FMAs per work-item (FMA_ITERS x 8 chains x 16 lanes).
 */
static const struct fma_form {
	int width;  /* floats per chain: the OpenCL vector type */
	int chains; /* independent fma chains per work-item */
} fma_forms[] = {
	{ 16, 8 }, /* 512-bit registers (AVX-512), GPUs */
	{ 8, 8 },  /* AVX2 with 4-cycle FMAs, 128-bit NEON x 2 */
	{ 8, 12 }, /* AVX2 with 5-cycle FMAs */
	{ 16, 4 }, /* 16 registers of 128 bits (NEON, SSE) */
};
#define N_FMA_FORMS (sizeof(fma_forms) / sizeof(fma_forms[0]))

static const char peak_source[] =
	"__kernel void peak_triad(__global float4 *a, __global const float4 *b,\n"
	"                         __global const float4 *c, float s)\n"
	"{\n"
	"	size_t i = get_global_id(0);\n"
	"	a[i] = b[i] + s * c[i];\n"
	"}\n"
	"__kernel void peak_empty(__global float *out) { }\n";

/*
 * Appends form f's kernel, peak_fma_W_C, to the source in b (size n).
 * Returns the length the source has with it; n or more means it did not fit.
 */
static size_t fma_kernel_source(char *b, size_t n, const struct fma_form *f)
{
	size_t len = strlen(b);

#define ADD(...)                                                                                   \
	(len += (size_t)snprintf(len < n ? b + len : NULL, len < n ? n - len : 0, __VA_ARGS__))
	ADD("__kernel void peak_fma_%d_%d(__global float *out, float m, float k, int iters)\n{\n",
	    f->width, f->chains);
	for (int c = 0; c < f->chains; c++)
		ADD("\tfloat%d x%d = (float%d)((float)get_global_id(0) * 1e-9f + %d.0f);\n",
		    f->width, c, f->width, c);
	ADD("\tfor (int i = 0; i < iters; i++) {\n");
	for (int c = 0; c < f->chains; c++)
		ADD("\t\tx%d = fma(x%d, m, k);\n", c, c);
	ADD("\t}\n\tfloat%d s = x0", f->width);
	for (int c = 1; c < f->chains; c++)
		ADD(" + x%d", c);
	ADD(";\n\tout[get_global_id(0)] = s.s0");
	for (int l = 1; l < f->width; l++)
		ADD(" + s.s%x", l);
	ADD(";\n}\n");
#undef ADD
	return len;
}

/* Builds the peak kernels, every FMA form among them, into pg. */
static int build_peak_kernels(struct clrt *rt, struct prog *pg, char *msg, size_t n)
{
	char src[16384];

	snprintf(src, sizeof(src), "%s", peak_source);
	for (size_t i = 0; i < N_FMA_FORMS; i++)
		if (fma_kernel_source(src, sizeof(src), &fma_forms[i]) >= sizeof(src))
			return kerr_set(msg, n, KERR_INVALID, "peak kernels: source over %zu bytes",
					sizeof(src));
	return prog_build_source(pg, rt, src, "", 8192, msg, n);
}

/* Runs k over global work-items PEAK_RUNS times; returns the best span in ms. */
static int best_span(struct clrt *rt, cl_kernel k, size_t global, size_t runs, double *best,
		     double *median, char *msg, size_t n)
{
	double spans[PEAK_RUNS * 4];
	struct stats st;
	cl_int err;

	if (runs > sizeof(spans) / sizeof(spans[0]))
		runs = sizeof(spans) / sizeof(spans[0]);
	*best = 0;
	for (size_t r = 0; r < runs; r++) {
		cl_event ev;

		err = clEnqueueNDRangeKernel(rt->queue, k, 1, NULL, &global, NULL, 0, NULL, &ev);
		if (err == CL_SUCCESS)
			err = clWaitForEvents(1, &ev);
		if (err != CL_SUCCESS)
			return kerr_set(msg, n, KERR_OPENCL, "peak kernel: %s", clrt_errstr(err));
		spans[r] = clrt_event_span_ms(ev, ev);
		clReleaseEvent(ev);
		if (r == 0 || spans[r] < *best)
			*best = spans[r];
	}
	stats_compute(spans, runs, &st);
	if (median)
		*median = st.median;
	return 0;
}

/*
 * The triad's array size: 8 x the global cache, at least TRIAD_MIN and at
 * most TRIAD_MAX, half the largest allocation, an eighth of the device's
 * memory and a third of budget (0: none).  The upper bound is there for
 * hosts that report a whole socket's cache: a VM on a 2026 Xeon sees
 * 480 MiB, which made three arrays of 3.75 GiB, past the timing worker's
 * limits.memory_mb.  A GiB an array is still 2 x such a cache.
 */
static size_t triad_bytes(const struct devinfo *info, uint64_t budget)
{
	uint64_t bytes = info->global_cache * 8;

	if (bytes < TRIAD_MIN)
		bytes = TRIAD_MIN;
	if (bytes > TRIAD_MAX)
		bytes = TRIAD_MAX;
	if (bytes > info->max_alloc / 2)
		bytes = info->max_alloc / 2;
	if (info->global_mem && bytes > info->global_mem / 8)
		bytes = info->global_mem / 8;
	if (budget && bytes > budget / 3)
		bytes = budget / 3;
	return (size_t)bytes & ~(size_t)63;
}

static int measure_triad(struct clrt *rt, cl_program p, struct peaks *pk, uint64_t budget,
			 char *msg, size_t n)
{
	size_t bytes = triad_bytes(&rt->info, budget);
	cl_mem m[3] = { NULL, NULL, NULL };
	cl_kernel k = NULL;
	float s = 1.5f;
	double best = 0;
	cl_int err = CL_SUCCESS;
	int rc = 0;

	for (int i = 0; i < 3 && err == CL_SUCCESS; i++) {
		m[i] = clCreateBuffer(rt->ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
		if (err == CL_SUCCESS)
			err = clEnqueueFillBuffer(rt->queue, m[i], &s, sizeof(s), 0, bytes, 0, NULL,
						  NULL);
	}
	if (err != CL_SUCCESS) {
		rc = kerr_set(msg, n, KERR_NOMEM, "bandwidth buffers: %s", clrt_errstr(err));
		goto out;
	}
	k = clCreateKernel(p, "peak_triad", &err);
	for (int i = 0; i < 3; i++)
		clSetKernelArg(k, (cl_uint)i, sizeof(cl_mem), &m[i]);
	clSetKernelArg(k, 3, sizeof(s), &s);
	rc = best_span(rt, k, bytes / 16, PEAK_RUNS, &best, NULL, msg, n);
	if (!rc && best > 0)
		pk->gbs = 3.0 * (double)bytes / (best * 1e6);
out:
	if (k)
		clReleaseKernel(k);
	for (int i = 0; i < 3; i++)
		if (m[i])
			clReleaseMemObject(m[i]);
	return rc;
}

/* Work-items of an FMA run: every form does FMA_ITERS x 8 chains x 16 lanes each. */
static size_t fma_global(const struct clrt *rt)
{
	return (size_t)rt->info.compute_units * 1024;
}

/*
 * Form f's kernel in p with its arguments set (out holds a float per
 * work-item); *gflop is what one run over fma_global work-items does.
 */
static int fma_form_kernel(cl_program p, const struct fma_form *f, cl_mem out, size_t global,
			   cl_kernel *k, double *gflop, char *msg, size_t n)
{
	int iters = FMA_ITERS * 8 * 16 / (f->width * f->chains);
	float mul = 0.999f, add = 0.001f;
	char name[32];
	cl_int err;

	snprintf(name, sizeof(name), "peak_fma_%d_%d", f->width, f->chains);
	*k = clCreateKernel(p, name, &err);
	if (err != CL_SUCCESS)
		return kerr_set(msg, n, KERR_OPENCL, "peak kernel %s: %s", name, clrt_errstr(err));
	clSetKernelArg(*k, 0, sizeof(out), &out);
	clSetKernelArg(*k, 1, sizeof(mul), &mul);
	clSetKernelArg(*k, 2, sizeof(add), &add);
	clSetKernelArg(*k, 3, sizeof(iters), &iters);
	*gflop = (double)global * iters * f->chains * f->width * 2 / 1e9;
	return 0;
}

/*
 * Times every FMA form, PEAK_RUNS times each, and returns the fastest's index in
 * *form and its best GFLOP/s in *gflops; with keep, the fastest's kernel,
 * its arguments set, is handed over in *keep (the caller releases it) and
 * what one run of it does in *gflop_run.  The runs go round the forms (one
 * run of each, then the next), so that a moment of load slows every form
 * alike instead of all the runs of one: a probe that picked a 256-bit form
 * on an AVX-512 machine would measure half of it in every round (seen once,
 * with 3 runs of each form taken one form after the other: 229 GFLOP/s
 * against 440).
 */
static int fastest_form(struct clrt *rt, cl_program p, cl_mem out, size_t *form, double *gflops,
			cl_kernel *keep, double *gflop_run, char *msg, size_t n)
{
	size_t global = fma_global(rt);
	cl_kernel k[N_FMA_FORMS] = { NULL };
	double gflop[N_FMA_FORMS] = { 0 }, best[N_FMA_FORMS] = { 0 };
	int rc = 0;

	*gflops = 0;
	*form = 0;
	for (size_t i = 0; i < N_FMA_FORMS && !rc; i++)
		rc = fma_form_kernel(p, &fma_forms[i], out, global, &k[i], &gflop[i], msg, n);
	for (size_t r = 0; r < PEAK_RUNS && !rc; r++) {
		for (size_t i = 0; i < N_FMA_FORMS && !rc; i++) {
			double ms = 0;

			rc = best_span(rt, k[i], global, 1, &ms, NULL, msg, n);
			if (!rc && ms > 0 && gflop[i] * 1e3 / ms > best[i])
				best[i] = gflop[i] * 1e3 / ms;
		}
	}
	for (size_t i = 0; i < N_FMA_FORMS && !rc; i++) {
		if (best[i] > *gflops) {
			*gflops = best[i];
			*form = i;
		}
	}
	if (!rc && keep) {
		*keep = k[*form];
		*gflop_run = gflop[*form];
		k[*form] = NULL;
	}
	for (size_t i = 0; i < N_FMA_FORMS; i++)
		if (k[i])
			clReleaseKernel(k[i]);
	return rc;
}

static int measure_fma(struct clrt *rt, cl_program p, struct peaks *pk, char *msg, size_t n)
{
	size_t form;
	cl_int err;
	cl_mem out = clCreateBuffer(rt->ctx, CL_MEM_WRITE_ONLY, fma_global(rt) * 4, NULL, &err);
	int rc;

	if (err != CL_SUCCESS)
		return kerr_set(msg, n, KERR_NOMEM, "fma buffer: %s", clrt_errstr(err));
	rc = fastest_form(rt, p, out, &form, &pk->gflops, NULL, NULL, msg, n);
	clReleaseMemObject(out);
	return rc;
}

int fma_probe_open(struct clrt *rt, struct fma_probe *fp, char *msg, size_t n)
{
	size_t form = 0;
	double gf = 0;
	cl_int err;
	int rc;

	memset(fp, 0, sizeof(*fp));
	fp->global = fma_global(rt);
	rc = build_peak_kernels(rt, &fp->pg, msg, n);
	if (rc)
		return rc;
	fp->out = clCreateBuffer(rt->ctx, CL_MEM_WRITE_ONLY, fp->global * 4, NULL, &err);
	if (err != CL_SUCCESS)
		return kerr_set(msg, n, KERR_NOMEM, "fma buffer: %s", clrt_errstr(err));
	/* The form is picked as the peak picks it. */
	rc = fastest_form(rt, fp->pg.program, fp->out, &form, &gf, &fp->k, &fp->gflop, msg, n);
	fp->width = fma_forms[form].width;
	fp->chains = fma_forms[form].chains;
	return rc;
}

int fma_probe_run(struct clrt *rt, struct fma_probe *fp, double *gflops, char *msg, size_t n)
{
	double ms = 0;
	int rc = best_span(rt, fp->k, fp->global, 1, &ms, NULL, msg, n);

	*gflops = !rc && ms > 0 ? fp->gflop * 1e3 / ms : 0;
	return rc;
}

void fma_probe_close(struct fma_probe *fp)
{
	if (fp->k)
		clReleaseKernel(fp->k);
	if (fp->out)
		clReleaseMemObject(fp->out);
	prog_release(&fp->pg);
	memset(fp, 0, sizeof(*fp));
}

static int measure_launch(struct clrt *rt, cl_program p, struct peaks *pk, char *msg, size_t n)
{
	cl_int err;
	cl_mem out = clCreateBuffer(rt->ctx, CL_MEM_WRITE_ONLY, 64, NULL, &err);
	cl_kernel k = clCreateKernel(p, "peak_empty", &err);
	double best = 0, median = 0;
	int rc;

	clSetKernelArg(k, 0, sizeof(out), &out);
	rc = best_span(rt, k, 1, PEAK_RUNS * 4, &best, &median, msg, n);
	pk->launch_us = median * 1e3;
	clReleaseKernel(k);
	clReleaseMemObject(out);
	return rc;
}

int peaks_measure(struct clrt *rt, struct peaks *pk, uint64_t budget, char *msg, size_t n)
{
	struct prog pg;
	int rc;

	memset(pk, 0, sizeof(*pk));
	rc = build_peak_kernels(rt, &pg, msg, n);
	if (!rc)
		rc = measure_launch(rt, pg.program, pk, msg, n);
	if (!rc)
		rc = measure_triad(rt, pg.program, pk, budget, msg, n);
	if (!rc)
		rc = measure_fma(rt, pg.program, pk, msg, n);
	prog_release(&pg);
	return rc;
}

const char *peaks_cache_dir(char *buf, size_t n)
{
	const char *own = getenv("EVALPOD_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");

	if (own && *own)
		snprintf(buf, n, "%s", own);
	else if (xdg && *xdg)
		snprintf(buf, n, "%s/evalpod", xdg);
	else if (home && *home)
		snprintf(buf, n, "%s/.cache/evalpod", home);
	else
		return NULL;
	return buf;
}

static char *cache_path(const struct devinfo *info, const char *dir)
{
	char key[65];

	clrt_device_key(info, key);
	return xasprintf("%s/peaks-%.16s.json", dir, key);
}

/* A cache file's name: "peaks-" KEY ".json" (cache_path). */
static int cache_name(const char *name)
{
	size_t len = strlen(name);

	return !strncmp(name, "peaks-", 6) && len > 11 && !strcmp(name + len - 5, ".json");
}

void peaks_copy_cache(const char *cache_dir, const char *dir)
{
	DIR *d = opendir(cache_dir);
	struct dirent *de;
	time_t now = time(NULL);
	char msg[512];

	if (!d)
		return;
	if (!dir_make(dir, msg, sizeof(msg))) {
		while ((de = readdir(d))) {
			char *from, *to, *text = NULL;
			size_t n = 0;

			struct stat st;

			if (!cache_name(de->d_name))
				continue;
			from = xasprintf("%s/%s", cache_dir, de->d_name);
			to = xasprintf("%s/%s", dir, de->d_name);
			/* Measured too long ago, or dated in the future: measure again. */
			if (!stat(from, &st) && st.st_mtime <= now &&
			    now - st.st_mtime < PEAKS_RECHECK_S &&
			    !file_read_untrusted(from, PEAKS_FILE_MAX, &text, &n, msg, sizeof(msg)))
				file_write_atomic(to, text, n, msg, sizeof(msg));
			free(text);
			free(from);
			free(to);
		}
	}
	closedir(d);
}

int peaks_read_cache(const struct devinfo *info, const char *cache_dir, struct peaks *pk)
{
	char *path, *text = NULL, msg[256];
	json_t *doc;
	json_int_t ver = 0;
	int rc = -1;

	if (!cache_dir)
		return -1;
	path = cache_path(info, cache_dir);
	if (!file_read(path, PEAKS_FILE_MAX, &text, NULL, msg, sizeof(msg))) {
		doc = json_loads(text, 0, NULL);
		if (doc &&
		    !json_unpack(doc, "{s:I, s:F, s:F, s:F}", "version", &ver, "gflops",
				 &pk->gflops, "gbs", &pk->gbs, "launch_us", &pk->launch_us) &&
		    ver == PEAKS_VERSION && pk->gflops > 0 && pk->gbs > 0) {
			pk->cached = 1;
			rc = 0;
		}
		json_decref(doc);
	}
	free(text);
	free(path);
	return rc;
}

void peaks_save(const struct devinfo *info, const char *cache_dir, const struct peaks *pk)
{
	char *path, *text, msg[512];
	json_t *doc;

	if (!cache_dir || !(pk->gflops > 0) || !(pk->gbs > 0))
		return;
	path = cache_path(info, cache_dir);
	doc = peaks_json(pk);
	json_object_set_new(doc, "version", json_integer(PEAKS_VERSION));
	json_object_set_new(doc, "device", clrt_devinfo_json(info));
	json_object_del(doc, "cached");
	json_object_del(doc, "measured_now_gflops");
	json_object_del(doc, "measured_now_gbs");
	text = jx_dump(doc);
	if (dir_make(cache_dir, msg, sizeof(msg)) ||
	    file_write_atomic(path, text, strlen(text), msg, sizeof(msg)))
		log_warn("device peaks not cached: %s", msg);
	free(text);
	json_decref(doc);
	free(path);
}

/*
 * A peak measured while the machine was busy is too low, and a cached low
 * peak would make honest kernels "above peak".  So a measurement is
 * combined with the cache, using the higher of the fresh and the cached
 * figure for each
 * ceiling; the cache keeps the highest ever seen on this device, and its
 * date says when they were last measured (PEAKS_RECHECK_S).
 */
int peaks_get(struct clrt *rt, const char *cache_dir, struct peaks *pk, uint64_t budget, char *msg,
	      size_t n)
{
	struct peaks cached;
	int have = !peaks_read_cache(&rt->info, cache_dir, &cached), rc;

	rc = peaks_measure(rt, pk, budget, msg, n);
	if (rc)
		return have ? (*pk = cached, 0) : rc;
	pk->fresh_gflops = pk->gflops;
	pk->fresh_gbs = pk->gbs;
	if (have) {
		pk->cached = 1;
		if (cached.gflops > pk->gflops)
			pk->gflops = cached.gflops;
		if (cached.gbs > pk->gbs)
			pk->gbs = cached.gbs;
	}
	/* Saved even when not higher: the file's date says when they were measured. */
	peaks_save(&rt->info, cache_dir, pk);
	return 0;
}

json_t *peaks_json(const struct peaks *pk)
{
	json_t *o = json_object();

	jx_set_real(o, "gflops", pk->gflops);
	jx_set_real(o, "gbs", pk->gbs);
	jx_set_real(o, "launch_us", pk->launch_us);
	if (pk->fresh_gflops > 0) {
		jx_set_real(o, "measured_now_gflops", pk->fresh_gflops);
		jx_set_real(o, "measured_now_gbs", pk->fresh_gbs);
	}
	json_object_set_new(o, "cached", json_boolean(pk->cached));
	return o;
}
