/*
 * run-internal.h - what cmd-run.c (running a batch's stages), run-timing.c
 * (its timing phase), run-job.c (the worker jobs both phases set up) and
 * emit.c (storing and printing its results) share.
 */
#ifndef EVALPOD_RUN_INTERNAL_H
#define EVALPOD_RUN_INTERNAL_H

#include "batch.h"
#include "http.h"
#include "judge.h"
#include "noise.h"
#include "refcache.h"
#include "run.h"
#include "workdir.h"

#include <jansson.h>
#include <limits.h>
#include <stddef.h>

struct run {
	const char *batch_arg, *out_dir, *cache_dir, *ca_file;
	const char *ref_cache_dir; /* --ref-cache: the session's reference outputs, or NULL */
	struct refcache refcache;  /* open when ref_cache_dir is set */
	int ref_cached;            /* the reference's outputs came from the cache */
	int jobs, keep_work, echo;
	int quiet;               /* --quiet: no progress lines (run_progress) */
	size_t checked, tocheck; /* check workers finished, and started */
	char exe[PATH_MAX];
	struct workdir wd; /* the work directory (workdir.h) */
	char *work;        /* wd.path */
	struct batch b;
	struct outcome ref;
	struct outcome *progs; /* baseline (if any) first, then the variants */
	size_t nprogs;
	json_t *tdoc;   /* time.json (of the primary timed shape) */
	json_t **sdocs; /* per shape: time.json of another timed shape, or NULL (owned) */
	uint64_t tseeds[WORKER_TIMING_SETS]; /* drawn for this run, or the session's */
	struct judge judge;
	struct job *fe;     /* the front-end worker started beside the reference's, or NULL */
	struct noise noise; /* EVALPOD_TEST_NOISE: perturbs the timings (test mode) */
	struct http_opts http;
	char msg[4096];
};

/*
 * Builds every program's result and the summary, writes them (and the
 * artifacts) to the output folder and/or their presigned URLs, and prints
 * the table.  wall_ms is the batch's wall time.  Returns RUN_EXIT_OK, or
 * RUN_EXIT_INFRA with r->msg set when something could not be stored.
 */
int emit_all(struct run *r, double wall_ms);

struct job;

/*
 * The document worker `name` ("reference", "time" or a program id) wrote,
 * read as untrusted input (no links, at most 256 MiB); NULL when absent or
 * not a JSON object.  New reference.
 */
json_t *run_load_doc(struct run *r, const char *name);

/* Sets status and fault {origin, kind, message} on doc. */
void run_set_fault(json_t *doc, const char *status, const char *origin, const char *kind,
		   const char *message);

/*
 * The check document of a finished check or reference job: doc (taken) when
 * the worker finished it, else a verdict on how the worker ended and whose
 * fault that was.  New reference.
 */
json_t *run_judge_job(struct run *r, struct job *j, const char *id, json_t *doc);

/*
 * Decides what a failed timing job means: 0 when a candidate was blamed
 * (its check document says so; time again without it), -1 when the
 * failure is the infrastructure's (r->msg says why).
 */
int run_blame_timed(struct run *r, struct job *j);

/* Whether o passed its checks. */
int run_prog_ok(const struct outcome *o);

/* ---- run-job.c: what the timing phase shares with the checks ---- */

/*
 * A progress line on stderr, "evalpod: ..." (not with --quiet): what a
 * person or kctl watching the run sees move before the results exist.
 */
void run_progress(const struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Sets up job j of a worker in mode ("check", "time"...) whose directory is
 * dir (taken), with arg as its last argument (may be NULL) and timeout_s as
 * its deadline: a clean environment with PoCL's cache and TMPDIR in the
 * worker's own directory, and the batch's memory limit.
 */
void run_job_setup(struct run *r, struct job *j, const char *mode, char *dir, const char *arg,
		   double timeout_s);

/* "S0,S1,...": the timing seeds for a worker's command line (the caller frees it). */
char *run_seeds_arg(const struct run *r);

/* pool.h's on_ctl: serves a worker's request to the judge. */
int run_on_judge(void *ctx, struct job *j);

struct judge_chan;

/* Hands c's descriptors to job j, which owns them from now on (pool.h). */
void run_give_chan(struct job *j, struct judge_chan *c);

/* ---- run-timing.c ---- */

/*
 * Times every program that passed its checks, with the reference (r->tdoc
 * set).  Returns 0 (also when nothing is to be timed), or RUN_EXIT_INFRA
 * with r->msg set when timing failed for the infrastructure's reasons.
 */
int run_timing(struct run *r);

/* After a failed timing phase: programs that passed their checks are untimed. */
void run_mark_untimed(struct run *r);

#endif
