/*
 * test-screen.c - the static screen of candidate sources and build options.
 *
 * Cases are tables of {input, expected}: NULL expects the text to pass,
 * otherwise the refusal message must contain the expected text.  The
 * repository's own kernels must all pass, and the red-team kernels that a
 * lexical screen can catch must be refused.
 */
#include "test.h"
#include "screen.h"
#include "err.h"
#include "arraysize.h"

#include <dirent.h>
#include <stdlib.h>

struct src_case {
	const char *src;
	const char *want; /* NULL: passes; else a part of the message */
};

static void check_source(const struct src_case *c, size_t len)
{
	char msg[512] = "";
	int rc = screen_source(c->src, len, msg, sizeof(msg));

	if (!c->want) {
		if (rc)
			fprintf(stderr, "refused: %s\n  source: %s\n", msg, c->src);
		CHECK(rc == 0);
		return;
	}
	if (rc != KERR_INVALID)
		fprintf(stderr, "passed, want \"%s\"\n  source: %s\n", c->want, c->src);
	CHECK(rc == KERR_INVALID);
	CHECK_CONTAINS(msg, c->want);
}

static void check_sources(const struct src_case *cases, size_t count)
{
	for (size_t i = 0; i < count; i++)
		check_source(&cases[i], strlen(cases[i].src));
}

/* Ordinary OpenCL C must pass. */
TEST(source_normal)
{
	static const char *const ok[] = {
		"__kernel void k(__global float *y) { y[get_global_id(0)] = 1.0f; }",
		"#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
		"#pragma OPENCL FP_CONTRACT ON\n",
		"void f(float *a) {\n#pragma unroll\n"
		"for (int i = 0; i < 4; i++) a[i] = 0;\n}",
		"#pragma unroll 4\n#pragma clang loop unroll(enable)\n#pragma nounroll\n",
		"#pragma clang diagnostic ignored \"-Wunused\"\n",
		"__kernel __attribute__((reqd_work_group_size(8, 8, 1))) void k(void) {}",
		"__kernel __attribute__((vec_type_hint(float4))) void k(void) {}",
		"typedef struct { float x; } __attribute__((aligned(16))) S;",
		"#define KATTR __attribute__((reqd_work_group_size(16, 16, 1)))\n"
		"KATTR kernel void k(void) {}",
		"#define TM 8\n#if defined(TM) && TM > 4\n#elif TM\n#else\n#endif\n#undef TM\n",
		"#ifdef X\n#endif\n#ifndef Y\n#endif\n#line 100\n#line 7 \"k.cl\"\n#\n",
		"#define CAT_(a, b) a##b\n#define CAT(a, b) CAT_(a, b)\nint CAT(tile_, 8);",
		"#define STR(x) #x\nconstant char s[] = STR(asm_free);",
		"_Pragma(\"unroll\") for (;;) {}\n#define U _Pragma(\"unroll 4\") for (;;)\n",
		"int used = 1; int section = 2; float weak = 3.0f; int retain;",
		"#define SECTION 4\n#define USED_BYTES 8\n",
		"int f(int x) { return __builtin_expect(x, 0) + __builtin_popcount(x); }",
		"/* asm, __asm__, #include, _Pragma */ // asm(\"nop\")\nint x;",
		"constant char s[] = \"__asm__(\\\"nop\\\") #include <x>\";",
		"constant char c = '\\''; constant char d = '\"'; constant char e[] = \"'\";",
		"constant char s[] = u8\"a\"; constant int w = L'x';",
		"float f = 1e+5f + 0x1p-3f + .5e-2f; int h = 0x7fffffff;",
		"%:define ONE 1\nint a<:2:> = <% ONE, 2 %>;\n%:if ONE\n%:endif\n",
		"?\?=define TWO 2\nint x = TWO;",
		"#error don't build this\n#warning it's \"odd\n",
		"int a$b = 1;",
		"// a comment \xc3\xa9\xe2\x80\x94 in UTF-8\nconstant char s[] = \"\xc3\xa9\";",
		"int x; /* spans\n lines */ int y;",
		"int f(int a) { return (a) ? ((a + 1) * 2) : a; }",
		"",
		"\n\n\r\n\r",
		/* clang applies trigraphs and splices in comments and literals too:
		   the asm below is inside the comment or the string for clang as well */
		"// comment ?\?/\n__asm__(\"nop\");",
		"// comment \\\n__asm__(\"nop\");",
		"constant char s[] = \"?\?/\" ; __asm__ ; \";",
	};

	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		struct src_case c = { .src = ok[i] };

		check_source(&c, strlen(ok[i]));
	}
}

