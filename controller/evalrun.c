/*
 * evalrun.c - the local backend's evalpod child; the contract is in
 * evalrun.h.
 */
#include "evalrun.h"
#include "envlist.h"
#include "err.h"
#include "fileio.h"
#include "progress.h"
#include "sbuf.h"
#include "session.h"
#include "winner.h"
#include "services.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EVALRUN_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

extern char **environ;

/*
 * What evalpod may see of kctl's environment (docs/kctl.md#evalpods-environment):
 * the basics, the OpenCL drivers' and sanitizers' variables, its own EVALPOD_*
 * knobs, and what libcurl needs to reach a presigned URL (CA bundle, proxies).
 * Never AWS_*, KCTL_*, or a kubeconfig: on the local backend evalpod gets what
 * a pod gets, nothing but the batch (and its presigned URLs).
 */
static const struct {
	const char *name;
	int prefix; /* 1: any variable whose name starts with name */
} evalrun_env_allow[] = {
	{ .name = "PATH" },
	{ .name = "HOME" },
	{ .name = "USER" },
	{ .name = "LOGNAME" },
	{ .name = "LANG" },
	{ .name = "TZ" },
	{ .name = "TMPDIR" },
	{ .name = "TERM" },
	{ .name = "XDG_CACHE_HOME" },
	{ .name = "LD_LIBRARY_PATH" },
	{ .name = "CURL_CA_BUNDLE" },
	{ .name = "SSL_CERT_FILE" },
	{ .name = "SSL_CERT_DIR" },
	{ .name = "http_proxy" },
	{ .name = "https_proxy" },
	{ .name = "HTTPS_PROXY" },
	{ .name = "all_proxy" },
	{ .name = "ALL_PROXY" },
	{ .name = "no_proxy" },
	{ .name = "NO_PROXY" },
	{ .name = "ASAN_OPTIONS" },
	{ .name = "UBSAN_OPTIONS" },
	{ .name = "LSAN_OPTIONS" },
	{ .name = "MSAN_OPTIONS" },
	{ .name = "LC_", .prefix = 1 },
	{ .name = "EVALPOD_", .prefix = 1 },
	{ .name = "POCL_", .prefix = 1 },
	{ .name = "OCL_ICD_", .prefix = 1 },
	{ .name = "OPENCL_", .prefix = 1 },
	{ .name = "CUDA_", .prefix = 1 },
	{ .name = "NVIDIA_", .prefix = 1 },
	{ .name = "__GL_", .prefix = 1 },
	{ .name = "GPU_", .prefix = 1 },
	{ .name = "HSA_", .prefix = 1 },
	{ .name = "ROC", .prefix = 1 },
	{ .name = "AMD_", .prefix = 1 },
	{ .name = "HIP_", .prefix = 1 },
};

/* Words that drop a variable a prefix lets through (NVIDIA_API_KEY, EVALPOD_TOKEN). */
static const char *const evalrun_env_secret_words[] = { "KEY",      "TOKEN",  "SECRET",
							"PASSWORD", "PASSWD", "CREDENTIAL",
							"AUTH" };

/* Nonzero when name (len bytes, not NUL-terminated) contains word, in any case. */
static int evalrun_env_has_word(const char *name, size_t len, const char *word)
{
	size_t wl = strlen(word);

	for (size_t i = 0; i + wl <= len; i++)
		if (!strncasecmp(name + i, word, wl))
			return 1;
	return 0;
}

/* Nonzero when the entry "NAME=value" may reach evalpod. */
static int evalrun_env_passes(const char *entry)
{
	size_t len = strcspn(entry, "=");

	if (!len || !entry[len])
		return 0;
	for (size_t i = 0; i < EVALRUN_ARRAY_SIZE(evalrun_env_secret_words); i++)
		if (evalrun_env_has_word(entry, len, evalrun_env_secret_words[i]))
			return 0;
	for (size_t i = 0; i < EVALRUN_ARRAY_SIZE(evalrun_env_allow); i++) {
		size_t al = strlen(evalrun_env_allow[i].name);

		if ((evalrun_env_allow[i].prefix ? len >= al : len == al) &&
		    !strncmp(entry, evalrun_env_allow[i].name, al))
			return 1;
	}
	return 0;
}

/* 1 when extra holds a variable named like entry. */
char **evalrun_env(char *const *env, const char *const *extra)
{
	return envlist_build(env, evalrun_env_passes, extra);
}

void evalrun_env_free(char **envp)
{
	envlist_free(envp);
}

/*
 * Starts evalpod on batch with the round's lock fd inherited; returns its
 * pid.  With url (object storage), evalpod reads the batch from the
 * presigned url, handed over in its environment, and uploads its results
 * through the batch's presigned PUTs instead of writing them here.
 */
