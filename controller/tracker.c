/*
 * tracker.c - the session's tracking issue on GitHub (tracker.h): what is
 * posted, in what words, and the queue that sends it in order.  Uses the
 * store's queue (store-github.c), the GitHub client (github.h) and the
 * session's records; the loop calls it.
 */
#include "tracker.h"
#include "session.h"
#include "services.h"
#include "github.h"
#include "err.h"
#include "fileio.h"
#include "log.h"
#include "sbuf.h"
#include "xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPORT_MAX (1u << 20) /* report.md read for the final comment */

static int enabled(const struct session *s)
{
	return s->spec.github.repo != NULL;
}

/* Queues a post in its own transaction; says why when it cannot. */
static void enqueue(struct session *s, const char *kind, int round, const char *title,
		    const char *body)
{
	char msg[1024];
	int rc = store_begin(s->st, msg, sizeof(msg));
	int64_t seq = rc ? rc
			 : store_github_post_add(s->st, s->id, kind, round, title, body, msg,
						 sizeof(msg));

	if (seq < 0 || store_commit(s->st, msg, sizeof(msg))) {
		if (!rc)
			store_rollback(s->st);
		log_warn("session %s: the tracking issue's %s is not queued: %s", s->id, kind, msg);
	}
}

/* --- the words ---------------------------------------------------------------- */

static const char *text_of(json_t *o, const char *key, const char *dflt)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v ? v : dflt;
}

