/*
 * test-batch.c - unit tests for evalpod/batch*.c.
 *
 * Documents are written with single quotes to keep them readable in C and
 * turned into JSON by doc_text().  Malformed documents are the full valid
 * document with one edit applied (a dotted path and the new JSON value, or
 * NULL to delete), so each case shows exactly what is wrong with it.
 */
#include "batch.h"
#include "defines.h"
#include "err.h"
#include "xalloc.h"

#include "test.h"
#include "arraysize.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char full_doc[] =
	"{'schema': 'evalpod.batch', 'version': 1, 'batch_id': 's1-r3-0',"
	" 'problem': {"
	"  'name': 'matmul', 'semantics': 'C = A*B, row-major fp32',"
	"  'buffers': ["
	"   {'name': 'A', 'type': 'float', 'count': 'M*K',"
	"    'init': {'dist': 'uniform', 'lo': -2, 'hi': 2}},"
	"   {'name': 'B', 'type': 'float', 'count': 'K*N', 'role': 'input',"
	"    'init': {'dist': 'normal', 'mean': 0.5, 'std': 0.25}},"
	"   {'name': 'C', 'type': 'float', 'count': 'M*N', 'role': 'output'},"
	"   {'name': 'idx', 'type': 'int', 'count': 16, 'role': 'inout'},"
	"   {'name': 'tmp', 'type': 'double', 'count': 'M', 'role': 'scratch',"
	"    'init': {'dist': 'zero'}},"
	"   {'name': 'seq', 'type': 'uint', 'count': 'N', 'init': {'dist': 'iota'}},"
	"   {'name': 'k7', 'type': 'long', 'count': 4, 'init': {'dist': 'const', 'value': 7}},"
	"   {'name': 'r', 'type': 'ulong', 'count': 4, 'init': {'dist': 'int', 'lo': 3, 'hi': 5}}"
	"  ],"
	"  'scalars': ["
	"   {'name': 'M', 'type': 'int', 'value': 'M'},"
	"   {'name': 'N', 'type': 'int', 'value': 'N'},"
	"   {'name': 'K', 'type': 'int', 'value': 'K'},"
	"   {'name': 'alpha', 'type': 'float', 'value': 1.5},"
	"   {'name': 'off', 'type': 'long', 'value': -3}"
	"  ],"
	"  'launch': ["
	"   {'kernel': 'matmul', 'args': ['A', 'B', 'C', 'M', 'N', 'K', {'local': 'WX*16*4'}],"
	"    'global': ['ceil_div(N,VN)', 'ceil_div(M,TM)'], 'local': ['WX', 1]},"
	"   {'kernel': 'fixup', 'args': ['C', 'alpha'], 'global': [64], 'local': null}"
	"  ],"
	"  'reference_launch': ["
	"   {'kernel': 'matmul_ref', 'args': ['A', 'B', 'C', 'M', 'N', 'K'], 'global': ['N', 'M']}"
	"  ],"
	"  'flops': '2*M*N*K', 'bytes': '4*(M*K+K*N+M*N)'"
	" },"
	" 'shapes': ["
	"  {'name': '512', 'values': {'M': 512, 'N': 512, 'K': 512}},"
	"  {'name': '1024', 'values': {'M': 1024, 'N': 1024, 'K': 1024}, 'timed': true}"
	" ],"
	" 'reference': {'source': '__kernel void matmul_ref() {}',"
	"  'build_options': '-cl-std=CL1.2'},"
	" 'baseline': {'id': 'baseline', 'source': '#define TM 4\\n', 'build_options': '',"
	"  'parent': null},"
	" 'variants': ["
	"  {'id': 'v001', 'parent': 'baseline', 'source': '#define TM 8\\n',"
	"   'build_options': '-DTM=4', 'rationale': 'smaller tiles'},"
	"  {'id': 'v002', 'source': '__kernel void matmul() {}'}"
	" ],"
	" 'measurement': {'warmup': 3, 'min_samples': 5, 'max_samples': 50, 'min_time_ms': 20,"
	"  'max_time_ms': 2000, 'sample_min_ms': 0.5, 'flush': false, 'flush_bytes': 1048576,"
	"  'order_seed': 42, 'peak_probe': true, 'flush_kind': 'read'},"
	" 'correctness': {'atol': 1e-3, 'rtol': 1e-5, 'seeds': [7, 8, 9, 10],"
	"  'determinism': false},"
	" 'limits': {'compile_timeout_s': 60, 'run_timeout_s': 30, 'time_timeout_s': 600,"
	"  'log_max_bytes': 4096, 'peak_margin': 1.2},"
	" 'device': {'platform': 'Portable', 'device': '', 'type': 'cpu', 'index': 1},"
	" 'outputs': {'dir': 'results/',"
	"  'summary': 'https://s3.example.com/b/summary.json?X-Amz-Signature=abc',"
	"  'results': {'v001': 'https://s3.example.com/b/v001.json',"
	"              'baseline': 'http://localhost:9000/b/base.json'},"
	"  'artifacts': {'v001': {'trace.json': 'https://s3.example.com/b/v001-trace.json'},"
	"                'v002': {'ir.ll': 'https://s3.example.com/b/v002.ll',"
	"                         'trace.json': 'https://s3.example.com/b/v002-trace.json'}}}"
	"}";

