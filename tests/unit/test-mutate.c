#include "mutate.h"
#include "err.h"
#include "sbuf.h"
#include "test.h"
#include "xalloc.h"
#include "arraysize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define START "EVOLVE-BLOCK-START"
#define END   "EVOLVE-BLOCK-END"

/* --- blocks_find ------------------------------------------------------------ */

struct find_case {
	const char *src;
	const char *names; /* the blocks' names joined by ',', NULL when an error is expected */
	const char *err;   /* a substring of the message */
};

static const struct find_case find_cases[] = {
	/* found */
	{ "x\n// EVOLVE-BLOCK-START tile\nbody\n// EVOLVE-BLOCK-END\ny\n", "tile", NULL },
	{ "// EVOLVE-BLOCK-START\na\n// EVOLVE-BLOCK-END\n"
	  "// EVOLVE-BLOCK-START\nb\n// EVOLVE-BLOCK-END\n",
	  "0,1", NULL },
	{ "// EVOLVE-BLOCK-START a\n// EVOLVE-BLOCK-END\n"
	  "// EVOLVE-BLOCK-START\n// EVOLVE-BLOCK-END\n"
	  "// EVOLVE-BLOCK-START c\n// EVOLVE-BLOCK-END\n",
	  "a,1,c", NULL },
	{ "/* EVOLVE-BLOCK-START tile */\na\n/* EVOLVE-BLOCK-END */\n"
	  "# EVOLVE-BLOCK-START host\nb\n# EVOLVE-BLOCK-END\n"
	  "-- EVOLVE-BLOCK-START lua\nc\n-- EVOLVE-BLOCK-END\n"
	  "x = 1; /*EVOLVE-BLOCK-START*/\nd\n/*EVOLVE-BLOCK-END*/ y = 2;\n",
	  "tile,host,lua,3", NULL },
	{ "\t// EVOLVE-BLOCK-START   spaced name  \r\nx\r\n\t// EVOLVE-BLOCK-END\r\n",
	  "spaced name", NULL },
	{ "// EVOLVE-BLOCK-START a\n// EVOLVE-BLOCK-END", "a", NULL },
	/* errors */
	{ "x\n// EVOLVE-BLOCK-END\n", NULL, "line 2: EVOLVE-BLOCK-END without a start" },
	{ "// EVOLVE-BLOCK-START a\n// EVOLVE-BLOCK-END\n// EVOLVE-BLOCK-END\n", NULL,
	  "line 3: EVOLVE-BLOCK-END without a start" },
	{ "x\n// EVOLVE-BLOCK-START tile\ny\n", NULL, "line 2: block 'tile' is never closed" },
	{ "// EVOLVE-BLOCK-START\ny", NULL, "line 1: block '0' is never closed" },
	{ "// EVOLVE-BLOCK-START a\nx\n// EVOLVE-BLOCK-START b\n// EVOLVE-BLOCK-END\n", NULL,
	  "line 3: start marker inside block 'a' opened at line 1" },
	{ "// EVOLVE-BLOCK-START a\n// EVOLVE-BLOCK-END\n\n// EVOLVE-BLOCK-START a\n"
	  "// EVOLVE-BLOCK-END\n",
	  NULL, "line 4: duplicate block name 'a' (first at line 1)" },
	{ "// EVOLVE-BLOCK-START 1\n// EVOLVE-BLOCK-END\n// EVOLVE-BLOCK-START\n"
	  "// EVOLVE-BLOCK-END\n",
	  NULL, "line 3: duplicate block name '1' (first at line 1)" },
	{ "int x;\n", NULL, "no EVOLVE-BLOCK-START marker" },
	{ "", NULL, "no EVOLVE-BLOCK-START marker" },
};

TEST(find_table)
{
	for (size_t i = 0; i < ARRAY_SIZE(find_cases); i++) {
		const struct find_case *c = &find_cases[i];
		struct blocks bl = { 0 };
		char msg[256] = "";
		char names[256] = "";
		int rc = blocks_find(c->src, START, END, &bl, msg, sizeof(msg));

		if (!c->names) {
			CHECK(rc == KERR_PARSE);
			CHECK_CONTAINS(msg, c->err);
			CHECK(bl.n == 0 && bl.b == NULL);
			if (rc != KERR_PARSE)
				fprintf(stderr, "  case %zu: %s\n", i, c->src);
			continue;
		}
		CHECK(rc == 0);
		if (rc)
			fprintf(stderr, "  case %zu: %s\n", i, msg);
		for (size_t b = 0; b < bl.n; b++) {
			strlcat(names, b ? "," : "", sizeof(names));
			strlcat(names, bl.b[b].name, sizeof(names));
		}
		CHECK_STR(names, c->names);
		blocks_release(&bl);
	}
}

