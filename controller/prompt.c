/*
 * prompt.c - the text a proposer model is given: the system text, the
 * round's prompt rendered from the context document, the profile brief of
 * one variant, the retry message and the reflection prompt.
 *
 * A prompt is a list of parts (struct part), each rendered once as a head
 * (its heading and fixed lines) and a list of items (an inspiration, a
 * failure, a line of the learnings).  Trimming only drops items or swaps
 * one for its lean form and recounts a few sizes, so building a prompt is
 * linear in the size of the context whatever the limit.
 *
 * Objects whose keys the prompt lists (shape values, parameters, vector
 * widths) are listed with their keys sorted (numerically when both are
 * digits), so the same content gives the same bytes whatever order it was
 * built in; a variant's blocks follow the template's block list.
 */
#include "prompt.h"
#include "err.h"
#include "sbuf.h"
#include "xalloc.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PROMPT_DEFAULT_MAX   60000
#define EVIDENCE_MAX         1500 /* bytes of one failure's evidence in a prompt */
#define REFLECT_EVIDENCE_MAX 600  /* the same in the reflection prompt */
#define LINE_MAX_BYTES       400  /* a one-line field: a rationale, a note */
#define TRIM_NOTE            "left out to fit the prompt limit]\n"

/* --- the answer format, shared by the system text and the retry -------- */

#define ANSWER_FORMAT                                                                              \
	"=== DIRECTION: one line: what changes and which bottleneck it attacks\n"                  \
	"PARENT: r02-v003\n"                                                                       \
	"TUNABLE: TM = 1, 2, 4, 8\n"                                                               \
	"--- BLOCK name\n"                                                                         \
	"the block's whole new body\n"                                                             \
	"--- END\n"                                                                                \
	"--- EDIT name\n"                                                                          \
	"<<<<<<< SEARCH\n"                                                                         \
	"text that occurs exactly once in the block's body\n"                                      \
	"=======\n"                                                                                \
	"its replacement\n"                                                                        \
	">>>>>>> REPLACE\n"                                                                        \
	"--- END\n"

#define ANSWER_RULES                                                                               \
	"- Every direction starts with its '=== DIRECTION:' line and has at least one BLOCK or\n"  \
	"  EDIT section; a block is named in at most one section of a direction.\n"                \
	"- BLOCK replaces the whole body of the block (without the marker lines).  EDIT applies\n" \
	"  its SEARCH/REPLACE pairs in order; each SEARCH text is copied exactly, whitespace\n"    \
	"  included, and occurs exactly once in the body it edits.\n"                              \
	"- PARENT is optional: it names the parent or one of the inspirations the prompt shows;\n" \
	"  without it a direction starts from the prompt's parent.\n"                              \
	"- TUNABLE is optional and repeatable: a new name (not one of the template's tunables,\n"  \
	"  which the tuner sweeps already) and at least two distinct integers.  The new blocks\n"  \
	"  must then hold exactly one line '#define NAME value', with a value from the list;\n"    \
	"  the tuner builds and times the direction with each value.\n"                            \
	"- Between sections only blank lines may stand; text before the first '=== DIRECTION'\n"   \
	"  is ignored, anything else is an error.\n"

static const char system_text[] =
	"You are an expert OpenCL kernel engineer.  You make one OpenCL C kernel faster by\n"
	"rewriting the code between its EVOLVE-BLOCK markers.  Every variant you propose is\n"
	"compiled, checked against a reference on every shape of the problem and timed on the\n"
	"device the prompt describes; its measured figures (time, speedup, roofline position,\n"
	"bottleneck class, IR counts) come back to you in the next round.\n"
	"\n"
	"Rules\n"
	"1. Change only the named blocks.  The code outside them, the marker lines included, is\n"
	"   fixed and checked byte for byte: a variant that changes it is rejected unrun.\n"
	"   Kernel names, arguments and the launch plan are outside your reach, except where the\n"
	"   plan reads macros the blocks define (a tile or work-group size).\n"
	"2. The kernel must stay correct for every shape listed, including sizes that are\n"
	"   multiples of no tile: guard every edge.  Each output element must be written, inputs\n"
	"   must not change, and the result must not depend on the order work-groups run in.\n"
	"   Outputs are compared with the reference within a tolerance.\n"
	"3. Propose exactly the number of directions asked for, each a different idea: another\n"
	"   tiling, data layout, vectorisation, work decomposition or use of local memory, not\n"
	"   the same idea with other constants.  Where the choice between candidates is a number,\n"
	"   declare it as a TUNABLE instead: the tuner sweeps the values for you, so one\n"
	"   direction with 'TUNABLE: TM = 2, 4, 8' covers what would otherwise be three.\n"
	"4. Do not repeat a failure the prompt lists or a dead end the learnings name.  A\n"
	"   direction that takes up a failed idea again says what it does differently.\n"
	"5. Ground each direction in the figures: its line names the bottleneck it attacks.\n"
	"6. Plain OpenCL C 1.2: no inline assembly, no #include, no program-scope variables.\n"
	"\n"
	"Answer format\n"
	"Answer with the directions only, each in this form:\n"
	"\n" ANSWER_FORMAT "\n" ANSWER_RULES "\n"
	"Example, for a kernel whose blocks are 'params' and 'body':\n"
	"\n"
	"=== DIRECTION: 4x4 outputs per work-item so each loaded value feeds 4 FMAs "
	"(compute-bound)\n"
	"TUNABLE: TM = 2, 4, 8\n"
	"--- BLOCK params\n"
	"#define TM 4\n"
	"#define TN 4\n"
	"--- END\n"
	"\n"
	"=== DIRECTION: fused multiply-add in the inner loop (compute-bound)\n"
	"--- EDIT body\n"
	"<<<<<<< SEARCH\n"
	"acc += a * b;\n"
	"=======\n"
	"acc = fma(a, b, acc);\n"
	">>>>>>> REPLACE\n"
	"--- END\n";

const char *prompt_system(void)
{
	return system_text;
}

char *prompt_retry(const char *error)
{
	struct sbuf b = SBUF_INIT;

	sbuf_adds(&b, "Your answer could not be used, in whole or in part:\n");
	sbuf_adds(&b, error && *error ? error : "(no reason given)");
	sbuf_adds(&b, "\n\nAnswer again with the directions that could not be used, corrected "
		      "(or new ones in their place; the others were taken), in this format:\n\n");
	sbuf_adds(&b, ANSWER_FORMAT "\n" ANSWER_RULES);
	return sbuf_detach(&b, NULL);
}

/* --- reading the context: absent or mistyped members are skipped -------- */

static const char *str_of(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* 1 with *out set when o.key is a finite number. */
static int num_of(json_t *o, const char *key, double *out)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_number(v) || !isfinite(json_number_value(v)))
		return 0;
	*out = json_number_value(v);
	return 1;
}