static const char min_doc[] =
	"{'schema': 'evalpod.batch', 'version': 1, 'batch_id': 'b',"
	" 'problem': {'name': 'p',"
	"  'buffers': [{'name': 'X', 'type': 'float', 'count': 8, 'role': 'output'},"
	"              {'name': 'I', 'type': 'long', 'count': 8}],"
	"  'launch': [{'kernel': 'k', 'args': ['X', 'I'], 'global': [8]}]},"
	" 'shapes': [{'name': 's', 'values': {}}],"
	" 'reference': {'source': 'x'}}";

/* Returns a malloc'd copy of s with every ' turned into ". */
static char *doc_text(const char *s)
{
	char *t = xstrdup(s);

	for (char *p = t; *p; p++)
		if (*p == '\'')
			*p = '"';
	return t;
}

static int parse_text(struct batch *b, const char *squoted, char *msg, size_t n)
{
	char *text = doc_text(squoted);
	int rc = batch_parse(b, text, strlen(text), msg, n);

	free(text);
	return rc;
}

/* Loads any JSON value written with single quotes. */
static json_t *value_load(const char *squoted)
{
	char *text = doc_text(squoted);
	json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);

	free(text);
	return v;
}

/* Sets (or deletes, when value is NULL) the member at a dotted path. */
static void doc_edit(json_t *root, const char *at, const char *value)
{
	char *path = xstrdup(at), *save = NULL, *tok, *next;
	json_t *cur = root, *v = value ? value_load(value) : NULL;

	tok = strtok_r(path, ".", &save);
	while ((next = strtok_r(NULL, ".", &save))) {
		cur = json_is_array(cur) ? json_array_get(cur, strtoul(tok, NULL, 10))
					 : json_object_get(cur, tok);
		tok = next;
	}
	if (json_is_array(cur) && v)
		json_array_set_new(cur, strtoul(tok, NULL, 10), v);
	else if (json_is_array(cur))
		json_array_remove(cur, strtoul(tok, NULL, 10));
	else if (v)
		json_object_set_new(cur, tok, v);
	else
		json_object_del(cur, tok);
	free(path);
}

/* ---- the full document ---- */

static void check_full_problem(const struct batch *b)
{
	CHECK_STR(b->batch_id, "s1-r3-0");
	CHECK_STR(b->problem_name, "matmul");
	CHECK_STR(b->semantics, "C = A*B, row-major fp32");
	CHECK(b->nbuffers == 8);
	CHECK_STR(b->buffers[0].name, "A");
	CHECK(b->buffers[0].type == ELEM_FLOAT);
	CHECK_STR(b->buffers[0].count, "M*K");
	CHECK(b->buffers[0].role == ROLE_INPUT);
	CHECK(b->buffers[0].init.dist == INIT_UNIFORM);
	CHECK(b->buffers[0].init.a == -2 && b->buffers[0].init.b == 2);
	CHECK(b->buffers[1].init.dist == INIT_NORMAL);
	CHECK(b->buffers[1].init.a == 0.5 && b->buffers[1].init.b == 0.25);
	CHECK(b->buffers[2].role == ROLE_OUTPUT);
	CHECK(b->buffers[2].init.dist == INIT_UNIFORM); /* float default */
	CHECK(b->buffers[2].init.a == -1 && b->buffers[2].init.b == 1);
	CHECK(b->buffers[3].type == ELEM_INT && b->buffers[3].role == ROLE_INOUT);
	CHECK_STR(b->buffers[3].count, "16");
	CHECK(b->buffers[3].init.dist == INIT_INT); /* integer default */
	CHECK(b->buffers[3].init.a == 0 && b->buffers[3].init.b == 9);
	CHECK(b->buffers[4].type == ELEM_DOUBLE && b->buffers[4].role == ROLE_SCRATCH);
	CHECK(b->buffers[4].init.dist == INIT_ZERO);
	CHECK(b->buffers[5].type == ELEM_UINT && b->buffers[5].init.dist == INIT_IOTA);
	CHECK(b->buffers[6].type == ELEM_LONG && b->buffers[6].init.dist == INIT_CONST);
	CHECK(b->buffers[6].init.a == 7);
	CHECK(b->buffers[7].type == ELEM_ULONG && b->buffers[7].init.dist == INIT_INT);
	CHECK(b->buffers[7].init.a == 3 && b->buffers[7].init.b == 5);
	CHECK(b->nscalars == 5);
	CHECK_STR(b->scalars[0].name, "M");
	CHECK(b->scalars[0].type == ELEM_INT);
	CHECK_STR(b->scalars[0].expr, "M");
	CHECK(b->scalars[3].type == ELEM_FLOAT && b->scalars[3].fvalue == 1.5);
	CHECK(b->scalars[3].expr == NULL);
	CHECK_STR(b->scalars[4].expr, "-3");
	CHECK_STR(b->flops, "2*M*N*K");
	CHECK_STR(b->bytes, "4*(M*K+K*N+M*N)");
}

