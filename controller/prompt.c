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
 *
 * This file holds the system text, the retry, parts and trimming and a
 * round's prompt; the renderers are prompt-text.c, the profile brief
 * prompt-brief.c, the reflection prompt-reflect.c, and what they share
 * prompt-internal.h.  May use those, sbuf and common/.
 */
#include "prompt-internal.h"
#include "err.h"
#include "sbuf.h"
#include "xalloc.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EVIDENCE_MAX 1500 /* bytes of one failure's evidence in a prompt */
#define TRIM_NOTE    "left out to fit the prompt limit]\n"

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

/* --- parts and trimming --------------------------------------------------- */

void part_init(struct part *p, const struct part_kind *kind)
{
	memset(p, 0, sizeof(*p));
	p->kind = kind;
	p->head = (struct sbuf)SBUF_INIT;
	p->notes = (struct sbuf)SBUF_INIT;
}

void part_release(struct part *p)
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
struct item *part_add(struct part *p)
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
void part_seal(struct part *p)
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
size_t parts_trim(struct part *parts, size_t n, const struct trim_step *steps, size_t nsteps,
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

char *parts_render(const struct part *parts, size_t n)
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

/*
 * The order in which a round's prompt gives up text (prompt.h); the
 * template's blocks go after the first step, the inspirations
 * (prompt_build).
 */
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
	json_int_t dirs = prompt_int_of(ctx, "directions", 1);
	const char *mode = prompt_str_of(ctx, "mode");
	int has_parent = json_is_object(json_object_get(ctx, "parent"));

	sbuf_addf(b, "## Task\nRound %" JSON_INTEGER_FORMAT ", mode %s.\n",
		  prompt_int_of(ctx, "round", 0), mode ? mode : "unknown");
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
		sbuf_addf(b, "- %s: %s, %s, ",
			  prompt_str_of(v, "name") ? prompt_str_of(v, "name") : "?",
			  prompt_str_of(v, "type") ? prompt_str_of(v, "type") : "?",
			  prompt_str_of(v, "role") ? prompt_str_of(v, "role") : "input");
		add_scalar(b, json_object_get(v, "count"));
		sbuf_adds(b, " elements\n");
	}
	if (json_array_size(json_object_get(k, "scalars")))
		sbuf_adds(b, "Scalar arguments:\n");
	json_array_foreach (json_object_get(k, "scalars"), i, v) {
		sbuf_addf(b,
			  "- %s (%s) = ", prompt_str_of(v, "name") ? prompt_str_of(v, "name") : "?",
			  prompt_str_of(v, "type") ? prompt_str_of(v, "type") : "?");
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
			  prompt_str_of(v, "kernel") ? prompt_str_of(v, "kernel") : "?");
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
		sbuf_addf(b, "- %s: ", prompt_str_of(v, "name") ? prompt_str_of(v, "name") : "?");
		add_assignments(b, json_object_get(v, "values"));
		if (json_is_true(json_object_get(v, "primary")))
			sbuf_adds(b, " (primary, timed)\n");
		else if (json_is_true(json_object_get(v, "bucket")))
			sbuf_adds(b,
				  " (timed too: a shape bucket; the search ranks on the geometric "
				  "mean of the speedups at every timed shape)\n");
		else
			sbuf_adds(b, "\n");
	}
}