/*
 * 100,000 blocks (a 4 MiB source from an untrusted proposer may hold as
 * many): all found, named by their index, verified against themselves; a
 * duplicate name at the end is still reported with its first line.  Each
 * name was looked up in a list walked per block (18.7 s for this).
 */
TEST(find_many_blocks)
{
	enum { N = 100000 };
	struct sbuf s = SBUF_INIT;
	struct blocks bl;
	char msg[256] = "", *want;
	int named = 1;

	for (size_t i = 0; i < N; i++)
		sbuf_adds(&s, "// EVOLVE-BLOCK-START\nx\n// EVOLVE-BLOCK-END\n");
	CHECK(blocks_find(s.buf, START, END, &bl, msg, sizeof(msg)) == 0);
	CHECK(bl.n == N);
	for (size_t i = 0; i < bl.n; i++) {
		char want_name[24];

		snprintf(want_name, sizeof(want_name), "%zu", i);
		named = named && !strcmp(bl.b[i].name, want_name) && bl.b[i].line == 3 * i + 1;
	}
	CHECK(named);
	CHECK(blocks_verify(s.buf, &bl, s.buf, START, END, msg, sizeof(msg)) == 0);
	blocks_release(&bl);
	sbuf_adds(&s, "// EVOLVE-BLOCK-START 7\n// EVOLVE-BLOCK-END\n");
	want = xasprintf("line %d: duplicate block name '7' (first at line 22)", 3 * N + 1);
	CHECK(blocks_find(s.buf, START, END, &bl, msg, sizeof(msg)) == KERR_PARSE);
	CHECK(!strcmp(msg, want));
	free(want);
	sbuf_release(&s);
}

TEST(find_offsets)
{
	const char *src = "int a;\n"
			  "void f(void)\n"
			  "{\n"
			  "\t// EVOLVE-BLOCK-START body\n"
			  "\tint x = 1;\n"
			  "\tx++;\n"
			  "\t// EVOLVE-BLOCK-END\n"
			  "}\n"
			  "  /* EVOLVE-BLOCK-START */\n"
			  "  /* EVOLVE-BLOCK-END */\n";
	struct blocks bl;
	char msg[256], *body;

	CHECK(blocks_find(src, START, END, &bl, msg, sizeof(msg)) == 0);
	CHECK(bl.n == 2);
	if (bl.n != 2)
		return;
	CHECK_STR(bl.b[0].name, "body");
	CHECK(bl.b[0].line == 4);
	CHECK_STR(bl.b[0].indent, "\t");
	body = block_body(src, &bl, 0);
	CHECK_STR(body, "\tint x = 1;\n\tx++;\n");
	free(body);
	CHECK_STR(bl.b[1].name, "1");
	CHECK(bl.b[1].line == 9);
	CHECK_STR(bl.b[1].indent, "  ");
	CHECK(bl.b[1].start == bl.b[1].end);
	body = block_body(src, &bl, 1);
	CHECK_STR(body, "");
	free(body);
	blocks_release(&bl);
	blocks_release(&bl); /* a released set stays empty */
	CHECK(bl.n == 0);
}

TEST(find_custom_markers)
{
	const char *src = "a\n;; @@begin k\nx\n;; @@end\nb\n";
	struct blocks bl;
	char msg[256] = "";

	CHECK(blocks_find(src, "@@begin", "@@end", &bl, msg, sizeof(msg)) == 0);
	CHECK(bl.n == 1 && !strcmp(bl.b[0].name, "k"));
	blocks_release(&bl);
	CHECK(blocks_find(src, START, END, &bl, msg, sizeof(msg)) == KERR_PARSE);
	CHECK_CONTAINS(msg, "no EVOLVE-BLOCK-START marker");
	CHECK(blocks_find(src, "", "@@end", &bl, msg, sizeof(msg)) == KERR_INVALID);
}

/* --- blocks_inject ---------------------------------------------------------- */

