/*
 * flush.c - the cache-flush program and its binary (see flush.h).
 */
#include "flush.h"
#include "err.h"
#include "fileio.h"
#include "log.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#define FLUSH_BINARY_MAX (64u << 20) /* a flush binary larger than this is not read */
#define FLUSH_LOG_MAX    4096        /* bytes of a build log kept */

/*
 * Each work-item reads FLUSH_READS uint4, global size apart (so a step of
 * the work-items reads one contiguous stretch), and writes only if their
 * XOR is v, which the caller makes sure it is not.
 */
_Static_assert(FLUSH_READS == 16, "flush_source reads 16 uint4 a work-item");
const char flush_source[] =
	"__kernel void " FLUSH_KERNEL "(__global const uint4 *p, __global uint *out, uint v)\n"
	"{\n"
	"	size_t i = get_global_id(0), g = get_global_size(0);\n"
	"	uint4 x = p[i];\n"
	"\n"
	"	for (int k = 1; k < 16; k++)\n"
	"		x ^= p[i + k * g];\n"
	"	if ((x.x ^ x.y ^ x.z ^ x.w) == v)\n"
	"		out[0] = v;\n"
	"}\n";

/* The kernel of a built program, or NULL (msg set); the kernel keeps the program alive. */
static cl_kernel kernel_of(struct prog *pg, char *msg, size_t n)
{
	cl_int err;
	cl_kernel k = clCreateKernel(pg->program, FLUSH_KERNEL, &err);

	if (!k)
		kerr_set(msg, n, KERR_OPENCL, "no kernel '%s' in the cache flush program: %s",
			 FLUSH_KERNEL, clrt_errstr(err));
	prog_release(pg);
	return k;
}

int flush_kernel(cl_kernel *k, struct clrt *rt, const char *bin_path, int *from_binary, char *msg,
		 size_t n)
{
	struct prog pg;
	char *bin = NULL, why[512];
	size_t len = 0;
	int rc;

	*k = NULL;
	*from_binary = 0;
	memset(&pg, 0, sizeof(pg));
	if (bin_path &&
	    !file_read_untrusted(bin_path, FLUSH_BINARY_MAX, &bin, &len, why, sizeof(why))) {
		rc = prog_build_binary(&pg, rt, bin, len, "", FLUSH_LOG_MAX, why, sizeof(why));
		free(bin);
		if (!rc && (*k = kernel_of(&pg, why, sizeof(why)))) {
			*from_binary = 1;
			return 0;
		}
		prog_release(&pg);
		/* A binary for another driver, say: the source still builds. */
		log_warn("cache flush: its binary was not taken (%s); building the source", why);
	}
	if ((rc = prog_build_source(&pg, rt, flush_source, "", FLUSH_LOG_MAX, msg, n))) {
		prog_release(&pg);
		return rc;
	}
	*k = kernel_of(&pg, msg, n);
	return *k ? 0 : KERR_OPENCL;
}

void flush_save_binary(struct clrt *rt, const char *path)
{
	struct prog pg;
	void *bin = NULL;
	size_t len = 0;
	char msg[512];
	int rc;

	memset(&pg, 0, sizeof(pg));
	rc = prog_build_source(&pg, rt, flush_source, "", FLUSH_LOG_MAX, msg, sizeof(msg));
	if (!rc)
		rc = prog_binary(&pg, &bin, &len, msg, sizeof(msg));
	if (!rc)
		rc = file_write_atomic(path, bin, len, msg, sizeof(msg));
	if (rc)
		log_warn("cache flush binary not kept, the timing worker builds its source: %s",
			 msg);
	free(bin);
	prog_release(&pg);
}

int flush_uses_lines(const struct measure_spec *m, const char *device_type)
{
	return m->flush && m->flush_kind == FLUSH_AUTO && m->flush_bytes <= 0 &&
	       !strcmp(device_type, "cpu") && flush_can_lines();
}

#if defined(__x86_64__)
/*
 * What CPUID says, read at the first call (the timing worker flushes from
 * one thread): the line CLFLUSH works on (leaf 1, EBX[15:8], in 8-byte
 * units; 64 where that is not a power of two from 32 to 256) and whether
 * there is CLFLUSHOPT (leaf 7, EBX bit 23).
 */
static uintptr_t line_step(int *opt)
{
	static uintptr_t step;
	static int have_opt;
	unsigned a, b = 0, c, d;
	uintptr_t s;

	if (!step) {
		have_opt = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 23));
		s = __get_cpuid(1, &a, &b, &c, &d) ? ((b >> 8) & 0xff) * 8 : 0;
		step = s >= 32 && s <= 256 && !(s & (s - 1)) ? s : 64;
	}
	*opt = have_opt;
	return step;
}

__attribute__((target("clflushopt"))) static void lines_opt(uintptr_t lo, uintptr_t hi,
							    uintptr_t step)
{
	for (uintptr_t a = lo; a < hi; a += step)
		__builtin_ia32_clflushopt((void *)a);
	__builtin_ia32_mfence();
}

static void lines_plain(uintptr_t lo, uintptr_t hi, uintptr_t step)
{
	for (uintptr_t a = lo; a < hi; a += step)
		__builtin_ia32_clflush((void *)a);
	__builtin_ia32_mfence();
}

int flush_can_lines(void)
{
	return 1;
}

int flush_lines(const void *p, size_t n)
{
	int opt;
	uintptr_t step = line_step(&opt), lo = (uintptr_t)p & ~(step - 1), hi = (uintptr_t)p + n;

	if (opt)
		lines_opt(lo, hi, step);
	else
		lines_plain(lo, hi, step);
	return 0;
}
#elif defined(__aarch64__)
/* The smallest data cache line (CTR_EL0.DminLine, words as log2), which Linux lets EL0 read. */
static uintptr_t line_step(void)
{
	uint64_t ctr;

	__asm__ volatile("mrs %0, ctr_el0" : "=r"(ctr));
	return (uintptr_t)4 << ((ctr >> 16) & 0xf);
}

int flush_can_lines(void)
{
	return 1;
}

int flush_lines(const void *p, size_t n)
{
	uintptr_t step = line_step(), lo = (uintptr_t)p & ~(step - 1), hi = (uintptr_t)p + n;

	for (uintptr_t a = lo; a < hi; a += step)
		__asm__ volatile("dc civac, %0" : : "r"(a) : "memory");
	__asm__ volatile("dsb ish" : : : "memory");
	return 0;
}
#else
int flush_can_lines(void)
{
	return 0;
}

int flush_lines(const void *p, size_t n)
{
	(void)p;
	(void)n;
	return -1;
}
#endif
