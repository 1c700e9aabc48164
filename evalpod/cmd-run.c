/*
 * cmd-run.c - `evalpod run BATCH --out DIR`: evaluates one EvalBatch.
 *
 * The parent reads and validates the batch, screens the candidates'
 * sources (screen.h), draws the timing seeds, then drives the workers of
 * worker.h: the reference first, the checks of the baseline and every
 * variant in parallel, then one timing worker for all that passed, serving
 * their requests to the judge (judge.h) as they come.  It never opens the
 * OpenCL device and never runs candidate code itself.  A worker that
 * crashes or hangs costs only its program (blame.c decides whose fault an
 * ending was; for the timing worker, the culprit is dropped and timing
 * starts again without it).
 *
 * This file holds the command, the work directory, the reference and the
 * checks; the timing phase is run-timing.c, the results emit.c, the worker
 * jobs both phases set up run-job.c, and what they share run-internal.h.
 *
 * May use: run-internal.h (run-timing.c, run-job.c, emit.c, blame.c), the
 * other evalpod modules and common/.
 */
#include "run.h"
#include "run-internal.h"
#include "err.h"
#include "expr.h"
#include "fileio.h"
#include "http.h"
#include "jsonx.h"
#include "log.h"
#include "peaks.h"
#include "pool.h"
#include "sandbox.h"
#include "sbuf.h"
#include "screen.h"
#include "world.h"
#include "worker.h"
#include "workdir.h"
#include "xalloc.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static int read_batch_text(struct run *r, char **text, size_t *len)
{
	struct http_response resp = { 0 };
	int rc;

	if (!http_is_url(r->batch_arg))
		return file_read(r->batch_arg, BATCH_MAX_BYTES, text, len, r->msg, sizeof(r->msg));
	r->http.max_body = BATCH_MAX_BYTES;
	rc = http_request("GET", r->batch_arg, NULL, 0, &r->http, &resp, r->msg, sizeof(r->msg));
	if (!rc) {
		*text = resp.body ? resp.body : xstrdup("");
		*len = resp.body_len;
		resp.body = NULL;
	}
	http_response_release(&resp);
	return rc;
}

/* Creates DIR and the sub-folders every worker uses (pocl, art, tmp; ref). */
static int make_worker_dir(struct run *r, char *dir, int with_ref)
{
	static const char *const sub[] = { "pocl", "art", "tmp", "ref" };
	size_t nsub = sizeof(sub) / sizeof(sub[0]) - (with_ref ? 0 : 1);
	int rc = 0;

	for (size_t i = 0; i < nsub && !rc; i++) {
		char *path = xasprintf("%s/%s", dir, sub[i]);

		rc = dir_make(path, r->msg, sizeof(r->msg));
		free(path);
	}
	free(dir);
	return rc;
}

/*
 * The workers' copy of the batch: the same document without its output
 * URLs, which are credentials no worker needs.
 */
static int write_worker_batch(struct run *r, const char *text, size_t len)
{
	json_t *doc = json_loadb(text, len, 0, NULL);
	char *path = xasprintf("%s/batch.json", r->work), *out;
	int rc;

	if (!doc) {
		free(path);
		return kerr_set(r->msg, sizeof(r->msg), KERR_PARSE, "the batch is not JSON");
	}
	json_object_del(doc, "outputs");
	out = jx_dump(doc);
	rc = file_write_atomic(path, out, strlen(out), r->msg, sizeof(r->msg));
	free(out);
	free(path);
	json_decref(doc);
	return rc;
}

