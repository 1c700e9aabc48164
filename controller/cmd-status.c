/*
 * kctl status [SESSION] [-o text|json] [--state FILE]
 * kctl status SESSION --watch [--interval SECONDS] [--state FILE]
 */
#include "cmds.h"
#include "err.h"
#include "jsonx.h"
#include "kstate.h"
#include "log.h"
#include "session.h"
#include "winner.h"
#include "loop.h"
#include "progress.h"
#include "sbuf.h"
#include "xalloc.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double jnum(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* "model: 12 exchanges (1 failed), 45100 tokens in, 12300 out, cost 0.42; answers: ..." */
static void print_model(json_t *m)
{
	const char *key;
	json_t *v;
	const char *sep = "";

	if (!json_is_object(m))
		return;
	printf("  model: %lld exchange%s",
	       (long long)json_integer_value(json_object_get(m, "calls")),
	       json_integer_value(json_object_get(m, "calls")) == 1 ? "" : "s");
	if (json_integer_value(json_object_get(m, "errors")))
		printf(" (%lld failed)",
		       (long long)json_integer_value(json_object_get(m, "errors")));
	if (json_integer_value(json_object_get(m, "input_tokens")) ||
	    json_integer_value(json_object_get(m, "output_tokens")))
		printf(", %lld tokens in, %lld out",
		       (long long)json_integer_value(json_object_get(m, "input_tokens")),
		       (long long)json_integer_value(json_object_get(m, "output_tokens")));
	if (jnum(m, "cost") > 0)
		printf(", cost %.4g", jnum(m, "cost"));
	printf(", %.1f s waiting", jnum(m, "ms") / 1e3);
	if (json_object_size(json_object_get(m, "outcomes")))
		printf("; directions:");
	json_object_foreach (json_object_get(m, "outcomes"), key, v) {
		printf("%s%lld %s", *sep ? sep : " ", (long long)json_integer_value(v), key);
		sep = ", ";
	}
	putchar('\n');
}

static double now_s(void);

/*
 * A session on the Kubernetes backend: its kube.json (kstate.h) as the
 * status's "kubernetes" part.  What it says of a wait is kept only while
 * the session runs: a session that stopped waits for nothing.
 */
static void add_cluster(json_t *st)
{
	const char *dir = json_string_value(json_object_get(st, "output_dir"));
	const char *state = json_string_value(json_object_get(st, "state"));
	json_t *rec = dir ? kstate_load(dir) : NULL;

	if (!rec)
		return;
	if (!state || strcmp(state, "running") ||
	    json_is_object(json_object_get(st, "interrupted"))) {
		json_object_set_new(rec, "state", json_string(""));
		json_object_del(rec, "message");
	}
	json_object_set_new(st, "kubernetes", rec);
}

/* The "kubernetes" part: where the Jobs are, and what the session waits for. */
static void print_cluster(json_t *st)
{
	json_t *rec = json_object_get(st, "kubernetes");
	const char *queue = json_string_value(json_object_get(rec, "queue"));
	struct sbuf line = SBUF_INIT;

	if (!rec)
		return;
	printf("  kubernetes: namespace %s, queue %s",
	       json_string_value(json_object_get(rec, "namespace")), queue ? queue : "none");
	if (kstate_line(&line, rec, now_s()))
		printf("; round %lld %s",
		       (long long)json_integer_value(json_object_get(rec, "round")), line.buf);
	putchar('\n');
	sbuf_release(&line);
}