static json_int_t int_of(json_t *o, const char *key, json_int_t dflt)
{
	json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/* --- text helpers -------------------------------------------------------- */

/* The largest cut <= max (< strlen(s)) that does not split a UTF-8 sequence. */
static size_t utf8_cut(const char *s, size_t max)
{
	while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
		max--;
	return max;
}

/* s on one line: line breaks and tabs become spaces, cut at max bytes with "...". */
static void add_oneline(struct sbuf *b, const char *s, size_t max)
{
	size_t n = strlen(s), cut = n > max ? utf8_cut(s, max) : n;

	for (size_t i = 0; i < cut; i++)
		sbuf_addch(b, s[i] == '\n' || s[i] == '\r' || s[i] == '\t' ? ' ' : s[i]);
	if (cut < n)
		sbuf_adds(b, "...");
}

/* Multi-line s, each non-empty line after indent, cut at max bytes with a note. */
static void add_indented(struct sbuf *b, const char *s, size_t max, const char *indent)
{
	size_t n = strlen(s), cut = n > max ? utf8_cut(s, max) : n, i = 0;

	while (i < cut) {
		const char *nl = memchr(s + i, '\n', cut - i);
		size_t e = nl ? (size_t)(nl - s) : cut;

		if (e > i && s[e - 1] == '\r')
			e--;
		if (e > i) {
			sbuf_adds(b, indent);
			sbuf_add(b, s + i, e - i);
		}
		sbuf_addch(b, '\n');
		i = nl ? (size_t)(nl - s) + 1 : cut;
	}
	if (cut < n)
		sbuf_addf(b, "%s[%zu more bytes left out]\n", indent, n - cut);
}

/* Source text in a fenced block. */
static void add_code(struct sbuf *b, const char *s)
{
	size_t n = strlen(s);

	sbuf_adds(b, "```c\n");
	sbuf_add(b, s, n);
	if (n && s[n - 1] != '\n')
		sbuf_addch(b, '\n');
	sbuf_adds(b, "```\n");
}

/* A measured figure: 4 significant digits, whole numbers from 1000 on. */
static void add_fig(struct sbuf *b, double v)
{
	double a = fabs(v);

	if (a >= 1000 && a < 1e15)
		sbuf_addf(b, "%.0f", v);
	else
		sbuf_addf(b, "%.4g", v);
}

/* A fraction as a percentage with one decimal. */
static void add_pct(struct sbuf *b, double f)
{
	sbuf_addf(b, "%.1f%%", 100.0 * f);
}

static void add_scalar(struct sbuf *b, json_t *v)
{
	if (json_is_integer(v)) {
		sbuf_addf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	} else if (json_is_real(v)) {
		add_fig(b, json_real_value(v));
	} else if (json_is_string(v)) {
		add_oneline(b, json_string_value(v), LINE_MAX_BYTES);
	} else if (json_is_boolean(v)) {
		sbuf_adds(b, json_is_true(v) ? "true" : "false");
	} else if (v && !json_is_null(v)) {
		char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);

		add_oneline(b, s ? s : "?", LINE_MAX_BYTES);
		free(s);
	} else {
		sbuf_adds(b, "null");
	}
}

/* The elements of arr joined by sep. */
static void add_joined(struct sbuf *b, json_t *arr, const char *sep)
{
	size_t i;
	json_t *v;

	json_array_foreach (arr, i, v) {
		if (i)
			sbuf_adds(b, sep);
		add_scalar(b, v);
	}
}

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/* Keys in order: by value when both are digit strings, else bytewise. */
static int key_cmp(const void *pa, const void *pb)
{
	const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;

	if (all_digits(a) && all_digits(b)) {
		const char *x = a, *y = b;
		size_t lx, ly;
		int c;

		while (*x == '0' && x[1])
			x++;
		while (*y == '0' && y[1])
			y++;
		lx = strlen(x);
		ly = strlen(y);
		if (lx != ly)
			return lx < ly ? -1 : 1;
		if ((c = strcmp(x, y)))
			return c;
	}
	return strcmp(a, b);
}

/* o's keys, sorted (malloc'd; the strings are borrowed). */
static const char **sorted_keys(json_t *o, size_t *n)
{
	size_t cnt = json_object_size(o), i = 0;
	const char **k = xcalloc(cnt ? cnt : 1, sizeof(*k));
	const char *key;
	json_t *v;

	json_object_foreach (o, key, v)
		k[i++] = key;
	qsort(k, cnt, sizeof(*k), key_cmp);
	*n = cnt;
	return k;
}

/* "K=1024, M=1024" from {"M": 1024, "K": 1024}. */
static void add_assignments(struct sbuf *b, json_t *o)
{
	size_t n, i;
	const char **k = sorted_keys(o, &n);

	for (i = 0; i < n; i++) {
		sbuf_addf(b, "%s%s=", i ? ", " : "", k[i]);
		add_scalar(b, json_object_get(o, k[i]));
	}
	free(k);
}

/* A variant's "Rationale: ..." and "Parameters: ..." lines, when it has them. */
static void add_rationale_params(struct sbuf *b, json_t *v)
{
	const char *s = str_of(v, "rationale");

	if (s && *s) {
		sbuf_adds(b, "Rationale: ");
		add_oneline(b, s, LINE_MAX_BYTES);
		sbuf_addch(b, '\n');
	}
	if (json_object_size(json_object_get(v, "params"))) {
		sbuf_adds(b, "Parameters: ");
		add_assignments(b, json_object_get(v, "params"));
		sbuf_addch(b, '\n');
	}
}

/* "- TM = 1, 2, 4" lines of a tunables array. */
static void add_tunables(struct sbuf *b, json_t *arr, const char *indent)
{
	size_t i;
	json_t *t;

	json_array_foreach (arr, i, t) {
		sbuf_addf(b, "%s- %s = ", indent, str_of(t, "name") ? str_of(t, "name") : "?");
		add_joined(b, json_object_get(t, "values"), ", ");
		sbuf_addch(b, '\n');
	}
}

static void add_block(struct sbuf *b, const char *name, json_t *body)
{
	const char *s = json_is_string(body) ? json_string_value(body) : "";

	if (!*s) {
		sbuf_addf(b, "Block `%s`: (empty)\n", name);
		return;
	}
	sbuf_addf(b, "Block `%s`:\n", name);
	add_code(b, s);
}

static int in_names(json_t *names, const char *s)
{
	size_t i;
	json_t *v;

	json_array_foreach (names, i, v)
		if (json_is_string(v) && !strcmp(json_string_value(v), s))
			return 1;
	return 0;
}

/* A variant's blocks: those named in order first, in its order, then the rest. */
static void add_blocks(struct sbuf *b, json_t *blocks, json_t *order)
{
	const char *key;
	size_t i;
	json_t *v;

	if (!json_is_object(blocks))
		return;
	json_array_foreach (order, i, v) {
		json_t *body =
			json_is_string(v) ? json_object_get(blocks, json_string_value(v)) : NULL;

		if (body)
			add_block(b, json_string_value(v), body);
	}
	json_object_foreach (blocks, key, v)
		if (!in_names(order, key))
			add_block(b, key, v);
}

/* --- bottleneck classes -------------------------------------------------- */

struct bottleneck_class {
	const char *name;    /* as in roofline.bottleneck */
	const char *label;   /* "compute-bound" */
	const char *meaning; /* the label with what it rests on */
	const char *hint;    /* what tends to help */
};