static int make_work(struct run *r, const char *text, size_t len)
{
	const char *tmp = getenv("TMPDIR");
	int rc;

	workdir_sweep(tmp);
	if ((rc = workdir_make(&r->wd, tmp, r->msg, sizeof(r->msg))))
		return rc;
	r->work = r->wd.path;
	rc = make_worker_dir(r, worker_dir(r->work, "reference"), 1);
	if (!rc)
		rc = make_worker_dir(r, worker_dir(r->work, "time"), 0);
	if (!rc)
		rc = make_worker_dir(r, worker_dir(r->work, "frontend"), 0);
	if (!rc) {
		/* Made here, so that the check workers' sandboxes can name it. */
		char *p = xasprintf("%s/w/frontend/p", r->work);

		rc = dir_make(p, r->msg, sizeof(r->msg));
		free(p);
	}
	for (size_t i = 0; i < r->nprogs && !rc; i++)
		rc = make_worker_dir(r, worker_prog_dir(r->work, r->progs[i].src->id), 0);
	return rc ? rc : write_worker_batch(r, text, len);
}

/*
 * One check worker's deadline: compile_timeout_s + run_timeout_s, or
 * REF_DEADLINE_FACTOR times the reference's own check when that is longer.
 * A machine that is slow for the naive reference is slow for every program,
 * so the candidates' deadlines follow its measured speed (docs/evalpod.md).
 * The reference's own check (check_wall_ms still 0) gets the limits alone.
 */
#define REF_DEADLINE_FACTOR 4

static double check_timeout(const struct run *r)
{
	double limit = r->b.limits.compile_timeout_s + r->b.limits.run_timeout_s;
	double scaled = REF_DEADLINE_FACTOR * r->ref.check_wall_ms / 1000;

	return scaled > limit ? scaled : limit;
}

/*
 * The reference's outputs go to the judge, out of every later worker's
 * reach; those the reference worker computed go to the session's cache
 * first.
 */
static int open_judge(struct run *r)
{
	char *refdir = worker_dir(r->work, "reference");
	int rc;

	if (r->refcache.dir && !r->ref_cached)
		refcache_store(&r->refcache, &r->b, r->tseeds, refdir);
	rc = judge_open(&r->judge, &r->b, refdir, r->tseeds, r->nprogs, r->msg, sizeof(r->msg));

	free(refdir);
	return rc ? RUN_EXIT_INFRA : 0;
}

/* Whether the static screen refuses src (why says why). */
static int screen_refuses(const struct source_spec *src, char *why, size_t n)
{
	return screen_source(src->source, strlen(src->source), why, n) ||
	       screen_options(src->options, why, n);
}

/*
 * The front end has ended (built everything, failed or was killed): a
 * check worker waiting for its program stops waiting (check.c).  The
 * directory is the front end's to write: file_mark follows no link.
 */
static void frontend_finished(void *ctx, struct job *j)
{
	struct run *r = ctx;
	char *path = xasprintf("%s/w/frontend/p/.end", r->work), msg[512];

	if (file_mark(path, msg, sizeof(msg)))
		log_warn("%s", msg);
	free(path);
}

/*
 * The front-end worker's job (frontend.c): it builds the programs the
 * screen lets through, in the order their checks start, but the first
 * `leave` of them, as listed in WORK/w/frontend/p/.ids, where their check
 * workers read that they are to wait for it.  Returns 1 when there is one
 * (fe set up, beside the others), else 0.
 */
static int frontend_job(struct run *r, struct job *fe, size_t leave)
{
	struct sbuf ids = SBUF_INIT;
	char why[1024], *path;
	int rc;

	if (getenv("EVALPOD_NO_FRONTEND"))
		return 0;
	for (size_t i = 0; i < r->nprogs; i++) {
		if (screen_refuses(r->progs[i].src, why, sizeof(why)))
			continue;
		if (leave) {
			leave--;
			continue;
		}
		sbuf_addf(&ids, "%s\n", r->progs[i].src->id);
	}
	if (!ids.len) {
		sbuf_release(&ids);
		return 0;
	}
	path = xasprintf("%s/w/frontend/p/.ids", r->work);
	rc = file_write_atomic(path, ids.buf, ids.len, r->msg, sizeof(r->msg));
	free(path);
	sbuf_release(&ids);
	if (rc)
		return 0; /* the checks compile for themselves */
	run_job_setup(r, fe, "frontend", worker_dir(r->work, "frontend"), NULL, check_timeout(r));
	fe->beside = 1;
	fe->on_finish = frontend_finished;
	fe->finish_ctx = r;
	return 1;
}

