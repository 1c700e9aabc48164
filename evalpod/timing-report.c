/*
 * timing-report.c - what the timing worker (timing.c) writes and the device
 * peaks it judges the timings against: each program's entry of time.json
 * (samples, statistics, how its sampling ended), its trace, the document
 * itself, and the peaks, read from the parent's cache before the rounds and
 * measured again after them when a program went above a ceiling.
 *
 * May use: timing-internal.h (struct timer), peaks, stats, clrt, worker
 * (progress) and common/.  timing.c calls it; it calls nothing in timing.c.
 */
#include "timing-internal.h"
#include "flush.h"
#include "fileio.h"
#include "jsonx.h"
#include "log.h"
#include "peaks.h"
#include "stats.h"
#include "worker.h"
#include "xalloc.h"

#include <math.h>
#include <string.h>

#define PEAKS_RETRY_MS 5000.0 /* measuring them again, at most */

/*
 * Each launch step's median device time over the traced samples, as
 * performance.launch[i].median_ms: which kernel of a plan the time goes to
 * (the roofline's bottleneck is judged on that one).  The trace holds, for
 * every traced sample, one event per step in plan order on thread 1.
 */
static void step_medians(struct tprog *p)
{
	json_t *launch = json_object_get(p->doc, "launch"), *ev;
	size_t ns = json_array_size(launch), nev = json_array_size(p->trace), k = 0, i;
	double *d;

	if (!ns || !nev)
		return;
	d = xcalloc(ns * nev, sizeof(*d));
	json_array_foreach (p->trace, i, ev) {
		const char *ph = json_string_value(json_object_get(ev, "ph"));

		if (json_integer_value(json_object_get(ev, "tid")) != 1 || !ph || strcmp(ph, "X"))
			continue;
		/* step k % ns of its sample: laid out step-major */
		d[(k % ns) * nev + k / ns] = json_number_value(json_object_get(ev, "dur")) / 1e3;
		k++;
	}
	for (size_t st = 0; st < ns && k / ns; st++) {
		struct stats s;

		stats_compute(d + st * nev, k / ns, &s);
		json_object_set_new(json_array_get(launch, st), "median_ms", json_real(s.median));
	}
	free(d);
}

static void finish_prog(struct timer *t, struct tprog *p)
{
	struct stats st, hs;
	json_t *arr = json_array(), *harr = json_array(), *rarr = json_array();

	for (size_t i = 0; i < p->nsamples; i++) {
		json_array_append_new(arr, json_real(p->samples[i]));
		json_array_append_new(harr, json_real(p->host[i]));
		json_array_append_new(rarr, json_integer((json_int_t)p->round_of[i]));
	}
	stats_compute(p->samples, p->nsamples, &st);
	stats_compute(p->host, p->nsamples, &hs);
	json_object_set_new(p->doc, "samples_ms", arr);
	json_object_set_new(p->doc, "host_ms", harr);
	json_object_set_new(p->doc, "rounds", rarr);
	json_object_set_new(p->doc, "stats", stats_json(&st));
	json_object_set_new(p->doc, "host_stats", stats_json(&hs));
	json_object_set_new(p->doc, "reps_per_sample", json_integer(p->reps));
	json_object_set_new(p->doc, "timed_ms", json_real(p->total_ms));
	if (p->stopped_by)
		json_object_set_new(p->doc, "stopped_by", json_string(p->stopped_by));
	json_object_set_new(p->doc, "first_launch_ms", json_real(p->first_launch_ms));
	json_object_set_new(p->doc, "rebuild_ms", json_real(p->rebuild_ms));
	step_medians(p);
}

