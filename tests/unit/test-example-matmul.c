/*
 * test-example-matmul.c - the matmul example's kernels against the host.
 *
 *   test-example-matmul [DIR]
 *
 * DIR holds reference.cl and matmul.cl (default: examples/matmul found from
 * this file's path).  On the first device of the first OpenCL platform it
 * builds examples/matmul/reference.cl and checks it on small shapes, one of
 * them a multiple of nothing, against matmul_host() (host_ref.c, double
 * accumulation); then it builds the template with its defaults and with
 * tunable combinations chosen to stress the edges (partial tiles in M and N,
 * K tails after the unrolled loop and the K blocks, local-memory staging on
 * and off, packed panels on and off, scalar and vector columns) and runs
 * each through the spec's plan (pack_a, pack_b, matmul) on a boundary shape and
 * on a shape smaller than one tile.  Inputs come from a fixed LCG; outputs
 * are poisoned with NaN before each run, so an element never written fails.
 *
 * An element passes when |got - want| <= K * FLT_EPSILON * sum_k |a_ik b_kj|:
 * float accumulation in any order of summation, fused or not, stays within
 * about (K - 1) * FLT_EPSILON / 2 of that sum (plus the host's one rounding),
 * so the bound leaves room for every correct kernel, while a kernel that
 * drops, repeats or misplaces a single product is off by far more.
 *
 * Prints "N passed, M failed" (one test per program checked); exits 77 when
 * there is no OpenCL platform or device.
 */
#include <CL/cl.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_ref.h"
#include "test.h"

#define MAX_SHOWN   5    /* mismatches printed per comparison */
#define GUARD       4096 /* floats after C that a kernel must leave alone */
#define GUARD_VALUE 12345.0f

static const char *kdir;
static cl_device_id dev;
static cl_context ctx;
static cl_command_queue queue;

/* One point of the template's tunables (examples/matmul.yaml). */
struct combo {
	int tm, vn, tn, wx, wy, ku, kb, local, pack;
	int defaults; /* build with no options: these are the template's own defaults */
};

struct shape {
	int m, n, k;
};

static char *read_text(const char *name)
{
	char path[4096];
	FILE *f;
	char *buf = NULL;
	long len;

	snprintf(path, sizeof(path), "%s/%s", kdir, name);
	f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "cannot open %s\n", path);
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)len + 1);
		if (buf && fread(buf, 1, (size_t)len, f) == (size_t)len) {
			buf[len] = '\0';
		} else {
			free(buf);
			buf = NULL;
		}
	}
	fclose(f);
	if (!buf)
		fprintf(stderr, "cannot read %s\n", path);
	return buf;
}

/* Uniform floats in [-1, 1) from a 32-bit LCG (Numerical Recipes' constants). */
static void fill(float *x, size_t n, uint32_t *state)
{
	for (size_t i = 0; i < n; i++) {
		*state = *state * 1664525u + 1013904223u;
		x[i] = (float)(*state >> 8) / 8388608.0f - 1.0f;
	}
}

static cl_program build(const char *src, const char *options)
{
	cl_int err;
	cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);

	if (err != CL_SUCCESS) {
		fprintf(stderr, "clCreateProgramWithSource: %d\n", err);
		return NULL;
	}
	err = clBuildProgram(prog, 1, &dev, options, NULL, NULL);
	if (err != CL_SUCCESS) {
		size_t len = 0;
		char *log;

		clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &len);
		log = calloc(len + 1, 1);
		if (log)
			clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, len, log, NULL);
		fprintf(stderr, "clBuildProgram '%s': %d\n%s\n", options, err, log ? log : "");
		free(log);
		clReleaseProgram(prog);
		return NULL;
	}
	return prog;
}

static size_t ceil_div(size_t a, size_t b)
{
	return (a + b - 1) / b;
}

static size_t round_up(size_t a, size_t b)
{
	return ceil_div(a, b) * b;
}

