/*
 * test-prompt.c - the proposer's prompts (controller/prompt*.c).
 *
 * The context is tests/data/prompt/context.json, a matmul round, with the
 * template and the blocks taken from examples/matmul/matmul.cl: the test
 * runs with the fixture's path and the template's path as arguments.
 */
#include "prompt.h"
#include "err.h"
#include "fileio.h"
#include "jsonx.h"
#include "mutate.h"
#include "sbuf.h"
#include "test.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *fixture_path, *template_path;

/* A distinctive line of the template outside its block, and one inside it. */
#define OUTSIDE_LINE "// The plan runs three kernels: pack_a, pack_b, then matmul."
#define INSIDE_LINE  "__kernel void pack_a("

/* Lines of the compile log of the failure r03-v002. */
#define LOG_FIRST "input.cl:212:9: error: use of undeclared identifier 'acc16'"
#define LOG_LINE  "input.cl:%d:5: note: in expansion of macro 'STEP_GLOBAL'\n"

static char *slurp(const char *path)
{
	char *text = NULL, msg[256];
	size_t len;

	if (file_read(path, 1 << 22, &text, &len, msg, sizeof(msg))) {
		fprintf(stderr, "%s\n", msg);
		exit(1);
	}
	return text;
}

/* s with its one occurrence of from replaced by to (malloc'd). */
static char *replace(const char *s, const char *from, const char *to)
{
	const char *at = strstr(s, from);
	struct sbuf b = SBUF_INIT;

	if (!at) {
		fprintf(stderr, "'%s' is not in the text\n", from);
		exit(1);
	}
	sbuf_add(&b, s, (size_t)(at - s));
	sbuf_adds(&b, to);
	sbuf_adds(&b, at + strlen(from));
	return sbuf_detach(&b, NULL);
}

static void set_block(json_t *variant, const char *body, const char *from, const char *to)
{
	char *nb = replace(body, from, to);

	json_object_set_new(json_object_get(variant, "blocks"), "0", json_string(nb));
	free(nb);
}

/* The fixture with the template, the blocks, the learnings and the log filled in. */
static json_t *ctx_load(void)
{
	char *fx = slurp(fixture_path), *tmpl = slurp(template_path), *body, msg[256];
	json_t *ctx = json_loads(fx, 0, NULL), *k, *insp;
	struct blocks bl = { 0 };
	struct sbuf b = SBUF_INIT;
	const char *tm = "#define TM 1 ";

	if (!ctx ||
	    blocks_find(tmpl, "EVOLVE-BLOCK-START", "EVOLVE-BLOCK-END", &bl, msg, sizeof(msg))) {
		fprintf(stderr, "fixture: %s\n", ctx ? msg : "not JSON");
		exit(1);
	}
	k = json_object_get(ctx, "kernel");
	json_object_set_new(k, "template", json_string(tmpl));
	body = block_body(tmpl, &bl, 0);
	insp = json_object_get(ctx, "inspirations");
	set_block(json_object_get(ctx, "parent"), body, tm, "#define TM 8 ");
	set_block(json_array_get(insp, 0), body, tm, "#define TM 4 /* r03-v001 */ ");
	set_block(json_array_get(insp, 1), body, tm, "#define TM 2 /* r01-v004 */ ");
	set_block(json_array_get(insp, 2), body, tm, "#define TM 6 /* r00-v007 */ ");

	for (int i = 1; i <= 12; i++)
		sbuf_addf(&b, "- learning line %02d: TM=%d was %s than TM=%d [r0%d-v00%d]\n", i, i,
			  i % 2 ? "faster" : "slower", i + 1, i % 4, i % 9);
	json_object_set_new(ctx, "learnings", json_string(b.buf));
	sbuf_reset(&b);
	sbuf_adds(&b, LOG_FIRST "\n");
	for (int i = 0; i < 120; i++)
		sbuf_addf(&b, LOG_LINE, 300 + i);
	json_object_set_new(json_array_get(json_object_get(ctx, "failures"), 0), "evidence",
			    json_string(b.buf));
	sbuf_release(&b);
	blocks_release(&bl);
	free(body);
	free(tmpl);
	free(fx);
	return ctx;
}

static char *build(json_t *ctx, size_t max, json_t **trimmed, char *msg, size_t n)
{
	struct prompt_opts o = { .max_bytes = max };

	return prompt_build(ctx, &o, trimmed, msg, n);
}