/* state_opt: the --state given, repeated in the command that goes on (or NULL). */
static void print_one(json_t *st, const char *state_opt)
{
	json_t *best = json_object_get(st, "best");

	printf("%-40s %-10s rounds %-3lld evaluations %-5lld",
	       json_string_value(json_object_get(st, "session")),
	       json_is_object(json_object_get(st, "interrupted"))
		       ? "interrupted"
		       : json_string_value(json_object_get(st, "state")),
	       (long long)json_integer_value(json_object_get(st, "rounds")),
	       (long long)json_integer_value(json_object_get(st, "evaluations")));
	if (json_integer_value(json_object_get(st, "cached")) > 0)
		printf(" (%lld from the result cache)",
		       (long long)json_integer_value(json_object_get(st, "cached")));
	if (json_is_object(best)) {
		char noise[64];

		winner_noise(best, noise, sizeof(noise));
		printf(" best %s %.2fx vs reference, %.1f GFLOP/s (%s), %s, %s",
		       json_string_value(json_object_get(best, "variant")),
		       jnum(best, "speedup_vs_reference"), jnum(best, "gflops"),
		       json_string_value(json_object_get(best, "bottleneck"))
			       ? json_string_value(json_object_get(best, "bottleneck"))
			       : "-",
		       noise,
		       json_is_true(json_object_get(best, "settled")) ? "confirmed"
		       : json_is_false(json_object_get(best, "settled"))
			       ? "not settled within noise"
			       : "not confirmed");
	}
	putchar('\n');
	if (json_is_object(json_object_get(st, "interrupted")))
		printf("  interrupted (kctl pid %lld gone); go on with: kctl resume %s%s%s\n",
		       (long long)json_integer_value(
			       json_object_get(json_object_get(st, "interrupted"), "kctl_pid")),
		       json_string_value(json_object_get(st, "session")),
		       state_opt ? " --state " : "", state_opt ? state_opt : "");
	if (json_is_object(json_object_get(st, "elsewhere"))) {
		json_t *e = json_object_get(st, "elsewhere");
		const char *where = json_string_value(json_object_get(e, "where"));

		printf("  running on %s (kctl pid %lld %s %s)\n",
		       json_string_value(json_object_get(e, "host")),
		       (long long)json_integer_value(json_object_get(e, "kctl_pid")),
		       where && !strcmp(where, "another machine") ? "on" : "in",
		       where ? where : "?");
	}
	if (json_string_value(json_object_get(st, "reason")))
		printf("  %s\n", json_string_value(json_object_get(st, "reason")));
	print_cluster(st);
	print_model(json_object_get(st, "model"));
}

/*
 * A finished session whose report.md still says otherwise (kctl was killed
 * between the two) gets it rewritten; a failure to do so is only a warning.
 */
static void refresh_report(struct store *st, const char *id)
{
	char msg[2048];
	int rc = session_report_refresh(st, id, msg, sizeof(msg));

	if (rc < 0)
		log_warn("session %s: its report.md is stale and cannot be rewritten: %s", id, msg);
	else if (rc > 0)
		fprintf(stderr, "session %s: report.md was stale; rewritten\n", id);
}

/* --- --watch -------------------------------------------------------------------- */

/* The rounds a terminal shows at most; older ones are summed up in one line. */
#define WATCH_ROUNDS_MAX 20

static volatile sig_atomic_t watch_stop;

static void watch_on_signal(int sig)
{
	watch_stop = sig;
}