TEST(source_asm)
{
	static const struct src_case cases[] = {
		{ "void f(void) { __asm__ volatile(\"syscall\"); }",
		  "line 1: inline assembly ('__asm__') is not allowed: kernel code may not run "
		  "host "
		  "instructions" },
		{ "int x;\n\n\nvoid f(void) { __asm(\"nop\"); }",
		  "line 4: inline assembly ('__asm')" },
		{ "void f(void) { as\\\nm(\"nop\"); }", "line 1: inline assembly ('asm')" },
		{ "void f(void) { __as\\\r\nm__(\"nop\"); }", "inline assembly ('__asm__')" },
		{ "void f(void) { as\\  \t\nm(\"nop\"); }", "inline assembly ('asm')" },
		{ "void f(void) { as?\?/\nm(\"nop\"); }", "inline assembly ('asm')" },
		{ "a\\\nb\\\nc;\nasm", "line 4: inline assembly" },
		{ "int a;\r\nint b;\r\n__asm__", "line 3: inline assembly" },
		{ "int a;\rint b;\r__asm__", "line 3: inline assembly" },
		{ "#define X __asm__\n", "line 1: inline assembly" },
		{ "#if defined(asm)\n#endif\n", "line 1: inline assembly ('asm')" },
		{ "#undef __asm__\n", "inline assembly ('__asm__')" },
		{ "register int sp asm(\"rsp\");", "inline assembly ('asm')" },
		{ "int f(void) __asm__(\"getpid\");", "inline assembly" },
		{ "int x = 1; asm\xc2\xa0volatile(\"nop\");", "inline assembly ('asm')" },
		{ "\"a\\\\\" __asm__ \"b\"", "inline assembly" },
		{ "\"a\\\"b\" __asm__", "inline assembly" },
		{ "int \\u00e9 = 1;", "a backslash outside a literal is not allowed" },
		{ "__\\u0061sm__(\"nop\");", "a backslash outside a literal" },
	};

	check_sources(cases, ARRAY_SIZE(cases));
}

TEST(source_directives)
{
	static const struct src_case cases[] = {
		{ "#include \"/etc/hostname\"",
		  "line 1: '#include' is not allowed: a kernel is one self-contained source" },
		{ "int x;\n\n  #  include <stdio.h>", "line 3: '#include' is not allowed" },
		{ "%:include \"/etc/passwd\"", "'#include' is not allowed" },
		{ "?\?=include \"/etc/passwd\"", "'#include' is not allowed" },
		{ "/* a */ # /* b */ include \"x\"", "'#include' is not allowed" },
		{ "int x; /* a\n */ #include \"x\"", "line 2: '#include' is not allowed" },
		{ "#inc\\\nlude \"x\"", "'#include' is not allowed" },
		{ "\xc2\xa0#include \"x\"", "'#include' is not allowed" },
		{ "#include_next <x>", "'#include_next' is not allowed" },
		{ "#import \"x\"", "'#import' is not allowed" },
		{ "#embed \"x\"", "'#embed' is not allowed" },
		{ "#ident \"x\"",
		  "'#ident' is not an allowed preprocessing directive (allowed: define" },
		{ "#assert machine(x86)", "'#assert' is not an allowed preprocessing directive" },
		{ "# 1 \"x.h\" 3\n", "'#1' is not an allowed preprocessing directive" },
		{ "#if __has_include(\"/etc/shadow\")\n#endif",
		  "line 1: '__has_include' is not allowed: it probes files on the host" },
		{ "#if __has_include_next(<x>)\n#endif", "'__has_include_next' is not allowed" },
		{ "#define H __has_embed\n", "'__has_embed' is not allowed" },
		{ "#define EVALPOD_GROUP_ORDER 1\n",
		  "line 1: '#define EVALPOD_GROUP_ORDER' is not allowed: evalpod defines or remaps "
		  "that name" },
		{ "#undef EVALPOD_X\n", "'#undef EVALPOD_X' is not allowed" },
		{ "#undef get_group_id\n", "'#undef get_group_id' is not allowed" },
		{ "#define get_global_id(d) 0\n", "'#define get_global_id' is not allowed" },
		{ "#define get_local_size get_global_size\n", "'#define get_local_size'" },
		{ "%:undef get_num_groups\n", "'#undef get_num_groups'" },
		{ "#warning /* hide\n__asm__(\"nop\"); // */",
		  "line 1: a comment opened in '#error' or '#warning' text must close on its "
		  "line" },
		{ "#warning do not use asm here", "inline assembly ('asm')" },
	};

	check_sources(cases, ARRAY_SIZE(cases));
}