TEST(system_text)
{
	const char *s = prompt_system();

	CHECK_CONTAINS(s, "expert OpenCL kernel engineer");
	CHECK_CONTAINS(s, "checked byte for byte");
	CHECK_CONTAINS(s, "every shape");
	CHECK_CONTAINS(s, "each a different idea");
	CHECK_CONTAINS(s, "=== DIRECTION:");
	CHECK_CONTAINS(s, "PARENT:");
	CHECK_CONTAINS(s, "TUNABLE: TM = 2, 4, 8");
	CHECK_CONTAINS(s, "--- BLOCK params\n");
	CHECK_CONTAINS(s, "--- EDIT body\n<<<<<<< SEARCH\n");
	CHECK_CONTAINS(s, "=======\n");
	CHECK_CONTAINS(s, ">>>>>>> REPLACE\n--- END\n");
	CHECK_CONTAINS(s, "the tuner sweeps");
	CHECK(s == prompt_system());
}

TEST(retry)
{
	char *s = prompt_retry("line 14: '--- END' missing for the BLOCK section opened at line 9");

	CHECK_CONTAINS(s, "could not be used, in whole or in part:\nline 14: '--- END' missing");
	CHECK_CONTAINS(s, "=== DIRECTION:");
	CHECK_CONTAINS(s, "<<<<<<< SEARCH");
	free(s);
}

/* Every part is there when nothing has to go. */
TEST(every_part)
{
	json_t *ctx = ctx_load(), *tr = NULL;
	char msg[512] = "", *s = build(ctx, 1 << 20, &tr, msg, sizeof(msg));
	const char *tmpl =
		json_string_value(json_object_get(json_object_get(ctx, "kernel"), "template"));
	static const char *const want[] = {
		/* the task */
		"## Task\nRound 4, mode exploit.\nExploit: refine the parent below.",
		"Answer with exactly 4 directions",
		"'=== DIRECTION:' line",
		/* the problem */
		"Semantics: C = A * B, row-major fp32, A is MxK, B is KxN\n",
		"- Ap: float, scratch, round_up(M, 48) * K elements\n",
		"- N (int) = N\n",
		"3. matmul: global [round_up(ceil_div(N, TN * VN), WX), round_up(ceil_div(M, TM), "
		"WY)], local [WX, WY]\n",
		"1. pack_a: global [PACK ? K : 1, PACK ? round_up(M, TM) : 1], local size chosen "
		"by "
		"the driver\n",
		"flops = 2*M*N*K; bytes = 4*(M*K + K*N + M*N)\n",
		"- s0: K=1024, M=1024, N=1024 (primary, timed)\n",
		"- s2: K=263, M=257, N=259\n",
		"as -D build options (keep their #ifndef guards)",
		"- TM = 1, 2, 4, 6, 8, 12, 16\n",
		/* the device */
		"Name: pthread-skylake-avx512-AMD EPYC\nVendor: AuthenticAMD; driver: PoCL 5.0\n"
		"Compute units: 2\n",
		"Measured peaks: 241.9 GFLOP/s (fp32 FMA), 38.93 GB/s (memory); ridge point 6.212",
		/* the template */
		"Blocks you may change, in order: 0.\n",
		OUTSIDE_LINE,
		/* the parent */
		"## The parent\nVariant r02-v003 (lineage 2)\n",
		"Parameters: TM=8, VN=16, WX=8\n",
		"Speedup vs the reference: 3.40x\n",
		"  evidence: arithmetic intensity 85.33 flop/byte; ridge point 6.21\n",
		"Block `0`:\n```c\n#ifndef TM\n#define TM 8 ",
		"Hint (compute-bound): raise the useful work per instruction",
		"Hint: the IR has 5 stack spills",
		/* the failures */
		"### r03-v002: compile_error\nRationale: 8x32 register block",
		"Evidence:\n    " LOG_FIRST "\n",
		"### r03-v005: incorrect (wrong_values)\n",
		"more bytes left out]\n",
		/* the learnings, the tuner */
		"## Learnings of the session so far\n- learning line 01:",
		"- learning line 12:",
		"The tuner tried 40 points; its best is r03-v007 (TM=8, VN=16, WX=4) at 3.61x the "
		"reference.\n- TM=8 is 1.3x TM=4 at the same VN\n",
		/* the inspirations, best first */
		"### r03-v001 (lineage 3): 2.95x vs the reference, median 4.1 ms, 65.4 GFLOP/s, "
		"compute-bound\n",
		"#define TM 4 /* r03-v001 */",
		"### r00-v007 (lineage 0): 0.41x vs the reference, median 30.5 ms, latency-bound\n",
		"#define TM 6 /* r00-v007 */",
	};

	CHECK(s != NULL);
	for (size_t i = 0; s && i < sizeof(want) / sizeof(want[0]); i++)
		CHECK_CONTAINS(s, want[i]);
	/* the template whole, and in its fence */
	CHECK(s && tmpl && strstr(s, tmpl));
	CHECK(tr && json_array_size(tr) == 0);
	CHECK(s && !strstr(s, "left out to fit"));
	/* the parts in their order */
	CHECK(s && strstr(s, "## Task") < strstr(s, "## The problem") &&
	      strstr(s, "## The problem") < strstr(s, "## The device") &&
	      strstr(s, "## The device") < strstr(s, "## The template") &&
	      strstr(s, "## The template") < strstr(s, "## The parent") &&
	      strstr(s, "## The parent") < strstr(s, "## Failures") &&
	      strstr(s, "## Failures") < strstr(s, "## Learnings") &&
	      strstr(s, "## Learnings") < strstr(s, "## The tuner") &&
	      strstr(s, "## The tuner") < strstr(s, "## Inspirations") &&
	      strstr(s, "r03-v001 (lineage 3)") < strstr(s, "r01-v004 (lineage 1)") &&
	      strstr(s, "r01-v004 (lineage 1)") < strstr(s, "r00-v007 (lineage 0)"));
	free(s);
	json_decref(tr);
	json_decref(ctx);
}