/* A NaN-filled scratch buffer of n floats (at least one). */
static cl_mem nan_buffer(size_t n, cl_int *err)
{
	float nan = NAN;
	cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, (n ? n : 1) * sizeof(float), NULL, err);

	if (*err == CL_SUCCESS)
		*err = clEnqueueFillBuffer(queue, m, &nan, sizeof(nan), 0,
					   (n ? n : 1) * sizeof(float), 0, NULL, NULL);
	return m;
}

/*
 * examples/matmul.yaml's pack_a and pack_b steps for combination c: with
 * PACK=1 pack_a over 16 steps of K of a panel per work-item in 8 x 8
 * work-groups, with PACK > 0 pack_b over B in 64 x 16 work-groups (each grid
 * rounded up to its work-groups); otherwise one work-item each (they do
 * nothing).
 */
static cl_int run_packs(cl_program prog, const struct combo *c, struct shape s, cl_mem ma,
			cl_mem mb, cl_mem map, cl_mem mbp)
{
	const char *names[2] = { "pack_a", "pack_b" };
	cl_mem in[2] = { ma, mb }, out[2] = { map, mbp };
	int dims[2] = { s.m, s.n };
	size_t g[2][2] = {
		{ round_up(ceil_div((size_t)s.k, 16), 8),
		  round_up(ceil_div((size_t)s.m, (size_t)c->tm), 8) },
		{ round_up(ceil_div((size_t)s.n, (size_t)c->vn), 64), round_up((size_t)s.k, 16) },
	};
	size_t lws[2][2] = { { 8, 8 }, { 64, 16 } };
	int on[2] = { c->pack == 1, c->pack > 0 };
	cl_int err = CL_SUCCESS;

	for (int i = 0; i < 2 && err == CL_SUCCESS; i++) {
		size_t one[2] = { 1, 1 };
		cl_kernel k = clCreateKernel(prog, names[i], &err);

		if (err != CL_SUCCESS)
			return err;
		err = clSetKernelArg(k, 0, sizeof(cl_mem), &in[i]);
		err |= clSetKernelArg(k, 1, sizeof(cl_mem), &out[i]);
		err |= clSetKernelArg(k, 2, sizeof(int), &dims[i]);
		err |= clSetKernelArg(k, 3, sizeof(int), &s.k);
		if (err == CL_SUCCESS)
			err = clEnqueueNDRangeKernel(queue, k, 2, NULL, on[i] ? g[i] : one,
						     on[i] ? lws[i] : one, 0, NULL, NULL);
		clReleaseKernel(k);
	}
	return err;
}

/*
 * Runs C = A * B with prog over gws (lws NULL: the driver's choice) and
 * reads C back: the reference matmul_ref when c is NULL, else the
 * template's plan for combination c (pack_a, pack_b, matmul, with NaN-filled
 * panels).  C is poisoned with NaN first and followed by GUARD floats that
 * must come back unchanged (a store past the end of C); A and B are read
 * back too and must be unchanged.  Returns 0 on success.
 */
