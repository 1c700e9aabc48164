/*
 * clblast_sgemm.c - times CLBlast's SGEMM (the vendor-neutral OpenCL BLAS,
 * Debian's libclblast-dev) at M = N = K on an OpenCL device: the second
 * yardstick of the matmul example, beside OpenBLAS, that holds on any OpenCL
 * device (bench/examples.sh).
 *
 *   cc -std=c11 -O2 -D_GNU_SOURCE bench/clblast_sgemm.c -o clblast_sgemm -lclblast -lOpenCL
 *   ./clblast_sgemm [N [RUNS]]      (N defaults to 1024, RUNS to 15, at least 10)
 *
 * The device: the first device of the first platform, as evalpod picks with
 * no selection; CLBLAST_PLATFORM and CLBLAST_DEVICE (indices) choose another.
 * C = A * B, row-major fp32, inputs uniform in [-1, 1) from the same LCG as
 * blas_sgemm.c.  Two warm-up calls (CLBlast compiles its kernels on the first),
 * then RUNS timed calls, each timed by the host clock from the call to the
 * completion of its event.  CLBlast's SGEMM may run several kernels (padding,
 * transposes, the GEMM itself) and its event is the last one's, so the host
 * time is the figure; the last kernel's event time is printed beside it.  The answer is checked
 * at 256 entries against a double-precision dot product (relative error under
 * 1e-3 of the row's magnitude), so a wrong or empty result is never timed as
 * fast.  Prints one JSON line: n, runs, gflops (2 N^3 / median_ms), median_ms
 * and min_ms (host), last_kernel_median_ms (event), the device and driver.
 * Exit status: 0, 1 an OpenCL or CLBlast error or a wrong answer, 2 usage.
 */
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>
#include <clblast_c.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *t, long n)
{
	qsort(t, (size_t)n, sizeof(*t), cmp_double);
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

static long parse_arg(const char *s, const char *what, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "clblast_sgemm: %s must be an integer in %ld..%ld, got '%s'\n",
			what, lo, hi, s);
		exit(2);
	}
	return v;
}

static long env_index(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? parse_arg(v, name, 0, 63) : 0;
}

static void fill(float *x, size_t n, uint32_t *state)
{
	for (size_t i = 0; i < n; i++) {
		*state = *state * 1664525u + 1013904223u;
		x[i] = (float)(*state >> 8) / 8388608.0f - 1.0f;
	}
}

static void die_cl(const char *what, cl_int err)
{
	fprintf(stderr, "clblast_sgemm: %s failed: OpenCL/CLBlast status %d\n", what, (int)err);
	exit(1);
}

/* The device's text property, JSON-safe (quotes and controls dropped). */
static void device_text(cl_device_id d, cl_device_info what, char *out, size_t n)
{
	size_t j = 0;
	char raw[256] = "";

	clGetDeviceInfo(d, what, sizeof(raw) - 1, raw, NULL);
	for (size_t i = 0; raw[i] && j + 1 < n; i++)
		if ((unsigned char)raw[i] >= 0x20 && raw[i] != '"' && raw[i] != '\\')
			out[j++] = raw[i];
	out[j] = '\0';
}

