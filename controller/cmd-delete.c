/*
 * kctl delete SESSION [--force] [--state FILE]: removes a session's rows
 * from the state database and its output folder, and says what went.
 *
 * A session a kctl is driving (its session.lock is held) is never deleted.
 * A session recorded as running whose kctl is gone (killed) needs --force:
 * without it the command refuses, because "running" usually means someone
 * is still at work on it.  So does a paused (interrupted) session on the
 * kubernetes backend, whose Jobs go on running in the cluster: `kctl
 * cancel` deletes them.  The rows go first, in one transaction; a folder
 * that cannot be removed afterwards is reported and left for the user.
 */
#include "backend.h"
#include "cmds.h"
#include "log.h"
#include "session.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static const char delete_usage[] = "usage: kctl delete SESSION [--force] [--state FILE]\n";

/* What nftw() removed, and the first failure (nftw callbacks take no argument). */
static struct {
	long files;
	int err;
	char path[1024];
} removal;

static int remove_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	int rc = type == FTW_DP ? rmdir(path) : unlink(path);

	if (rc && !removal.err) {
		removal.err = errno;
		snprintf(removal.path, sizeof(removal.path), "%s", path);
	}
	removal.files += !rc && type != FTW_DP;
	return 0;
}

/*
 * Removes dir and all in it, without following symbolic links.  Only a
 * folder named after the session is removed: a damaged row must not point
 * the command at a home directory.  Returns 0 (1 when dir was gone
 * already) or -1 with the reason logged.
 */
static int remove_dir(const char *dir, const char *id)
{
	const char *base = strrchr(dir, '/');
	struct stat sb;

	base = base ? base + 1 : dir;
	if (lstat(dir, &sb) && errno == ENOENT)
		return 1;
	if (strcmp(base, id) || !S_ISDIR(sb.st_mode)) {
		log_error("not removing '%s': it is not a folder named after session %s", dir, id);
		return -1;
	}
	memset(&removal, 0, sizeof(removal));
	if (nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS) || removal.err) {
		log_error("removing the output folder '%s': '%s': %s", dir,
			  removal.err ? removal.path : dir,
			  strerror(removal.err ? removal.err : errno));
		return -1;
	}
	return 0;
}

/*
 * Takes the session's lock, as a kctl driving it holds it; returns its fd,
 * -2 when the folder is gone (nothing to lock), -1 when another holds it.
 */
static int lock_session(const char *dir, const char *id)
{
	char *path = xasprintf("%s/session.lock", dir);
	int fd = open(path, O_RDWR | O_CLOEXEC);

	free(path);
	if (fd < 0)
		return -2;
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		close(fd);
		log_error("session %s is being driven by a kctl right now: stop it first "
			  "(kctl cancel %s)",
			  id, id);
		return -1;
	}
	return fd;
}

/* Deletes the rows of session id in one transaction; logs on failure. */
static int delete_rows(struct store *st, const char *id, int64_t *rows)
{
	char msg[1024];
	int rc = store_begin(st, msg, sizeof(msg));

	if (!rc && (rc = store_session_delete(st, id, rows, msg, sizeof(msg))))
		store_rollback(st);
	else if (!rc && (rc = store_commit(st, msg, sizeof(msg))))
		store_rollback(st);
	if (rc)
		log_error("%s", msg);
	return rc;
}

/*
 * Whether session row runs on the kubernetes backend (its spec says so);
 * a spec that cannot be read any more says nothing (0, with a warning).
 */
static int on_kubernetes(json_t *row, struct spec *spec)
{
	const char *path = json_string_value(json_object_get(row, "spec_path"));
	char msg[1024];

	if (!path)
		return 0;
	if (spec_load(spec, path, msg, sizeof(msg))) {
		log_warn("cannot read the session's spec to see where it ran: %s", msg);
		return 0;
	}
	return spec->backend == BACKEND_KUBERNETES;
}

/*
 * A session whose Jobs may still run in a cluster: running, or paused by
 * an interrupt (the Jobs keep going for a resume to collect).  Refused
 * without force; with it, a warning names what may remain.
 */
static int refuse_live_jobs(json_t *row, const char *id, const char *state, const char *dir,
			    int force)
{
	struct spec spec = { 0 };
	int refuse = 0;

	if ((!strcmp(state, "running") || !strcmp(state, "paused")) && on_kubernetes(row, &spec)) {
		if (!force) {
			log_error("session %s runs on Kubernetes and is %s: its Jobs may still run "
				  "in the cluster; cancel it first (kctl cancel %s deletes them), "
				  "or add --force to delete it anyway",
				  id, state, id);
			refuse = 1;
		} else {
			char *left = backend_of(&spec)->leftovers(&spec, id, dir);

			log_warn("deleting session %s (%s on Kubernetes) anyway (--force); %s", id,
				 state, left);
			free(left);
		}
	}
	spec_release(&spec);
	return refuse;
}

static int delete_session(struct store *st, const char *id, int force)
{
	json_t *row = store_session_get(st, id);
	const char *state = json_string_value(json_object_get(row, "state"));
	const char *dir = json_string_value(json_object_get(row, "output_dir"));
	int fd = -2, rc = KCTL_EXIT_FAIL;
	int64_t rows = 0;

	if (!row || !state || !dir) {
		log_error("no session '%s'", id);
		goto out;
	}
	if ((fd = lock_session(dir, id)) == -1)
		goto out;
	if (refuse_live_jobs(row, id, state, dir, force))
		goto out;
	if (!strcmp(state, "running") && !force) {
		log_error("session %s is recorded as running: cancel it first (kctl cancel %s), "
			  "or add --force if the kctl that drove it is gone",
			  id, id);
		goto out;
	}
	if (delete_rows(st, id, &rows))
		goto out;
	printf("deleted session %s (%s): %lld rows from the state database\n", id, state,
	       (long long)rows);
	switch (remove_dir(dir, id)) {
	case 0:
		printf("removed its output folder %s (%ld files)\n", dir, removal.files);
		rc = KCTL_EXIT_OK;
		break;
	case 1:
		printf("its output folder %s was gone already\n", dir);
		rc = KCTL_EXIT_OK;
		break;
	}
out:
	if (fd >= 0)
		close(fd);
	json_decref(row);
	return rc;
}

int cmd_delete(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "state", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	const char *state = NULL;
	int c, force = 0, rc;
	struct store *st;
	char *id;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'f') {
			force = 1;
		} else if (c == 'S') {
			state = optarg;
		} else {
			fputs(delete_usage, stderr);
			return KCTL_EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fputs(delete_usage, stderr);
		return KCTL_EXIT_USAGE;
	}
	if (!(st = cmd_open_store(state)))
		return KCTL_EXIT_INFRA;
	id = cmd_session_id(st, argv[optind]);
	rc = id ? delete_session(st, id, force) : KCTL_EXIT_FAIL;
	free(id);
	store_close(st);
	return rc;
}