static int run(cl_program prog, const struct combo *cb, struct shape s, const float *a,
	       const float *b, float *c, const size_t gws[2], const size_t *lws)
{
	const char *name = cb ? "matmul" : "matmul_ref";
	size_t na = (size_t)s.m * s.k, nb = (size_t)s.k * s.n, nc = (size_t)s.m * s.n;
	cl_mem ma = NULL, mb = NULL, mc = NULL, map = NULL, mbp = NULL;
	cl_kernel kern;
	cl_int err;
	int arg = 0;
	float *back = NULL, *cbuf = malloc((nc + GUARD) * sizeof(float));
	int rc = -1;

	if (!cbuf) {
		fprintf(stderr, "out of memory\n");
		return -1;
	}
	for (size_t i = 0; i < nc + GUARD; i++)
		cbuf[i] = i < nc ? NAN : GUARD_VALUE;
	kern = clCreateKernel(prog, name, &err);
	if (err != CL_SUCCESS) {
		fprintf(stderr, "clCreateKernel %s: %d\n", name, err);
		free(cbuf);
		return -1;
	}
	/* Zero-sized buffers are invalid: allocate at least one element. */
	ma = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
			    (na ? na : 1) * sizeof(float), (void *)a, &err);
	if (err == CL_SUCCESS)
		mb = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
				    (nb ? nb : 1) * sizeof(float), (void *)b, &err);
	if (err == CL_SUCCESS)
		mc = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
				    (nc + GUARD) * sizeof(float), cbuf, &err);
	/* examples/matmul.yaml: Ap round_up(M, 48) * K, Bp round_up(N, 64) * K */
	if (err == CL_SUCCESS && cb)
		map = nan_buffer(round_up((size_t)s.m, 48) * (size_t)s.k, &err);
	if (err == CL_SUCCESS && cb)
		mbp = nan_buffer(round_up((size_t)s.n, 64) * (size_t)s.k, &err);
	if (err != CL_SUCCESS) {
		fprintf(stderr, "clCreateBuffer: %d\n", err);
		goto out;
	}
	if (cb && (err = run_packs(prog, cb, s, ma, mb, map, mbp)) != CL_SUCCESS) {
		fprintf(stderr, "pack_a, pack_b: %d\n", err);
		goto out;
	}
	err = clSetKernelArg(kern, arg++, sizeof(cl_mem), &ma);
	err |= clSetKernelArg(kern, arg++, sizeof(cl_mem), &mb);
	if (cb) {
		err |= clSetKernelArg(kern, arg++, sizeof(cl_mem), &map);
		err |= clSetKernelArg(kern, arg++, sizeof(cl_mem), &mbp);
	}
	err |= clSetKernelArg(kern, arg++, sizeof(cl_mem), &mc);
	err |= clSetKernelArg(kern, arg++, sizeof(int), &s.m);
	err |= clSetKernelArg(kern, arg++, sizeof(int), &s.n);
	err |= clSetKernelArg(kern, arg++, sizeof(int), &s.k);
	if (err != CL_SUCCESS) {
		fprintf(stderr, "clSetKernelArg: failed\n");
		goto out;
	}
	err = clEnqueueNDRangeKernel(queue, kern, 2, NULL, gws, lws, 0, NULL, NULL);
	if (err != CL_SUCCESS) {
		fprintf(stderr, "clEnqueueNDRangeKernel %s (%zu x %zu): %d\n", name, gws[0], gws[1],
			err);
		goto out;
	}
	err = clEnqueueReadBuffer(queue, mc, CL_TRUE, 0, (nc + GUARD) * sizeof(float), cbuf, 0,
				  NULL, NULL);
	back = malloc(((na > nb ? na : nb) + 1) * sizeof(float));
	if (err != CL_SUCCESS || !back) {
		fprintf(stderr, "clEnqueueReadBuffer C: %d\n", err);
		goto out;
	}
	memcpy(c, cbuf, nc * sizeof(float));
	for (size_t i = nc; i < nc + GUARD; i++) {
		if (cbuf[i] != GUARD_VALUE) {
			fprintf(stderr, "%s wrote C[%zu], past the end of C (%zu elements)\n", name,
				i, nc);
			goto out;
		}
	}
	if (clEnqueueReadBuffer(queue, ma, CL_TRUE, 0, na * sizeof(float), back, 0, NULL, NULL) !=
		    CL_SUCCESS ||
	    memcmp(back, a, na * sizeof(float))) {
		fprintf(stderr, "%s changed its input A\n", name);
		goto out;
	}
	if (clEnqueueReadBuffer(queue, mb, CL_TRUE, 0, nb * sizeof(float), back, 0, NULL, NULL) !=
		    CL_SUCCESS ||
	    memcmp(back, b, nb * sizeof(float))) {
		fprintf(stderr, "%s changed its input B\n", name);
		goto out;
	}
	rc = 0;
out:
	free(back);
	free(cbuf);
	if (mbp)
		clReleaseMemObject(mbp);
	if (map)
		clReleaseMemObject(map);
	if (mc)
		clReleaseMemObject(mc);
	if (mb)
		clReleaseMemObject(mb);
	if (ma)
		clReleaseMemObject(ma);
	clReleaseKernel(kern);
	return rc;
}

