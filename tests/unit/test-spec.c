/*
 * test-spec.c - unit tests for controller/spec*.c.
 *
 * Specs are written into a fresh temporary folder with small template and
 * reference files beside them.  Malformed specs are the valid base spec
 * with one text edit (the first occurrence of a string replaced), so each
 * case shows exactly what is wrong and where: the expected message prefix
 * is the file, the 1-based line and column of the edited node, and its
 * key path.
 *
 *   test-spec [examples/matmul.yaml]
 */
#include "spec.h"
#include "llm.h"
#include "err.h"
#include "fileio.h"
#include "sbuf.h"
#include "xalloc.h"

#include "test.h"
#include "arraysize.h"

#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

static char tmpdir[] = "/tmp/test-spec-XXXXXX";
static char *tmpreal; /* realpath of tmpdir: the folder spec_load reports */
static const char *matmul_path;
static char *root_dir; /* the repository, for the specs it ships */

static const char tmpl_src[] =
	"// a template\n"
	"// EVOLVE-BLOCK-START\n"
	"#define WX 4\n"
	"__kernel void mm(__global const float *A, __global float *C, int N) {}\n"
	"// EVOLVE-BLOCK-END\n";

static const char marked_src[] = "/* BEGIN-EVOLVE tile */\n"
				 "#define TM 4\n"
				 "#define VN 8\n"
				 "#define WX 16\n"
				 "/* END-EVOLVE */\n"
				 "__kernel void mm(void) {}\n";

/* The base spec's reference runs its launch plan, whose local size is WX. */
static const char ref_src[] = "#define WX 1\n"
			      "__kernel void mm_ref(__global const float *A) {}\n";

/* Writes text to tmpdir/name; returns the malloc'd path. */
static char *put(const char *name, const char *text)
{
	char msg[256];
	char *path = xasprintf("%s/%s", tmpdir, name);

	if (file_write_atomic(path, text, strlen(text), msg, sizeof(msg)))
		fprintf(stderr, "cannot write %s: %s\n", path, msg);
	return path;
}

/* Double quotes for single ones, so JSON reads well inside C strings. */
static json_t *json_sq(const char *text)
{
	char *t = xstrdup(text);
	json_error_t e;
	json_t *j;

	for (char *p = t; *p; p++)
		if (*p == '\'')
			*p = '"';
	j = json_loads(t, 0, &e);
	if (!j)
		fprintf(stderr, "bad expected JSON at %d: %s\n", e.column, e.text);
	free(t);
	return j;
}

static int same_json(const json_t *got, const char *want_sq)
{
	json_t *want = json_sq(want_sq);
	int eq = got && want && json_equal(got, want);

	if (!eq) {
		char *g = got ? json_dumps(got, JSON_SORT_KEYS) : NULL;

		fprintf(stderr, "JSON differs:\n got  %s\n want %s\n", g ? g : "(null)", want_sq);
		free(g);
	}
	json_decref(want);
	return eq;
}

/* ---- a spec with every key ---- */

static const char full_spec[] =
	"# every key of the spec\n"
	"kernel:\n"
	"  name: full.mm-1\n"
	"  template: src/tmpl.cl\n"
	"  reference: ref.cl\n"
	"  markers: {start: \"BEGIN-EVOLVE\", end: END-EVOLVE}\n"
	"  build_options: -cl-mad-enable\n"
	"problem:\n"
	"  semantics: C = A*B\n"
	"  buffers:\n"
	"    A: {type: float, count: M*K, init: {dist: uniform, lo: -2, hi: 2.5}}\n"
	"    B: {type: double, count: \"K*N\", role: input, init: {dist: normal, mean: 0.5, std: "
	"1e-1}}\n"
	"    C: {type: float, count: M*N, role: output}\n"
	"    idx: {type: int, count: 16, role: inout, init: {dist: int, lo: -3, hi: 0x10}}\n"
	"    tmp: {type: long, count: M, role: scratch, init: {dist: zero}}\n"
	"    seq: {type: uint, count: N, init: {dist: iota}}\n"
	"    k7: {type: ulong, count: 4, init: {dist: const, value: 7}}\n"
	"  scalars:\n"
	"    M: {type: int, value: M}\n"
	"    N: {type: uint, value: 0x40}\n"
	"    K: {type: long, value: -3}\n"
	"    alpha: {type: float, value: 1.5}\n"
	"    beta: {type: double, value: 2}\n"
	"  launch:\n"
	"    - kernel: mm\n"
	"      args: [A, B, C, M, N, K, {local: WX*16*4}]\n"
	"      global: [\"ceil_div(N, VN)\", \"ceil_div(M, TM)\"]\n"
	"      local: [WX, 1]\n"
	"    - kernel: fixup\n"
	"      args: [C, alpha, 'beta']\n"
	"      global: [64]\n"
	"  reference_launch:\n"
	"    - kernel: mm_ref\n"
	"      args: [A, B, C, M, N, K]\n"
	"      global: [N, M]\n"
	"  flops: 2*M*N*K\n"
	"  bytes: 0x100\n"
	"shapes:\n"
	"  - {name: 512, values: {M: 512, N: 512, K: 512}}\n"
	"  - values: {M: 1024, N: 1024, K: 1024}\n"
	"    timed: true\n"
	"  - {name: odd.1, values: {M: 1, N: 3, K: 5, D: -1}, timed: false}\n"
	"tunables:\n"
	"  params:\n"
	"    TM: [1, 2, 4, 8]\n"
	"    VN: [4, 8, 16]\n"
	"    WX: [-1, 0x10]\n"
	"  constraints: [\"TM * VN <= 128\", 1]\n"
	"  render: options\n"
	"correctness: {atol: 1e-3, rtol: 0, seeds: [7, 8, 9, 10], determinism: false}\n"
	"measurement:\n"
	"  warmup: 3\n"
	"  min_samples: 5\n"
	"  max_samples: 50\n"
	"  min_time_ms: 20\n"
	"  max_time_ms: 2000.5\n"
	"  sample_min_ms: .5\n"
	"  flush: false\n"
	"  flush_bytes: 1048576\n"
	"  flush_kind: read\n"
	"  order_seed: 42\n"
	"  peak_probe: true\n"
	"limits: {compile_timeout_s: 60, run_timeout_s: 30, time_timeout_s: 600,\n"
	"         log_max_bytes: 4096, peak_margin: 1.2}\n"
	"device: {platform: Portable, device: \"\", type: cpu, index: 1}\n"
	"evaluator:\n"
	"  backend: kubernetes\n"
	"  evalpod: ../bin/evalpod\n"
	"  jobs: 4\n"
	"  storage: s3://bucket/prefix\n"
	"session:\n"
	"  max_rounds: 20\n"
	"  target_speedup: 2.5\n"
	"  max_evaluations: 1000\n"
	"  max_minutes: 30\n"
	"  stagnation_rounds: 5\n"
	"  output_dir: /tmp/out\n"
	"batch: {variants_per_round: 16, top_k: 4, max_active_lineages: 2}\n"
	"proposer:\n"
	"  kind: llm\n"
	"  seed: 0\n"
	"  llm:\n"
	"    provider: anthropic\n"
	"    model: some-model\n"
	"    base_url: http://localhost:8080/v1\n"
	"    api_key_env: MY_KEY\n"
	"    temperature: 0.7\n"
	"    stream: false\n"
	"    price: {input_per_mtok: 3, output_per_mtok: 15}\n"
	"  mix: {model: 2, tune: 1}\n"
	"  directions: 3\n"
	"  max_cost: 2.5\n"
	"  reflect: true\n";