static int run_reference(struct run *r)
{
	struct job both[2], *fe = &both[0], *j = &both[1];
	json_t *doc;
	const char *st, *why;
	char *seeds = run_seeds_arg(r);
	int rc = 0, with_fe;

	/*
	 * The front-end worker starts now, beside it: the reference's outputs
	 * are the checks' first need, and its build and its own compile leave
	 * a core idle, so the programs of the first checks are built by the
	 * time they start.  It outlives this pool; run_checks takes it over.
	 */
	job_init(fe);
	with_fe = frontend_job(r, fe, 0);
	fe->outlive = 1;
	run_job_setup(r, j, "reference", worker_dir(r->work, "reference"), seeds, check_timeout(r));
	free(seeds);
	log_info("computing reference outputs");
	if (pool_run(both + !with_fe, 1 + (size_t)with_fe, 1, r->echo, NULL, NULL, r->msg,
		     sizeof(r->msg))) {
		job_release(fe);
		job_release(j);
		return RUN_EXIT_INFRA;
	}
	if (with_fe) {
		r->fe = xmalloc(sizeof(*r->fe));
		*r->fe = *fe;
	}
	doc = run_judge_job(r, j, "reference", run_load_doc(r, "reference"));
	st = json_string_value(json_object_get(doc, "status"));
	why = json_string_value(json_object_get(json_object_get(doc, "fault"), "message"));
	if (!st || strcmp(st, "ok")) {
		const char *origin =
			json_string_value(json_object_get(json_object_get(doc, "fault"), "origin"));

		/*
		 * The reference is the batch author's code: its crash is the
		 * batch's fault.  Running past its deadline is not: the naive
		 * reference is slow by design, so that is the machine or the limit.
		 */
		rc = j->timed_out ? RUN_EXIT_SLOW
		     : (st && !strcmp(st, "infra_error")) ||
				     (origin && !strcmp(origin, "infrastructure")) ||
				     j->mem_exceeded
			     ? RUN_EXIT_INFRA
			     : RUN_EXIT_BATCH;
		snprintf(r->msg, sizeof(r->msg), "%s%s",
			 rc == RUN_EXIT_BATCH && strncmp(why ? why : "", "reference", 9) &&
					 strncmp(why ? why : "", "the reference", 13)
				 ? "the reference: "
				 : "",
			 why ? why : "the reference worker failed");
		if (j->timed_out)
			snprintf(
				r->msg, sizeof(r->msg),
				"the reference ran past its %g s limit (limits.compile_timeout_s + "
				"limits.run_timeout_s): the machine is too slow or the limit too "
				"low, not the candidates' fault (%s)",
				j->timeout_s, why ? why : "killed at its deadline");
	}
	r->ref.src = &r->b.reference;
	r->ref.check = doc;
	r->ref.check_wall_ms = j->wall_ms;
	job_release(j);
	return rc ? rc : open_judge(r);
}

/*
 * The reference's outputs from the session's cache (refcache.h) when every
 * one is there and intact: then the reference worker does not run (the
 * timing worker still times the reference).  Else the reference worker
 * computes them.
 */
static int reference_outputs(struct run *r)
{
	char *refdir;

	if (!r->refcache.dir)
		return run_reference(r);
	refdir = worker_dir(r->work, "reference");
	r->ref_cached = refcache_restore(&r->refcache, &r->b, r->tseeds, refdir);
	free(refdir);
	if (!r->ref_cached)
		return run_reference(r);
	log_info("reference outputs from the session's cache");
	r->ref.src = &r->b.reference;
	r->ref.check = json_pack("{s:s, s:s}", "id", "reference", "status", "ok");
	return open_judge(r);
}