static void check_full_launch(const struct batch *b)
{
	const struct launch_spec *l = b->launch;

	CHECK(b->nlaunch == 2);
	CHECK_STR(l[0].kernel, "matmul");
	CHECK(l[0].nargs == 7);
	CHECK(l[0].args[0].kind == ARG_BUFFER && l[0].args[0].index == 0);
	CHECK(l[0].args[2].kind == ARG_BUFFER && l[0].args[2].index == 2);
	CHECK(l[0].args[3].kind == ARG_SCALAR && l[0].args[3].index == 0);
	CHECK(l[0].args[5].kind == ARG_SCALAR && l[0].args[5].index == 2);
	CHECK(l[0].args[6].kind == ARG_LOCAL);
	CHECK_STR(l[0].args[6].local_bytes, "WX*16*4");
	CHECK(l[0].dims == 2);
	CHECK_STR(l[0].global[0], "ceil_div(N,VN)");
	CHECK_STR(l[0].global[1], "ceil_div(M,TM)");
	CHECK(l[0].global[2] == NULL);
	CHECK_STR(l[0].local[0], "WX");
	CHECK_STR(l[0].local[1], "1");
	CHECK(l[1].dims == 1);
	CHECK_STR(l[1].global[0], "64");
	CHECK(l[1].local[0] == NULL);
	CHECK(l[1].args[1].kind == ARG_SCALAR && l[1].args[1].index == 3);
	CHECK(b->ref_launch_owned == 1);
	CHECK(b->nref_launch == 1 && b->ref_launch != b->launch);
	CHECK_STR(b->ref_launch[0].kernel, "matmul_ref");
	CHECK(b->ref_launch[0].local[0] == NULL);
}

static void check_full_programs(const struct batch *b)
{
	int64_t v = 0;

	CHECK(b->nshapes == 2);
	CHECK_STR(b->shapes[0].name, "512");
	CHECK(b->shapes[0].timed == 0 && b->shapes[1].timed == 1);
	CHECK(b->timed_shape == 1);
	CHECK(expr_vars_get(&b->shapes[1].vars, "K", &v) == 0 && v == 1024);
	CHECK_STR(b->reference.id, "reference");
	CHECK_STR(b->reference.options, "-cl-std=CL1.2");
	CHECK(b->reference.parent == NULL && b->reference.rationale == NULL);
	CHECK(b->baseline != NULL);
	CHECK_STR(b->baseline->id, "baseline");
	CHECK(b->baseline->parent == NULL);
	CHECK_STR(b->baseline->options, "");
	CHECK(b->nvariants == 2);
	CHECK_STR(b->variants[0].id, "v001");
	CHECK_STR(b->variants[0].parent, "baseline");
	CHECK_STR(b->variants[0].source, "#define TM 8\n");
	CHECK_STR(b->variants[0].options, "-DTM=4");
	CHECK_STR(b->variants[0].rationale, "smaller tiles");
	CHECK(b->variants[1].parent == NULL && b->variants[1].rationale == NULL);
	CHECK_STR(b->variants[1].options, "");
	CHECK(batch_variant(b, "v002") == &b->variants[1]);
	CHECK(batch_variant(b, "v003") == NULL);
}

static void check_full_settings(const struct batch *b)
{
	const struct measure_spec *m = &b->measure;

	CHECK(m->warmup == 3 && m->min_samples == 5 && m->max_samples == 50);
	CHECK(m->min_time_ms == 20 && m->max_time_ms == 2000 && m->sample_min_ms == 0.5);
	CHECK(m->flush == 0 && m->flush_bytes == 1048576 && m->order_seed == 42);
	CHECK(m->peak_probe == 1 && m->flush_kind == FLUSH_READ);
	CHECK(b->correct.atol == 1e-3 && b->correct.rtol == 1e-5);
	CHECK(b->correct.nseeds == 4 && b->correct.seeds[0] == 7 && b->correct.seeds[3] == 10);
	CHECK(b->correct.determinism == 0);
	CHECK(b->limits.compile_timeout_s == 60 && b->limits.run_timeout_s == 30);
	CHECK(b->limits.time_timeout_s == 600 && b->limits.log_max_bytes == 4096);
	CHECK(b->limits.peak_margin == 1.2);
	CHECK_STR(b->device.platform, "Portable");
	CHECK(b->device.device == NULL); /* "" means any device */
	CHECK(b->device.type == 2 && b->device.index == 1);
}

static void check_full_outputs(const struct batch *b)
{
	const struct output_url *u;

	CHECK_STR(b->outputs.dir, "results/");
	CHECK_STR(b->outputs.summary, "https://s3.example.com/b/summary.json?X-Amz-Signature=abc");
	CHECK(b->outputs.nurls == 3);
	u = batch_output_url(b, "v001");
	CHECK(u != NULL);
	if (u) {
		CHECK_STR(u->result, "https://s3.example.com/b/v001.json");
		CHECK(u->nart == 1);
		CHECK_STR(u->art[0].name, "trace.json");
		CHECK_STR(u->art[0].url, "https://s3.example.com/b/v001-trace.json");
	}
	u = batch_output_url(b, "baseline");
	CHECK(u != NULL && u->nart == 0);
	CHECK(u && !strcmp(u->result, "http://localhost:9000/b/base.json"));
	u = batch_output_url(b, "v002");
	CHECK(u != NULL && u->result == NULL && u->nart == 2);
	CHECK(u && !strcmp(u->art[1].name, "trace.json"));
	CHECK(batch_output_url(b, "reference") == NULL);
}

TEST(full_document)
{
	struct batch b;
	char msg[512] = "";
	int rc = parse_text(&b, full_doc, msg, sizeof(msg));

	CHECK(rc == 0);
	if (rc)
		fprintf(stderr, "unexpected error: %s\n", msg);
	else {
		check_full_problem(&b);
		check_full_launch(&b);
		check_full_programs(&b);
		check_full_settings(&b);
		check_full_outputs(&b);
		CHECK(json_is_object(b.doc));
	}
	batch_release(&b);
	CHECK(b.doc == NULL && b.buffers == NULL && b.nvariants == 0);
}

