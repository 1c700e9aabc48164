/*
 * cmd-run.c - `evalpod run BATCH --out DIR`: evaluates one EvalBatch.
 *
 * The parent reads and validates the batch, then drives the workers of
 * worker.h: the reference first, the checks of the baseline and every
 * variant in parallel, then one timing worker for all that passed.  It
 * never opens the OpenCL device itself.  A worker that crashes or hangs
 * costs only its program (or, for the timing worker, the program it was
 * timing, which is dropped before timing is retried).
 */
#include "run.h"
#include "run-internal.h"
#include "err.h"
#include "expr.h"
#include "fileio.h"
#include "http.h"
#include "jsonx.h"
#include "log.h"
#include "pool.h"
#include "sbuf.h"
#include "worker.h"
#include "xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TIMING_ATTEMPTS 3

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

static int make_work(struct run *r, const char *text, size_t len)
{
	static const char *const sub[] = { "ref", "check", "bin", "progress", "pocl", "art" };
	const char *tmp = getenv("TMPDIR");
	char *path;
	int rc;

	r->work = xasprintf("%s/evalpod-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(r->work))
		return kerr_set(r->msg, sizeof(r->msg), KERR_IO,
				"cannot create a work directory "
				"'%s': %s",
				r->work, strerror(errno));
	for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
		path = xasprintf("%s/%s", r->work, sub[i]);
		rc = dir_make(path, r->msg, sizeof(r->msg));
		free(path);
		if (rc)
			return rc;
	}
	path = xasprintf("%s/batch.json", r->work);
	rc = file_write_atomic(path, text, len, r->msg, sizeof(r->msg));
	free(path);
	return rc;
}

static void job_setup(struct run *r, struct job *j, const char *mode, const char *id,
		      double timeout_s)
{
	memset(j, 0, sizeof(*j));
	j->argv[0] = xstrdup(r->exe);
	j->argv[1] = xstrdup("__worker");
	j->argv[2] = xstrdup(mode);
	j->argv[3] = xstrdup(r->work);
	j->argv[4] = id ? xstrdup(id) : NULL;
	j->env[0] = xasprintf("POCL_CACHE_DIR=%s/pocl/%s", r->work, id ? id : mode);
	j->env[1] = xstrdup("POCL_KERNEL_CACHE=1");
	j->env[2] = xasprintf("EVALPOD_CACHE_DIR=%s", r->cache_dir ? r->cache_dir : "");
	/* Keeps parallel.bc (the vectorised work-group function) for stage 5. */
	j->env[3] = xstrdup("POCL_LEAVE_KERNEL_COMPILER_TEMP_FILES=1");
	j->timeout_s = timeout_s;
}

/* Loads WORK/name (e.g. "check/v1.json"); NULL when absent or unreadable. */
static json_t *load_json(struct run *r, const char *name)
{
	char *path = xasprintf("%s/%s", r->work, name), *text = NULL;
	json_t *doc = NULL;
	char msg[512];

	if (!file_read(path, 256u << 20, &text, NULL, msg, sizeof(msg)))
		doc = json_loads(text, 0, NULL);
	free(text);
	free(path);
	return doc;
}

static char *read_progress(struct run *r, const char *id)
{
	char *path = xasprintf("%s/progress/%s", r->work, id), *text = NULL;
	char msg[256];

	if (file_read(path, 4096, &text, NULL, msg, sizeof(msg)))
		text = xstrdup("start");
	free(path);
	return text;
}

static void set_fault(json_t *doc, const char *status, const char *origin, const char *kind,
		      const char *message)
{
	json_object_set_new(doc, "status", json_string(status));
	json_object_set_new(
		doc, "fault",
		json_pack("{s:s, s:s, s:s}", "origin", origin, "kind", kind, "message", message));
}

/* The last few lines of a worker's stderr, for a crash report. */
static const char *tail_of(const struct job *j)
{
	size_t len = strlen(j->tail);
	const char *p = j->tail + (len > 1000 ? len - 1000 : 0);

	return p;
}