TEST(source_pragmas)
{
	static const struct src_case cases[] = {
		{ "#pragma push_macro(\"asm\")", "line 1: '#pragma push_macro' is not allowed: it "
						 "can undo evalpod's definitions" },
		{ "#pragma pop_macro(\"get_group_id\")", "'#pragma pop_macro' is not allowed" },
		{ "#pragma include_alias(\"a\", \"/etc/passwd\")", "'#pragma include_alias'" },
		{ "#pragma clang system_header", "'#pragma system_header' is not allowed" },
		{ "#pragma GCC system_header", "'#pragma system_header' is not allowed" },
		{ "#pragma comment(lib, \"c\")", "'#pragma comment' is not allowed" },
		{ "#pragma GCC dependency \"/etc/passwd\"",
		  "'#pragma dependency' is not allowed: it probes files on the host" },
		{ "#pragma clang __debug dump x", "'#pragma __debug' is not allowed" },
		{ "#pragma redefine_extname f getpid", "'#pragma redefine_extname'" },
		{ "#pragma weak f", "'#pragma weak' is not allowed" },
		{ "#pragma GCC visibility push(default)", "'#pragma visibility'" },
		{ "#pragma clang section bss = \"x\"", "'#pragma section'" },
		{ "#pragma clang attribute push(__attribute__((constructor)), apply_to = function)",
		  "attribute 'constructor' is not allowed" },
		{ "int x;\n_Pragma(\"push_macro(\\\"asm\\\")\")",
		  "line 2: in '_Pragma': '#pragma push_macro' is not allowed" },
		{ "#define U _Pragma(\"clang __debug dump x\")\n",
		  "in '_Pragma': '#pragma __debug' is not allowed" },
		{ "#define P(x) _Pragma(#x)\n",
		  "line 1: '_Pragma' must be followed by (\"...\"): a pragma built from macro text "
		  "cannot be screened" },
		{ "#define S(x) #x\n_Pragma(S(unroll))", "'_Pragma' must be followed by" },
		{ "_Pragma(L\"unroll\")", "'_Pragma' must be followed by" },
		{ "_Pragma", "'_Pragma' must be followed by" },
		{ "__pragma(unroll)", "'__pragma' is not allowed" },
	};

	check_sources(cases, ARRAY_SIZE(cases));
}

TEST(source_attributes_builtins)
{
	static const struct src_case cases[] = {
		{ "__attribute__((constructor)) void f(void) {}",
		  "line 1: attribute 'constructor' is not allowed: it runs code at load time or "
		  "changes linkage" },
		{ "void f(void) __attribute__((aligned(16), __used__));", "attribute '__used__'" },
		{ "int x __attribute__ ((section(\"x\")));", "attribute 'section'" },
		{ "void g(void) __attribute((alias(\"f\")));", "attribute 'alias'" },
		{ "void g(void) __attribute__((__destructor__(101)));",
		  "attribute '__destructor__'" },
		{ "__attribute__((target_clones(\"avx2\", \"default\"))) int f(void);",
		  "attribute 'target_clones'" },
		{ "[[gnu::constructor]] void f(void) {}", "attribute 'constructor'" },
		{ "#define A __attribute__((weak))\n", "attribute 'weak'" },
		{ "#define W used\n", "attribute 'used'" },
		{ "#define A __attribute__\nA((constructor)) void f(void) {}",
		  "line 2: 'constructor' is not allowed in a source that hides '__attribute__' in "
		  "a "
		  "macro (line 1)" },
		{ "#define LP (\n__attribute__ LP LP constructor ) ) void f(void);",
		  "line 2: '__attribute__' must be followed by '((' in a kernel source" },
		{ "void *f(void) { return __builtin_frame_address(0); }",
		  "line 1: '__builtin_frame_address' is not allowed: builtins outside a short "
		  "list" },
		{ "long t(void) { return __builtin_readcyclecounter(); }",
		  "'__builtin_readcyclecounter' is not allowed" },
		{ "long t(void) { return __builtin_ia32_rdtsc(); }", "'__builtin_ia32_rdtsc'" },
		{ "void *p(void) { return __builtin_thread_pointer(); }",
		  "'__builtin_thread_pointer'" },
		{ "int p(void) { return __builtin_printf(\"x\"); }", "'__builtin_printf'" },
		{ "#define B(x) __builtin_##x\n", "'__builtin_' is not allowed" },
	};

	check_sources(cases, ARRAY_SIZE(cases));
}

