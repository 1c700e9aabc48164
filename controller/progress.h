/*
 * progress.h - how far a round has got, read from what a running session
 * leaves behind, and the lines that show it (progress.c).  `kctl status
 * --watch` (cmd-status.c) and the live line of `kctl start` / `kctl
 * resume` on a terminal (evalrun.c) share it.
 *
 * Reading never takes a lock and never writes: a watcher must not disturb
 * the kctl that drives the session.  What it reads:
 *   - the round's row and variants in the store (no new schema);
 *   - rounds/rNNN/results/ID.json, the result evalpod wrote for a program;
 *   - rounds/rNNN/evalpod.log after its last "kctl: evalpod run" note: the
 *     "evalpod: checked ID" line of each program whose checks have ended,
 *     "evalpod: ID failed its checks", and "evalpod: timing ..." (local
 *     backend only: on Kubernetes the counts move when the results are
 *     fetched at the end of the round);
 *   - the modification time of rounds/rNNN/batch.json (when evaluation
 *     began).
 * A program counts as evaluated once its result is in or its checks have
 * ended (a program that passed them is timed with the others afterwards:
 * the phase then says "timing").
 */
#ifndef KCTL_PROGRESS_H
#define KCTL_PROGRESS_H

#include <jansson.h>
#include <stddef.h>

struct sbuf;
struct store;

struct progress {
	int round;         /* the round this is about */
	int state;         /* its enum round_state */
	int confirm;       /* 1: a confirmation's pass re-timing candidates */
	int total;         /* programs the round evaluates */
	int done;          /* of them, evaluated (0 <= done <= total) */
	int failed;        /* of the evaluated, not ok (0 <= failed <= done) */
	double elapsed_s;  /* since its evaluation began (batch.json), else since the round began */
	double eta_s;      /* progress_eta of the above; NAN when unknown */
	const char *phase; /* "starting", "evaluating", "checking", "timing", "ranking",
			    * "done" (static strings) */
};

/*
 * Reads round of session id, whose folder is dir, as of now (seconds since
 * the epoch), into *p.  Returns 0, KERR_NOTFOUND when the round does not
 * exist (msg says so), or KERR_IO when the store could not be read.
 */
int progress_read(struct store *st, const char *id, const char *dir, int round, double now,
		  struct progress *p, char *msg, size_t n);

/*
 * Seconds left for a round that has done of total programs evaluated in
 * elapsed_s seconds, at that rate: NAN before the first (done <= 0) or
 * with an elapsed time below zero, 0 once done >= total.
 */
double progress_eta(int done, int total, double elapsed_s);

/*
 * "[####......]": cells characters between the brackets (0: "[]"), the
 * share done/total of them filled with '#' (rounded down, so a bar is full
 * only when all are done), the rest '.'.  done is clamped to [0, total];
 * a total of 0 or below draws an empty bar.  Appends to b.
 */
void progress_bar(struct sbuf *b, int done, int total, int cells);

/* "12 s", "4 min 05 s", "2 h 07 min"; "-" for NAN or a negative value.  Appends to b. */
void progress_duration(struct sbuf *b, double s);

/*
 * The live line of a round for a terminal of width columns (below 20:
 * 20), without a newline: "round 3 checking [#####.....] 5/8 evaluated, 1
 * failed, 40 s, ETA 32 s".  The bar gets what the words leave (at most 30
 * cells; none when fewer than 5 are left), and the line is cut to width -
 * 1 columns so that it never wraps.  color: the bar's filled cells in
 * green and the failed count in red (ANSI SGR), never inside the cut.
 * Appends to b.
 */
void progress_line(struct sbuf *b, const struct progress *p, int width, int color);

/*
 * The plain line of a round, for a pipe or a log: "round 3: 5/8 evaluated,
 * 1 failed, ETA 32 s" (", took 52 s" for a finished round).  Appends to b.
 */
void progress_plain(struct sbuf *b, const struct progress *p);

/*
 * The incumbent for a line's end: "incumbent r02-v004 1.84x" from a
 * winner record (winner.h), or "no incumbent yet" for NULL.  Appends to b.
 */
void progress_incumbent(struct sbuf *b, json_t *winner);

/* The columns s takes on a terminal: its bytes less ANSI SGR sequences (ESC [ ... m). */
size_t progress_visible(const char *s);

/* Columns of the terminal on fd: TIOCGWINSZ, else $COLUMNS, else 80. */
int progress_columns(int fd);
/* Rows of the terminal on fd: TIOCGWINSZ, else $LINES, else 24. */
int progress_rows(int fd);
/* Whether to colour what goes to fd: a terminal, and $NO_COLOR unset or empty. */
int progress_color(int fd);

#endif
