/*
 * loop.h - driving a session (loop.c): creating or reopening it, running
 * it round after round until a stop rule fires, confirming its winner,
 * releasing it.  The commands (cmd-*.c) call it; it calls the steps
 * (round.h), the backends (backend.h) and the proposers (propose.h).
 */
#ifndef KCTL_LOOP_H
#define KCTL_LOOP_H

#include <stddef.h>

struct session;
struct store;

/* Path of the state database: explicit, else $KCTL_STATE_DIR/kctl.db, else
 * $XDG_STATE_HOME/kctl/kctl.db, else ~/.local/state/kctl/kctl.db (malloc'd). */
char *session_state_path(const char *explicit_path);

/*
 * Creates a new session for the spec at spec_path: loads the spec, checks
 * the evalpod binary and that it sees an OpenCL device, creates the folder
 * and the session row.  Returns 0 or a KERR_* code with msg.
 */
int session_create(struct session *s, struct store *st, const char *spec_path, char *msg, size_t n);

/* Re-opens an existing session by id (reloading its spec). */
int session_reopen(struct session *s, struct store *st, const char *id, char *msg, size_t n);

/* As session_reopen, but a done session too: for `kctl confirm`. */
int session_reopen_to_confirm(struct session *s, struct store *st, const char *id, char *msg,
			      size_t n);

/*
 * kctl resume --set KEY=VALUE: checks that KEY is one of the spec's limits
 * (limits.run_timeout_s, ...) and VALUE in its range, records the change in
 * the store (with the value it replaces and the time; later opens of the
 * session apply it over the spec) and applies it to s.  Call inside a store
 * transaction.  Returns 0 or KERR_INVALID / KERR_RANGE with msg.
 */
int session_set(struct session *s, const char *assignment, char *msg, size_t n);

/*
 * The checks of session_set alone, on no session: for the command line, so
 * a bad --set is a usage error whatever state its session is in.
 */
int session_set_check(const char *assignment, char *msg, size_t n);

void session_release(struct session *s);

/*
 * Drives the session until a stop rule fires, it is cancelled, or (--step)
 * the user declines to go on.  Resumable at any point.  Returns a
 * KCTL_EXIT_* status; msg says why on failure.
 */
int session_run(struct session *s, char *msg, size_t n);

/*
 * kctl confirm: re-times the session's top candidates side by side now
 * (confirm.c), then leaves the session as it was: a done session done with
 * the new verdict, a paused or failed one resumable.  Returns a KCTL_EXIT_*
 * status.
 */
int session_confirm(struct session *s, char *msg, size_t n);

/* One program of an evaluation: its variant id, full source and build options. */
struct eval_program {
	const char *id; /* "baseline", "kernel-1", ...: an evalpod id */
	const char *source;
	const char *options;
	const char *file; /* where it came from, for its rationale */
};

/*
 * kctl eval: records progs (the baseline first, then the kernels; no two
 * with the same source and options) as the variants of the session's
 * first round, of mode SESSION_EVAL_MODE, and has the session's backend
 * time them side by side in one batch with the first as the batch's
 * baseline (as a confirmation's pass does, with its measurement settings),
 * under the session's lock.  With passes > 1 that is done passes times,
 * rounds 0 to passes - 1, each its own batch and evalpod process.  The
 * results are recorded (each round COLLECTED) and stay under the rounds'
 * results/.  Returns a KCTL_EXIT_* status with msg on failure (130:
 * interrupted), the session then failed (or paused).
 */
int session_eval(struct session *s, const struct eval_program *progs, size_t nprogs, int passes,
		 char *msg, size_t n);

/* Ends an evaluated session with the verdict as its reason (and its rounds'): the rounds
 * DONE, the session done, its report written.  Returns a KCTL_EXIT_* status. */
int session_eval_end(struct session *s, const char *verdict, char *msg, size_t n);

/*
 * A finished (done) session whose report.md does not say so: a
 * kctl killed between recording the end and rewriting the report.  Reopens
 * the session (its spec) and rewrites learnings.md, best.cl and report.md.
 * Returns 1 when it rewrote them, 0 when they were up to date (or the
 * session is not finished), or a negative KERR_* code with msg.
 */
int session_report_refresh(struct store *st, const char *id, char *msg, size_t n);

#endif
