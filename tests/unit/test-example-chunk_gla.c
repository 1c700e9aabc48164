/*
 * test-example-chunk_gla.c - the chunk_gla example against a host reference.
 *
 * Runs examples/chunk_gla/reference.cl (the recurrent form) and
 * examples/chunk_gla/template.cl (the chunked form, at its defaults and at a
 * few tunable points given as -D options) on the first OpenCL device, over
 * small shapes (T = 1 and T not a multiple of any chunk size included), and
 * compares o, dq, dk and dv element by element with gla_host_ref (double).
 * The launch plans below mirror examples/chunk_gla.yaml.  Exits 77 (skip)
 * without an OpenCL platform or device.
 *
 *   gcc -std=c11 -D_GNU_SOURCE -DCL_TARGET_OPENCL_VERSION=300 -Wall -Wextra \
 *       -include common/banned.h -Itests/unit -Iexamples/chunk_gla \
 *       tests/unit/test-example-chunk_gla.c examples/chunk_gla/host_ref.c \
 *       -o /tmp/tgla -lOpenCL -lm
 *
 * The .cl files are found next to this source (from __FILE__), or in the
 * folder named by GLA_EXAMPLE_DIR in the environment.
 */
#include "test.h"
#include "host_ref.h"

#include <CL/cl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* The spec's tolerance (examples/chunk_gla.yaml): |out - ref| <= ATOL + RTOL |ref|. */
#define ATOL 2e-4
#define RTOL 2e-4

struct shape {
	int B, T, H, K, V;
};

static const struct shape shapes[] = {
	{ 1, 1, 1, 16, 16 },   { 1, 77, 1, 16, 32 }, { 2, 100, 3, 32, 16 },
	{ 1, 130, 2, 64, 48 }, { 1, 64, 2, 32, 32 },
};

/* Tunable points of the template: "" is its own defaults. */
static const char *const points[] = {
	"",
	"-DCHUNK=16 -DSVW=8 -DSKT=2 -DVW=8 -DTR=4 -DWG=32 -DUNR=2",
	"-DCHUNK=16 -DSVW=8 -DSKT=2 -DVW=8 -DTR=4 -DWG=32 -DSPAR=1",
	"-DCHUNK=64 -DSVW=16 -DSKT=1 -DVW=16 -DTR=1 -DWG=128 -DUNR=4",
	"-DCHUNK=64 -DSVW=16 -DSKT=16 -DSPAR=1",
	"-DCHUNK=32 -DSVW=4 -DSKT=8 -DVW=4 -DTR=8 -DWG=16",
	"-DCHUNK=32 -DSVW=8 -DSKT=4 -DVW=8 -DTR=4 -DWG=8 -DUNR=2",
	"-DCHUNK=32 -DSVW=16 -DSKT=16 -DVW=16 -DTR=16 -DWG=1",
	"-DNTS=0",              /* the outputs stored through the caches */
	"-DSPF=0",              /* gla_state without explicit prefetches */
	"-DSPF=200 -DCHUNK=32", /* prefetches clamped at both ends of the sequence */
	"-DGLA_LDS=1",          /* gla_chunk staging in local memory */
	"-DGLA_LDS=1 -DCHUNK=32 -DWG=8 -DTR=8",
	/* gla_state with one work-item per state: whole tiles of 4 rows; tiles
	 * of 6 rows, which leave 2 or 4 rows of K = 16, 32 and 64 to the tiles
	 * of 2; and one work-item per chunk and state */
	"-DSST=1 -DSKT=4 -DSVW=16 -DGLA_LDS=1 -DTR=4 -DWG=1",
	"-DSST=1 -DSKT=6 -DSVW=8 -DCHUNK=32 -DSPF=200",
	"-DSST=1 -DSKT=16 -DSPAR=1 -DCHUNK=16 -DSVW=8 -DTR=4",
	/* gla_chunk staging without explicit prefetches */
	"-DCPF=0 -DGLA_LDS=1",
	/* gla_chunk's work-groups through 2 and 4 chunks (a last group short of
	 * chunks at T = 77, 100, 130), staged in local and in global memory */
	"-DCPW=2 -DGLA_LDS=1 -DCHUNK=32 -DWG=4",
	"-DCPW=4 -DSST=1 -DSKT=4 -DCHUNK=16 -DTR=4 -DVW=8",
};

