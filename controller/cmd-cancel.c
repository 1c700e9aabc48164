/*
 * kctl cancel SESSION [--force] [--state FILE]: on the kubernetes backend
 * deletes the session's Jobs first (a failure leaves the session as it
 * was, so cancel can be run again; with --force, for a cluster gone for
 * good, the session is cancelled anyway and the Jobs that may remain are
 * named with the kubectl command that removes them), then marks the
 * session cancelled and asks the evalpod of its running round, if any, to
 * stop (it writes what it has).  A kctl driving the session stops when
 * that evalpod ends (or, if none was running, before its next round).
 */
#include "cmds.h"
#include "backend.h"
#include "err.h"
#include "log.h"
#include "session.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether pid is still an evalpod (pids are reused: never signal a stranger). */
static int is_evalpod(long pid)
{
	char path[64], cmd[4096];
	FILE *f;
	size_t got;

	snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	got = fread(cmd, 1, sizeof(cmd) - 1, f);
	fclose(f);
	cmd[got] = '\0';
	return strstr(cmd, "evalpod") != NULL;
}

static const char cancel_usage[] = "usage: kctl cancel SESSION [--force] [--state FILE]\n";

/*
 * On the kubernetes backend the session's Jobs are deleted (their pods
 * with them); a kctl driving the session sees the cancellation too.  With
 * force a failed delete is a warning naming what may remain (returns 0).
 */
static int cancel_jobs(json_t *row, const char *id, int force, char *msg, size_t n)
{
	const char *path = json_string_value(json_object_get(row, "spec_path"));
	const char *dir = json_string_value(json_object_get(row, "output_dir"));
	struct spec spec = { 0 };
	const struct backend *b = NULL;
	int rc = path ? spec_load(&spec, path, msg, n) : 0;

	if (rc) {
		log_warn("cannot read the session's spec to find its Jobs: %s", msg);
		rc = 0;
	} else if (path && (b = backend_of(&spec))->cancel) {
		rc = b->cancel(&spec, id, msg, n);
		if (!rc) {
			fprintf(stderr, "deleted the session's Kubernetes Jobs\n");
		} else if (force) {
			char *left = b->leftovers(&spec, id, dir ? dir : "");

			log_warn("%s", msg);
			log_warn("cancelling session %s anyway (--force); %s", id, left);
			free(left);
			rc = 0;
		}
	}
	spec_release(&spec);
	return rc;
}

int cmd_cancel(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "state", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	const char *state = NULL;
	struct store *st;
	json_t *row, *round;
	char msg[1024], *id;
	int rc, c, force = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'f') {
			force = 1;
		} else if (c == 'S') {
			state = optarg;
		} else {
			fputs(cancel_usage, stderr);
			return KCTL_EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fputs(cancel_usage, stderr);
		return KCTL_EXIT_USAGE;
	}
	if (!(st = cmd_open_store(state)))
		return KCTL_EXIT_INFRA;
	if (!(id = cmd_session_id(st, argv[optind]))) {
		store_close(st);
		return KCTL_EXIT_FAIL;
	}
	row = store_session_get(st, id);
	if (!row) {
		log_error("no session '%s'", id);
		store_close(st);
		free(id);
		return KCTL_EXIT_FAIL;
	}
	/* The Jobs go first: a session marked cancelled whose Jobs could not be
	   deleted could no longer be resumed, and nothing would follow its Jobs. */
	rc = cancel_jobs(row, id, force, msg, sizeof(msg));
	if (rc) {
		const char *was = json_string_value(json_object_get(row, "state"));

		log_error("%s", msg);
		log_error("session %s is not cancelled (still %s): fix that and run 'kctl cancel "
			  "%s' again, or 'kctl cancel %s --force' if the cluster is gone for good",
			  id, was ? was : "as it was", id, id);
		json_decref(row);
		store_close(st);
		free(id);
		return KCTL_EXIT_FAIL;
	}
	rc = store_begin(st, msg, sizeof(msg));
	if (!rc)
		rc = store_session_set_state(st, id, "cancelled", "cancelled by the user", msg,
					     sizeof(msg));
	if (rc)
		store_rollback(st);
	else
		rc = store_commit(st, msg, sizeof(msg));
	round = store_round_get(st, id, store_round_last(st, id));
	if (!rc && round && json_integer_value(json_object_get(round, "state")) == ROUND_RUNNING) {
		long pid = (long)json_integer_value(json_object_get(round, "pid"));

		if (pid > 1 && is_evalpod(pid) && kill((pid_t)pid, SIGTERM) == 0)
			fprintf(stderr, "asked evalpod (pid %ld) to stop\n", pid);
	}
	if (rc)
		log_error("%s", msg);
	else
		printf("session %s cancelled\n", id);
	json_decref(round);
	json_decref(row);
	store_close(st);
	free(id);
	return rc ? KCTL_EXIT_FAIL : KCTL_EXIT_OK;
}