/*
 * With --ref-cache: opens the cache and takes the session's timing seeds
 * from it.  A cache that cannot be opened is logged and left out: the batch
 * runs as without one.
 */
static void draw_seeds(struct run *r)
{
	char why[1024];

	if (r->ref_cache_dir &&
	    refcache_open(&r->refcache, r->ref_cache_dir, r->exe, &r->b, why, sizeof(why))) {
		log_warn("reference cache left out: %s", why);
		refcache_close(&r->refcache);
	}
	if (r->refcache.dir)
		refcache_seeds(&r->refcache, &r->b, r->tseeds);
	else
		worker_draw_seeds(&r->b, r->tseeds);
}

/*
 * The static screen (screen.h), before any worker: a refused source or
 * option gets compile_error/refused and no worker.  Returns nonzero when
 * refused (o->check set).
 */
static int screened_out(struct outcome *o)
{
	char why[1024];
	const struct source_spec *src = o->src;

	if (!screen_refuses(src, why, sizeof(why)))
		return 0;
	o->check = json_pack("{s:s, s:s, s:{s:b, s:s}}", "id", src->id, "status", "running",
			     "compile", "ok", 0, "log", why);
	run_set_fault(o->check, "compile_error", "candidate", "refused", why);
	return 1;
}

/* Sets up the check job of program i with its channel to the judge. */
static int check_job(struct run *r, struct job *j, struct judge_chan *c, size_t i)
{
	size_t bytes = 0;

	for (size_t s = 0; s < r->b.nshapes; s++)
		if (judge_out_bytes(&r->b, s) > bytes)
			bytes = judge_out_bytes(&r->b, s);
	run_job_setup(r, j, "check", worker_prog_dir(r->work, r->progs[i].src->id),
		      r->progs[i].src->id, check_timeout(r));
	if (judge_chan_open(c, &r->judge, bytes, r->msg, sizeof(r->msg)))
		return -1;
	c->rec = &r->judge.recs[i];
	run_give_chan(j, c);
	return 0;
}

/* pool.h's on_finish of a check worker: argv[4] is the program's id. */
static void check_finished(void *ctx, struct job *j)
{
	struct run *r = ctx;

	r->checked++;
	run_progress(r, "checked %s (%zu of %zu, %.1f s)", j->argv[4] ? j->argv[4] : "?",
		     r->checked, r->tocheck, j->wall_ms / 1e3);
}

/* One line per program once its checks are judged: its status and fault. */
static void report_checks(const struct run *r)
{
	for (size_t i = 0; i < r->nprogs; i++) {
		json_t *c = r->progs[i].check, *fault = json_object_get(c, "fault");
		const char *kind = json_string_value(json_object_get(fault, "kind"));
		const char *origin = json_string_value(json_object_get(fault, "origin"));

		if (!kind)
			kind = json_string_value(json_object_get(c, "status"));
		if (run_prog_ok(&r->progs[i]))
			run_progress(r, "%s passed its checks", r->progs[i].src->id);
		else
			run_progress(r, "%s failed its checks: %s (%s)", r->progs[i].src->id,
				     kind ? kind : "?", origin ? origin : "-");
	}
}