/* Compares got with matmul_host(); returns the number of elements out of bounds. */
static long compare(const char *what, struct shape s, const float *a, const float *b,
		    const float *got)
{
	size_t nc = (size_t)s.m * s.n;
	float *want = malloc((nc ? nc : 1) * sizeof(float));
	long bad = 0;
	double worst = 0.0;

	if (!want) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	matmul_host(s.m, s.n, s.k, a, b, want);
	for (int i = 0; i < s.m; i++) {
		for (int j = 0; j < s.n; j++) {
			size_t at = (size_t)i * s.n + j;
			double mag = 0.0, err, bound;

			for (int k = 0; k < s.k; k++)
				mag += fabs((double)a[(size_t)i * s.k + k] *
					    (double)b[(size_t)k * s.n + j]);
			bound = (double)s.k * FLT_EPSILON * mag;
			err = fabs((double)got[at] - (double)want[at]);
			if (err <= bound) {
				if (err > worst)
					worst = err;
				continue;
			}
			if (bad++ < MAX_SHOWN)
				fprintf(stderr,
					"%s, %dx%dx%d: C[%d][%d] = %.9g, want %.9g (bound %.3g)\n",
					what, s.m, s.n, s.k, i, j, (double)got[at],
					(double)want[at], bound);
		}
	}
	if (bad)
		fprintf(stderr, "%s, %dx%dx%d: %ld of %zu elements wrong\n", what, s.m, s.n, s.k,
			bad, nc);
	else
		printf("  %-60s %4dx%4dx%4d  max error %.3g\n", what, s.m, s.n, s.k, worst);
	free(want);
	return bad;
}

/* Builds inputs for s from seed, runs the kernel, compares; returns failures (0 or 1). */
static int check_shape(cl_program prog, const struct combo *cb, const char *what, struct shape s,
		       uint32_t seed, const size_t gws[2], const size_t *lws)
{
	size_t na = (size_t)s.m * s.k, nb = (size_t)s.k * s.n, nc = (size_t)s.m * s.n;
	float *a = malloc((na + 1) * sizeof(float)), *b = malloc((nb + 1) * sizeof(float));
	float *c = malloc((nc + 1) * sizeof(float));
	int fail = 1;

	if (a && b && c) {
		fill(a, na, &seed);
		fill(b, nb, &seed);
		if (run(prog, cb, s, a, b, c, gws, lws) == 0)
			fail = compare(what, s, a, b, c) != 0;
		else
			fprintf(stderr, "%s, %dx%dx%d: run failed\n", what, s.m, s.n, s.k);
	}
	free(a);
	free(b);
	free(c);
	return fail;
}

/* ---- the reference ---- */

static const struct shape ref_shapes[] = {
	{ 1, 1, 1 },   { 16, 16, 16 }, { 64, 48, 80 },
	{ 33, 17, 9 }, { 1, 300, 7 },  { 257, 259, 263 },
};

TEST(reference)
{
	char *src = read_text("reference.cl");
	cl_program prog = src ? build(src, "") : NULL;

	CHECK(prog != NULL);
	for (size_t i = 0; prog && i < sizeof(ref_shapes) / sizeof(ref_shapes[0]); i++) {
		struct shape s = ref_shapes[i];
		size_t gws[2] = { (size_t)s.n, (size_t)s.m };

		CHECK(check_shape(prog, NULL, "reference", s, 1000u + (uint32_t)i, gws, NULL) == 0);
	}
	if (prog)
		clReleaseProgram(prog);
	free(src);
}

/* ---- the template ---- */

/*
 * The template's own defaults first (built with no options), then points
 * that each stress something: K tails after KU and after KB, a last K block
 * shorter than KB, local tiles wider than N, vector widths 1 to 16, tiles
 * with rows past M, one-work-item groups and 256-work-item groups, and the
 * packed panels with each of those (PACK=1: zero padding past M and N,
 * work-items past the last panel; PACK=2: B's panels, A's rows in place).  Every point satisfies the constraints of
 * examples/matmul.yaml.
 */
