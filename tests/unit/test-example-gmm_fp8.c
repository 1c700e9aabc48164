/*
 * test-example-gmm_fp8.c - the gmm_fp8_blockwise example: the E4M3 decode on
 * all 256 codes (host definition and both OpenCL programs, bit for bit), the
 * OpenCL reference and the template (defaults and tunable points) against the
 * host reference on small shapes.
 *
 * Needs an OpenCL platform; exits 77 (skipped) without one. Run from the
 * repository root, or build with -DGMM_DIR=\"path/to/examples/gmm_fp8_blockwise\".
 *
 *   gcc -std=c11 -D_GNU_SOURCE -DCL_TARGET_OPENCL_VERSION=300 -Wall -Wextra \
 *       -include common/banned.h -Itests/unit -Iexamples/gmm_fp8_blockwise \
 *       tests/unit/test-example-gmm_fp8.c examples/gmm_fp8_blockwise/host_ref.c \
 *       -o /tmp/tgmm -lOpenCL -lm
 */
#include "test.h"
#include "host_ref.h"

#include <CL/cl.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#ifndef GMM_DIR
#define GMM_DIR "examples/gmm_fp8_blockwise"
#endif

/* The correctness tolerance of examples/gmm_fp8_blockwise.yaml. */
#define ATOL 1e-3
#define RTOL 1e-4
/* The scale distribution of the spec: uniform in [SCALE_LO, SCALE_HI]. */
#define SCALE_LO 0.005
#define SCALE_HI 0.015

static cl_context ctx;
static cl_command_queue queue;
static cl_device_id dev;
static char *ref_src, *tmpl_src;

/* ---- helpers ---- */

static char *read_text(const char *name)
{
	const char *dirs[] = { GMM_DIR, "../../" GMM_DIR, "../" GMM_DIR };
	char path[1024];

	for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
		FILE *f;
		long n;
		char *s;

		snprintf(path, sizeof(path), "%s/%s", dirs[d], name);
		f = fopen(path, "rb");
		if (!f)
			continue;
		if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
			fclose(f);
			return NULL;
		}
		s = malloc((size_t)n + 1);
		if (!s || fread(s, 1, (size_t)n, f) != (size_t)n) {
			free(s);
			fclose(f);
			return NULL;
		}
		s[n] = '\0';
		fclose(f);
		return s;
	}
	return NULL;
}

static uint64_t rng_state;

static uint64_t rng(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double rng01(void)
{
	return (double)(rng() >> 11) * (1.0 / 9007199254740992.0);
}

static uint32_t fbits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

/* Builds src (plus extra, when given) with options; NULL and a log on error. */
static cl_program build(const char *src, const char *extra, const char *options)
{
	const char *srcs[2] = { src, extra };
	cl_int err;
	cl_program p = clCreateProgramWithSource(ctx, extra ? 2 : 1, srcs, NULL, &err);

	if (err != CL_SUCCESS)
		return NULL;
	err = clBuildProgram(p, 1, &dev, options, NULL, NULL);
	if (err != CL_SUCCESS) {
		char log[8192] = "";

		clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, sizeof(log) - 1, log, NULL);
		fprintf(stderr, "build failed (%s): %s\n", options ? options : "", log);
		clReleaseProgram(p);
		return NULL;
	}
	return p;
}

static cl_mem mkbuf(size_t bytes, const void *host)
{
	cl_int err;
	cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE | (host ? CL_MEM_COPY_HOST_PTR : 0),
				  bytes ? bytes : 4, (void *)host, &err);

	return err == CL_SUCCESS ? m : NULL;
}

/* ---- the decode, all 256 codes ---- */

