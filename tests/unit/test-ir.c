/*
 * test-ir.c - unit tests for evalpod/ir.c (with its scanners) and evalpod/irpocl.c.
 *
 *   test-ir [--golden | --live] [DATADIR]
 *
 * --golden: the scanners on hand-written samples in tests/data/ir (each
 *   NAME has NAME.expected.json) and on small inline cases, plus
 *   irpocl_collect on cache trees built here.
 * --live: builds and launches a kernel on PoCL into a fresh cache and
 *   checks that irpocl_collect finds its code; exits 77 (skip) when no
 *   PoCL platform is present.
 * With neither, both run; the exit status is 77 only if the live case
 * skipped and nothing failed.  DATADIR defaults to ../data/ir next to
 * this file.  PoCL leaks at exit under LeakSanitizer: run the live case
 * with ASAN_OPTIONS=detect_leaks=0.
 */
#include "err.h"
#include "fileio.h"
#include "ir.h"
#include "irpocl.h"
#include "sbuf.h"
#include "xalloc.h"

#include "test.h"
#include "arraysize.h"

#include <CL/cl.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TEST_SKIP 77

static const char *data_dir;

/*
 * Runs ir_analyze_text on a copy of text in a buffer of exactly len bytes
 * with no NUL after it, so that AddressSanitizer catches any read past len.
 */
static json_t *analyze(const char *kind, const char *text, size_t len)
{
	char *copy = xmalloc(len);
	json_t *out = NULL;
	char msg[256] = "";
	int rc;

	memcpy(copy, text, len);
	rc = ir_analyze_text(kind, copy, len, &out, msg, sizeof(msg));
	if (rc)
		fprintf(stderr, "ir_analyze_text(%s): %s\n", kind, msg);
	CHECK(rc == 0);
	CHECK(out != NULL);
	free(copy);
	return out;
}

