/*
 * services.h - what any layer of a session may ask of it (services.c):
 * interruption by a signal, cancellation by `kctl cancel`, the end of a
 * step's transaction, and the crash hook of the tests.  It sits below the
 * steps, the backends and the proposers, and uses only the store.
 */
#ifndef KCTL_SERVICES_H
#define KCTL_SERVICES_H

#include "store.h"

struct session;

/* The signal (SIGINT/SIGTERM) that interrupted an evaluation, or 0. */
int round_interrupted(void);
/* The handler that records it (async-signal-safe). */
void session_note_signal(int sig);

/* Whether `kctl cancel` has marked the session cancelled. */
int session_cancelled(struct session *s);

/*
 * Ends the transaction of one step of round r: when rc is 0, moves the
 * round to state and commits, then passes the crash point; otherwise rolls
 * back.  Returns rc or the commit's error.
 */
int round_step_end(struct session *s, int round, enum round_state state, const char *point, int rc,
		   char *msg, size_t n);

/*
 * Test hook for the crash-safety tests: when $KCTL_TEST_CRASH_AT is
 * "POINT:ROUND" (or "POINT" for any round), kctl kills itself with SIGKILL
 * at that point, as a power cut would.  Points: proposed, packed, spawned,
 * collected, ranked, ended (the session's final state committed, its
 * report not yet rewritten; its round is the session's last), posted
 * (GitHub took a tracking post, not yet recorded as sent; its round is the
 * round the post is about, -1 for none).
 */
void crash_point(const char *point, int round);

#endif
