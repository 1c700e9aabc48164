/*
 * test-progress.c - unit tests for controller/progress.c: the ETA
 * arithmetic, the bar, durations, the live and plain lines (width
 * clamping, NO_COLOR, zero totals), the terminal's size, and how far a
 * round has got read from a store and a session folder made here.
 */
#include "err.h"
#include "fileio.h"
#include "progress.h"
#include "sbuf.h"
#include "store.h"
#include "xalloc.h"

#include "test.h"

#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/test-progress.XXXXXX";
static char msg[1024];

/* --- arithmetic and drawing ------------------------------------------------------- */

TEST(eta_is_the_rate_so_far)
{
	static const struct {
		int done, total;
		double elapsed, want; /* NAN: unknown */
	} cases[] = {
		{ 0, 8, 10, NAN },  /* nothing in yet */
		{ 4, 8, 10, 10 },   /* half in 10 s: 10 s more */
		{ 1, 3, 6, 12 },    /* 6 s each */
		{ 8, 8, 10, 0 },    /* all in */
		{ 9, 8, 10, 0 },    /* more than all: never negative */
		{ 0, 0, 5, 0 },     /* an empty round is over */
		{ 2, 8, -1, NAN },  /* a clock that went back */
		{ 2, 8, NAN, NAN }, /* no start known */
		{ -1, 8, 10, NAN }, /* a count below zero */
		{ 1, 1000, 0.5, 499.5 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double got = progress_eta(cases[i].done, cases[i].total, cases[i].elapsed);

		if (isnan(cases[i].want))
			CHECK(isnan(got));
		else
			CHECK(fabs(got - cases[i].want) < 1e-9);
		if (isnan(cases[i].want) != isnan(got) ||
		    (!isnan(got) && fabs(got - cases[i].want) >= 1e-9))
			fprintf(stderr, "  case %zu: got %g\n", i, got);
	}
}

TEST(bar_fills_its_share_rounded_down)
{
	static const struct {
		int done, total, cells;
		const char *want;
	} cases[] = {
		{ 0, 8, 10, "[..........]" },
		{ 4, 8, 10, "[#####.....]" },
		{ 7, 8, 10, "[########..]" }, /* 8.75 cells: full only when all are done */
		{ 8, 8, 10, "[##########]" },
		{ 9, 8, 4, "[####]" },  /* done clamped to total */
		{ -3, 8, 4, "[....]" }, /* and to zero */
		{ 3, 0, 4, "[....]" },  /* zero total: empty */
		{ 0, 0, 4, "[....]" },
		{ 1, 1, 0, "[]" },
		{ 1, 3, -2, "[]" },
		{ 1, 3, 1, "[.]" },
		{ 2000000000, 2000000000, 3, "[###]" }, /* no overflow on the product */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sbuf b = SBUF_INIT;

		progress_bar(&b, cases[i].done, cases[i].total, cases[i].cells);
		CHECK_STR(b.buf, cases[i].want);
		sbuf_release(&b);
	}
}

TEST(durations)
{
	static const struct {
		double s;
		const char *want;
	} cases[] = {
		{ 0, "0 s" },           { 12.4, "12 s" },      { 59.4, "59 s" },
		{ 59.6, "1 min 00 s" }, { 245, "4 min 05 s" }, { 3600, "1 h 00 min" },
		{ 7620, "2 h 07 min" }, { -1, "-" },           { NAN, "-" },
		{ INFINITY, "-" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sbuf b = SBUF_INIT;

		progress_duration(&b, cases[i].s);
		CHECK_STR(b.buf, cases[i].want);
		sbuf_release(&b);
	}
}

static struct progress running(int done, int failed, int total)
{
	struct progress p = { .round = 3,
			      .state = ROUND_RUNNING,
			      .total = total,
			      .done = done,
			      .failed = failed,
			      .elapsed_s = 40,
			      .phase = "checking" };

	p.eta_s = progress_eta(done, total, p.elapsed_s);
	return p;
}

TEST(plain_lines)
{
	struct progress p = running(5, 1, 8), end = running(8, 2, 8), zero = running(0, 0, 0);
	struct sbuf b = SBUF_INIT;

	progress_plain(&b, &p);
	CHECK_STR(b.buf, "round 3: 5/8 evaluated, 1 failed, ETA 24 s");
	sbuf_reset(&b);
	end.state = ROUND_DONE;
	end.elapsed_s = 52;
	end.confirm = 1;
	progress_plain(&b, &end);
	CHECK_STR(b.buf, "round 3 (confirmation): 8/8 evaluated, 2 failed, took 52 s");
	sbuf_reset(&b);
	p = running(0, 0, 8);
	progress_plain(&b, &p);
	CHECK_STR(b.buf, "round 3: 0/8 evaluated, 0 failed, ETA -");
	sbuf_reset(&b);
	progress_plain(&b, &zero);
	CHECK_STR(b.buf, "round 3: 0/0 evaluated, 0 failed, ETA 0 s");
	sbuf_release(&b);
}

TEST(live_line_fits_every_width)
{
	struct progress p = running(5, 1, 8);
	static const int widths[] = { 0, 10, 20, 40, 60, 72, 80, 120, 300 };

	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++) {
		struct sbuf b = SBUF_INIT;
		int w = widths[i] < 20 ? 20 : widths[i];

		progress_line(&b, &p, widths[i], 0);
		CHECK(b.len > 0 && b.len <= (size_t)w - 1);
		CHECK(!strchr(b.buf, '\n') && !strchr(b.buf, '\033'));
		CHECK(!strncmp(b.buf, "round 3 checking ",
			       (size_t)w - 1 < 17 ? (size_t)w - 1 : 17));
		if (widths[i] >= 80) /* room for the bar and every word */
			CHECK_CONTAINS(b.buf, "] 5/8 evaluated, 1 failed, 40 s, ETA 24 s");
		if (widths[i] <= 60) /* no room for a bar of 5 cells: none */
			CHECK(!strchr(b.buf, '['));
		if (widths[i] >= 120) /* the bar stops growing */
			CHECK_CONTAINS(b.buf, "[##################............]");
		sbuf_release(&b);
	}
}

TEST(live_line_colours_only_when_asked)
{
	struct progress p = running(5, 1, 8), ok = running(5, 0, 8), none = running(0, 0, 8);
	struct sbuf b = SBUF_INIT;

	progress_line(&b, &p, 100, 1);
	CHECK_CONTAINS(b.buf, "[\033[32m#");
	CHECK_CONTAINS(b.buf, "\033[31m1 failed\033[0m");
	/* colour never costs a column */
	CHECK(progress_visible(b.buf) <= 99);
	sbuf_reset(&b);
	progress_line(&b, &ok, 100, 1);
	CHECK(!strstr(b.buf, "\033[31m")); /* nothing failed: nothing red */
	sbuf_reset(&b);
	progress_line(&b, &none, 100, 1);
	CHECK(!strstr(b.buf, "\033[32m")); /* nothing done: nothing green */
	sbuf_reset(&b);
	progress_line(&b, &p, 100, 0);
	CHECK(!strchr(b.buf, '\033'));
	sbuf_reset(&b);
	progress_line(&b, &p, 30, 1); /* cut: plain, never an escape cut in half */
	CHECK(!strchr(b.buf, '\033') && b.len == 29);
	sbuf_release(&b);
}

TEST(live_line_zero_total)
{
	struct progress p = running(0, 0, 0);
	struct sbuf b = SBUF_INIT;

	progress_line(&b, &p, 100, 1);
	CHECK_CONTAINS(b.buf, "[.");
	CHECK_CONTAINS(b.buf, "] 0/0 evaluated, 0 failed");
	CHECK(!strchr(b.buf, '#'));
	sbuf_release(&b);
}

TEST(visible_width)
{
	CHECK(progress_visible("") == 0);
	CHECK(progress_visible("abc") == 3);
	CHECK(progress_visible("[\033[32m##\033[0m..]") == 6);
	CHECK(progress_visible("\033[31") == 0); /* an unfinished sequence takes nothing */
}

TEST(incumbent)
{
	json_t *w = json_pack("{s:s, s:f}", "variant", "r02-v004", "speedup_vs_reference", 1.8412);
	struct sbuf b = SBUF_INIT;

	progress_incumbent(&b, w);
	CHECK_STR(b.buf, "incumbent r02-v004 1.84x");
	sbuf_reset(&b);
	progress_incumbent(&b, NULL);
	CHECK_STR(b.buf, "no incumbent yet");
	json_decref(w);
	sbuf_release(&b);
}

/* --- the terminal -------------------------------------------------------------- */

TEST(terminal_size_and_colour)
{
	int fds[2], master = posix_openpt(O_RDWR | O_NOCTTY), slave = -1;
	struct winsize ws = { .ws_row = 33, .ws_col = 57 };

	CHECK(pipe(fds) == 0);
	/* not a terminal: $COLUMNS and $LINES, else 80 by 24; never colour */
	setenv("COLUMNS", "91", 1);
	setenv("LINES", "17", 1);
	CHECK(progress_columns(fds[0]) == 91 && progress_rows(fds[0]) == 17);
	setenv("COLUMNS", "wide", 1);
	unsetenv("LINES");
	CHECK(progress_columns(fds[0]) == 80 && progress_rows(fds[0]) == 24);
	unsetenv("COLUMNS");
	CHECK(progress_columns(fds[0]) == 80);
	unsetenv("NO_COLOR");
	CHECK(!progress_color(fds[1]));
	if (master >= 0 && !grantpt(master) && !unlockpt(master))
		slave = open(ptsname(master), O_RDWR | O_NOCTTY);
	if (slave < 0) {
		fprintf(stderr, "  no pseudo-terminal here: its part skipped\n");
	} else {
		/* a terminal: its own size first */
		setenv("COLUMNS", "91", 1);
		CHECK(ioctl(slave, TIOCSWINSZ, &ws) == 0);
		CHECK(progress_columns(slave) == 57 && progress_rows(slave) == 33);
		CHECK(progress_color(slave));
		setenv("NO_COLOR", "1", 1);
		CHECK(!progress_color(slave));
		setenv("NO_COLOR", "", 1); /* set but empty: as if unset */
		CHECK(progress_color(slave));
		unsetenv("NO_COLOR");
		unsetenv("COLUMNS");
		close(slave);
	}
	if (master >= 0)
		close(master);
	close(fds[0]);
	close(fds[1]);
}

/* --- reading a round -------------------------------------------------------------- */

static void write_file(const char *dir, const char *name, const char *text)
{
	char *path = xasprintf("%s/%s", dir, name);

	CHECK(file_write_atomic(path, text, strlen(text), msg, sizeof(msg)) == 0);
	free(path);
}

static void add_variant(struct store *st, const char *id, int round)
{
	json_t *v = json_pack("{s:s, s:s, s:i, s:s, s:{s:i}}", "id", id, "hash", id, "round", round,
			      "source", "kernel void k() {}", "params", "U", 1);

	CHECK(store_variant_add(st, "s", v, msg, sizeof(msg)) == 0);
	json_decref(v);
}

/* A store with session "s": round 1 of three variants, in state. */
static struct store *round_store(const char *db, const char *sdir, int state)
{
	struct store *st = NULL;

	CHECK(store_open(db, &st, msg, sizeof(msg)) == 0);
	CHECK(store_begin(st, msg, sizeof(msg)) == 0);
	CHECK(store_session_create(st, "s", "spec.yaml", "h", sdir, msg, sizeof(msg)) == 0);
	CHECK(store_round_create(st, "s", 0, "baseline", msg, sizeof(msg)) == 0);
	add_variant(st, "r00-start", 0);
	CHECK(store_round_create(st, "s", 1, "explore", msg, sizeof(msg)) == 0);
	add_variant(st, "r01-v001", 1);
	add_variant(st, "r01-v002", 1);
	add_variant(st, "r01-v003", 1);
	CHECK(store_round_set_state(st, "s", 1, (enum round_state)state, msg, sizeof(msg)) == 0);
	CHECK(store_commit(st, msg, sizeof(msg)) == 0);
	return st;
}

TEST(round_read_from_the_log_and_the_results)
{
	char *db = xasprintf("%s/run.db", tmpdir), *sdir = xasprintf("%s/run", tmpdir);
	char *rdir = xasprintf("%s/rounds/r001", sdir), *res = xasprintf("%s/results", rdir);
	struct store *st;
	struct progress p;

	CHECK(dir_make(res, msg, sizeof(msg)) == 0);
	st = round_store(db, sdir, ROUND_RUNNING);
	/* nothing written yet */
	CHECK(progress_read(st, "s", sdir, 1, 1e9, &p, msg, sizeof(msg)) == 0);
	CHECK(p.total == 3 && p.done == 0 && p.failed == 0 && isnan(p.eta_s));
	CHECK_STR(p.phase, "evaluating");
	/* an earlier run's lines do not count; the baseline's (r00-start) is not the round's */
	write_file(rdir, "evalpod.log",
		   "kctl: evalpod run b.json evaluates: r01-v001 r01-v002 r01-v003\n"
		   "evalpod: checked r01-v001 (1 of 4, 1.0 s)\n"
		   "evalpod: r01-v001 failed its checks: crash (candidate)\n"
		   "kctl: evalpod run b-1.json evaluates: r01-v002 r01-v003\n"
		   "evalpod: checking 3 programs, 2 at a time\n"
		   "evalpod: checked r00-start (1 of 3, 0.7 s)\n"
		   "evalpod: checked r01-v002 (2 of 3, 0.7 s)\n"
		   "evalpod: checked r01-v0");
	CHECK(progress_read(st, "s", sdir, 1, 1e9, &p, msg, sizeof(msg)) == 0);
	CHECK(p.done == 1 && p.failed == 0 && p.total == 3);
	CHECK_STR(p.phase, "checking");
	/* a result already in from the first run counts, with its status */
	write_file(res, "r01-v001.json", "{\"status\": \"crash\"}");
	write_file(rdir, "evalpod.log",
		   "kctl: evalpod run b-1.json evaluates: r01-v002 r01-v003\n"
		   "evalpod: checked r01-v002 (1 of 2, 0.7 s)\n"
		   "evalpod: checked r01-v003 (2 of 2, 0.7 s)\n"
		   "evalpod: r01-v003 failed its checks: incorrect (candidate)\n"
		   "evalpod: timing 1 programs with the reference, interleaved\n");
	CHECK(progress_read(st, "s", sdir, 1, 1e9, &p, msg, sizeof(msg)) == 0);
	CHECK(p.done == 3 && p.failed == 2 && p.eta_s == 0);
	CHECK_STR(p.phase, "timing");
	/* elapsed counts from batch.json; the ETA is the rate so far */
	write_file(rdir, "evalpod.log",
		   "kctl: evalpod run b.json evaluates: r01-v001 r01-v002 r01-v003\n"
		   "evalpod: checked r01-v002 (1 of 3, 0.7 s)\n");
	write_file(rdir, "batch.json", "{}");
	{
		char *bp = xasprintf("%s/batch.json", rdir),
		     *gone = xasprintf("%s/r01-v001.json", res);
		struct stat sb;
		double t;

		CHECK(stat(bp, &sb) == 0);
		t = (double)sb.st_mtim.tv_sec + (double)sb.st_mtim.tv_nsec / 1e9;
		CHECK(unlink(gone) == 0);
		CHECK(progress_read(st, "s", sdir, 1, t + 30, &p, msg, sizeof(msg)) == 0);
		CHECK(p.done == 1 && fabs(p.elapsed_s - 30) < 1e-6 && fabs(p.eta_s - 60) < 1e-6);
		free(gone);
		free(bp);
	}
	/* an unknown round */
	CHECK(progress_read(st, "s", sdir, 7, 1e9, &p, msg, sizeof(msg)) == KERR_NOTFOUND);
	CHECK_CONTAINS(msg, "no round 7");
	store_close(st);
	free(db);
	free(sdir);
	free(rdir);
	free(res);
}

TEST(collected_round_read_from_the_store)
{
	char *db = xasprintf("%s/coll.db", tmpdir), *sdir = xasprintf("%s/coll", tmpdir);
	struct store *st = round_store(db, sdir, ROUND_RUNNING);
	json_t *ok = json_pack("{s:s}", "status", "ok"),
	       *bad = json_pack("{s:s}", "status", "timeout");
	struct progress p;

	CHECK(store_begin(st, msg, sizeof(msg)) == 0);
	CHECK(store_result_add(st, "s", "r01-v001", ok, msg, sizeof(msg)) == 0);
	CHECK(store_result_add(st, "s", "r01-v002", bad, msg, sizeof(msg)) == 0);
	CHECK(store_result_add(st, "s", "r01-v003", ok, msg, sizeof(msg)) == 0);
	CHECK(store_round_set_state(st, "s", 1, ROUND_COLLECTED, msg, sizeof(msg)) == 0);
	CHECK(store_commit(st, msg, sizeof(msg)) == 0);
	/* no folder at all: the store says it */
	CHECK(progress_read(st, "s", sdir, 1, 1e12, &p, msg, sizeof(msg)) == 0);
	CHECK(p.total == 3 && p.done == 3 && p.failed == 1 && p.eta_s == 0);
	CHECK_STR(p.phase, "ranking");
	CHECK(store_begin(st, msg, sizeof(msg)) == 0);
	CHECK(store_round_set_state(st, "s", 1, ROUND_DONE, msg, sizeof(msg)) == 0);
	CHECK(store_commit(st, msg, sizeof(msg)) == 0);
	CHECK(progress_read(st, "s", sdir, 1, 1e12, &p, msg, sizeof(msg)) == 0);
	CHECK_STR(p.phase, "done");
	CHECK(p.elapsed_s >= 0 && p.elapsed_s < 3600); /* started to finished, not to now */
	/* round 0, proposed: nothing run yet */
	CHECK(progress_read(st, "s", sdir, 0, 1e12, &p, msg, sizeof(msg)) == 0);
	CHECK(p.total == 1 && p.done == 0);
	CHECK_STR(p.phase, "starting");
	json_decref(ok);
	json_decref(bad);
	store_close(st);
	free(db);
	free(sdir);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(eta_is_the_rate_so_far);
	RUN(bar_fills_its_share_rounded_down);
	RUN(durations);
	RUN(plain_lines);
	RUN(live_line_fits_every_width);
	RUN(live_line_colours_only_when_asked);
	RUN(live_line_zero_total);
	RUN(visible_width);
	RUN(incumbent);
	RUN(terminal_size_and_colour);
	RUN(round_read_from_the_log_and_the_results);
	RUN(collected_round_read_from_the_store);
	dir_remove_tree(tmpdir);
	return test_summary();
}