TEST(defaults)
{
	struct batch b;
	char msg[512] = "";
	int rc = parse_text(&b, min_doc, msg, sizeof(msg));

	CHECK(rc == 0);
	if (!rc) {
		CHECK(b.semantics == NULL && b.nscalars == 0);
		CHECK(b.buffers[0].init.dist == INIT_UNIFORM && b.buffers[0].init.a == -1);
		CHECK(b.buffers[1].role == ROLE_INPUT && b.buffers[1].init.dist == INIT_INT);
		CHECK(b.buffers[1].init.b == 9);
		CHECK(b.launch[0].local[0] == NULL);
		CHECK(b.ref_launch == b.launch && b.nref_launch == 1 && !b.ref_launch_owned);
		CHECK(b.flops == NULL && b.bytes == NULL);
		CHECK(b.timed_shape == 0 && b.shapes[0].timed == 1 && b.shapes[0].vars.nr == 0);
		CHECK_STR(b.reference.id, "reference");
		CHECK_STR(b.reference.options, "");
		CHECK(b.baseline == NULL && b.nvariants == 0);
		CHECK(b.measure.warmup == 2 && b.measure.min_samples == 10);
		CHECK(b.measure.max_samples == 200 && b.measure.min_time_ms == 100);
		CHECK(b.measure.max_time_ms == 10000 && b.measure.sample_min_ms == 1);
		CHECK(b.measure.flush == 1 && b.measure.flush_bytes == 0);
		CHECK(b.measure.flush_kind == FLUSH_AUTO);
		CHECK(b.measure.order_seed == 1 && b.measure.peak_probe == 0);
		CHECK(b.correct.atol == 1e-4 && b.correct.rtol == 1e-4);
		CHECK(b.correct.nseeds == 3 && b.correct.seeds[0] == 1 && b.correct.seeds[2] == 3);
		CHECK(b.correct.determinism == 1);
		CHECK(b.limits.compile_timeout_s == 120 && b.limits.run_timeout_s == 120);
		CHECK(b.limits.time_timeout_s == 900 && b.limits.log_max_bytes == 16384);
		CHECK(b.limits.peak_margin == 1.15);
		CHECK(b.device.platform == NULL && b.device.device == NULL);
		CHECK(b.device.type == 0 && b.device.index == 0);
		CHECK(b.outputs.dir == NULL && b.outputs.summary == NULL && b.outputs.nurls == 0);
		CHECK(batch_output_url(&b, "b") == NULL);
	}
	batch_release(&b);
}

TEST(release_zeroed)
{
	struct batch b;

	memset(&b, 0, sizeof(b));
	batch_release(&b);
	batch_release(&b);
	CHECK(b.doc == NULL);
}