static const char inject_tmpl[] = "int a;\n"
				  "void f(void)\n"
				  "{\n"
				  "\t// EVOLVE-BLOCK-START body\n"
				  "\tint x = 1;\n"
				  "\t// EVOLVE-BLOCK-END\n"
				  "}\n"
				  "// EVOLVE-BLOCK-START defs\n"
				  "#define TM 4\n"
				  "// EVOLVE-BLOCK-END\n";

#define INJECT_HEAD "int a;\nvoid f(void)\n{\n\t// EVOLVE-BLOCK-START body\n"
#define INJECT_MID  "\t// EVOLVE-BLOCK-END\n}\n// EVOLVE-BLOCK-START defs\n"
#define INJECT_TAIL "// EVOLVE-BLOCK-END\n"

struct inject_case {
	const char *name, *body;
	const char *want; /* the whole result */
};

static const struct inject_case inject_cases[] = {
	/* a body written without indentation gets the marker's */
	{ "body", "int y = 2;\nif (y)\n    y++;\n",
	  INJECT_HEAD "\tint y = 2;\n\tif (y)\n\t    y++;\n" INJECT_MID
		      "#define TM 4\n" INJECT_TAIL },
	/* blank lines stay blank */
	{ "body", "a();\n   \nb();\n",
	  INJECT_HEAD "\ta();\n\n\tb();\n" INJECT_MID "#define TM 4\n" INJECT_TAIL },
	/* already indented (a directive in column 0 does not count) */
	{ "body", "\tint y;\n#pragma unroll\n\t\ty++;\n",
	  INJECT_HEAD "\tint y;\n#pragma unroll\n\t\ty++;\n" INJECT_MID
		      "#define TM 4\n" INJECT_TAIL },
	/* a last line without its newline gets one, so the end marker keeps its line */
	{ "body", "\tint z;", INJECT_HEAD "\tint z;\n" INJECT_MID "#define TM 4\n" INJECT_TAIL },
	{ "body", "", INJECT_HEAD INJECT_MID "#define TM 4\n" INJECT_TAIL },
	/* a block in column 0 takes the body as given */
	{ "defs", "  #define TM 8\n#define WX 2",
	  INJECT_HEAD "\tint x = 1;\n" INJECT_MID "  #define TM 8\n#define WX 2\n" INJECT_TAIL },
};

TEST(inject_table)
{
	struct blocks bl;
	char msg[256] = "";

	CHECK(blocks_find(inject_tmpl, START, END, &bl, msg, sizeof(msg)) == 0);
	for (size_t i = 0; i < ARRAY_SIZE(inject_cases); i++) {
		const char *names[] = { inject_cases[i].name },
			   *bodies[] = { inject_cases[i].body };
		char *got = blocks_inject(inject_tmpl, &bl, names, bodies, 1, msg, sizeof(msg));

		CHECK_STR(got, inject_cases[i].want);
		CHECK(got &&
		      blocks_verify(inject_tmpl, &bl, got, START, END, msg, sizeof(msg)) == 0);
		free(got);
	}
	blocks_release(&bl);
}

TEST(inject_two_and_errors)
{
	const char *names[] = { "defs", "body" }, *bodies[] = { "#define TM 2\n", "g();\n" };
	const char *bad[] = { "body", "nope" }, *twice[] = { "body", "body" };
	struct blocks bl;
	char msg[256] = "", *got;

	CHECK(blocks_find(inject_tmpl, START, END, &bl, msg, sizeof(msg)) == 0);
	got = blocks_inject(inject_tmpl, &bl, names, bodies, 2, msg, sizeof(msg));
	CHECK_STR(got, INJECT_HEAD "\tg();\n" INJECT_MID "#define TM 2\n" INJECT_TAIL);
	free(got);
	got = blocks_inject(inject_tmpl, &bl, names, bodies, 0, msg, sizeof(msg));
	CHECK_STR(got, inject_tmpl);
	free(got);
	CHECK(blocks_inject(inject_tmpl, &bl, bad, bodies, 2, msg, sizeof(msg)) == NULL);
	CHECK_CONTAINS(msg, "no block 'nope' in the template");
	CHECK(blocks_inject(inject_tmpl, &bl, twice, bodies, 2, msg, sizeof(msg)) == NULL);
	CHECK_CONTAINS(msg, "block 'body' is given twice");
	blocks_release(&bl);
}

/* --- blocks_verify ---------------------------------------------------------- */