TEST(source_malformed)
{
	static const struct src_case cases[] = {
		{ "int x; /* never closed", "line 1: unterminated comment" },
		{ "int x;\n/* never\nclosed", "line 2: unterminated comment" },
		{ "constant char s[] = \"abc\n\";", "line 1: unterminated string literal" },
		{ "int c = 'a;\n", "unterminated character literal" },
		{ "constant char s[] = \"abc\\", "unterminated string literal" },
		{ "#define Q don't\n", "unterminated character literal" },
	};
	static const char nul[] = "int x;\nint\0 y;";
	struct src_case c = { nul, "line 2: a NUL byte is not allowed in a kernel source" };

	check_sources(cases, ARRAY_SIZE(cases));
	check_source(&c, sizeof(nul) - 1);
	CHECK(screen_source(nul, sizeof(nul) - 1, NULL, 0) == KERR_INVALID);
}

struct opt_case {
	const char *opts;
	const char *want; /* a part of the message */
};

TEST(options)
{
	static const char *const ok[] = {
		"",
		"  ",
		"-DTM=8",
		"-D TM=8 -D TN=4",
		"-DX=a=b",
		"-DFOO -DBAR=",
		"-DX=(1<<3)|2 -DY=-1 -DZ=a.b+c*d/e%f -DW=!a&&~b^c,d>=e",
		"-cl-std=CL3.0 -cl-mad-enable -cl-fast-relaxed-math -w -Werror",
		"-cl-std=CL1.2\t-cl-denorms-are-zero\n-cl-kernel-arg-info",
	};
	static const struct opt_case cases[] = {
		{ "-include /etc/passwd", "build option '-include' is not allowed" },
		{ "-imacros x", "'-imacros' is not allowed" },
		{ "-Uasm", "'-Uasm' is not allowed" },
		{ "-x cl", "'-x' is not allowed" },
		{ "-Xclang -load", "'-Xclang' is not allowed" },
		{ "-fblocks", "'-fblocks' is not allowed" },
		{ "-mavx512f", "'-mavx512f' is not allowed" },
		{ "-o x", "'-o' is not allowed" },
		{ "-g", "'-g' is not allowed" },
		{ "-O3", "'-O3' is not allowed" },
		{ "-Wl,-rpath", "'-Wl,-rpath' is not allowed" },
		{ "-plugin x", "'-plugin' is not allowed" },
		{ "-cl-ext=+all", "'-cl-ext=+all' is not allowed" },
		{ "-cl-std=CL9.9", "'-cl-std=CL9.9' is not allowed" },
		{ "-cl-std=CL2.0", "program-scope global variables, which keep state" },
		{ "-Dasm=1", "build option '-Dasm=1': inline assembly ('asm') is not allowed" },
		{ "-D __asm__", "build option '-D __asm__': inline assembly" },
		{ "-Dget_group_id=get_local_id", "'#define get_group_id' is not allowed" },
		{ "-DX=__asm__", "build option '-DX=__asm__': inline assembly" },
		{ "-DX=__builtin_frame_address(0)", "'__builtin_frame_address' is not allowed" },
		{ "-DX=_Pragma", "'_Pragma' must be followed by" },
		{ "-DX=used", "attribute 'used'" },
		{ "-DA=__attribute__", "'__attribute__' is not allowed in a macro value" },
		{ "-DX=/*", "unterminated comment" },
		{ "-DX=\"a\"", "may not contain quotes or backslashes" },
		{ "-DX='a'", "may not contain quotes" },
		{ "-DX=a\\", "backslashes" },
		{ "-DX=a;b", "character ';' is not allowed in a macro value" },
		{ "-DX=a#b", "character '#' is not allowed" },
		{ "-DX=a$b", "character '$' is not allowed" },
		{ "-D", "build option '-D' needs a macro name" },
		{ "-DTM=8 -D", "'-D' needs a macro name" },
		{ "-D=1", "a macro name is missing" },
		{ "-D1X=2", "'1X' is not a macro name" },
		{ "-DA-B=2", "'A-B' is not a macro name" },

		{ "-I/etc",
		  "build option '-I/etc' is not allowed (allowed: -D NAME[=VALUE], -cl-..., -w, "
		  "-Werror)" },
		{ "-DEVALPOD_SEED=1",
		  "build option '-DEVALPOD_SEED=1': '#define EVALPOD_SEED' is not allowed" },
	};
	char msg[512];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		int rc;

		msg[0] = '\0';
		rc = screen_options(cases[i].opts, msg, sizeof(msg));
		if (rc != KERR_INVALID)
			fprintf(stderr, "allowed '%s', want \"%s\"\n", cases[i].opts,
				cases[i].want);
		CHECK(rc == KERR_INVALID);
		CHECK_CONTAINS(msg, cases[i].want);
	}
	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		if (screen_options(ok[i], msg, sizeof(msg)))
			fprintf(stderr, "refused '%s': %s\n", ok[i], msg);
		CHECK(screen_options(ok[i], msg, sizeof(msg)) == 0);
	}
	CHECK(screen_options(NULL, msg, sizeof(msg)) == 0);
}