/* Turns a finished check job into its check document (a new reference). */
static json_t *judge_job(struct run *r, struct job *j, const char *id, json_t *doc)
{
	const char *st = json_string_value(json_object_get(doc, "status"));
	char *stage, *message;

	if (doc && st && strcmp(st, "running") && j->exited &&
	    (j->exit_code == 0 || j->exit_code == WORKER_EXIT_INFRA ||
	     j->exit_code == WORKER_EXIT_BAD))
		return doc;
	if (!doc)
		doc = json_pack("{s:s}", "id", id);
	stage = read_progress(r, id);
	if (pool_interrupted() || j->aborted) {
		message =
			pool_interrupted()
				? xasprintf("evalpod was interrupted by signal %d during %s",
					    pool_interrupted(), stage)
				: xasprintf("stopped during %s: evalpod could not run its workers",
					    stage);
		set_fault(doc, "infra_error", "infrastructure", "interrupted", message);
	} else if (j->timed_out) {
		message = xasprintf("did not finish within %.0f s; killed during %s", j->timeout_s,
				    stage);
		set_fault(doc, "timeout", "candidate", stage, message);
	} else if (j->signal) {
		message = xasprintf("the worker died of signal %d (%s) during %s%s%s%s", j->signal,
				    strsignal(j->signal), stage,
				    j->signal == SIGKILL ? " (killed from outside: out of memory?)"
							 : "",
				    *j->tail ? "; its last output: " : "", tail_of(j));
		set_fault(doc, "crash", j->signal == SIGKILL ? "infrastructure" : "candidate",
			  "signal", message);
	} else {
		message = xasprintf("the worker exited with status %d during %s%s%s", j->exit_code,
				    stage, *j->tail ? "; its last output: " : "", tail_of(j));
		set_fault(doc, "crash", "candidate", "exit", message);
	}
	free(message);
	free(stage);
	return doc;
}

static double check_timeout(const struct batch *b)
{
	return b->limits.compile_timeout_s + b->limits.run_timeout_s;
}

static int run_reference(struct run *r)
{
	struct job j;
	json_t *doc;
	const char *st, *why;
	int rc = 0;

	job_setup(r, &j, "reference", NULL, check_timeout(&r->b));
	free(j.argv[4]);
	j.argv[4] = NULL;
	log_info("computing reference outputs");
	if (pool_run(&j, 1, 1, r->echo, r->msg, sizeof(r->msg))) {
		job_release(&j);
		return RUN_EXIT_INFRA;
	}
	doc = judge_job(r, &j, "reference", load_json(r, "check/reference.json"));
	st = json_string_value(json_object_get(doc, "status"));
	why = json_string_value(json_object_get(json_object_get(doc, "fault"), "message"));
	if (!st || strcmp(st, "ok")) {
		const char *origin =
			json_string_value(json_object_get(json_object_get(doc, "fault"), "origin"));

		rc = (st && !strcmp(st, "infra_error")) ||
				     (origin && !strcmp(origin, "infrastructure"))
			     ? RUN_EXIT_INFRA
			     : RUN_EXIT_BATCH;
		snprintf(r->msg, sizeof(r->msg), "%s%s",
			 rc == RUN_EXIT_BATCH && strncmp(why ? why : "", "reference", 9) &&
					 strncmp(why ? why : "", "the reference", 13)
				 ? "the reference: "
				 : "",
			 why ? why : "the reference worker failed");
	}
	r->ref.src = &r->b.reference;
	r->ref.check = doc;
	r->ref.check_wall_ms = j.wall_ms;
	job_release(&j);
	return rc;
}

static int run_checks(struct run *r)
{
	struct job *jobs = xcalloc(r->nprogs + 1, sizeof(*jobs));
	int rc;

	for (size_t i = 0; i < r->nprogs; i++)
		job_setup(r, &jobs[i], "check", r->progs[i].src->id, check_timeout(&r->b));
	log_info("checking %zu programs, %d at a time", r->nprogs, r->jobs);
	rc = pool_run(jobs, r->nprogs, r->jobs, r->echo, r->msg, sizeof(r->msg));
	for (size_t i = 0; i < r->nprogs; i++) {
		const char *id = r->progs[i].src->id;

		if (jobs[i].started) {
			char *name = xasprintf("check/%s.json", id);

			r->progs[i].check = judge_job(r, &jobs[i], id, load_json(r, name));
			free(name);
		} else
			r->progs[i].check =
				json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "id", id, "status",
					  "infra_error", "fault", "origin", "infrastructure",
					  "kind", "spawn", "message", r->msg);
		r->progs[i].check_wall_ms = jobs[i].wall_ms;
		job_release(&jobs[i]);
	}
	free(jobs);
	return rc ? RUN_EXIT_INFRA : 0;
}

