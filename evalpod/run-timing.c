/*
 * run-timing.c - the timing phase of `evalpod run` (stages 3 and 4 as the
 * parent sees them): the list of programs that passed their checks, the
 * cached device peaks staged for the timing worker, the worker itself (run
 * again without a culprit it blames, or after an infrastructure failure, a
 * few times), the judge's verdicts applied to its time document, and the
 * peaks combined with the cache afterwards; once per timed shape, the
 * primary first, when the batch times several.
 *
 * May use: run-internal.h (struct run, the job helpers of run-job.c), judge,
 * pool, peaks, noise, worker and common/; never cmd-run.c, which calls
 * run_timing() and run_mark_untimed().
 */
#include "run-internal.h"
#include "fileio.h"
#include "judge.h"
#include "jsonx.h"
#include "log.h"
#include "noise.h"
#include "peaks.h"
#include "pool.h"
#include "sbuf.h"
#include "worker.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Timing attempts that failed for the infrastructure's reasons, at most. */
#define TIMING_ATTEMPTS 3

/* The time document of timed shape s once its pass is done; NULL before. */
static json_t *shape_doc(const struct run *r, size_t s)
{
	return s == r->b.timed_shape ? r->tdoc : r->sdocs ? r->sdocs[s] : NULL;
}

/*
 * Whether program i is timed in the next pass: it passed its checks and
 * every timed shape done so far timed it without a fault (a program caught
 * at one shape is not timed at the next).
 */
static int to_time(const struct run *r, size_t i)
{
	if (!run_prog_ok(&r->progs[i]))
		return 0;
	for (size_t s = 0; s < r->b.nshapes; s++) {
		json_t *doc = shape_doc(r, s), *e;
		const char *st;

		if (!doc)
			continue;
		e = json_object_get(json_object_get(doc, "programs"), r->progs[i].src->id);
		st = json_string_value(json_object_get(e, "status"));
		if (!st || strcmp(st, "ok"))
			return 0;
	}
	return 1;
}

/*
 * Whether the pass at timed shape s leaves the reference out: the batch has
 * a baseline to time, and the session's cache holds the baseline's anchor
 * at s (*a) with links to spare (refcache.h).  Then the baseline carries
 * the reference's speed into this pass, and timing the naive reference
 * again would add nothing the ranking uses.
 */
static int anchored(struct run *r, size_t s, struct ref_anchor *a)
{
	if (!r->refcache.dir || !r->b.baseline || !r->nprogs || !r->progs[0].is_baseline ||
	    !to_time(r, 0))
		return 0;
	if (refcache_anchor_get(&r->refcache, &r->b, r->tseeds, s, r->progs[0].src, a))
		return 0;
	return a->links < REFCACHE_ANCHOR_LINKS;
}

/* WORK/w/time/ids.txt: the reference (unless anchored), then every program to time. */
static int write_ids(struct run *r, int with_ref)
{
	struct sbuf ids = SBUF_INIT;
	char *path = xasprintf("%s/w/time/ids.txt", r->work);
	int count = 0, rc;

	if (with_ref)
		sbuf_adds(&ids, "reference\n");
	for (size_t i = 0; i < r->nprogs; i++) {
		if (!to_time(r, i))
			continue;
		sbuf_addf(&ids, "%s\n", r->progs[i].src->id);
		count++;
	}
	rc = file_write_atomic(path, ids.buf, ids.len, r->msg, sizeof(r->msg));
	sbuf_release(&ids);
	free(path);
	return rc ? -1 : count;
}

/*
 * Applies the judge's timing verdicts to every program's entry in doc (the
 * pass's time.json, not yet kept).  Line k of the judge's records is the
 * k-th program of the list write_ids made, rebuilt here from the parent's
 * own state: ids.txt lies in the timing worker's directory, where its
 * kernels could have rewritten it.
 */
static void apply_timed(struct run *r, json_t *doc, int with_ref)
{
	json_t *progs = json_object_get(doc, "programs");
	json_t *seeds = json_array(), *e;
	size_t line = 0;

	if (with_ref) {
		if (json_is_object(e = json_object_get(progs, "reference")))
			judge_apply_timed(&r->judge.trecs[0], e);
		line++;
	} else {
		/* Not on the list: an entry by that name is none of the parent's. */
		json_object_del(progs, "reference");
	}
	for (size_t i = 0; i < r->nprogs; i++) {
		if (!to_time(r, i))
			continue;
		if (line < r->judge.ntrecs &&
		    json_is_object(e = json_object_get(progs, r->progs[i].src->id)))
			judge_apply_timed(&r->judge.trecs[line], e);
		line++;
	}
	for (unsigned k = 0; k < WORKER_TIMING_SETS; k++)
		json_array_append_new(seeds, json_integer((json_int_t)r->tseeds[k]));
	json_object_set_new(doc, "timing_seeds", seeds);
}

static const char *str_of(json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v ? v : "";
}

/*
 * The device peaks: the timing worker measured them before any candidate
 * ran; the parent combines them with the cache (each ceiling the higher of
 * the two) and raises the cache, so no worker ever writes it.
 */
