/*
 * flush_probe.c - what a cache flush costs and what it evicts, for a flush
 * that writes its buffer, one that reads it, and one that evicts the
 * read-back buffer's own lines from the host (prints figures; not a test).
 *
 *   flush_probe [X_MIB [FLUSH_MIB [ROUNDS]]]    defaults 4, 256, 21
 *
 * Each round, for each kind of flush (write, read, lines, none): a buffer of
 * X_MIB is uploaded from the host, as a timed sample uploads its inputs;
 * the flush runs (write and read over FLUSH_MIB; lines over the X buffer
 * itself, which lives in host memory handed over with CL_MEM_USE_HOST_PTR,
 * as evalpod's buffers on a CPU device do); then a kernel reads the X
 * buffer back.  The
 * read after a flush that evicts the buffer takes memory's pace; after no
 * flush it takes the cache's.  Prints each kind's mean flush time and the
 * fastest and mean read-back (the fastest is the one least disturbed by
 * anything else on the machine).  The read and lines flushes are evalpod's
 * own (flush_source and flush_lines in evalpod/flush.c).  The lines flush's
 * time is the host's clock around flush_lines; where the processor has no
 * such instruction that kind is left out.
 * Device 0 of platform 0.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "flush.h"

#define MAX_ROUNDS 256
#define KINDS      4

static const char source[] =
	"__kernel void read_back(__global const float4 *a, __global float *out, float s)\n"
	"{\n"
	"	float4 v = a[get_global_id(0)];\n"
	"\n"
	"	if (v.x + v.y + v.z + v.w == s)\n"
	"		out[0] = v.x;\n"
	"}\n"
	"__kernel void flush_write(__global uint4 *p, uint v)\n"
	"{\n"
	"	p[get_global_id(0)] = (uint4)(v);\n"
	"}\n";

static cl_command_queue queue;

/* argv[i] as a count, def when absent, -1 when it is not a number from 1 to 1 << 20. */
static long arg(int argc, char **argv, int i, long def)
{
	char *end;
	long v;

	if (argc <= i)
		return def;
	v = strtol(argv[i], &end, 10);
	return *end || v < 1 || v > (1L << 20) ? -1 : v;
}

/* Runs k over global work-items; returns its event span in ms, or -1. */
static double run(cl_kernel k, size_t global)
{
	cl_ulong start = 0, end = 0;
	cl_event ev;

	if (clEnqueueNDRangeKernel(queue, k, 1, NULL, &global, NULL, 0, NULL, &ev) != CL_SUCCESS)
		return -1;
	clWaitForEvents(1, &ev);
	clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof(start), &start, NULL);
	clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof(end), &end, NULL);
	clReleaseEvent(ev);
	return (double)(end - start) / 1e6;
}

/* flush_lines over [p, p + n); returns the host's time for it in ms. */
static double lines(const void *p, size_t n)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	flush_lines(p, n);
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
}