static int run_checks(struct run *r)
{
	struct job *all = xcalloc(r->nprogs + 2, sizeof(*all)), *jobs = all + 1;
	struct judge_chan *chans = xcalloc(r->nprogs + 1, sizeof(*chans));
	size_t *map = xcalloc(r->nprogs + 1, sizeof(*map)), njobs = 0;
	int rc = 0, fe = 0;

	/* Every program gets a job, started or not, so every one gets a verdict. */
	for (size_t i = 0; i < r->nprogs; i++) {
		if (screened_out(&r->progs[i]))
			continue;
		map[njobs] = i;
		job_init(&jobs[njobs]);
		judge_chan_init(&chans[njobs]);
		if (!rc)
			rc = check_job(r, &jobs[njobs], &chans[njobs], i);
		jobs[njobs].on_finish = check_finished;
		jobs[njobs].finish_ctx = r;
		njobs++;
	}
	r->checked = 0;
	r->tocheck = njobs;
	job_init(&all[0]);
	if (r->fe) { /* started beside the reference worker: taken over */
		all[0] = *r->fe;
		all[0].outlive = 0; /* from now on it ends with the checks */
		free(r->fe);
		r->fe = NULL;
		fe = 1;
	} else if (!rc && njobs > 1) {
		/*
		 * Started with the checks: its first build reads PoCL's kernel
		 * library, and the first checks would wait for it with a core
		 * idle.  With two or more at a time the first check compiles
		 * for itself on that core, and the front end starts with the
		 * second program.
		 */
		fe = frontend_job(r, &all[0], r->jobs > 1);
	}
	run_progress(r, "checking %zu programs, %d at a time", njobs, r->jobs);
	if (!rc)
		rc = pool_run(jobs - fe, njobs + (size_t)fe, r->jobs, r->echo, run_on_judge, r,
			      r->msg, sizeof(r->msg));
	if (fe && all[0].started && !all[0].aborted && (!all[0].exited || all[0].exit_code))
		log_info("front-end worker: %s; the checks compiled for themselves",
			 all[0].timed_out ? "out of time" : "failed");
	for (size_t k = 0; k < njobs; k++) {
		struct outcome *o = &r->progs[map[k]];
		const char *id = o->src->id;

		if (jobs[k].started)
			o->check = run_judge_job(r, &jobs[k], id, run_load_doc(r, id));
		else
			o->check = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "id", id, "status",
					     "infra_error", "fault", "origin", "infrastructure",
					     "kind", "spawn", "message", r->msg);
		judge_apply_check(&r->judge.recs[map[k]], &r->b, o->check);
		o->check_wall_ms = jobs[k].wall_ms;
		job_release(&jobs[k]);
		judge_chan_close(&chans[k]);
	}
	pool_abort(&all[0]);
	job_release(&all[0]);
	free(all);
	free(chans);
	free(map);
	report_checks(r);
	return rc ? RUN_EXIT_INFRA : 0;
}

const char run_usage[] =
	"usage: evalpod run [BATCH] [--out DIR] [--jobs N] [--cache-dir DIR] [--ref-cache DIR]\n"
	"                           [--ca-file FILE] [--keep-work] [--verbose] [--quiet]\n"
	"  BATCH    an EvalBatch JSON file, - for stdin, or an http(s) URL; when left out,\n"
	"           the URL in $EVALPOD_BATCH_URL, or in $EVALPOD_BATCH_URL_<i> with\n"
	"           i = $JOB_COMPLETION_INDEX (an Indexed Job's pod); a presigned URL is\n"
	"           a credential: the environment keeps it off listable command lines\n"
	"  --out    directory for one result JSON per variant, artifacts and summary.json\n"
	"  --jobs   programs checked in parallel (default: online CPUs, at most 4)\n"
	"  --ref-cache  the session's reference outputs and timing seeds, kept across runs\n"
	"  --quiet  no progress lines on stderr (one per program as its checks end, and\n"
	"           when timing starts and ends)\n";

/*
 * The batch URL from the environment: EVALPOD_BATCH_URL, or in a pod of an
 * Indexed Job EVALPOD_BATCH_URL_<JOB_COMPLETION_INDEX> (one URL per shard in
 * one Job).  Returns nonzero when the environment names one (r->batch_arg
 * set, or NULL with the reason logged when it is unusable).
 */