static cl_context ctx;
static cl_command_queue queue;
static cl_device_id dev;
static char *ref_src, *tmpl_src;
static double worst_err; /* largest |out - ref| / (ATOL + RTOL |ref|) seen */

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fclose(f);
		return NULL;
	}
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf)
		buf[n] = 0;
	return buf;
}

/* Reads examples/chunk_gla/NAME, next to this source or in $GLA_EXAMPLE_DIR. */
static char *read_example(const char *name)
{
	const char *env = getenv("GLA_EXAMPLE_DIR"), *slash = strrchr(__FILE__, '/');
	char path[4096];

	if (env && *env)
		snprintf(path, sizeof(path), "%s/%s", env, name);
	else if (slash)
		snprintf(path, sizeof(path), "%.*s/../../examples/chunk_gla/%s",
			 (int)(slash - __FILE__), __FILE__, name);
	else
		snprintf(path, sizeof(path), "../../examples/chunk_gla/%s", name);
	return read_text(path);
}

/* Deterministic uniform floats in [lo, hi] (splitmix64). */
static uint64_t rng_state;

static float uniform(float lo, float hi)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return lo + (hi - lo) * (float)((double)(z >> 11) / 9007199254740992.0);
}

static cl_program build(const char *src, const char *options)
{
	cl_int err;
	cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);

	if (err != CL_SUCCESS)
		return NULL;
	if (clBuildProgram(p, 1, &dev, options, NULL, NULL) != CL_SUCCESS) {
		char log[8192] = "";

		clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, sizeof(log) - 1, log, NULL);
		fprintf(stderr, "build failed (%s):\n%s\n", options, log);
		clReleaseProgram(p);
		return NULL;
	}
	return p;
}

/* The problem's buffers, in the order of the spec. */
enum { BQ, BK, BV, BG, BDO, BO, BDQ, BDK, BDV, BHS, BDHS, BSTAGE, NBUF };

struct run {
	struct shape s;
	size_t count[NBUF];
	float *host[NBUF]; /* inputs, then the outputs read back */
	cl_mem mem[NBUF];
};

static int run_setup(struct run *r, const struct shape *s, uint64_t seed)
{
	size_t nk = (size_t)s->B * s->T * s->H * s->K, nv = (size_t)s->B * s->T * s->H * s->V;
	size_t nstate = (size_t)s->B * s->H * ((s->T + 15) / 16) * s->K * s->V;
	cl_int err;

	memset(r, 0, sizeof(*r));
	r->s = *s;
	r->count[BQ] = r->count[BK] = r->count[BDQ] = r->count[BDK] = nk;
	r->count[BV] = r->count[BDO] = r->count[BO] = r->count[BDV] = nv;
	r->count[BG] = (size_t)s->H;
	r->count[BHS] = r->count[BDHS] = nstate;
	/* gla_chunk's staging with GLA_LDS=0, for any CHUNK from 16 to 64, as the spec sizes it */
	r->count[BSTAGE] = (size_t)s->B * s->H * ((s->T + 15) / 16) *
			   (192 * (size_t)(s->K + s->V) + 2 * (size_t)s->K * s->V);
	rng_state = seed;
	for (int i = 0; i < NBUF; i++) {
		r->host[i] = calloc(r->count[i], sizeof(float));
		if (!r->host[i])
			return -1;
		for (size_t e = 0; e < r->count[i]; e++) {
			if (i == BG)
				r->host[i][e] = uniform(-0.2f, -0.02f);
			else if (i <= BDO)
				r->host[i][e] = uniform(-1.0f, 1.0f);
			else
				r->host[i][e] = NAN; /* poison: a forgotten element shows */
		}
		r->mem[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
					   r->count[i] * sizeof(float), r->host[i], &err);
		if (err != CL_SUCCESS)
			return -1;
	}
	return 0;
}

static void run_free(struct run *r)
{
	for (int i = 0; i < NBUF; i++) {
		free(r->host[i]);
		if (r->mem[i])
			clReleaseMemObject(r->mem[i]);
	}
}