/* Known values of the format, as a check on the host definition itself. */
TEST(host_decode_definition)
{
	int nan = 0;
	double prev = -1.0;

	CHECK(e4m3_ref_decode(0x00) == 0.0 && !signbit(e4m3_ref_decode(0x00)));
	CHECK(e4m3_ref_decode(0x80) == 0.0 && signbit(e4m3_ref_decode(0x80)));
	CHECK(e4m3_ref_decode(0x01) == ldexp(1.0, -9));     /* smallest subnormal */
	CHECK(e4m3_ref_decode(0x07) == 7 * ldexp(1.0, -9)); /* largest subnormal */
	CHECK(e4m3_ref_decode(0x08) == ldexp(1.0, -6));     /* smallest normal */
	CHECK(e4m3_ref_decode(0x38) == 1.0);
	CHECK(e4m3_ref_decode(0x3C) == 1.5);
	CHECK(e4m3_ref_decode(0x40) == 2.0);
	CHECK(e4m3_ref_decode(0x7E) == 448.0);
	CHECK(e4m3_ref_decode(0xFE) == -448.0);
	CHECK(e4m3_ref_decode(0xB8) == -1.0);
	CHECK(isnan(e4m3_ref_decode(0x7F)) && isnan(e4m3_ref_decode(0xFF)));
	for (unsigned c = 0; c < 256; c++) {
		double v = e4m3_ref_decode(c);

		if (isnan(v)) {
			nan++;
			continue;
		}
		CHECK((double)(float)v == v);            /* exact in float */
		CHECK(e4m3_ref_decode(c ^ 0x80u) == -v); /* sign bit is the sign */
		if (c < 0x7F) {
			CHECK(v > prev); /* positive codes increase strictly */
			prev = v;
		}
	}
	CHECK(nan == 2);
	for (unsigned c = 0; c < 256; c++)
		CHECK(e4m3_ref_sanitize(c) == (c == 0x7F || c == 0xFF ? 0u : c));
}

static const char decode_kernel[] =
	"__kernel void t_decode(__global const uint *codes, __global float *v,\n"
	"                       __global uint *san)\n"
	"{\n"
	"	int i = get_global_id(0);\n"
	"	v[i] = e4m3_decode(codes[i]);\n"
	"	san[i] = e4m3_sanitize(codes[i]);\n"
	"}\n";

/* Runs e4m3_decode and e4m3_sanitize of src on every code and compares. */
static void check_cl_decode(const char *src)
{
	uint32_t codes[256], san[256];
	float v[256];
	size_t global = 256;
	cl_program p;
	cl_kernel k;
	cl_mem bc, bv, bs;
	int mismatches = 0;

	CHECK(src != NULL);
	if (!src)
		return;
	for (unsigned c = 0; c < 256; c++)
		codes[c] = c;
	p = build(src, decode_kernel, "");
	CHECK(p != NULL);
	if (!p)
		return;
	k = clCreateKernel(p, "t_decode", NULL);
	bc = mkbuf(sizeof(codes), codes);
	bv = mkbuf(sizeof(v), NULL);
	bs = mkbuf(sizeof(san), NULL);
	CHECK(k && bc && bv && bs);
	clSetKernelArg(k, 0, sizeof(cl_mem), &bc);
	clSetKernelArg(k, 1, sizeof(cl_mem), &bv);
	clSetKernelArg(k, 2, sizeof(cl_mem), &bs);
	CHECK(clEnqueueNDRangeKernel(queue, k, 1, NULL, &global, NULL, 0, NULL, NULL) ==
	      CL_SUCCESS);
	CHECK(clEnqueueReadBuffer(queue, bv, CL_TRUE, 0, sizeof(v), v, 0, NULL, NULL) ==
	      CL_SUCCESS);
	CHECK(clEnqueueReadBuffer(queue, bs, CL_TRUE, 0, sizeof(san), san, 0, NULL, NULL) ==
	      CL_SUCCESS);
	for (unsigned c = 0; c < 256; c++) {
		double want = e4m3_ref_decode(c);
		int ok = isnan(want) ? isnan(v[c]) : fbits(v[c]) == fbits((float)want);

		if (!ok && mismatches++ < 8)
			fprintf(stderr, "  code 0x%02x: OpenCL %a (0x%08x), definition %a\n", c,
				(double)v[c], fbits(v[c]), want);
		CHECK(ok);
		CHECK(san[c] == e4m3_ref_sanitize(c));
	}
	clReleaseMemObject(bc);
	clReleaseMemObject(bv);
	clReleaseMemObject(bs);
	clReleaseKernel(k);
	clReleaseProgram(p);
}