/* The same context gives the same bytes, whatever the order of its keys. */
TEST(deterministic)
{
	json_t *ctx = ctx_load(), *resorted;
	char msg[256], *a = build(ctx, 1 << 20, NULL, msg, sizeof(msg));
	char *b = build(ctx, 1 << 20, NULL, msg, sizeof(msg)), *dump = jx_dump(ctx), *c;
	char *d = build(ctx, 30000, NULL, msg, sizeof(msg)), *e;

	/* jx_dump sorts every object's keys: the reloaded document has another order */
	resorted = json_loads(dump, 0, NULL);
	c = build(resorted, 1 << 20, NULL, msg, sizeof(msg));
	e = build(resorted, 30000, NULL, msg, sizeof(msg));
	CHECK(a && b && c && d && e);
	CHECK(a && b && !strcmp(a, b));
	CHECK(a && c && !strcmp(a, c));
	CHECK(d && e && !strcmp(d, e));
	CHECK(a && d && strcmp(a, d));
	free(a);
	free(b);
	free(c);
	free(d);
	free(e);
	free(dump);
	json_decref(resorted);
	json_decref(ctx);
}

static const char *const trim_order[] = { "inspirations", "template's blocks", "tuner",
					  "learnings",    "failures",          "device" };

/* The names in tr are the first n of trim_order, in that order. */
static int trimmed_prefix(json_t *tr, size_t *n)
{
	*n = json_array_size(tr);
	if (*n > sizeof(trim_order) / sizeof(trim_order[0]))
		return 0;
	for (size_t i = 0; i < *n; i++)
		if (!json_is_string(json_array_get(tr, i)) ||
		    strcmp(json_string_value(json_array_get(tr, i)), trim_order[i]))
			return 0;
	return 1;
}

/* The noun of the note that each trimmed part leaves, in trim_order's order. */
static const char *const trim_nouns[] = { "inspiration", "the template's block",
					  "tuner note",  "older learning line",
					  "failure",     "the device's detail" };

/* s holds a trim note about noun, in the singular or the plural. */
static int noted(const char *s, const char *noun)
{
	char one[128], many[128];

	snprintf(one, sizeof(one), "%s left out to fit the prompt limit]\n", noun);
	snprintf(many, sizeof(many), "%ss left out to fit the prompt limit]\n", noun);
	return strstr(s, one) || strstr(s, many);
}

