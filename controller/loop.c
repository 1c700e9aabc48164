/*
 * loop.c - driving a session: round after round through the steps of
 * round.h until a stop rule fires, it is cancelled or interrupted, the
 * confirmation of its winner, its end, and the progress line.  The
 * commands call it (loop.h); it calls the steps, the store and the
 * session's services.  Opening and releasing sessions is session.c's.
 */
#include "session.h"
#include "services.h"
#include "round.h"
#include "tracker.h"
#include "winner.h"
#include "loop.h"
#include "err.h"
#include "log.h"
#include "sbuf.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int set_state(struct session *s, const char *state, const char *reason, char *msg, size_t n)
{
	int rc = store_begin(s->st, msg, n);

	if (!rc)
		rc = store_session_set_state(s->st, s->id, state, reason, msg, n);
	if (rc) {
		store_rollback(s->st);
		return rc;
	}
	return store_commit(s->st, msg, n);
}

/*
 * Seconds the rest of the session should take: the evaluations its budgets
 * leave (rounds left times variants per round, at most the evaluations
 * left, plus a confirmation) at the rate measured in the rounds this
 * process drove.  NAN before a measurement.  An estimate, not a bound: a
 * stop decision ends the session sooner, a slow variant makes it later.
 */
static double eta_s(struct session *s, int round)
{
	int max_rounds = session_max_rounds(s);
	long left = (long)(max_rounds - round) * s->spec.variants_per_round;
	long budget = s->spec.max_evaluations - store_result_count(s->st, s->id);

	if (s->evals <= 0 || s->eval_s <= 0)
		return NAN;
	if (left > budget)
		left = budget > 0 ? budget : 0;
	if (s->spec.confirm_passes > 0)
		left += (long)s->spec.confirm_passes * s->spec.confirm_candidates;
	return s->eval_s / s->evals * (double)left;
}

/* One line per finished round: what happened and what comes next. */
static void round_line(struct session *s, int round, double round_s, int rounds_done)
{
	json_t *w = session_winner(s->st, s->id);
	json_t *row = store_round_get(s->st, s->id, round), *vars = round_programs(s, round);
	json_t *conf = json_object_get(row, "confirm");
	int max_rounds = session_max_rounds(s);
	double eta;
	const char *decision = json_string_value(json_object_get(row, "decision"));
	char noise[64];

	s->eval_s += round_s;
	s->evals += (int)json_array_size(vars);
	eta = eta_s(s, round);
	winner_noise(w, noise, sizeof(noise));
	if (json_is_object(conf)) {
		fprintf(stderr,
			"[confirm %lld/%lld] %zu candidates re-timed side by side: %s; next: %s\n",
			(long long)json_integer_value(json_object_get(conf, "pass")),
			(long long)json_integer_value(json_object_get(conf, "passes")),
			json_array_size(vars),
			json_string_value(json_object_get(w, "verdict"))
				? json_string_value(json_object_get(w, "verdict"))
				: "no winner",
			decision);
	} else {
		size_t i, ok = 0;
		json_t *v;

		json_array_foreach (vars, i, v) {
			const char *vs = json_string_value(json_object_get(v, "status"));

			ok += vs && !strcmp(vs, "ok");
		}
		fprintf(stderr, "[round %d/%d] %zu evaluated, %zu ok; total %d evaluations; ",
			round, max_rounds, json_array_size(vars), ok,
			store_result_count(s->st, s->id));
		if (w)
			fprintf(stderr, "best %s %.2fx (%s%s); ",
				json_string_value(json_object_get(w, "variant")),
				json_number_value(json_object_get(w, "speedup_vs_reference")),
				noise,
				json_is_true(json_object_get(w, "confirmed")) ? ", confirmed"
									      : ", not confirmed");
		else
			fprintf(stderr, "no variant passed yet; ");
		fprintf(stderr, "next: %s", decision);
		if (isfinite(eta) && eta > 0 && strcmp(decision, "stop"))
			fprintf(stderr, " (ETA about %.0f s at %.1f s per evaluation so far)", eta,
				s->eval_s / s->evals);
		fputc('\n', stderr);
	}
	json_decref(vars);
	json_decref(row);
	json_decref(w);
}