struct watch {
	struct store *st;
	const char *id;
	const char *state_opt; /* --state, for the final status */
	int tty, color;
	double interval_s;
	int drawn;         /* terminal: lines drawn last time */
	int next_round;    /* plain: the first round whose last line may still change */
	struct sbuf shown; /* plain: what the line last printed said, less its times */
	struct sbuf waits; /* plain: what the session waited for when last printed */
	json_t *status;    /* session_status_json of this look */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Whether the session of this look has ended for a watcher: not running, or its kctl gone. */
static int watch_over(struct watch *w)
{
	const char *state = json_string_value(json_object_get(w->status, "state"));

	return !state || strcmp(state, "running") ||
	       json_is_object(json_object_get(w->status, "interrupted"));
}

/*
 * Round r as seen now into *p; 1 when there is such a round, 0 when not
 * yet, negative (logged) when the store could not be read.
 */
static int watch_round(struct watch *w, int r, struct progress *p)
{
	const char *dir = json_string_value(json_object_get(w->status, "output_dir"));
	char msg[2048];
	int rc = progress_read(w->st, w->id, dir ? dir : ".", r, now_s(), p, msg, sizeof(msg));

	if (rc == KERR_NOTFOUND)
		return 0;
	if (rc) {
		log_error("%s", msg);
		return rc;
	}
	return 1;
}

/* Plain: round r's line, printed when it says something new (times aside). */
static void watch_plain_round(struct watch *w, const struct progress *p)
{
	struct sbuf key = SBUF_INIT, line = SBUF_INIT;

	/* what the line says, less its times: a finished round says so ("took") */
	sbuf_addf(&key, "%d %d %d %d %d ", p->round, p->state >= ROUND_DONE, p->done, p->failed,
		  p->total);
	progress_incumbent(&key, json_object_get(w->status, "best"));
	if (!w->shown.buf || strcmp(key.buf, w->shown.buf)) {
		progress_plain(&line, p);
		sbuf_adds(&line, "; ");
		progress_incumbent(&line, json_object_get(w->status, "best"));
		printf("%s\n", line.buf);
		fflush(stdout);
		sbuf_reset(&w->shown);
		sbuf_adds(&w->shown, key.buf);
	}
	sbuf_release(&key);
	sbuf_release(&line);
}

/* Plain: what the session waits for (kstate.h), printed when that changes. */
static void watch_plain_waits(struct watch *w)
{
	json_t *rec = json_object_get(w->status, "kubernetes");
	const char *state = json_string_value(json_object_get(rec, "state"));
	const char *text = json_string_value(json_object_get(rec, "message"));
	struct sbuf key = SBUF_INIT, line = SBUF_INIT;

	sbuf_addf(&key, "%s|%s", state ? state : "", text ? text : "");
	if (strcmp(key.buf, w->waits.buf ? w->waits.buf : "|")) {
		if (kstate_line(&line, rec, now_s()))
			printf("round %lld: %s\n",
			       (long long)json_integer_value(json_object_get(rec, "round")),
			       line.buf);
		fflush(stdout);
		sbuf_reset(&w->waits);
		sbuf_adds(&w->waits, key.buf);
	}
	sbuf_release(&key);
	sbuf_release(&line);
}

/* Plain: the rounds that moved since the last look; each round's last line says where it ended. */
static int watch_plain(struct watch *w)
{
	int last = store_round_last(w->st, w->id);

	if (last < 0) {
		char msg[2048];

		store_check(w->st, msg, sizeof(msg));
		log_error("%s", msg);
		return last;
	}
	for (int r = w->next_round; r <= last; r++) {
		struct progress p;
		int rc = watch_round(w, r, &p);

		if (rc <= 0)
			return rc;
		watch_plain_round(w, &p);
		if (r < last)
			w->next_round = r + 1;
	}
	watch_plain_waits(w);
	return 0;
}

/* Terminal: the header line, cut to the width. */
static void watch_header(struct watch *w, struct sbuf *out, int cols)
{
	struct sbuf h = SBUF_INIT;

	sbuf_addf(&h, "session %s %s; ", w->id,
		  json_is_object(json_object_get(w->status, "interrupted"))
			  ? "interrupted"
			  : json_string_value(json_object_get(w->status, "state")));
	progress_incumbent(&h, json_object_get(w->status, "best"));
	if (json_is_object(json_object_get(w->status, "best")))
		sbuf_adds(&h, " vs reference");
	sbuf_add(out, h.buf, h.len < (size_t)cols - 1 ? h.len : (size_t)cols - 1);
	sbuf_adds(out, "\033[K\n");
	sbuf_release(&h);
}

/* Terminal: the header and one line per round, redrawn over the last drawing. */
static int watch_draw(struct watch *w)
{
	int cols = progress_columns(STDOUT_FILENO), rows = progress_rows(STDOUT_FILENO);
	int last = store_round_last(w->st, w->id), first, lines = 1, rc = 0;
	struct sbuf out = SBUF_INIT;

	first = last - (rows - 4 < WATCH_ROUNDS_MAX ? rows - 4 : WATCH_ROUNDS_MAX) + 1;
	first = first < 0 ? 0 : first > last ? last : first;
	if (w->drawn)
		sbuf_addf(&out, "\033[%dA", w->drawn);
	sbuf_adds(&out, "\r");
	watch_header(w, &out, cols < 20 ? 20 : cols);
	{
		struct sbuf wait = SBUF_INIT;

		/* a session waiting for quota says so, not only a bar that does not move */
		if (kstate_line(&wait, json_object_get(w->status, "kubernetes"), now_s())) {
			sbuf_adds(&out, "  ");
			sbuf_add(&out, wait.buf,
				 wait.len < (size_t)(cols < 20 ? 17 : cols - 3)
					 ? wait.len
					 : (size_t)(cols < 20 ? 17 : cols - 3));
			sbuf_adds(&out, "\033[K\n");
			lines++;
		}
		sbuf_release(&wait);
	}
	if (first > 0) {
		sbuf_addf(&out, "  rounds 0 to %d done\033[K\n", first - 1);
		lines++;
	}
	for (int r = first; r <= last; r++) {
		struct progress p;

		if ((rc = watch_round(w, r, &p)) < 0)
			break;
		if (!rc)
			continue;
		rc = 0;
		progress_line(&out, &p, cols, w->color);
		sbuf_adds(&out, "\033[K\n");
		lines++;
	}
	sbuf_adds(&out, "\033[J"); /* what a longer drawing left below */
	fputs(out.buf, stdout);
	fflush(stdout);
	w->drawn = lines;
	sbuf_release(&out);
	return rc;
}

/* Sleeps the interval; a signal ends it early. */
static void watch_sleep(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s,
			       .tv_nsec = (long)((s - (double)(time_t)s) * 1e9) };