static const char full_problem[] =
	"{'name': 'full.mm-1', 'semantics': 'C = A*B',"
	" 'buffers': ["
	"  {'name': 'A', 'type': 'float', 'count': 'M*K', 'role': 'input',"
	"   'init': {'dist': 'uniform', 'lo': -2.0, 'hi': 2.5}},"
	"  {'name': 'B', 'type': 'double', 'count': 'K*N', 'role': 'input',"
	"   'init': {'dist': 'normal', 'mean': 0.5, 'std': 0.1}},"
	"  {'name': 'C', 'type': 'float', 'count': 'M*N', 'role': 'output'},"
	"  {'name': 'idx', 'type': 'int', 'count': '16', 'role': 'inout',"
	"   'init': {'dist': 'int', 'lo': -3, 'hi': 16}},"
	"  {'name': 'tmp', 'type': 'long', 'count': 'M', 'role': 'scratch', 'init': {'dist': "
	"'zero'}},"
	"  {'name': 'seq', 'type': 'uint', 'count': 'N', 'role': 'input', 'init': {'dist': "
	"'iota'}},"
	"  {'name': 'k7', 'type': 'ulong', 'count': '4', 'role': 'input',"
	"   'init': {'dist': 'const', 'value': 7}}],"
	" 'scalars': ["
	"  {'name': 'M', 'type': 'int', 'value': 'M'},"
	"  {'name': 'N', 'type': 'uint', 'value': '64'},"
	"  {'name': 'K', 'type': 'long', 'value': '-3'},"
	"  {'name': 'alpha', 'type': 'float', 'value': 1.5},"
	"  {'name': 'beta', 'type': 'double', 'value': 2.0}],"
	" 'launch': ["
	"  {'kernel': 'mm', 'args': ['A', 'B', 'C', 'M', 'N', 'K', {'local': 'WX*16*4'}],"
	"   'global': ['ceil_div(N, VN)', 'ceil_div(M, TM)'], 'local': ['WX', '1']},"
	"  {'kernel': 'fixup', 'args': ['C', 'alpha', 'beta'], 'global': ['64']}],"
	" 'reference_launch': ["
	"  {'kernel': 'mm_ref', 'args': ['A', 'B', 'C', 'M', 'N', 'K'], 'global': ['N', 'M']}],"
	" 'flops': '2*M*N*K', 'bytes': '256'}";

static const char full_shapes[] =
	"[{'name': '512', 'values': {'M': 512, 'N': 512, 'K': 512}},"
	" {'name': '1024x1024x1024', 'values': {'M': 1024, 'N': 1024, 'K': 1024}, 'timed': true},"
	" {'name': 'odd.1', 'values': {'M': 1, 'N': 3, 'K': 5, 'D': -1}, 'timed': false}]";

static void check_full_tunables(const struct spec *s)
{
	CHECK(s->ntunables == 3);
	if (s->ntunables == 3) {
		CHECK_STR(s->tunables[0].name, "TM");
		CHECK(s->tunables[0].nvalues == 4 && s->tunables[0].values[3] == 8);
		CHECK_STR(s->tunables[1].name, "VN");
		CHECK(s->tunables[1].nvalues == 3 && s->tunables[1].values[0] == 4);
		CHECK_STR(s->tunables[2].name, "WX");
		CHECK(s->tunables[2].nvalues == 2 && s->tunables[2].values[0] == -1 &&
		      s->tunables[2].values[1] == 16);
	}
	CHECK(s->nconstraints == 2);
	if (s->nconstraints == 2) {
		CHECK_STR(s->constraints[0], "TM * VN <= 128");
		CHECK_STR(s->constraints[1], "1");
	}
	CHECK(s->render == RENDER_OPTIONS);
}

static void check_full_settings(const struct spec *s)
{
	char *want;

	CHECK(s->backend == BACKEND_KUBERNETES);
	CHECK(s->kube.pending_timeout_s == 600 && s->kube.api_retry_s == 300);
	want = xasprintf("%s/../bin/evalpod", tmpreal);
	CHECK_STR(s->evalpod, want);
	free(want);
	CHECK(s->jobs == 4);
	CHECK_STR(s->storage, "s3://bucket/prefix");
	CHECK(s->max_rounds == 20);
	CHECK(s->target_speedup == 2.5);
	CHECK(s->max_evaluations == 1000);
	CHECK(s->max_minutes == 30);
	CHECK(s->stagnation_rounds == 5);
	CHECK_STR(s->output_dir, "/tmp/out");
	CHECK(s->variants_per_round == 16);
	CHECK(s->top_k == 4);
	CHECK(s->max_active_lineages == 2);
	CHECK(s->proposer == PROPOSER_LLM);
	CHECK(s->seed == 0);
	CHECK(s->m.provider == LLM_ANTHROPIC && !s->m.stream && s->m.reflect);
	CHECK_STR(s->m.model, "some-model");
	CHECK_STR(s->m.base_url, "http://localhost:8080/v1");
	CHECK_STR(s->m.api_key_env, "MY_KEY");
	CHECK(s->m.temperature == 0.7 && isnan(s->m.top_p));
	CHECK(s->m.price_in == 3 && s->m.price_out == 15 && s->m.max_cost == 2.5);
	CHECK(s->m.weight_model == 2 && s->m.weight_tune == 1 && s->m.directions == 3);
	CHECK(s->m.max_output_tokens == 8192 && s->m.answer_retries == 2 && !s->m.replay);
	CHECK(same_json(s->proposer_conf,
			"{'kind': 'llm', 'seed': 0, 'llm': {'provider': 'anthropic',"
			" 'model': 'some-model', 'base_url': 'http://localhost:8080/v1',"
			" 'api_key_env': 'MY_KEY', 'temperature': 0.7, 'stream': false,"
			" 'price': {'input_per_mtok': 3, 'output_per_mtok': 15}},"
			" 'mix': {'model': 2, 'tune': 1}, 'directions': 3, 'max_cost': 2.5,"
			" 'reflect': true}"));
}

TEST(full_spec)
{
	struct spec s;
	char msg[512] = "";
	char *path = put("full.yaml", full_spec), *want;
	int rc = spec_load(&s, path, msg, sizeof(msg));

	CHECK(rc == 0);
	CHECK_STR(msg, "");
	CHECK_STR(s.path, path);
	CHECK_STR(s.dir, tmpreal);
	CHECK_STR(s.text, full_spec);
	CHECK_STR(s.name, "full.mm-1");
	want = xasprintf("%s/src/tmpl.cl", tmpreal);
	CHECK_STR(s.template_path, want);
	free(want);
	CHECK_STR(s.template_src, marked_src);
	CHECK_STR(s.reference_src, ref_src);
	CHECK_STR(s.marker_start, "BEGIN-EVOLVE");
	CHECK_STR(s.marker_end, "END-EVOLVE");
	CHECK_STR(s.build_options, "-cl-mad-enable");
	CHECK_STR(s.semantics, "C = A*B");
	CHECK(same_json(s.problem, full_problem));
	CHECK(same_json(s.shapes, full_shapes));
	CHECK(same_json(
		s.correctness,
		"{'atol': 0.001, 'rtol': 0.0, 'seeds': [7, 8, 9, 10], 'determinism': false}"));
	CHECK(same_json(s.measurement,
			"{'warmup': 3, 'min_samples': 5, 'max_samples': 50, 'min_time_ms': 20.0,"
			" 'max_time_ms': 2000.5, 'sample_min_ms': 0.5, 'flush': false,"
			" 'flush_bytes': 1048576, 'flush_kind': 'read', 'order_seed': 42,"
			" 'peak_probe': true}"));
	CHECK(same_json(s.limits, "{'compile_timeout_s': 60.0, 'run_timeout_s': 30.0,"
				  " 'time_timeout_s': 600.0, 'log_max_bytes': 4096,"
				  " 'peak_margin': 1.2}"));
	CHECK(same_json(s.device,
			"{'platform': 'Portable', 'device': '', 'type': 'cpu', 'index': 1}"));
	check_full_tunables(&s);
	check_full_settings(&s);
	spec_release(&s);
	free(path);
}

/* ---- the smallest spec: every default ---- */