static int batch_url_from_env(struct run *r)
{
	const char *idx = getenv("JOB_COMPLETION_INDEX"), *url = getenv("EVALPOD_BATCH_URL");
	char name[64];

	if (!url && idx && *idx && strspn(idx, "0123456789") == strlen(idx) && strlen(idx) < 9) {
		snprintf(name, sizeof(name), "EVALPOD_BATCH_URL_%s", idx);
		url = getenv(name);
		if (!url) {
			log_error("JOB_COMPLETION_INDEX is %s but %s is not set", idx, name);
			r->batch_arg = NULL;
			return 1;
		}
	}
	if (!url || !*url)
		return 0;
	r->batch_arg = url;
	if (!http_is_url(url))
		log_error("the batch URL in the environment is not an http(s) URL");
	return 1;
}

static int parse_args(struct run *r, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "cache-dir", required_argument, NULL, 'c' },
		{ "ref-cache", required_argument, NULL, 'r' },
		{ "ca-file", required_argument, NULL, 'a' },
		{ "keep-work", no_argument, NULL, 'k' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	r->jobs = cpus > 4 ? 4 : cpus < 1 ? 1 : (int)cpus;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:j:vq", opts, NULL)) != -1) {
		char *end = NULL;

		switch (c) {
		case 'o': r->out_dir = optarg; break;
		case 'c': r->cache_dir = optarg; break;
		case 'r': r->ref_cache_dir = optarg; break;
		case 'a': r->ca_file = optarg; break;
		case 'k': r->keep_work = 1; break;
		case 'q': r->quiet = 1; break;
		case 'v':
			r->echo = 1;
			log_level_current = LOG_DEBUG;
			break;
		case 'j':
			r->jobs = (int)strtol(optarg, &end, 10);
			if (!end || *end || r->jobs < 1 || r->jobs > 64) {
				log_error("--jobs wants a number from 1 to 64, not '%s'", optarg);
				return RUN_EXIT_USAGE;
			}
			break;
		default: fputs(run_usage, stderr); return RUN_EXIT_USAGE;
		}
	}
	if (optind == argc && batch_url_from_env(r))
		return r->batch_arg && http_is_url(r->batch_arg) ? 0 : RUN_EXIT_USAGE;
	if (optind != argc - 1) {
		fputs(run_usage, stderr);
		return RUN_EXIT_USAGE;
	}
	r->batch_arg = argv[optind];
	return 0;
}

/*
 * flops and bytes are properties of the problem: they must evaluate over
 * every shape's values alone (a variant's #defines cannot change the work).
 */
static int check_work_exprs(struct run *r)
{
	const char *exprs[2] = { r->b.flops, r->b.bytes }, *keys[2] = { "flops", "bytes" };

	for (size_t s = 0; s < r->b.nshapes; s++) {
		for (int e = 0; e < 2; e++) {
			char why[512];
			int64_t v;

			if (exprs[e] && expr_eval(exprs[e], expr_vars_lookup, &r->b.shapes[s].vars,
						  &v, why, sizeof(why)))
				return kerr_set(r->msg, sizeof(r->msg), KERR_INVALID,
						"$.problem.%s: '%s' at shape '%s': %s", keys[e],
						exprs[e], r->b.shapes[s].name, why);
		}
	}
	return 0;
}

static void setup_progs(struct run *r)
{
	r->nprogs = r->b.nvariants + (r->b.baseline ? 1 : 0);
	r->progs = xcalloc(r->nprogs + 1, sizeof(*r->progs));
	for (size_t i = 0, k = 0; i < r->nprogs; i++) {
		if (i == 0 && r->b.baseline) {
			r->progs[i].src = r->b.baseline;
			r->progs[i].is_baseline = 1;
		} else {
			r->progs[i].src = &r->b.variants[k++];
		}
	}
}

