/*
 * result.c - the per-variant result document (docs/result.md) and its
 * roofline section.
 */
#include "run.h"
#include "expr.h"
#include "jsonx.h"
#include "stats.h"
#include "xalloc.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static double jnum(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

static double median_of(json_t *time)
{
	return jnum(json_object_get(time, "stats"), "median");
}

/*
 * Speedup of o over base: the ratio of medians, and the distribution of
 * per-round ratios base/o for rounds in which both were sampled.
 */
static json_t *speedup_json(json_t *cand, json_t *base)
{
	json_t *cs = json_object_get(cand, "samples_ms"), *cr = json_object_get(cand, "rounds");
	json_t *bs = json_object_get(base, "samples_ms"), *br = json_object_get(base, "rounds");
	size_t nc = json_array_size(cs), nb = json_array_size(bs), np = 0;
	double *ratios = xcalloc(nc + 1, sizeof(double)), mc = median_of(cand),
	       mb = median_of(base);
	json_t *o = json_object();

	for (size_t i = 0; i < nc; i++) {
		json_int_t r = json_integer_value(json_array_get(cr, i));

		for (size_t j = 0; j < nb; j++) {
			if (json_integer_value(json_array_get(br, j)) != r)
				continue;
			double c = json_number_value(json_array_get(cs, i));
			double b = json_number_value(json_array_get(bs, j));

			if (c > 0)
				ratios[np++] = b / c;
			break;
		}
	}
	jx_set_real(o, "ratio_of_medians", mc > 0 ? mb / mc : NAN);
	json_object_set_new(o, "pairs", json_integer((json_int_t)np));
	if (np) {
		struct stats st;

		stats_compute(ratios, np, &st);
		jx_set_real(o, "paired_median", st.median);
		jx_set_real(o, "paired_p25", st.p25);
		jx_set_real(o, "paired_p75", st.p75);
	}
	free(ratios);
	return o;
}

/*
 * Spread judged robustly (IQR / 1.349 is the standard deviation of a normal
 * sample, without the outliers a busy machine throws in), outliers counted,
 * and the host clock held against the events.
 */
static void quality(json_t *perf, json_t *time, double ev, double host)
{
	json_t *st = json_object_get(time, "stats"), *samples = json_object_get(time, "samples_ms");
	json_t *warn = json_array(), *x;
	double iqr = jnum(st, "iqr"), p75 = jnum(st, "p75"), rcv = ev > 0 ? iqr / 1.349 / ev : NAN;
	int reps = (int)json_integer_value(json_object_get(time, "reps_per_sample"));
	size_t i, outliers = 0;

	json_array_foreach (samples, i, x)
		outliers += json_number_value(x) > p75 + 1.5 * iqr;
	jx_set_real(perf, "robust_cv", rcv);
	json_object_set_new(perf, "outliers", json_integer((json_int_t)outliers));
	json_object_set_new(perf, "quality",
			    json_string(!(rcv <= 0.05) ? "unstable"
					: rcv > 0.02   ? "noisy"
						       : "stable"));
	if (outliers * 5 > json_array_size(samples))
		json_array_append_new(warn, json_string("over a fifth of the samples are outliers: "
							"the device was shared or throttled"));
	if (reps == 1 && ev > 0 && host / ev > 1.5 && host - ev > 1.0)
		json_array_append_new(warn, json_string("the host clock saw much more time than "
							"the profiling events: check the driver's "
							"timestamps"));
	json_object_set_new(perf, "warnings", warn);
}

/* Whether a timing entry holds usable samples (a base to divide by). */
static int timed_ok(json_t *time)
{
	const char *st = json_string_value(json_object_get(time, "status"));

	return time && st && !strcmp(st, "ok") && median_of(time) > 0;
}

/*
 * The speedup over the reference carried by the baseline's anchor (the
 * pass's "reference_anchor", refcache.h): the speedup over the baseline,
 * measured side by side, times the baseline's speedup over the reference.
 */
static json_t *anchored_json(json_t *vs_base, json_t *anchor)
{
	static const char *const scaled[] = { "ratio_of_medians", "paired_median", "paired_p25",
					      "paired_p75" };
	double k = jnum(anchor, "speedup_vs_reference");
	json_t *o = json_object();

	for (size_t i = 0; i < sizeof(scaled) / sizeof(scaled[0]); i++)
		if (json_is_number(json_object_get(vs_base, scaled[i])))
			jx_set_real(o, scaled[i], jnum(vs_base, scaled[i]) * k);
	json_object_set(o, "pairs", json_object_get(vs_base, "pairs"));
	json_object_set_new(o, "via",
			    json_pack("{s:O, s:f, s:I}", "program",
				      json_object_get(anchor, "program"), "speedup_vs_reference", k,
				      "links",
				      json_integer_value(json_object_get(anchor, "links")) + 1));
	return o;
}

