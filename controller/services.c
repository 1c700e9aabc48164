/*
 * services.c - what every layer of a session may ask of it, whatever its
 * place: whether kctl was interrupted, whether the session was cancelled,
 * the end of a step's transaction and the crash hook of the tests.  It
 * uses the store only, so that the steps (round.c, rank.c, confirm.c), the
 * backends (kround*.c, backend-local.c, evalrun.c) and the loop all call
 * down into it.
 */
#include "services.h"
#include "session.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t interrupted_by;

int round_interrupted(void)
{
	return interrupted_by;
}

void session_note_signal(int sig)
{
	interrupted_by = sig;
}

int round_step_end(struct session *s, int round, enum round_state state, const char *point, int rc,
		   char *msg, size_t n)
{
	if (!rc)
		rc = store_round_set_state(s->st, s->id, round, state, msg, n);
	if (rc)
		store_rollback(s->st);
	else
		rc = store_commit(s->st, msg, n);
	if (!rc)
		crash_point(point, round);
	return rc;
}

void crash_point(const char *point, int round)
{
	const char *want = getenv("KCTL_TEST_CRASH_AT");
	char here[64];

	if (!want || !*want)
		return;
	snprintf(here, sizeof(here), "%s:%d", point, round);
	if (!strcmp(want, point) || !strcmp(want, here))
		kill(getpid(), SIGKILL);
}

int session_cancelled(struct session *s)
{
	json_t *row = store_session_get(s->st, s->id);
	const char *st = json_string_value(json_object_get(row, "state"));
	int c = st && !strcmp(st, "cancelled");

	json_decref(row);
	return c;
}