	nanosleep(&ts, NULL);
}

/*
 * kctl status SESSION --watch: looks until the session is no longer
 * running (or a signal), then prints its status.  Reads only: no lock,
 * no write (not even a stale report's rewrite, which is the driving
 * kctl's to do).  Returns 0, 1 when the session's record went, or a
 * negative KERR_* code when the store could not be read (logged).
 */
static int watch(struct watch *w)
{
	struct sigaction sa = { .sa_handler = watch_on_signal };
	int rc = 0, over;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	w->status = session_status_json(w->st, w->id);
	if (w->status)
		add_cluster(w->status);
	/* plain: from the round under way on; earlier rounds said their last word already */
	w->next_round = store_round_last(w->st, w->id) > 0 ? store_round_last(w->st, w->id) : 0;
	/* a session that is over is shown once, as status shows it */
	for (over = !w->status || watch_over(w); !over && !rc;) {
		rc = w->tty ? watch_draw(w) : watch_plain(w);
		if (rc || watch_stop)
			break;
		watch_sleep(w->interval_s);
		json_decref(w->status);
		w->status = session_status_json(w->st, w->id);
		if (w->status)
			add_cluster(w->status);
		/* the look that sees the end is drawn too: each round ends on its last line */
		over = !w->status || watch_over(w) || watch_stop;
		if (over && w->status)
			rc = w->tty ? watch_draw(w) : watch_plain(w);
	}
	if (!rc && w->status) {
		print_one(w->status, w->state_opt);
	} else if (!rc) { /* a read that failed, or the session deleted while watched */
		char msg[2048];

		rc = store_check(w->st, msg, sizeof(msg)) ? KERR_IO : 1;
		log_error("%s", rc == KERR_IO ? msg : "the session's record is gone");
	}
	json_decref(w->status);
	sbuf_release(&w->shown);
	sbuf_release(&w->waits);
	return rc;
}

static const char status_usage[] = "usage: kctl status [SESSION] [-o text|json] [--state FILE]\n"
				   "       kctl status SESSION --watch [--interval SECONDS] "
				   "[--state FILE]\n";

/* --interval's seconds: 0.05 to 3600; -1 when arg is not such a number. */
static double parse_interval(const char *arg)
{
	char *end = NULL;
	double s = strtod(arg, &end);

	return end != arg && !*end && s >= 0.05 && s <= 3600 ? s : -1;
}