TEST(cl_decode_reference)
{
	check_cl_decode(ref_src);
}

TEST(cl_decode_template)
{
	check_cl_decode(tmpl_src);
}

/* The text between the E4M3-SHARED markers, or NULL. */
static char *shared_section(const char *src)
{
	const char *a = src ? strstr(src, "// E4M3-SHARED-BEGIN") : NULL;
	const char *b = a ? strstr(a, "// E4M3-SHARED-END") : NULL;
	char *s;

	if (!b)
		return NULL;
	s = malloc((size_t)(b - a) + 1);
	if (!s)
		return NULL;
	memcpy(s, a, (size_t)(b - a));
	s[b - a] = '\0';
	return s;
}

TEST(shared_section_identical)
{
	char *r = shared_section(ref_src), *t = shared_section(tmpl_src);

	CHECK(r != NULL && t != NULL);
	if (r && t)
		CHECK(strcmp(r, t) == 0);
	CHECK(r && strstr(r, "float e4m3_decode(uint code)"));
	/* The decode and the input convention sit outside the template's block. */
	CHECK(tmpl_src && strstr(tmpl_src, "E4M3-SHARED-END") &&
	      strstr(tmpl_src, "EVOLVE-BLOCK-START") &&
	      strstr(tmpl_src, "E4M3-SHARED-END") < strstr(tmpl_src, "EVOLVE-BLOCK-START"));
	free(r);
	free(t);
}

/* ---- the grouped matmul ---- */

struct shape {
	int M, K, N, G;
	const int32_t *sizes; /* NULL: random in [0, 512], as the spec's init */
};

struct inputs {
	const struct shape *s;
	uint32_t *lhs, *rhs;
	float *ls, *rs;
	int32_t *gs;
	size_t nlhs, nrhs, nls, nrs;
};

static void make_inputs(struct inputs *in, const struct shape *s, uint64_t seed)
{
	int KB = (s->K + 127) / 128, NB = (s->N + 127) / 128, MB = (s->M + 127) / 128;

	rng_state = seed;
	in->s = s;
	in->nlhs = ((size_t)s->M * s->K + 3) / 4;
	in->nrhs = ((size_t)s->G * s->K * s->N + 3) / 4;
	in->nls = (size_t)MB * KB;
	in->nrs = (size_t)s->G * KB * NB;
	in->lhs = malloc(in->nlhs * 4 + 4);
	in->rhs = malloc(in->nrhs * 4 + 4);
	in->ls = malloc(in->nls * 4 + 4);
	in->rs = malloc(in->nrs * 4 + 4);
	in->gs = malloc((size_t)s->G * 4 + 4);
	if (!in->lhs || !in->rhs || !in->ls || !in->rs || !in->gs)
		abort();
	for (size_t i = 0; i < in->nlhs; i++)
		in->lhs[i] = (uint32_t)rng();
	for (size_t i = 0; i < in->nrhs; i++)
		in->rhs[i] = (uint32_t)rng();
	for (size_t i = 0; i < in->nls; i++)
		in->ls[i] = (float)(SCALE_LO + (SCALE_HI - SCALE_LO) * rng01());
	for (size_t i = 0; i < in->nrs; i++)
		in->rs[i] = (float)(SCALE_LO + (SCALE_HI - SCALE_LO) * rng01());
	for (int g = 0; g < s->G; g++)
		in->gs[g] = s->sizes ? s->sizes[g] : (int32_t)(rng() % 513);
}