static const char base_spec[] = "kernel:\n"
				"  name: mm\n"
				"  template: tmpl.cl\n"
				"  reference: ref.cl\n"
				"problem:\n"
				"  buffers:\n"
				"    A: {type: float, count: N*N}\n"
				"    C: {type: float, count: N*N, role: output}\n"
				"  scalars:\n"
				"    N: {type: int, value: N}\n"
				"  launch:\n"
				"    - kernel: mm\n"
				"      args: [A, C, N]\n"
				"      global: [N, N]\n"
				"      local: [WX, 1]\n"
				"shapes:\n"
				"  - {name: small, values: {N: 16}}\n"
				"  - {values: {N: 64}, timed: true}\n"
				"tunables:\n"
				"  params:\n"
				"    WX: [1, 2, 4]\n"
				"  constraints: [\"WX <= 4\"]\n"
				"correctness:\n"
				"  seeds: [1, 2, 3]\n"
				"batch:\n"
				"  variants_per_round: 8\n";

static const char min_spec[] = "kernel: {name: mm, template: tmpl.cl, reference: ref.cl}\n"
			       "problem:\n"
			       "  buffers: {C: {type: float, count: 4, role: output}}\n"
			       "  launch: [{kernel: mm, args: [C], global: [4]}]\n"
			       "shapes: [{values: {N: 4}}]\n";

TEST(defaults)
{
	struct spec s;
	char msg[512] = "";
	char *path = put("min.yaml", min_spec), *want;
	int rc = spec_load(&s, path, msg, sizeof(msg));

	CHECK(rc == 0);
	CHECK_STR(msg, "");
	CHECK_STR(s.marker_start, "EVOLVE-BLOCK-START");
	CHECK_STR(s.marker_end, "EVOLVE-BLOCK-END");
	CHECK_STR(s.build_options, "");
	CHECK(s.semantics == NULL);
	CHECK(same_json(s.problem,
			"{'name': 'mm', 'buffers': [{'name': 'C', 'type': 'float',"
			" 'count': '4', 'role': 'output'}],"
			" 'launch': [{'kernel': 'mm', 'args': ['C'], 'global': ['4']}]}"));
	CHECK(same_json(s.shapes, "[{'name': '4', 'values': {'N': 4}}]"));
	CHECK(!s.correctness && !s.measurement && !s.limits && !s.device);
	CHECK(s.ntunables == 0 && !s.tunables && s.nconstraints == 0);
	CHECK(s.render == RENDER_DEFINE);
	CHECK(s.backend == BACKEND_LOCAL && !s.evalpod && s.jobs == 0 && !s.storage);
	CHECK(s.max_rounds == 10 && s.target_speedup == 0 && s.max_evaluations == 200);
	CHECK(s.max_minutes == 0 && s.stagnation_rounds == 3);
	want = xasprintf("%s/runs/mm", tmpreal);
	CHECK_STR(s.output_dir, want);
	free(want);
	CHECK(s.variants_per_round == 8 && s.top_k == 3 && s.max_active_lineages == 4);
	CHECK(s.proposer == PROPOSER_TUNE && s.seed == 1);
	CHECK(same_json(s.proposer_conf, "{'kind': 'tune', 'seed': 1}"));
	spec_release(&s);
	free(path);
}

/* session.github: its defaults, and every key read. */
TEST(session_github)
{
	struct spec s;
	char msg[512] = "";
	char *text = xasprintf("%ssession:\n  github: {repo: my-org/kernels.x}\n", base_spec);
	char *path = put("gh.yaml", text);

	CHECK(spec_load(&s, path, msg, sizeof(msg)) == 0);
	CHECK_STR(s.github.repo, "my-org/kernels.x");
	CHECK_STR(s.github.token_env, "GITHUB_TOKEN");
	CHECK(s.github.api_url == NULL && s.github.ca_file == NULL);
	CHECK(same_json(s.github.labels, "['kctl']"));
	spec_release(&s);
	free(text);
	free(path);
	text = xasprintf("%ssession:\n  github: {repo: o/r, token_env: KCTL_GH, api_url: "
			 "\"https://ghe.example/api/v3\", labels: [a, b c]}\n",
			 base_spec);
	path = put("gh.yaml", text);
	CHECK(spec_load(&s, path, msg, sizeof(msg)) == 0);
	CHECK_STR(s.github.token_env, "KCTL_GH");
	CHECK_STR(s.github.api_url, "https://ghe.example/api/v3");
	CHECK(same_json(s.github.labels, "['a', 'b c']"));
	spec_release(&s);
	free(text);
	free(path);
	/* no github: no tracking issue */
	path = put("plain.yaml", base_spec);
	CHECK(spec_load(&s, path, msg, sizeof(msg)) == 0);
	CHECK(s.github.repo == NULL && s.github.labels == NULL);
	spec_release(&s);
	free(path);
}