static void write_trace(struct timer *t, struct tprog *p)
{
	char *dir = xasprintf("%s/art/%s", t->dir, p->id), *path = xasprintf("%s/trace.json", dir);
	json_t *doc = json_pack("{s:O, s:s, s:{s:s, s:s, s:s}}", "traceEvents", p->trace,
				"displayTimeUnit", "ms", "otherData", "program", p->id, "device",
				t->rt.info.name, "clock", "OpenCL profiling, us");
	json_t *events = json_object_get(doc, "traceEvents");
	char *text, msg[512];

	json_array_append_new(events,
			      json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", "thread_name",
					"ph", "M", "pid", 1, "tid", 1, "args", "name", "kernels"));
	json_array_append_new(events, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name",
						"thread_name", "ph", "M", "pid", 1, "tid", 2,
						"args", "name", "cache flush"));
	text = jx_dump(doc);
	if (dir_make(dir, msg, sizeof(msg)) ||
	    file_write_atomic(path, text, strlen(text), msg, sizeof(msg)))
		log_warn("trace of '%s' not written: %s", p->id, msg);
	free(text);
	json_decref(doc);
	free(path);
	free(dir);
}

/* How the caches were flushed before each sample (summary.json timing.flush). */
static const char *flush_name(const struct timer *t)
{
	if (t->flush_by_lines)
		return "lines";
	return t->flush_k ? "read" : "none";
}

/* The bytes the flush evicted (lines) or read (read); 0 when off. */
static size_t flush_size(const struct timer *t)
{
	return t->flush_by_lines ? t->flush_lines_bytes : t->flush_items * FLUSH_GRAIN;
}

int write_time_doc(struct timer *t, const struct peaks *pk, size_t rounds, double wall)
{
	json_t *doc = json_object(), *progs = json_object();
	char *path = xasprintf("%s/doc.json", t->dir), *text;
	int rc;

	json_object_set_new(doc, "device", clrt_devinfo_json(&t->rt.info));
	json_object_set_new(doc, "shape", json_string(t->b.shapes[t->shape].name));
	json_object_set_new(doc, "peaks", peaks_json(pk));
	json_object_set_new(doc, "rounds", json_integer((json_int_t)rounds));
	json_object_set_new(doc, "wall_ms", json_real(wall));
	json_object_set_new(doc, "flush", json_string(flush_name(t)));
	json_object_set_new(doc, "flush_bytes", json_integer((json_int_t)flush_size(t)));
	json_object_set_new(doc, "flushes", json_integer((json_int_t)t->nflushes));
	if (t->flush_k)
		json_object_set_new(doc, "flush_built_from",
				    json_string(t->flush_from_binary ? "binary" : "source"));
	if (t->sandbox)
		json_object_set(doc, "sandbox", t->sandbox);
	if (t->probe.k) {
		json_t *gf = json_array();

		for (size_t r = 0; r < t->nprobe; r++)
			json_array_append_new(gf, json_real(t->probe_gf[r]));
		json_object_set_new(doc, "peak_probe",
				    json_pack("{s:i, s:i, s:f, s:o}", "width", t->probe.width,
					      "chains", t->probe.chains, "build_ms",
					      t->probe.pg.build_ms, "gflops", gf));
	}
	for (size_t i = 0; i < t->nprogs; i++) {
		finish_prog(t, &t->progs[i]);
		/* A program's trace is of the primary shape's samples (the others are in their docs). */
		if (t->progs[i].nsamples && t->shape == t->b.timed_shape)
			write_trace(t, &t->progs[i]);
		json_object_set(progs, t->progs[i].id, t->progs[i].doc);
	}
	json_object_set_new(doc, "programs", progs);
	text = jx_dump(doc);
	rc = file_write_atomic(path, text, strlen(text), t->msg, sizeof(t->msg));
	free(text);
	free(path);
	json_decref(doc);
	return rc;
}

/*
 * The device peaks before any program runs: the cached ones the parent put
 * in w/time/peaks/ (see stage_peaks in run-timing.c), else measured now.  A
 * cached ceiling is the best ever measured on this device, so it is only
 * too low if every measurement so far was made on a busy machine; that
 * matters only to a program that goes above it, and then above_peaks has
 * them measured again after the rounds.
 */
