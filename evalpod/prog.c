#include "prog.h"
#include "err.h"
#include "xalloc.h"

#include <string.h>

/*
 * PoCL names the source by its temporary file ("/tmp/.../tempfile_Ab12Cd.cl:3:26:
 * error ..."); say "program.cl" instead, which is stable and tells the reader
 * nothing about our work directory.
 */
static void tidy_log(char *log)
{
	char *t;

	while ((t = strstr(log, "/tempfile_"))) {
		char *start = t, *end = strstr(t, ".cl");
		static const char name[] = "program.cl";

		if (!end)
			break;
		end += 3;
		while (start > log && start[-1] != ' ' && start[-1] != '\n' && start[-1] != '\'')
			start--;
		memmove(start + sizeof(name) - 1, end, strlen(end) + 1);
		memcpy(start, name, sizeof(name) - 1);
		log = start + sizeof(name) - 1;
	}
}

static void prog_fetch_log(struct prog *p, struct clrt *rt, size_t log_max)
{
	size_t size = 0;
	char *log;

	if (clGetProgramBuildInfo(p->program, rt->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size) !=
		    CL_SUCCESS ||
	    size == 0)
		return;
	log = xmalloc(size + 1);
	if (clGetProgramBuildInfo(p->program, rt->device, CL_PROGRAM_BUILD_LOG, size, log, NULL) !=
	    CL_SUCCESS)
		size = 0;
	log[size] = '\0';
	tidy_log(log);
	if (strlen(log) > log_max) {
		log[log_max] = '\0';
		p->log_truncated = 1;
	}
	p->log = log;
}

/* Copies the first non-empty line of the log (the first error, usually). */
static void first_line(const char *log, char *out, size_t n)
{
	const char *s = log ? log : "";
	const char *err = strstr(s, "error:");
	size_t len;

	if (err) {
		while (err > s && err[-1] != '\n')
			err--;
		s = err;
	}
	while (*s == '\n' || *s == ' ')
		s++;
	len = strcspn(s, "\n");
	if (len >= n)
		len = n - 1;
	memcpy(out, s, len);
	out[len] = '\0';
}

static int prog_finish(struct prog *p, struct clrt *rt, const char *options, size_t log_max,
		       char *msg, size_t n)
{
	double t0 = clrt_now_ms();
	char line[512];

	p->err = clBuildProgram(p->program, 1, &rt->device, options ? options : "", NULL, NULL);
	p->build_ms = clrt_now_ms() - t0;
	prog_fetch_log(p, rt, log_max);
	if (p->err == CL_SUCCESS)
		return 0;
	if (p->err == CL_BUILD_PROGRAM_FAILURE || p->err == CL_INVALID_BUILD_OPTIONS ||
	    p->err == CL_INVALID_BINARY || p->err == CL_COMPILE_PROGRAM_FAILURE) {
		first_line(p->log, line, sizeof(line));
		return kerr_set(msg, n, KERR_INVALID, "%s: %s", clrt_errstr(p->err),
				*line ? line : "(empty build log)");
	}
	if (p->err == CL_OUT_OF_HOST_MEMORY || p->err == CL_OUT_OF_RESOURCES)
		return kerr_set(msg, n, KERR_NOMEM, "clBuildProgram: %s", clrt_errstr(p->err));
	return kerr_set(msg, n, KERR_OPENCL, "clBuildProgram: %s", clrt_errstr(p->err));
}

int prog_build_source(struct prog *p, struct clrt *rt, const char *source, const char *options,
		      size_t log_max, char *msg, size_t n)
{
	cl_int err;

	memset(p, 0, sizeof(*p));
	p->program = clCreateProgramWithSource(rt->ctx, 1, &source, NULL, &err);
	if (err != CL_SUCCESS)
		return kerr_set(msg, n, KERR_OPENCL, "clCreateProgramWithSource: %s",
				clrt_errstr(err));
	return prog_finish(p, rt, options, log_max, msg, n);
}

int prog_build_binary(struct prog *p, struct clrt *rt, const void *bin, size_t len,
		      const char *options, size_t log_max, char *msg, size_t n)
{
	const unsigned char *b = bin;
	cl_int err, status = CL_SUCCESS;

	memset(p, 0, sizeof(*p));
	p->program = clCreateProgramWithBinary(rt->ctx, 1, &rt->device, &len, &b, &status, &err);
	if (err != CL_SUCCESS)
		return kerr_set(msg, n, KERR_OPENCL, "clCreateProgramWithBinary: %s",
				clrt_errstr(err != CL_SUCCESS ? err : status));
	return prog_finish(p, rt, options, log_max, msg, n);
}

int prog_binary(struct prog *p, void **bin, size_t *len, char *msg, size_t n)
{
	size_t size = 0;
	unsigned char *b;
	cl_int err;

	*bin = NULL;
	*len = 0;
	err = clGetProgramInfo(p->program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, NULL);
	if (err != CL_SUCCESS || size == 0)
		return kerr_set(msg, n, KERR_OPENCL, "no program binary: %s", clrt_errstr(err));
	b = xmalloc(size);
	err = clGetProgramInfo(p->program, CL_PROGRAM_BINARIES, sizeof(b), &b, NULL);
	if (err != CL_SUCCESS) {
		free(b);
		return kerr_set(msg, n, KERR_OPENCL, "reading program binary: %s",
				clrt_errstr(err));
	}
	*bin = b;
	*len = size;
	return 0;
}

json_t *prog_kernel_info(struct prog *p, struct clrt *rt, const char *kernel)
{
	size_t wg = 0, mult = 0, cwg[3] = { 0, 0, 0 };
	cl_ulong priv = 0, local = 0;
	cl_int err;
	cl_kernel k = clCreateKernel(p->program, kernel, &err);

	if (err != CL_SUCCESS)
		return json_pack("{s:s, s:s}", "name", kernel, "error", clrt_errstr(err));
	clGetKernelWorkGroupInfo(k, rt->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof(wg), &wg, NULL);
	clGetKernelWorkGroupInfo(k, rt->device, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
				 sizeof(mult), &mult, NULL);
	clGetKernelWorkGroupInfo(k, rt->device, CL_KERNEL_PRIVATE_MEM_SIZE, sizeof(priv), &priv,
				 NULL);
	clGetKernelWorkGroupInfo(k, rt->device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof(local), &local,
				 NULL);
	clGetKernelWorkGroupInfo(k, rt->device, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof(cwg), cwg,
				 NULL);
	clReleaseKernel(k);
	return json_pack("{s:s, s:I, s:I, s:I, s:I, s:[I,I,I]}", "name", kernel, "work_group_size",
			 (json_int_t)wg, "preferred_multiple", (json_int_t)mult,
			 "private_mem_bytes", (json_int_t)priv, "local_mem_bytes",
			 (json_int_t)local, "compile_work_group_size", (json_int_t)cwg[0],
			 (json_int_t)cwg[1], (json_int_t)cwg[2]);
}

void prog_release(struct prog *p)
{
	if (p->program)
		clReleaseProgram(p->program);
	free(p->log);
	memset(p, 0, sizeof(*p));
}