static void free_inputs(struct inputs *in)
{
	free(in->lhs);
	free(in->rhs);
	free(in->ls);
	free(in->rs);
	free(in->gs);
}

/* The problem's buffers, in the kernels' order: lhs, lhs_scale, rhs,
 * rhs_scale, group_sizes, out (b[i] NULL where one failed). */
static void mk_problem(const struct inputs *in, cl_mem b[6])
{
	const struct shape *s = in->s;

	b[0] = mkbuf(in->nlhs * 4, in->lhs);
	b[1] = mkbuf(in->nls * 4, in->ls);
	b[2] = mkbuf(in->nrhs * 4, in->rhs);
	b[3] = mkbuf(in->nrs * 4, in->rs);
	b[4] = mkbuf((size_t)s->G * 4, in->gs);
	b[5] = mkbuf((size_t)s->M * s->N * 4, NULL);
}

/* Runs kernel kname of program p over global/local; NULL on failure. */
static float *run_gmm(cl_program p, const char *kname, const struct inputs *in,
		      const size_t global[2], const size_t *local)
{
	const struct shape *s = in->s;
	size_t nout = (size_t)s->M * s->N;
	float *out = malloc(nout * sizeof(float) + 4);
	cl_mem b[6];
	cl_int err;
	cl_kernel k = clCreateKernel(p, kname, &err);
	int ok = err == CL_SUCCESS && out;

	mk_problem(in, b);
	for (int i = 0; i < 6; i++)
		ok = ok && b[i];
	if (ok) {
		const float nanv = NAN;
		int args[4] = { s->M, s->K, s->N, s->G };

		for (cl_uint i = 0; i < 6; i++)
			ok = ok && clSetKernelArg(k, i, sizeof(cl_mem), &b[i]) == CL_SUCCESS;
		for (cl_uint i = 0; i < 4; i++)
			ok = ok && clSetKernelArg(k, 6 + i, sizeof(int), &args[i]) == CL_SUCCESS;
		/* Poison the output so a forgotten element shows. */
		ok = ok && clEnqueueFillBuffer(queue, b[5], &nanv, sizeof(nanv), 0, nout * 4, 0,
					       NULL, NULL) == CL_SUCCESS;
		err = clEnqueueNDRangeKernel(queue, k, 2, NULL, global, local, 0, NULL, NULL);
		if (err != CL_SUCCESS)
			fprintf(stderr, "  enqueue %s: error %d\n", kname, err);
		ok = ok && err == CL_SUCCESS;
		ok = ok && clEnqueueReadBuffer(queue, b[5], CL_TRUE, 0, nout * 4, out, 0, NULL,
					       NULL) == CL_SUCCESS;
	}
	for (int i = 0; i < 6; i++)
		if (b[i])
			clReleaseMemObject(b[i]);
	if (k)
		clReleaseKernel(k);
	if (!ok) {
		free(out);
		return NULL;
	}
	return out;
}

/* Compares got with the host reference under the spec's tolerance. */
static int compare(const char *what, const struct shape *s, const float *got, const float *want)
{
	size_t n = (size_t)s->M * s->N, bad = 0, worst = 0;
	double max_abs = 0, worst_score = -1;

	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)got[i] - want[i]), tol = ATOL + RTOL * fabs(want[i]);

		if (!(d <= tol))
			bad++;
		if (!(d <= max_abs))
			max_abs = d;
		if (!(d / tol <= worst_score)) {
			worst_score = d / tol;
			worst = i;
		}
	}
	if (bad)
		fprintf(stderr,
			"  %s M=%d K=%d N=%d G=%d: %zu of %zu outside tolerance; worst at row %zu "
			"col %zu: %.9g vs %.9g\n",
			what, s->M, s->K, s->N, s->G, bad, n, worst / (size_t)s->N,
			worst % (size_t)s->N, (double)got[worst], (double)want[worst]);
	if (getenv("GMM_TEST_VERBOSE"))
		fprintf(stderr, "  %s M=%d K=%d N=%d G=%d: max abs error %.3g\n", what, s->M, s->K,
			s->N, s->G, max_abs);
	return bad == 0;
}

