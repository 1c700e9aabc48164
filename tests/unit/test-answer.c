/*
 * test-answer.c - the proposer's answer format: parsing and applying.
 *
 *   test-answer MATMUL_CL
 *
 * MATMUL_CL is examples/matmul/matmul.cl: two directions are applied to the
 * real template and compared with the source they must give.
 */
#include "answer.h"
#include "err.h"
#include "fileio.h"
#include "sbuf.h"
#include "xalloc.h"
#include "test.h"
#include "arraysize.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define START "EVOLVE-BLOCK-START"
#define END   "EVOLVE-BLOCK-END"

static const char *matmul_path;

/* A small kernel with two named, indented blocks. */
static const char tmpl[] = "// two blocks\n"
			   "__kernel void k(__global float *a, int n)\n"
			   "{\n"
			   "\t// EVOLVE-BLOCK-START tile\n"
			   "\t#define TM 4 // rows per item\n"
			   "\tconst int i = get_global_id(0) * TM;\n"
			   "\t// EVOLVE-BLOCK-END\n"
			   "\t// EVOLVE-BLOCK-START body\n"
			   "\tfor (int r = 0; r < TM; r++)\n"
			   "\t\ta[i + r] = 0.0f;\n"
			   "\ta[i] += 1.0f;\n"
			   "\t// EVOLVE-BLOCK-END\n"
			   "}\n";

/* --- helpers ---------------------------------------------------------------- */