static int prog_ok(const struct outcome *o)
{
	const char *st = json_string_value(json_object_get(o->check, "status"));

	return st && !strcmp(st, "ok");
}

static int write_ids(struct run *r)
{
	struct sbuf ids = SBUF_INIT;
	char *path = xasprintf("%s/ids.txt", r->work);
	int count = 0, rc;

	sbuf_adds(&ids, "reference\n");
	for (size_t i = 0; i < r->nprogs; i++) {
		if (!prog_ok(&r->progs[i]))
			continue;
		sbuf_addf(&ids, "%s\n", r->progs[i].src->id);
		count++;
	}
	rc = file_write_atomic(path, ids.buf, ids.len, r->msg, sizeof(r->msg));
	sbuf_release(&ids);
	free(path);
	return rc ? -1 : count;
}

static struct outcome *find_prog(struct run *r, const char *id)
{
	for (size_t i = 0; i < r->nprogs; i++)
		if (!strcmp(r->progs[i].src->id, id))
			return &r->progs[i];
	return NULL;
}

/*
 * Decides what a failed timing worker means.  A hang (no progress for the
 * stall limit) or a crash by signal is the fault of the program it was
 * timing, which is dropped (returns 0: time again).  Running out of the
 * phase's whole time budget, an outside SIGKILL (out of memory) or a
 * failure the worker reported itself is the infrastructure's (returns -1,
 * r->msg says why).
 */
static int blame_timed(struct run *r, struct job *j)
{
	char *who = read_progress(r, "time"), *message = NULL;
	struct outcome *o = find_prog(r, who);
	int candidate = j->stalled || (j->signal && j->signal != SIGKILL);
	int rc = -1;

	if (o && candidate) {
		char what[128];

		if (j->stalled)
			snprintf(what, sizeof(what),
				 "made no progress for %.0f s (compile_timeout_s + run_timeout_s)",
				 j->stall_s);
		else
			snprintf(what, sizeof(what), "%s", strsignal(j->signal));
		message = xasprintf("%s while being timed%s%s", what,
				    *j->tail ? "; last output: " : "", tail_of(j));
		set_fault(o->check, j->stalled ? "timeout" : "crash", "candidate",
			  j->stalled ? "timing" : "signal", message);
		log_warn("'%s' brought down the timing worker; timing again without it", who);
		rc = 0;
	} else {
		snprintf(r->msg, sizeof(r->msg), "the timing worker failed during '%s': %s%s%s",
			 who,
			 j->stalled ? "it made no progress for compile_timeout_s + run_timeout_s"
			 : j->timed_out         ? "the timing phase exceeded limits.time_timeout_s"
			 : j->aborted           ? "evalpod stopped it"
			 : j->signal == SIGKILL ? "killed from outside (out of memory?)"
			 : j->signal            ? strsignal(j->signal)
						: "it gave up",
			 *j->tail ? "; its last output: " : "", tail_of(j));
	}
	free(message);
	free(who);
	return rc;
}

