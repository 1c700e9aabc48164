/*
 * pocl_build.c - what a fresh process pays to build its first OpenCL
 * program, next to the builds after it (prints figures; not a test).
 *
 *   pocl_build [N]      N programs, each a different source (default 5)
 *
 * evalpod checks every variant in a process of its own, so each variant
 * pays the first build's extra once.  Each line gives one program's
 * clBuildProgram and its first launch (where PoCL compiles the kernel for
 * the launch's local size).  Set POCL_KERNEL_CACHE=0 to keep PoCL's cache
 * out of it; with the cache on, a second run of the same N shows builds
 * that find their program in the cache.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Builds program i and launches its kernel once; prints both times. */
static int one(cl_context ctx, cl_device_id dev, cl_command_queue q, cl_mem buf, int i)
{
	char src[256];
	const char *p = src;
	size_t global = 4096, local = 64;
	cl_program prog;
	cl_kernel k;
	cl_int err;
	double t0, t1, t2;

	snprintf(src, sizeof(src),
		 "__kernel void k(__global float *a)\n"
		 "{ size_t i = get_global_id(0); a[i] = sqrt(a[i]) * %d.0f + sin(a[i]); }\n",
		 i + 1);
	t0 = now_ms();
	prog = clCreateProgramWithSource(ctx, 1, &p, NULL, &err);
	if (err == CL_SUCCESS)
		err = clBuildProgram(prog, 1, &dev, "", NULL, NULL);
	t1 = now_ms();
	k = err == CL_SUCCESS ? clCreateKernel(prog, "k", &err) : NULL;
	if (err == CL_SUCCESS)
		err = clSetKernelArg(k, 0, sizeof(buf), &buf);
	if (err == CL_SUCCESS)
		err = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL);
	if (err == CL_SUCCESS)
		err = clFinish(q);
	t2 = now_ms();
	if (k)
		clReleaseKernel(k);
	if (prog)
		clReleaseProgram(prog);
	if (err != CL_SUCCESS) {
		fprintf(stderr, "pocl_build: program %d: OpenCL error %d\n", i + 1, err);
		return 1;
	}
	printf("program %d: build %7.1f ms, first launch %7.1f ms\n", i + 1, t1 - t0, t2 - t1);
	return 0;
}

int main(int argc, char **argv)
{
	char *end = NULL;
	long n = argc > 1 ? strtol(argv[1], &end, 10) : 5;
	int rc = 0;
	cl_platform_id plat;
	cl_device_id dev;
	cl_context ctx;
	cl_command_queue q;
	cl_mem buf;
	cl_int err;
	double t0 = now_ms();

	if (n < 1 || n > 1000 || (end && *end)) {
		fprintf(stderr, "usage: pocl_build [N]: N programs, 1 to 1000, not '%s'\n",
			argv[1]);
		return 2;
	}
	if (clGetPlatformIDs(1, &plat, NULL) != CL_SUCCESS ||
	    clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS) {
		fprintf(stderr, "pocl_build: no OpenCL platform with a device\n");
		return 1;
	}
	ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
	if (err != CL_SUCCESS) {
		fprintf(stderr, "pocl_build: clCreateContext: %d\n", err);
		return 1;
	}
	q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
	if (err != CL_SUCCESS) {
		fprintf(stderr, "pocl_build: clCreateCommandQueueWithProperties: %d\n", err);
		return 1;
	}
	buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096 * sizeof(float), NULL, &err);
	if (err != CL_SUCCESS) {
		fprintf(stderr, "pocl_build: clCreateBuffer of 16 KiB: %d\n", err);
		return 1;
	}
	printf("platform, device, context and queue: %.1f ms\n", now_ms() - t0);
	for (int i = 0; i < (int)n && !rc; i++)
		rc = one(ctx, dev, q, buf, i);
	clReleaseMemObject(buf);
	clReleaseCommandQueue(q);
	clReleaseContext(ctx);
	return rc;
}