static long long field(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

/* Whether the string array o.key has an element containing needle. */
static int names_contain(json_t *o, const char *key, const char *needle)
{
	json_t *arr = json_object_get(o, key), *v;
	size_t i;

	json_array_foreach (arr, i, v) {
		if (json_is_string(v) && strstr(json_string_value(v), needle))
			return 1;
	}
	return 0;
}

/* ---- golden files ------------------------------------------------------ */

static void check_golden(const char *kind, const char *name)
{
	char *path = xasprintf("%s/%s", data_dir, name);
	char *epath = xasprintf("%s/%s.expected.json", data_dir, name);
	char *text = NULL, msg[256] = "";
	size_t len = 0;
	json_t *got = NULL, *want = NULL;
	json_error_t jerr;

	if (file_read(path, 1 << 20, &text, &len, msg, sizeof(msg))) {
		fprintf(stderr, "%s\n", msg);
		CHECK(!"golden input readable");
		goto out;
	}
	want = json_load_file(epath, 0, &jerr);
	if (!want) {
		fprintf(stderr, "%s:%d: %s\n", epath, jerr.line, jerr.text);
		CHECK(!"expected JSON readable");
		goto out;
	}
	got = analyze(kind, text, len);
	if (got && !json_equal(got, want)) {
		char *g = json_dumps(got, JSON_SORT_KEYS | JSON_INDENT(2));
		char *w = json_dumps(want, JSON_SORT_KEYS | JSON_INDENT(2));

		fprintf(stderr, "%s: got\n%s\nwant\n%s\n", name, g, w);
		free(g);
		free(w);
		CHECK(!"analysis equals the expected JSON");
	}
out:
	json_decref(got);
	json_decref(want);
	free(text);
	free(path);
	free(epath);
}

TEST(golden_llvm_ir)
{
	check_golden("llvm-ir", "vecfma.ll");
}

TEST(golden_ptx)
{
	check_golden("ptx", "tile.ptx");
}

TEST(golden_x86_asm)
{
	check_golden("x86-asm", "avx512.objdump");
}

/* ---- inline cases -------------------------------------------------------- */

static const struct {
	const char *kind;
	const char *text;
	size_t len; /* 0: strlen(text) */
	const char *field;
	long long want;
} cases[] = {
	/* outside a function body nothing counts */
	{ "llvm-ir", "%x = fadd float 1.0, 2.0\n", 0, "instructions", 0 },
	/* indirect call: a call, not an intrinsic */
	{ "llvm-ir", "define void @f(ptr %fp) {\n  %r = call <4 x float> %fp(<4 x float> %a)\n}\n",
	  0, "calls", 1 },
	{ "llvm-ir", "define void @f(ptr %fp) {\n  %r = call <4 x float> %fp(<4 x float> %a)\n}\n",
	  0, "max_vector_width", 4 },
	/* a named struct return type is not the callee */
	{ "llvm-ir", "define void @f() {\n  %r = call %struct.s @llvm.fma.f32(float 1.0)\n}\n", 0,
	  "fma", 1 },
	/* alloca sizes: element count, nesting, run-time count, typed pointers */
	{ "llvm-ir", "define void @f() {\n  %a = alloca float, i32 8, align 4\n}\n", 0,
	  "private_bytes", 32 },
	{ "llvm-ir", "define void @f() {\n  %a = alloca [2 x [3 x double]], align 8\n}\n", 0,
	  "private_bytes", 48 },
	{ "llvm-ir", "define void @f(i32 %n) {\n  %a = alloca float, i32 %n, align 4\n}\n", 0,
	  "allocas_unsized", 1 },
	{ "llvm-ir", "define void @f() {\n  %a = alloca [4 x float addrspace(1)*], align 8\n}\n", 0,
	  "private_bytes", 32 },
	{ "llvm-ir", "define void @f() {\n  %a = alloca i1, align 1\n}\n", 0, "private_bytes", 1 },
	/* the text ends inside the type: len is honoured, the alloca unsized */
	{ "llvm-ir", "define void @f() {\n  %a = alloca [64 x float], align 4\n", 40,
	  "allocas_unsized", 1 },
	/* CRLF line ends, no final newline */
	{ "llvm-ir", "define void @f() {\r\n  ret void\r\n}", 0, "instructions", 1 },
	{ "llvm-ir", "define void @f() {\n  call void @pocl.barrier()\n}\n", 0, "barriers", 1 },
	{ "llvm-ir", "define void @f() {\n  %x = cmpxchg ptr %p, i32 0, i32 1 seq_cst seq_cst\n}\n",
	  0, "atomics", 1 },
	{ "llvm-ir",
	  "define void @f() {\n  call void @llvm.masked.scatter.v4f32.v4p0(<4 x float> %v, <4 x "
	  "ptr> "
	  "%p, i32 4, <4 x i1> %m)\n}\n",
	  0, "scatters", 1 },
	{ "llvm-ir", "", 0, "instructions", 0 },
	/* integer mad is address arithmetic, not an fma */
	{ "ptx",
	  ".entry k()\n{\n\tmad.lo.s32 %r1, %r2, %r3, %r4;\n\tmad.f32 %f1, %f2, %f3, %f4;\n}\n", 0,
	  "fma", 1 },
	{ "ptx", ".entry k()\n{\n\tld.global.nc.v4.f32 {%f1,%f2,%f3,%f4}, [%rd1];\n}\n", 0,
	  "loads_global", 1 },
	{ "ptx", ".entry k()\n{\n\tadd.rn.f16x2 %r1, %r2, %r3;\n}\n", 0, "max_vector_width", 2 },
	{ "ptx", ".entry k()\n{\n\t.reg .b32 %a, %b, %c;\n}\n", 0, "registers", 3 },
	{ "ptx", ".entry k()\n{\n\t.local .align 8 .v4 .f32 v[2][3];\n}\n", 0, "local_bytes", 96 },
	{ "ptx", ".extern .shared .align 4 .b8 dyn[];\n", 0, "shared_bytes", 0 },
	{ "ptx", "\tmov.u32 %r1, %r2;\n", 0, "instructions", 0 },
	{ "ptx", ".entry k()\n{\n\tbar.sync 0; // a comment ; here\n\tret;\n}\n", 0, "instructions",
	  2 },
	/* raw bytes shown, with a continuation line of bytes */
	{ "x86-asm",
	  "    1000:\t62 f2 75 48 b8 06 \tvfmadd231ps (%rsi),%zmm1,%zmm0\n    1006:\t00 00\n", 0,
	  "instructions", 1 },
	{ "x86-asm", "    1000:\t62 f2 75 48 b8 06 \tvfmadd231ps (%rsi),%zmm1,%zmm0\n", 0, "fma",
	  1 },
	{ "x86-asm", "    1000:\t(bad)\n    1001:\tint3\n", 0, "instructions", 0 },
	{ "x86-asm", "    1000:\tvbroadcastss %xmm0,%xmm1\n", 0, "vector_ops", 1 },
	{ "x86-asm", "    1000:\tvcvtsi2sd %eax,%xmm0,%xmm0\n", 0, "scalar_sse", 1 },
	{ "x86-asm", "    1000:\tvpscatterdd %zmm1,(%rax,%zmm2,4){%k1}\n", 0, "stores", 1 },
	{ "x86-asm", "    1000:\tvpscatterdd %zmm1,(%rax,%zmm2,4){%k1}\n", 0, "scatters", 1 },
	{ "x86-asm", "    1000:\tincl   0x8(%rsp)\n", 0, "stack_spills", 1 },
	{ "x86-asm", "    1000:\tcall   *0x8(%rax)\n", 0, "loads", 1 },
	{ "x86-asm", "    1000:\tmov    %fs:0x28,%rax\n", 0, "loads", 1 },
	{ "x86-asm", "    1000:\tlea    0x8(%rsp),%rax\n", 0, "loads", 0 },
	{ "x86-asm", "0000000000001000 <foo@plt>:\n", 0, "instructions", 0 },
};

TEST(inline_cases)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		size_t len = cases[i].len ? cases[i].len : strlen(cases[i].text);
		json_t *o = analyze(cases[i].kind, cases[i].text, len);
		long long got = field(o, cases[i].field);

		if (got != cases[i].want) {
			fprintf(stderr, "case %zu (%s): %s = %lld, want %lld\n", i, cases[i].kind,
				cases[i].field, got, cases[i].want);
			CHECK(got == cases[i].want);
		}
		json_decref(o);
	}
}