static const struct bottleneck_class classes[] = {
	{ "compute", "compute-bound", "compute-bound: near the FMA roof, past the ridge point",
	  "raise the useful work per instruction: a larger register block (more outputs per "
	  "work-item, so each loaded value feeds several FMAs), fma() or mad() in the inner loop, "
	  "wider float vectors along the contiguous dimension, an unrolled inner loop with "
	  "independent accumulators; keep the accumulators in registers (watch the spills)." },
	{ "memory", "memory-bound", "memory-bound: below the ridge point, limited by bandwidth",
	  "move fewer bytes per result: coalesced accesses (neighbouring work-items touch "
	  "neighbouring addresses), vector loads (vloadN) of contiguous data, tiles kept in local "
	  "memory or registers so each global value is read once per work-group, no second pass "
	  "over a buffer." },
	{ "latency", "latency-bound", "latency-bound: far from both roofs",
	  "give each work-item more independent work (several outputs, unrolled loops with "
	  "separate accumulators), take barriers and divergent branches out of the inner loop, "
	  "load the next tile while computing the current one, and pick a work-group size that "
	  "keeps every compute unit busy." },
	{ "occupancy", "occupancy-bound",
	  "occupancy-bound: too few work-groups or work-items for the compute units",
	  "split the work finer so every compute unit has some: smaller tiles per work-group or "
	  "per work-item, smaller work-groups, or the reduction dimension split across "
	  "work-groups." },
	{ "launch", "launch-bound", "launch-bound: the kernel runs about as long as a launch costs",
	  "the kernel's own time is close to the launch overhead: little is left to gain inside "
	  "the kernel; prefer directions that make the launch steps that do nothing as cheap as "
	  "possible or do all the work in fewer steps where the plan allows it." },
	{ "unknown", "unclassified", "unclassified: no flops or bytes figure, or no measured peaks",
	  "there is no roofline position: judge by the time and the IR counts (vector width, "
	  "loads per FMA, spills)." },
};

static const struct bottleneck_class *class_of(const char *name)
{
	for (size_t i = 0; name && i < sizeof(classes) / sizeof(classes[0]); i++)
		if (!strcmp(classes[i].name, name))
			return &classes[i];
	return NULL;
}

/* --- the profile brief ---------------------------------------------------- */

static void brief_head(struct sbuf *b, json_t *v)
{
	const char *s;
	json_t *tun = json_object_get(v, "tunables");

	sbuf_addf(b, "Variant %s", str_of(v, "id") ? str_of(v, "id") : "(no id)");
	if (int_of(v, "lineage", -1) >= 0)
		sbuf_addf(b, " (lineage %" JSON_INTEGER_FORMAT ")", int_of(v, "lineage", -1));
	sbuf_addch(b, '\n');
	add_rationale_params(b, v);
	if (json_array_size(tun)) {
		sbuf_adds(b, "Its own tunables:\n");
		add_tunables(b, tun, "  ");
	}
	if ((s = str_of(v, "options")) && *s) {
		sbuf_adds(b, "Build options: ");
		add_oneline(b, s, LINE_MAX_BYTES);
		sbuf_addch(b, '\n');
	}
}

static void brief_time(struct sbuf *b, json_t *fig)
{
	const char *status = str_of(fig, "status"), *shape = str_of(fig, "shape");
	double ms, cv, sp;

	if (status || shape) {
		sbuf_addf(b, "Status: %s", status ? status : "unknown");
		if (shape)
			sbuf_addf(b, ", timed on shape '%s'", shape);
		sbuf_addch(b, '\n');
	}
	if (num_of(fig, "median_ms", &ms)) {
		sbuf_adds(b, "Median time: ");
		add_fig(b, ms);
		sbuf_adds(b, " ms");
		if (num_of(fig, "robust_cv", &cv)) {
			sbuf_adds(b, " (robust CV ");
			add_pct(b, cv);
			sbuf_addch(b, ')');
		}
		sbuf_addch(b, '\n');
	}
	if (num_of(fig, "speedup_vs_reference", &sp))
		sbuf_addf(b, "Speedup vs the reference: %.2fx\n", sp);
}

/* The two roofs: a rate, its fraction of the device's peak, the peak. */
static const struct {
	const char *label, *unit, *rate, *fraction, *peak;
} roofs[] = {
	{ "Compute", "GFLOP/s", "gflops", "fraction_of_peak_flops", "peak_gflops" },
	{ "Memory", "GB/s", "gbps", "fraction_of_peak_bw", "peak_gbs" },
};

/* "Compute: 75.41 GFLOP/s = 31.2% of the measured peak of 241.9 GFLOP/s". */
static void brief_roof(struct sbuf *b, size_t r, json_t *fig, json_t *dev)
{
	double rate, frac, peak;
	int has_rate = num_of(fig, roofs[r].rate, &rate);
	int has_frac = num_of(fig, roofs[r].fraction, &frac);

	if (!has_rate && !has_frac)
		return;
	sbuf_addf(b, "%s: ", roofs[r].label);
	if (has_rate) {
		add_fig(b, rate);
		sbuf_addf(b, " %s", roofs[r].unit);
	}
	if (has_frac) {
		sbuf_adds(b, has_rate ? " = " : "");
		add_pct(b, frac);
		sbuf_adds(b, " of the measured peak");
		if (num_of(dev, roofs[r].peak, &peak) && peak > 0) {
			sbuf_adds(b, " of ");
			add_fig(b, peak);
			sbuf_addf(b, " %s", roofs[r].unit);
		}
	}
	sbuf_addch(b, '\n');
}

static void brief_roofline(struct sbuf *b, json_t *fig, json_t *dev)
{
	double pf = 0, pb = 0, ai;
	int hpf = num_of(dev, "peak_gflops", &pf) && pf > 0,
	    hpb = num_of(dev, "peak_gbs", &pb) && pb > 0;
	const struct bottleneck_class *c = class_of(str_of(fig, "bottleneck"));
	json_t *ev = json_object_get(fig, "evidence"), *line;
	size_t i;

	for (i = 0; i < sizeof(roofs) / sizeof(roofs[0]); i++)
		brief_roof(b, i, fig, dev);
	if (num_of(fig, "arithmetic_intensity", &ai)) {
		sbuf_adds(b, "Arithmetic intensity: ");
		add_fig(b, ai);
		sbuf_adds(b, " flop/byte");
		if (hpf && hpb) {
			sbuf_adds(b, " (ridge point ");
			add_fig(b, pf / pb);
			sbuf_addch(b, ')');
		}
		sbuf_addch(b, '\n');
	}
	if (str_of(fig, "bottleneck"))
		sbuf_addf(b, "Bottleneck: %s\n", c ? c->meaning : str_of(fig, "bottleneck"));
	json_array_foreach (ev, i, line)
		if (json_is_string(line)) {
			sbuf_adds(b, "  evidence: ");
			add_oneline(b, json_string_value(line), LINE_MAX_BYTES);
			sbuf_addch(b, '\n');
		}
}

/* The IR's instruction counts, in this order. */
static const struct {
	const char *key, *label;
} ir_mix[] = {
	{ "fma", "FMA" },           { "loads", "loads" }, { "stores", "stores" },
	{ "branches", "branches" }, { "calls", "calls" }, { "scalar_sse", "scalar SSE" },
};

/* The IR's signs of register pressure, in this order. */
static const struct {
	const char *key, *label;
} ir_pressure[] = {
	{ "stack_spills", "stack spills" },
	{ "stack_reloads", "stack reloads" },
	{ "private_bytes", "bytes of private memory" },
};