/* From the whole prompt down to the fixed parts, a few bytes at a time. */
TEST(trim_order)
{
	json_t *ctx = ctx_load(), *tr = NULL;
	char msg[512], *full = build(ctx, 1 << 20, NULL, msg, sizeof(msg));
	size_t len = full ? strlen(full) : 0, max, seen = 0, n;
	int failed_once = 0, checked_first = 0, saw_lean = 0, saw_dropped = 0, saw_elided = 0;

	CHECK(full != NULL);
	for (max = len; full && max > 1000; max -= 37) {
		char *s = build(ctx, max, &tr, msg, sizeof(msg));

		if (!s) {
			CHECK(tr == NULL);
			CHECK_CONTAINS(msg, "over the limit of");
			CHECK_CONTAINS(msg, "template ");
			CHECK_CONTAINS(msg, "parent ");
			failed_once = 1;
			continue;
		}
		CHECK(!failed_once); /* once too small, always too small */
		CHECK(strlen(s) <= max);
		CHECK(trimmed_prefix(tr, &n));
		CHECK(n >= seen); /* trimming only grows as the limit shrinks */
		seen = n;
		for (size_t i = 0; i < n; i++)
			CHECK(noted(s, trim_nouns[i]));
		CHECK_CONTAINS(s, "## Task\nRound 4");
		CHECK_CONTAINS(s, "Variant r02-v003 (lineage 2)");
		CHECK_CONTAINS(s, OUTSIDE_LINE);
		CHECK_CONTAINS(s, INSIDE_LINE);
		CHECK_CONTAINS(s, "#define TM 8 ");
		if (n == 1 && !checked_first) {
			/* the last inspiration goes first */
			checked_first = 1;
			CHECK_CONTAINS(s, "[1 inspiration left out to fit the prompt limit]\n");
			CHECK(!strstr(s, "r00-v007"));
			CHECK_CONTAINS(s, "r03-v001 (lineage 3)");
		}
		if (n == 4) {
			/* the learnings keep their newest lines */
			CHECK_CONTAINS(s, "older learning line");
			CHECK(!strstr(s, "learning line 01"));
			if (strstr(s, "- learning line"))
				CHECK_CONTAINS(s, "learning line 12");
		}
		if (strstr(s, "[the evidence of 2 failures left out")) {
			/* their headings and rationales stay */
			saw_lean = 1;
			CHECK(!strstr(s, LOG_FIRST));
			CHECK_CONTAINS(s, "### r03-v002: compile_error\nRationale: 8x32");
		}
		if (strstr(s, "[2 failures left out")) {
			/* the last resort, after the device's details */
			saw_dropped = 1;
			CHECK(n == 6);
			CHECK(!strstr(s, "r03-v002"));
		}
		if (n >= 2) {
			/* the template's block left out, the parent's kept: the
			 * template's default TM only in the template's block */
			saw_elided = 1;
			CHECK_CONTAINS(s,
				       "EVOLVE-BLOCK-START\n[this block's text is left out to fit "
				       "the prompt limit: the parent below shows the block");
			CHECK(!strstr(s, "#define TM 1 "));
			CHECK_CONTAINS(s, "EVOLVE-BLOCK-END");
		}
		json_decref(tr);
		free(s);
	}
	CHECK(seen == 6);
	CHECK(saw_elided);
	CHECK(failed_once);
	CHECK(checked_first);
	CHECK(saw_lean);
	CHECK(saw_dropped);
	free(full);
	json_decref(ctx);
}

TEST(too_small)
{
	json_t *ctx = ctx_load(), *before = json_array(), *tr = before;
	char msg[512] = "", *s = build(ctx, 2000, &tr, msg, sizeof(msg));

	CHECK(s == NULL);
	CHECK(tr == NULL); /* overwritten, not released: it is the caller's */
	CHECK_CONTAINS(msg, "prompt: ");
	CHECK_CONTAINS(msg, "over the limit of 2000");
	CHECK_CONTAINS(msg, "task ");
	CHECK_CONTAINS(msg, "template ");
	printf("too small: %s\n", msg);
	free(s);
	json_decref(before);
	json_decref(ctx);
}

/* The default limit, 60000 bytes, trims this context's inspirations. */
TEST(default_limit)
{
	json_t *ctx = ctx_load(), *tr = NULL;
	char msg[256], *s = prompt_build(ctx, NULL, &tr, msg, sizeof(msg));

	CHECK(s && strlen(s) <= 60000);
	CHECK(tr && json_array_size(tr) >= 1);
	CHECK_STR(json_string_value(json_array_get(tr, 0)), "inspirations");
	free(s);
	json_decref(tr);
	json_decref(ctx);
}