static int run_timing(struct run *r)
{
	char *progress = xasprintf("%s/progress/time", r->work);
	int rc = RUN_EXIT_INFRA;

	for (int attempt = 0; attempt < TIMING_ATTEMPTS; attempt++) {
		struct job j;
		int count = write_ids(r), prc;

		unlink(progress);
		if (count <= 0) {
			rc = count < 0 ? RUN_EXIT_INFRA : 0;
			goto out;
		}
		job_setup(r, &j, "time", NULL, r->b.limits.time_timeout_s);
		j.progress = progress;
		j.stall_s = r->b.limits.compile_timeout_s + r->b.limits.run_timeout_s;
		log_info("timing %d programs with the reference, interleaved", count);
		prc = pool_run(&j, 1, 1, r->echo, r->msg, sizeof(r->msg));
		if (!prc && j.exited && j.exit_code == 0 && (r->tdoc = load_json(r, "time.json"))) {
			job_release(&j);
			rc = 0;
			goto out;
		}
		prc = prc ? -1 : blame_timed(r, &j);
		job_release(&j);
		if (prc)
			goto out;
	}
	snprintf(r->msg, sizeof(r->msg), "timing failed %d times", TIMING_ATTEMPTS);
out:
	free(progress);
	return rc;
}

/* After a failed timing phase: programs that passed their checks are untimed. */
static void mark_untimed(struct run *r)
{
	for (size_t i = 0; i < r->nprogs; i++)
		if (prog_ok(&r->progs[i]))
			set_fault(r->progs[i].check, "infra_error", "infrastructure", "timing",
				  r->msg);
	json_decref(r->tdoc);
	r->tdoc = NULL;
}

static const char run_usage[] =
	"usage: evalpod run [BATCH] [--out DIR] [--jobs N] [--cache-dir DIR] [--ca-file FILE]\n"
	"                           [--keep-work] [--verbose]\n"
	"  BATCH    an EvalBatch JSON file, - for stdin, or an http(s) URL; when left out,\n"
	"           the URL in $EVALPOD_BATCH_URL, or in $EVALPOD_BATCH_URL_<i> with\n"
	"           i = $JOB_COMPLETION_INDEX (an Indexed Job's pod); a presigned URL is\n"
	"           a credential: the environment keeps it off listable command lines\n"
	"  --out    directory for one result JSON per variant, artifacts and summary.json\n"
	"  --jobs   programs checked in parallel (default: online CPUs, at most 4)\n";

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
		{ "ca-file", required_argument, NULL, 'a' },
		{ "keep-work", no_argument, NULL, 'k' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	r->jobs = cpus > 4 ? 4 : cpus < 1 ? 1 : (int)cpus;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:j:v", opts, NULL)) != -1) {
		char *end = NULL;

		switch (c) {
		case 'o': r->out_dir = optarg; break;
		case 'c': r->cache_dir = optarg; break;
		case 'a': r->ca_file = optarg; break;
		case 'k': r->keep_work = 1; break;
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

static void default_cache_dir(struct run *r, char *buf, size_t n)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");

	if (r->cache_dir)
		return;
	if (xdg && *xdg)
		snprintf(buf, n, "%s/evalpod", xdg);
	else if (home && *home)
		snprintf(buf, n, "%s/.cache/evalpod", home);
	else
		return;
	r->cache_dir = buf;
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
	rc = make_work(r, text, len);
	free(text);
	return rc ? RUN_EXIT_INFRA : 0;
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

static void run_release(struct run *r)
{
	for (size_t i = 0; i < r->nprogs; i++)
		json_decref(r->progs[i].check);
	free(r->progs);
	json_decref(r->ref.check);
	json_decref(r->tdoc);
	if (r->work && !r->keep_work)
		dir_remove_tree(r->work);
	else if (r->work)
		log_warn("work directory kept: %s", r->work);
	free(r->work);
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
	if ((rc = parse_args(&r, argc, argv)))
		return rc;
	default_cache_dir(&r, cache, sizeof(cache));
	r.http.ca_file = r.ca_file;
	len = readlink("/proc/self/exe", r.exe, sizeof(r.exe) - 1);
	if (len <= 0) {
		log_error("cannot find my own executable: %s", strerror(errno));
		return RUN_EXIT_INFRA;
	}
	r.exe[len] = '\0';
	rc = run_batch(&r);
	if (!rc) {
		setup_progs(&r);
		rc = run_reference(&r);
	}
	if (!rc) {
		/* From here on every program gets a result, whatever fails. */
		int erc;

		rc = run_checks(&r);
		if (!rc)
			rc = run_timing(&r);
		if (rc) {
			log_error("%s", r.msg);
			mark_untimed(&r);
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