int first_peaks(struct timer *t, struct peaks *pk)
{
	char *dir = xasprintf("%s/peaks", t->dir);
	int rc = 0;

	if (!peaks_read_cache(&t->rt.info, dir, pk)) {
		pk->cached = 1;
		pk->fresh_gflops = pk->fresh_gbs = 0;
	} else {
		rc = peaks_get(&t->rt, NULL, pk, PEAKS_MEM_SHARE(t), t->msg, sizeof(t->msg));
	}
	free(dir);
	return rc;
}

/*
 * Whether a program's fastest sample went above a ceiling (bytes only for
 * single cold runs, as the invalid gate counts them): that is what shows a
 * ceiling was measured low.  (Measuring again already at 0.8 of a ceiling
 * did so after every batch of a session whose kernels run near the FMA
 * peak, 0.6 s of a 19 s batch, and learnt nothing: the ceiling covered
 * them.)  *need_gf and *need_gb are what the ceilings must reach for every
 * program to pass the gate (result.c): the fastest rate over
 * limits.peak_margin.
 */
int above_peaks(struct timer *t, const struct peaks *pk, double *need_gf, double *need_gb)
{
	double flops = NAN, bytes = NAN, margin = t->b.limits.peak_margin;
	int above = 0;

	*need_gf = *need_gb = 0;
	batch_shape_figure(&t->b, t->shape, t->b.flops, &flops);
	batch_shape_figure(&t->b, t->shape, t->b.bytes, &bytes);
	for (size_t i = 0; i < t->nprogs; i++) {
		const struct tprog *p = &t->progs[i];
		double best = INFINITY;

		for (size_t k = 0; k < p->nsamples; k++)
			if (p->samples[k] > 0 && p->samples[k] < best)
				best = p->samples[k];
		if (!isfinite(best))
			continue;
		if (isfinite(flops) && flops / (best * 1e6) > pk->gflops) {
			above = 1;
			*need_gf = fmax(*need_gf, flops / (best * 1e6) / margin);
		}
		if (isfinite(bytes) && p->reps == 1 && t->b.measure.flush &&
		    bytes / (best * 1e6) > pk->gbs) {
			above = 1;
			*need_gb = fmax(*need_gb, bytes / (best * 1e6) / margin);
		}
	}
	return above;
}

/*
 * The peaks measured again after the rounds, for programs above a ceiling:
 * until the ceilings reach what the programs need not to be gated, for at
 * most PEAKS_RETRY_MS.  On a busy machine the micro-kernels measure low at
 * one moment and a program runs fast at another (seen here under load 17:
 * FMA 47 GFLOP/s while honest matmul variants ran at 92); measuring again
 * finds the quiet moments the program found, while no number of tries lets
 * the real FMA kernel match a timing that cannot be real.  Each ceiling is
 * the highest of the figures it had and those measured now.
 */
void confirm_peaks(struct timer *t, struct peaks *pk, double need_gf, double need_gb)
{
	double t0 = clrt_now_ms();
	char msg[512];

	worker_progress(t->dir, "peaks");
	do {
		struct peaks now;

		memset(&now, 0, sizeof(now));
		if (peaks_measure(&t->rt, &now, PEAKS_MEM_SHARE(t), msg, sizeof(msg))) {
			log_warn("measuring the peaks again: %s", msg);
			break;
		}
		pk->fresh_gflops = fmax(pk->fresh_gflops, now.gflops);
		pk->fresh_gbs = fmax(pk->fresh_gbs, now.gbs);
		pk->gflops = fmax(pk->gflops, now.gflops);
		pk->gbs = fmax(pk->gbs, now.gbs);
	} while ((pk->gflops < need_gf || pk->gbs < need_gb) &&
		 clrt_now_ms() - t0 < PEAKS_RETRY_MS);
}