int main(int argc, char **argv)
{
	static const char *const kinds[KINDS] = { "write flush", "read flush", "lines flush",
						  "no flush" };
	static double back[KINDS][MAX_ROUNDS];
	long xmib = arg(argc, argv, 1, 4), fmib = arg(argc, argv, 2, 256);
	long rounds = arg(argc, argv, 3, 21);
	size_t xb = (size_t)xmib << 20, fb = (size_t)fmib << 20;
	cl_queue_properties props[] = { CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0 };
	const char *srcs[2] = { source, flush_source };
	double flush_ms[KINDS] = { 0, 0, 0, 0 };
	cl_platform_id platform;
	cl_device_id dev;
	cl_context ctx;
	cl_program prog;
	cl_kernel rd, fw, fr;
	cl_mem x, f, out;
	cl_uint zero = 0, v = 7, odd = 1;
	float never = -1.0f, *host, *mem = NULL;
	cl_int err;
	const int can_lines = flush_can_lines();

	if (xmib < 1 || fmib < 1 || rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "usage: flush_probe [X_MIB [FLUSH_MIB [ROUNDS (1-%d)]]]\n",
			MAX_ROUNDS);
		return 2;
	}
	if (clGetPlatformIDs(1, &platform, NULL) != CL_SUCCESS ||
	    clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS) {
		fprintf(stderr, "flush_probe: no OpenCL device\n");
		return 1;
	}
	ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
	queue = clCreateCommandQueueWithProperties(ctx, dev, props, &err);
	prog = clCreateProgramWithSource(ctx, 2, srcs, NULL, &err);
	if (clBuildProgram(prog, 1, &dev, "", NULL, NULL) != CL_SUCCESS) {
		fprintf(stderr, "flush_probe: the kernels did not build\n");
		return 1;
	}
	rd = clCreateKernel(prog, "read_back", &err);
	fw = clCreateKernel(prog, "flush_write", &err);
	fr = clCreateKernel(prog, FLUSH_KERNEL, &err);
	if (!(mem = aligned_alloc(4096, xb))) {
		fprintf(stderr, "flush_probe: no memory for %zu bytes\n", xb);
		return 1;
	}
	x = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, xb, mem, &err);
	f = clCreateBuffer(ctx, CL_MEM_READ_WRITE, fb, NULL, &err);
	out = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 16, NULL, &err);
	if (!x || !f || !out || !(host = malloc(xb))) {
		fprintf(stderr, "flush_probe: no memory for %zu + %zu bytes\n", xb, fb);
		return 1;
	}
	for (size_t i = 0; i < xb / sizeof(*host); i++)
		host[i] = 1.5f;
	clEnqueueFillBuffer(queue, f, &zero, sizeof(zero), 0, fb, 0, NULL, NULL);
	clFinish(queue);
	clSetKernelArg(rd, 0, sizeof(x), &x);
	clSetKernelArg(rd, 1, sizeof(out), &out);
	clSetKernelArg(rd, 2, sizeof(never), &never);
	clSetKernelArg(fw, 0, sizeof(f), &f);
	clSetKernelArg(fw, 1, sizeof(v), &v);
	clSetKernelArg(fr, 0, sizeof(f), &f);
	clSetKernelArg(fr, 1, sizeof(out), &out);
	clSetKernelArg(fr, 2, sizeof(odd), &odd);
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < KINDS; k++) {
			double ms = 0;

			if (k == 2 && !can_lines)
				continue;

			clEnqueueWriteBuffer(queue, x, CL_TRUE, 0, xb, host, 0, NULL, NULL);
			if (k == 0)
				ms = run(fw, fb / 16);
			else if (k == 1)
				ms = run(fr, fb / FLUSH_GRAIN);
			else if (k == 2)
				ms = lines(mem, xb);
			back[k][r] = run(rd, xb / 16);
			if (ms < 0 || back[k][r] < 0) {
				fprintf(stderr, "flush_probe: a kernel did not run\n");
				return 1;
			}
			flush_ms[k] += ms / rounds;
		}
	}
	printf("%ld MiB read back after a %ld MiB flush, %ld rounds:\n", xmib, fmib, rounds);
	for (int k = 0; k < KINDS; k++) {
		double best = back[k][0], sum = 0;

		if (k == 2 && !can_lines) {
			printf("  %-11s  not on this processor (flush_can_lines)\n", kinds[k]);
			continue;
		}

		for (int r = 0; r < rounds; r++) {
			best = back[k][r] < best ? back[k][r] : best;
			sum += back[k][r];
		}
		printf("  %-11s  flush %6.2f ms   read back: fastest %.3f ms, mean %.3f ms\n",
		       kinds[k], flush_ms[k], best, sum / rounds);
	}
	free(host);
	free(mem);
	clReleaseMemObject(out);
	clReleaseMemObject(f);
	clReleaseMemObject(x);
	clReleaseKernel(fr);
	clReleaseKernel(fw);
	clReleaseKernel(rd);
	clReleaseProgram(prog);
	clReleaseCommandQueue(queue);
	clReleaseContext(ctx);
	return 0;
}