TEST(unknown_kind)
{
	json_t *o = (json_t *)1;
	char msg[128] = "";

	CHECK(ir_analyze_text("sass", "x", 1, &o, msg, sizeof(msg)) == KERR_INVALID);
	CHECK(o == NULL);
	CHECK_CONTAINS(msg, "sass");
	CHECK(ir_analyze_text(NULL, "x", 1, &o, msg, sizeof(msg)) == KERR_INVALID);
}

TEST(fields_per_kind)
{
	json_t *ll = analyze("llvm-ir", "", 0), *ptx = analyze("ptx", "", 0);
	json_t *x86 = analyze("x86-asm", "", 0);

	CHECK_STR(json_string_value(json_object_get(ll, "kind")), "llvm-ir");
	CHECK(json_object_get(ll, "registers") == NULL);
	CHECK(json_object_get(ptx, "registers") != NULL);
	CHECK(json_object_get(ptx, "entries") != NULL);
	CHECK(json_object_get(x86, "stack_spills") != NULL);
	CHECK(json_object_get(x86, "allocas") == NULL);
	CHECK(json_object_size(json_object_get(x86, "vector_widths")) == 0);
	json_decref(ll);
	json_decref(ptx);
	json_decref(x86);
}

/* Only functions with a body are listed; .entry ones also as entries. */
TEST(ptx_function_names)
{
	static const char text[] = ".func (.param .b32 r) proto(\n.param .b32 a\n)\n;\n"
				   ".visible .func (.param .b32 r) helper(.param .b32 a)\n{\n"
				   "\tret;\n}\n"
				   ".visible .entry kern() {\n\tret;\n}\n";
	json_t *o = analyze("ptx", text, sizeof(text) - 1);
	char *s = json_dumps(json_object_get(o, "functions"), JSON_COMPACT);
	char *e = json_dumps(json_object_get(o, "entries"), JSON_COMPACT);

	CHECK_STR(s, "[\"helper\",\"kern\"]");
	CHECK_STR(e, "[\"kern\"]");
	CHECK(field(o, "instructions") == 2);
	free(s);
	free(e);
	json_decref(o);
}

/* ---- irpocl_collect on trees made here ---------------------------------- */

static char *make_temp_dir(void)
{
	const char *tmp = getenv("TMPDIR");
	char *dir = xasprintf("%s/test-ir.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");

	if (!mkdtemp(dir)) {
		fprintf(stderr, "mkdtemp %s: %s\n", dir, strerror(errno));
		free(dir);
		return NULL;
	}
	return dir;
}

static int write_file(const char *path, const void *data, size_t len)
{
	char msg[256] = "";
	int rc = file_write_atomic(path, data, len, msg, sizeof(msg));

	if (rc)
		fprintf(stderr, "%s\n", msg);
	return rc;
}

