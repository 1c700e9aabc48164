/*
 * blame.c - what a worker's end means: reading what an untrusted worker
 * left in its directory (its document, its last stage, its fault note), and
 * deciding, when it left no finished document, whose fault that was (see
 * docs/evalpod.md, "Judging a worker" and "Timing failures").
 */
#include "run-internal.h"
#include "err.h"
#include "fileio.h"
#include "log.h"
#include "pool.h"
#include "world.h"
#include "worker.h"
#include "xalloc.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* The directory of the worker that judged or timed name ("reference", "time", an id). */
static char *dir_of(struct run *r, const char *name)
{
	if (!strcmp(name, "reference") || !strcmp(name, "time"))
		return worker_dir(r->work, name);
	return worker_prog_dir(r->work, name);
}

/*
 * Loads the document a worker wrote (DIR/doc.json); NULL when absent or
 * unreadable.  Workers are untrusted: no links, a size limit.
 */
json_t *run_load_doc(struct run *r, const char *name)
{
	char *dir = dir_of(r, name), *path = xasprintf("%s/doc.json", dir), *text = NULL;
	json_t *doc = NULL;
	char msg[512];

	if (!file_read_untrusted(path, 256u << 20, &text, NULL, msg, sizeof(msg)))
		doc = json_loads(text, 0, NULL);
	if (doc && !json_is_object(doc)) {
		json_decref(doc);
		doc = NULL;
	}
	free(text);
	free(path);
	free(dir);
	return doc;
}

/* The first line of DIR/NAME, a worker's file (a new string), or NULL when unreadable. */
static char *worker_line(const char *dir, const char *name)
{
	char *path = xasprintf("%s/%s", dir, name), *text = NULL, msg[256];

	if (file_read_untrusted(path, 4096, &text, NULL, msg, sizeof(msg)))
		text = NULL;
	else
		text[strcspn(text, "\n")] = '\0';
	free(path);
	return text;
}

/*
 * A worker's last recorded stage (or program, for "time"); "start" when
 * none.  *detail (when asked for): what the worker added about the stage
 * (progress.detail, a new string), else NULL.
 */
static char *read_progress(struct run *r, const char *name, char **detail)
{
	char *dir = dir_of(r, name), *text = worker_line(dir, "progress");

	if (detail && (*detail = worker_line(dir, "progress.detail")) && !**detail) {
		free(*detail);
		*detail = NULL;
	}
	free(dir);
	return text ? text : xstrdup("start");
}

/* What the worker's fault handler noted (an out-of-bounds access), or NULL. */
static char *read_fault_note(struct run *r, const char *name)
{
	char *dir = dir_of(r, name), *path = xasprintf("%s/fault", dir), line[512];
	int have = world_fault_note_read(path, line, sizeof(line));

	free(path);
	free(dir);
	return have ? xstrdup(line) : NULL;
}