/* cache: its defaults, every key read, and what it refuses (with the key's path). */
TEST(cache_section)
{
	static const struct {
		const char *tail;
		int enabled;
		double age;
		const char *error; /* NULL: loads */
	} cases[] = {
		{ "", 1, 30, NULL },
		{ "cache: {enabled: false}\n", 0, 30, NULL },
		{ "cache: {max_age_days: 0.5}\n", 1, 0.5, NULL },
		{ "cache: {enabled: true, max_age_days: 0}\n", 1, 0, NULL },
		{ "cache: {enabled: 3}\n", 0, 0, "cache.enabled" },
		{ "cache: {max_age_days: -1}\n", 0, 0, "cache.max_age_days" },
		{ "cache: {max_age_days: 40000}\n", 0, 0, "cache.max_age_days" },
		{ "cache: {s3: on}\n", 0, 0, "cache.s3" },
		{ "cache: [1]\n", 0, 0, "cache" },
		{ "cache: {s3: true}\n", 0, 0, "cache.s3" }, /* no s3:// storage */
		{ "evaluator: {storage: \"s3://b/p\"}\ncache: {s3: true}\n", 1, 30, NULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct spec s;
		char msg[512] = "";
		char *text = xasprintf("%s%s", base_spec, cases[i].tail);
		char *path = put("cache.yaml", text);
		int rc = spec_load(&s, path, msg, sizeof(msg));

		if (cases[i].error) {
			CHECK(rc != 0);
			CHECK_CONTAINS(msg, cases[i].error);
		} else {
			CHECK(rc == 0);
			CHECK(rc || (s.cache_enabled == cases[i].enabled &&
				     s.cache_max_age_days == cases[i].age &&
				     s.cache_s3 == (strstr(cases[i].tail, "s3: true") != NULL)));
		}
		spec_release(&s); /* after a failure too: what was loaded */
		free(text);
		free(path);
	}
}

/* The command proposer keeps its keys; tune with only kind and seed is fine. */
TEST(proposer_kinds)
{
	static const char *const tails[] = {
		"proposer: {kind: command, command: {run: [./propose.sh, -v], env: [TOK]}}\n",
		"proposer: {kind: tune, seed: 9}\n",
	};
	struct spec s;
	char msg[512] = "";
	char *text = xasprintf("%s%s", min_spec, tails[0]);
	char *path = put("prop.yaml", text);

	CHECK(spec_load(&s, path, msg, sizeof(msg)) == 0);
	CHECK(s.proposer == PROPOSER_COMMAND);
	CHECK(same_json(s.proposer_conf, "{'kind': 'command', 'seed': 1, 'command':"
					 " {'run': ['./propose.sh', '-v'], 'env': ['TOK']}}"));
	CHECK(s.m.argv && !strcmp(s.m.argv[0], "./propose.sh") && !strcmp(s.m.argv[1], "-v") &&
	      !s.m.argv[2]);
	CHECK(s.m.pass_env && !strcmp(s.m.pass_env[0], "TOK") && !s.m.pass_env[1]);
	CHECK(s.m.weight_model == 3 && s.m.weight_tune == 1);
	spec_release(&s);
	free(path);
	free(text);
	text = xasprintf("%s%s", min_spec, tails[1]);
	path = put("prop.yaml", text);
	CHECK(spec_load(&s, path, msg, sizeof(msg)) == 0);
	CHECK(s.proposer == PROPOSER_TUNE && s.seed == 9);
	CHECK(same_json(s.proposer_conf, "{'kind': 'tune', 'seed': 9}"));
	spec_release(&s);
	free(path);
	free(text);
}

TEST(base_is_valid)
{
	struct spec s;
	char msg[512] = "";
	char *path = put("base.yaml", base_spec);

	CHECK(spec_load(&s, path, msg, sizeof(msg)) == 0);
	CHECK_STR(msg, "");
	CHECK(same_json(s.shapes, "[{'name': 'small', 'values': {'N': 16}},"
				  " {'name': '64', 'values': {'N': 64}, 'timed': true}]"));
	spec_release(&s);
	free(path);
}

TEST(matmul_example)
{
	struct spec s;
	char msg[512] = "";
	int rc = spec_load(&s, matmul_path, msg, sizeof(msg));

	CHECK(rc == 0);
	CHECK_STR(msg, "");
	CHECK_STR(s.name, "matmul");
	CHECK(s.ntunables == 9 && s.nconstraints == 8 && s.render == RENDER_OPTIONS);
	CHECK(s.nstarts == 4 && s.starts[1 * 9] == 6); /* the second start: TM=6 */
	CHECK(s.max_rounds == 6 && s.max_evaluations == 48 && s.variants_per_round == 8);
	CHECK(json_array_size(s.shapes) == 3);
	CHECK_STR(json_string_value(json_object_get(json_array_get(s.shapes, 1), "name")),
		  "512x2048x256");
	CHECK(json_is_true(json_object_get(json_array_get(s.shapes, 0), "timed")));
	CHECK_CONTAINS(s.template_src, "EVOLVE-BLOCK-START");
	CHECK_CONTAINS(s.reference_src, "matmul_ref");
	spec_release(&s);
}

TEST(missing_spec_file)
{
	struct spec s;
	char msg[512] = "";
	char *path = xasprintf("%s/none.yaml", tmpdir), *want;
	int rc = spec_load(&s, path, msg, sizeof(msg));

	CHECK(rc == KERR_IO);
	want = xasprintf("%s:1:1: document: cannot open", path);
	CHECK(!strncmp(msg, want, strlen(want)));
	spec_release(&s);
	free(want);
	free(path);
}

/* ---- malformed specs ---- */

#define WHOLE NULL /* find: replace the whole text */

static const struct bad {
	const char *find, *repl; /* edit of base_spec; "\n" at the end appends */
	const char *where;       /* "LINE:COLUMN: key.path" */
	int code;
	const char *why; /* a substring of the reason */
} bads[] = {
	{ "batch:\n  variants_per_round: 8\n", "batch:\n  variants_per_round: 8\ncolour: blue\n",
	  "27:1: colour", KERR_PARSE, "unknown key (expected one of kernel, problem" },
	{ "  name: mm\n", "  nmae: mm\n", "2:3: kernel.nmae", KERR_PARSE, "unknown key" },
	{ "count: N*N}", "count: [N]}", "7:29: problem.buffers.A.count", KERR_PARSE,
	  "expected an integer expression (a string or an integer), got a list" },
	{ "seeds: [1, 2, 3]", "seeds: [1, 2]", "24:10: correctness.seeds", KERR_RANGE,
	  "has 2 entries, expected 3 to 64" },
	{ "seeds: [1, 2, 3]", "seeds: [1, -2, 3]", "24:14: correctness.seeds[1]", KERR_RANGE,
	  "-2 is outside [0, 9223372036854775807]" },
	{ "seeds: [1, 2, 3]", "seeds: [1, 2, 1]", "24:17: correctness.seeds[2]", KERR_INVALID,
	  "1 repeats seeds[0]" },
	{ "template: tmpl.cl", "template: nope.cl", "3:13: kernel.template", KERR_IO,
	  "cannot open" },
	{ "template: tmpl.cl", "template: open.cl", "3:13: kernel.template", KERR_PARSE,
	  "open.cl: line 2: block '0' is never closed" },
	{ "template: tmpl.cl", "template: stray.cl", "3:13: kernel.template", KERR_PARSE,
	  "stray.cl: line 2: EVOLVE-BLOCK-END without a start" },
	{ "  reference: ref.cl\n",
	  "  reference: ref.cl\n  markers: {start: BEGIN-TILE, end: END-TILE}\n",
	  "3:13: kernel.template", KERR_PARSE, "tmpl.cl: no BEGIN-TILE marker" },
	{ "reference: ref.cl", "reference: nope.cl", "4:14: kernel.reference", KERR_IO,
	  "cannot open" },
	{ "count: N*N}", "count: \"N*(N\"}", "7:29: problem.buffers.A.count", KERR_PARSE,
	  "at column" },
	{ "args: [A, C, N]", "args: [A, Q, N]", "13:17: problem.launch[0].args[1]", KERR_INVALID,
	  "'Q' names no buffer or scalar" },
	{ "args: [A, C, N]", "args: [A, [C], N]", "13:17: problem.launch[0].args[1]", KERR_PARSE,
	  "expected a buffer or scalar name or {local: BYTES}, got a list" },
	{ "  name: mm\n", "  name: mm\n  name: again\n", "3:3: kernel.name", KERR_PARSE,
	  "duplicate key (first at line 2, column 3)" },
	{ "{name: small, values: {N: 16}}", "{values: {N: 64}}", "18:5: shapes[1].name",
	  KERR_INVALID, "'64' is also the name of shapes[0]" },
	{ "{N: 16}", "{N: 16.5}", "17:31: shapes[0].values.N", KERR_PARSE,
	  "expected an integer, got number 16.5" },
	{ "WX: [1, 2, 4]", "WX: []", "21:9: tunables.params.WX", KERR_RANGE,
	  "has 0 entries, expected 1 to 4096" },
	{ "WX: [1, 2, 4]", "WX: [1, 2, 2]", "21:16: tunables.params.WX[2]", KERR_INVALID,
	  "2 repeats WX[1]" },
	{ "[\"WX <= 4\"]", "[\"WX <=\"]", "22:17: tunables.constraints[0]", KERR_PARSE,
	  "at column" },
	{ "  constraints: [\"WX <= 4\"]\n", "  constraints: [\"WX <= 4\"]\n  render: macro\n",
	  "23:11: tunables.render", KERR_INVALID, "'macro' is not one of define, options" },
	{ "  constraints: [\"WX <= 4\"]\n", "  constraints: [\"WX <= 4\"]\n  starts: [{WX: x}]\n",
	  "23:17: tunables.starts[0].WX", KERR_PARSE, "expected an integer" },
	{ "  constraints: [\"WX <= 4\"]\n", "  constraints: [\"WX <= 4\"]\n  starts: [{QQ: 1}]\n",
	  "23:13: tunables.starts[0].QQ", KERR_INVALID, "'QQ' is not in tunables.params" },
	{ "  constraints: [\"WX <= 4\"]\n",
	  "  constraints: [\"WX <= 4\"]\n  starts: [{WX: 1, WX: 2}]\n",
	  "23:20: tunables.starts[0].WX", KERR_PARSE,
	  "duplicate key (first at line 23, column 13)" },
	{ "  constraints: [\"WX <= 4\"]\n", "  constraints: [\"WX <= 4\"]\n  starts: [{}]\n",
	  "23:12: tunables.starts[0]", KERR_RANGE, "has 0 entries, expected 1 to 64" },
	{ "variants_per_round: 8", "variants_per_round: 5000", "26:23: batch.variants_per_round",
	  KERR_RANGE, "5000 is outside [1, 4096]" },
	{ "variants_per_round: 8", "variants_per_round: true", "26:23: batch.variants_per_round",
	  KERR_PARSE, "expected an integer, got boolean true" },
	{ "  name: mm\n", "  name: mm: x\n", "2:11: document", KERR_PARSE,
	  "mapping values are not allowed" },
	{ WHOLE, "- a\n- b\n", "1:1: document", KERR_PARSE,
	  "expected a mapping with kernel, problem and shapes, got a list" },
	{ WHOLE, "", "1:1: document", KERR_PARSE, "the file is empty" },
	{ "  name: mm\n", "\tname: mm\n", "2:1: document", KERR_PARSE,
	  "cannot start any token (while scanning for the next token at line 2, column 1); "
	  "it is a tab, and YAML indents with spaces only" },
	{ "batch:\n  variants_per_round: 8\n", "batch:\n  variants_per_round: 8\n---\nfoo: 1\n",
	  "27:1: document", KERR_PARSE, "a second YAML document" },
	{ "  reference: ref.cl\n", "", "2:3: kernel.reference", KERR_PARSE,
	  "required key is missing" },
	{ "  name: mm\n", "  name: ../mm\n", "2:9: kernel.name", KERR_INVALID,
	  "'../mm' is not a name" },
	{ "    A: {type", "    1A: {type", "7:5: problem.buffers.1A", KERR_INVALID,
	  "is not a C identifier" },
	{ "A: {type: float", "A: {type: half", "7:15: problem.buffers.A.type", KERR_INVALID,
	  "'half' is not one of float, double, int, uint, long, ulong" },
	{ "role: output", "role: scratch", "7:5: problem.buffers", KERR_INVALID,
	  "no buffer has role output or inout" },
	{ "count: N*N,", "count: -4,", "8:29: problem.buffers.C.count", KERR_RANGE,
	  "-4 is negative" },
	{ "count: N*N}", "count: !!int 5}", "7:29: problem.buffers.A.count", KERR_PARSE,
	  "tag 'tag:yaml.org,2002:int' is not supported" },
	{ "A: {type: float, count: N*N}", "A: {type: int, count: N*N, init: {dist: normal}}",
	  "7:45: problem.buffers.A.init.dist", KERR_INVALID, "'normal' gives non-integer values" },
	{ "count: N*N}", "count: N*N, init: {dist: uniform, lo: 2, hi: 1}}",
	  "7:67: problem.buffers.A.init.hi", KERR_RANGE, "1 is less than lo (2)" },
	{ "    N: {type: int, value: N}", "    A: {type: int, value: N}", "10:5: problem.scalars.A",
	  KERR_INVALID, "already the name of a buffer" },
	{ "    N: {type: int, value: N}\n",
	  "    N: {type: int, value: N}\n    alpha: {type: float, value: M}\n",
	  "11:33: problem.scalars.alpha.value", KERR_PARSE, "expected a number, got string 'M'" },
	{ "local: [WX, 1]", "local: [WX]", "15:14: problem.launch[0].local", KERR_INVALID,
	  "has 1 entries, global has 2" },
	{ "global: [N, N]", "global: [N, N, 1, 1]", "14:15: problem.launch[0].global", KERR_RANGE,
	  "has 4 entries, expected 1 to 3" },
	{ "- kernel: mm", "- kernel: mm-x", "12:15: problem.launch[0].kernel", KERR_INVALID,
	  "'mm-x' is not a C identifier" },
	{ "batch:\n  variants_per_round: 8\n",
	  "batch:\n  variants_per_round: 8\nproposer:\n  kind: tune\n  model: x\n",
	  "29:3: proposer.model", KERR_PARSE, "unknown key (expected one of kind, seed, llm," },
	{ "batch:\n  variants_per_round: 8\n",
	  "batch:\n  variants_per_round: 8\nproposer:\n  kind: tune\n  llm: {model: x}\n",
	  "29:8: proposer.llm", KERR_INVALID, "a setting of the model proposers, but the kind is" },
	{ "batch:\n  variants_per_round: 8\n",
	  "batch:\n  variants_per_round: 8\nproposer:\n  kind: llm\n", "28:3: proposer", KERR_PARSE,
	  "kind 'llm' needs an 'llm' map" },
	{ "batch:\n  variants_per_round: 8\n",
	  "batch:\n  variants_per_round: 8\nproposer:\n  kind: llm\n  llm: {provider: openai,"
	  " model: m, api_key: sk-abc}\n",
	  "29:46: proposer.llm.api_key", KERR_INVALID, "does not belong in the spec" },
	{ "batch:\n  variants_per_round: 8\n",
	  "batch:\n  variants_per_round: 8\nproposer:\n  kind: llm\n  llm: {provider: openai,"
	  " model: m, api_key_env: sk-proj-abc123}\n",
	  "29:50: proposer.llm.api_key_env", KERR_INVALID, "not the key itself" },
	{ "batch:\n  variants_per_round: 8\n",
	  "batch:\n  variants_per_round: 8\nproposer:\n  kind: llm\n  llm: {provider: openai,"
	  " model: m}\n  max_cost: 3\n",
	  "28:3: proposer", KERR_INVALID, "max_cost needs a price table" },
	{ "batch:\n  variants_per_round: 8\n",
	  "batch:\n  variants_per_round: 8\nproposer:\n  kind: command\n  command: {run: [x],"
	  " env: [A-B]}\n",
	  "29:29: proposer.command.env[0]", KERR_INVALID, "not an environment variable's name" },
	{ "batch:\n  variants_per_round: 8\n",
	  "batch:\n  variants_per_round: 8\nproposer:\n  kind: llm\n  llm: {provider: grok,"
	  " model: m}\n",
	  "29:19: proposer.llm.provider", KERR_INVALID, "openai" },
	{ "batch:\n  variants_per_round: 8\n",
	  "batch:\n  variants_per_round: 8\nevaluator:\n  storage: http://x/y\n",
	  "28:12: evaluator.storage", KERR_INVALID, "is not a file://PATH or s3://BUCKET" },
	{ "batch:\n  variants_per_round: 8\n",
	  "batch:\n  variants_per_round: 8\nevaluator:\n  storage: s3://bkt/runs/./x\n",
	  "28:12: evaluator.storage", KERR_INVALID, "prefix 'runs/./x' has a '.' segment" },
	{ "batch:\n  variants_per_round: 8\n",
	  "batch:\n  variants_per_round: 8\nevaluator:\n  storage: s3://bkt/a/../b/\n",
	  "28:12: evaluator.storage", KERR_INVALID, "prefix 'a/../b' has a '..' segment" },
	{ "batch:\n  variants_per_round: 8\n",
	  "batch:\n  variants_per_round: 8\nevaluator:\n  storage: s3://bkt/a//b\n",
	  "28:12: evaluator.storage", KERR_INVALID, "prefix 'a//b' has an empty segment ('//')" },
	{ "batch:\n  variants_per_round: 8\n",
	  "batch:\n  variants_per_round: 8\nevaluator:\n  storage: s3://bkt/..\n",
	  "28:12: evaluator.storage", KERR_INVALID, "would not match its signature" },
	{ "batch:\n  variants_per_round: 8\n",
	  "batch:\n  variants_per_round: 8\nsession:\n  max_rounds: 0\n",
	  "28:15: session.max_rounds", KERR_RANGE, "0 is outside [1, 10000]" },
	{ "batch:\n  variants_per_round: 8\n",
	  "batch:\n  variants_per_round: 8\nsession:\n  github: {repo: noslash}\n",
	  "28:18: session.github.repo", KERR_INVALID, "'noslash' is not owner/name" },
	{ "batch:\n  variants_per_round: 8\n",
	  "batch:\n  variants_per_round: 8\nsession:\n  github: {repo: a/.., labels: [x]}\n",
	  "28:18: session.github.repo", KERR_INVALID, "'a/..' is not owner/name" },
	{ "batch:\n  variants_per_round: 8\n",
	  "batch:\n  variants_per_round: 8\nsession:\n  github: {repo: a/b, api_url: "
	  "\"http://x\"}\n",
	  "28:32: session.github.api_url", KERR_INVALID,
	  "is not an https:// URL (the token goes there)" },
	{ "batch:\n  variants_per_round: 8\n",
	  "batch:\n  variants_per_round: 8\nsession:\n  github: {repo: a/b, labels: [\"x,y\"]}\n",
	  "28:32: session.github.labels[0]", KERR_INVALID, "without a comma" },
	{ "batch:\n  variants_per_round: 8\n",
	  "batch:\n  variants_per_round: 8\nsession:\n  github: {repo: a/b, token_env: \"A-B\"}\n",
	  "28:34: session.github.token_env", KERR_INVALID, "C identifier" },
	{ "batch:\n  variants_per_round: 8\n",
	  "batch:\n  variants_per_round: 8\nsession:\n  github: {token: abc}\n",
	  "28:12: session.github.token", KERR_PARSE, "unknown key" },
	{ "batch:\n  variants_per_round: 8\n",
	  "batch:\n  variants_per_round: 8\nmeasurement:\n  min_samples: 500\n",
	  "28:16: measurement.min_samples", KERR_RANGE,
	  "500 is greater than max_samples (200, the default)" },
	{ "batch:\n  variants_per_round: 8\n", "batch:\n", "25:7: batch", KERR_PARSE,
	  "expected a mapping, got null" },
	{ "variants_per_round: 8", "variants_per_round: \"8\"", "26:23: batch.variants_per_round",
	  KERR_PARSE, "expected an integer, got string '8'" },
	{ "batch:\n  variants_per_round: 8\n",
	  "batch:\n  variants_per_round: 8\nevaluator: {kubernetes: {tolerations: &a [*a]}}\n",
	  "27:39: evaluator.kubernetes.tolerations[0]", KERR_PARSE,
	  "an alias refers to a node that contains it" },
	{ "batch:\n  variants_per_round: 8\n",
	  "batch:\n  variants_per_round: 8\nevaluator: {kubernetes: {api_retry_s: -1}}\n",
	  "27:39: evaluator.kubernetes.api_retry_s", KERR_RANGE, "-1 is outside [0, 86400]" },
};

static char *apply(const struct bad *b)
{
	struct sbuf out = SBUF_INIT;
	const char *at;

	if (!b->find) {
		sbuf_adds(&out, b->repl);
		sbuf_addch(&out, '\0');
		return sbuf_detach(&out, NULL);
	}
	at = strstr(base_spec, b->find);
	if (!at) {
		fprintf(stderr, "case edit '%s' not found in the base spec\n", b->find);
		return NULL;
	}
	sbuf_add(&out, base_spec, (size_t)(at - base_spec));
	sbuf_adds(&out, b->repl);
	sbuf_adds(&out, at + strlen(b->find));
	return sbuf_detach(&out, NULL);
}

/* Several timed shapes (shape buckets): each keeps its timed flag, in order. */
TEST(several_timed_shapes)
{
	struct spec s;
	char msg[512] = "";
	struct bad edit = { "{name: small, values: {N: 16}}",
			    "{name: small, values: {N: 16}, timed: true}", NULL, 0, NULL };
	char *text = apply(&edit), *path = put("buckets.yaml", text);

	CHECK(spec_load(&s, path, msg, sizeof(msg)) == 0);
	CHECK_STR(msg, "");
	CHECK(same_json(s.shapes, "[{'name': 'small', 'values': {'N': 16}, 'timed': true},"
				  " {'name': '64', 'values': {'N': 64}, 'timed': true}]"));
	spec_release(&s);
	free(path);
	free(text);
}

/*
 * A start with a value its parameter's list lacks loads: the tuner skips it
 * (test-tune.c), so narrowing a list does not mean editing the starts.
 */
TEST(start_outside_a_narrowed_list)
{
	struct spec s;
	char msg[512] = "";
	struct bad edit = { "  constraints: [\"WX <= 4\"]\n",
			    "  constraints: [\"WX <= 4\"]\n  starts: [{WX: 3}, {WX: 2}]\n", NULL, 0,
			    NULL };
	char *text = apply(&edit), *path = put("starts.yaml", text);

	CHECK(spec_load(&s, path, msg, sizeof(msg)) == 0);
	CHECK_STR(msg, "");
	CHECK(s.nstarts == 2 && s.starts[0] == 3 && s.starts[1] == 2);
	spec_release(&s);
	free(path);
	free(text);
}

TEST(malformed)
{
	for (size_t i = 0; i < ARRAY_SIZE(bads); i++) {
		struct spec s;
		char msg[1024] = "";
		char *text = apply(&bads[i]), *path, *prefix;
		int rc;

		CHECK(text != NULL);
		if (!text)
			continue;
		path = put("bad.yaml", text);
		rc = spec_load(&s, path, msg, sizeof(msg));
		prefix = xasprintf("%s:%s: ", path, bads[i].where);
		if (rc != bads[i].code || strncmp(msg, prefix, strlen(prefix)) ||
		    !strstr(msg + strlen(prefix), bads[i].why))
			fprintf(stderr, "case %zu: rc %d (want %d)\n  got  %s\n  want %s...%s\n", i,
				rc, bads[i].code, msg, prefix, bads[i].why);
		CHECK(rc == bads[i].code);
		CHECK(!strncmp(msg, prefix, strlen(prefix)));
		CHECK(strstr(msg, bads[i].why) != NULL);
		spec_release(&s);
		free(prefix);
		free(path);
		free(text);
	}
}

/*
 * Nesting: 64 levels under the root are read, the 65th is refused where it
 * begins, and 100,000 nested flow lists (200 KB) are refused there too,
 * before libyaml loads them (which took 23 s: common/yamlx.c, depth_scan).
 */
TEST(deep_nesting)
{
	static const size_t levels[] = { 64, 65, 100000 };

	for (size_t i = 0; i < ARRAY_SIZE(levels); i++) {
		size_t d = levels[i];
		char *text = xmalloc(8 + 2 * d + 2), *path, msg[1024] = "", *want;
		struct spec s;
		int rc;

		memcpy(text, "kernel: ", 8);
		memset(text + 8, '[', d);
		memset(text + 8 + d, ']', d);
		memcpy(text + 8 + 2 * d, "\n", 2);
		path = put("deep.yaml", text);
		rc = spec_load(&s, path, msg, sizeof(msg));
		want = xasprintf("%s:1:73: document: nested deeper than 64 levels", path);
		if (d == 64) {
			/* read whole: the spec is then wrong for what it lacks */
			CHECK(rc == KERR_PARSE && strstr(msg, "nested") == NULL);
		} else {
			CHECK(rc == KERR_RANGE && !strcmp(msg, want));
			if (strcmp(msg, want))
				fprintf(stderr, "%zu levels: got %s\n", d, msg);
		}
		spec_release(&s);
		free(want);
		free(path);
		free(text);
	}
}

/*
 * An alias puts its anchor's whole subtree where it stands: 30 levels
 * aliased 40 deep is 70 deep in the tree, though no collection of the
 * stream is; the tree's walk refuses it, at the alias's target.
 */
#define OPEN  "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
#define CLOSE "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
TEST(deep_through_an_alias)
{
	char *text = xasprintf("a: &x %.30s%.30s\nb: %.40s*x%.40s\n", OPEN, CLOSE, OPEN, CLOSE);
	char *path, msg[1024] = "";
	struct spec s;
	int rc;

	path = put("alias.yaml", text);
	rc = spec_load(&s, path, msg, sizeof(msg));
	CHECK(rc == KERR_RANGE && strstr(msg, "nested deeper than 64 levels") &&
	      strstr(msg, ": b[0][0]"));
	spec_release(&s);
	free(path);
	free(text);
}

/* ---- expressions resolved at load, as evalpod resolves them ---- */

/* Tunables with #ifndef defaults; PER does not evaluate when U is 4. */
static const char ex_src[] =
	"// EVOLVE-BLOCK-START\n"
	"#ifndef LS\n"
	"#define LS 64\n"
	"#endif\n"
	"#ifndef U\n"
	"#define U 1\n"
	"#endif\n"
	"#define PER (64 / (4 - U))\n"
	"__kernel void ex(__global const float *x, __global float *y, int n) {}\n"
	"// EVOLVE-BLOCK-END\n";

static const char ex_ref_src[] = "__kernel void ex_ref(__global const float *x) {}\n";

static const char expr_spec[] = "kernel:\n"
				"  name: ex\n"
				"  template: ex.cl\n"
				"  reference: ex_ref.cl\n"
				"problem:\n"
				"  buffers:\n"
				"    x: {type: float, count: n}\n"
				"    y: {type: float, count: n, role: output}\n"
				"  scalars:\n"
				"    n: {type: int, value: n}\n"
				"  launch:\n"
				"    - kernel: ex\n"
				"      args: [x, y, n, {local: LS*4}]\n"
				"      global: [\"round_up(ceil_div(n, U), LS)\"]\n"
				"      local: [LS]\n"
				"  reference_launch:\n"
				"    - {kernel: ex_ref, args: [x, y, n], global: [n]}\n"
				"  flops: 2*n\n"
				"shapes:\n"
				"  - {name: big, timed: true, values: {n: 4096}}\n"
				"  - {name: odd, values: {n: 1000}}\n"
				"tunables:\n"
				"  params:\n"
				"    LS: [16, 32, 64]\n"
				"    U: [1, 2, 4]\n"
				"  render: options\n";

static const struct expr_case {
	const char *find[2], *repl[2]; /* edits of expr_spec (a NULL find: none) */
	const char *where;             /* "LINE:COLUMN: key.path"; NULL: the spec loads */
	int code;
	const char *why; /* a substring of the reason */
} expr_cases[] = {
	{ { NULL }, { NULL }, NULL, 0, NULL },
	{ { "ceil_div(n, U)" },
	  { "ceil_div(n, VTP)" },
	  "14:16: problem.launch[0].global[0]",
	  KERR_INVALID,
	  "unknown name 'VTP' at column 22 at shape 'big' (known: n, LS, U, PER)" },
	{ { "local: [LS]" },
	  { "local: [LSS]" },
	  "15:15: problem.launch[0].local[0]",
	  KERR_INVALID,
	  "unknown name 'LSS' at column 1 at shape 'big' (known: n, LS, U, PER)" },
	{ { "global: [n]}" },
	  { "global: [N]}" },
	  "17:50: problem.reference_launch[0].global[0]",
	  KERR_INVALID,
	  "unknown name 'N' at column 1 at shape 'big' for the reference (known: n)" },
	{ { "count: n}" },
	  { "count: nn}" },
	  "7:29: problem.buffers.x.count",
	  KERR_INVALID,
	  "unknown name 'nn' at column 1 at shape 'big' (known: n)" },
	{ { "{local: LS*4}" },
	  { "{local: LS*W}" },
	  "13:31: problem.launch[0].args[3].local",
	  KERR_INVALID,
	  "unknown name 'W' at column 4 at shape 'big'" },
	/* counts, scalars, flops and bytes see the shape's values alone */
	{ { "flops: 2*n" },
	  { "flops: 2*LS" },
	  "18:10: problem.flops",
	  KERR_INVALID,
	  "unknown name 'LS' at column 3 at shape 'big' (known: n)" },
	{ { "value: n}" },
	  { "value: U}" },
	  "10:27: problem.scalars.n.value",
	  KERR_INVALID,
	  "unknown name 'U' at column 1 at shape 'big' (known: n)" },
	{ { "count: n}" },
	  { "count: n - 2000}" },
	  "7:29: problem.buffers.x.count",
	  KERR_RANGE,
	  "'n - 2000' = -1000 is not positive at shape 'odd'" },
	{ { "value: n}" },
	  { "value: n * 0x1000000}" },
	  "10:27: problem.scalars.n.value",
	  KERR_RANGE,
	  "= 68719476736 does not fit in int at shape 'big'" },
	/* arithmetic fails for the template as written (U is 1) ... */
	{ { "local: [LS]" },
	  { "local: [\"LS / (U - 1)\"]" },
	  "15:15: problem.launch[0].local[0]",
	  KERR_RANGE,
	  "division by zero at column 4 at shape 'big'" },
	{ { "local: [LS]" },
	  { "local: [\"LS - 64\"]" },
	  "15:15: problem.launch[0].local[0]",
	  KERR_RANGE,
	  "'LS - 64' = 0 is not positive at shape 'big'" },
	/* a global size of 0 skips the step (U is 1); below 0 it is an error */
	{ { "ceil_div(n, U), LS)" }, { "ceil_div(n, U), LS) * (U - 1)" }, NULL, 0, NULL },
	{ { "ceil_div(n, U), LS)" },
	  { "ceil_div(n, U), LS) * (U - 2)" },
	  "14:16: problem.launch[0].global[0]",
	  KERR_RANGE,
	  "= -4096 is negative at shape 'big'" },
	{ { "global: [n]}" }, { "global: [\"n * 0\"]}" }, NULL, 0, NULL },
	/* ... but not when only another setting makes it fail */
	{ { "local: [LS]" }, { "local: [\"LS / (U != 2)\"]" }, NULL, 0, NULL },
	{ { "local: [LS]" }, { "local: [\"LS - 32\"]" }, NULL, 0, NULL },
	/* a name unknown at one setting fails whatever the constraints say */
	{ { "local: [LS]" },
	  { "local: [PER]" },
	  "15:15: problem.launch[0].local[0]",
	  KERR_INVALID,
	  "unknown name 'PER' at column 1 at shape 'big' with LS=64 U=4 (known: n, LS, U)" },
	/* names from build options, render: define */
	{ { "  reference: ex_ref.cl\n", "{local: LS*4}" },
	  { "  reference: ex_ref.cl\n  build_options: -DW=4\n", "{local: LS*W}" },
	  NULL,
	  0,
	  NULL },
	{ { "render: options" }, { "render: define" }, NULL, 0, NULL },
	/*
	 * A tunable the template does not define (render: define adds it to the
	 * variants) is fine until the launch plan uses it: round 0 runs the
	 * template as written.
	 */
	{ { "render: options", "U: [1, 2, 4]\n" },
	  { "render: define", "U: [1, 2, 4]\n    V: [1, 2]\n" },
	  NULL,
	  0,
	  NULL },
	{ { "local: [LS]", "U: [1, 2, 4]\n" },
	  { "local: [V]", "U: [1, 2, 4]\n    V: [1, 2]\n" },
	  "15:15: problem.launch[0].local[0]",
	  KERR_INVALID,
	  "unknown name 'V' at column 1 at shape 'big' (known: n, LS, U, PER)" },
	/* without reference_launch the reference runs launch */
	{ { "  reference_launch:\n    - {kernel: ex_ref, args: [x, y, n], global: [n]}\n" },
	  { "" },
	  "13:31: problem.launch[0].args[3].local",
	  KERR_INVALID,
	  "unknown name 'LS' at column 1 at shape 'big' for the reference (known: n)" },
};

/* expr_spec with c's edits (each of the first occurrence), malloc'd; NULL if one is missing. */
static char *expr_edit(const struct expr_case *c)
{
	char *text = xstrdup(expr_spec);

	for (size_t i = 0; i < 2 && c->find[i]; i++) {
		struct sbuf out = SBUF_INIT;
		const char *at = strstr(text, c->find[i]);

		if (!at) {
			fprintf(stderr, "expr edit '%s' not found\n", c->find[i]);
			free(text);
			return NULL;
		}
		sbuf_add(&out, text, (size_t)(at - text));
		sbuf_adds(&out, c->repl[i]);
		sbuf_adds(&out, at + strlen(c->find[i]));
		sbuf_addch(&out, '\0');
		free(text);
		text = sbuf_detach(&out, NULL);
	}
	return text;
}

TEST(expr_checks)
{
	for (size_t i = 0; i < ARRAY_SIZE(expr_cases); i++) {
		const struct expr_case *c = &expr_cases[i];
		struct spec s;
		char msg[1024] = "";
		char *text = expr_edit(c), *path, *prefix = NULL;
		int rc, ok;

		CHECK(text != NULL);
		if (!text)
			continue;
		path = put("ex.yaml", text);
		rc = spec_load(&s, path, msg, sizeof(msg));
		if (c->where) {
			prefix = xasprintf("%s:%s: ", path, c->where);
			ok = rc == c->code && !strncmp(msg, prefix, strlen(prefix)) &&
			     strstr(msg + strlen(prefix), c->why);
		} else {
			ok = rc == 0 && !msg[0];
		}
		if (!ok)
			fprintf(stderr,
				"expr case %zu: rc %d (want %d)\n  got  %s\n  want %s...%s\n", i,
				rc, c->code, msg, prefix ? prefix : "", c->why ? c->why : "");
		CHECK(ok);
		spec_release(&s);
		free(prefix);
		free(path);
		free(text);
	}
}

TEST(launch_geometry)
{
	static const struct {
		const char *spec, *source, *options;
		const char *want; /* JSON; NULL: fails with why */
		const char *why;
	} cases[] = {
		{ expr_spec, ex_src, "",
		  "{'big': [{'kernel': 'ex', 'global': [4096], 'local': [64]}],"
		  " 'odd': [{'kernel': 'ex', 'global': [1024], 'local': [64]}]}",
		  NULL },
		/* -D options win over the #defines */
		{ expr_spec, ex_src, "-cl-mad-enable -DU=4 -D LS=32",
		  "{'big': [{'kernel': 'ex', 'global': [1024], 'local': [32]}],"
		  " 'odd': [{'kernel': 'ex', 'global': [256], 'local': [32]}]}",
		  NULL },
		{ expr_spec, "#define U 2\n#define LS (U * 8)\n", NULL,
		  "{'big': [{'kernel': 'ex', 'global': [2048], 'local': [16]}],"
		  " 'odd': [{'kernel': 'ex', 'global': [512], 'local': [16]}]}",
		  NULL },
		{ min_spec, NULL, NULL, "{'4': [{'kernel': 'mm', 'global': [4], 'local': null}]}",
		  NULL },
		{ expr_spec, "#define LS 64\n", NULL, NULL,
		  "shape 'big': problem.launch[0].global[0] 'round_up(ceil_div(n, U), LS)': "
		  "unknown name 'U' at column 22 (known: n, LS)" },
		{ expr_spec, ex_src, "-DLS=0", NULL,
		  "shape 'big': problem.launch[0].global[0] 'round_up(ceil_div(n, U), LS)': "
		  "division by zero in 'round_up' at column 1" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct spec s;
		char msg[1024] = "";
		char *path = put("geo.yaml", cases[i].spec);
		json_t *g = NULL;

		CHECK(spec_load(&s, path, msg, sizeof(msg)) == 0);
		CHECK_STR(msg, "");
		g = spec_launch_geometry(&s, cases[i].source, cases[i].options, msg, sizeof(msg));
		if (cases[i].want) {
			CHECK(same_json(g, cases[i].want));
		} else {
			CHECK(g == NULL);
			CHECK_STR(msg, cases[i].why);
		}
		json_decref(g);
		spec_release(&s);
		free(path);
	}
}

/* The specs the project ships load. */
TEST(limit_values)
{
	char msg[512] = "";
	json_t *v = NULL;

	CHECK(spec_limit_value("run_timeout_s", "600", &v, msg, sizeof(msg)) == 0);
	CHECK(json_is_real(v) && json_real_value(v) == 600);
	json_decref(v);
	CHECK(spec_limit_value("log_max_bytes", "4096", &v, msg, sizeof(msg)) == 0);
	CHECK(json_is_integer(v) && json_integer_value(v) == 4096);
	json_decref(v);
	/* the spec's own ranges and types */
	CHECK(spec_limit_value("run_timeout_s", "0", &v, msg, sizeof(msg)) == KERR_RANGE);
	CHECK(v == NULL && strstr(msg, "limits.run_timeout_s: '0'") && strstr(msg, "0.001"));
	CHECK(spec_limit_value("run_timeout_s", "10s", &v, msg, sizeof(msg)) == KERR_RANGE);
	CHECK(spec_limit_value("run_timeout_s", "", &v, msg, sizeof(msg)) == KERR_RANGE);
	CHECK(spec_limit_value("run_timeout_s", "nan", &v, msg, sizeof(msg)) == KERR_RANGE);
	CHECK(spec_limit_value("log_max_bytes", "1.5", &v, msg, sizeof(msg)) == KERR_RANGE);
	CHECK(spec_limit_value("peak_margin", "0.5", &v, msg, sizeof(msg)) == KERR_RANGE);
	/* an unknown key lists the known ones */
	CHECK(spec_limit_value("memory", "1", &v, msg, sizeof(msg)) == KERR_INVALID);
	CHECK(v == NULL && strstr(msg, "limits.memory: no such limit") &&
	      strstr(msg, "compile_timeout_s, run_timeout_s, time_timeout_s"));
}

TEST(shipped_specs)
{
	static const char *const specs[] = {
		"examples/matmul.yaml",
		"examples/gmm_fp8_blockwise.yaml",
		"examples/chunk_gla.yaml",
		"tests/data/kctl/affine.yaml",
	};

	for (size_t i = 0; i < ARRAY_SIZE(specs); i++) {
		struct spec s;
		char msg[1024] = "";
		char *path = xasprintf("%s/%s", root_dir, specs[i]);
		int rc = spec_load(&s, path, msg, sizeof(msg));

		if (rc)
			fprintf(stderr, "%s: %s\n", specs[i], msg);
		CHECK(rc == 0);
		spec_release(&s);
		free(path);
	}
}

static void setup(void)
{
	char *p;

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		exit(1);
	}
	tmpreal = realpath(tmpdir, NULL);
	free(put("tmpl.cl", tmpl_src));
	free(put("ref.cl", ref_src));
	free(put("open.cl", "// x\n// EVOLVE-BLOCK-START\nint a;\n"));
	free(put("stray.cl", "int a;\n// EVOLVE-BLOCK-END\n"));
	p = xasprintf("%s/src", tmpdir);
	if (dir_make(p, NULL, 0))
		fprintf(stderr, "cannot make %s\n", p);
	free(p);
	free(put("src/tmpl.cl", marked_src));
	free(put("ex.cl", ex_src));
	free(put("ex_ref.cl", ex_ref_src));
}

/* The repository: two folders up from examples/matmul.yaml. */
static char *repo_root(const char *matmul)
{
	const char *end = matmul + strlen(matmul);
	int slashes = 0;

	while (end > matmul && slashes < 2)
		slashes += *--end == '/';
	if (slashes < 2)
		return xstrdup(slashes ? "." : "..");
	return end == matmul ? xstrdup("/") : xstrndup(matmul, (size_t)(end - matmul));
}

int main(int argc, char **argv)
{
	char *guess = NULL;

	if (argc > 1) {
		matmul_path = argv[1];
	} else {
		/* tests/unit/test-spec.c -> examples/matmul.yaml */
		const char *slash = strrchr(__FILE__, '/');
		int dirlen = slash ? (int)(slash - __FILE__) : 1;

		guess = xasprintf("%.*s/../../examples/matmul.yaml", dirlen,
				  slash ? __FILE__ : ".");
		matmul_path = guess;
	}
	root_dir = repo_root(matmul_path);
	setup();
	RUN(full_spec);
	RUN(defaults);
	RUN(proposer_kinds);
	RUN(session_github);
	RUN(cache_section);
	RUN(base_is_valid);
	RUN(matmul_example);
	RUN(several_timed_shapes);
	RUN(missing_spec_file);
	RUN(start_outside_a_narrowed_list);
	RUN(malformed);
	RUN(deep_nesting);
	RUN(deep_through_an_alias);
	RUN(expr_checks);
	RUN(launch_geometry);
	RUN(shipped_specs);
	RUN(limit_values);
	printf("%zu malformed specs checked\n", ARRAY_SIZE(bads));
	dir_remove_tree(tmpdir);
	free(tmpreal);
	free(root_dir);
	free(guess);
	return test_summary();
}