struct step {
	const char *kernel;
	const int *args; /* buffer indices; -1 ends, -2.. are B, T, H, K, V; -7 local memory */
	int dims;
	size_t global[3], local[3]; /* local[0] == 0: the driver's choice */
	size_t lmem;                /* bytes of the local-memory argument */
};

#define A_B    (-2)
#define A_T    (-3)
#define A_H    (-4)
#define A_K    (-5)
#define A_V    (-6)
#define A_LMEM (-7)
#define A_END  (-1)

static int launch(cl_program p, const struct run *r, const struct step *st)
{
	cl_int err;
	cl_kernel kn = clCreateKernel(p, st->kernel, &err);
	int rc = -1;

	if (err != CL_SUCCESS)
		return -1;
	for (cl_uint a = 0; st->args[a] != A_END; a++) {
		int x = st->args[a];
		cl_int iv = x == A_B ? r->s.B : x == A_T ? r->s.T : x == A_H ? r->s.H : 0;

		if (x == A_K || x == A_V)
			iv = x == A_K ? r->s.K : r->s.V;

		if (x >= 0)
			err = clSetKernelArg(kn, a, sizeof(cl_mem), &r->mem[x]);
		else if (x == A_LMEM)
			err = clSetKernelArg(kn, a, st->lmem, NULL);
		else
			err = clSetKernelArg(kn, a, sizeof(cl_int), &iv);
		if (err != CL_SUCCESS) {
			fprintf(stderr, "%s: argument %u: error %d\n", st->kernel, a, err);
			goto out;
		}
	}
	err = clEnqueueNDRangeKernel(queue, kn, (cl_uint)st->dims, NULL, st->global,
				     st->local[0] ? st->local : NULL, 0, NULL, NULL);
	if (err != CL_SUCCESS) {
		fprintf(stderr, "%s: enqueue: error %d\n", st->kernel, err);
		goto out;
	}
	rc = clFinish(queue) == CL_SUCCESS ? 0 : -1;
out:
	clReleaseKernel(kn);
	return rc;
}

static int read_back(struct run *r)
{
	for (int i = BO; i <= BDV; i++)
		if (clEnqueueReadBuffer(queue, r->mem[i], CL_TRUE, 0, r->count[i] * sizeof(float),
					r->host[i], 0, NULL, NULL) != CL_SUCCESS)
			return -1;
	return 0;
}

/* Compares the outputs with the host reference; prints the first bad element. */
static int compare(const struct run *r, const char *what)
{
	static const char *const names[] = { "o", "dq", "dk", "dv" };
	const struct shape *s = &r->s;
	float *want[4];
	int bad = 0;

	for (int i = 0; i < 4; i++)
		want[i] = malloc(r->count[BO + i] * sizeof(float));
	if (!want[0] || !want[1] || !want[2] || !want[3] ||
	    gla_host_ref(s->B, s->T, s->H, s->K, s->V, r->host[BQ], r->host[BK], r->host[BV],
			 r->host[BG], r->host[BDO], want[0], want[1], want[2], want[3])) {
		bad = 1;
		goto out;
	}
	for (int i = 0; i < 4 && !bad; i++) {
		for (size_t e = 0; e < r->count[BO + i]; e++) {
			double got = r->host[BO + i][e], ref = want[i][e];
			double lim = ATOL + RTOL * fabs(ref), diff = fabs(got - ref);

			if (!(diff <= lim)) {
				fprintf(stderr,
					"%s, shape %dx%dx%dx%dx%d: %s[%zu] = %.7g, want %.7g\n",
					what, s->B, s->T, s->H, s->K, s->V, names[i], e, got, ref);
				bad = 1;
				break;
			}
			if (diff / lim > worst_err)
				worst_err = diff / lim;
		}
	}
out:
	for (int i = 0; i < 4; i++)
		free(want[i]);
	return bad ? -1 : 0;
}