/* clang-format off */
static const struct combo combos[] = {
	/* TM  VN  TN  WX  WY  KU   KB  LOCAL PACK defaults */
	{   1,  4,  1,  8,  1,  1,    0,  0,   0,   1 },
	{   8, 16,  1,  8,  1,  1,    0,  0,   0,   0 },
	{   8, 16,  2,  4,  2,  4,    0,  0,   0,   0 },
	{   6,  8,  2,  2,  4,  8,   64,  0,   0,   0 },
	{   1,  2,  2,  1,  1,  2,   16,  0,   0,   0 },
	{   1,  1,  4, 32,  1,  4,    0,  0,   0,   0 },
	{   4,  4,  2,  8,  4,  2,   32,  1,   0,   0 },
	{  12,  2,  4,  4,  2,  1,   16,  1,   0,   0 },
	{  16, 16,  1,  1,  8,  8,   64,  1,   0,   0 },
	{   2,  1,  2, 16, 16,  8,  256,  1,   0,   0 },
	{   8, 16,  2,  4,  1,  2,    0,  0,   1,   0 },
	{  12, 16,  1,  8,  8,  1,  256,  0,   1,   0 },
	{   6,  8,  2,  2,  4,  8,   64,  0,   1,   0 },
	{   4,  1,  1, 32,  1,  4,    0,  0,   1,   0 },
	{  16,  4,  4,  1,  8,  8,   16,  0,   1,   0 },
	{   2,  2,  1, 16, 16,  1,    0,  0,   1,   0 },
	{   4, 16,  4,  1,  8,  1,    0,  0,   2,   0 },
	{  12,  8,  1,  4,  2,  2,   64,  0,   2,   0 },
	{   1,  4,  1,  8,  1,  1,    0,  0,   2,   0 },
	{  16,  1,  2,  2,  4,  4,   16,  0,   2,   0 },
};
/* clang-format on */

/* Rows, columns and depth that are multiples of no tile; and less than one tile. */
static const struct shape edge_shapes[] = { { 257, 259, 263 }, { 5, 3, 7 } };

static void combo_options(const struct combo *c, char *buf, size_t len)
{
	if (c->defaults)
		snprintf(buf, len, "%s", "");
	else
		snprintf(buf, len,
			 "-DTM=%d -DVN=%d -DTN=%d -DWX=%d -DWY=%d -DKU=%d -DKB=%d -DLOCAL=%d "
			 "-DPACK=%d",
			 c->tm, c->vn, c->tn, c->wx, c->wy, c->ku, c->kb, c->local, c->pack);
}

static void check_combo(const struct combo *c, const char *src)
{
	char opts[256], what[300];
	cl_program prog;
	cl_kernel kern;
	size_t reqd[3] = { 0, 0, 0 };

	combo_options(c, opts, sizeof(opts));
	snprintf(what, sizeof(what), "template %s", c->defaults ? "(defaults)" : opts);
	prog = build(src, opts);
	CHECK(prog != NULL);
	if (!prog)
		return;
	/* The kernel's reqd_work_group_size is (WX, WY, 1): the geometry below agrees. */
	kern = clCreateKernel(prog, "matmul", NULL);
	CHECK(kern != NULL);
	if (kern) {
		CHECK(clGetKernelWorkGroupInfo(kern, dev, CL_KERNEL_COMPILE_WORK_GROUP_SIZE,
					       sizeof(reqd), reqd, NULL) == CL_SUCCESS);
		CHECK(reqd[0] == (size_t)c->wx && reqd[1] == (size_t)c->wy && reqd[2] == 1);
		clReleaseKernel(kern);
	}
	for (size_t i = 0; i < sizeof(edge_shapes) / sizeof(edge_shapes[0]); i++) {
		struct shape s = edge_shapes[i];
		/* examples/matmul.yaml: global = [round_up(ceil_div(N, TN * VN), WX),
		 *                                  round_up(ceil_div(M, TM), WY)], local = [WX, WY] */
		size_t gws[2] = { round_up(ceil_div((size_t)s.n, (size_t)(c->tn * c->vn)),
					   (size_t)c->wx),
				  round_up(ceil_div((size_t)s.m, (size_t)c->tm), (size_t)c->wy) };
		size_t lws[2] = { (size_t)c->wx, (size_t)c->wy };

		CHECK(check_shape(prog, c, what, s, 2000u + (uint32_t)i, gws, lws) == 0);
	}
	clReleaseProgram(prog);
}