static int status_watch(const char *state, const char *arg, double interval)
{
	struct watch w = { .state_opt = state, .interval_s = interval };
	char msg[2048], *id;
	int rc;

	if (!(w.st = cmd_open_store_read(state)))
		return KCTL_EXIT_INFRA;
	if (!(id = cmd_session_id(w.st, arg))) {
		rc = store_check(w.st, msg, sizeof(msg)) ? KCTL_EXIT_INFRA : KCTL_EXIT_FAIL;
		store_close(w.st);
		return rc;
	}
	w.id = id;
	w.tty = isatty(STDOUT_FILENO);
	w.color = progress_color(STDOUT_FILENO);
	rc = watch(&w);
	rc = rc < 0 ? KCTL_EXIT_INFRA : rc ? KCTL_EXIT_FAIL : KCTL_EXIT_OK;
	if (rc != KCTL_EXIT_INFRA && store_check(w.st, msg, sizeof(msg))) {
		log_error("%s", msg);
		rc = KCTL_EXIT_INFRA;
	}
	free(id);
	store_close(w.st);
	return rc;
}

int cmd_status(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "state", required_argument, NULL, 'S' },
		{ "watch", no_argument, NULL, 'w' },
		{ "interval", required_argument, NULL, 'i' },
		{ NULL, 0, NULL, 0 },
	};
	const char *state = NULL;
	char msg[2048];
	int c, as_json = 0, rc = KCTL_EXIT_OK, watching = 0, output = 0;
	double interval = 0;
	struct store *st;
	json_t *out;

	/* --cluster asks the API server, not the state database: its own options */
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--cluster"))
			return cmd_status_cluster(argc, argv);
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		if (c == 'o' && !cmd_output_format(optarg, &as_json)) {
			output = 1;
		} else if (c == 'S') {
			state = optarg;
		} else if (c == 'w') {
			watching = 1;
		} else if (c == 'i' && (interval = parse_interval(optarg)) > 0) {
			continue;
		} else {
			if (c == 'i')
				fprintf(stderr,
					"kctl status: --interval takes 0.05 to 3600 "
					"seconds, not '%s'\n",
					optarg);
			fputs(status_usage, stderr);
			return KCTL_EXIT_USAGE;
		}
	}
	/* --watch: one session, shown as text; --interval only with it */
	if (optind < argc - 1 || (watching && (optind != argc - 1 || output)) ||
	    (interval > 0 && !watching)) {
		fputs(status_usage, stderr);
		return KCTL_EXIT_USAGE;
	}
	if (watching)
		return status_watch(state, argv[optind], interval > 0 ? interval : 1.0);
	if (!(st = cmd_open_store_read(state)))
		return KCTL_EXIT_INFRA;
	if (optind == argc - 1) {
		char *id = cmd_session_id(st, argv[optind]);

		if (id)
			refresh_report(st, id);
		out = id ? session_status_json(st, id) : NULL;
		if (out)
			add_cluster(out);
		if (!out && store_check(st, msg, sizeof(msg))) {
			log_error("%s", msg);
			free(id);
			store_close(st);
			return KCTL_EXIT_INFRA;
		}
		if (id && !out)
			log_error("no session '%s'", id);
		free(id);
		if (!out) {
			store_close(st);
			return KCTL_EXIT_FAIL;
		}
	} else {
		json_t *list = store_session_list(st), *row;
		size_t i;

		out = json_array();
		json_array_foreach (list, i, row)
			refresh_report(st, json_string_value(json_object_get(row, "id")));
		json_array_foreach (list, i, row) {
			json_t *one = session_status_json(
				st, json_string_value(json_object_get(row, "id")));

			if (one)
				add_cluster(one);
			json_array_append_new(out, one);
		}
		json_decref(list);
	}
	/* a read that failed is never shown as "no sessions" or a partial list */
	if (store_check(st, msg, sizeof(msg))) {
		log_error("%s", msg);
		json_decref(out);
		store_close(st);
		return KCTL_EXIT_INFRA;
	}
	if (as_json) {
		char *text = jx_dump(out);

		fputs(text, stdout);
		free(text);
	} else if (json_is_array(out)) {
		size_t i;
		json_t *one;

		if (!json_array_size(out))
			printf("no sessions yet: kctl start SPEC\n");
		json_array_foreach (out, i, one)
			print_one(one, state);
	} else {
		print_one(out, state);
	}
	json_decref(out);
	store_close(st);
	return rc;
}
