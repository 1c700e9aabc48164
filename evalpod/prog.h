/*
 * prog.h - building OpenCL programs and reading what the build produced.
 */
#ifndef EVALPOD_PROG_H
#define EVALPOD_PROG_H

#include <CL/cl.h>
#include <jansson.h>
#include <stddef.h>

#include "clrt.h"

struct prog {
	cl_program program;
	double build_ms; /* host wall time of clBuildProgram */
	char *log;       /* build log, cut at the limit given to the builder */
	int log_truncated;
	cl_int err; /* clBuildProgram's result */
};

/*
 * Builds source with options.  Returns 0; KERR_INVALID when the program
 * does not compile (the candidate's fault: p->log holds the log, msg the
 * first log line); KERR_OPENCL/KERR_NOMEM for failures of the runtime.
 * Release with prog_release in every case.
 */
int prog_build_source(struct prog *p, struct clrt *rt, const char *source, const char *options,
		      size_t log_max, char *msg, size_t n);

/* As prog_build_source, from a binary obtained with prog_binary. */
int prog_build_binary(struct prog *p, struct clrt *rt, const void *bin, size_t len,
		      const char *options, size_t log_max, char *msg, size_t n);

/* Returns the device binary (malloc'd, *bin caller frees), or KERR_OPENCL. */
int prog_binary(struct prog *p, void **bin, size_t *len, char *msg, size_t n);

/*
 * New JSON object with the kernel's work-group and memory figures:
 * {"name","work_group_size","preferred_multiple","private_mem_bytes",
 *  "local_mem_bytes","compile_work_group_size":[x,y,z]}
 */
json_t *prog_kernel_info(struct prog *p, struct clrt *rt, const char *kernel);

void prog_release(struct prog *p);

#endif