TEST(no_parent)
{
	json_t *ctx = ctx_load();
	char msg[256], *s;

	json_object_set_new(ctx, "parent", json_null());
	json_object_set_new(ctx, "mode", json_string("explore"));
	json_object_set_new(ctx, "directions", json_integer(1));
	json_object_set_new(ctx, "device", json_null());
	s = build(ctx, 1 << 20, NULL, msg, sizeof(msg));
	CHECK_CONTAINS(s, "Explore: each direction tries a new structure");
	CHECK_CONTAINS(s, "exactly 1 direction, each");
	CHECK_CONTAINS(s, "There is no parent yet");
	CHECK_CONTAINS(s, "## The parent\nNone yet");
	CHECK(s && !strstr(s, "## The device"));
	free(s);
	json_decref(ctx);
}

/* Several shape buckets: the other timed shapes are named as buckets. */
TEST(shape_buckets)
{
	json_t *ctx = ctx_load();
	json_t *shapes = json_object_get(json_object_get(ctx, "kernel"), "shapes");
	char msg[256], *s;

	json_object_set_new(json_array_get(shapes, 2), "bucket", json_true());
	s = build(ctx, 1 << 20, NULL, msg, sizeof(msg));
	CHECK_CONTAINS(s, "- s0: K=1024, M=1024, N=1024 (primary, timed)\n");
	CHECK_CONTAINS(s, "- s2: K=263, M=257, N=259 (timed too: a shape bucket; the search ranks "
			  "on the geometric mean of the speedups at every timed shape)\n");
	free(s);
	json_decref(ctx);
}