TEST(collect_not_found)
{
	char *dir = make_temp_dir();
	char *ir = (char *)1, *as = (char *)1, msg[512] = "";
	size_t il = 1, al = 1;

	CHECK(dir != NULL);
	if (!dir)
		return;
	CHECK(irpocl_collect(dir, "nosuchkernel", 4096, &ir, &il, &as, &al, msg, sizeof(msg)) ==
	      KERR_NOTFOUND);
	CHECK(ir == NULL && as == NULL && il == 0 && al == 0);
	CHECK_CONTAINS(msg, "nosuchkernel");
	CHECK(irpocl_collect(dir, "../x", 4096, &ir, &il, &as, &al, msg, sizeof(msg)) ==
	      KERR_INVALID);
	CHECK(irpocl_collect(dir, "", 4096, &ir, &il, &as, &al, msg, sizeof(msg)) == KERR_INVALID);
	dir_remove_tree(dir);
	free(dir);
}

/*
 * A cache with a generic build (0-0-0, newer, not an ELF file) and a build
 * for one local size (a copy of this test's own executable, so objdump has
 * much to say): the specific build must win, its output be cut at a line
 * end within max_bytes; without objdump on PATH nothing is found.
 */
TEST(collect_picks_specific_build)
{
	char *dir = make_temp_dir(), *self = NULL, *p = NULL;
	char *ir = NULL, *as = NULL, msg[512] = "", *old_path = NULL;
	size_t il = 0, al = 0, self_len = 0;
	const size_t max = 8192;
	const char *junk = "not an ELF file\n";

	CHECK(dir != NULL);
	if (!dir || file_read("/proc/self/exe", 256u << 20, &self, &self_len, msg, sizeof(msg)))
		goto out;
	p = xasprintf("%s/AB/CDEF/kk/64-1-1-goffs0-smallgrid", dir);
	CHECK(dir_make(p, msg, sizeof(msg)) == 0);
	free(p);
	p = xasprintf("%s/AB/CDEF/kk/64-1-1-goffs0-smallgrid/kk.so", dir);
	CHECK(write_file(p, self, self_len) == 0);
	free(p);
	nanosleep(&(struct timespec){ 0, 20 * 1000 * 1000 }, NULL);
	p = xasprintf("%s/AB/CDEF/kk/0-0-0", dir);
	CHECK(dir_make(p, msg, sizeof(msg)) == 0);
	free(p);
	p = xasprintf("%s/AB/CDEF/kk/0-0-0/kk.so", dir);
	CHECK(write_file(p, junk, strlen(junk)) == 0);

	CHECK(irpocl_collect(dir, "kk", max, &ir, &il, &as, &al, msg, sizeof(msg)) == 0);
	CHECK(ir == NULL && il == 0);
	CHECK(as != NULL && al > 0 && al <= max);
	if (as) {
		CHECK(as[al - 1] == '\n' && as[al] == '\0' && strlen(as) == al);
		CHECK_CONTAINS(as, "file format elf64");
	}
	free(as);
	as = NULL;

	old_path = xstrdup(getenv("PATH") ? getenv("PATH") : "");
	setenv("PATH", dir, 1);
	CHECK(irpocl_collect(dir, "kk", max, &ir, &il, &as, &al, msg, sizeof(msg)) ==
	      KERR_NOTFOUND);
	CHECK_CONTAINS(msg, "not on PATH");
	setenv("PATH", old_path, 1);
out:
	if (dir)
		dir_remove_tree(dir);
	free(old_path);
	free(as);
	free(ir);
	free(p);
	free(self);
	free(dir);
}

/*
 * The disassembler starts with stdin /dev/null (a read
 * ends at once), its own process group (what a timeout kills), SIGPIPE at
 * its default even when the caller ignores it.  A script named objdump on
 * PATH reports what it was given; its output is the asm text.
 */