pid_t evalrun_spawn(struct session *s, const char *dir, const char *batch, const char *url,
		    const char *note, int lockfd, char *msg, size_t n)
{
	char *log = xasprintf("%s/evalpod.log", dir), *out = xasprintf("%s/results", dir);
	/* The session's reference outputs and timing seeds, shared by its rounds (refcache.h). */
	char *cache = xasprintf("%s/evalpod-cache", s->dir);
	char *url_var = url ? xasprintf("EVALPOD_BATCH_URL=%s", url) : NULL;
	char *ca_var = url && s->spec.s3.ca_file
			       ? xasprintf("CURL_CA_BUNDLE=%s", s->spec.s3.ca_file)
			       : NULL;
	const char *extra[] = { url_var, ca_var, NULL }; /* ca_var only with url_var */
	char **envp = evalrun_env(environ, extra);
	char jobs[16];
	int started[2];
	pid_t pid;

	snprintf(jobs, sizeof(jobs), "%d", s->spec.jobs > 0 ? s->spec.jobs : 0);
	/* closed by the child's execve (or exit): the parent waits for that,
	 * so the note is in the log before anyone reads the log for this run */
	if (pipe2(started, O_CLOEXEC))
		started[0] = started[1] = -1;
	pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		char *argv[] = { s->evalpod,    "run",
				 (char *)batch, "--out",
				 out,           "--ref-cache",
				 cache,         s->spec.jobs > 0 ? "--jobs" : NULL,
				 jobs,          NULL };
		char *url_argv[] = { s->evalpod, "run", s->spec.jobs > 0 ? "--jobs" : NULL, jobs,
				     NULL };

		if (started[0] >= 0)
			close(started[0]);
		if (fd >= 0) {
			/* Noted by the child: a kctl killed before the fork notes
			 * nothing, one killed after it leaves the run noted.  A
			 * note that cannot be written (a full disk) stops nothing. */
			ssize_t w = note ? write(fd, note, strlen(note)) : 0;

			(void)w;
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		(void)lockfd; /* stays open across exec: evalpod holds the round's lock */
		execve(s->evalpod, url ? url_argv : argv, envp);
		fprintf(stderr, "kctl: cannot run '%s': %s\n", s->evalpod, strerror(errno));
		_exit(127);
	}
	if (pid < 0)
		kerr_set(msg, n, KERR_IO, "fork: %s", strerror(errno));
	if (started[1] >= 0)
		close(started[1]);
	if (started[0] >= 0) {
		char c;
		ssize_t r;

		while (pid > 0 && ((r = read(started[0], &c, 1)) > 0 || (r < 0 && errno == EINTR)))
			;
		close(started[0]);
	}
	evalrun_env_free(envp);
	free(url_var);
	free(ca_var);
	free(log);
	free(out);
	free(cache);
	return pid;
}

/*
 * The line that heads an evalpod run in evalpod.log: which variants it
 * evaluates, so the log tells (people, and the crash tests) what ran when.
 */
char *evalrun_note(const char *batch, json_t *todo, int confirm)
{
	struct sbuf b = SBUF_INIT;
	size_t i;
	json_t *v;

	sbuf_addf(&b, "kctl: evalpod run %s %s:", batch,
		  confirm ? "re-times side by side (confirmation)" : "evaluates");
	json_array_foreach (todo, i, v)
		sbuf_addf(&b, " %s", json_string_value(json_object_get(v, "id")));
	sbuf_adds(&b, "\n");
	return sbuf_detach(&b, NULL);
}