static const char verify_tmpl[] = "int a;\n"                      /* 1 */
				  "// EVOLVE-BLOCK-START one\n"   /* 2 */
				  "int x = 1;\n"                  /* 3 */
				  "// EVOLVE-BLOCK-END\n"         /* 4 */
				  "int b;\n"                      /* 5 */
				  "// EVOLVE-BLOCK-START two\n"   /* 6 */
				  "int y = 2;\n"                  /* 7 */
				  "// EVOLVE-BLOCK-END\n"         /* 8 */
				  "// EVOLVE-BLOCK-START three\n" /* 9 */
				  "int z = 3;\n"                  /* 10 */
				  "// EVOLVE-BLOCK-END\n"         /* 11 */
				  "int c;\n";                     /* 12 */

struct verify_case {
	const char *src;
	const char *err; /* NULL: accepted; else a substring of the rejection */
};

static const struct verify_case verify_cases[] = {
	{ verify_tmpl, NULL },
	/* new bodies, longer and shorter */
	{ "int a;\n// EVOLVE-BLOCK-START one\nint x = 2;\nx++;\nx++;\n// EVOLVE-BLOCK-END\nint b;\n"
	  "// EVOLVE-BLOCK-START two\n// EVOLVE-BLOCK-END\n// EVOLVE-BLOCK-START three\n"
	  "int z = 3;\n// EVOLVE-BLOCK-END\nint c;\n",
	  NULL },
	/* outside changes: the variant's line, and the template's when it differs */
	{ "int A;\n// EVOLVE-BLOCK-START one\nint x = 1;\n// EVOLVE-BLOCK-END\nint b;\n"
	  "// EVOLVE-BLOCK-START two\nint y = 2;\n// EVOLVE-BLOCK-END\n// EVOLVE-BLOCK-START "
	  "three\n"
	  "int z = 3;\n// EVOLVE-BLOCK-END\nint c;\n",
	  "line 1 outside the blocks differs from the template" },
	{ "int a;\n// EVOLVE-BLOCK-START one\nint x = 1;\nint w;\n// EVOLVE-BLOCK-END\nint b2;\n"
	  "// EVOLVE-BLOCK-START two\nint y = 2;\n// EVOLVE-BLOCK-END\n// EVOLVE-BLOCK-START "
	  "three\n"
	  "int z = 3;\n// EVOLVE-BLOCK-END\nint c;\n",
	  "line 6 outside the blocks differs from the template (template line 5)" },
	{ "int a;\n// EVOLVE-BLOCK-START one\nint x = 1;\n// EVOLVE-BLOCK-END\nint b;\n"
	  "// EVOLVE-BLOCK-START two\nint y = 2;\n// EVOLVE-BLOCK-END\n// EVOLVE-BLOCK-START "
	  "three\n"
	  "int z = 3;\n// EVOLVE-BLOCK-END\nint c;\nint d;\n",
	  "line 13 outside the blocks differs" },
	{ "int a;\n// EVOLVE-BLOCK-START one\nint x = 1;\n// EVOLVE-BLOCK-END\nint b;\n"
	  "// EVOLVE-BLOCK-START two\nint y = 2;\n// EVOLVE-BLOCK-END\n// EVOLVE-BLOCK-START "
	  "three\n"
	  "int z = 3;\n// EVOLVE-BLOCK-END\nint c;",
	  "line 12 outside the blocks differs" },
	/* a marker's own line is outside the blocks */
	{ "int a;\n// EVOLVE-BLOCK-START one\nint x = 1;\n  // EVOLVE-BLOCK-END\nint b;\n"
	  "// EVOLVE-BLOCK-START two\nint y = 2;\n// EVOLVE-BLOCK-END\n// EVOLVE-BLOCK-START "
	  "three\n"
	  "int z = 3;\n// EVOLVE-BLOCK-END\nint c;\n",
	  "line 4 outside the blocks differs" },
	/* removed markers */
	{ "int a;\n// EVOLVE-BLOCK-START one\nint x = 1;\nint b;\n"
	  "// EVOLVE-BLOCK-START two\nint y = 2;\n// EVOLVE-BLOCK-END\n// EVOLVE-BLOCK-START "
	  "three\n"
	  "int z = 3;\n// EVOLVE-BLOCK-END\nint c;\n",
	  "the variant's blocks: line 5: start marker inside block 'one' opened at line 2" },
	{ "int a;\nint x = 1;\nint b;\n"
	  "// EVOLVE-BLOCK-START two\nint y = 2;\n// EVOLVE-BLOCK-END\n// EVOLVE-BLOCK-START "
	  "three\n"
	  "int z = 3;\n// EVOLVE-BLOCK-END\nint c;\n",
	  "the variant has 2 blocks, the template 3" },
	{ "int a;\nint c;\n", "the variant's blocks: no EVOLVE-BLOCK-START marker" },
	/* reordered blocks */
	{ "int a;\n// EVOLVE-BLOCK-START one\nint x = 1;\n// EVOLVE-BLOCK-END\nint b;\n"
	  "// EVOLVE-BLOCK-START three\nint z = 3;\n// EVOLVE-BLOCK-END\n// EVOLVE-BLOCK-START "
	  "two\n"
	  "int y = 2;\n// EVOLVE-BLOCK-END\nint c;\n",
	  "line 6 outside the blocks differs" },
	/* the code between two blocks moved into one */
	{ "int a;\n// EVOLVE-BLOCK-START one\nint x = 1;\nint b;\n// EVOLVE-BLOCK-END\n"
	  "// EVOLVE-BLOCK-START two\nint y = 2;\n// EVOLVE-BLOCK-END\n// EVOLVE-BLOCK-START "
	  "three\n"
	  "int z = 3;\n// EVOLVE-BLOCK-END\nint c;\n",
	  "line 6 outside the blocks differs from the template (template line 5)" },
};