static const int ref_cols_args[] = { BQ, BK, BV, BG, BDO, BO, BDV, A_B, A_T, A_H, A_K, A_V, A_END };
static const int ref_rows_args[] = {
	BQ, BK, BV, BG, BDO, BDQ, BDK, A_B, A_T, A_H, A_K, A_V, A_END
};
static const int state_args[] = { BQ,  BK,  BV,  BG,  BDO, BHS,    BDHS,
				  A_B, A_T, A_H, A_K, A_V, A_LMEM, A_END };
static const int scan_args[] = { BG, BHS, BDHS, A_B, A_T, A_H, A_K, A_V, A_END };
static const int chunk_args[] = { BQ,  BK,  BV,  BG,  BDO, BHS, BDHS,   BO,     BDQ,  BDK,
				  BDV, A_B, A_T, A_H, A_K, A_V, BSTAGE, A_LMEM, A_END };

/* Runs the reference plan on every shape, one seed each. */
static int check_reference(void)
{
	cl_program p = build(ref_src, "");
	int fails = 0;

	if (!p)
		return 1;
	for (size_t i = 0; i < ARRAY_SIZE(shapes); i++) {
		const struct shape *s = &shapes[i];
		struct step cols = { .kernel = "gla_ref_cols", .args = ref_cols_args, .dims = 2 };
		struct step rows = { .kernel = "gla_ref_rows", .args = ref_rows_args, .dims = 2 };
		struct run r;

		cols.global[0] = (size_t)s->V;
		rows.global[0] = (size_t)s->K;
		cols.global[1] = rows.global[1] = (size_t)s->B * s->H;
		if (run_setup(&r, s, 1 + i) || launch(p, &r, &cols) || launch(p, &r, &rows) ||
		    read_back(&r) || compare(&r, "reference"))
			fails++;
		run_free(&r);
	}
	clReleaseProgram(p);
	return fails;
}

/* The value of -DNAME=x in options, or the template's default. */
static int option(const char *options, const char *name, int dflt)
{
	char key[32];
	const char *at;

	snprintf(key, sizeof(key), "-D%s=", name);
	at = strstr(options, key);
	return at ? (int)strtol(at + strlen(key), NULL, 10) : dflt;
}

/* The #ifndef default of name in the template, or -1. */
static int template_default(const char *name)
{
	char pat[64];
	const char *at;

	snprintf(pat, sizeof(pat), "#ifndef %s\n#define %s ", name, name);
	at = tmpl_src ? strstr(tmpl_src, pat) : NULL;
	return at ? (int)strtol(at + strlen(pat), NULL, 10) : -1;
}

/* Runs the template's plan at one tunable point on every shape, two seeds each. */
static int check_template(const char *options)
{
	int chunk = option(options, "CHUNK", template_default("CHUNK"));
	int svw = option(options, "SVW", template_default("SVW"));
	int skt = option(options, "SKT", template_default("SKT"));
	int wg = option(options, "WG", template_default("WG"));
	int spar = option(options, "SPAR", template_default("SPAR"));
	int lds = option(options, "GLA_LDS", template_default("GLA_LDS"));
	int sst = option(options, "SST", template_default("SST"));
	int cpw = option(options, "CPW", template_default("CPW"));
	cl_program p = build(tmpl_src, options);
	char what[160];
	int fails = 0;

	if (!p)
		return 1;
	snprintf(what, sizeof(what), "template [%s]", *options ? options : "defaults");
	for (size_t i = 0; i < ARRAY_SIZE(shapes); i++) {
		const struct shape *s = &shapes[i];
		size_t nt = (size_t)(s->T + chunk - 1) / chunk, bh = (size_t)s->B * s->H;
		struct step state = { .kernel = "gla_state", .args = state_args, .dims = 3 };
		struct step scan = { .kernel = "gla_scan", .args = scan_args, .dims = 2 };
		struct step ch = { .kernel = "gla_chunk", .args = chunk_args, .dims = 3 };

		state.global[0] = sst ? 1 : (size_t)(s->V / svw);
		state.global[1] = (sst ? 1 : (size_t)(s->K / skt)) * (spar ? nt : 1);
		state.global[2] = 2 * bh;
		state.local[0] = state.global[0];
		state.local[1] = sst ? 1 : (size_t)(s->K / skt);
		state.local[2] = 1;
		state.lmem = sst ? 4 * (size_t)chunk * (s->K + s->V) : 4;
		scan.global[0] = spar ? (size_t)s->K * s->V / 16 : 1;
		scan.global[1] = spar ? 2 * bh : 1;
		ch.global[0] = ch.local[0] = (size_t)wg;
		ch.global[1] = (nt + (size_t)cpw - 1) / (size_t)cpw;
		ch.global[2] = bh;
		ch.local[1] = ch.local[2] = 1;
		ch.lmem =
			lds ? 4 * (3 * (size_t)chunk * (s->K + s->V) + 2 * (size_t)s->K * s->V) : 4;

		for (uint64_t seed = 1; seed <= 2; seed++) {
			struct run r;

			if (run_setup(&r, s, 100 * seed + i) || launch(p, &r, &state) ||
			    launch(p, &r, &scan) || launch(p, &r, &ch) || read_back(&r) ||
			    compare(&r, what))
				fails++;
			run_free(&r);
		}
	}
	clReleaseProgram(p);
	return fails;
}