static int ask_to_go_on(struct session *s, int round)
{
	char line[64];

	if (!s->step)
		return 1;
	fprintf(stderr, "round %d is done (see %s/report.md). Go on with round %d? [Y/n] ", round,
		s->dir, round + 1);
	if (!fgets(line, sizeof(line), stdin))
		return 0;
	return line[0] != 'n' && line[0] != 'N';
}

static int round_is_confirm(struct session *s, int round)
{
	json_t *row = store_round_get(s->st, s->id, round);
	int yes = json_is_object(json_object_get(row, "confirm"));

	json_decref(row);
	return yes;
}

/* Whether a search that stopped is confirmed before the session ends. */
static int wants_confirmation(struct session *s)
{
	json_t *inc;
	int yes;

	if (s->spec.confirm_passes <= 0)
		return 0;
	inc = session_incumbent(s);
	yes = inc != NULL;
	json_decref(inc);
	return yes;
}

/* Brings round r from whatever state it is in to DONE. */
static int finish_round(struct session *s, int round, int state, int *stop, char *msg, size_t n)
{
	int rc = 0;

	if (state < ROUND_COLLECTED)
		rc = round_evaluate(s, round, msg, n);
	if (!rc && state < ROUND_COLLECTED)
		rc = round_collect(s, round, msg, n);
	if (!rc)
		rc = round_is_confirm(s, round) ? confirm_rank(s, round, stop, msg, n)
						: round_rank(s, round, stop, msg, n);
	if (!rc)
		rc = learnings_write(s, msg, n);
	if (!rc)
		rc = report_write(s, msg, n);
	return rc;
}

/* What to do next: the round to work on and its state (-1: not created yet). */
static int next_step(struct session *s, int *round, int *state, char **mode, int *stop)
{
	int last = store_round_last(s->st, s->id);
	json_t *row = store_round_get(s->st, s->id, last);

	*stop = 0;
	*mode = NULL;
	if (!row) {
		*round = 0;
		*state = -1;
		*mode = xstrdup("baseline");
		return 0;
	}
	*state = (int)json_integer_value(json_object_get(row, "state"));
	*round = last;
	if (*state == ROUND_DONE) {
		const char *d = json_string_value(json_object_get(row, "decision"));
		const char *m = json_string_value(json_object_get(row, "mode"));

		*stop = d && !strcmp(d, "stop");
		/* kctl resume --rounds N of a done session: the old budget's stop is past */
		if (*stop && s->extending) {
			*stop = 0;
			d = "exploit";
		}
		s->extending = 0;
		/* a search that stops is confirmed first; a confirmation that ends does not */
		if (*stop && m && strcmp(m, "confirm") && wants_confirmation(s)) {
			*stop = 0;
			d = "confirm";
		}
		*mode = xstrdup(d && strcmp(d, "stop") ? d : "exploit");
		*round = last + 1;
		*state = -1;
	}
	json_decref(row);
	return 0;
}

/*
 * The session's search is over: done with the winner's verdict as its
 * reason, or failed when no variant passed its checks.  ended, when not
 * NULL, is why the proposer stopped before the budget did; the reason
 * starts with it.
 */