static void brief_ir(struct sbuf *b, json_t *ir)
{
	const char *unit = str_of(ir, "vector_width_unit"), *s;
	json_t *vw = json_object_get(ir, "vector_widths");
	double x;
	size_t i, n, k = 0;
	const char **keys;

	if (!json_is_object(ir))
		return;
	sbuf_adds(b, "IR");
	if ((s = str_of(ir, "kernel")))
		sbuf_addf(b, " of kernel '%s'", s);
	if ((s = str_of(ir, "flavor")))
		sbuf_addf(b, " (%s)", s);
	sbuf_adds(b, ":");
	unit = unit ? unit : "elements";
	if (num_of(ir, "max_vector_width", &x))
		sbuf_addf(b, " widest vector %.0f %s;", x, unit);
	keys = sorted_keys(json_is_object(vw) ? vw : NULL, &n);
	sbuf_adds(b, n ? " vector instructions by width:" : " no vector instructions");
	for (i = 0; i < n; i++) {
		sbuf_addf(b, "%s %s %s: ", i ? "," : "", keys[i], unit);
		add_scalar(b, json_object_get(vw, keys[i]));
	}
	free(keys);
	sbuf_adds(b, "\n  instruction mix:");
	for (i = 0; i < sizeof(ir_mix) / sizeof(ir_mix[0]); i++)
		if (num_of(ir, ir_mix[i].key, &x))
			sbuf_addf(b, "%s %.0f %s", k++ ? "," : "", x, ir_mix[i].label);
	sbuf_adds(b, k ? "\n" : " not counted\n");
	k = 0;
	for (i = 0; i < sizeof(ir_pressure) / sizeof(ir_pressure[0]); i++)
		if (num_of(ir, ir_pressure[i].key, &x))
			sbuf_addf(b, "%s%.0f %s", k++ ? ", " : "  register pressure: ", x,
				  ir_pressure[i].label);
	if (k)
		sbuf_addch(b, '\n');
}

static void brief_render(struct sbuf *b, json_t *v, json_t *dev, int with_code, json_t *order)
{
	json_t *fig = json_object_get(v, "figures");

	brief_head(b, v);
	brief_time(b, fig);
	brief_roofline(b, fig, dev);
	brief_ir(b, json_object_get(fig, "ir"));
	if (with_code)
		add_blocks(b, json_object_get(v, "blocks"), order);
}

char *prompt_brief(json_t *variant, json_t *device, int with_code)
{
	struct sbuf b = SBUF_INIT;

	brief_render(&b, variant, device, with_code, NULL);
	return sbuf_detach(&b, NULL);
}

/* One line of figures: "3.40x vs the reference, median 1.23 ms, compute-bound". */
static void add_figure_line(struct sbuf *b, json_t *fig)
{
	const struct bottleneck_class *c;
	double x;
	const char *sep = "";

	if (num_of(fig, "speedup_vs_reference", &x)) {
		sbuf_addf(b, "%.2fx vs the reference", x);
		sep = ", ";
	}
	if (num_of(fig, "median_ms", &x)) {
		sbuf_addf(b, "%smedian ", sep);
		add_fig(b, x);
		sbuf_adds(b, " ms");
		sep = ", ";
	}
	if (num_of(fig, "gflops", &x)) {
		sbuf_adds(b, sep);
		add_fig(b, x);
		sbuf_adds(b, " GFLOP/s");
		sep = ", ";
	}
	if ((c = class_of(str_of(fig, "bottleneck"))))
		sbuf_addf(b, "%s%s", sep, c->label);
	else if (str_of(fig, "bottleneck"))
		sbuf_addf(b, "%sbottleneck %s", sep, str_of(fig, "bottleneck"));
}

static void add_evidence_line(struct sbuf *b, json_t *fig)
{
	json_t *ev = json_object_get(fig, "evidence"), *line;
	size_t i, k = 0;

	json_array_foreach (ev, i, line)
		if (json_is_string(line)) {
			sbuf_adds(b, k++ ? "; " : "Evidence: ");
			add_oneline(b, json_string_value(line), LINE_MAX_BYTES);
		}
	if (k)
		sbuf_addch(b, '\n');
}

/* --- parts and trimming --------------------------------------------------- */

struct item {
	struct sbuf full, lean; /* lean: the form kept when shortened */
	int has_lean, is_lean;
};

/* How a part's trim notes name what was left out. */
struct part_kind {
	const char *name;       /* in *trimmed */
	const char *one, *many; /* a dropped item: "inspiration", "inspirations" */
	const char *lean;       /* what shortening removed: "the evidence of" */
	int lean_counted;       /* follow lean by the count and one/many */
};

struct part {
	const struct part_kind *kind;
	struct sbuf head; /* empty: the part is absent */
	struct item *it;
	size_t n, cap;
	size_t first, end; /* items kept: [first, end) */
	size_t nlean;      /* kept items in their lean form */
	size_t lean_at;    /* items at or after it are not shortened again */
	size_t items_len;  /* bytes of the kept items in their current forms */
	struct sbuf notes;
	int trimmed;
};

enum trim_how { TRIM_DROP_LAST, TRIM_DROP_FIRST, TRIM_LEAN_LAST };

struct trim_step {
	size_t part;
	enum trim_how how;
};

static void part_init(struct part *p, const struct part_kind *kind)
{
	memset(p, 0, sizeof(*p));
	p->kind = kind;
	p->head = (struct sbuf)SBUF_INIT;
	p->notes = (struct sbuf)SBUF_INIT;
}

static void part_release(struct part *p)
{
	for (size_t i = 0; i < p->n; i++) {
		sbuf_release(&p->it[i].full);
		sbuf_release(&p->it[i].lean);
	}
	free(p->it);
	sbuf_release(&p->head);
	sbuf_release(&p->notes);
}

/* A new empty item at the end of p; valid until the next part_add. */
static struct item *part_add(struct part *p)
{
	struct item *it;

	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 8;
		p->it = xreallocarray(p->it, p->cap, sizeof(*p->it));
	}
	it = &p->it[p->n++];
	memset(it, 0, sizeof(*it));
	it->full = (struct sbuf)SBUF_INIT;
	it->lean = (struct sbuf)SBUF_INIT;
	return it;
}

/* Every item kept, in full: call once the items are added. */
static void part_seal(struct part *p)
{
	p->first = 0;
	p->end = p->lean_at = p->n;
	p->items_len = 0;
	for (size_t i = 0; i < p->n; i++)
		p->items_len += p->it[i].full.len;
}

static size_t item_len(const struct item *it)
{
	return it->is_lean ? it->lean.len : it->full.len;
}

static size_t part_len(const struct part *p)
{
	return p->head.len ? p->head.len + p->notes.len + p->items_len : 0;
}

static void part_renote(struct part *p)
{
	const struct part_kind *k = p->kind;
	size_t dropped = p->n - (p->end - p->first);

	sbuf_reset(&p->notes);
	if (dropped)
		sbuf_addf(&p->notes, "[%zu %s " TRIM_NOTE, dropped,
			  dropped == 1 ? k->one : k->many);
	if (p->nlean && k->lean_counted)
		sbuf_addf(&p->notes, "[%s %zu %s " TRIM_NOTE, k->lean, p->nlean,
			  p->nlean == 1 ? k->one : k->many);
	else if (p->nlean)
		sbuf_addf(&p->notes, "[%s " TRIM_NOTE, k->lean);
}