static void build_problem(struct sbuf *b, json_t *k)
{
	const char *s, *render = prompt_str_of(k, "render");

	sbuf_addf(b, "## The problem\nKernel: %s\n",
		  prompt_str_of(k, "name") ? prompt_str_of(k, "name") : "?");
	if ((s = prompt_str_of(k, "semantics")))
		sbuf_addf(b, "Semantics: %s\n", s);
	if ((s = prompt_str_of(k, "dtype")))
		sbuf_addf(b, "Element types: %s\n", s);
	build_buffers(b, k);
	build_launch(b, k);
	if (prompt_str_of(k, "flops") || prompt_str_of(k, "bytes"))
		sbuf_addf(b, "Work per run, for the figures: flops = %s; bytes = %s\n",
			  prompt_str_of(k, "flops") ? prompt_str_of(k, "flops") : "not given",
			  prompt_str_of(k, "bytes") ? prompt_str_of(k, "bytes") : "not given");
	build_shapes(b, k);
	if ((s = prompt_str_of(k, "build_options")) && *s)
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
	int hpf = prompt_num_of(dev, "peak_gflops", &pf), hpb = prompt_num_of(dev, "peak_gbs", &pb);
	const char *name =
		prompt_str_of(dev, "name") ? prompt_str_of(dev, "name") : "unnamed device";

	if (!json_is_object(dev))
		return;
	sbuf_adds(&p->head, "## The device\n");
	it = part_add(p);
	it->has_lean = 1;
	sbuf_addf(&it->full, "Name: %s\n", name);
	if (prompt_str_of(dev, "vendor") || prompt_str_of(dev, "driver"))
		sbuf_addf(&it->full, "Vendor: %s; driver: %s\n",
			  prompt_str_of(dev, "vendor") ? prompt_str_of(dev, "vendor") : "?",
			  prompt_str_of(dev, "driver") ? prompt_str_of(dev, "driver") : "?");
	if (prompt_num_of(dev, "compute_units", &cu))
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

/*
 * The template part; with elide, the template's blocks are left out (the
 * parent shows its own), which the return value says happened.
 */
static int build_template(struct sbuf *b, json_t *k, int elide)
{
	json_t *blocks = json_object_get(k, "blocks"), *mk = json_object_get(k, "markers");
	const char *tmpl = prompt_str_of(k, "template");
	const char *start =
		prompt_str_of(mk, "start") ? prompt_str_of(mk, "start") : "EVOLVE-BLOCK-START";
	const char *end = prompt_str_of(mk, "end") ? prompt_str_of(mk, "end") : "EVOLVE-BLOCK-END";

	sbuf_adds(b, "## The template\nBlocks you may change, in order: ");
	if (json_array_size(blocks))
		add_joined(b, blocks, ", ");
	else
		sbuf_adds(b, "(none listed)");
	sbuf_addf(
		b,
		".\nEach lies between a line holding \"%s name\" and one holding \"%s\"; "
		"everything else, those lines included, is read-only and checked byte for byte.\n",
		start, end);
	if (!tmpl) {
		sbuf_adds(b, "(the template's text is missing)\n");
		return 0;
	}
	if (elide) {
		struct sbuf code = SBUF_INIT;
		int ok =
			!add_code_without_blocks(&code, tmpl, start, end,
						 "[this block's text is left out to fit the prompt "
						 "limit: the parent below shows the block as the "
						 "parent has it]");

		if (ok) {
			sbuf_adds(b, "[the template's blocks " TRIM_NOTE);
			sbuf_add(b, code.buf, code.len);
		}
		sbuf_release(&code);
		if (ok)
			return 1;
	}
	add_code(b, tmpl);
	return 0;
}

/* Lines of advice from the IR counts, beyond the class's own hint. */
static void add_ir_hints(struct sbuf *b, json_t *ir)
{
	double x;

	if (prompt_num_of(ir, "stack_spills", &x) && x > 0)
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
	if (prompt_num_of(ir, "calls", &x) && x > 0)
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
	if ((c = prompt_class_of(prompt_str_of(fig, "bottleneck"))))
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
		const char *status =
			prompt_str_of(f, "status") ? prompt_str_of(f, "status") : "failed";
		const char *fault = prompt_str_of(f, "fault_kind"), *s;
		struct item *it = part_add(p);

		sbuf_addf(&it->full, "### %s: %s",
			  prompt_str_of(f, "id") ? prompt_str_of(f, "id") : "?", status);
		if (fault && strcmp(fault, status))
			sbuf_addf(&it->full, " (%s)", fault);
		sbuf_addch(&it->full, '\n');
		if ((s = prompt_str_of(f, "rationale")) && *s) {
			sbuf_adds(&it->full, "Rationale: ");
			add_oneline(&it->full, s, LINE_MAX_BYTES);
			sbuf_addch(&it->full, '\n');
		}
		sbuf_add(&it->lean, it->full.buf, it->full.len);
		if ((s = prompt_str_of(f, "evidence")) && *s) {
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

void prompt_build_learnings(struct part *p, json_t *ctx, const char *heading)
{
	const char *text = prompt_str_of(ctx, "learnings");

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
		  prompt_int_of(t, "tried", 0));
	if (json_is_object(best)) {
		sbuf_addf(&p->head, "; its best is %s",
			  prompt_str_of(best, "id") ? prompt_str_of(best, "id") : "(no id)");
		if (json_object_size(json_object_get(best, "params"))) {
			sbuf_adds(&p->head, " (");
			add_assignments(&p->head, json_object_get(best, "params"));
			sbuf_addch(&p->head, ')');
		}
		if (prompt_num_of(best, "speedup_vs_reference", &sp))
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

	sbuf_addf(b, "### %s", prompt_str_of(v, "id") ? prompt_str_of(v, "id") : "(no id)");
	if (prompt_int_of(v, "lineage", -1) >= 0)
		sbuf_addf(b, " (lineage %" JSON_INTEGER_FORMAT ")",
			  prompt_int_of(v, "lineage", -1));
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
	build_template(&parts[P_TEMPLATE].head, kernel, 0);
	build_parent(&parts[P_PARENT].head, ctx);
	build_failures(&parts[P_FAILURES], ctx);
	prompt_build_learnings(&parts[P_LEARNINGS], ctx, "## Learnings of the session so far\n");
	build_tuner(&parts[P_TUNER], ctx);
	build_inspirations(&parts[P_INSPIRATIONS], ctx);

	/*
	 * After the inspirations, the template's blocks: a direction edits the
	 * parent's blocks, which the parent part shows in full, so the template
	 * can do without its own (a large template with one block around
	 * nearly all of it is there twice otherwise), while the later parts
	 * are said nowhere else.
	 */
	total = parts_trim(parts, P_COUNT, build_trims, 1, max, tr);
	if (total > max && json_is_object(json_object_get(ctx, "parent"))) {
		struct sbuf *h = &parts[P_TEMPLATE].head;

		sbuf_reset(h);
		if (build_template(h, kernel, 1))
			json_array_append_new(tr, json_string("template's blocks"));
	}
	total = parts_trim(parts, P_COUNT, build_trims + 1,
			   sizeof(build_trims) / sizeof(build_trims[0]) - 1, max, tr);
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