void evalrun_note_end(const char *dir, const char *batch, int status)
{
	char *path = xasprintf("%s/evalpod.log", dir);
	FILE *f = fopen(path, "a");

	if (f) {
		if (status == -1)
			fprintf(f, "kctl: end of evalpod run %s: not waited for\n", batch);
		else
			fprintf(f, "kctl: end of evalpod run %s: %s %d\n", batch,
				WIFEXITED(status) ? "exit status" : "signal",
				WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		fclose(f);
	}
	free(path);
}

/*
 * evalpod's progress lines ("evalpod: checked r01-v002 (1 of 3, 2.1 s)",
 * "evalpod: timing ...") followed in the round's evalpod.log as they are
 * written, and shown as "round R: checked r01-v002 ...".  The log is
 * evalpod's stderr: its bytes are shown only as printable ASCII, a line
 * cut at FOLLOW_LINE, at most FOLLOW_READ bytes read per look.
 */
#define FOLLOW_LINE 512
#define FOLLOW_READ 65536

struct follow {
	int fd;
	size_t len;
	char line[FOLLOW_LINE];
};

/* Levels of evalpod's log lines, which are not progress. */
static const char *const log_levels[] = { "error:", "warning:", "info:", "debug:" };

static void follow_line(struct session *s, int round, struct follow *f)
{
	const char *p = f->line + 9;

	f->line[f->len] = '\0';
	if (f->len <= 9 || strncmp(f->line, "evalpod: ", 9))
		return;
	for (size_t i = 0; i < sizeof(log_levels) / sizeof(log_levels[0]); i++)
		if (!strncmp(p, log_levels[i], strlen(log_levels[i])))
			return;
	for (char *c = f->line; *c; c++)
		if (*c < 0x20 || *c > 0x7e)
			*c = '?';
	fprintf(stderr, "%sround %d: %s\n", s->interactive ? "\r\033[K" : "", round, p);
}

static void follow_read(struct session *s, int round, struct follow *f)
{
	char buf[4096];
	size_t total = 0;
	ssize_t got;

	while (f->fd >= 0 && total < FOLLOW_READ && (got = read(f->fd, buf, sizeof(buf))) > 0) {
		total += (size_t)got;
		for (ssize_t i = 0; i < got; i++) {
			if (buf[i] == '\n') {
				follow_line(s, round, f);
				f->len = 0;
			} else if (f->len < FOLLOW_LINE - 1) {
				f->line[f->len++] = buf[i];
			}
		}
	}
}

/*
 * The round's live line on the terminal (progress.h), redrawn in place:
 * the bar, the evaluated and failed counts, the time and the ETA, and the
 * incumbent when the width leaves room.  Lines relayed from evalpod's log
 * clear it first (follow_line), and evalrun_wait clears it before kctl
 * logs anything else.
 */
static void evalrun_progress(struct session *s, int round)
{
	struct progress p;
	struct sbuf line = SBUF_INIT, inc = SBUF_INIT;
	int cols = progress_columns(STDERR_FILENO);
	char msg[512];
	json_t *w;

	if (!s->interactive ||
	    progress_read(s->st, s->id, s->dir, round, (double)time(NULL), &p, msg, sizeof(msg)))
		return;
	w = session_winner(s->st, s->id);
	progress_incumbent(&inc, w);
	json_decref(w);
	sbuf_addch(&line, '\r');
	progress_line(&line, &p, cols, progress_color(STDERR_FILENO));
	if (progress_visible(line.buf + 1) + 2 + inc.len < (size_t)cols)
		sbuf_addf(&line, "; %s", inc.buf);
	sbuf_adds(&line, "\033[K");
	fputs(line.buf, stderr);
	fflush(stderr);
	sbuf_release(&line);
	sbuf_release(&inc);
}

/*
 * Waits for pid, showing progress once a second; returns its wait status.
 * A pidfd wakes us the moment evalpod exits (falling back to short sleeps
 * where the kernel has none), so a round never waits on a timer.
 */
int evalrun_wait(struct session *s, const char *dir, int round, pid_t pid)
{
	int status = 0, pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	char *log = xasprintf("%s/evalpod.log", dir);
	struct follow f = { .fd = open(log, O_RDONLY | O_CLOEXEC), .len = 0 };

	free(log);
	/* evalpod appends to the log; what is there already is from before it */
	if (f.fd >= 0 && lseek(f.fd, 0, SEEK_END) < 0) {
		close(f.fd);
		f.fd = -1;
	}

	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			status = -1; /* not a clean exit: judged as a failed evalpod */
			break;
		}
		if (round_interrupted()) /* pass the interruption on; evalpod writes what it has */
			kill(pid, SIGTERM);
		follow_read(s, round, &f);
		evalrun_progress(s, round);
		if (pfd >= 0) {
			struct pollfd p = { .fd = pfd, .events = POLLIN };

			poll(&p, 1, 1000);
		} else {
			poll(NULL, 0, 100);
		}
	}
	if (pfd >= 0)
		close(pfd);
	follow_read(s, round, &f);
	if (f.fd >= 0)
		close(f.fd);
	if (s->interactive)
		fputs("\r\033[K", stderr);
	return status;
}

/* Last lines of the round's evalpod.log, for an error message. */
void evalrun_log_tail(const char *dir, char *out, size_t n)
{
	char *path = xasprintf("%s/evalpod.log", dir), *text = NULL, msg[128];
	size_t len = 0;

	out[0] = '\0';
	if (!file_read(path, 64u << 20, &text, &len, msg, sizeof(msg))) {
		const char *p = text + (len > 600 ? len - 600 : 0), *nl;

		/* from the first whole line: a cut line reads as garbage ("od run ...") */
		if (p > text && p[-1] != '\n' && (nl = strchr(p, '\n')) && nl[1])
			p = nl + 1;
		strlcpy(out, p, n);
	}
	free(text);
	free(path);
}

void evalrun_log_first_error(const char *dir, char *why, size_t n)
{
	static const char note[] = "kctl: evalpod run ", tag[] = "evalpod: error: ";
	char *path = xasprintf("%s/evalpod.log", dir), *text = NULL, msg[128];
	const char *p, *run;

	why[0] = '\0';
	if (!file_read(path, 64u << 20, &text, NULL, msg, sizeof(msg))) {
		for (p = run = text; (p = strstr(p, note)); p++)
			if (p == text || p[-1] == '\n')
				run = p;
		for (p = run; (p = strstr(p, tag)); p += sizeof(tag) - 1) {
			if (p == text || p[-1] == '\n') {
				p += sizeof(tag) - 1;
				snprintf(why, n, "%.*s", (int)strcspn(p, "\n"), p);
				break;
			}
		}
	}
	free(text);
	free(path);
}