static int session_end(struct session *s, const char *ended, char *msg, size_t n)
{
	json_t *w = session_winner(s->st, s->id);
	struct sbuf why = SBUF_INIT;
	int rc = KCTL_EXIT_OK;

	if (ended)
		sbuf_addf(&why, "search ended: %s; ", ended);
	if (w) {
		char noise[64];

		winner_noise(w, noise, sizeof(noise));
		sbuf_addf(&why, "winner %s, %.2fx vs reference (%s): %s",
			  json_string_value(json_object_get(w, "variant")),
			  json_number_value(json_object_get(w, "speedup_vs_reference")), noise,
			  json_string_value(json_object_get(w, "verdict"))
				  ? json_string_value(json_object_get(w, "verdict"))
				  : "not confirmed");
		set_state(s, "done", why.buf, msg, n);
	} else {
		json_t *ls = store_learnings(s->st, s->id), *l, *top = NULL;
		size_t i;

		json_array_foreach (ls, i, l)
			if (!strcmp(json_string_value(json_object_get(l, "kind")), "F") &&
			    (!top || json_integer_value(json_object_get(l, "count")) >
					     json_integer_value(json_object_get(top, "count"))))
				top = l;
		sbuf_addf(&why, "no variant passed its checks (%d evaluated)",
			  store_result_count(s->st, s->id));
		if (top)
			sbuf_addf(&why, "; most frequent failure [F%03lld]: %s",
				  (long long)json_integer_value(json_object_get(top, "number")),
				  json_string_value(json_object_get(top, "text")));
		json_decref(ls);
		set_state(s, "failed", why.buf, msg, n);
		rc = KCTL_EXIT_FAIL;
	}
	crash_point("ended", store_round_last(s->st, s->id));
	learnings_write(s, msg, n);
	report_write(s, msg, n);
	tracker_end(s, w ? "done" : "failed", why.buf);
	if (w)
		fprintf(stderr, "session %s is done: %s/report.md, best kernel in %s/best.cl\n%s\n",
			s->id, s->dir, s->dir, why.buf);
	kerr_set(msg, n, rc ? KERR_INVALID : KERR_OK, "%s; see %s/learnings.md", why.buf, s->dir);
	sbuf_release(&why);
	json_decref(w);
	return rc;
}

/*
 * A step failed with rc (msg says why): the session is paused when a
 * signal interrupted it, else failed, with msg as its reason (kept in msg).
 * Returns the exit status: 130, KCTL_EXIT_INFRA (no device, no evalpod) or
 * KCTL_EXIT_FAIL.
 */
static int stopped(struct session *s, int rc, char *msg, size_t n)
{
	int interrupted = round_interrupted() != 0;
	char why[4096];

	strlcpy(why, msg, sizeof(why));
	set_state(s, interrupted ? "paused" : "failed", why, msg, n);
	strlcpy(msg, why, n);
	return interrupted                                  ? 130
	       : rc == KERR_NODEVICE || rc == KERR_NOTFOUND ? KCTL_EXIT_INFRA
							    : KCTL_EXIT_FAIL;
}

static int session_drive(struct session *s, void *arg, char *msg, size_t n)
{
	int rounds_done = 0, rc = 0, code;
	char *ended = NULL; /* why the proposer had nothing more, when it had not */
	double t_round = 0;

	(void)arg;
	set_state(s, "running", NULL, msg, n);
	tracker_start(s);
	for (;;) {
		int round, state, stop;
		char *mode;
		time_t t0 = time(NULL);

		if (session_cancelled(s)) {
			tracker_end(s, "cancelled", "cancelled by kctl cancel");
			kerr_set(msg, n, KERR_OK, "session %s was cancelled", s->id);
			code = KCTL_EXIT_OK;
			goto out;
		}
		next_step(s, &round, &state, &mode, &stop);
		if (state < 0 && round > 0 && (rc = spec_fault(s, round - 1, msg, n))) {
			free(mode);
			break;
		}
		if (stop) {
			free(mode);
			break;
		}
		if (state < 0 && round > 0 && rounds_done > 0 && !ask_to_go_on(s, round - 1)) {
			free(mode);
			set_state(s, "paused", "paused by the user (--step)", msg, n);
			tracker_end(s, "paused", "paused by the user (--step)");
			fprintf(stderr, "paused; go on with: kctl resume %s%s\n", s->id,
				s->again ? s->again : "");
			code = KCTL_EXIT_OK;
			goto out;
		}
		if (state < 0) {
			rc = !strcmp(mode, "confirm") ? confirm_propose(s, round, NULL, msg, n)
						      : round_propose(s, round, mode, msg, n);
			state = ROUND_PROPOSED;
		}
		free(mode);
		if (rc == 1) {
			free(ended);
			ended = xasprintf("no new variant: %s", msg);
			fprintf(stderr, "round %d: %s; the search ends\n", round, ended);
			if (wants_confirmation(s)) {
				rc = confirm_propose(s, round, ended, msg, n);
				if (rc)
					break;
			} else {
				rc = 0;
				break;
			}
		}
		if (!rc)
			rc = finish_round(s, round, state, &stop, msg, n);
		if (rc)
			break;
		rounds_done++;
		t_round = (double)(time(NULL) - t0);
		round_line(s, round, t_round, rounds_done);
		tracker_round(s, round);
	}
	if (rc && session_cancelled(s)) {
		fprintf(stderr, "session %s was cancelled\n", s->id);
		tracker_end(s, "cancelled", "cancelled by kctl cancel");
		code = KCTL_EXIT_OK;
	} else if (rc) {
		code = stopped(s, rc, msg, n);
		tracker_end(s, code == 130 ? "paused" : "failed", msg);
	} else {
		code = session_end(s, ended, msg, n);
	}
out:
	free(ended);
	return code;
}