static void combine_peaks(struct run *r, json_t *doc)
{
	json_t *dev = json_object_get(doc, "device"), *pj = json_object_get(doc, "peaks");
	struct devinfo info;
	struct peaks now, cached;

	if (!r->cache_dir || !json_is_object(dev) || !json_is_object(pj))
		return;
	memset(&info, 0, sizeof(info));
	memset(&now, 0, sizeof(now));
	strlcpy(info.platform, str_of(dev, "platform"), sizeof(info.platform));
	strlcpy(info.platform_version, str_of(dev, "platform_version"),
		sizeof(info.platform_version));
	strlcpy(info.name, str_of(dev, "name"), sizeof(info.name));
	strlcpy(info.driver, str_of(dev, "driver"), sizeof(info.driver));
	strlcpy(info.version, str_of(dev, "version"), sizeof(info.version));
	now.gflops = json_number_value(json_object_get(pj, "gflops"));
	now.gbs = json_number_value(json_object_get(pj, "gbs"));
	/* Absent when the worker used the cached peaks alone (first_peaks in timing-report.c). */
	now.fresh_gflops = json_number_value(json_object_get(pj, "measured_now_gflops"));
	now.fresh_gbs = json_number_value(json_object_get(pj, "measured_now_gbs"));
	now.launch_us = json_number_value(json_object_get(pj, "launch_us"));
	if (!peaks_read_cache(&info, r->cache_dir, &cached)) {
		now.cached = 1;
		if (cached.gflops > now.gflops)
			now.gflops = cached.gflops;
		if (cached.gbs > now.gbs)
			now.gbs = cached.gbs;
	}
	/* Rewritten even when not higher: the file's date is when they were measured. */
	if (now.fresh_gflops > 0 && now.fresh_gbs > 0)
		peaks_save(&info, r->cache_dir, &now);
	json_object_set_new(doc, "peaks", peaks_json(&now));
}

/*
 * The cached peaks of every device, copied where the timing worker can read
 * them (w/time/peaks/): with them it measures the peaks only when a program
 * goes above them (first_peaks in timing-report.c).  Without a cache, or with one
 * measured more than PEAKS_RECHECK_S ago, it measures.
 */
static void stage_peaks(struct run *r)
{
	char *dir = xasprintf("%s/w/time/peaks", r->work);

	/* Only what the parent put there: nothing another worker could have left. */
	dir_remove_tree(dir);
	if (r->cache_dir)
		peaks_copy_cache(r->cache_dir, dir);
	free(dir);
}

/*
 * Empties worker NAME's PoCL cache.  Kernels run inside the worker, so a
 * program dropped from timing may have rewritten what is there (another
 * program's compiled kernels); the next pass adopts and compiles afresh.
 */
static int fresh_pocl_cache(struct run *r, const char *name)
{
	char *wdir = worker_dir(r->work, name), *dir = xasprintf("%s/pocl", wdir);
	int rc;

	free(wdir);
	dir_remove_tree(dir);
	rc = dir_make(dir, r->msg, sizeof(r->msg));
	free(dir);
	return rc;
}

static double median_in(json_t *progs, const char *id)
{
	json_t *e = json_object_get(progs, id);
	const char *st = json_string_value(json_object_get(e, "status"));
	json_t *m = json_object_get(json_object_get(e, "stats"), "median");

	return st && !strcmp(st, "ok") && json_is_number(m) ? json_number_value(m) : 0;
}

/*
 * After a pass at shape s: notes in doc what carried the reference's speed
 * when it was not timed (a, the baseline's anchor), and keeps in the
 * session's cache the anchor of every program timed without a fault, for a
 * later batch whose baseline it is.
 */
static void keep_anchors(struct run *r, size_t s, json_t *doc, const struct ref_anchor *a)
{
	json_t *progs = json_object_get(doc, "programs");
	double base = 0;
	struct ref_anchor mine;

	if (!r->refcache.dir)
		return;
	if (a) {
		json_object_set_new(doc, "reference_anchor",
				    json_pack("{s:s, s:f, s:i}", "program", r->progs[0].src->id,
					      "speedup_vs_reference", a->ratio, "links", a->links));
		/* The reference's median as the baseline's, timed now, implies it. */
		base = median_in(progs, r->progs[0].src->id) * a->ratio;
		mine.links = a->links + 1;
	} else {
		base = median_in(progs, "reference");
		mine.links = 0;
	}
	for (size_t i = 0; base > 0 && i < r->nprogs; i++) {
		double m = median_in(progs, r->progs[i].src->id);

		if (m <= 0)
			continue;
		mine.ratio = base / m;
		refcache_anchor_put(&r->refcache, &r->b, r->tseeds, s, r->progs[i].src, &mine);
	}
}

/* Keeps the time document of timed shape s (taken). */
static void keep_doc(struct run *r, size_t s, json_t *doc)
{
	if (s == r->b.timed_shape) {
		r->tdoc = doc;
		return;
	}
	if (!r->sdocs)
		r->sdocs = xcalloc(r->b.nshapes, sizeof(*r->sdocs));
	r->sdocs[s] = doc;
}