TEST(verify_table)
{
	struct blocks bl;
	char msg[256] = "";

	CHECK(blocks_find(verify_tmpl, START, END, &bl, msg, sizeof(msg)) == 0);
	for (size_t i = 0; i < ARRAY_SIZE(verify_cases); i++) {
		const struct verify_case *c = &verify_cases[i];
		int rc;

		msg[0] = '\0';
		rc = blocks_verify(verify_tmpl, &bl, c->src, START, END, msg, sizeof(msg));
		if (!c->err) {
			CHECK(rc == 0);
		} else {
			CHECK(rc == KERR_INVALID);
			CHECK_CONTAINS(msg, c->err);
		}
		if ((rc == 0) != (c->err == NULL))
			fprintf(stderr, "  case %zu: %s\n", i, msg);
	}
	blocks_release(&bl);
}

TEST(verify_renamed_block)
{
	/* two blocks swapped with their markers: names out of order */
	const char *tmpl = "// EVOLVE-BLOCK-START a\nx\n// EVOLVE-BLOCK-END\n"
			   "// EVOLVE-BLOCK-START b\ny\n// EVOLVE-BLOCK-END\n";
	const char *swapped = "// EVOLVE-BLOCK-START b\ny\n// EVOLVE-BLOCK-END\n"
			      "// EVOLVE-BLOCK-START a\nx\n// EVOLVE-BLOCK-END\n";
	struct blocks bl;
	char msg[256] = "";

	CHECK(blocks_find(tmpl, START, END, &bl, msg, sizeof(msg)) == 0);
	CHECK(blocks_verify(tmpl, &bl, swapped, START, END, msg, sizeof(msg)) == KERR_INVALID);
	CHECK_CONTAINS(msg, "line 1 outside the blocks differs");
	blocks_release(&bl);
}

/* --- variant_hash ----------------------------------------------------------- */

TEST(hash)
{
	char a[65], b[65];

	variant_hash("", "", a);
	CHECK_STR(a, "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d");
	variant_hash("", NULL, b);
	CHECK_STR(b, a);
	variant_hash("__kernel void k() {}", "-DTM=4", a);
	CHECK_STR(a, "f4d10cc0d2c9d9f92a55b5b71c445042058cf9bbfacbd25e8e6a518491332160");
	variant_hash("__kernel void k() {}", "-DTM=8", b);
	CHECK(strcmp(a, b) != 0);
	variant_hash("__kernel void k() { }", "-DTM=4", b);
	CHECK(strcmp(a, b) != 0);
	/* the NUL separates source from options */
	variant_hash("ab", "c", a);
	variant_hash("a", "bc", b);
	CHECK(strcmp(a, b) != 0);
	CHECK(strlen(a) == 64);
}

int main(void)
{
	RUN(find_table);
	RUN(find_many_blocks);
	RUN(find_offsets);
	RUN(find_custom_markers);
	RUN(inject_table);
	RUN(inject_two_and_errors);
	RUN(verify_table);
	RUN(verify_renamed_block);
	RUN(hash);
	return test_summary();
}