/*
 * The performance object at shape s from its timing entries (rtime, btime
 * may be NULL) and the pass's reference anchor (NULL when the reference was
 * timed).
 */
static json_t *performance_at(const struct batch *b, size_t s, json_t *time, json_t *rtime,
			      json_t *btime, json_t *anchor)
{
	json_t *perf = json_deep_copy(time);
	double ev = median_of(time), host = jnum(json_object_get(time, "host_stats"), "median");

	json_object_del(perf, "status");
	json_object_del(perf, "fault");
	json_object_set_new(perf, "shape", json_string(b->shapes[s].name));
	jx_set_real(perf, "median_ms", ev);
	jx_set_real(perf, "host_over_event", ev > 0 ? host / ev : NAN);
	quality(perf, time, ev, host);
	if (timed_ok(rtime)) {
		jx_set_real(perf, "reference_median_ms", median_of(rtime));
		json_object_set_new(perf, "speedup_vs_reference", speedup_json(time, rtime));
	}
	if (timed_ok(btime)) {
		json_t *vs = speedup_json(time, btime);

		jx_set_real(perf, "baseline_median_ms", median_of(btime));
		if (!timed_ok(rtime) && jnum(anchor, "speedup_vs_reference") > 0) {
			jx_set_real(perf, "reference_median_ms",
				    median_of(btime) * jnum(anchor, "speedup_vs_reference"));
			json_object_set_new(perf, "speedup_vs_reference",
					    anchored_json(vs, anchor));
		}
		json_object_set_new(perf, "speedup_vs_baseline", vs);
	}
	return perf;
}

static json_t *performance_json(const struct batch *b, json_t *time, const struct outcome *ref,
				const struct outcome *base, json_t *tdoc)
{
	return performance_at(b, b->timed_shape, time, ref ? ref->time : NULL,
			      base ? base->time : NULL, json_object_get(tdoc, "reference_anchor"));
}

json_t *result_build(const struct batch *b, const struct outcome *o, const struct outcome *ref,
		     const struct outcome *base, json_t *tdoc)
{
	json_t *r = json_object(), *v;
	const char *status = json_string_value(json_object_get(o->check, "status"));
	/* What the check worker recorded, as it recorded it. */
	static const char *const copy[] = { "compile", "correctness", "ir", "sandbox",
					    "stages_ms" };

	json_object_set_new(r, "schema", json_string(RESULT_SCHEMA));
	json_object_set_new(r, "version", json_integer(RESULT_VERSION));
	json_object_set_new(r, "batch_id", json_string(b->batch_id));
	json_object_set_new(r, "id", json_string(o->src->id));
	json_object_set_new(r, "parent",
			    o->src->parent ? json_string(o->src->parent) : json_null());
	json_object_set_new(r, "role", json_string(o->is_baseline ? "baseline" : "variant"));
	json_object_set_new(r, "build_options", json_string(o->src->options));
	json_object_set_new(r, "rationale",
			    o->src->rationale ? json_string(o->src->rationale) : json_null());
	if (tdoc && (v = json_object_get(tdoc, "device")))
		json_object_set(r, "device", v);
	for (size_t i = 0; i < sizeof(copy) / sizeof(copy[0]); i++)
		if ((v = json_object_get(o->check, copy[i])))
			json_object_set(r, copy[i], v);
	if ((v = json_object_get(o->check, "fault")))
		json_object_set(r, "fault", v);
	if (status && !strcmp(status, "ok") && o->time) {
		const char *ts = json_string_value(json_object_get(o->time, "status"));

		if (ts && strcmp(ts, "ok")) {
			json_t *fault = json_copy(json_object_get(o->time, "fault"));
			json_t *audit = json_object_get(o->time, "audit");

			/* Failed by its audit: the samples that failed it go with the fault. */
			if (fault && audit)
				json_object_set(fault, "audit", audit);
			status = ts;
			json_object_set_new(r, "fault", fault);
		} else {
			json_object_set_new(r, "performance",
					    performance_json(b, o->time, ref, base, tdoc));
		}
	}
	json_object_set_new(r, "status", json_string(status ? status : "infra_error"));
	if (!strcmp(json_string_value(json_object_get(r, "status")), "ok") &&
	    json_object_get(r, "performance"))
		result_roofline(b, r, tdoc);
	json_object_set_new(r, "check_wall_ms", json_real(o->check_wall_ms));
	return r;
}

