/*
 * backend-local.c - the local backend (backend.h): evalpod as a child of
 * kctl on this machine.  It finds the evalpod binary and checks that it
 * sees an OpenCL device when a session opens; an attempt packs what is
 * pending (pack.h), uploads the batch when the session hands off through
 * object storage (handoff.h), runs evalpod on it (evalrun.h) and reads
 * its exit status.  Uses the batch, the store and the session's services;
 * nothing of the loop or the round's steps.
 */
#include "backend.h"
#include "session.h"
#include "services.h"
#include "pack.h"
#include "evalrun.h"
#include "handoff.h"
#include "err.h"
#include "jsonx.h"
#include "log.h"
#include "sbuf.h"
#include "sigv4.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* --- the evalpod binary ------------------------------------------------------- */

static int is_exec(const char *path)
{
	struct stat st;

	return path && stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/*
 * The evalpod binary: the spec's evaluator.evalpod, else $KCTL_EVALPOD,
 * else next to kctl (installed side by side, or the build tree's
 * ../evalpod/evalpod), else the first on PATH.
 */
static char *find_evalpod(const struct spec *sp)
{
	char self[PATH_MAX], *cand;
	const char *env = getenv("KCTL_EVALPOD"), *path = getenv("PATH");
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (sp->evalpod)
		return xstrdup(sp->evalpod);
	if (env && *env)
		return xstrdup(env);
	if (len > 0) {
		char *slash;

		self[len] = '\0';
		slash = strrchr(self, '/');
		if (slash)
			*slash = '\0';
		cand = xasprintf("%s/evalpod", self);
		if (is_exec(cand))
			return cand;
		free(cand);
		cand = xasprintf("%s/../evalpod/evalpod", self);
		if (is_exec(cand))
			return cand;
		free(cand);
	}
	while (path && *path) {
		size_t seg = strcspn(path, ":");

		cand = xasprintf("%.*s/evalpod", (int)seg, path);
		if (is_exec(cand))
			return cand;
		free(cand);
		path += seg + (path[seg] == ':');
	}
	return xstrdup("evalpod");
}

/*
 * Runs `evalpod ARG [-o json]` in its explicit environment; its stdout (up
 * to 1 MiB) goes into out.  Returns the wait status, or -1 when it could not run.
 */
static int evalpod_capture(const char *evalpod, const char *arg, int json, struct sbuf *out)
{
	int fds[2], status = -1;
	char buf[4096], **envp;
	pid_t pid;
	ssize_t got;

	if (pipe2(fds, O_CLOEXEC))
		return -1;
	envp = evalrun_env(environ, NULL);
	pid = fork();
	if (pid == 0) {
		char *argv[] = { (char *)evalpod, (char *)arg, json ? "-o" : NULL, "json", NULL };

		dup2(fds[1], STDOUT_FILENO);
		execve(evalpod, argv, envp);
		_exit(127);
	}
	evalrun_env_free(envp);
	close(fds[1]);
	while (pid > 0 && (got = read(fds[0], buf, sizeof(buf))) > 0 && out->len < (1u << 20))
		sbuf_add(out, buf, (size_t)got);
	close(fds[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	return status;
}

/*
 * Runs `evalpod devices -o json`; returns 0 when it lists a device, with
 * *devices (may be NULL) the listing (a new reference).
 */
static int check_evalpod(const char *evalpod, json_t **devices, char *msg, size_t n)
{
	struct sbuf out = SBUF_INIT;
	json_t *doc;
	int status, rc = 0;

	if (!is_exec(evalpod))
		return kerr_set(msg, n, KERR_NOTFOUND,
				"evalpod not found at '%s': build it, put it on PATH, or set "
				"evaluator.evalpod in the spec or KCTL_EVALPOD",
				evalpod);
	status = evalpod_capture(evalpod, "devices", 1, &out);
	doc = out.len ? json_loads(out.buf, 0, NULL) : NULL;
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || !json_is_array(doc))
		rc = kerr_set(
			msg, n, KERR_NODEVICE,
			"'%s devices' found no OpenCL device (exit status %d): install an "
			"OpenCL driver (e.g. pocl-opencl-icd) and check with 'evalpod devices'",
			evalpod, status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	else if (!json_array_size(json_object_get(json_array_get(doc, 0), "devices")))
		rc = kerr_set(msg, n, KERR_NODEVICE,
			      "evalpod sees an OpenCL platform but no device");
	if (!rc && devices)
		*devices = json_incref(doc);
	json_decref(doc);
	sbuf_release(&out);
	return rc;
}

/*
 * The first line of `evalpod version` and the SHA-256 of the executable (a
 * new string), or NULL.  The version names the sources at the build's
 * configure time, and a dirty tree's edits not at all, so the bytes of the
 * binary are what tell a rebuilt evalpod from the one whose results the
 * cache holds.
 */
static char *evalpod_version(const char *evalpod)
{
	struct sbuf out = SBUF_INIT;
	int status = evalpod_capture(evalpod, "version", 0, &out);
	char *v = NULL, hex[65], msg[512];

	if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0 && out.len) {
		out.buf[strcspn(out.buf, "\n")] = '\0';
		if (*out.buf && !sigv4_sha256_file(evalpod, hex, NULL, msg, sizeof(msg)))
			v = xasprintf("%s sha256:%s", out.buf, hex);
		else if (*out.buf)
			log_warn("the result cache is off for this session: %s", msg);
	}
	sbuf_release(&out);
	return v;
}

/* The devices and evalpod's version are what the result cache's keys name (cache-use.h). */
static int local_check(struct session *s, char *msg, size_t n)
{
	int rc;

	s->evalpod = find_evalpod(&s->spec);
	json_decref(s->evalpod_devices);
	s->evalpod_devices = NULL;
	rc = check_evalpod(s->evalpod, &s->evalpod_devices, msg, n);
	free(s->evalpod_version);
	s->evalpod_version = rc ? NULL : evalpod_version(s->evalpod);
	return rc;
}

/* --- an attempt ------------------------------------------------------------------ */

/* With object storage: uploads the batch written at path; *url gets its GET URL. */
static int publish_batch(struct session *s, int round, const char *path, char **url, char *msg,
			 size_t n)
{
	json_error_t jerr;
	json_t *b;
	int rc;

	*url = NULL;
	if (!s->s3)
		return 0;
	if (!(b = json_load_file(path, 0, &jerr)))
		return jx_load_error(msg, n, path, &jerr);
	rc = handoff_publish(s, round, b, url, msg, n);
	json_decref(b);
	return rc;
}

static void forget_url(char *url)
{
	if (url) {
		explicit_bzero(url, strlen(url));
		free(url);
	}
}

/*
 * evalpod's message with "program.cl:" replaced by the file it came from,
 * when the message says whose it is: the reference's failures end a run.
 */
static void name_sources(struct session *s, const char *tail, struct sbuf *b)
{
	if (strstr(tail, "the reference"))
		sbuf_add_renamed(b, tail, "program.cl", s->spec.reference_path);
	else
		sbuf_adds(b, tail);
}

/* Runs evalpod once on what is pending; 0 ok, 1 retry, <0 fatal (msg). */
static int local_evaluate(struct session *s, int round, const char *dir, int lockfd, int attempt,
			  char *msg, size_t n)
{
	json_t *todo = NULL;
	size_t ntodo;
	char *batch = NULL, *url = NULL, *note = NULL, tail[700];
	pid_t pid;
	int status, rc;

	if ((rc = round_fetch(s, dir, round, msg, n)))
		return rc;
	todo = round_pending(s, round, dir);
	ntodo = json_array_size(todo);
	if (!ntodo) {
		json_decref(todo);
		return 0;
	}
	round_set_aside_infra(dir, todo);
	if ((rc = round_pack(s, round, &batch, msg, n)) ||
	    (rc = publish_batch(s, round, batch, &url, msg, n)))
		goto out;
	{
		json_t *row = store_round_get(s->st, s->id, round);

		note = evalrun_note(batch, todo, json_is_object(json_object_get(row, "confirm")));
		json_decref(row);
	}
	pid = evalrun_spawn(s, dir, batch, url, note, lockfd, msg, n);
	forget_url(url);
	url = NULL;
	if (pid < 0) {
		rc = KERR_IO;
		goto out;
	}
	if (!store_begin(s->st, msg, n)) {
		if (store_round_set_pid(s->st, s->id, round, (long)pid, msg, n) ||
		    store_round_set_state(s->st, s->id, round, ROUND_RUNNING, msg, n))
			store_rollback(s->st);
		else
			store_commit(s->st, msg, n);
	}
	crash_point("spawned", round);
	status = evalrun_wait(s, dir, round, pid);
	evalrun_log_tail(dir, tail, sizeof(tail));
	evalrun_note_end(dir, batch, status);
	if (!round_interrupted() && (rc = round_fetch(s, dir, round, msg, n))) {
		/* what evalpod uploaded stays in the store; a resume fetches it */
		char why[4096];

		strlcpy(why, msg, sizeof(why));
		kerr_set(msg, n, rc,
			 "round %d: results not read back (they stay in the store; "
			 "'kctl resume' fetches them): %s",
			 round, why);
	} else if (round_interrupted()) {
		rc = kerr_set(msg, n, KERR_CHILD, "interrupted by signal %d", round_interrupted());
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		json_t *left = round_pending(s, round, dir);

		rc = json_array_size(left) ? 1 : 0;
		if (rc)
			kerr_set(msg, n, KERR_CHILD,
				 "evalpod left %zu results of round %d unwritten",
				 json_array_size(left), round);
		json_decref(left);
	} else if (WIFEXITED(status) && (WEXITSTATUS(status) == 1 || WEXITSTATUS(status) == 2)) {
		struct sbuf why = SBUF_INIT;

		name_sources(s, tail, &why);
		rc = kerr_set(msg, n, KERR_INVALID, "evalpod refused round %d's batch %s:\n%s",
			      round, batch, why.buf);
		sbuf_release(&why);
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
		rc = kerr_set(msg, n, KERR_NOTFOUND, "evalpod could not be started:\n%s", tail);
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == EVALPOD_EXIT_SLOW) {
		rc = backend_reference_slow(s, round, attempt, "", tail, msg, n);
	} else {
		char why[512];

		evalrun_log_first_error(dir, why, sizeof(why));
		log_warn("round %d: evalpod failed (%s %d%s%s); %s", round,
			 WIFEXITED(status) ? "exit status" : "signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
			 *why ? ": " : "", why,
			 attempt + 1 < EVALPOD_ATTEMPTS ? "evaluating what is missing again"
							: "giving up");
		rc = session_cancelled(s) ? kerr_set(msg, n, KERR_CHILD, "cancelled") : 1;
		if (rc == 1)
			kerr_set(msg, n, KERR_CHILD, "evalpod failed on round %d:\n%s", round,
				 tail);
	}
out:
	forget_url(url);
	free(note);
	free(batch);
	json_decref(todo);
	return rc;
}

const struct backend backend_local = {
	.name = "local",
	.check = local_check,
	.evaluate = local_evaluate,
};