/* One trim of p; 0 when there is nothing left to trim that way. */
static int part_trim(struct part *p, enum trim_how how)
{
	struct item *it = NULL;

	if (!p->head.len || p->first == p->end)
		return 0;
	if (how == TRIM_DROP_LAST || how == TRIM_DROP_FIRST) {
		it = how == TRIM_DROP_LAST ? &p->it[--p->end] : &p->it[p->first++];
		p->items_len -= item_len(it);
		p->nlean -= it->is_lean;
	} else {
		if (p->lean_at > p->end)
			p->lean_at = p->end;
		while (p->lean_at > p->first && !it) {
			struct item *c = &p->it[--p->lean_at];

			if (c->has_lean && !c->is_lean)
				it = c;
		}
		if (!it)
			return 0;
		p->items_len = p->items_len - it->full.len + it->lean.len;
		it->is_lean = 1;
		p->nlean++;
	}
	p->trimmed = 1;
	part_renote(p);
	return 1;
}

/* Bytes of the parts joined by blank lines. */
static size_t parts_len(const struct part *parts, size_t n)
{
	size_t total = 0, present = 0;

	for (size_t i = 0; i < n; i++) {
		total += part_len(&parts[i]);
		present += parts[i].head.len > 0;
	}
	return total + (present ? present - 1 : 0);
}

/* Applies steps in order until the parts fit max; names the parts trimmed in tr. */
static size_t parts_trim(struct part *parts, size_t n, const struct trim_step *steps, size_t nsteps,
			 size_t max, json_t *tr)
{
	size_t total = parts_len(parts, n);

	for (size_t s = 0; s < nsteps && total > max; s++) {
		struct part *p = &parts[steps[s].part];
		int was = p->trimmed;

		while (total > max && part_trim(p, steps[s].how))
			total = parts_len(parts, n);
		if (!was && p->trimmed)
			json_array_append_new(tr, json_string(p->kind->name));
	}
	return total;
}

static char *parts_render(const struct part *parts, size_t n)
{
	struct sbuf b = SBUF_INIT;
	size_t k = 0;

	sbuf_grow(&b, parts_len(parts, n));
	for (size_t i = 0; i < n; i++) {
		const struct part *p = &parts[i];

		if (!p->head.len)
			continue;
		if (k++)
			sbuf_addch(&b, '\n');
		sbuf_add(&b, p->head.buf, p->head.len);
		sbuf_add(&b, p->notes.buf ? p->notes.buf : "", p->notes.len);
		for (size_t j = p->first; j < p->end; j++) {
			const struct sbuf *t = p->it[j].is_lean ? &p->it[j].lean : &p->it[j].full;

			sbuf_add(&b, t->buf ? t->buf : "", t->len);
		}
	}
	return sbuf_detach(&b, NULL);
}

/* "task 812, problem 1403, ..." */
static void add_part_sizes(struct sbuf *b, const struct part *parts, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (parts[i].head.len)
			sbuf_addf(b, "%s%s %zu", k++ ? ", " : "", parts[i].kind->name,
				  part_len(&parts[i]));
}

/* --- the parts of a round's prompt ---------------------------------------- */

enum {
	P_TASK,
	P_PROBLEM,
	P_DEVICE,
	P_TEMPLATE,
	P_PARENT,
	P_FAILURES,
	P_LEARNINGS,
	P_TUNER,
	P_INSPIRATIONS,
	P_COUNT
};

static const struct part_kind build_kinds[P_COUNT] = {
	[P_TASK] = { .name = "task" },
	[P_PROBLEM] = { .name = "problem" },
	[P_DEVICE] = { .name = "device", .lean = "the device's details" },
	[P_TEMPLATE] = { .name = "template" },
	[P_PARENT] = { .name = "parent" },
	[P_FAILURES] = { "failures", "failure", "failures", "the evidence of", 1 },
	[P_LEARNINGS] = { .name = "learnings",
			  .one = "older learning line",
			  .many = "older learning lines" },
	[P_TUNER] = { .name = "tuner", .one = "tuner note", .many = "tuner notes" },
	[P_INSPIRATIONS] = { .name = "inspirations", .one = "inspiration", .many = "inspirations" },
};

/* The order in which a round's prompt gives up text (prompt.h). */
static const struct trim_step build_trims[] = {
	{ P_INSPIRATIONS, TRIM_DROP_LAST }, { P_TUNER, TRIM_DROP_LAST },
	{ P_LEARNINGS, TRIM_DROP_FIRST },   { P_FAILURES, TRIM_LEAN_LAST },
	{ P_DEVICE, TRIM_LEAN_LAST },       { P_FAILURES, TRIM_DROP_LAST },
};

static const struct {
	const char *mode, *text;
} mode_texts[] = {
	{ "explore",
	  "Explore: each direction tries a new structure for the kernel (another split of the "
	  "work between work-groups and work-items, another data layout or tiling, local memory, "
	  "another vectorisation), not a retuning of the parent's constants.  Bold changes are "
	  "welcome: expose the constants of a new structure as TUNABLEs and the tuner finds "
	  "their best values.\n" },
	{ "exploit",
	  "Exploit: refine the parent below.  Each direction attacks the bottleneck its figures "
	  "show with one distinct change and keeps what already makes it fast, so that the next "
	  "figures tell which change helped.\n" },
};

static void build_task(struct sbuf *b, json_t *ctx)
{
	json_int_t dirs = int_of(ctx, "directions", 1);
	const char *mode = str_of(ctx, "mode");
	int has_parent = json_is_object(json_object_get(ctx, "parent"));

	sbuf_addf(b, "## Task\nRound %" JSON_INTEGER_FORMAT ", mode %s.\n", int_of(ctx, "round", 0),
		  mode ? mode : "unknown");
	for (size_t i = 0; mode && i < sizeof(mode_texts) / sizeof(mode_texts[0]); i++)
		if (!strcmp(mode, mode_texts[i].mode))
			sbuf_adds(b, mode_texts[i].text);
	sbuf_addf(b,
		  "Answer with exactly %" JSON_INTEGER_FORMAT
		  " direction%s, each a different idea, in the answer format of the system text: "
		  "an '=== DIRECTION:' line, then '--- BLOCK' or '--- EDIT' sections closed by "
		  "'--- END'.  ",
		  dirs, dirs == 1 ? "" : "s");
	sbuf_adds(
		b,
		has_parent
			? "A direction starts from the parent below"
			: "There is no parent yet: a direction starts from the template's blocks");
	sbuf_adds(b, "; a 'PARENT:' line may name one of the inspirations instead.\n");
}

static void build_buffers(struct sbuf *b, json_t *k)
{
	json_t *v;
	size_t i;

	if (json_array_size(json_object_get(k, "buffers")))
		sbuf_adds(b, "Buffers (arguments in global memory):\n");
	json_array_foreach (json_object_get(k, "buffers"), i, v) {
		sbuf_addf(b, "- %s: %s, %s, ", str_of(v, "name") ? str_of(v, "name") : "?",
			  str_of(v, "type") ? str_of(v, "type") : "?",
			  str_of(v, "role") ? str_of(v, "role") : "input");
		add_scalar(b, json_object_get(v, "count"));
		sbuf_adds(b, " elements\n");
	}
	if (json_array_size(json_object_get(k, "scalars")))
		sbuf_adds(b, "Scalar arguments:\n");
	json_array_foreach (json_object_get(k, "scalars"), i, v) {
		sbuf_addf(b, "- %s (%s) = ", str_of(v, "name") ? str_of(v, "name") : "?",
			  str_of(v, "type") ? str_of(v, "type") : "?");
		add_scalar(b, json_object_get(v, "value"));
		sbuf_addch(b, '\n');
	}
}