/* Checks 256 entries of c against a double-precision dot product. */
static int check_answer(const float *a, const float *b, const float *c, long n)
{
	uint32_t state = 777;

	for (int s = 0; s < 256; s++) {
		size_t i, j;
		double want = 0, mag = 0;

		state = state * 1664525u + 1013904223u;
		i = (size_t)(state >> 8) % (size_t)n;
		state = state * 1664525u + 1013904223u;
		j = (size_t)(state >> 8) % (size_t)n;
		for (size_t k = 0; k < (size_t)n; k++) {
			double p = (double)a[i * (size_t)n + k] * (double)b[k * (size_t)n + j];

			want += p;
			mag += fabs(p);
		}
		if (!(fabs((double)c[i * (size_t)n + j] - want) <= 1e-3 * (mag + 1e-30))) {
			fprintf(stderr,
				"clblast_sgemm: wrong answer at C[%zu][%zu]: %g, expected %g\n", i,
				j, (double)c[i * (size_t)n + j], want);
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	long n = 1024, runs = 15;
	uint32_t state = 12345;
	cl_platform_id plats[64];
	cl_device_id devs[64];
	cl_uint np = 0, nd = 0;
	cl_int err;
	char name[256], driver[256];
	float *a, *b, *c;
	double *t, *h;
	size_t nn, bytes;

	if (argc > 3) {
		fprintf(stderr, "usage: clblast_sgemm [N [RUNS]]\n");
		return 2;
	}
	if (argc > 1)
		n = parse_arg(argv[1], "N", 1, 16384);
	if (argc > 2)
		runs = parse_arg(argv[2], "RUNS", 10, 100000);
	long pi = env_index("CLBLAST_PLATFORM"), di = env_index("CLBLAST_DEVICE");
	if ((err = clGetPlatformIDs(64, plats, &np)) != CL_SUCCESS || (cl_uint)pi >= np)
		die_cl("clGetPlatformIDs (or CLBLAST_PLATFORM out of range)", err);
	if ((err = clGetDeviceIDs(plats[pi], CL_DEVICE_TYPE_ALL, 64, devs, &nd)) != CL_SUCCESS ||
	    (cl_uint)di >= nd)
		die_cl("clGetDeviceIDs (or CLBLAST_DEVICE out of range)", err);
	cl_device_id dev = devs[di];
	device_text(dev, CL_DEVICE_NAME, name, sizeof(name));
	device_text(dev, CL_DRIVER_VERSION, driver, sizeof(driver));

	cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
	if (err != CL_SUCCESS)
		die_cl("clCreateContext", err);
	cl_queue_properties props[] = { CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0 };
	cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, props, &err);
	if (err != CL_SUCCESS)
		die_cl("clCreateCommandQueue", err);

	nn = (size_t)n * (size_t)n;
	bytes = nn * sizeof(float);
	a = malloc(bytes);
	b = malloc(bytes);
	c = malloc(bytes);
	t = malloc((size_t)runs * sizeof(*t));
	h = malloc((size_t)runs * sizeof(*h));
	if (!a || !b || !c || !t || !h) {
		fprintf(stderr, "clblast_sgemm: out of memory\n");
		return 1;
	}
	fill(a, nn, &state);
	fill(b, nn, &state);
	cl_mem da = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, a, &err);
	if (err != CL_SUCCESS)
		die_cl("clCreateBuffer A", err);
	cl_mem db = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, b, &err);
	if (err != CL_SUCCESS)
		die_cl("clCreateBuffer B", err);
	cl_mem dc = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
	if (err != CL_SUCCESS)
		die_cl("clCreateBuffer C", err);

	for (long r = -2; r < runs; r++) {
		cl_event ev = NULL;
		cl_ulong t0 = 0, t1 = 0;
		double h0 = now_ms();
		CLBlastStatusCode st =
			CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo,
				     (size_t)n, (size_t)n, (size_t)n, 1.0f, da, 0, (size_t)n, db, 0,
				     (size_t)n, 0.0f, dc, 0, (size_t)n, &q, &ev);

		if (st != CLBlastSuccess)
			die_cl("CLBlastSgemm", st);
		if ((err = clWaitForEvents(1, &ev)) != CL_SUCCESS)
			die_cl("clWaitForEvents", err);
		if (r < 0) {
			clReleaseEvent(ev);
			continue;
		}
		h[r] = now_ms() - h0;
		clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof(t0), &t0, NULL);
		clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof(t1), &t1, NULL);
		t[r] = t1 > t0 ? (double)(t1 - t0) / 1e6 : h[r];
		clReleaseEvent(ev);
	}
	if ((err = clEnqueueReadBuffer(q, dc, CL_TRUE, 0, bytes, c, 0, NULL, NULL)) != CL_SUCCESS)
		die_cl("clEnqueueReadBuffer C", err);
	if (check_answer(a, b, c, n))
		return 1;

	double kmed = median(t, runs), med = median(h, runs);
	printf("{\"n\":%ld,\"runs\":%ld,\"gflops\":%.2f,\"median_ms\":%.3f,\"min_ms\":%.3f,"
	       "\"last_kernel_median_ms\":%.3f,\"device\":\"%s\",\"driver\":\"%s\",\"library\":"
	       "\"CLBlast\"}\n",
	       n, runs, 2.0 * (double)n * (double)n * (double)n / (med * 1e6), med, h[0], kmed,
	       name, driver);
	clReleaseMemObject(da);
	clReleaseMemObject(db);
	clReleaseMemObject(dc);
	clReleaseCommandQueue(q);
	clReleaseContext(ctx);
	free(a);
	free(b);
	free(c);
	free(t);
	free(h);
	return 0;
}