TEST(brief)
{
	json_t *ctx = ctx_load(), *parent = json_object_get(ctx, "parent");
	json_t *dev = json_object_get(ctx, "device");
	char *s = prompt_brief(parent, dev, 1), *t = prompt_brief(parent, NULL, 0);
	static const char *const want[] = {
		"Variant r02-v003 (lineage 2)\n",
		"Rationale: register block 8x16, work-group 8\n",
		"Parameters: TM=8, VN=16, WX=8\n",
		"Its own tunables:\n  - KU = 1, 2, 4\n",
		"Build options: -cl-fast-relaxed-math -DTM=8 -DVN=16 -DWX=8\n",
		"Status: ok, timed on shape 's0'\n",
		"Median time: 3.56 ms (robust CV 2.0%)\n",
		"Speedup vs the reference: 3.40x\n",
		"Compute: 75.41 GFLOP/s = 31.2% of the measured peak of 241.9 GFLOP/s\n",
		"Memory: 0.8837 GB/s = 2.3% of the measured peak of 38.93 GB/s\n",
		"Arithmetic intensity: 85.33 flop/byte (ridge point 6.212)\n",
		"Bottleneck: compute-bound: past the ridge point, so the FMA rate bounds it\n",
		"  evidence: arithmetic intensity 85.33 flop/byte; ridge point 6.21\n"
		"  evidence: 31% of measured fp32 FMA peak (2% of bandwidth)\n",
		"IR of kernel 'matmul' (x86): widest vector 512 bits; vector instructions by "
		"width: "
		"64 bits: 2, 128 bits: 12, 512 bits: 18\n",
		"  instruction mix: 3 FMA, 54 loads, 20 stores, 30 branches, 0 calls, 0 scalar "
		"SSE\n",
		"  register pressure: 5 stack spills, 8 stack reloads, 0 bytes of private memory\n",
		"Block `0`:\n```c\n",
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		CHECK_CONTAINS(s, want[i]);
	CHECK_CONTAINS(s, INSIDE_LINE);
	/* without code or device: no blocks, no peaks */
	CHECK_CONTAINS(t, "Compute: 75.41 GFLOP/s = 31.2% of the measured peak\n");
	CHECK_CONTAINS(t, "Arithmetic intensity: 85.33 flop/byte\n");
	CHECK(t && !strstr(t, "Block `"));
	CHECK(t && !strstr(t, INSIDE_LINE));
	free(s);
	free(t);
	json_decref(ctx);
}

/* A variant with nothing but an id still gives a brief. */
TEST(brief_bare)
{
	json_t *v = json_pack("{s:s}", "id", "r01-v001");
	char *s = prompt_brief(v, NULL, 1);

	CHECK_STR(s, "Variant r01-v001\n");
	free(s);
	json_decref(v);
}

struct reflect_case {
	const char *answer;
	const char *texts; /* the learnings kept, joined by '|' */
	const char *cites; /* their cites, joined by ',' within and '|' between */
	size_t dropped;
};

static const struct reflect_case reflect_cases[] = {
	{ "LEARNING: TM=8 beats TM=4 by 1.3x [r03-v001, r03-v004]\n", "TM=8 beats TM=4 by 1.3x",
	  "r03-v001,r03-v004", 0 },
	{ "Here is what I found.\nLEARNING: packing pays [r03-v001]\nThanks!\n", "packing pays",
	  "r03-v001", 0 },
	{ "LEARNING: unknown id [r09-v999]\n", "", "", 1 },
	{ "LEARNING: one known one not [r03-v001, r09-v999]\n", "", "", 1 },
	{ "LEARNING: no ids at all\n", "", "", 1 },
	{ "LEARNING: empty brackets []\n", "", "", 1 },
	{ "LEARNING:   [r03-v001]\n", "", "", 1 },
	{ "LEARNING: ids not at the end [r03-v001] then text\n", "", "", 1 },
	{ "- LEARNING: a bullet and a full stop [r03-v004].\r\n", "a bullet and a full stop",
	  "r03-v004", 0 },
	{ "LEARNING: A[i] strided reads cost 2x [r03-v001,r03-v001]", "A[i] strided reads cost 2x",
	  "r03-v001", 0 },
	{ "learning: lower case is not the tag [r03-v001]\nNOTE: LEARNING: inside [r03-v001]\n", "",
	  "", 0 },
	{ "LEARNING: first [r03-v001]\nLEARNING: bad [x]\nLEARNING: second [r03-v004]",
	  "first|second", "r03-v001|r03-v004", 1 },
	{ "", "", "", 0 },
};

static void join_learnings(json_t *got, struct sbuf *texts, struct sbuf *cites)
{
	size_t i, j;
	json_t *l, *c;

	json_array_foreach (got, i, l) {
		sbuf_adds(texts, i ? "|" : "");
		sbuf_adds(texts, json_string_value(json_object_get(l, "text")));
		sbuf_adds(cites, i ? "|" : "");
		json_array_foreach (json_object_get(l, "cites"), j, c) {
			sbuf_adds(cites, j ? "," : "");
			sbuf_adds(cites, json_string_value(c));
		}
	}
}

TEST(parse_reflection)
{
	json_t *known = json_pack("[s,s,s]", "r03-v001", "r03-v004", "r02-v003");

	for (size_t i = 0; i < sizeof(reflect_cases) / sizeof(reflect_cases[0]); i++) {
		const struct reflect_case *c = &reflect_cases[i];
		size_t dropped = 99;
		json_t *got = prompt_parse_reflection(c->answer, known, &dropped);
		struct sbuf texts = SBUF_INIT, cites = SBUF_INIT;

		sbuf_adds(&texts, "");
		sbuf_adds(&cites, "");
		join_learnings(got, &texts, &cites);
		CHECK_STR(texts.buf, c->texts);
		CHECK_STR(cites.buf, c->cites);
		if (dropped != c->dropped)
			fprintf(stderr, "case %zu: dropped %zu, want %zu\n", i, dropped,
				c->dropped);
		CHECK(dropped == c->dropped);
		sbuf_release(&texts);
		sbuf_release(&cites);
		json_decref(got);
	}
	json_decref(known);
}

static json_t *reflect_ctx(size_t nvariants)
{
	json_t *ctx = ctx_load(), *r, *vars = json_array();

	for (size_t i = 0; i < nvariants; i++) {
		char id[32];

		snprintf(id, sizeof(id), "r04-v%03zu", i);
		json_array_append_new(
			vars, json_pack("{s:s, s:s, s:s, s:s, s:{s:f, s:f, s:s, s:[s]}}", "id", id,
					"parent", "r02-v003", "status", "ok", "rationale",
					"unroll K by 4 with separate accumulators", "figures",
					"speedup_vs_reference", 3.9, "median_ms", 3.1, "bottleneck",
					"compute", "evidence", "35% of measured fp32 FMA peak"));
	}
	json_array_append_new(vars, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "id", "r04-v900",
					      "parent", "r02-v003", "status", "compile_error",
					      "fault_kind", "compile_error", "rationale",
					      "float16 accumulators", "evidence", LOG_FIRST));
	r = json_pack("{s:i, s:O, s:o, s:O}", "round", 4, "kernel", json_object_get(ctx, "kernel"),
		      "variants", vars, "learnings", json_object_get(ctx, "learnings"));
	json_decref(ctx);
	return r;
}