static void build_launch(struct sbuf *b, json_t *k)
{
	json_t *v, *local;
	size_t i;

	if (json_array_size(json_object_get(k, "launch")))
		sbuf_adds(b, "Launch plan, run in this order for every timed run:\n");
	json_array_foreach (json_object_get(k, "launch"), i, v) {
		sbuf_addf(b, "%zu. %s: global [", i + 1,
			  str_of(v, "kernel") ? str_of(v, "kernel") : "?");
		add_joined(b, json_object_get(v, "global"), ", ");
		local = json_object_get(v, "local");
		if (json_is_array(local)) {
			sbuf_adds(b, "], local [");
			add_joined(b, local, ", ");
			sbuf_adds(b, "]\n");
		} else {
			sbuf_adds(b, "], local size chosen by the driver\n");
		}
	}
}

static void build_shapes(struct sbuf *b, json_t *k)
{
	json_t *v;
	size_t i;

	if (!json_array_size(json_object_get(k, "shapes")))
		return;
	sbuf_adds(b,
		  "Shapes: the kernel must be correct at every one; the primary one is timed:\n");
	json_array_foreach (json_object_get(k, "shapes"), i, v) {
		sbuf_addf(b, "- %s: ", str_of(v, "name") ? str_of(v, "name") : "?");
		add_assignments(b, json_object_get(v, "values"));
		sbuf_adds(b, json_is_true(json_object_get(v, "primary")) ? " (primary, timed)\n"
									 : "\n");
	}
}

static void build_problem(struct sbuf *b, json_t *k)
{
	const char *s, *render = str_of(k, "render");

	sbuf_addf(b, "## The problem\nKernel: %s\n", str_of(k, "name") ? str_of(k, "name") : "?");
	if ((s = str_of(k, "semantics")))
		sbuf_addf(b, "Semantics: %s\n", s);
	if ((s = str_of(k, "dtype")))
		sbuf_addf(b, "Element types: %s\n", s);
	build_buffers(b, k);
	build_launch(b, k);
	if (str_of(k, "flops") || str_of(k, "bytes"))
		sbuf_addf(b, "Work per run, for the figures: flops = %s; bytes = %s\n",
			  str_of(k, "flops") ? str_of(k, "flops") : "not given",
			  str_of(k, "bytes") ? str_of(k, "bytes") : "not given");
	build_shapes(b, k);
	if ((s = str_of(k, "build_options")) && *s)
		sbuf_addf(b, "Build options: %s\n", s);
	if (json_array_size(json_object_get(k, "tunables"))) {
		sbuf_addf(b, "The template's tunables, swept by the tuner %s:\n",
			  render && !strcmp(render, "options")
				  ? "as -D build options (keep their #ifndef guards)"
				  : "by rewriting their #define lines");
		add_tunables(b, json_object_get(k, "tunables"), "");
	}
}

static void build_device(struct part *p, json_t *dev)
{
	struct item *it;
	double pf = 0, pb = 0, cu;
	int hpf = num_of(dev, "peak_gflops", &pf), hpb = num_of(dev, "peak_gbs", &pb);
	const char *name = str_of(dev, "name") ? str_of(dev, "name") : "unnamed device";

	if (!json_is_object(dev))
		return;
	sbuf_adds(&p->head, "## The device\n");
	it = part_add(p);
	it->has_lean = 1;
	sbuf_addf(&it->full, "Name: %s\n", name);
	if (str_of(dev, "vendor") || str_of(dev, "driver"))
		sbuf_addf(&it->full, "Vendor: %s; driver: %s\n",
			  str_of(dev, "vendor") ? str_of(dev, "vendor") : "?",
			  str_of(dev, "driver") ? str_of(dev, "driver") : "?");
	if (num_of(dev, "compute_units", &cu))
		sbuf_addf(&it->full, "Compute units: %.0f\n", cu);
	sbuf_addf(&it->lean, "%s: ", name);
	if (hpf && hpb && pb > 0) {
		sbuf_adds(&it->full, "Measured peaks: ");
		add_fig(&it->full, pf);
		sbuf_adds(&it->full, " GFLOP/s (fp32 FMA), ");
		add_fig(&it->full, pb);
		sbuf_adds(&it->full, " GB/s (memory); ridge point ");
		add_fig(&it->full, pf / pb);
		sbuf_adds(&it->full, " flop/byte: below it a kernel is memory-bound, above it "
				     "compute-bound\n");
		add_fig(&it->lean, pf);
		sbuf_adds(&it->lean, " GFLOP/s and ");
		add_fig(&it->lean, pb);
		sbuf_adds(&it->lean, " GB/s measured peaks\n");
	} else {
		sbuf_adds(&it->full, "Measured peaks: not known\n");
		sbuf_adds(&it->lean, "peaks not known\n");
	}
	part_seal(p);
}

static void build_template(struct sbuf *b, json_t *k)
{
	json_t *blocks = json_object_get(k, "blocks"), *mk = json_object_get(k, "markers");
	const char *tmpl = str_of(k, "template");

	sbuf_adds(b, "## The template\nBlocks you may change, in order: ");
	if (json_array_size(blocks))
		add_joined(b, blocks, ", ");
	else
		sbuf_adds(b, "(none listed)");
	sbuf_addf(
		b,
		".\nEach lies between a line holding \"%s name\" and one holding \"%s\"; "
		"everything else, those lines included, is read-only and checked byte for byte.\n",
		str_of(mk, "start") ? str_of(mk, "start") : "EVOLVE-BLOCK-START",
		str_of(mk, "end") ? str_of(mk, "end") : "EVOLVE-BLOCK-END");
	if (tmpl)
		add_code(b, tmpl);
	else
		sbuf_adds(b, "(the template's text is missing)\n");
}

/* Lines of advice from the IR counts, beyond the class's own hint. */
static void add_ir_hints(struct sbuf *b, json_t *ir)
{
	double x;

	if (num_of(ir, "stack_spills", &x) && x > 0)
		sbuf_addf(b,
			  "Hint: the IR has %.0f stack spills: too many values are live at once; "
			  "fewer accumulators or a shorter unroll may gain more than they cost.\n",
			  x);
	if (json_is_object(json_object_get(ir, "vector_widths")) &&
	    !json_object_size(json_object_get(ir, "vector_widths")))
		sbuf_adds(
			b,
			"Hint: the IR has no vector instructions: the inner loop runs scalar; "
			"floatN types and vloadN/vstoreN on contiguous data would vectorise it.\n");
	if (num_of(ir, "calls", &x) && x > 0)
		sbuf_addf(b, "Hint: the IR still makes %.0f calls: inline or replace them.\n", x);
}

static void build_parent(struct sbuf *b, json_t *ctx)
{
	json_t *parent = json_object_get(ctx, "parent"), *fig;
	json_t *kernel = json_object_get(ctx, "kernel");
	const struct bottleneck_class *c;

	sbuf_adds(b, "## The parent\n");
	if (!json_is_object(parent)) {
		sbuf_adds(b, "None yet: the directions start from the template's blocks.\n");
		return;
	}
	brief_render(b, parent, json_object_get(ctx, "device"), 1,
		     json_object_get(kernel, "blocks"));
	fig = json_object_get(parent, "figures");
	if ((c = class_of(str_of(fig, "bottleneck"))))
		sbuf_addf(b, "Hint (%s): %s\n", c->label, c->hint);
	add_ir_hints(b, json_object_get(fig, "ir"));
}