/* The host reference itself: a tiny case worked by hand. */
TEST(host_ref_by_hand)
{
	/* B=T... = 1, 2, 1, 1, 1: scalars q, k, v, dout per position, g = ln(1/2). */
	float q[2] = { 1, 2 }, k[2] = { 3, 4 }, v[2] = { 5, 6 }, d[2] = { 7, 8 };
	float g[1] = { (float)log(0.5) };
	float o[2], dq[2], dk[2], dv[2];

	CHECK(gla_host_ref(1, 2, 1, 1, 1, q, k, v, g, d, o, dq, dk, dv) == 0);
	/* scale 1: o0 = 1*3*5, o1 = 2*(0.5*3*5 + 4*6) */
	CHECK(fabsf(o[0] - 15.0f) < 1e-5f && fabsf(o[1] - 63.0f) < 1e-5f);
	/* dq0 = 7*5*3, dq1 = 8*(0.5*5*3 + 6*4) */
	CHECK(fabsf(dq[0] - 105.0f) < 1e-5f && fabsf(dq[1] - 252.0f) < 1e-5f);
	/* dk0 = 7*5*1 + 0.5*8*5*2, dk1 = 8*6*2 */
	CHECK(fabsf(dk[0] - 75.0f) < 1e-5f && fabsf(dk[1] - 96.0f) < 1e-5f);
	/* dv0 = 1*3*7 + 0.5*2*3*8, dv1 = 2*4*8 */
	CHECK(fabsf(dv[0] - 45.0f) < 1e-5f && fabsf(dv[1] - 64.0f) < 1e-5f);
}

TEST(reference_matches_host)
{
	CHECK(check_reference() == 0);
}

TEST(template_defaults_match_host)
{
	CHECK(check_template(points[0]) == 0);
}

TEST(template_points_match_host)
{
	for (size_t i = 1; i < ARRAY_SIZE(points); i++)
		CHECK(check_template(points[i]) == 0);
}

int main(void)
{
	cl_platform_id plat;
	cl_uint nplat = 0;
	cl_int err;

	RUN(host_ref_by_hand);
	if (clGetPlatformIDs(1, &plat, &nplat) != CL_SUCCESS || !nplat ||
	    clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS) {
		printf("no OpenCL platform or device: skipped\n");
		return 77;
	}
	ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
	if (err != CL_SUCCESS)
		return 77;
	queue = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
	ref_src = read_example("reference.cl");
	tmpl_src = read_example("template.cl");
	if (err != CL_SUCCESS || !ref_src || !tmpl_src) {
		fprintf(stderr, "cannot set up: queue error %d, sources %s\n", err,
			ref_src && tmpl_src ? "read" : "not found");
		return 1;
	}
	RUN(reference_matches_host);
	RUN(template_defaults_match_host);
	RUN(template_points_match_host);
	printf("worst error: %.3g of the tolerance (atol %g, rtol %g)\n", worst_err, ATOL, RTOL);
	free(ref_src);
	free(tmpl_src);
	clReleaseCommandQueue(queue);
	clReleaseContext(ctx);
	return test_summary();
}