void run_set_fault(json_t *doc, const char *status, const char *origin, const char *kind,
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

/* Whether a check worker in stage had started running the candidate's code. */
static int candidate_stage(const char *stage)
{
	return strcmp(stage, "start") != 0;
}

/*
 * Describes how a worker that left no finished document ended, and whose
 * fault it is: *origin "candidate" when it happened while the candidate's
 * code (its compiler run or its kernels) was running, else
 * "infrastructure".  Returns the status; *kind and the message are set.
 */
static const char *death_of(struct run *r, const struct job *j, const char *name, int candidate,
			    const char **kind, const char **origin, char **message)
{
	char *note = read_fault_note(r, name);
	const char *tail = *j->tail ? tail_of(j) : "";
	const char *status = "crash";

	*origin = candidate ? "candidate" : "infrastructure";
	if (j->mem_exceeded) {
		*kind = "memory_limit";
		*message =
			xasprintf("used more than its memory limit of %llu MiB (%llu MiB resident)",
				  j->mem_limit >> 20, j->peak_rss >> 20);
	} else if (j->protocol_error) {
		*kind = "protocol";
		*message = xstrdup("broke the protocol of the judge's channel");
	} else if (!j->signal && j->exited && j->exit_code == WORKER_EXIT_DEVICE_LOST) {
		status = "runtime_error";
		*kind = "launch_failed";
		*message = xstrdup(note ? note : "a launch failed and left the device unusable");
	} else if (j->signal && note) {
		*kind = "out_of_bounds";
		*message = xasprintf("%s (%s)", note, strsignal(j->signal));
	} else if (j->signal) {
		*kind = "signal";
		*message = xasprintf("the worker died of signal %d (%s)%s%s%s", j->signal,
				     strsignal(j->signal),
				     j->signal == SIGKILL ? ", which evalpod did not send" : "",
				     *tail ? "; its last output: " : "", tail);
	} else {
		*kind = "exit";
		*message = xasprintf("the worker exited with status %d without a verdict%s%s",
				     j->exit_code, *tail ? "; its last output: " : "", tail);
	}
	free(note);
	return status;
}

/* Turns a finished check job into its check document (a new reference). */
json_t *run_judge_job(struct run *r, struct job *j, const char *id, json_t *doc)
{
	const char *st = json_string_value(json_object_get(doc, "status"));
	const char *status, *kind, *origin;
	char *stage, *detail, *message, *why, *at;

	if (doc && st && strcmp(st, "running") && j->exited &&
	    (j->exit_code == 0 || j->exit_code == WORKER_EXIT_INFRA ||
	     j->exit_code == WORKER_EXIT_BAD))
		return doc;
	if (!doc)
		doc = json_pack("{s:s}", "id", id);
	stage = read_progress(r, id, &detail);
	at = detail ? xasprintf("%s, %s", stage, detail) : xstrdup(stage);
	if (pool_interrupted() || j->aborted) {
		message =
			pool_interrupted()
				? xasprintf("evalpod was interrupted by signal %d during %s",
					    pool_interrupted(), at)
				: xasprintf("stopped during %s: evalpod could not run its workers",
					    at);
		run_set_fault(doc, "infra_error", "infrastructure", "interrupted", message);
	} else if (j->timed_out) {
		message = xasprintf("did not finish within %.0f s; killed during %s", j->timeout_s,
				    at);
		run_set_fault(doc, "timeout", "candidate", stage, message);
	} else {
		status = death_of(r, j, id, candidate_stage(stage), &kind, &origin, &why);
		message = xasprintf("%s during %s", why, at);
		run_set_fault(doc, status, origin, kind, message);
		free(why);
	}
	free(message);
	free(at);
	free(detail);
	free(stage);
	return doc;
}

int run_prog_ok(const struct outcome *o)
{
	const char *st = json_string_value(json_object_get(o->check, "status"));

	return st && !strcmp(st, "ok");
}

static struct outcome *find_prog(struct run *r, const char *id)
{
	for (size_t i = 0; i < r->nprogs; i++)
		if (!strcmp(r->progs[i].src->id, id))
			return &r->progs[i];
	return NULL;
}

/*
 * Decides what a failed timing worker means.  The timing worker records
 * the program whose kernels it ran last; whatever ended the worker after
 * that (a hang, any signal evalpod did not send, an exit, too much memory,
 * a broken channel) is that program's fault when it is the baseline or a
 * variant: it is dropped (returns 0: time again, which does not count as
 * an attempt).  Running out of the phase's whole time budget, or a failure
 * while the reference or the peaks ran, is the infrastructure's (returns
 * -1, r->msg says why).
 */
int run_blame_timed(struct run *r, struct job *j)
{
	char *who = read_progress(r, "time", NULL), *message = NULL, *why = NULL;
	struct outcome *o = find_prog(r, who);
	const char *status, *kind, *origin;
	int rc = -1;

	if (o && run_prog_ok(o) && !j->timed_out && !j->aborted && !pool_interrupted()) {
		if (j->stalled) {
			status = "timeout";
			kind = "timing";
			why = xasprintf("made no progress for %.0f s (compile_timeout_s + "
					"run_timeout_s)",
					j->stall_s);
		} else {
			status = death_of(r, j, "time", 1, &kind, &origin, &why);
		}
		message = xasprintf("%s while being timed", why);
		run_set_fault(o->check, status, "candidate", kind, message);
		log_warn("'%s' brought down the timing worker; timing again without it", who);
		rc = 0;
	} else {
		snprintf(r->msg, sizeof(r->msg), "the timing worker failed during '%s': %s%s%s",
			 who,
			 j->stalled ? "it made no progress for compile_timeout_s + run_timeout_s"
			 : j->timed_out         ? "the timing phase exceeded limits.time_timeout_s"
			 : j->aborted           ? "evalpod stopped it"
			 : j->mem_exceeded      ? "it used more than limits.memory_mb"
			 : j->signal == SIGKILL ? "killed from outside (out of memory?)"
			 : j->signal            ? strsignal(j->signal)
						: "it gave up",
			 *j->tail ? "; its last output: " : "", tail_of(j));
	}
	free(why);
	free(message);
	free(who);
	return rc;
}