static void build_failures(struct part *p, json_t *ctx)
{
	json_t *arr = json_object_get(ctx, "failures"), *f;
	size_t i;

	if (!json_array_size(arr))
		return;
	sbuf_adds(&p->head, "## Failures of the last round\nThese variants failed: do not repeat "
			    "their mistakes.  A direction that takes up one of their ideas again "
			    "says how it avoids the failure.\n");
	json_array_foreach (arr, i, f) {
		const char *status = str_of(f, "status") ? str_of(f, "status") : "failed";
		const char *fault = str_of(f, "fault_kind"), *s;
		struct item *it = part_add(p);

		sbuf_addf(&it->full, "### %s: %s", str_of(f, "id") ? str_of(f, "id") : "?", status);
		if (fault && strcmp(fault, status))
			sbuf_addf(&it->full, " (%s)", fault);
		sbuf_addch(&it->full, '\n');
		if ((s = str_of(f, "rationale")) && *s) {
			sbuf_adds(&it->full, "Rationale: ");
			add_oneline(&it->full, s, LINE_MAX_BYTES);
			sbuf_addch(&it->full, '\n');
		}
		sbuf_add(&it->lean, it->full.buf, it->full.len);
		if ((s = str_of(f, "evidence")) && *s) {
			it->has_lean = 1;
			sbuf_adds(&it->full, "Evidence:\n");
			add_indented(&it->full, s, EVIDENCE_MAX, "    ");
		}
	}
	part_seal(p);
}

/* Items of p: the lines of text (each ending in '\n'). */
static void add_lines(struct part *p, const char *text)
{
	const char *s = text;

	while (*s) {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);
		struct item *it = part_add(p);

		sbuf_add(&it->full, s, len);
		sbuf_addch(&it->full, '\n');
		s += len + (nl != NULL);
	}
	part_seal(p);
}

static void build_learnings(struct part *p, json_t *ctx, const char *heading)
{
	const char *text = str_of(ctx, "learnings");

	if (!text || !*text)
		return;
	sbuf_adds(&p->head, heading);
	add_lines(p, text);
}

static void build_tuner(struct part *p, json_t *ctx)
{
	json_t *t = json_object_get(ctx, "tuner"), *best, *note;
	size_t i;
	double sp;

	if (!json_is_object(t))
		return;
	best = json_object_get(t, "best");
	sbuf_addf(&p->head,
		  "## The tuner's findings\nThe tuner tried %" JSON_INTEGER_FORMAT " points",
		  int_of(t, "tried", 0));
	if (json_is_object(best)) {
		sbuf_addf(&p->head, "; its best is %s",
			  str_of(best, "id") ? str_of(best, "id") : "(no id)");
		if (json_object_size(json_object_get(best, "params"))) {
			sbuf_adds(&p->head, " (");
			add_assignments(&p->head, json_object_get(best, "params"));
			sbuf_addch(&p->head, ')');
		}
		if (num_of(best, "speedup_vs_reference", &sp))
			sbuf_addf(&p->head, " at %.2fx the reference", sp);
	}
	sbuf_adds(&p->head, ".\n");
	json_array_foreach (json_object_get(t, "notes"), i, note) {
		struct item *it;

		if (!json_is_string(note))
			continue;
		it = part_add(p);
		sbuf_adds(&it->full, "- ");
		add_oneline(&it->full, json_string_value(note), LINE_MAX_BYTES);
		sbuf_addch(&it->full, '\n');
	}
	part_seal(p);
}

/* An inspiration: a heading with its figures, its rationale, its blocks. */
static void add_inspiration(struct sbuf *b, json_t *v, json_t *order)
{
	json_t *fig = json_object_get(v, "figures");

	sbuf_addf(b, "### %s", str_of(v, "id") ? str_of(v, "id") : "(no id)");
	if (int_of(v, "lineage", -1) >= 0)
		sbuf_addf(b, " (lineage %" JSON_INTEGER_FORMAT ")", int_of(v, "lineage", -1));
	sbuf_adds(b, ": ");
	add_figure_line(b, fig);
	sbuf_addch(b, '\n');
	add_rationale_params(b, v);
	if (json_array_size(json_object_get(v, "tunables"))) {
		sbuf_adds(b, "Its own tunables:\n");
		add_tunables(b, json_object_get(v, "tunables"), "  ");
	}
	add_evidence_line(b, fig);
	add_blocks(b, json_object_get(v, "blocks"), order);
}

static void build_inspirations(struct part *p, json_t *ctx)
{
	json_t *arr = json_object_get(ctx, "inspirations"), *v;
	json_t *order = json_object_get(json_object_get(ctx, "kernel"), "blocks");
	size_t i;

	if (!json_array_size(arr))
		return;
	sbuf_adds(&p->head, "## Inspirations\nThe best variants of other lineages, best first.  "
			    "Borrow their ideas, or name one in a PARENT line to start from it.\n");
	json_array_foreach (arr, i, v)
		add_inspiration(&part_add(p)->full, v, order);
	part_seal(p);
}

char *prompt_build(json_t *ctx, const struct prompt_opts *o, json_t **trimmed, char *msg, size_t n)
{
	struct part parts[P_COUNT];
	json_t *kernel = json_object_get(ctx, "kernel"), *tr = json_array();
	size_t max = o && o->max_bytes ? o->max_bytes : PROMPT_DEFAULT_MAX, total, i;
	char *out = NULL;

	for (i = 0; i < P_COUNT; i++)
		part_init(&parts[i], &build_kinds[i]);
	build_task(&parts[P_TASK].head, ctx);
	build_problem(&parts[P_PROBLEM].head, kernel);
	build_device(&parts[P_DEVICE], json_object_get(ctx, "device"));
	build_template(&parts[P_TEMPLATE].head, kernel);
	build_parent(&parts[P_PARENT].head, ctx);
	build_failures(&parts[P_FAILURES], ctx);
	build_learnings(&parts[P_LEARNINGS], ctx, "## Learnings of the session so far\n");
	build_tuner(&parts[P_TUNER], ctx);
	build_inspirations(&parts[P_INSPIRATIONS], ctx);

	total = parts_trim(parts, P_COUNT, build_trims,
			   sizeof(build_trims) / sizeof(build_trims[0]), max, tr);
	if (total > max) {
		struct sbuf b = SBUF_INIT;

		add_part_sizes(&b, parts, P_COUNT);
		kerr_set(msg, n, KERR_LIMIT,
			 "prompt: %zu bytes with every part that may be trimmed cut (%s): over the "
			 "limit of %zu bytes",
			 total, b.buf, max);
		sbuf_release(&b);
		json_decref(tr);
		tr = NULL;
	} else {
		out = parts_render(parts, P_COUNT);
	}
	for (i = 0; i < P_COUNT; i++)
		part_release(&parts[i]);
	if (trimmed)
		*trimmed = tr;
	else
		json_decref(tr);
	return out;
}

/* --- reflection ---------------------------------------------------------- */

enum { R_HEAD, R_LEARNINGS, R_VARIANTS, R_ASK, R_COUNT };

static const struct part_kind reflect_kinds[R_COUNT] = {
	[R_HEAD] = { .name = "task" },
	[R_LEARNINGS] = { .name = "learnings",
			  .one = "older learning line",
			  .many = "older learning lines" },
	[R_VARIANTS] = { .name = "variants", .one = "variant", .many = "variants" },
	[R_ASK] = { .name = "ask" },
};