/* Each combination counts as one test in the summary. */
static void run_combos(void)
{
	char *src = read_text("matmul.cl");

	CHECK(src != NULL);
	for (size_t i = 0; src && i < sizeof(combos) / sizeof(combos[0]); i++) {
		int before = test_failed_checks;
		char opts[256];

		check_combo(&combos[i], src);
		if (test_failed_checks == before) {
			test_passed++;
		} else {
			test_failed++;
			combo_options(&combos[i], opts, sizeof(opts));
			fprintf(stderr, "FAIL template %s\n",
				combos[i].defaults ? "(defaults)" : opts);
		}
	}
	free(src);
}

/* ---- the host reference itself ---- */

TEST(host_reference)
{
	/* [1 2; 3 4; 5 6] * [1 0 2; 0 1 3] */
	const float a[6] = { 1, 2, 3, 4, 5, 6 }, b[6] = { 1, 0, 2, 0, 1, 3 };
	const float want[9] = { 1, 2, 8, 3, 4, 18, 5, 6, 28 };
	float c[9];
	/* 1 + 2^-24 + ... rounds to 1 in float steps but not in double. */
	const float x[3] = { 1.0f, 0x1p-24f, 0x1p-24f }, ones[3] = { 1.0f, 1.0f, 1.0f };
	float d;

	matmul_host(3, 3, 2, a, b, c);
	CHECK(!memcmp(c, want, sizeof(c)));
	matmul_host(1, 1, 3, x, ones, &d);
	CHECK(d == 1.0f + 0x1p-23f);
}

int main(int argc, char **argv)
{
	static char guess[4096];
	cl_platform_id platform;
	cl_uint nplatforms = 0, ndevices = 0;
	cl_int err;
	char name[256] = "";

	if (argc > 2) {
		fprintf(stderr, "usage: test-example-matmul [DIR]\n");
		return 2;
	}
	if (argc > 1) {
		kdir = argv[1];
	} else {
		/* tests/unit/test-example-matmul.c -> examples/matmul */
		const char *slash = strrchr(__FILE__, '/');

		if (slash)
			snprintf(guess, sizeof(guess), "%.*s/../../examples/matmul",
				 (int)(slash - __FILE__), __FILE__);
		else
			snprintf(guess, sizeof(guess), "../../examples/matmul");
		kdir = guess;
	}
	RUN(host_reference);
	err = clGetPlatformIDs(1, &platform, &nplatforms);
	if (err != CL_SUCCESS || nplatforms == 0) {
		printf("no OpenCL platform (%d): skipped\n", err);
		return 77;
	}
	err = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &dev, &ndevices);
	if (err != CL_SUCCESS || ndevices == 0) {
		printf("no OpenCL device (%d): skipped\n", err);
		return 77;
	}
	clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof(name) - 1, name, NULL);
	printf("device: %s\n", name);
	ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
	if (err != CL_SUCCESS) {
		fprintf(stderr, "clCreateContext: %d\n", err);
		return 1;
	}
	queue = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
	if (err != CL_SUCCESS) {
		fprintf(stderr, "clCreateCommandQueueWithProperties: %d\n", err);
		clReleaseContext(ctx);
		return 1;
	}
	RUN(reference);
	run_combos();
	clReleaseCommandQueue(queue);
	clReleaseContext(ctx);
	return test_summary();
}
