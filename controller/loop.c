/*
 * loop.c - creating, re-opening and driving sessions.
 */
#include "session.h"
#include "services.h"
#include "round.h"
#include "winner.h"
#include "loop.h"
#include "backend.h"
#include "handoff.h"
#include "s3.h"
#include "err.h"
#include "fileio.h"
#include "jsonx.h"
#include "log.h"
#include "sbuf.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

char *session_state_path(const char *explicit_path)
{
	const char *d = getenv("KCTL_STATE_DIR"), *xdg = getenv("XDG_STATE_HOME");
	const char *home = getenv("HOME");

	if (explicit_path)
		return xstrdup(explicit_path);
	if (d && *d)
		return xasprintf("%s/kctl.db", d);
	if (xdg && *xdg)
		return xasprintf("%s/kctl/kctl.db", xdg);
	return xasprintf("%s/.local/state/kctl/kctl.db", home && *home ? home : ".");
}

/* What a session is bound to: the spec and the kernels it names. */
static void spec_hash(const struct spec *sp, char out[65])
{
	const char *parts[3] = { sp->text, sp->template_src, sp->reference_src };
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	if (!ctx)
		abort();
	EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	for (int i = 0; i < 3; i++)
		EVP_DigestUpdate(ctx, parts[i], strlen(parts[i]) + 1); /* NUL separates */
	EVP_DigestFinal_ex(ctx, md, &len);
	EVP_MD_CTX_free(ctx);
	for (unsigned i = 0; i < len && i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* Loads the spec and everything derived from it into s. */
static int session_prepare(struct session *s, const char *spec_path, char *msg, size_t n)
{
	int rc = spec_load(&s->spec, spec_path, msg, n);

	if (rc)
		return rc;
	/* file:// is the session folder itself; s3:// is the hand-off of handoff.h */
	if (s->spec.storage && s3_is_url(s->spec.storage) && (rc = handoff_open(s, msg, n)))
		return rc;
	s->backend = backend_of(&s->spec);
	if (s->backend->open && (rc = s->backend->open(s, msg, n)))
		return rc;
	if (s->spec.storage && !s3_is_url(s->spec.storage))
		log_warn("evaluator.storage: the local backend keeps results under "
			 "session.output_dir; '%s' is not used",
			 s->spec.storage);
	if ((rc = blocks_find(s->spec.template_src, s->spec.marker_start, s->spec.marker_end,
			      &s->blocks, msg, n)))
		return rc;
	if ((rc = proposer_open(&s->prop, &s->spec, msg, n)))
		return rc;
	/* on a cluster evalpod runs in the image, not here: only the local backend checks it */
	return s->backend->check ? s->backend->check(s, msg, n) : 0;
}

int session_create(struct session *s, struct store *st, const char *spec_path, char *msg, size_t n)
{
	char stamp[32], hash[65], *id = NULL;
	time_t now = time(NULL);
	struct tm tm;
	int rc;

	s->st = st;
	if ((rc = session_prepare(s, spec_path, msg, n)))
		return rc;
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	/* The random tail keeps apart sessions that other machines start in the
	 * same second from the same spec: their Jobs share a namespace and their
	 * batches a bucket.  The local store is asked too. */
	for (int k = 0; k < 100; k++) {
		json_t *row;

		free(id);
		id = xasprintf("%s-%s-%06x", s->spec.name, stamp,
			       (unsigned)arc4random_uniform(1u << 24));
		row = store_session_get(st, id);
		json_decref(row);
		if (!row)
			break;
	}
	s->id = id;
	s->dir = xasprintf("%s/%s", s->spec.output_dir, id);
	s->rng = s->spec.seed;
	spec_hash(&s->spec, hash);
	if ((rc = dir_make(s->dir, msg, n)))
		return rc;
	if ((rc = store_begin(st, msg, n)))
		return rc;
	{
		/* Absolute, so that `kctl resume` works from any folder. */
		char *abs = realpath(spec_path, NULL);

		rc = store_session_create(st, id, abs ? abs : spec_path, hash, s->dir, msg, n);
		free(abs);
	}
	if (!rc)
		rc = store_session_set_rng(st, id, s->rng, msg, n);
	if (!rc && s->rounds_cap > 0)
		rc = store_session_set_rounds_cap(st, id, s->rounds_cap, msg, n);
	if (rc) {
		store_rollback(st);
		return rc;
	}
	return store_commit(st, msg, n);
}

static int reopen(struct session *s, struct store *st, const char *id, int confirm, char *msg,
		  size_t n);
static int apply_settings(struct session *s, char *msg, size_t n);

int session_reopen(struct session *s, struct store *st, const char *id, char *msg, size_t n)
{
	return reopen(s, st, id, 0, msg, n);
}

int session_reopen_to_confirm(struct session *s, struct store *st, const char *id, char *msg,
			      size_t n)
{
	return reopen(s, st, id, 1, msg, n);
}

/* The largest report.md read back to see whether it is stale. */
#define REPORT_MAX (64u << 20)

/*
 * Whether dir/report.md fails to say the session is in state: its status
 * block's top-level "state" differs, or there is no readable report.
 */
static int report_stale(const char *dir, const char *state)
{
	char *path = xasprintf("%s/report.md", dir), *want = NULL, *text = NULL, why[256];
	int stale = 1;

	if (!file_read(path, REPORT_MAX, &text, NULL, why, sizeof(why))) {
		want = xasprintf("\n  \"state\": \"%s\"", state);
		stale = !strstr(text, want);
	}
	free(text);
	free(want);
	free(path);
	return stale;
}

int session_report_refresh(struct store *st, const char *id, char *msg, size_t n)
{
	json_t *row = store_session_get(st, id);
	const char *state = json_string_value(json_object_get(row, "state"));
	const char *dir = json_string_value(json_object_get(row, "output_dir"));
	struct session s;
	int rc = 0;

	memset(&s, 0, sizeof(s));
	/* a failed or paused session is rewritten by the resume that goes on with it */
	if (state && dir && !strcmp(state, "done") && report_stale(dir, state)) {
		rc = reopen(&s, st, id, 1, msg, n);
		if (!rc)
			rc = learnings_write(&s, msg, n);
		if (!rc)
			rc = report_write(&s, msg, n);
		rc = rc ? rc : 1;
		session_release(&s);
	}
	json_decref(row);
	return rc;
}

/*
 * A done session goes on only when --rounds raises its round budget past
 * the rounds it has (the numbers `kctl status` shows: confirmation rounds
 * count); anything else ended it for good.
 */
static int reopen_done(struct session *s, const char *id, char *msg, size_t n)
{
	int last = store_round_last(s->st, id);

	if (s->rounds_cap > last) {
		s->extending = 1;
		return 0;
	}
	return kerr_set(msg, n, KERR_INVALID,
			"session '%s' is done after round %d; to go on, give it a larger round "
			"budget: kctl resume %s --rounds N (N > %d)",
			id, last, id, last);
}

/*
 * The round budget of a reopened session: the --rounds given now
 * (s->rounds_cap), else the one recorded before (row's rounds_cap), else 0
 * (the spec's max_rounds).
 */
static void reopen_rounds_cap(struct session *s, json_t *row)
{
	json_int_t had = json_integer_value(json_object_get(row, "rounds_cap"));

	if (!s->rounds_cap)
		s->rounds_cap = had > 0 && had <= INT_MAX ? (int)had : 0;
}

/* Records a --rounds given to a resume, for the resumes after it. */
static int record_rounds_cap(struct session *s, json_t *row, char *msg, size_t n)
{
	int rc;

	if (!s->rounds_cap ||
	    s->rounds_cap == json_integer_value(json_object_get(row, "rounds_cap")))
		return 0;
	if ((rc = store_begin(s->st, msg, n)))
		return rc;
	if ((rc = store_session_set_rounds_cap(s->st, s->id, s->rounds_cap, msg, n))) {
		store_rollback(s->st);
		return rc;
	}
	return store_commit(s->st, msg, n);
}

static int reopen(struct session *s, struct store *st, const char *id, int confirm, char *msg,
		  size_t n)
{
	json_t *row = store_session_get(st, id);
	const char *path, *want, *state;
	char hash[65];
	int rc;

	s->st = st;
	if (!row && store_check(st, msg, n))
		return KERR_IO;
	if (!row)
		return kerr_set(msg, n, KERR_INVALID, "no session '%s' (see 'kctl status')", id);
	path = json_string_value(json_object_get(row, "spec_path"));
	want = json_string_value(json_object_get(row, "spec_hash"));
	state = json_string_value(json_object_get(row, "state"));
	s->id = xstrdup(id);
	s->dir = xstrdup(json_string_value(json_object_get(row, "output_dir")));
	s->rng = (uint64_t)json_integer_value(json_object_get(row, "rng"));
	rc = session_prepare(s, path, msg, n);
	if (!rc) {
		spec_hash(&s->spec, hash);
		if (strcmp(hash, want))
			rc = kerr_set(msg, n, KERR_INVALID,
				      "the spec '%s' changed since session '%s' began; start a new "
				      "session for the new spec",
				      path, id);
	}
	if (!rc && state && !confirm && !strcmp(state, "done") && report_stale(s->dir, state) &&
	    !learnings_write(s, msg, n) && !report_write(s, msg, n))
		fprintf(stderr,
			"session %s is done; its report was stale and is rewritten: %s/report.md\n",
			id, s->dir);
	reopen_rounds_cap(s, row);
	if (!rc && state && !confirm && !strcmp(state, "done"))
		rc = reopen_done(s, id, msg, n);
	else if (!rc && state && !strcmp(state, "cancelled"))
		rc = kerr_set(msg, n, KERR_INVALID, "session '%s' is %s", id, state);
	if (!rc)
		rc = apply_settings(s, msg, n);
	if (!rc && !confirm)
		rc = record_rounds_cap(s, row, msg, n);
	json_decref(row);
	return rc;
}

/* "limits.KEY" -> KEY, or NULL when key is not of that form. */
static const char *limit_key(const char *key)
{
	return !strncmp(key, "limits.", 7) && key[7] ? key + 7 : NULL;
}

/* What `kctl resume --set` recorded, over the spec just loaded. */
static int apply_settings(struct session *s, char *msg, size_t n)
{
	json_t *rows = store_settings(s->st, s->id), *row;
	size_t i;

	if (!rows)
		return kerr_set(msg, n, KERR_IO, "cannot read the settings of session '%s'", s->id);
	json_array_foreach (rows, i, row) {
		const char *key = limit_key(json_string_value(json_object_get(row, "key")));

		if (!key) /* only limits are ever recorded */
			continue;
		if (!s->spec.limits)
			s->spec.limits = json_object();
		json_object_set(s->spec.limits, key, json_object_get(row, "value"));
	}
	json_decref(rows);
	return 0;
}

int session_set(struct session *s, const char *assignment, char *msg, size_t n)
{
	const char *eq = strchr(assignment, '=');
	char *key = eq ? xstrndup(assignment, (size_t)(eq - assignment)) : xstrdup(assignment);
	const char *lim = limit_key(key);
	json_t *value = NULL, *was;
	int rc;

	if (!eq)
		rc = kerr_set(msg, n, KERR_INVALID, "--set '%s': expected KEY=VALUE", assignment);
	else if (!lim)
		rc = kerr_set(msg, n, KERR_INVALID,
			      "--set '%s': only the spec's limits.* can change in a session "
			      "(the rest makes a new session)",
			      key);
	else
		rc = spec_limit_value(lim, eq + 1, &value, msg, n);
	if (!rc) {
		was = json_object_get(s->spec.limits, lim);
		rc = store_setting_add(s->st, s->id, key, value, was, msg, n);
	}
	if (!rc) {
		if (!s->spec.limits)
			s->spec.limits = json_object();
		json_object_set(s->spec.limits, lim, value);
		log_info("session %s: %s set to %s", s->id, key, eq + 1);
	}
	json_decref(value);
	free(key);
	return rc;
}

void session_release(struct session *s)
{
	if (s->prop.release)
		proposer_close(&s->prop);
	blocks_release(&s->blocks);
	spec_release(&s->spec);
	free(s->id);
	free(s->dir);
	free(s->evalpod);
	s3_free(s->s3);
	if (s->backend && s->backend->close)
		s->backend->close(s);
	memset(s, 0, sizeof(*s));
}

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
	int max_rounds = s->rounds_cap ? s->rounds_cap : s->spec.max_rounds;
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
	int max_rounds = s->rounds_cap ? s->rounds_cap : s->spec.max_rounds;
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
 * reason, or failed when no variant passed its checks.
 */
static int session_end(struct session *s, int exhausted, char *msg, size_t n)
{
	json_t *w = session_winner(s->st, s->id);
	struct sbuf why = SBUF_INIT;
	int rc = KCTL_EXIT_OK;

	if (exhausted)
		sbuf_adds(&why, "search space exhausted; ");
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
	if (w)
		fprintf(stderr, "session %s is done: %s/report.md, best kernel in %s/best.cl\n%s\n",
			s->id, s->dir, s->dir, why.buf);
	kerr_set(msg, n, rc ? KERR_INVALID : KERR_OK, "%s; see %s/learnings.md", why.buf, s->dir);
	sbuf_release(&why);
	json_decref(w);
	return rc;
}

static int session_drive(struct session *s, char *msg, size_t n)
{
	int rounds_done = 0, rc = 0, exhausted = 0;
	double t_round = 0;

	set_state(s, "running", NULL, msg, n);
	for (;;) {
		int round, state, stop;
		char *mode;
		time_t t0 = time(NULL);

		if (session_cancelled(s))
			return kerr_set(msg, n, KERR_OK, "session %s was cancelled", s->id),
			       KCTL_EXIT_OK;
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
			fprintf(stderr, "paused; go on with: kctl resume %s%s\n", s->id,
				s->again ? s->again : "");
			return KCTL_EXIT_OK;
		}
		if (state < 0) {
			rc = !strcmp(mode, "confirm") ? confirm_propose(s, round, NULL, msg, n)
						      : round_propose(s, round, mode, msg, n);
			state = ROUND_PROPOSED;
		}
		free(mode);
		if (rc == 1) {
			fprintf(stderr, "the proposer has no new variants: the search space is "
					"exhausted\n");
			if (wants_confirmation(s)) {
				rc = confirm_propose(s, round, "search space exhausted", msg, n);
				if (rc)
					break;
			} else {
				exhausted = 1;
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
	}
	if (rc && session_cancelled(s)) {
		fprintf(stderr, "session %s was cancelled\n", s->id);
		return KCTL_EXIT_OK;
	}
	if (rc) {
		int interrupted = round_interrupted() != 0;
		char why[4096];

		strlcpy(why, msg, sizeof(why));
		set_state(s, interrupted ? "paused" : "failed", why, msg, n);
		strlcpy(msg, why, n);
		return interrupted                                  ? 130
		       : rc == KERR_NODEVICE || rc == KERR_NOTFOUND ? KCTL_EXIT_INFRA
								    : KCTL_EXIT_FAIL;
	}
	return session_end(s, exhausted, msg, n);
}

/* kctl confirm: a confirmation now, then the session as it was. */
static int session_confirm_locked(struct session *s, char *msg, size_t n)
{
	json_t *row = store_session_get(s->st, s->id), *inc = session_incumbent(s);
	int last = store_round_last(s->st, s->id), rc = 0, stop = 0, again, exit = KCTL_EXIT_OK;
	json_t *lrow = store_round_get(s->st, s->id, last);
	char *state = xstrdup(json_string_value(json_object_get(row, "state")));
	char *reason = json_string_value(json_object_get(row, "reason"))
			       ? xstrdup(json_string_value(json_object_get(row, "reason")))
			       : NULL;

	if (!inc)
		rc = kerr_set(
			msg, n, KERR_INVALID,
			"session %s has no variant that passed its checks: nothing to confirm",
			s->id);
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
		exit = session_end(s, 0, msg, n);
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
static int with_lock(struct session *s, int (*fn)(struct session *, char *, size_t), char *msg,
		     size_t n)
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
	rc = fn(s, msg, n);
	close(fd);
	return rc;
}

int session_run(struct session *s, char *msg, size_t n)
{
	return with_lock(s, session_drive, msg, n);
}

int session_confirm(struct session *s, char *msg, size_t n)
{
	return with_lock(s, session_confirm_locked, msg, n);
}