static const struct trim_step reflect_trims[] = {
	{ R_LEARNINGS, TRIM_DROP_FIRST },
	{ R_VARIANTS, TRIM_DROP_LAST },
};

static void reflect_head(struct sbuf *b, json_t *ctx)
{
	json_t *k = json_object_get(ctx, "kernel"), *v;
	const char *s;
	size_t i;

	sbuf_addf(b, "## Reflection on round %" JSON_INTEGER_FORMAT "\n", int_of(ctx, "round", 0));
	sbuf_addf(b, "Kernel: %s\n", str_of(k, "name") ? str_of(k, "name") : "?");
	if ((s = str_of(k, "semantics")))
		sbuf_addf(b, "Semantics: %s\n", s);
	json_array_foreach (json_object_get(k, "shapes"), i, v)
		if (json_is_true(json_object_get(v, "primary"))) {
			sbuf_addf(b,
				  "Timed shape: %s: ", str_of(v, "name") ? str_of(v, "name") : "?");
			add_assignments(b, json_object_get(v, "values"));
			sbuf_addch(b, '\n');
		}
	sbuf_adds(b, "Below are the variants this round evaluated, with their figures or the way "
		     "they failed, and the learnings so far.  Distil what they teach about making "
		     "this kernel fast on this device.\n");
}

static void reflect_variant(struct sbuf *b, json_t *v)
{
	json_t *fig = json_object_get(v, "figures");
	const char *status = str_of(v, "status") ? str_of(v, "status") : str_of(fig, "status");
	const char *s;

	sbuf_addf(b, "### %s", str_of(v, "id") ? str_of(v, "id") : "(no id)");
	if ((s = str_of(v, "parent")))
		sbuf_addf(b, " (parent %s)", s);
	sbuf_addf(b, ": %s", status ? status : "not evaluated");
	if ((s = str_of(v, "fault_kind")) && (!status || strcmp(s, status)))
		sbuf_addf(b, " (%s)", s);
	if (status && !strcmp(status, "ok")) {
		sbuf_adds(b, "; ");
		add_figure_line(b, fig);
	}
	sbuf_addch(b, '\n');
	add_rationale_params(b, v);
	add_evidence_line(b, fig);
	if ((s = str_of(v, "evidence")) && *s) {
		sbuf_adds(b, "Evidence:\n");
		add_indented(b, s, REFLECT_EVIDENCE_MAX, "    ");
	}
}

char *prompt_reflect(json_t *ctx, size_t max_bytes)
{
	struct part parts[R_COUNT];
	json_t *v, *tr = json_array();
	size_t max = max_bytes ? max_bytes : PROMPT_DEFAULT_MAX, i, len;
	char *out;

	for (i = 0; i < R_COUNT; i++)
		part_init(&parts[i], &reflect_kinds[i]);
	reflect_head(&parts[R_HEAD].head, ctx);
	build_learnings(&parts[R_LEARNINGS], ctx, "## Learnings so far\n");
	sbuf_adds(&parts[R_VARIANTS].head, "## The variants of this round\n");
	json_array_foreach (json_object_get(ctx, "variants"), i, v)
		reflect_variant(&part_add(&parts[R_VARIANTS])->full, v);
	part_seal(&parts[R_VARIANTS]);
	sbuf_adds(&parts[R_ASK].head,
		  "## What to write\n"
		  "Write what this round teaches, one finding per line, in this form:\n"
		  "LEARNING: one specific, checkable finding [r03-v001, r03-v004]\n"
		  "The brackets at the end of the line cite the ids of the variants above that the "
		  "finding rests on; a line that cites none, or an id not listed above, is "
		  "discarded.  Write only what the figures support: what helped and by how much, "
		  "what failed and why, what to avoid next.  Do not restate the learnings so far.  "
		  "At most 8 lines; nothing but LEARNING lines is read.\n");
	parts_trim(parts, R_COUNT, reflect_trims, sizeof(reflect_trims) / sizeof(reflect_trims[0]),
		   max, tr);
	out = parts_render(parts, R_COUNT);
	len = strlen(out);
	if (len > max)
		out[utf8_cut(out, max)] = '\0';
	for (i = 0; i < R_COUNT; i++)
		part_release(&parts[i]);
	json_decref(tr);
	return out;
}

/* --- parsing a reflection ------------------------------------------------- */

static int is_blank(int c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/*
 * The learning of line s[0, len) after its "LEARNING:" tag: {"text",
 * "cites"}, or NULL when it cites no id or one not in known.
 */
static json_t *parse_learning(const char *s, size_t len, json_t *known)
{
	const char *end = s + len, *open, *p;
	json_t *l = NULL, *cites = json_array(), *text;

	while (end > s && (is_blank(end[-1]) || end[-1] == '.'))
		end--;
	if (end == s || end[-1] != ']')
		goto out;
	for (open = end - 1; open > s && *open != '['; open--)
		;
	if (*open != '[')
		goto out;
	for (p = open + 1; p < end;) {
		const char *c = memchr(p, ',', (size_t)(end - 1 - p)), *e = c ? c : end - 1, *q = e;
		char *id;

		while (p < q && is_blank(*p))
			p++;
		while (q > p && is_blank(q[-1]))
			q--;
		id = xstrndup(p, (size_t)(q - p));
		if (!json_object_get(known, id)) {
			free(id);
			goto out;
		}
		if (!in_names(cites, id))
			json_array_append_new(cites, json_string(id));
		free(id);
		p = e + 1;
	}
	for (p = s; p < open && is_blank(*p); p++)
		;
	for (end = open; end > p && is_blank(end[-1]); end--)
		;
	text = json_stringn(p, (size_t)(end - p));
	if (!json_array_size(cites) || end == p || !text) {
		json_decref(text);
		goto out;
	}
	l = json_pack("{s:o, s:O}", "text", text, "cites", cites);
out:
	json_decref(cites);
	return l;
}

/* Where the learning of a "LEARNING:" line starts (after an optional bullet), or NULL. */
static const char *learning_tag(const char *s, size_t len)
{
	static const char tag[] = "LEARNING:";
	const char *end = s + len;

	while (s < end && is_blank(*s))
		s++;
	if (end - s >= 2 && (*s == '-' || *s == '*') && s[1] == ' ')
		s += 2;
	while (s < end && is_blank(*s))
		s++;
	if ((size_t)(end - s) < sizeof(tag) - 1 || memcmp(s, tag, sizeof(tag) - 1))
		return NULL;
	return s + sizeof(tag) - 1;
}

json_t *prompt_parse_reflection(const char *answer, json_t *known, size_t *dropped)
{
	json_t *out = json_array(), *set = json_object(), *v, *l;
	const char *s = answer ? answer : "";
	size_t i, nd = 0;

	json_array_foreach (known, i, v)
		if (json_is_string(v))
			json_object_set_new(set, json_string_value(v), json_true());
	while (*s) {
		const char *nl = strchr(s, '\n'), *body;
		size_t len = nl ? (size_t)(nl - s) : strlen(s);

		if ((body = learning_tag(s, len))) {
			if ((l = parse_learning(body, len - (size_t)(body - s), set)))
				json_array_append_new(out, l);
			else
				nd++;
		}
		s += len + (nl != NULL);
	}
	json_decref(set);
	if (dropped)
		*dropped = nd;
	return out;
}