/*
 * The timing phase at timed shape s: the timing worker run until it
 * succeeds (its document kept), a pass drops a culprit (timed again
 * without it), or TIMING_ATTEMPTS passes fail for the infrastructure.
 */
static int time_shape(struct run *r, size_t s)
{
	char *progress = xasprintf("%s/w/time/progress", r->work);
	char *note = xasprintf("%s/w/time/fault", r->work);
	char *seeds = run_seeds_arg(r);
	int rc = RUN_EXIT_INFRA, infra = 0, several = batch_ntimed(&r->b) > 1, force_ref = 0;

	stage_peaks(r);
	/* Each pass either succeeds, drops a culprit, or counts as an attempt. */
	for (size_t pass = 0; pass <= r->nprogs + TIMING_ATTEMPTS; pass++) {
		struct job j;
		struct judge_chan c;
		struct ref_anchor a;
		int with_ref = force_ref || !anchored(r, s, &a);
		int count = write_ids(r, with_ref), prc, stop;
		json_t *doc;

		unlink(progress);
		unlink(note);
		if (count <= 0) {
			rc = count < 0 ? RUN_EXIT_INFRA : 0;
			goto out;
		}
		judge_time_shape(&r->judge, s);
		/* Nothing a dropped culprit's kernels wrote survives into the next pass. */
		if ((pass > 0 || s != r->b.timed_shape) && fresh_pocl_cache(r, "time")) {
			rc = RUN_EXIT_INFRA;
			goto out;
		}
		run_job_setup(r, &j, "time", worker_dir(r->work, "time"), seeds,
			      r->b.limits.time_timeout_s);
		j.argv[5] = xasprintf("%zu", s);
		j.progress = progress;
		j.stall_s = r->b.limits.compile_timeout_s + r->b.limits.run_timeout_s;
		if (judge_chan_open(&c, &r->judge, judge_out_bytes(&r->b, s), r->msg,
				    sizeof(r->msg))) {
			judge_chan_close(&c);
			job_release(&j);
			goto out;
		}
		run_give_chan(&j, &c);
		if (several)
			run_progress(r, "timing %d programs %s, interleaved, at shape '%s'", count,
				     with_ref ? "with the reference" : "(the reference anchored)",
				     r->b.shapes[s].name);
		else
			run_progress(r, "timing %d programs %s, interleaved", count,
				     with_ref ? "with the reference" : "(the reference anchored)");
		prc = pool_run(&j, 1, 1, r->echo, run_on_judge, r, r->msg, sizeof(r->msg));
		run_progress(r, "timing %s (%.1f s)",
			     !prc && j.exited && j.exit_code == 0 ? "done" : "failed",
			     j.wall_ms / 1e3);
		if (!prc && j.exited && j.exit_code == 0 && (doc = run_load_doc(r, "time"))) {
			apply_timed(r, doc, with_ref);
			/* Before any statistic, speedup or gate is drawn from the samples. */
			noise_apply(&r->noise, r->b.batch_id, doc);
			if (!with_ref && !(median_in(json_object_get(doc, "programs"),
						     r->progs[0].src->id) > 0)) {
				/* A baseline judged wrong when timed carries nothing. */
				log_warn("the baseline '%s' was not timed ok, so it cannot carry "
					 "the reference's speed: timing again with the reference",
					 r->progs[0].src->id);
				json_decref(doc);
				job_release(&j);
				judge_chan_close(&c);
				force_ref = 1;
				continue;
			}
			combine_peaks(r, doc);
			keep_anchors(r, s, doc, with_ref ? NULL : &a);
			keep_doc(r, s, doc);
			job_release(&j);
			judge_chan_close(&c);
			rc = 0;
			goto out;
		}
		prc = prc ? -1 : run_blame_timed(r, &j);
		stop = j.aborted || pool_interrupted();
		job_release(&j);
		judge_chan_close(&c);
		if (prc && (stop || ++infra >= TIMING_ATTEMPTS))
			goto out;
	}
	snprintf(r->msg, sizeof(r->msg), "timing failed %d times", TIMING_ATTEMPTS);
out:
	free(seeds);
	free(note);
	free(progress);
	return rc;
}

int run_timing(struct run *r)
{
	int rc = time_shape(r, r->b.timed_shape);

	/* The primary first: its figures are what every result's `performance` holds. */
	for (size_t s = 0; !rc && s < r->b.nshapes; s++)
		if (s != r->b.timed_shape && r->b.shapes[s].timed)
			rc = time_shape(r, s);
	return rc;
}

/* After a failed timing phase: programs that passed their checks are untimed. */
void run_mark_untimed(struct run *r)
{
	for (size_t i = 0; i < r->nprogs; i++)
		if (run_prog_ok(&r->progs[i]))
			run_set_fault(r->progs[i].check, "infra_error", "infrastructure", "timing",
				      r->msg);
	json_decref(r->tdoc);
	r->tdoc = NULL;
	for (size_t s = 0; r->sdocs && s < r->b.nshapes; s++) {
		json_decref(r->sdocs[s]);
		r->sdocs[s] = NULL;
	}
}