TEST(collect_tool_setup)
{
	char *dir = make_temp_dir(), *p = NULL, *ir = NULL, *as = NULL, *old_path = NULL;
	char msg[512] = "";
	size_t il = 0, al = 0;
	void (*old_pipe)(int);
	const char *script = "#!/bin/sh\n"
			     "if read x; then echo \"stdin not empty\"; fi\n"
			     "set -- $(cat /proc/$$/stat)\n"
			     "echo \"pid $1 pgrp $5\"\n"
			     "grep '^SigIgn:' /proc/$$/status\n";

	CHECK(dir != NULL);
	if (!dir)
		return;
	p = xasprintf("%s/AB/CDEF/kk/64-1-1-goffs0-smallgrid", dir);
	CHECK(dir_make(p, msg, sizeof(msg)) == 0);
	free(p);
	p = xasprintf("%s/AB/CDEF/kk/64-1-1-goffs0-smallgrid/kk.so", dir);
	CHECK(write_file(p, "x", 1) == 0);
	free(p);
	p = xasprintf("%s/objdump", dir);
	CHECK(write_file(p, script, strlen(script)) == 0 && chmod(p, 0755) == 0);
	old_path = xstrdup(getenv("PATH") ? getenv("PATH") : "");
	free(p);
	p = xasprintf("%s:%s", dir, old_path);
	setenv("PATH", p, 1);
	old_pipe = signal(SIGPIPE, SIG_IGN);
	CHECK(irpocl_collect(dir, "kk", 4096, &ir, &il, &as, &al, msg, sizeof(msg)) == 0);
	signal(SIGPIPE, old_pipe);
	setenv("PATH", old_path, 1);
	CHECK(as != NULL);
	if (as) {
		int pid = -1, pgrp = -2;
		const char *line = strstr(as, "pid ");

		CHECK(strstr(as, "stdin not empty") == NULL);
		CHECK(line && sscanf(line, "pid %d pgrp %d", &pid, &pgrp) == 2 && pid == pgrp);
		/* the ignored signals, a hex mask: signal s is bit s - 1 */
		line = strstr(as, "SigIgn:");
		CHECK(line != NULL);
		if (line) {
			unsigned long long ign = strtoull(line + strlen("SigIgn:"), NULL, 16);

			CHECK((ign & (1ull << (SIGPIPE - 1))) == 0);
		}
	}
	dir_remove_tree(dir);
	free(old_path);
	free(as);
	free(ir);
	free(p);
	free(dir);
}

/* ---- live: a real kernel on PoCL ----------------------------------------- */

#define LIVE_KERNEL "irtest_fma"
static const char *live_source =
	"__kernel void " LIVE_KERNEL "(__global float *a, __global const float *b,\n"
	"                         __global const float *c)\n"
	"{\n"
	"\tsize_t i = get_global_id(0);\n"
	"\ta[i] = fma(a[i], b[i], c[i]);\n"
	"}\n";

/* The first device of the PoCL platform; 0, or -1 when there is none. */
static int live_pocl_device(cl_device_id *dev)
{
	cl_platform_id plats[16];
	cl_uint np = 0, i;
	char name[256];

	if (clGetPlatformIDs(ARRAY_SIZE(plats), plats, &np) != CL_SUCCESS || !np)
		return -1;
	for (i = 0; i < np && i < ARRAY_SIZE(plats); i++) {
		if (clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof(name), name, NULL) !=
		    CL_SUCCESS)
			continue;
		if (strstr(name, "Portable Computing Language") &&
		    clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 1, dev, NULL) == CL_SUCCESS)
			return 0;
	}
	return -1;
}

/* Builds and launches the kernel once; returns the first failing cl_int. */
static cl_int live_launch(cl_device_id dev)
{
	cl_context ctx = NULL;
	cl_command_queue q = NULL;
	cl_program prog = NULL;
	cl_kernel k = NULL;
	cl_mem buf[3] = { NULL, NULL, NULL };
	size_t global = 2048, local = 64;
	cl_int err = CL_SUCCESS;
	int i;

	ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
	if (err)
		goto out;
	q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
	if (err)
		goto out;
	prog = clCreateProgramWithSource(ctx, 1, &live_source, NULL, &err);
	if (err || (err = clBuildProgram(prog, 1, &dev, "", NULL, NULL)))
		goto out;
	k = clCreateKernel(prog, LIVE_KERNEL, &err);
	for (i = 0; !err && i < 3; i++) {
		buf[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, global * sizeof(float), NULL, &err);
		if (!err)
			err = clSetKernelArg(k, (cl_uint)i, sizeof(cl_mem), &buf[i]);
	}
	if (!err)
		err = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL);
	if (!err)
		err = clFinish(q);