/* Sizes that cover the bound rules: empty groups, negative sizes, sums
 * below and above M, a last group taking a remainder, M not a multiple of
 * 128, K and N not multiples of 4 or 128. */
static const int32_t sz_a[] = { 100, 50 };          /* last group takes 150 */
static const int32_t sz_b[] = { 0, 500, 400 };      /* empty first; sum > M */
static const int32_t sz_c[] = { -5, 128, 1, 1000 }; /* negative as 0; 1-row group */
static const int32_t sz_d[] = { 2, 2 };
static const int32_t sz_e[] = { 130, 0, 0, 7, 200, 3 }; /* empties in the middle */

static const struct shape shapes[] = {
	{ 300, 200, 72, 2, sz_a }, { 777, 130, 129, 3, sz_b }, { 257, 260, 133, 4, sz_c },
	{ 5, 3, 7, 2, sz_d },      { 600, 129, 37, 6, sz_e },  { 1000, 256, 200, 4, NULL },
	{ 200, 64, 40, 8, NULL },
};
#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))

static float *host_out[NSHAPES];
static struct inputs host_in[NSHAPES];

static void prepare(void)
{
	for (size_t i = 0; i < NSHAPES; i++) {
		const struct shape *s = &shapes[i];

		make_inputs(&host_in[i], s, 1000 + i);
		host_out[i] = malloc((size_t)s->M * s->N * sizeof(float) + 4);
		if (!host_out[i])
			abort();
		gmm_fp8_host_ref(host_in[i].lhs, host_in[i].ls, host_in[i].rhs, host_in[i].rs,
				 host_in[i].gs, host_out[i], s->M, s->K, s->N, s->G);
	}
}

TEST(host_ref_bounds)
{
	int st[7];

	gmm_fp8_ref_bounds(sz_b, 3, 777, st);
	CHECK(st[0] == 0 && st[1] == 0 && st[2] == 500 && st[3] == 777);
	gmm_fp8_ref_bounds(sz_c, 4, 257, st);
	CHECK(st[0] == 0 && st[1] == 0 && st[2] == 128 && st[3] == 129 && st[4] == 257);
	gmm_fp8_ref_bounds(sz_a, 2, 300, st);
	CHECK(st[0] == 0 && st[1] == 100 && st[2] == 300);
	gmm_fp8_ref_bounds(sz_e, 6, 600, st);
	CHECK(st[1] == 130 && st[2] == 130 && st[3] == 130 && st[4] == 137 && st[5] == 337 &&
	      st[6] == 600);
	/* A hand-checked element: out[0,0] with K = 1 is a*sa*b*sb. */
	{
		uint32_t lhs = 0x38, rhs = 0xC0; /* 1.0 and -2.0 */
		float ls = 0.5f, rs = 0.25f, out = 0;
		int32_t gsz = 1;

		gmm_fp8_host_ref(&lhs, &ls, &rhs, &rs, &gsz, &out, 1, 1, 1, 1);
		CHECK(out == -0.25f);
		lhs = 0x7F; /* NaN code reads as 0 */
		gmm_fp8_host_ref(&lhs, &ls, &rhs, &rs, &gsz, &out, 1, 1, 1, 1);
		CHECK(out == 0.0f);
	}
}

TEST(cl_reference_vs_host)
{
	cl_program p = build(ref_src, NULL, "");

	CHECK(p != NULL);
	if (!p)
		return;
	for (size_t i = 0; i < NSHAPES; i++) {
		const struct shape *s = &shapes[i];
		size_t global[2] = { (size_t)s->N, (size_t)s->M };
		float *out = run_gmm(p, "gmm_ref", &host_in[i], global, NULL);

		CHECK(out != NULL);
		if (out)
			CHECK(compare("reference", s, out, host_out[i]));
		free(out);
	}
	clReleaseProgram(p);
}