static int run_batch(struct run *r)
{
	char *text = NULL;
	size_t len = 0;
	int rc;

	if ((rc = read_batch_text(r, &text, &len))) {
		free(text);
		/* An unreachable URL is the infrastructure's fault, a bad path the caller's. */
		return http_is_url(r->batch_arg) && rc == KERR_HTTP ? RUN_EXIT_INFRA
								    : RUN_EXIT_BATCH;
	}
	if ((rc = batch_parse(&r->b, text, len, r->msg, sizeof(r->msg)))) {
		char why[4096], where[1024];

		/* A presigned URL carries its signature in the query: never print it. */
		http_redact_url(r->batch_arg, where, sizeof(where));
		strlcpy(why, r->msg, sizeof(why));
		snprintf(r->msg, sizeof(r->msg), "%s: %s", where, why);
		free(text);
		return RUN_EXIT_BATCH;
	}
	if (check_work_exprs(r)) {
		free(text);
		return RUN_EXIT_BATCH;
	}
	if (!r->out_dir)
		r->out_dir = r->b.outputs.dir;
	if (!r->out_dir && !r->b.outputs.nurls) {
		free(text);
		snprintf(r->msg, sizeof(r->msg),
			 "no output: give --out DIR or outputs in the batch");
		return RUN_EXIT_USAGE;
	}
	/* Before any work: a batch's results must have somewhere to go. */
	if (r->out_dir && dir_make(r->out_dir, r->msg, sizeof(r->msg))) {
		free(text);
		return RUN_EXIT_INFRA;
	}
	setup_progs(r);
	rc = make_work(r, text, len);
	free(text);
	return rc ? RUN_EXIT_INFRA : 0;
}

static void run_release(struct run *r)
{
	for (size_t i = 0; i < r->nprogs; i++)
		json_decref(r->progs[i].check);
	free(r->progs);
	json_decref(r->ref.check);
	json_decref(r->tdoc);
	for (size_t s = 0; r->sdocs && s < r->b.nshapes; s++)
		json_decref(r->sdocs[s]);
	free(r->sdocs);
	if (r->fe) { /* the reference failed: no checks took it over */
		pool_abort(r->fe);
		job_release(r->fe);
		free(r->fe);
	}
	judge_close(&r->judge);
	refcache_close(&r->refcache);
	workdir_release(&r->wd, r->keep_work);
	r->work = NULL;
	batch_release(&r->b);
}

int cmd_run(int argc, char **argv)
{
	struct run r;
	char cache[PATH_MAX];
	double t0 = clrt_now_ms();
	ssize_t len;
	int rc;

	memset(&r, 0, sizeof(r));
	r.wd.lock = -1;
	if ((rc = parse_args(&r, argc, argv)))
		return rc;
	if (noise_from_env(&r.noise, r.msg, sizeof(r.msg))) {
		log_error("%s", r.msg);
		return RUN_EXIT_USAGE;
	}
	if (r.noise.on)
		log_warn("%s=%s: every timing will be perturbed (test mode)", NOISE_ENV,
			 r.noise.text);
	if (!r.cache_dir)
		r.cache_dir = peaks_cache_dir(cache, sizeof(cache));
	r.http.ca_file = r.ca_file;
	len = readlink("/proc/self/exe", r.exe, sizeof(r.exe) - 1);
	if (len <= 0) {
		log_error("cannot find my own executable: %s", strerror(errno));
		return RUN_EXIT_INFRA;
	}
	r.exe[len] = '\0';
	/* No other process of this user may read the answers out of our memory. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	rc = run_batch(&r);
	if (!rc) {
		draw_seeds(&r);
		rc = reference_outputs(&r);
	}
	if (!rc) {
		/* From here on every program gets a result, whatever fails. */
		int erc;

		rc = run_checks(&r);
		if (!rc)
			rc = run_timing(&r);
		if (rc) {
			log_error("%s", r.msg);
			run_mark_untimed(&r);
		}
		erc = emit_all(&r, clrt_now_ms() - t0);
		if (erc)
			log_error("%s", r.msg);
		rc = rc ? rc : erc;
	} else {
		log_error("%s", r.msg);
	}
	if (pool_interrupted())
		rc = 128 + pool_interrupted();
	run_release(&r);
	return rc;
}