static double num_of(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* " | 12.34x" (digits decimals, then suffix), or " | -" for no figure. */
static void cell_num(struct sbuf *b, double v, int digits, const char *suffix)
{
	sbuf_adds(b, " | ");
	if (isnan(v))
		sbuf_adds(b, "-");
	else
		sbuf_addf(b, "%.*f%s", digits, v, suffix);
}

static void round_table(struct sbuf *b, json_t *vars)
{
	json_t *v;
	size_t i;

	sbuf_adds(b, "| variant | status | vs reference | GFLOP/s | bottleneck | proposer | "
		     "rationale |\n|---|---|---:|---:|---|---|---|\n");
	json_array_foreach (vars, i, v) {
		sbuf_adds(b, "| ");
		sbuf_add_md(b, text_of(v, "id", "?"), 64);
		sbuf_adds(b, " | ");
		sbuf_add_md(b, text_of(v, "status", "not evaluated"), 32);
		if (json_is_string(json_object_get(v, "fault_kind"))) {
			sbuf_adds(b, " (");
			sbuf_add_md(b, text_of(v, "fault_kind", ""), 32);
			sbuf_adds(b, ")");
		}
		cell_num(b, num_of(v, "speedup_ref"), 2, "x");
		cell_num(b, num_of(v, "gflops"), 1, "");
		sbuf_adds(b, " | ");
		sbuf_add_md(b, text_of(v, "bottleneck", "-"), 32);
		sbuf_adds(b, " | ");
		sbuf_add_md(b, text_of(v, "origin", "-"), 16);
		sbuf_adds(b, " | ");
		sbuf_add_md(b, text_of(v, "rationale", ""), 160);
		sbuf_adds(b, " |\n");
	}
}

/* The comment after round r: decision, table, incumbent, new learnings. */
static char *round_text(struct session *s, int r)
{
	json_t *row = store_round_get(s->st, s->id, r), *vars = round_programs(s, r);
	json_t *inc = session_incumbent(s), *ls = store_learnings(s->st, s->id), *l;
	struct sbuf b = SBUF_INIT;
	int nl = 0;
	size_t i;

	sbuf_addf(&b, "### Round %d (", r);
	sbuf_add_md(&b, text_of(row, "mode", "?"), 32);
	sbuf_adds(&b, "): ");
	sbuf_add_md(&b, text_of(row, "decision", "no decision"), 32);
	sbuf_adds(&b, "\n\n");
	sbuf_add_md(&b, text_of(row, "reason", ""), 2000);
	sbuf_adds(&b, "\n\n");
	round_table(&b, vars);
	if (inc) {
		sbuf_adds(&b, "\n**Incumbent:** ");
		sbuf_add_md(&b, text_of(inc, "id", "?"), 64);
		if (!isnan(num_of(inc, "speedup_ref")))
			sbuf_addf(&b, ", %.2fx the reference", num_of(inc, "speedup_ref"));
		if (!isnan(num_of(inc, "gflops")))
			sbuf_addf(&b, ", %.1f GFLOP/s", num_of(inc, "gflops"));
		sbuf_adds(&b, ".\n");
	}
	json_array_foreach (ls, i, l) {
		if (json_integer_value(json_object_get(l, "round")) != r)
			continue;
		if (!nl++)
			sbuf_adds(&b, "\n**New learnings**\n\n");
		sbuf_addf(&b, "- [%s%03lld] ", text_of(l, "kind", "?"),
			  (long long)json_integer_value(json_object_get(l, "number")));
		sbuf_add_md(&b, text_of(l, "text", ""), 1000);
		sbuf_adds(&b, "\n");
	}
	json_decref(ls);
	json_decref(inc);
	json_decref(vars);
	json_decref(row);
	return sbuf_detach(&b, NULL);
}

static void queue_round(struct session *s, int round);
static void queue_end(struct session *s, const char *state, const char *reason);

/*
 * What a kctl killed at the wrong moment left unqueued: the comment of a
 * finished round (killed between ranking it and queueing its comment), the
 * end of a finished session (killed after recording it).  Queued now, in
 * order; what is queued already is not queued again.
 */
static void catch_up(struct session *s)
{
	json_t *row = store_session_get(s->st, s->id);
	const char *state = text_of(row, "state", "");
	int last = store_round_last(s->st, s->id);

	for (int r = 0; r <= last; r++) {
		json_t *rr = store_round_get(s->st, s->id, r);

		if (rr && json_integer_value(json_object_get(rr, "state")) == ROUND_DONE)
			queue_round(s, r);
		json_decref(rr);
	}
	if (!strcmp(state, "done") || !strcmp(state, "cancelled"))
		queue_end(s, state, text_of(row, "reason", ""));
	json_decref(row);
}

void tracker_start(struct session *s)
{
	struct sbuf title = SBUF_INIT, body = SBUF_INIT;

	if (!enabled(s))
		return;
	if (store_github_queued(s->st, s->id, "open", -1) == 0) {
		sbuf_addf(&title, "kctl session %s", s->id);
		sbuf_adds(&body, "kctl optimizes the kernel ");
		sbuf_add_md(&body, s->spec.name, 128);
		sbuf_adds(&body, " of the spec ");
		sbuf_add_md(&body, s->spec.path, 500);
		sbuf_addf(&body,
			  " in session %s: at most %d rounds and %d evaluations, on the %s "
			  "backend.\n\nA comment follows each round (its variants, the incumbent, "
			  "the decision, what was learned), then the final report; the issue is "
			  "closed when the session is done. `kctl status %s` shows it too.\n",
			  s->id, s->spec.max_rounds, s->spec.max_evaluations,
			  s->spec.backend == BACKEND_KUBERNETES ? "kubernetes" : "local", s->id);
		enqueue(s, "open", -1, title.buf, body.buf);
	}
	sbuf_release(&title);
	sbuf_release(&body);
	catch_up(s);
	tracker_flush(s);
}

/* Queues round's comment unless it is queued already. */
static void queue_round(struct session *s, int round)
{
	char *text;

	if (store_github_queued(s->st, s->id, "comment", round) != 0)
		return;
	text = round_text(s, round);
	enqueue(s, "comment", round, NULL, text);
	free(text);
}

void tracker_round(struct session *s, int round)
{
	if (!enabled(s))
		return;
	queue_round(s, round);
	tracker_flush(s);
}

/*
 * Queues the comment that says the session stopped, with its report when
 * done, and the close when done or cancelled; a done or cancelled
 * session's end is queued once per last round (a session extended with
 * --rounds ends again later).
 */
static void queue_end(struct session *s, const char *state, const char *reason)
{
	int last = store_round_last(s->st, s->id);
	int closing = !strcmp(state, "done") || !strcmp(state, "cancelled");
	struct sbuf b = SBUF_INIT;
	char *path, *report = NULL, why[256];

	if (closing && store_github_queued(s->st, s->id, "close", last) != 0)
		return;
	sbuf_addf(&b, "### The session is %s\n\n", state);
	sbuf_add_md(&b, reason ? reason : "", 4000);
	sbuf_adds(&b, "\n");
	path = xasprintf("%s/report.md", s->dir);
	if (!strcmp(state, "done") && !file_read(path, REPORT_MAX, &report, NULL, why, sizeof(why)))
		sbuf_addf(&b, "\n<details><summary>report.md</summary>\n\n%s\n</details>\n",
			  report);
	else if (strcmp(state, "done") && strcmp(state, "cancelled"))
		sbuf_addf(&b, "\nGo on with `kctl resume %s`; this issue stays open.\n", s->id);
	enqueue(s, "comment", -1, NULL, b.buf);
	if (closing)
		enqueue(s, "close", last, NULL, "");
	free(report);
	free(path);
	sbuf_release(&b);
}

void tracker_end(struct session *s, const char *state, const char *reason)
{
	if (!enabled(s))
		return;
	queue_end(s, state, reason);
	tracker_flush(s);
}

/* --- sending --------------------------------------------------------------------- */

/* The session's client, made once; NULL (said once) without a token. */
static struct github *client(struct session *s)
{
	static int warned;
	const char *env = s->spec.github.token_env, *token = getenv(env);
	struct github_opts o;
	char msg[1024];

	if (s->gh)
		return s->gh;
	if (!token || !*token) {
		if (!warned++)
			log_warn(
				"session %s: session.github: $%s is not set, so the tracking issue "
				"is not updated; its posts stay queued for a later run",
				s->id, env);
		return NULL;
	}
	memset(&o, 0, sizeof(o));
	o.api_url = s->spec.github.api_url ? s->spec.github.api_url : github_env_api_url();
	o.repo = s->spec.github.repo;
	o.token = token;
	o.token_env = env;
	o.ca_file = s->spec.github.ca_file;
	o.stop = round_interrupted;
	if (github_new(&o, &s->gh, msg, sizeof(msg))) {
		if (!warned++)
			log_warn("session %s: session.github: %s", s->id, msg);
		s->gh = NULL;
	}
	return s->gh;
}

/* Sends one queued post; *issue is the issue's number (0 before it is open). */
static int send_post(struct session *s, struct github *gh, json_t *row, long long *issue,
		     long long *comment, char *msg, size_t n)
{
	const char *kind = text_of(row, "kind", "");
	long long seq = json_integer_value(json_object_get(row, "seq"));
	/* attempts counts this one: more than one, and an earlier may have been taken */
	int retry = json_integer_value(json_object_get(row, "attempts")) > 1;
	char marker[160], *key;
	int rc;

	*comment = 0;
	if (!strcmp(kind, "open")) {
		const char *labels[12] = { 0 };
		json_t *lv = s->spec.github.labels;

		if (*issue)
			return 0;
		for (size_t i = 0; i < json_array_size(lv) && i < 10; i++)
			labels[i] = json_string_value(json_array_get(lv, i));
		if ((rc = github_session_marker(s->id, marker, sizeof(marker))))
			return kerr_set(msg, n, rc, "session id '%s' makes no marker", s->id);
		/* an earlier attempt may have opened it and lost the answer */
		rc = retry ? github_issue_find(gh, NULL, marker, issue, msg, n) : 0;
		if (!rc && !*issue)
			rc = github_issue_create(gh, text_of(row, "title", s->id), marker,
						 text_of(row, "body", ""), labels, issue, msg, n);
		return rc;
	}
	if (!*issue)
		return kerr_set(msg, n, KERR_INVALID, "the issue is not open yet");
	if (!strcmp(kind, "close"))
		return github_issue_close(gh, *issue, msg, n);
	key = xasprintf("%s:post-%lld", s->id, seq);
	rc = github_session_marker(key, marker, sizeof(marker));
	free(key);
	if (rc)
		return kerr_set(msg, n, rc, "session id '%s' makes no marker", s->id);
	/* a comment whose answer was lost may be there: look before posting again */
	rc = retry ? github_comment_find(gh, *issue, marker, comment, msg, n) : 0;
	if (!rc && !*comment)
		rc = github_comment_add(gh, *issue, marker, text_of(row, "body", ""), comment, msg,
					n);
	return rc;
}

/* Records what became of post seq (a pending one counts one more attempt); 1 when done. */
static int record(struct session *s, long long seq, const char *state, const char *error,
		  long long issue, long long comment)
{
	char msg[1024];

	if (store_begin(s->st, msg, sizeof(msg)) ||
	    store_github_post_set(s->st, s->id, seq, state, error, issue, comment, msg,
				  sizeof(msg)) ||
	    store_commit(s->st, msg, sizeof(msg))) {
		store_rollback(s->st);
		log_warn("session %s: the tracking issue's queue: %s", s->id, msg);
		return 0;
	}
	return 1;
}

void tracker_flush(struct session *s)
{
	struct github *gh;
	json_t *rows, *row;
	long long issue;
	size_t i;

	if (!enabled(s))
		return;
	rows = store_github_pending(s->st, s->id);
	if (!json_array_size(rows) || !(gh = client(s))) {
		json_decref(rows);
		return;
	}
	issue = store_github_issue(s->st, s->id);
	if (issue < 0)
		issue = 0;
	json_array_foreach (rows, i, row) {
		long long seq = json_integer_value(json_object_get(row, "seq")), comment = 0;
		long long attempts = json_integer_value(json_object_get(row, "attempts"));
		json_t *rnd = json_object_get(row, "round");
		const char *kind = text_of(row, "kind", "");
		char msg[2048] = "";
		int rc;

		/* Counted before it is made: a kctl killed after GitHub took the post and
		 * before this records it leaves a tried post, which is looked for by its
		 * marker before it is sent again. */
		if (round_interrupted() || !record(s, seq, "pending", "being sent", 0, 0))
			break;
		json_object_set_new(row, "attempts", json_integer(attempts + 1));
		rc = send_post(s, gh, row, &issue, &comment, msg, sizeof(msg));
		if (!rc) {
			crash_point("posted",
				    json_is_integer(rnd) ? (int)json_integer_value(rnd) : -1);
			record(s, seq, "sent", NULL, !strcmp(kind, "open") ? issue : 0, comment);
			continue;
		}
		if (round_interrupted())
			break;
		if (rc == KERR_LATER) {
			time_t t = github_not_before(gh);
			char when[32] = "later";
			struct tm tm;

			if (t > 0 && gmtime_r(&t, &tm))
				strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
			log_info("session %s: GitHub asks to wait until %s; %zu tracking post(s) "
				 "stay queued",
				 s->id, when, json_array_size(rows) - i);
			record(s, seq, "later", msg, 0, 0);
			break;
		}
		if (strcmp(kind, "open") && attempts + 1 >= TRACKER_MAX_ATTEMPTS) {
			log_warn("session %s: the tracking issue's %s (post %lld) failed %d times "
				 "and is dropped: %s",
				 s->id, kind, seq, TRACKER_MAX_ATTEMPTS, msg);
			record(s, seq, "dropped", msg, 0, 0);
			continue;
		}
		log_warn("session %s: the tracking issue's %s (post %lld): %s; it stays queued "
			 "and is sent again after the next round",
			 s->id, kind, seq, msg);
		record(s, seq, "failed", msg, 0, 0);
		break;
	}
	json_decref(rows);
}