/* The #ifndef default of name in the template, or -1. */
static long template_default(const char *name)
{
	char pat[64];
	const char *at;

	snprintf(pat, sizeof(pat), "#ifndef %s\n#define %s ", name, name);
	at = tmpl_src ? strstr(tmpl_src, pat) : NULL;
	return at ? strtol(at + strlen(pat), NULL, 10) : -1;
}

static size_t round_up(size_t a, size_t b)
{
	return (a + b - 1) / b * b;
}

/* Enqueues kernel kname of p with the given arguments (cl_mem when size is 0,
 * else an int) over dims/global/local; 0 on success. */
struct karg {
	cl_mem m;
	int i;
};

static int enqueue(cl_program p, const char *kname, const struct karg *a, cl_uint na, cl_uint dims,
		   const size_t *global, const size_t *local)
{
	cl_int err;
	cl_kernel k = clCreateKernel(p, kname, &err);
	int ok = err == CL_SUCCESS;

	for (cl_uint i = 0; ok && i < na; i++)
		ok = (a[i].m ? clSetKernelArg(k, i, sizeof(cl_mem), &a[i].m)
			     : clSetKernelArg(k, i, sizeof(int), &a[i].i)) == CL_SUCCESS;
	if (ok) {
		err = clEnqueueNDRangeKernel(queue, k, dims, NULL, global, local, 0, NULL, NULL);
		if (err != CL_SUCCESS)
			fprintf(stderr, "  enqueue %s: error %d\n", kname, err);
		ok = err == CL_SUCCESS;
	}
	if (k)
		clReleaseKernel(k);
	return ok ? 0 : -1;
}

/* The template's launch plan (examples/gmm_fp8_blockwise.yaml) at t = TM, VN,
 * TN, WX, WY, KU, APACK, ALOCAL, FUSE, KBF: gmm_decode on lhs (rows, or
 * panels of TM rows with APACK; nothing with ALOCAL or FUSE, where gmm
 * decodes lhs itself) and gmm_decode_panels on rhs into float scratch
 * (lhs_f: round_up(M, 48) * K floats, rhs_f: G * K * round_up(N, 64)), then
 * gmm (with FUSE one work-item across N).  Returns out, or NULL on failure. */