TEST(elem_types)
{
	static const struct {
		enum elem_type t;
		const char *name;
		size_t size;
		int is_float;
	} cases[] = {
		{ ELEM_FLOAT, "float", 4, 1 }, { ELEM_DOUBLE, "double", 8, 1 },
		{ ELEM_INT, "int", 4, 0 },     { ELEM_UINT, "uint", 4, 0 },
		{ ELEM_LONG, "long", 8, 0 },   { ELEM_ULONG, "ulong", 8, 0 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		CHECK_STR(elem_type_name(cases[i].t), cases[i].name);
		CHECK(elem_type_size(cases[i].t) == cases[i].size);
		CHECK(elem_type_is_float(cases[i].t) == cases[i].is_float);
	}
	CHECK(elem_type_size(ELEM_NR) == 0);
}

/* ---- malformed documents ---- */

static const struct bad_case {
	const char *raw;   /* the whole text, or NULL to edit full_doc */
	const char *at;    /* dotted path of the edit */
	const char *value; /* new JSON value, NULL deletes */
	int code;
	const char *want; /* the message starts with this */
} bad_cases[] = {
	{ NULL, "schema", "'evalpod.other'", KERR_INVALID,
	  "$.schema: 'evalpod.other' is not 'evalpod.batch'" },
	{ NULL, "version", "2", KERR_INVALID, "$.version: version 2 is not supported" },
	{ NULL, "version", "'1'", KERR_PARSE, "$.version: expected an integer, got string" },
	{ NULL, "colour", "1", KERR_PARSE, "$.colour: unknown key" },
	{ NULL, "batch_id", NULL, KERR_PARSE, "$.batch_id: required key is missing" },
	{ NULL, "problem", NULL, KERR_PARSE, "$.problem: required key is missing" },
	{ NULL, "problem.buffers.1.colour", "'red'", KERR_PARSE,
	  "$.problem.buffers[1].colour: unknown key" },
	{ NULL, "problem.buffers.0.type", "'half'", KERR_INVALID,
	  "$.problem.buffers[0].type: 'half' is not one of float, double, int, uint, long, ulong" },
	{ NULL, "problem.buffers.2.role", "'outptu'", KERR_INVALID,
	  "$.problem.buffers[2].role: 'outptu' is not one of input, output, inout, scratch" },
	{ NULL, "problem.buffers.0.count", "'M*'", KERR_PARSE,
	  "$.problem.buffers[0].count: unexpected end of expression at column 3" },
	{ NULL, "problem.buffers.0.count", "-1", KERR_RANGE,
	  "$.problem.buffers[0].count: -1 is negative" },
	{ NULL, "problem.buffers.0.count", "1.5", KERR_PARSE,
	  "$.problem.buffers[0].count: expected an expression string or an integer, got number" },
	{ NULL, "problem.buffers.0.name", "'A B'", KERR_INVALID,
	  "$.problem.buffers[0].name: 'A B' is not a C identifier" },
	{ NULL, "problem.buffers.1.name", "'A'", KERR_INVALID,
	  "$.problem.buffers[1].name: 'A' is already the name of buffer 0" },
	{ NULL, "problem.buffers.0.init", "{'dist': 'uniform', 'mean': 0}", KERR_PARSE,
	  "$.problem.buffers[0].init.mean: unknown key" },
	{ NULL, "problem.buffers.0.init", "{'dist': 'uniform', 'lo': 1, 'hi': 0}", KERR_RANGE,
	  "$.problem.buffers[0].init.hi: 0 is less than lo (1)" },
	{ NULL, "problem.buffers.1.init", "{'dist': 'normal', 'std': -1}", KERR_RANGE,
	  "$.problem.buffers[1].init.std: -1 is outside" },
	{ NULL, "problem.buffers.0.init", "{'dist': 'poisson'}", KERR_INVALID,
	  "$.problem.buffers[0].init.dist: 'poisson' is not one of zero, const" },
	{ NULL, "problem.buffers.0.init", "{'lo': 0}", KERR_PARSE,
	  "$.problem.buffers[0].init.dist: required key is missing" },
	{ NULL, "problem.buffers.3.init", "{'dist': 'uniform'}", KERR_INVALID,
	  "$.problem.buffers[3].init.dist: 'uniform' gives non-integer values" },
	{ NULL, "problem.buffers.3.init", "{'dist': 'const', 'value': 0.5}", KERR_PARSE,
	  "$.problem.buffers[3].init.value: expected an integer, got number" },
	{ NULL, "problem.buffers.5.init", "{'dist': 'int', 'lo': -1, 'hi': 3}", KERR_RANGE,
	  "$.problem.buffers[5].init.lo: -1 is outside [0, 4294967295]" },
	{ NULL, "problem.buffers", "[{'name': 'X', 'type': 'int', 'count': 1}]", KERR_INVALID,
	  "$.problem.buffers: no buffer has role output or inout" },
	{ NULL, "problem.scalars.0.name", "'A'", KERR_INVALID,
	  "$.problem.scalars[0].name: 'A' is already the name of buffer 0" },
	{ NULL, "problem.scalars.3.value", "'1.5'", KERR_PARSE,
	  "$.problem.scalars[3].value: expected a number, got string" },
	{ NULL, "problem.scalars.0.value", "true", KERR_PARSE,
	  "$.problem.scalars[0].value: expected an expression string or an integer, got boolean" },
	{ NULL, "problem.launch.0.args.2", "'Q'", KERR_INVALID,
	  "$.problem.launch[0].args[2]: 'Q' names no buffer or scalar" },
	{ NULL, "problem.launch.0.args.6", "{'local': 'M*'}", KERR_PARSE,
	  "$.problem.launch[0].args[6].local: unexpected end of expression at column 3" },
	{ NULL, "problem.launch.0.args.6", "{'global': 4}", KERR_PARSE,
	  "$.problem.launch[0].args[6].global: unknown key" },
	{ NULL, "problem.launch.0.local", "[8]", KERR_INVALID,
	  "$.problem.launch[0].local: has 1 entries, global has 2" },
	{ NULL, "problem.launch.0.global", "[1, 2, 3, 4]", KERR_RANGE,
	  "$.problem.launch[0].global: has 4 entries, expected 1 to 3" },
	{ NULL, "problem.launch.0.global", "[]", KERR_RANGE,
	  "$.problem.launch[0].global: has 0 entries, expected 1 to 3" },
	{ NULL, "problem.launch.0.global.1", "'ceil_div(M,TM))'", KERR_PARSE,
	  "$.problem.launch[0].global[1]: unexpected ')' at column 15" },
	{ NULL, "problem.launch.1.kernel", "'fix-up'", KERR_INVALID,
	  "$.problem.launch[1].kernel: 'fix-up' is not a C identifier" },
	{ NULL, "problem.reference_launch.0.args.0", "'Z'", KERR_INVALID,
	  "$.problem.reference_launch[0].args[0]: 'Z' names no buffer or scalar" },
	{ NULL, "problem.flops", "'2*'", KERR_PARSE, "$.problem.flops: unexpected end" },
	{ NULL, "problem.launch.1.args.0", "3", KERR_PARSE,
	  "$.problem.launch[1].args[0]: expected a buffer or scalar name or {\"local\": bytes}" },
	{ NULL, "shapes.1", "5", KERR_PARSE, "$.shapes[1]: expected an object, got integer" },
	{ NULL, "shapes", "[]", KERR_RANGE, "$.shapes: has 0 entries, expected 1 to 64" },
	{ NULL, "shapes.0.values.M", "'512'", KERR_PARSE,
	  "$.shapes[0].values.M: expected an integer, got string" },
	{ NULL, "shapes.0.values.K", "1.5", KERR_PARSE,
	  "$.shapes[0].values.K: expected an integer, got number" },
	{ NULL, "shapes.0.values.2M", "1", KERR_INVALID,
	  "$.shapes[0].values.2M: '2M' is not a C identifier" },
	{ NULL, "shapes.1.name", "'512'", KERR_INVALID,
	  "$.shapes[1].name: '512' is also the name of $.shapes[0]" },
	{ NULL, "variants.1.id", "'v001'", KERR_INVALID,
	  "$.variants[1].id: 'v001' is also the id of $.variants[0]" },
	{ NULL, "variants.0.id", "'baseline'", KERR_INVALID,
	  "$.variants[0].id: 'baseline' is also the id of $.baseline" },
	{ NULL, "variants.0.id", "'v/1'", KERR_INVALID,
	  "$.variants[0].id: 'v/1' is not an id of 1 to 128 characters from [A-Za-z0-9._-]" },
	{ NULL, "variants.0.id", "'reference'", KERR_INVALID,
	  "$.variants[0].id: 'reference' is reserved" },
	{ NULL, "variants.0.id", "'summary'", KERR_INVALID,
	  "$.variants[0].id: 'summary' is reserved" },
	{ NULL, "variants.0.id", "'..'", KERR_INVALID, "$.variants[0].id: '..' is not an id" },
	{ NULL, "variants.0.id", "'.hidden'", KERR_INVALID,
	  "$.variants[0].id: '.hidden' is not an id" },
	{ NULL, "variants.1.id", NULL, KERR_PARSE, "$.variants[1].id: required key is missing" },
	{ NULL, "variants.1.source", "''", KERR_INVALID,
	  "$.variants[1].source: must not be empty" },
	{ NULL, "baseline.id", "'reference'", KERR_INVALID,
	  "$.baseline.id: 'reference' is reserved" },
	{ NULL, "baseline.rationale", "'x'", KERR_PARSE, "$.baseline.rationale: unknown key" },
	{ NULL, "reference.source", NULL, KERR_PARSE,
	  "$.reference.source: required key is missing" },
	{ NULL, "reference.id", "'ref'", KERR_PARSE, "$.reference.id: unknown key" },
	{ NULL, "correctness.seeds", "[1, 2]", KERR_RANGE,
	  "$.correctness.seeds: has 2 entries, expected 3 to 64" },
	{ NULL, "correctness.seeds", "[1, 2, 1]", KERR_INVALID,
	  "$.correctness.seeds[2]: 1 repeats seeds[0]" },
	{ NULL, "correctness.seeds", "[1, 2, -3]", KERR_PARSE,
	  "$.correctness.seeds[2]: expected a non-negative integer" },
	{ NULL, "correctness.atol", "-1", KERR_RANGE, "$.correctness.atol: -1 is outside" },
	{ NULL, "measurement.min_samples", "500", KERR_RANGE,
	  "$.measurement.min_samples: 500 is greater than max_samples (50)" },
	{ NULL, "measurement.min_time_ms", "5000", KERR_RANGE,
	  "$.measurement.min_time_ms: 5000 is greater than max_time_ms (2000)" },
	{ NULL, "measurement.warmup", "-1", KERR_RANGE,
	  "$.measurement.warmup: -1 is outside [0, 1000]" },
	{ NULL, "measurement.flush", "1", KERR_PARSE,
	  "$.measurement.flush: expected a boolean, got integer" },
	{ NULL, "measurement.flush_kind", "'lines'", KERR_INVALID,
	  "$.measurement.flush_kind: 'lines' is not one of auto, read" },
	{ NULL, "measurement.peak_probe", "'yes'", KERR_PARSE,
	  "$.measurement.peak_probe: expected a boolean, got string" },
	{ NULL, "limits.peak_margin", "0.5", KERR_RANGE,
	  "$.limits.peak_margin: 0.5 is outside [1, 100]" },
	{ NULL, "limits.wall_s", "5", KERR_PARSE, "$.limits.wall_s: unknown key" },
	/* 2^30 doubles at the second shape: more than a worker may hold (8192 MiB) */
	{ NULL, "problem.buffers.4.count", "'M*N*K'", KERR_INVALID,
	  "$.shapes[1] ('1024'): its buffers take 8205 MiB (the largest, 'tmp', 8192 MiB), more "
	  "than limits.memory_mb (8192 MiB) lets a worker hold" },
	{ NULL, "device.type", "'fpga'", KERR_INVALID,
	  "$.device.type: 'fpga' is not one of any, gpu, cpu, accelerator" },
	{ NULL, "outputs.summary", "'ftp://example.com/x'", KERR_INVALID,
	  "$.outputs.summary: expected an http:// or https:// URL" },
	{ NULL, "outputs.summary", "'https://'", KERR_INVALID,
	  "$.outputs.summary: expected an http:// or https:// URL" },
	{ NULL, "outputs.summary", "'https://a b/c'", KERR_INVALID,
	  "$.outputs.summary: URL contains a space or control character" },
	{ NULL, "outputs.results.v999", "'https://example.com/x'", KERR_INVALID,
	  "$.outputs.results.v999: 'v999' is not a program of this batch" },
	{ NULL, "outputs.artifacts.v999", "{}", KERR_INVALID,
	  "$.outputs.artifacts.v999: 'v999' is not a program of this batch" },
	{ NULL, "outputs.artifacts.v002", "{'ir.ll': 's3://bucket/key'}", KERR_INVALID,
	  "$.outputs.artifacts.v002.ir.ll: expected an http:// or https:// URL" },
	{ NULL, "outputs.artifacts.v002", "{'a/b': 'https://example.com/x'}", KERR_INVALID,
	  "$.outputs.artifacts.v002.a/b: 'a/b' is not an id" },
	{ "{'schema': 'evalpod.batch',\n 'version': }", NULL, NULL, KERR_PARSE,
	  "$: not valid JSON: line 2, column 13:" },
	{ "", NULL, NULL, KERR_PARSE, "$: not valid JSON: line 1" },
	{ "{'a': 1, 'a': 2}", NULL, NULL, KERR_PARSE, "$: not valid JSON: line 1" },
	{ "[1, 2]", NULL, NULL, KERR_PARSE, "$: expected an object, got array" },
	{ "'evalpod.batch'", NULL, NULL, KERR_PARSE, "$: not valid JSON: line 1" },
};

static char *bad_text(const struct bad_case *c)
{
	json_t *root;
	char *text;

	if (c->raw)
		return doc_text(c->raw);
	root = value_load(full_doc);
	doc_edit(root, c->at, c->value);
	text = json_dumps(root, 0);
	json_decref(root);
	return text;
}

TEST(malformed_documents)
{
	for (size_t i = 0; i < ARRAY_SIZE(bad_cases); i++) {
		const struct bad_case *c = &bad_cases[i];
		char msg[512] = "", *text = bad_text(c);
		struct batch b;
		int rc = batch_parse(&b, text, strlen(text), msg, sizeof(msg));

		if (getenv("SHOWMSG") || strncmp(msg, c->want, strlen(c->want)) || rc != c->code)
			fprintf(stderr, "case %zu (%s): rc %d, msg \"%s\"\n", i,
				c->at ? c->at : c->raw, rc, msg);
		CHECK(rc == c->code);
		CHECK_CONTAINS(msg, c->want);
		CHECK(strncmp(msg, c->want, strlen(c->want)) == 0);
		batch_release(&b);
		free(text);
	}
}

/* A parse that fails after most sections are filled must release cleanly. */
TEST(failure_late_releases)
{
	struct batch b;
	char msg[512] = "";
	json_t *root = value_load(full_doc);
	char *text;

	doc_edit(root, "outputs.artifacts.v002", "{'ir.ll': 'ftp://x'}");
	text = json_dumps(root, 0);
	CHECK(batch_parse(&b, text, strlen(text), msg, sizeof(msg)) == KERR_INVALID);
	CHECK(b.nvariants == 2 && b.outputs.nurls >= 2);
	batch_release(&b);
	CHECK(b.outputs.urls == NULL && b.variants == NULL);
	free(text);
	json_decref(root);
}

TEST(message_buffer_optional)
{
	struct batch b;
	char *text = doc_text("{'schema': 'x'}");

	CHECK(batch_parse(&b, text, strlen(text), NULL, 0) == KERR_INVALID);
	batch_release(&b);
	free(text);
}

/* ---- defines_collect (common/defines.c, as evalpod uses it) ---- */

static const struct define_case {
	const char *source;
	const char *options;
	const char *name;
	int found;
	int64_t value;
} define_cases[] = {
	{ "#define TM 4\n", NULL, "TM", 1, 4 },
	{ "#define TM 4\n#define TN (TM * 2)\n", NULL, "TN", 1, 8 },
	{ "#define TM 4 // rows per work-item\n", NULL, "TM", 1, 4 },
	{ "#define TM /* rows */ 4 /* more */\n", NULL, "TM", 1, 4 },
	{ "#define TM 4\r\n#define TN 5\r\n", NULL, "TN", 1, 5 },
	{ "  #  define WX\t16u\n", NULL, "WX", 1, 16 },
	{ "#define ROWS (M / 4)\n", NULL, "ROWS", 1, 128 }, /* uses the shape */
	{ "#define T 8\n#define T2 T*T\n#define T3 T2*T\n", NULL, "T3", 1, 512 },
	{ "#define SQ(x) ((x) * (x))\n", NULL, "SQ", 0, 0 },
	{ "#define VEC float4\n", NULL, "VEC", 0, 0 },
	{ "#define HALF 0.5f\n", NULL, "HALF", 0, 0 },
	{ "#define BAD (1 / 0)\n", NULL, "BAD", 0, 0 },
	{ "#define EMPTY\n", NULL, "EMPTY", 0, 0 },
	{ "#defineX 3\n", NULL, "X", 0, 0 },
	{ "/*\n#define TM 99\n*/\n#define TN 3\n", NULL, "TM", 0, 0 },
	{ "/*\n#define TM 99\n*/\n#define TN 3\n", NULL, "TN", 1, 3 },
	{ "// #define TM 99\n", NULL, "TM", 0, 0 },
	{ "#define M 64\n", NULL, "M", 1, 64 }, /* a define shadows the shape */
	{ "const char *s = \"/*\";\n#define TM 2\n", NULL, "TM", 1, 2 },
	/* a build option is replaced by a #define the compiler surely compiles, as there */
	{ "#define TM 4\n", "-DTM=8", "TM", 1, 4 },
	{ "#define TM 4\n#define R (TM * 2)\n", "-DTM=8", "R", 1, 8 },
	{ "#undef TM\n#define TM 4\n", "-DTM=8", "TM", 1, 4 },
	{ "#ifdef TM\n#define TM 2\n#endif\n", "-DTM=8", "TM", 1, 2 },
	/* ... but not by one under an #if it cannot decide */
	{ "#if FOO\n#define TM 4\n#endif\n", "-DTM=8", "TM", 1, 8 },
	{ "#if FOO\n#else\n#define TM 4\n#endif\n", "-DTM=8", "TM", 1, 8 },
	{ "#if FOO\n#ifndef NO\n#define TM 4\n#endif\n#endif\n", "-DTM=8", "TM", 1, 8 },
	{ "#define TM four\n", "-DTM=8", "TM", 1, 8 }, /* not an integer: stays */
	{ "#define R (TM * 2)\n", "-DTM=8", "R", 1, 16 },
	{ "#ifndef TM\n#define TM 4\n#endif\n#define R (TM * 2)\n", "-DTM=8", "R", 1, 16 },
	/* the conditionals decided by what is defined are followed (kctl's best.cl) */
	{ "#define WX 1\n#ifndef WX\n#define WX 8\n#endif\n", NULL, "WX", 1, 1 },
	{ "#ifndef WX\n#define WX 8\n#endif\n", NULL, "WX", 1, 8 },
	{ "#ifdef WX\n#define R 1\n#else\n#define R 2\n#endif\n", NULL, "R", 1, 2 },
	{ "#ifdef WX\n#define R (WX * 2)\n#else\n#define R 2\n#endif\n", "-DWX=4", "R", 1, 8 },
	{ "#define A 1\n#undef A\n#ifndef A\n#define B 5\n#endif\n", NULL, "B", 1, 5 },
	{ "#ifdef NO\n#ifndef Y\n#define Y 1\n#endif\n#else\n#define Y 2\n#endif\n", NULL, "Y", 1,
	  2 },
	{ "#ifdef NO\n#define Z 1\n#elifndef NO\n#define Z 2\n#else\n#define Z 3\n#endif\n", NULL,
	  "Z", 1, 2 },
	{ "#ifndef NO\n#define Z 1\n#elifdef NO\n#define Z 2\n#else\n#define Z 3\n#endif\n", NULL,
	  "Z", 1, 1 },
	{ "#ifdef M\n#define Q 1\n#else\n#define Q 2\n#endif\n", NULL, "Q", 1, 2 }, /* a value */
	{ "#define VEC float4\n#ifndef VEC\n#define VW 3\n#endif\n", NULL, "VW", 0, 0 },
	{ "#ifdef NO\n#endif\n#define AFTER 7\n", NULL, "AFTER", 1, 7 },
	/* an #if on an expression is followed as if true, both ways, as before */
	{ "#if 0\n#define X 3\n#endif\n", NULL, "X", 1, 3 },
	{ "#if FOO > 1\n#define X 3\n#else\n#define X 4\n#endif\n", NULL, "X", 1, 4 },
	{ "", "-DVN", "VN", 1, 1 },
	{ "", "-D WX=2*4", "WX", 1, 8 },
	{ "", "-DX=abc", "X", 0, 0 },
	{ "", "-DX=", "X", 0, 0 },
	{ "", "-DX=M*2", "X", 1, 1024 },
	{ "", "-cl-fast-relaxed-math  -DTM=2\t-Werror", "TM", 1, 2 },
	{ "", "-DA=3 -DB=A+1", "B", 1, 4 },
	{ "", "-D", "D", 0, 0 },
	{ "", "-I/include -DFOO(x)=x", "FOO", 0, 0 },
	{ NULL, NULL, "M", 1, 512 },
};

TEST(collect_defines)
{
	for (size_t i = 0; i < ARRAY_SIZE(define_cases); i++) {
		const struct define_case *c = &define_cases[i];
		struct expr_vars vars = EXPR_VARS_INIT;
		int64_t v = -1;
		int found;

		expr_vars_set(&vars, "M", 512);
		defines_collect(c->source, c->options, &vars);
		found = expr_vars_get(&vars, c->name, &v) == 0;
		if (found != c->found || (found && v != c->value))
			fprintf(stderr, "define case %zu (%s): found %d value %lld\n", i, c->name,
				found, (long long)v);
		CHECK(found == c->found);
		CHECK(!found || v == c->value);
		expr_vars_release(&vars);
	}
}

/* Several timed shapes: the first is the primary, figures are per shape. */
TEST(several_timed_shapes)
{
	struct batch b;
	char msg[512] = "", *text = doc_text(full_doc);
	json_t *root = json_loads(text, 0, NULL);
	char *edited;
	double f = 0;
	int rc;

	doc_edit(root, "shapes.0.timed", "true");
	edited = json_dumps(root, 0);
	rc = batch_parse(&b, edited, strlen(edited), msg, sizeof(msg));
	CHECK(rc == 0);
	if (!rc) {
		CHECK(b.shapes[0].timed == 1 && b.shapes[1].timed == 1);
		CHECK(b.timed_shape == 0);
		CHECK(batch_ntimed(&b) == 2);
		CHECK(batch_shape_figure(&b, 1, "2*M*N*K", &f) == 0 &&
		      f == 2.0 * 1024 * 1024 * 1024);
		CHECK(batch_shape_figure(&b, 0, "2*M*N*K", &f) == 0 && f == 2.0 * 512 * 512 * 512);
		CHECK(batch_shape_figure(&b, 2, "2*M*N*K", &f) == -1);
		CHECK(batch_timed_figure(&b, "M", &f) == 0 && f == 512);
	}
	batch_release(&b);
	rc = parse_text(&b, full_doc, msg, sizeof(msg));
	CHECK(rc == 0 && batch_ntimed(&b) == 1 && b.timed_shape == 1);
	batch_release(&b);
	free(edited);
	json_decref(root);
	free(text);
}

int main(void)
{
	RUN(full_document);
	RUN(defaults);
	RUN(release_zeroed);
	RUN(elem_types);
	RUN(malformed_documents);
	RUN(failure_late_releases);
	RUN(message_buffer_optional);
	RUN(collect_defines);
	RUN(several_timed_shapes);
	return test_summary();
}