out:
	for (i = 0; i < 3; i++)
		if (buf[i])
			clReleaseMemObject(buf[i]);
	if (k)
		clReleaseKernel(k);
	if (prog)
		clReleaseProgram(prog);
	if (q)
		clReleaseCommandQueue(q);
	if (ctx)
		clReleaseContext(ctx);
	return err;
}

static int live_skipped;

static char *found_bc;

static int find_bc(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	const char *slash = strrchr(path, '/');

	if (type == FTW_F && slash && !strcmp(slash + 1, "parallel.bc")) {
		found_bc = xstrdup(path);
		return 1;
	}
	return 0;
}

/* llvm-dis's text of the one parallel.bc under dir, or NULL without llvm-dis. */
static char *llvm_dis_text(const char *dir)
{
	struct sbuf b = SBUF_INIT;
	char *cmd, chunk[4096];
	size_t got;
	FILE *p;

	found_bc = NULL;
	nftw(dir, find_bc, 16, FTW_PHYS);
	if (!found_bc)
		return NULL;
	cmd = xasprintf("llvm-dis-15 -o - '%s' 2>/dev/null", found_bc);
	p = popen(cmd, "r");
	while (p && (got = fread(chunk, 1, sizeof(chunk), p)) > 0)
		sbuf_add(&b, chunk, got);
	if (!p || pclose(p) != 0)
		sbuf_release(&b);
	free(cmd);
	free(found_bc);
	return b.len ? sbuf_detach(&b, NULL) : NULL;
}

/*
 * With PoCL loaded, the IR comes from the LLVM library in this process: it
 * is found with no llvm-dis on PATH (so the library printed it), and it is
 * llvm-dis's text to the byte.  Against a limit of half its text the
 * bitcode is too large to print here: with no llvm-dis on PATH there is
 * no IR, and with llvm-dis the same text cut at its last whole line
 * within the limit.
 */
static void live_in_process(const char *dir, const char *ir, size_t il)
{
	char *old_path = xstrdup(getenv("PATH") ? getenv("PATH") : "");
	char *ir2 = NULL, *as2 = NULL, *dis = llvm_dis_text(dir), msg[1024] = "";
	size_t il2 = 0, al2 = 0;

	if (dis)
		CHECK(ir && !strcmp(ir, dis));
	else
		printf("note: no llvm-dis-15 to compare the in-process IR with\n");
	setenv("PATH", dir, 1);
	CHECK(irpocl_collect(dir, LIVE_KERNEL, 16u << 20, &ir2, &il2, &as2, &al2, msg,
			     sizeof(msg)) == 0);
	setenv("PATH", old_path, 1);
	CHECK(ir2 != NULL && as2 == NULL);
	CHECK(ir && ir2 && il2 == il && !strcmp(ir, ir2));
	free(ir2);
	ir2 = NULL;
	if (ir && il > 2) {
		const char *cut = memrchr(ir, '\n', il / 2);
		size_t want = cut ? (size_t)(cut - ir) + 1 : 0;

		setenv("PATH", dir, 1);
		CHECK(irpocl_collect(dir, LIVE_KERNEL, il / 2, &ir2, &il2, &as2, &al2, msg,
				     sizeof(msg)) == KERR_NOTFOUND);
		setenv("PATH", old_path, 1);
		CHECK(ir2 == NULL);
		CHECK_CONTAINS(msg, "'llvm-dis-15' is not on PATH");
		if (dis) {
			CHECK(irpocl_collect(dir, LIVE_KERNEL, il / 2, &ir2, &il2, &as2, &al2, msg,
					     sizeof(msg)) == 0);
			CHECK(ir2 != NULL && il2 == want && want > 0);
			CHECK(ir2 && il2 == want && !memcmp(ir, ir2, want) && ir2[want] == '\0');
		}
	}
	free(ir2);
	free(as2);
	free(dis);
	free(old_path);
}

/*
 * Damaged bitcode (a candidate's code runs in the worker and can write to
 * its PoCL cache) printed in process: LLVM's error must come back as a
 * failed print, not end the process (its default on an error is exit(1)).
 * Called last: it overwrites the one parallel.bc under dir.
 */