static float *run_template(cl_program p, const struct inputs *in, const long t[10])
{
	const struct shape *s = in->s;
	size_t nout = (size_t)s->M * s->N;
	float *out = malloc(nout * sizeof(float) + 4);
	size_t nrf = (size_t)s->G * s->K * round_up((size_t)s->N, 64);
	cl_mem b[8];
	int ok = out != NULL;

	mk_problem(in, b);
	size_t nlf = round_up((size_t)s->M, 48) * s->K;

	b[6] = mkbuf(nlf * 4, NULL); /* lhs_f */
	b[7] = mkbuf(nrf * 4, NULL); /* rhs_f */
	for (int i = 0; i < 8; i++)
		ok = ok && b[i];
	if (ok) {
		const float nanv = NAN;
		struct karg dl[5] = {
			{ b[0], 0 }, { b[1], 0 }, { b[6], 0 }, { NULL, s->M }, { NULL, s->K }
		};
		struct karg dr[5] = {
			{ b[2], 0 }, { b[3], 0 }, { b[7], 0 }, { NULL, s->K }, { NULL, s->N }
		};
		struct karg mm[10] = { { b[0], 0 },    { b[1], 0 },    { b[6], 0 },
				       { b[7], 0 },    { b[4], 0 },    { b[5], 0 },
				       { NULL, s->M }, { NULL, s->K }, { NULL, s->N },
				       { NULL, s->G } };
		size_t gl[3] = { t[7] || t[8] ? 1 : ((size_t)s->K + 15) / 16,
				 t[7] || t[8] ? 1
				 : t[6]       ? ((size_t)s->M + t[0] - 1) / t[0]
					      : (size_t)s->M,
				 1 };
		size_t cn = (size_t)(t[1] * t[2]);
		size_t gr[3] = { (round_up((size_t)s->N, cn) + 15) / 16, (size_t)s->K,
				 (size_t)s->G };
		size_t local[2] = { t[8] ? 1 : (size_t)t[3], (size_t)t[4] };
		size_t global[2] = { t[8] ? 1 : round_up(((size_t)s->N + cn - 1) / cn, local[0]),
				     round_up(((size_t)s->M + t[0] - 1) / t[0], local[1]) };

		/* Poison the output and the scratch so a forgotten element shows. */
		ok = clEnqueueFillBuffer(queue, b[5], &nanv, sizeof(nanv), 0, nout * 4, 0, NULL,
					 NULL) == CL_SUCCESS;
		ok = ok && clEnqueueFillBuffer(queue, b[6], &nanv, sizeof(nanv), 0, nlf * 4, 0,
					       NULL, NULL) == CL_SUCCESS;
		ok = ok && clEnqueueFillBuffer(queue, b[7], &nanv, sizeof(nanv), 0, nrf * 4, 0,
					       NULL, NULL) == CL_SUCCESS;
		ok = ok && !enqueue(p, "gmm_decode", dl, 5, 3, gl, NULL);
		ok = ok && !enqueue(p, "gmm_decode_panels", dr, 5, 3, gr, NULL);
		ok = ok && !enqueue(p, "gmm", mm, 10, 2, global, local);
		ok = ok && clEnqueueReadBuffer(queue, b[5], CL_TRUE, 0, nout * 4, out, 0, NULL,
					       NULL) == CL_SUCCESS;
	}
	for (int i = 0; i < 8; i++)
		if (b[i])
			clReleaseMemObject(b[i]);
	if (!ok) {
		free(out);
		return NULL;
	}
	return out;
}

/* Runs the template at t = TM, VN, TN, WX, WY, KU, APACK, ALOCAL, FUSE, KBF
 * (use_options: as -D options; else t holds the defaults and the build has
 * no options) on every shape against the host reference. */
static void check_template(const long t[10], int use_options)
{
	char opts[256] = "";
	cl_program p;

	if (use_options)
		snprintf(opts, sizeof(opts),
			 "-DTM=%ld -DVN=%ld -DTN=%ld -DWX=%ld -DWY=%ld -DKU=%ld -DAPACK=%ld "
			 "-DALOCAL=%ld -DFUSE=%ld -DKBF=%ld",
			 t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9]);
	p = build(tmpl_src, NULL, opts);
	CHECK(p != NULL);
	if (!p)
		return;
	for (size_t i = 0; i < NSHAPES; i++) {
		const struct shape *s = &shapes[i];
		float *out = run_template(p, &host_in[i], t);
		char what[320];

		snprintf(what, sizeof(what), "template %s", use_options ? opts : "(defaults)");
		CHECK(out != NULL);
		if (out)
			CHECK(compare(what, s, out, host_out[i]));
		free(out);
	}
	clReleaseProgram(p);
}

TEST(cl_template_defaults)
{
	long t[10] = { template_default("TM"),    template_default("VN"),
		       template_default("TN"),    template_default("WX"),
		       template_default("WY"),    template_default("KU"),
		       template_default("APACK"), template_default("ALOCAL"),
		       template_default("FUSE"),  template_default("KBF") };
	int ok = 1;

	for (int i = 0; i < 10; i++)
		ok = ok && t[i] >= (i >= 6 && i <= 8 ? 0 : 1);
	CHECK(ok);
	if (ok)
		check_template(t, 0);
}