static void evidence(json_t *ev, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void evidence(json_t *ev, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	json_array_append_new(ev, json_string(line));
}

/*
 * Work-items and work-groups of the launch step the plan's time goes to (the
 * largest performance.launch[i].median_ms, from the trace), else of the
 * smallest step; 0 if unknown.  A step that does next to nothing (a pack
 * kernel a variant turned off, launched over one work-item) then never
 * makes a plan look short of work-groups.
 */
static void launch_size(json_t *perf, double *items, double *groups, const char **kernel)
{
	json_t *steps = json_object_get(perf, "launch"), *st;
	double most = -1;
	size_t i;

	*items = *groups = 0;
	*kernel = NULL;
	json_array_foreach (steps, i, st) {
		double it = 1, lo = 1, ms = jnum(st, "median_ms");
		json_t *g = json_object_get(st, "global"), *l = json_object_get(st, "local");

		for (size_t d = 0; d < json_array_size(g); d++) {
			it *= (double)json_integer_value(json_array_get(g, d));
			if (json_is_array(l))
				lo *= (double)json_integer_value(json_array_get(l, d));
		}
		if (isfinite(ms) ? ms > most : most < 0 && (!*items || it < *items)) {
			if (isfinite(ms))
				most = ms;
			*items = it;
			*groups = json_is_array(l) ? ceil(it / lo) : 0;
			*kernel = json_string_value(json_object_get(st, "kernel"));
		}
	}
}

static const char *classify(json_t *rf, json_t *ev, double ms, double launch_us, double items,
			    double groups, const char *kernel, unsigned cu, double ai, double ridge)
{
	double ff = jnum(rf, "fraction_of_peak_flops"), fb = jnum(rf, "fraction_of_peak_bw");

	if (launch_us > 0 && ms * 1e3 < 5 * launch_us) {
		evidence(ev, "kernel time %.1f us is under 5x the launch overhead of %.1f us",
			 ms * 1e3, launch_us);
		return "launch";
	}
	if (cu && groups > 0 && groups < cu) {
		evidence(ev, "%.0f work-groups for %.0f compute units (kernel %s)", groups,
			 (double)cu, kernel ? kernel : "?");
		return "occupancy";
	}
	if (cu && items > 0 && items < 4.0 * cu) {
		evidence(ev, "%.0f work-items for %.0f compute units (kernel %s)", items,
			 (double)cu, kernel ? kernel : "?");
		return "occupancy";
	}
	if (!isfinite(ff) && !isfinite(fb)) {
		evidence(ev, "no flops or bytes figure for this problem (or no measured peaks)");
		return "unknown";
	}
	if (isfinite(ai) && isfinite(ridge))
		evidence(ev, "arithmetic intensity %.2f flop/byte; ridge point %.2f", ai, ridge);
	if (!(ff >= 0.1) && !(fb >= 0.1)) {
		evidence(ev, "far from both roofs: %.1f%% of peak flops, %.1f%% of bandwidth",
			 isfinite(ff) ? ff * 100 : 0, isfinite(fb) ? fb * 100 : 0);
		return "latency";
	}
	if (isfinite(ai) && isfinite(ridge) ? ai < ridge : fb > ff) {
		evidence(ev, "%.0f%% of measured bandwidth (%.0f%% of peak flops)",
			 isfinite(fb) ? fb * 100 : 0, isfinite(ff) ? ff * 100 : 0);
		return "memory";
	}
	evidence(ev, "%.0f%% of measured fp32 FMA peak (%.0f%% of bandwidth)",
		 isfinite(ff) ? ff * 100 : 0, isfinite(fb) ? fb * 100 : 0);
	return "compute";
}

/*
 * measurement.peak_probe: the program's fraction of the FMA peak taken
 * sample by sample against the probe's run in the same round (the median
 * of those ratios), and the probe's median over those rounds.  Nothing is
 * set without the probe or without a flops figure.
 */
static void side_by_side(json_t *rf, json_t *perf, json_t *tdoc, double flops)
{
	json_t *probe = json_object_get(json_object_get(tdoc, "peak_probe"), "gflops");
	json_t *samples = json_object_get(perf, "samples_ms");
	json_t *rounds = json_object_get(perf, "rounds");
	size_t n = json_array_size(samples), got = 0;
	double *ratio, *peak;
	struct stats rs, ps;

	if (!json_is_array(probe) || !isfinite(flops) || !n || json_array_size(rounds) != n)
		return;
	ratio = xcalloc(2 * n, sizeof(*ratio));
	peak = ratio + n;
	for (size_t k = 0; k < n; k++) {
		json_int_t rd = json_integer_value(json_array_get(rounds, k));
		double ms = json_number_value(json_array_get(samples, k));
		double pg = rd >= 0 ? json_number_value(json_array_get(probe, (size_t)rd)) : 0;

		if (ms > 0 && pg > 0) {
			ratio[got] = flops / (ms * 1e6) / pg;
			peak[got++] = pg;
		}
	}
	if (got) {
		stats_compute(ratio, got, &rs);
		stats_compute(peak, got, &ps);
		jx_set_real(rf, "peak_gflops_side_by_side", ps.median);
		jx_set_real(rf, "fraction_of_peak_flops_side_by_side", rs.median);
		json_object_set_new(rf, "side_by_side_samples", json_integer((json_int_t)got));
	}
	free(ratio);
}

void result_roofline(const struct batch *b, json_t *r, json_t *tdoc)
{
	json_t *perf = json_object_get(r, "performance"), *rf = json_object(), *ev = json_array();
	json_t *pk = json_object_get(tdoc, "peaks");
	double ms = jnum(perf, "median_ms"), flops = NAN, bytes = NAN, items, groups;
	double pf = jnum(pk, "gflops"), pb = jnum(pk, "gbs"), margin = b->limits.peak_margin;
	double gf = NAN, gb = NAN, ai = NAN, ridge;
	const char *kernel;
	unsigned cu = (unsigned)json_integer_value(
		json_object_get(json_object_get(tdoc, "device"), "compute_units"));
	/* Bytes are held to the memory peak only for a single run after a flush. */
	int cold = json_integer_value(json_object_get(perf, "reps_per_sample")) == 1 &&
		   b->measure.flush;

	/* A peak that was not measured (or measured as 0) gates nothing. */
	if (!(pf > 0))
		pf = NAN;
	if (!(pb > 0))
		pb = NAN;
	ridge = pf / pb;
	if (!batch_timed_figure(b, b->flops, &flops) && ms > 0)
		gf = flops / (ms * 1e6);
	if (!batch_timed_figure(b, b->bytes, &bytes) && ms > 0)
		gb = bytes / (ms * 1e6);
	if (isfinite(flops) && isfinite(bytes) && bytes > 0)
		ai = flops / bytes;
	jx_set_real(rf, "flops", flops);
	jx_set_real(rf, "bytes", bytes);
	jx_set_real(rf, "gflops", gf);
	jx_set_real(rf, "gbs", gb);
	jx_set_real(rf, "peak_gflops", pf);
	jx_set_real(rf, "peak_gbs", pb);
	jx_set_real(rf, "fraction_of_peak_flops", gf / pf);
	jx_set_real(rf, "fraction_of_peak_bw", gb / pb);
	jx_set_real(rf, "arithmetic_intensity", ai);
	jx_set_real(rf, "ridge_point", ridge);
	side_by_side(rf, perf, tdoc, flops);
	launch_size(perf, &items, &groups, &kernel);
	json_object_set_new(rf, "bottleneck",
			    json_string(classify(rf, ev, ms, jnum(pk, "launch_us"), items, groups,
						 kernel, cu, ai, ridge)));
	json_object_set_new(rf, "evidence", ev);
	json_object_set_new(r, "roofline", rf);
	if ((isfinite(gf) && gf > pf * margin) || (cold && isfinite(gb) && gb > pb * margin)) {
		char msg[512];

		snprintf(msg, sizeof(msg),
			 "%.1f GFLOP/s and %.1f GB/s exceed the measured peaks (%.1f GFLOP/s, %.1f "
			 "GB/s) by more than %.0f%%: the timing cannot be real",
			 gf, gb, pf, pb, (margin - 1) * 100);
		json_object_set_new(r, "status", json_string("invalid"));
		json_object_set_new(r, "fault",
				    json_pack("{s:s, s:s, s:s}", "origin", "candidate", "kind",
					      "above_peak", "message", msg));
	}
}

/* The entry of program id in time document doc; NULL if absent. */
static json_t *entry_of(json_t *doc, const char *id)
{
	json_t *e = id ? json_object_get(json_object_get(doc, "programs"), id) : NULL;

	return json_is_object(e) ? e : NULL;
}

/*
 * gflops and gbs at shape s, from the problem's flops and bytes there, and
 * the invalid gate of result_roofline at that shape (the peaks of doc, the
 * pass that timed it).  Returns 0, or -1 with *why set when the figures
 * cannot be real.
 */
static int shape_figures(const struct batch *b, size_t s, json_t *perf, json_t *doc, char *why,
			 size_t n)
{
	json_t *pk = json_object_get(doc, "peaks");
	double ms = jnum(perf, "median_ms"), flops = NAN, bytes = NAN, gf = NAN, gb = NAN;
	double pf = jnum(pk, "gflops"), pb = jnum(pk, "gbs"), margin = b->limits.peak_margin;
	int cold = json_integer_value(json_object_get(perf, "reps_per_sample")) == 1 &&
		   b->measure.flush;

	if (!batch_shape_figure(b, s, b->flops, &flops) && ms > 0)
		gf = flops / (ms * 1e6);
	if (!batch_shape_figure(b, s, b->bytes, &bytes) && ms > 0)
		gb = bytes / (ms * 1e6);
	jx_set_real(perf, "gflops", gf);
	jx_set_real(perf, "gbs", gb);
	if ((pf > 0 && isfinite(gf) && gf > pf * margin) ||
	    (cold && pb > 0 && isfinite(gb) && gb > pb * margin)) {
		snprintf(why, n,
			 "at shape '%s': %.1f GFLOP/s and %.1f GB/s exceed the measured peaks "
			 "(%.1f GFLOP/s, %.1f GB/s) by more than %.0f%%: the timing cannot be real",
			 b->shapes[s].name, gf, gb, pf, pb, (margin - 1) * 100);
		return -1;
	}
	return 0;
}

static void set_fault(json_t *r, const char *status, const char *origin, const char *kind,
		      const char *message)
{
	json_object_set_new(r, "status", json_string(status));
	json_object_set_new(
		r, "fault",
		json_pack("{s:s, s:s, s:s}", "origin", origin, "kind", kind, "message", message));
}

/*
 * A program judged ok at the primary is judged at every other timed shape
 * alike: a fault there (wrong when timed, out of bounds, above the peaks)
 * is its status, and it loses its figures.
 */
static void fail_at_shape(json_t *r, json_t *e, const char *shape)
{
	json_t *fault = json_object_get(e, "fault");
	const char *st = json_string_value(json_object_get(e, "status"));
	char msg[1400];

	json_object_del(r, "performance");
	json_object_del(r, "roofline");
	if (!e) {
		snprintf(msg, sizeof(msg), "not timed at shape '%s'", shape);
		set_fault(r, "infra_error", "infrastructure", "timing", msg);
		return;
	}
	snprintf(msg, sizeof(msg), "at shape '%s': %s", shape,
		 json_string_value(json_object_get(fault, "message"))
			 ? json_string_value(json_object_get(fault, "message"))
			 : "failed when timed");
	set_fault(r, st ? st : "infra_error",
		  json_string_value(json_object_get(fault, "origin"))
			  ? json_string_value(json_object_get(fault, "origin"))
			  : "infrastructure",
		  json_string_value(json_object_get(fault, "kind"))
			  ? json_string_value(json_object_get(fault, "kind"))
			  : "timing",
		  msg);
}

void result_by_shape(const struct batch *b, json_t *r, const char *id, const char *base_id,
		     json_t *const *docs)
{
	json_t *by = json_object();
	const char *st = json_string_value(json_object_get(r, "status"));
	char why[1024];

	for (size_t s = 0; st && !strcmp(st, "ok") && s < b->nshapes; s++) {
		json_t *e, *perf;

		if (!b->shapes[s].timed)
			continue;
		e = entry_of(docs[s], id);
		if (!timed_ok(e)) {
			fail_at_shape(r, e, b->shapes[s].name);
			break;
		}
		perf = performance_at(b, s, e, entry_of(docs[s], "reference"),
				      entry_of(docs[s], base_id),
				      json_object_get(docs[s], "reference_anchor"));
		if (shape_figures(b, s, perf, docs[s], why, sizeof(why))) {
			json_decref(perf);
			json_object_del(r, "performance");
			json_object_del(r, "roofline");
			set_fault(r, "invalid", "candidate", "above_peak", why);
			break;
		}
		json_object_set_new(by, b->shapes[s].name, perf);
	}
	st = json_string_value(json_object_get(r, "status"));
	if (st && !strcmp(st, "ok") && json_object_size(by))
		json_object_set(r, "performance_by_shape", by);
	json_decref(by);
}