TEST(guard_options)
{
	const char *g = screen_guard_options();

	CHECK(g && g == screen_guard_options());
	CHECK_CONTAINS(g, "-Dasm=EVALPOD_REFUSED_asm ");
	CHECK_CONTAINS(g, "-D__asm=EVALPOD_REFUSED_asm ");
	CHECK_CONTAINS(g, "-D__asm__=EVALPOD_REFUSED_asm ");
	CHECK_CONTAINS(g, "-D__builtin_frame_address=EVALPOD_REFUSED_builtin ");
	CHECK(!strchr(g, '"') && !strchr(g, '\''));
}

/* --- the repository's kernels --- */

static char *repo_path(const char *rel)
{
	/* __FILE__ is <repo>/tests/unit/test-screen.c */
	static const char self[] = "tests/unit/test-screen.c";
	size_t root = strlen(__FILE__) - (sizeof(self) - 1);
	size_t len = root + strlen(rel) + 1;
	char *p = malloc(len);

	if (p)
		snprintf(p, len, "%.*s%s", (int)root, __FILE__, rel);
	return p;
}

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long size;

	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (size = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET) &&
	    (buf = malloc((size_t)size + 1))) {
		*len = fread(buf, 1, (size_t)size, f);
		buf[*len] = '\0';
	}
	fclose(f);
	return buf;
}

/* Screens every .cl file in dir (relative to the repository); returns how many. */
static int screen_dir(const char *dir, const char *const *refused, size_t nrefused)
{
	char *path = repo_path(dir), file[4096], msg[512];
	DIR *d = path ? opendir(path) : NULL;
	struct dirent *e;
	int count = 0;

	CHECK(d != NULL);
	while (d && (e = readdir(d))) {
		size_t nl = strlen(e->d_name), len = 0, want = 0;
		char *src;

		if (nl < 4 || strcmp(e->d_name + nl - 3, ".cl"))
			continue;
		for (size_t i = 0; i < nrefused; i++)
			want |= !strcmp(e->d_name, refused[i]);
		snprintf(file, sizeof(file), "%s/%s", path, e->d_name);
		src = read_all(file, &len);
		CHECK(src != NULL);
		msg[0] = '\0';
		if (src && (screen_source(src, len, msg, sizeof(msg)) != 0) != (int)want)
			fprintf(stderr, "%s: %s\n", file, want ? "passed, want refused" : msg);
		CHECK(!src || (screen_source(src, len, msg, sizeof(msg)) != 0) == (int)want);
		free(src);
		count++;
	}
	if (d)
		closedir(d);
	free(path);
	return count;
}

TEST(repository_kernels)
{
	static const char *const dirs[] = {
		"examples/matmul",  "examples/chunk_gla", "examples/gmm_fp8_blockwise",
		"tests/data/traps", "tests/data/kctl",    "bench",
	};
	int count = 0;

	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
		count += screen_dir(dirs[i], NULL, 0);
	CHECK(count >= 30);
}

/* The red-team kernels a lexical screen catches; the others fail to build or run. */
TEST(redteam_kernels)
{
	static const char *const refused[] = {
		"asm_spliced.cl",     "asm_syscall.cl",  "has_include.cl",
		"include_digraph.cl", "include_host.cl", "include_secret.cl",
	};

	CHECK(screen_dir("tests/data/redteam", refused, ARRAY_SIZE(refused)) >= 20);
}

int main(void)
{
	RUN(source_normal);
	RUN(source_asm);
	RUN(source_directives);
	RUN(source_pragmas);
	RUN(source_attributes_builtins);
	RUN(source_malformed);
	RUN(options);
	RUN(guard_options);
	RUN(repository_kernels);
	RUN(redteam_kernels);
	return test_summary();
}
