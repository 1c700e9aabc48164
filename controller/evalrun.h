/*
 * evalrun.h - the local backend's child: evalpod as a child process of
 * kctl for one attempt at a round (backend-local.c decides when; kround.c
 * is the Kubernetes counterpart).  The child's stdout and stderr go to the round's
 * evalpod.log; it inherits the round's lock, so it holds it even if kctl
 * dies.
 */
#ifndef KCTL_EVALRUN_H
#define KCTL_EVALRUN_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

struct session;

/*
 * The environment evalpod runs in: the entries of env that its allowlist
 * passes (PATH, HOME, locale, TMPDIR, the OpenCL drivers', sanitizers',
 * EVALPOD_* and libcurl's CA and proxy variables), never a name holding
 * KEY, TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL or AUTH, nor AWS_* or
 * KCTL_*; then each "NAME=value" of extra (NULL-terminated, may be NULL),
 * which replaces an entry of the same name.  Returns a NULL-terminated
 * array of copies; free it with evalrun_env_free.
 */
char **evalrun_env(char *const *env, const char *const *extra);

void evalrun_env_free(char **envp);

/*
 * Starts evalpod on batch (a file) with lockfd inherited; with url (object
 * storage) evalpod instead reads the batch from that presigned URL, given
 * in its environment, and uploads its results.  note (evalrun_note's line,
 * or NULL) is appended to dir/evalpod.log by the child before it runs
 * evalpod, so the log names a run if and only if its evalpod was started;
 * evalrun_spawn returns once the child has run evalpod (or failed to), so
 * the note is there for whoever reads the log next.  evalpod gets
 * evalrun_env's environment, never kctl's credentials.  Returns the pid,
 * or -1 with msg.
 */
pid_t evalrun_spawn(struct session *s, const char *dir, const char *batch, const char *url,
		    const char *note, int lockfd, char *msg, size_t n);

/* The line that heads a run of batch in evalpod.log: the variants (todo)
 * it evaluates, or re-times when it is a confirmation's (new string). */
char *evalrun_note(const char *batch, json_t *todo, int confirm);

/* Notes in dir/evalpod.log how the run of batch ended: its wait status,
 * or -1 when it could not be waited for. */
void evalrun_note_end(const char *dir, const char *batch, int status);

/*
 * Waits for pid; shows evalpod's progress lines as they reach
 * dir/evalpod.log ("round R: checked ID ..."), and when s->interactive
 * the round's live line under them (progress.h), cleared before it
 * returns; passes an interruption (round_interrupted) on as SIGTERM.
 * Returns its wait status (-1 when waitpid failed).
 */
int evalrun_wait(struct session *s, const char *dir, int round, pid_t pid);

/* The last lines of dir/evalpod.log into out (size n), for a message. */
void evalrun_log_tail(const char *dir, char *out, size_t n);

/*
 * The first "evalpod: error: " line of the last evalpod run in
 * dir/evalpod.log, without the prefix, into why ("" when there is none): the
 * cause, where the run's last line is often a summary ("some results could
 * not be stored (see above)") and the tail may have lost the cause.
 */
void evalrun_log_first_error(const char *dir, char *why, size_t n);

#endif