/* kctl confirm: a confirmation now, then the session as it was. */
static int session_confirm_locked(struct session *s, void *arg, char *msg, size_t n)
{
	json_t *row = store_session_get(s->st, s->id), *inc = session_incumbent(s);
	int last = store_round_last(s->st, s->id), rc = 0, stop = 0, again, exit = KCTL_EXIT_OK;
	json_t *lrow = store_round_get(s->st, s->id, last);
	char *state = xstrdup(json_string_value(json_object_get(row, "state")));
	char *reason = json_string_value(json_object_get(row, "reason"))
			       ? xstrdup(json_string_value(json_object_get(row, "reason")))
			       : NULL;

	(void)arg;
	if (!inc)
		rc = kerr_set(msg, n, KERR_INVALID,
			      "no variant passed its checks: nothing to confirm");
	else if (json_integer_value(json_object_get(lrow, "state")) != ROUND_DONE)
		rc = kerr_set(msg, n, KERR_INVALID,
			      "round %d of session %s is not finished: 'kctl resume %s' first",
			      last, s->id, s->id);
	json_decref(lrow);
	json_decref(inc);
	json_decref(row);
	if (rc)
		goto out;
	set_state(s, "running", NULL, msg, n);
	for (;;) {
		time_t t0 = time(NULL);
		int round = store_round_last(s->st, s->id) + 1;
		const char *d;

		rc = confirm_propose(s, round, NULL, msg, n);
		if (!rc)
			rc = finish_round(s, round, ROUND_PROPOSED, &stop, msg, n);
		if (rc)
			break;
		round_line(s, round, (double)(time(NULL) - t0), 1);
		lrow = store_round_get(s->st, s->id, round);
		d = json_string_value(json_object_get(lrow, "decision"));
		again = d && !strcmp(d, "confirm");
		json_decref(lrow);
		if (!again)
			break;
	}
	if (rc) {
		char why[4096];

		strlcpy(why, msg, sizeof(why));
		set_state(s, round_interrupted() ? "paused" : state, reason, msg, n);
		strlcpy(msg, why, n);
		exit = round_interrupted() ? 130 : KCTL_EXIT_FAIL;
	} else if (!strcmp(state, "done")) {
		exit = session_end(s, NULL, msg, n);
	} else {
		set_state(s, state, reason, msg, n);
		learnings_write(s, msg, n);
		report_write(s, msg, n);
	}
out:
	free(state);
	free(reason);
	return rc && !exit ? KCTL_EXIT_FAIL : exit;
}

/* Runs fn with the session's lock held (none other may drive it meanwhile). */
static int with_lock(struct session *s, int (*fn)(struct session *, void *, char *, size_t),
		     void *arg, char *msg, size_t n)
{
	char *path = xasprintf("%s/session.lock", s->dir);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644), rc;

	free(path); /* errno of open() is kept: free() does not set it */
	if (fd < 0) {
		kerr_set(msg, n, KERR_IO, "cannot open the lock of session %s in '%s': %s", s->id,
			 s->dir, strerror(errno));
		return KCTL_EXIT_INFRA;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		close(fd);
		kerr_set(msg, n, KERR_INVALID, "session %s is being driven by another kctl", s->id);
		return KCTL_EXIT_FAIL;
	}
	/* who drives it, for `kctl status` once this kctl is gone */
	if (session_owner_record(fd))
		log_warn("session %s: cannot record this kctl in its session.lock: %s", s->id,
			 strerror(errno));
	rc = fn(s, arg, msg, n);
	close(fd);
	return rc;
}