TEST(cl_template_points)
{
	static const long pts[][10] = {
		{ 12, 16, 1, 8, 2, 2, 0, 0, 0, 512 }, /* TM .. ALOCAL, FUSE, KBF */
		{ 1, 1, 1, 16, 2, 1, 0, 0, 0, 512 },
		{ 2, 4, 2, 2, 8, 8, 0, 0, 0, 512 },
		{ 3, 2, 4, 8, 1, 2, 0, 0, 0, 512 }, /* odd rows, K tails of the unrolled loop */
		/* WX == 1: PoCL once miscompiled a group loop here */
		{ 1, 8, 1, 1, 8, 1, 0, 0, 0, 512 },
		{ 4, 8, 2, 4, 1, 4, 0, 0, 0, 512 },
		{ 4, 16, 4, 4, 1, 2, 0, 0, 0, 512 }, /* 4 x 64 blocks: one panel is all of N = 64 */
		/* lhs in panels of TM rows: row and K tails, panels past M */
		{ 8, 16, 2, 4, 1, 2, 1, 0, 0, 512 },
		{ 3, 2, 4, 8, 1, 2, 1, 0, 0, 512 },
		{ 12, 8, 1, 2, 2, 1, 1, 0, 0, 512 },
		{ 6, 16, 1, 8, 1, 1, 1, 0, 0, 512 },
		/* lhs decoded by gmm's work-groups: K blocks with tails, columns past N */
		{ 8, 16, 2, 4, 1, 2, 0, 1, 0, 512 },
		{ 3, 2, 4, 8, 1, 2, 0, 1, 0, 512 },
		{ 12, 16, 1, 8, 1, 1, 0, 1, 0, 512 },
		{ 5, 4, 1, 1, 1, 4, 0, 1, 0, 512 },
		/* each work-item decodes its rows: whole and partial K chunks (K > KBF
		 * adds to out), row and column tails, blocks across group bounds */
		{ 8, 16, 2, 2, 1, 2, 0, 0, 1, 512 },
		{ 8, 16, 2, 2, 1, 2, 0, 0, 1, 128 },
		{ 3, 2, 4, 2, 2, 1, 0, 0, 1, 128 },
		{ 12, 8, 1, 2, 2, 4, 0, 0, 1, 256 },
		{ 5, 4, 1, 2, 1, 1, 0, 0, 1, 128 },
	};

	for (size_t i = 0; i < sizeof(pts) / sizeof(pts[0]); i++)
		check_template(pts[i], 1);
}

static int setup(void)
{
	cl_platform_id plats[16];
	cl_uint np = 0;
	cl_int err;

	if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS || np == 0)
		return -1;
	for (cl_uint i = 0; i < np && !ctx; i++) {
		cl_uint nd = 0;

		if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 1, &dev, &nd) != CL_SUCCESS ||
		    nd == 0)
			continue;
		ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
		if (err != CL_SUCCESS)
			ctx = NULL;
	}
	if (!ctx)
		return -1;
	queue = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
	return err == CL_SUCCESS ? 0 : -1;
}

int main(void)
{
	RUN(host_decode_definition);
	RUN(host_ref_bounds);
	if (setup()) {
		int rc = test_summary();

		printf("no OpenCL platform or device: the OpenCL tests are skipped\n");
		return rc ? rc : 77;
	}
	ref_src = read_text("reference.cl");
	tmpl_src = read_text("template.cl");
	if (!ref_src || !tmpl_src) {
		fprintf(stderr, "cannot read reference.cl or template.cl under %s\n", GMM_DIR);
		return 1;
	}
	prepare();
	RUN(cl_decode_reference);
	RUN(cl_decode_template);
	RUN(shared_section_identical);
	RUN(cl_reference_vs_host);
	RUN(cl_template_defaults);
	RUN(cl_template_points);
	for (size_t i = 0; i < NSHAPES; i++) {
		free_inputs(&host_in[i]);
		free(host_out[i]);
	}
	free(ref_src);
	free(tmpl_src);
	clReleaseCommandQueue(queue);
	clReleaseContext(ctx);
	return test_summary();
}