/* s with its only occurrence of from replaced by to (malloc'd); NULL when not exactly one. */
static char *replace_once(const char *s, const char *from, const char *to)
{
	const char *at = strstr(s, from);

	if (!at || strstr(at + 1, from))
		return NULL;
	return xasprintf("%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
}

/* Parses text, which must have one direction, and applies it to src. */
static char *apply_one(const char *text, const char *src, char *msg, size_t n)
{
	struct answer a = { 0 };
	char *res = NULL;

	if (answer_parse(text, 4, &a, msg, n) == 0 && a.n == 1)
		res = answer_apply(&a.d[0], src, START, END, msg, n);
	answer_release(&a);
	return res;
}

static char *crlf(const char *s)
{
	struct sbuf sb = SBUF_INIT;

	for (; *s; s++) {
		if (*s == '\n')
			sbuf_addch(&sb, '\r');
		sbuf_addch(&sb, *s);
	}
	return sbuf_detach(&sb, NULL);
}

static char *read_matmul(void)
{
	char msg[256], *src = NULL;
	size_t len;

	if (file_read(matmul_path, 1 << 20, &src, &len, msg, sizeof(msg))) {
		fprintf(stderr, "%s\n", msg);
		return NULL;
	}
	return src;
}

/*
 * The template with the body of its one block replaced by body: the text
 * up to the line after the start marker, body, the end marker's line on.
 */
static char *matmul_with_body(const char *src, const char *body)
{
	const char *s = strstr(src, "// " START "\n"), *e = strstr(src, "// " END "\n");

	if (!s || !e)
		return NULL;
	s += strlen("// " START "\n");
	return xasprintf("%.*s%s%s", (int)(s - src), src, body, e);
}

/* --- the real template: examples/matmul ------------------------------------- */

/*
 * A rewrite of the whole block as a model would send it: every work-item
 * keeps a TM x (TN*VN) tile of C in registers, loading per step of K a row
 * of CN values of B and a column of TM values of A once each.
 */
static const char mm_body[] =
	"// Each work-item computes a TM x CN tile of C (CN = TN*VN columns) in\n"
	"// registers: per step of K it loads CN values of a row of B and TM values\n"
	"// of a column of A once, and does TM*CN multiply-adds with them.  A and B\n"
	"// are read in place: PACK, LOCAL, KB and KU are accepted and ignored.\n"
	"#ifndef TM\n"
	"#define TM 4            // rows of C per work-item\n"
	"#endif\n"
	"#ifndef VN\n"
	"#define VN 4            // columns per vector\n"
	"#endif\n"
	"#ifndef TN\n"
	"#define TN 1            // vectors per work-item along N\n"
	"#endif\n"
	"#ifndef WX\n"
	"#define WX 8            // work-group size along N\n"
	"#endif\n"
	"#ifndef WY\n"
	"#define WY 1            // work-group size along M\n"
	"#endif\n"
	"#ifndef PACK\n"
	"#define PACK 0          // read by the launch plan; nothing is packed\n"
	"#endif\n"
	"\n"
	"#define CN (TN * VN)    // columns per work-item\n"
	"\n"
	"__kernel void pack_a(__global const float *restrict A, __global float *restrict Ap, int "
	"M,\n"
	"\t\t     int K)\n"
	"{\n"
	"}\n"
	"\n"
	"__kernel void pack_b(__global const float *restrict B, __global float *restrict Bp, int "
	"N,\n"
	"\t\t     int K)\n"
	"{\n"
	"}\n"
	"\n"
	"__kernel __attribute__((reqd_work_group_size(WX, WY, 1)))\n"
	"void matmul(__global const float *restrict A, __global const float *restrict B,\n"
	"\t    __global const float *restrict Ap, __global const float *restrict Bp,\n"
	"\t    __global float *restrict C, int M, int N, int K)\n"
	"{\n"
	"\tconst int col = get_global_id(0) * CN, row = get_global_id(1) * TM;\n"
	"\tfloat acc[TM][CN];\n"
	"\n"
	"\tfor (int i = 0; i < TM; i++)\n"
	"\t\tfor (int j = 0; j < CN; j++)\n"
	"\t\t\tacc[i][j] = 0.0f;\n"
	"\tfor (int k = 0; k < K; k++) {\n"
	"\t\tfloat b[CN];\n"
	"\n"
	"\t\tfor (int j = 0; j < CN; j++)\n"
	"\t\t\tb[j] = col + j < N ? B[(size_t)k * N + col + j] : 0.0f;\n"
	"\t\tfor (int i = 0; i < TM; i++) {\n"
	"\t\t\tconst float a = row + i < M ? A[(size_t)(row + i) * K + k] : 0.0f;\n"
	"\n"
	"\t\t\tfor (int j = 0; j < CN; j++)\n"
	"\t\t\t\tacc[i][j] = fma(a, b[j], acc[i][j]);\n"
	"\t\t}\n"
	"\t}\n"
	"\tfor (int i = 0; i < TM && row + i < M; i++)\n"
	"\t\tfor (int j = 0; j < CN && col + j < N; j++)\n"
	"\t\t\tC[(size_t)(row + i) * N + col + j] = acc[i][j];\n"
	"}\n";

TEST(matmul_block)
{
	char *src = read_matmul(), *text, *want = NULL, *got = NULL, *swept = NULL, *want8 = NULL;
	struct answer a = { 0 };
	char msg[512] = "";

	CHECK(src != NULL);
	if (!src)
		return;
	text = xasprintf("I would keep a register tile per work-item.\n"
			 "\n"
			 "=== DIRECTION: a TM x CN register tile per work-item, A and B read once "
			 "per step of K\n"
			 "TUNABLE: TM = 1, 2, 4, 8\n"
			 "TUNABLE: VN = 1, 2, 4, 8\n"
			 "--- BLOCK 0\n"
			 "```c\n"
			 "%s"
			 "```\n"
			 "--- END\n",
			 mm_body);
	CHECK(answer_parse(text, 4, &a, msg, sizeof(msg)) == 0);
	CHECK(a.n == 1);
	if (a.n == 1) {
		CHECK_STR(a.d[0].rationale, "a TM x CN register tile per work-item, A and B read "
					    "once per step of K");
		CHECK(a.d[0].line == 3);
		CHECK(a.d[0].ntunables == 2 && a.d[0].tunables[1].nvalues == 4);
		CHECK(a.d[0].nparts == 1 && a.d[0].parts[0].whole && a.d[0].parts[0].line == 6);
		CHECK_STR(a.d[0].parts[0].body, mm_body);
		want = matmul_with_body(src, mm_body);
		got = answer_apply(&a.d[0], src, START, END, msg, sizeof(msg));
		CHECK_STR(got, want);
	}
	/* the tuner sweeps the variant's own TM */
	if (got) {
		swept = answer_set_define(got, START, END, "TM", 8, msg, sizeof(msg));
		want8 = replace_once(want, "#define TM 4            // rows of C per work-item\n",
				     "#define TM 8            // rows of C per work-item\n");
		CHECK(want8 != NULL);
		CHECK_STR(swept, want8 ? want8 : "");
	}
	answer_release(&a);
	free(swept);
	free(want8);
	free(got);
	free(want);
	free(text);
	free(src);
}

TEST(matmul_edit)
{
	static const char text[] = "=== DIRECTION: taller tiles: 4 rows per work-item, 4 "
				   "work-items along M\n"
				   "PARENT: r01-v002\n"
				   "TUNABLE: TM = 1, 2, 4, 8\n"
				   "TUNABLE: WY = 1, 2, 4, 8\n"
				   "\n"
				   "--- EDIT 0\n"
				   "<<<<<<< SEARCH\n"
				   "#define TM 1            // rows of C per work-item\n"
				   "=======\n"
				   "#define TM 4            // rows of C per work-item\n"
				   ">>>>>>> REPLACE\n"
				   "\n"
				   "<<<<<<< SEARCH\n"
				   "#ifndef WY\n"
				   "#define WY 1            // work-group size along M\n"
				   "=======\n"
				   "#ifndef WY\n"
				   "#define WY 4            // work-group size along M\n"
				   ">>>>>>> REPLACE\n"
				   "--- END\n";
	char *src = read_matmul(), *mid = NULL, *want = NULL, *got = NULL;
	struct answer a = { 0 };
	char msg[512] = "";

	CHECK(src != NULL);
	if (!src)
		return;
	CHECK(answer_parse(text, 1, &a, msg, sizeof(msg)) == 0);
	CHECK(a.n == 1);
	if (a.n == 1) {
		const struct answer_part *pt = &a.d[0].parts[0];

		CHECK_STR(a.d[0].parent, "r01-v002");
		CHECK(!pt->whole && pt->nedits == 2 && pt->line == 6);
		CHECK(pt->edits[0].line == 7 && pt->edits[1].line == 13);
		CHECK_STR(pt->edits[1].search,
			  "#ifndef WY\n#define WY 1            // work-group size along M\n");
		mid = replace_once(src, "#define TM 1            // rows of C",
				   "#define TM 4            // rows of C");
		want = mid ? replace_once(mid, "#define WY 1            // work-group size",
					  "#define WY 4            // work-group size")
			   : NULL;
		CHECK(want != NULL);
		got = answer_apply(&a.d[0], src, START, END, msg, sizeof(msg));
		CHECK_STR(got, want ? want : "");
	}
	answer_release(&a);
	free(got);
	free(want);
	free(mid);
	free(src);
}

/* --- a three-direction answer ----------------------------------------------- */

static const char three[] =
	"Three directions follow.  The first keeps the structure.\n"
	"=== DIRECTION is not this line's format\n"
	"would be an error, so the preamble must not hold one.\n"
	"\n"
	"=== DIRECTION: add 2 instead of 1, and let the tuner pick TM\n"
	"PARENT: r02-v003\n"
	"TUNABLE: TM = 2, 4, 8\n"
	"--- EDIT body\n"
	"<<<<<<< SEARCH\n"
	"\ta[i] += 1.0f;\n"
	"=======\n"
	"\ta[i] += 2.0f;\n"
	">>>>>>> REPLACE\n"
	"--- END\n"
	"\n"
	"=== DIRECTION:    a new body, written without indentation   \n"
	"--- BLOCK body\n"
	"for (int r = 0; r < TM; r++)\n"
	"\n"
	"\ta[i + r] = 1.0f;\n"
	"--- END\n"
	"=== DIRECTION: two rows per item, a fenced tile and two edits of the body\n"
	"TUNABLE: TM=1,2\n"
	"--- BLOCK tile\n"
	"\n"
	"```opencl\n"
	"\t#define TM 2 // rows per item\n"
	"\tconst int i = get_global_id(0) * TM;\n"
	"```\n"
	"\n"
	"--- END\n"
	"--- EDIT body\n"
	"<<<<<<< SEARCH\n"
	"\tfor (int r = 0; r < TM; r++)\n"
	"=======\n"
	"\tfor (int r = 0; r < TM && i + r < n; r++)\n"
	">>>>>>> REPLACE\n"
	"\n"
	"\n"
	"<<<<<<< SEARCH\n"
	"\ta[i] += 1.0f;\n"
	"=======\n"
	">>>>>>> REPLACE\n"
	"--- END\n";

/* The preamble above holds a DIRECTION-like line: strip it for the real test. */
static char *three_text(void)
{
	return replace_once(three,
			    "=== DIRECTION is not this line's format\n"
			    "would be an error, so the preamble must not hold one.\n",
			    "");
}

static const char *const three_want[] = {
	"// two blocks\n"
	"__kernel void k(__global float *a, int n)\n"
	"{\n"
	"\t// EVOLVE-BLOCK-START tile\n"
	"\t#define TM 4 // rows per item\n"
	"\tconst int i = get_global_id(0) * TM;\n"
	"\t// EVOLVE-BLOCK-END\n"
	"\t// EVOLVE-BLOCK-START body\n"
	"\tfor (int r = 0; r < TM; r++)\n"
	"\t\ta[i + r] = 0.0f;\n"
	"\ta[i] += 2.0f;\n"
	"\t// EVOLVE-BLOCK-END\n"
	"}\n",
	/* blocks_inject indents an unindented body like its marker */
	"// two blocks\n"
	"__kernel void k(__global float *a, int n)\n"
	"{\n"
	"\t// EVOLVE-BLOCK-START tile\n"
	"\t#define TM 4 // rows per item\n"
	"\tconst int i = get_global_id(0) * TM;\n"
	"\t// EVOLVE-BLOCK-END\n"
	"\t// EVOLVE-BLOCK-START body\n"
	"\tfor (int r = 0; r < TM; r++)\n"
	"\n"
	"\t\ta[i + r] = 1.0f;\n"
	"\t// EVOLVE-BLOCK-END\n"
	"}\n",
	"// two blocks\n"
	"__kernel void k(__global float *a, int n)\n"
	"{\n"
	"\t// EVOLVE-BLOCK-START tile\n"
	"\t#define TM 2 // rows per item\n"
	"\tconst int i = get_global_id(0) * TM;\n"
	"\t// EVOLVE-BLOCK-END\n"
	"\t// EVOLVE-BLOCK-START body\n"
	"\tfor (int r = 0; r < TM && i + r < n; r++)\n"
	"\t\ta[i + r] = 0.0f;\n"
	"\t// EVOLVE-BLOCK-END\n"
	"}\n",
};

/* Parses text as the three-direction answer and checks every field and result. */
static void check_three(const char *text)
{
	struct answer a = { 0 };
	char msg[512] = "";
	int rc = answer_parse(text, 3, &a, msg, sizeof(msg));

	CHECK(rc == 0);
	if (rc)
		fprintf(stderr, "  %s\n", msg);
	CHECK(a.n == 3);
	if (a.n != 3)
		goto out;
	CHECK_STR(a.d[0].rationale, "add 2 instead of 1, and let the tuner pick TM");
	CHECK_STR(a.d[0].parent, "r02-v003");
	CHECK(a.d[0].line == 3 && a.d[1].line == 14 && a.d[2].line == 20);
	CHECK(a.d[0].ntunables == 1 && a.d[0].tunables[0].nvalues == 3);
	CHECK(a.d[0].tunables[0].values[0] == 2 && a.d[0].tunables[0].values[2] == 8);
	CHECK_STR(a.d[0].tunables[0].name, "TM");
	CHECK(a.d[0].nparts == 1 && !a.d[0].parts[0].whole && a.d[0].parts[0].line == 6);
	CHECK(a.d[0].parts[0].nedits == 1 && a.d[0].parts[0].edits[0].line == 7);
	CHECK_STR(a.d[0].parts[0].edits[0].search, "\ta[i] += 1.0f;\n");
	CHECK_STR(a.d[0].parts[0].edits[0].replace, "\ta[i] += 2.0f;\n");
	CHECK_STR(a.d[1].rationale, "a new body, written without indentation");
	CHECK(a.d[1].parent == NULL && a.d[1].ntunables == 0);
	CHECK(a.d[1].nparts == 1 && a.d[1].parts[0].whole && a.d[1].parts[0].line == 15);
	CHECK_STR(a.d[1].parts[0].body, "for (int r = 0; r < TM; r++)\n\n\ta[i + r] = 1.0f;\n");
	CHECK(a.d[2].nparts == 2 && a.d[2].ntunables == 1);
	CHECK_STR(a.d[2].parts[0].block, "tile");
	CHECK_STR(a.d[2].parts[0].body,
		  "\t#define TM 2 // rows per item\n\tconst int i = get_global_id(0) * TM;\n");
	CHECK(a.d[2].parts[1].nedits == 2 && a.d[2].parts[1].edits[1].line == 38);
	CHECK_STR(a.d[2].parts[1].edits[1].replace, "");
	for (size_t i = 0; i < 3; i++) {
		char *got = answer_apply(&a.d[i], tmpl, START, END, msg, sizeof(msg));

		CHECK_STR(got, three_want[i]);
		if (!got)
			fprintf(stderr, "  direction %zu: %s\n", i + 1, msg);
		free(got);
	}
out:
	answer_release(&a);
}

TEST(three_directions)
{
	char *text = three_text();

	CHECK(text != NULL);
	if (text)
		check_three(text);
	free(text);
}

TEST(crlf)
{
	char *text = three_text(), *t2 = text ? crlf(text) : NULL;

	CHECK(t2 != NULL && strstr(t2, "\r\n--- END\r\n"));
	if (t2)
		check_three(t2);
	free(t2);
	free(text);
}

/* --- fences ----------------------------------------------------------------- */

struct body_case {
	const char *block; /* the lines between "--- BLOCK body" and "--- END" */
	const char *body;  /* the parsed body */
};

static const struct body_case body_cases[] = {
	{ "```\nx;\n```\n", "x;\n" },
	{ "```c\nx;\ny;\n```\n", "x;\ny;\n" },
	{ "```opencl  \nx;\n```   \n", "x;\n" },
	{ "\n\n```c\nx;\n```\n\n", "x;\n" },
	{ "```\n```\n", "" },
	/* no fence: verbatim, blank lines and all */
	{ "\nx;\n\n", "\nx;\n\n" },
	{ "", "" },
	{ "x; // ```\n", "x; // ```\n" },
	/* a fence inside the body is not the body's fence */
	{ "x;\n```\ny;\n```\nz;\n", "x;\n```\ny;\n```\nz;\n" },
	/* header-like lines inside a body are code */
	{ "<<<<<<< SEARCH\n=======\n>>>>>>> REPLACE\nPARENT: x\n--- ENDING\n",
	  "<<<<<<< SEARCH\n=======\n>>>>>>> REPLACE\nPARENT: x\n--- ENDING\n" },
};

TEST(fences)
{
	for (size_t i = 0; i < ARRAY_SIZE(body_cases); i++) {
		char *text = xasprintf("=== DIRECTION: d\n--- BLOCK body\n%s--- END\n",
				       body_cases[i].block);
		struct answer a = { 0 };
		char msg[512] = "";

		CHECK(answer_parse(text, 1, &a, msg, sizeof(msg)) == 0);
		if (a.n == 1 && a.d[0].nparts == 1)
			CHECK_STR(a.d[0].parts[0].body, body_cases[i].body);
		else
			fprintf(stderr, "  case %zu: %s\n", i, msg);
		answer_release(&a);
		free(text);
	}
}

/* --- parse errors ----------------------------------------------------------- */

struct err_case {
	const char *text;
	const char *err; /* a substring of the message */
};

#define D "=== DIRECTION: d\n"

static const struct err_case parse_errors[] = {
	/* nothing to parse */
	{ "", "no '=== DIRECTION' header" },
	{ "Here is a better kernel.\n--- BLOCK body\nx;\n--- END\n", "no '=== DIRECTION' header" },
	{ "  === DIRECTION: indented\n--- BLOCK body\nx;\n--- END\n", "no '=== DIRECTION' header" },
	/* the header and its rationale */
	{ "=== DIRECTION:\n--- BLOCK body\nx;\n--- END\n",
	  "line 1: the direction's rationale is empty" },
	{ "=== DIRECTION: \t \r\n--- BLOCK body\nx;\n--- END\n",
	  "line 1: the direction's rationale is empty" },
	{ "=== DIRECTION 1: faster\n--- BLOCK body\nx;\n--- END\n",
	  "line 1: '=== DIRECTION' must be followed by ':'" },
	{ D, "line 1: direction 1 has no BLOCK or EDIT section" },
	{ D "\n" D "--- BLOCK body\nx;\n--- END\n",
	  "line 1: direction 1 has no BLOCK or EDIT section" },
	{ D "--- BLOCK body\nx;\n--- END\n" D "PARENT: r1\n",
	  "line 5: direction 2 has no BLOCK or EDIT section" },
	/* text outside a section */
	{ D "--- BLOCK body\nx;\n--- END\nThis should be faster.\n",
	  "line 5: text outside a section" },
	{ D "x;\n--- BLOCK body\nx;\n--- END\n", "line 2: text outside a section" },
	{ D "--- BLOCK body\nx;\n--- END\n```\n", "line 5: text outside a section" },
	{ D "--- BLOCK body\nx;\n--- END\n--- END\n", "line 5: '--- END' without an open section" },
	{ D "--- FOO body\n", "line 2: text outside a section" },
	/* missing END */
	{ D "--- BLOCK body\nx;\n",
	  "line 3: '--- END' missing for the BLOCK section opened at line 2" },
	{ D "--- BLOCK body\n",
	  "line 2: '--- END' missing for the BLOCK section opened at line 2" },
	{ D "--- BLOCK body\nx;\n" D "--- BLOCK tile\ny;\n--- END\n",
	  "line 4: '--- END' missing for the BLOCK section opened at line 2" },
	{ D "--- BLOCK body\nx;\n--- BLOCK tile\ny;\n--- END\n",
	  "line 4: '--- END' missing for the BLOCK section opened at line 2" },
	{ D "--- BLOCK body\nx;\n--- END body\n", "line 4: nothing may follow '--- END'" },
	{ D "--- EDIT body\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n",
	  "line 7: '--- END' missing for the EDIT section opened at line 2" },
	{ D "--- EDIT body\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n" D,
	  "line 8: '--- END' missing for the EDIT section opened at line 2" },
	/* section headers */
	{ D "--- BLOCK\nx;\n--- END\n", "line 2: '--- BLOCK' needs a block name" },
	{ D "--- EDIT   \n--- END\n", "line 2: '--- EDIT' needs a block name" },
	{ D "--- BLOCK body tile\nx;\n--- END\n", "line 2: '--- BLOCK' takes one block name" },
	{ D "--- BLOCK body\nx;\n--- END\n--- EDIT body\n<<<<<<< SEARCH\nx\n=======\ny\n"
	    ">>>>>>> REPLACE\n--- END\n",
	  "line 5: block 'body' appears twice in direction 1" },
	{ D "--- BLOCK tile\nx;\n--- END\n" D "--- BLOCK body\nx;\n--- END\n\n--- BLOCK body\ny;\n"
	    "--- END\n",
	  "line 10: block 'body' appears twice in direction 2" },
	/* EDIT sections */
	{ D "--- EDIT body\n<<<<<<< SEARCH\n=======\nb\n>>>>>>> REPLACE\n--- END\n",
	  "line 3: the SEARCH text is empty" },
	{ D "--- EDIT body\n<<<<<<< SEARCH\n  \n\t\n=======\nb\n>>>>>>> REPLACE\n--- END\n",
	  "line 3: the SEARCH text is empty" },
	{ D "--- EDIT body\n--- END\n", "line 3: the EDIT section opened at line 2 has no SEARCH" },
	{ D "--- EDIT body\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\nand then\n--- END\n",
	  "line 8: only blank lines may stand between the SEARCH/REPLACE pairs of the EDIT "
	  "section opened at line 2" },
	{ D "--- EDIT body\nx\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n--- END\n",
	  "line 3: only blank lines may stand between" },
	{ D "--- EDIT body\n<<<<<<< SEARCH\na\n>>>>>>> REPLACE\n--- END\n",
	  "line 5: '=======' missing for the SEARCH opened at line 3" },
	{ D "--- EDIT body\n<<<<<<< SEARCH\na\n",
	  "line 4: '=======' missing for the SEARCH opened at line 3" },
	{ D "--- EDIT body\n<<<<<<< SEARCH\na\n=======\nb\n--- END\n",
	  "line 7: '>>>>>>> REPLACE' missing for the SEARCH opened at line 3" },
	{ D "--- EDIT body\n<<<<<<< SEARCH\na\n=======\nb\n=======\nc\n>>>>>>> REPLACE\n--- END\n",
	  "line 7: '>>>>>>> REPLACE' missing for the SEARCH opened at line 3" },
	/* PARENT and TUNABLE */
	{ D "--- BLOCK body\nx;\n--- END\nPARENT: r01-v002\n",
	  "line 5: PARENT must come before the direction's first section" },
	{ D "--- BLOCK body\nx;\n--- END\nTUNABLE: TM = 1, 2\n",
	  "line 5: TUNABLE must come before the direction's first section" },
	{ D "PARENT: r01-v002\nPARENT: r01-v003\n", "line 3: a second PARENT in direction 1" },
	{ D "PARENT: r01 v002\n", "line 2: PARENT takes one id" },
	{ D "PARENT:\n", "line 2: PARENT takes one id" },
	{ D "PARENT: r01.v002\n", "line 2: PARENT takes one id" },
	{ D "TUNABLE: TM 1, 2\n", "line 2: TUNABLE TM: '=' expected after the name" },
	{ D "TUNABLE: = 1, 2\n", "line 2: TUNABLE needs a C identifier" },
	{ D "TUNABLE: 4TM = 1, 2\n", "line 2: TUNABLE needs a C identifier" },
	{ D "TUNABLE: T-M = 1, 2\n", "line 2: TUNABLE T: '=' expected after the name" },
	{ D "TUNABLE: TM = 1, x\n", "line 2: TUNABLE TM: value 2 is not a decimal integer" },
	{ D "TUNABLE: TM = 1, 2,\n", "line 2: TUNABLE TM: value 3 is not a decimal integer" },
	{ D "TUNABLE: TM =\n", "line 2: TUNABLE TM: value 1 is not a decimal integer" },
	{ D "TUNABLE: TM = 4u, 8\n", "line 2: TUNABLE TM: value 1 is not a decimal integer" },
	{ D "TUNABLE: TM = 0x10, 8\n", "line 2: TUNABLE TM: value 1 is not a decimal integer" },
	{ D "TUNABLE: TM = 1, 9223372036854775808\n",
	  "line 2: TUNABLE TM: value 2 is not a decimal integer" },
	{ D "TUNABLE: TM = 1 2\n", "line 2: TUNABLE TM: ',' expected after value 1" },
	{ D "TUNABLE: TM = [1, 2]\n", "line 2: TUNABLE TM: value 1 is not a decimal integer" },
	{ D "TUNABLE: TM = 1, 2, 1\n", "line 2: TUNABLE TM: value 1 is given twice" },
	{ D "TUNABLE: TM = 4\n", "line 2: TUNABLE TM needs at least 2 values" },
	{ D "TUNABLE: TM = 1, 2\nTUNABLE: TM = 4, 8\n",
	  "line 3: TUNABLE TM is declared twice in direction 1" },
	/* fences */
	{ D "--- BLOCK body\n```c\nx;\n--- END\n", "line 3: the BLOCK body opens a ``` fence" },
	{ D "--- BLOCK body\n```c\n--- END\n", "line 3: the BLOCK body opens a ``` fence" },
	{ D "--- BLOCK body\nx;\n```\n\n--- END\n",
	  "line 4: the BLOCK body ends with a ``` fence" },
};

TEST(parse_error_table)
{
	for (size_t i = 0; i < ARRAY_SIZE(parse_errors); i++) {
		struct answer a = { 0 };
		char msg[512] = "";
		int rc = answer_parse(parse_errors[i].text, 4, &a, msg, sizeof(msg));

		CHECK(rc == KERR_PARSE);
		CHECK(a.n == 0 && a.d == NULL);
		CHECK_CONTAINS(msg, parse_errors[i].err);
		if (rc != KERR_PARSE || !strstr(msg, parse_errors[i].err))
			fprintf(stderr, "  case %zu\n", i);
		answer_release(&a);
	}
}

TEST(too_many_directions)
{
	struct sbuf sb = SBUF_INIT;
	struct answer a = { 0 };
	char msg[512] = "";

	for (int i = 0; i < 7; i++)
		sbuf_addf(&sb, "=== DIRECTION: d%d\n--- BLOCK body\nx;\n--- END\n", i);
	CHECK(answer_parse(sb.buf, 4, &a, msg, sizeof(msg)) == KERR_PARSE);
	CHECK_STR(msg, "the answer has 7 directions; at most 4 were asked for");
	CHECK(answer_parse(sb.buf, 1, &a, msg, sizeof(msg)) == KERR_PARSE);
	CHECK_STR(msg, "the answer has 7 directions; at most 1 was asked for");
	CHECK(answer_parse(sb.buf, 7, &a, msg, sizeof(msg)) == 0);
	CHECK(a.n == 7);
	CHECK(a.n == 7 && a.d[6].line == 25);
	answer_release(&a);
	CHECK(a.n == 0 && a.d == NULL);
	sbuf_release(&sb);
}

TEST(tunable_values_limit)
{
	struct sbuf sb = SBUF_INIT;
	struct answer a = { 0 };
	char msg[512] = "";

	sbuf_adds(&sb, "=== DIRECTION: d\nTUNABLE: X = 0");
	for (int i = 1; i < 64; i++)
		sbuf_addf(&sb, ", %d", i);
	sbuf_adds(&sb, "\n--- BLOCK body\nx;\n--- END\n");
	CHECK(answer_parse(sb.buf, 1, &a, msg, sizeof(msg)) == 0);
	CHECK(a.n == 1 && a.d[0].tunables[0].nvalues == 64);
	CHECK(a.n == 1 && a.d[0].tunables[0].values[63] == 63);
	answer_release(&a);
	sbuf_reset(&sb);
	sbuf_adds(&sb, "=== DIRECTION: d\nTUNABLE: X = -9223372036854775808");
	for (int i = 1; i < 65; i++)
		sbuf_addf(&sb, ", %d", i);
	sbuf_adds(&sb, "\n--- BLOCK body\nx;\n--- END\n");
	CHECK(answer_parse(sb.buf, 1, &a, msg, sizeof(msg)) == KERR_PARSE);
	CHECK_STR(msg, "line 2: TUNABLE X has more than 64 values");
	sbuf_release(&sb);
}

/* --- apply errors ----------------------------------------------------------- */

static const struct err_case apply_errors[] = {
	{ D "--- BLOCK foo\nx;\n--- END\n",
	  "block 'foo' is not a block of the kernel (blocks: tile, body)" },
	{ D "--- BLOCK tile\nx;\n--- END\n--- EDIT Body\n<<<<<<< SEARCH\na\n=======\nb\n"
	    ">>>>>>> REPLACE\n--- END\n",
	  "block 'Body' is not a block of the kernel (blocks: tile, body)" },
	{ D
	  "--- EDIT body\n<<<<<<< SEARCH\n\ta[i] += 3.0f;\n=======\nb\n>>>>>>> REPLACE\n--- END\n",
	  "EDIT of block 'body', edit 1 (answer line 3): the SEARCH text is not in the block" },
	/* the text is in the other block */
	{ D "--- EDIT body\n<<<<<<< SEARCH\n\tconst int i = get_global_id(0) * TM;\n=======\nx\n"
	    ">>>>>>> REPLACE\n--- END\n",
	  "EDIT of block 'body', edit 1 (answer line 3): the SEARCH text is not in the block" },
	{ D "--- EDIT body\n<<<<<<< SEARCH\n.0f;\n=======\n.5f;\n>>>>>>> REPLACE\n--- END\n",
	  "EDIT of block 'body', edit 1 (answer line 3): the SEARCH text matches 2 times; it "
	  "must match exactly once" },
	{ D "--- EDIT body\n<<<<<<< SEARCH\n\ta[i] += 1.0f;\n=======\n\ta[i] += 2.0f;\n"
	    ">>>>>>> REPLACE\n<<<<<<< SEARCH\n\ta[i] += 1.0f;\n=======\nb\n>>>>>>> REPLACE\n"
	    "--- END\n",
	  "EDIT of block 'body', edit 2 (answer line 8): the SEARCH text is not in the block "
	  "(as the edits before it left it)" },
	{ D "--- BLOCK body\n\tx;\n\t// EVOLVE-BLOCK-END\n\t// EVOLVE-BLOCK-START body\n\ty;\n--- "
	    "END\n",
	  "BLOCK 'body' contains an EVOLVE-BLOCK marker: code outside the blocks cannot change" },
	{ D "--- BLOCK tile\n/* EVOLVE-BLOCK-START */\n--- END\n",
	  "BLOCK 'tile' contains an EVOLVE-BLOCK marker" },
	{ D "--- EDIT body\n<<<<<<< SEARCH\n\ta[i] += 1.0f;\n=======\n\t// EVOLVE-BLOCK-END\n"
	    ">>>>>>> REPLACE\n--- END\n",
	  "EDIT of block 'body', edit 1 (answer line 3): the REPLACE text contains an "
	  "EVOLVE-BLOCK marker" },
	/* tunables */
	{ D "TUNABLE: WX = 4, 8\n--- BLOCK body\nx;\n--- END\n",
	  "TUNABLE WX: the blocks have no '#define WX' line" },
	{ D "TUNABLE: TM = 1, 2, 8\n--- BLOCK body\nx;\n--- END\n",
	  "TUNABLE TM: its #define has value 4, not one of 1, 2, 8" },
	{ D "TUNABLE: TM = 1, 2, 4, 8\n--- BLOCK body\n#define TM 8\nx;\n--- END\n",
	  "TUNABLE TM: the blocks have 2 '#define TM' lines; it needs exactly one" },
	{ D "TUNABLE: TM = 1, 2, 4, 8\n--- BLOCK tile\n#define TM (2 * 2)\n--- END\n",
	  "TUNABLE TM: its #define has value '(2 * 2)', not a decimal integer" },
	{ D "TUNABLE: TM = 1, 2, 4, 8\n--- BLOCK tile\n#define TM(x) (x)\n--- END\n",
	  "TUNABLE TM: the blocks have no '#define TM' line" },
	{ D "TUNABLE: TM = 1, 2\n--- BLOCK tile\n#define TM -2\n--- END\n",
	  "TUNABLE TM: its #define has value -2, not one of 1, 2" },
};

TEST(apply_error_table)
{
	for (size_t i = 0; i < ARRAY_SIZE(apply_errors); i++) {
		struct answer a = { 0 };
		char msg[512] = "";
		char *got = NULL;
		int rc = answer_parse(apply_errors[i].text, 4, &a, msg, sizeof(msg));

		CHECK(rc == 0 && a.n == 1);
		if (a.n == 1)
			got = answer_apply(&a.d[0], tmpl, START, END, msg, sizeof(msg));
		CHECK(got == NULL);
		CHECK_CONTAINS(msg, apply_errors[i].err);
		if (rc || got || !strstr(msg, apply_errors[i].err))
			fprintf(stderr, "  case %zu\n", i);
		free(got);
		answer_release(&a);
	}
}

/* --- what answer_apply keeps ------------------------------------------------ */

TEST(edit_keeps_bytes)
{
	/* a body in column 0 under an indented marker: an EDIT leaves it there */
	static const char src[] =
		"{\n\t// EVOLVE-BLOCK-START x\nfoo();\nbar();\n\t// EVOLVE-BLOCK-END\n}\n";
	char msg[512] = "";
	char *got =
		apply_one(D "--- EDIT x\n<<<<<<< SEARCH\nfoo();\n=======\nbaz();\n>>>>>>> REPLACE\n"
			    "--- END\n",
			  src, msg, sizeof(msg));

	CHECK_STR(got, "{\n\t// EVOLVE-BLOCK-START x\nbaz();\nbar();\n\t// EVOLVE-BLOCK-END\n}\n");
	free(got);
	/* deleting a whole body, and a BLOCK that empties one */
	got = apply_one(D "--- EDIT x\n<<<<<<< SEARCH\nfoo();\nbar();\n=======\n>>>>>>> REPLACE\n"
			  "--- END\n",
			src, msg, sizeof(msg));
	CHECK_STR(got, "{\n\t// EVOLVE-BLOCK-START x\n\t// EVOLVE-BLOCK-END\n}\n");
	free(got);
	got = apply_one(D "--- BLOCK x\n--- END\n", src, msg, sizeof(msg));
	CHECK_STR(got, "{\n\t// EVOLVE-BLOCK-START x\n\t// EVOLVE-BLOCK-END\n}\n");
	free(got);
	/* a parent without blocks */
	got = apply_one(D "--- BLOCK x\ny;\n--- END\n", "int x;\n", msg, sizeof(msg));
	CHECK(got == NULL);
	CHECK_CONTAINS(msg, "the parent's blocks: no EVOLVE-BLOCK-START marker");
	free(got);
}

/* --- answer_set_define ------------------------------------------------------ */

TEST(set_define)
{
	static const char two[] = "#define TM 2\n"
				  "// EVOLVE-BLOCK-START a\n"
				  "  #  define  TM\t16   /* rows */\n"
				  "// EVOLVE-BLOCK-END\n"
				  "// EVOLVE-BLOCK-START b\n"
				  "#define TMX 3\n"
				  "#define EMPTY\n"
				  "#define TWICE 1\n"
				  "#define TWICE 2\n"
				  "// EVOLVE-BLOCK-END\n";
	char msg[512] = "";
	char *got = answer_set_define(tmpl, START, END, "TM", 8, msg, sizeof(msg));
	char *want = replace_once(tmpl, "#define TM 4 //", "#define TM 8 //");

	CHECK_STR(got, want);
	free(got);
	free(want);
	/* only the line inside the blocks, and the rest of the line kept */
	got = answer_set_define(two, START, END, "TM", -1, msg, sizeof(msg));
	want = replace_once(two, "TM\t16   /*", "TM\t-1   /*");
	CHECK_STR(got, want);
	free(got);
	free(want);
	got = answer_set_define(two, START, END, "EMPTY", 4, msg, sizeof(msg));
	want = replace_once(two, "#define EMPTY\n", "#define EMPTY 4\n");
	CHECK_STR(got, want);
	free(got);
	free(want);
	got = answer_set_define(two, START, END, "TWICE", 4, msg, sizeof(msg));
	CHECK(got == NULL);
	CHECK_CONTAINS(msg, "2 '#define TWICE' lines in the blocks");
	free(got);
	got = answer_set_define(two, START, END, "WX", 4, msg, sizeof(msg));
	CHECK(got == NULL);
	CHECK_CONTAINS(msg, "0 '#define WX' lines in the blocks");
	free(got);
	got = answer_set_define(two, START, END, "T", 4, msg, sizeof(msg));
	CHECK(got == NULL);
	free(got);
	/* reading one back: only a single line inside the blocks with an integer */
	{
		int64_t v = 0;

		CHECK(answer_get_define(two, START, END, "TM", &v) == 1 && v == 16);
		CHECK(answer_get_define(two, START, END, "TMX", &v) == 1 && v == 3);
		CHECK(answer_get_define(two, START, END, "EMPTY", &v) == 0);
		CHECK(answer_get_define(two, START, END, "TWICE", &v) == 0);
		CHECK(answer_get_define(two, START, END, "WX", &v) == 0);
		CHECK(answer_get_define("no blocks\n", START, END, "TM", &v) == 0);
	}
}

/* --- truncated and damaged answers ------------------------------------------ */

/* Parses text, and applies what parses; nothing may crash or leak. */
static void parse_any(const char *text, size_t *ok, size_t *bad)
{
	struct answer a = { 0 };
	char msg[512] = "";
	int rc = answer_parse(text, 3, &a, msg, sizeof(msg));

	CHECK(rc == 0 || rc == KERR_PARSE);
	if (rc) {
		CHECK(a.n == 0 && msg[0]);
		++*bad;
		return;
	}
	++*ok;
	for (size_t i = 0; i < a.n; i++) {
		char *got = answer_apply(&a.d[i], tmpl, START, END, msg, sizeof(msg));

		CHECK(a.d[i].rationale[0] && a.d[i].nparts > 0);
		free(got);
	}
	answer_release(&a);
}

TEST(truncated)
{
	char *text = three_text(), *t2 = text ? crlf(text) : NULL;
	size_t ok = 0, bad = 0;

	CHECK(t2 != NULL);
	for (int pass = 0; t2 && pass < 2; pass++) {
		const char *src = pass ? t2 : text;
		size_t len = strlen(src);
		char *buf = xmalloc(len + 1);

		for (size_t cut = 0; cut <= len; cut++) {
			memcpy(buf, src, cut);
			buf[cut] = '\0';
			parse_any(buf, &ok, &bad);
		}
		/* every byte in turn replaced by a character the format gives a meaning */
		for (size_t at = 0; at < len; at++) {
			static const char subst[] = "\n-=<>`:,\r ";

			memcpy(buf, src, len + 1);
			for (size_t k = 0; k < sizeof(subst) - 1; k++) {
				buf[at] = subst[k];
				parse_any(buf, &ok, &bad);
			}
		}
		free(buf);
	}
	/* the whole answer parses; most of its prefixes do not */
	CHECK(ok > 0 && bad > 0);
	free(t2);
	free(text);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test-answer MATMUL_CL\n");
		return 2;
	}
	matmul_path = argv[1];
	RUN(matmul_block);
	RUN(matmul_edit);
	RUN(three_directions);
	RUN(crlf);
	RUN(fences);
	RUN(parse_error_table);
	RUN(too_many_directions);
	RUN(tunable_values_limit);
	RUN(apply_error_table);
	RUN(edit_keeps_bytes);
	RUN(set_define);
	RUN(truncated);
	return test_summary();
}