/* --- kctl eval ------------------------------------------------------------ */

struct eval_job {
	const struct eval_program *progs;
	size_t n;
	int passes;
};

/*
 * Pass pass (from 0) of kctl eval: round pass, which times the programs
 * (PROPOSED).  Round 0 records them as its variants; every round times them
 * all, the first as its baseline, with the same measurement settings.
 */
static int eval_propose(struct session *s, const struct eval_job *job, int pass, char *msg,
			size_t n)
{
	json_t *ids = json_array(), *conf;
	int rc = store_begin(s->st, msg, n);

	if (!rc)
		rc = store_round_create(s->st, s->id, pass, SESSION_EVAL_MODE, msg, n);
	for (size_t i = 0; i < job->n && !rc; i++) {
		const struct eval_program *p = &job->progs[i];
		char hash[65], *why;
		json_t *v;

		json_array_append_new(ids, json_string(p->id));
		if (pass)
			continue;
		why = xasprintf("kctl eval: %s", p->file);
		variant_hash(p->source, p->options, hash);
		v = json_pack("{s:s, s:s, s:i, s:i, s:s, s:s, s:s, s:s}", "id", p->id, "hash", hash,
			      "round", 0, "lineage", -1, "source", p->source, "options", p->options,
			      "rationale", why, "origin", SESSION_EVAL_MODE);
		rc = store_variant_add(s->st, s->id, v, msg, n);
		json_decref(v);
		free(why);
	}
	conf = json_pack("{s:i, s:i, s:O, s:o, s:s, s:s}", "pass", pass + 1, "passes", job->passes,
			 "programs", ids, "measurement", confirm_measurement(&s->spec, 1, pass),
			 "then", "stop", "why", "kctl eval");
	if (!rc)
		rc = store_round_set_confirm(s->st, s->id, pass, conf, msg, n);
	json_decref(conf);
	json_decref(ids);
	return round_step_end(s, pass, ROUND_PROPOSED, "proposed", rc, msg, n);
}

static int eval_locked(struct session *s, void *arg, char *msg, size_t n)
{
	const struct eval_job *job = arg;
	int rc = 0;

	set_state(s, "running", NULL, msg, n);
	for (int pass = 0; pass < job->passes && !rc; pass++) {
		rc = eval_propose(s, job, pass, msg, n);
		if (!rc)
			rc = round_evaluate(s, pass, msg, n);
		if (!rc)
			rc = round_collect(s, pass, msg, n);
	}
	return rc ? stopped(s, rc, msg, n) : KCTL_EXIT_OK;
}

/* Every round of the evaluation DONE with the verdict, then the session. */
static int eval_end_locked(struct session *s, void *arg, char *msg, size_t n)
{
	const char *verdict = arg;
	int rc = 0;

	for (int r = 0; !rc; r++) {
		json_t *row = store_round_get(s->st, s->id, r);

		if (!row)
			break;
		json_decref(row);
		rc = store_begin(s->st, msg, n);
		if (!rc)
			rc = store_round_set_decision(s->st, s->id, r, "stop", verdict, msg, n);
		rc = round_step_end(s, r, ROUND_DONE, "ranked", rc, msg, n);
	}
	if (!rc)
		rc = set_state(s, "done", verdict, msg, n);
	if (!rc)
		rc = learnings_write(s, msg, n);
	if (!rc)
		rc = report_write(s, msg, n);
	return rc ? KCTL_EXIT_FAIL : KCTL_EXIT_OK;
}

int session_eval(struct session *s, const struct eval_program *progs, size_t nprogs, int passes,
		 char *msg, size_t n)
{
	struct eval_job job = { progs, nprogs, passes > 1 ? passes : 1 };

	return with_lock(s, eval_locked, &job, msg, n);
}

int session_eval_end(struct session *s, const char *verdict, char *msg, size_t n)
{
	return with_lock(s, eval_end_locked, (void *)verdict, msg, n);
}

int session_run(struct session *s, char *msg, size_t n)
{
	return with_lock(s, session_drive, NULL, msg, n);
}

int session_confirm(struct session *s, char *msg, size_t n)
{
	return with_lock(s, session_confirm_locked, NULL, msg, n);
}