TEST(reflect)
{
	json_t *ctx = reflect_ctx(3);
	char *s = prompt_reflect(ctx, 0), *small;

	CHECK_CONTAINS(s, "## Reflection on round 4\nKernel: matmul\n");
	CHECK_CONTAINS(s, "Timed shape: s0: K=1024, M=1024, N=1024\n");
	CHECK_CONTAINS(s, "### r04-v001 (parent r02-v003): ok; 3.90x vs the reference, median 3.1 "
			  "ms, compute-bound\n");
	CHECK_CONTAINS(s, "### r04-v900 (parent r02-v003): compile_error\n");
	CHECK_CONTAINS(s, "Evidence:\n    " LOG_FIRST "\n");
	CHECK_CONTAINS(s, "- learning line 12");
	CHECK_CONTAINS(s, "LEARNING: one specific, checkable finding [r03-v001, r03-v004]\n");
	CHECK(s && !strstr(s, OUTSIDE_LINE)); /* no template: the figures are the material */
	json_decref(ctx);

	/* trimmed: learnings first, then the variants from the last */
	ctx = reflect_ctx(40);
	free(s);
	s = prompt_reflect(ctx, 0);
	small = prompt_reflect(ctx, 3000);
	CHECK(s && !strstr(s, "left out"));
	CHECK(small && strlen(small) <= 3000);
	CHECK_CONTAINS(small, "[12 older learning lines left out to fit the prompt limit]\n");
	CHECK_CONTAINS(small, "variants left out to fit the prompt limit]\n");
	CHECK_CONTAINS(small, "### r04-v000 ");
	CHECK(small && !strstr(small, "r04-v900"));
	CHECK_CONTAINS(small, "## What to write\n");
	free(small);
	small = prompt_reflect(ctx, 100);
	CHECK(small && strlen(small) <= 100);
	free(small);
	free(s);
	json_decref(ctx);
}

/* 1000 inspirations and 1000 failures: trimmed to the limit, quickly. */
TEST(large)
{
	json_t *ctx = ctx_load(), *insp = json_array(), *fails = json_array(), *tr = NULL;
	json_t *one = json_array_get(json_object_get(ctx, "inspirations"), 0);
	json_t *fail = json_array_get(json_object_get(ctx, "failures"), 0);
	char msg[256], *s;
	clock_t t0;
	double ms;

	for (int i = 0; i < 1000; i++) {
		json_array_append_new(insp, json_deep_copy(one));
		json_array_append_new(fails, json_deep_copy(fail));
	}
	json_object_set_new(ctx, "inspirations", insp);
	json_object_set_new(ctx, "failures", fails);
	t0 = clock();
	s = build(ctx, 0, &tr, msg, sizeof(msg));
	ms = 1000.0 * (double)(clock() - t0) / CLOCKS_PER_SEC;
	printf("a prompt from 1000 inspirations and 1000 failures: %.1f ms\n", ms);
	CHECK(s && strlen(s) <= 60000);
	CHECK_CONTAINS(s, "[1000 inspirations left out to fit the prompt limit]\n");
	CHECK_CONTAINS(s, "failures left out to fit the prompt limit]\n");
	CHECK(trimmed_prefix(tr, &(size_t){ 0 }));
	CHECK(ms < 5000);
	free(s);
	json_decref(tr);
	json_decref(ctx);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: test-prompt tests/data/prompt/context.json "
				"examples/matmul/matmul.cl\n");
		return 2;
	}
	fixture_path = argv[1];
	template_path = argv[2];
	RUN(system_text);
	RUN(retry);
	RUN(every_part);
	RUN(deterministic);
	RUN(trim_order);
	RUN(too_small);
	RUN(default_limit);
	RUN(no_parent);
	RUN(shape_buckets);
	RUN(brief);
	RUN(brief_bare);
	RUN(parse_reflection);
	RUN(reflect);
	RUN(large);
	return test_summary();
}