static void live_damaged_bitcode(const char *dir)
{
	static const char junk[] = "BC\xc0\xde\x35\x14\x00\x00\x05\x00\x00\x00\x62\x0c"
				   "not the rest of a module";
	char *old_path = xstrdup(getenv("PATH") ? getenv("PATH") : "");
	char *ir = NULL, *as = NULL, msg[1024] = "";
	size_t il = 0, al = 0;

	found_bc = NULL;
	nftw(dir, find_bc, 16, FTW_PHYS);
	CHECK(found_bc != NULL);
	if (!found_bc)
		goto out;
	CHECK(write_file(found_bc, junk, sizeof(junk) - 1) == 0);
	setenv("PATH", dir, 1);
	CHECK(irpocl_collect(dir, LIVE_KERNEL, 16u << 20, &ir, &il, &as, &al, msg, sizeof(msg)) ==
	      KERR_NOTFOUND);
	setenv("PATH", old_path, 1);
	CHECK(ir == NULL);
	CHECK_CONTAINS(msg, "not LLVM bitcode this LLVM can read");
out:
	free(found_bc);
	found_bc = NULL;
	free(ir);
	free(as);
	free(old_path);
}

/*
 * PoCL reads its environment when the platform is first loaded, so the
 * cache variables are set before any OpenCL call.  PoCL keeps parallel.bc
 * only with POCL_LEAVE_KERNEL_COMPILER_TEMP_FILES=1.
 */
TEST(live_pocl)
{
	char *dir = make_temp_dir(), *ir = NULL, *as = NULL, msg[1024] = "";
	size_t il = 0, al = 0;
	cl_device_id dev;
	json_t *ll = NULL, *x86 = NULL;
	cl_int err;

	CHECK(dir != NULL);
	if (!dir)
		return;
	setenv("POCL_CACHE_DIR", dir, 1);
	setenv("POCL_KERNEL_CACHE", "1", 1);
	setenv("POCL_LEAVE_KERNEL_COMPILER_TEMP_FILES", "1", 1);
	if (live_pocl_device(&dev)) {
		printf("SKIP live_pocl: no PoCL OpenCL platform\n");
		live_skipped = 1;
		goto out;
	}
	err = live_launch(dev);
	if (err != CL_SUCCESS) {
		fprintf(stderr, "OpenCL error %d building or launching %s\n", err, LIVE_KERNEL);
		CHECK(err == CL_SUCCESS);
		goto out;
	}
	CHECK(irpocl_collect(dir, LIVE_KERNEL, 16u << 20, &ir, &il, &as, &al, msg, sizeof(msg)) ==
	      0);
	if (msg[0])
		fprintf(stderr, "irpocl_collect: %s\n", msg);
	CHECK(ir != NULL && as != NULL);
	if (ir) {
		ll = analyze("llvm-ir", ir, il);
		CHECK(names_contain(ll, "functions", "_pocl_kernel_" LIVE_KERNEL));
		CHECK(field(ll, "fma") > 0);
		CHECK(field(ll, "instructions") > 0);
	}
	if (as) {
		x86 = analyze("x86-asm", as, al);
		CHECK(names_contain(x86, "functions", LIVE_KERNEL));
		CHECK(field(x86, "instructions") > 0);
	}
	live_in_process(dir, ir, il);
	live_damaged_bitcode(dir);
out:
	json_decref(ll);
	json_decref(x86);
	free(ir);
	free(as);
	dir_remove_tree(dir);
	free(dir);
}

/* ---- main ----------------------------------------------------------------- */

static char *default_data_dir(void)
{
	const char *slash = strrchr(__FILE__, '/');

	if (!slash)
		return xstrdup("../data/ir");
	return xasprintf("%.*s/../data/ir", (int)(slash - __FILE__), __FILE__);
}

int main(int argc, char **argv)
{
	int golden = 1, live = 1, rc;
	char *fallback = NULL;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--golden"))
			live = 0;
		else if (!strcmp(argv[i], "--live"))
			golden = 0;
		else
			data_dir = argv[i];
	}
	if (!data_dir)
		data_dir = fallback = default_data_dir();
	if (golden) {
		RUN(golden_llvm_ir);
		RUN(golden_ptx);
		RUN(golden_x86_asm);
		RUN(inline_cases);
		RUN(unknown_kind);
		RUN(fields_per_kind);
		RUN(ptx_function_names);
		RUN(collect_not_found);
		RUN(collect_tool_setup);
		RUN(collect_picks_specific_build);
	}
	if (live)
		RUN(live_pocl);
	rc = test_summary();
	free(fallback);
	if (!rc && live_skipped)
		return TEST_SKIP;
	return rc;
}
