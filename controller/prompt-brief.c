/*
 * prompt-brief.c - the profile brief of one variant (prompt_brief): its
 * bottleneck class with what tends to help, its time, its roofline position
 * and its IR counts, and the figure and evidence lines a round's prompt shows
 * for a parent or a failure.
 *
 * May use: prompt-text.c (prompt-internal.h), sbuf and common/.
 */
#include "prompt-internal.h"
#include "sbuf.h"
#include "xalloc.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* --- bottleneck classes -------------------------------------------------- */

static const struct bottleneck_class classes[] = {
	{ "compute", "compute-bound",
	  "compute-bound: past the ridge point, so the FMA rate bounds it",
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

const struct bottleneck_class *prompt_class_of(const char *name)
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

	sbuf_addf(b, "Variant %s", prompt_str_of(v, "id") ? prompt_str_of(v, "id") : "(no id)");
	if (prompt_int_of(v, "lineage", -1) >= 0)
		sbuf_addf(b, " (lineage %" JSON_INTEGER_FORMAT ")",
			  prompt_int_of(v, "lineage", -1));
	sbuf_addch(b, '\n');
	add_rationale_params(b, v);
	if (json_array_size(tun)) {
		sbuf_adds(b, "Its own tunables:\n");
		add_tunables(b, tun, "  ");
	}
	if ((s = prompt_str_of(v, "options")) && *s) {
		sbuf_adds(b, "Build options: ");
		add_oneline(b, s, LINE_MAX_BYTES);
		sbuf_addch(b, '\n');
	}
}

static void brief_time(struct sbuf *b, json_t *fig)
{
	const char *status = prompt_str_of(fig, "status"), *shape = prompt_str_of(fig, "shape");
	double ms, cv, sp;

	if (status || shape) {
		sbuf_addf(b, "Status: %s", status ? status : "unknown");
		if (shape)
			sbuf_addf(b, ", timed on shape '%s'", shape);
		sbuf_addch(b, '\n');
	}
	if (prompt_num_of(fig, "median_ms", &ms)) {
		sbuf_adds(b, "Median time: ");
		add_fig(b, ms);
		sbuf_adds(b, " ms");
		if (prompt_num_of(fig, "robust_cv", &cv)) {
			sbuf_adds(b, " (robust CV ");
			add_pct(b, cv);
			sbuf_addch(b, ')');
		}
		sbuf_addch(b, '\n');
	}
	if (prompt_num_of(fig, "speedup_vs_reference", &sp))
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
	int has_rate = prompt_num_of(fig, roofs[r].rate, &rate);
	int has_frac = prompt_num_of(fig, roofs[r].fraction, &frac);

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
		if (prompt_num_of(dev, roofs[r].peak, &peak) && peak > 0) {
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
	int hpf = prompt_num_of(dev, "peak_gflops", &pf) && pf > 0,
	    hpb = prompt_num_of(dev, "peak_gbs", &pb) && pb > 0;
	const struct bottleneck_class *c = prompt_class_of(prompt_str_of(fig, "bottleneck"));
	json_t *ev = json_object_get(fig, "evidence"), *line;
	size_t i;

	for (i = 0; i < sizeof(roofs) / sizeof(roofs[0]); i++)
		brief_roof(b, i, fig, dev);
	if (prompt_num_of(fig, "arithmetic_intensity", &ai)) {
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
	if (prompt_str_of(fig, "bottleneck"))
		sbuf_addf(b, "Bottleneck: %s\n", c ? c->meaning : prompt_str_of(fig, "bottleneck"));
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
	const char *unit = prompt_str_of(ir, "vector_width_unit"), *s;
	json_t *vw = json_object_get(ir, "vector_widths");
	double x;
	size_t i, n, k = 0;
	const char **keys;

	if (!json_is_object(ir))
		return;
	sbuf_adds(b, "IR");
	if ((s = prompt_str_of(ir, "kernel")))
		sbuf_addf(b, " of kernel '%s'", s);
	if ((s = prompt_str_of(ir, "flavor")))
		sbuf_addf(b, " (%s)", s);
	sbuf_adds(b, ":");
	unit = unit ? unit : "elements";
	if (prompt_num_of(ir, "max_vector_width", &x))
		sbuf_addf(b, " widest vector %.0f %s;", x, unit);
	keys = prompt_sorted_keys(json_is_object(vw) ? vw : NULL, &n);
	sbuf_adds(b, n ? " vector instructions by width:" : " no vector instructions");
	for (i = 0; i < n; i++) {
		sbuf_addf(b, "%s %s %s: ", i ? "," : "", keys[i], unit);
		add_scalar(b, json_object_get(vw, keys[i]));
	}
	free(keys);
	sbuf_adds(b, "\n  instruction mix:");
	for (i = 0; i < sizeof(ir_mix) / sizeof(ir_mix[0]); i++)
		if (prompt_num_of(ir, ir_mix[i].key, &x))
			sbuf_addf(b, "%s %.0f %s", k++ ? "," : "", x, ir_mix[i].label);
	sbuf_adds(b, k ? "\n" : " not counted\n");
	k = 0;
	for (i = 0; i < sizeof(ir_pressure) / sizeof(ir_pressure[0]); i++)
		if (prompt_num_of(ir, ir_pressure[i].key, &x))
			sbuf_addf(b, "%s%.0f %s", k++ ? ", " : "  register pressure: ", x,
				  ir_pressure[i].label);
	if (k)
		sbuf_addch(b, '\n');
}

void brief_render(struct sbuf *b, json_t *v, json_t *dev, int with_code, json_t *order)
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
void add_figure_line(struct sbuf *b, json_t *fig)
{
	const struct bottleneck_class *c;
	double x;
	const char *sep = "";

	if (prompt_num_of(fig, "speedup_vs_reference", &x)) {
		sbuf_addf(b, "%.2fx vs the reference", x);
		sep = ", ";
	}
	if (prompt_num_of(fig, "median_ms", &x)) {
		sbuf_addf(b, "%smedian ", sep);
		add_fig(b, x);
		sbuf_adds(b, " ms");
		sep = ", ";
	}
	if (prompt_num_of(fig, "gflops", &x)) {
		sbuf_adds(b, sep);
		add_fig(b, x);
		sbuf_adds(b, " GFLOP/s");
		sep = ", ";
	}
	if ((c = prompt_class_of(prompt_str_of(fig, "bottleneck"))))
		sbuf_addf(b, "%s%s", sep, c->label);
	else if (prompt_str_of(fig, "bottleneck"))
		sbuf_addf(b, "%sbottleneck %s", sep, prompt_str_of(fig, "bottleneck"));
}

void add_evidence_line(struct sbuf *b, json_t *fig)
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
