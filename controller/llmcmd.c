/*
 * llmcmd.c - running an external proposer command (claude -p, a script);
 * the contract is llmcmd_run in llm.h.
 *
 * The prompt goes to the command's stdin while its stdout and stderr are
 * read, all three in one poll loop, so that a command that writes before
 * it has read everything cannot deadlock with us.  It runs in a session of
 * its own (so a timeout kills, as a group, whatever it started), dies with
 * kctl (PR_SET_PDEATHSIG), inherits none of kctl's other descriptors and
 * sees only an allowlisted environment.  An exec failure comes back as an
 * errno over a close-on-exec pipe, so that "cannot run" is told apart from
 * a command that ran and failed.
 *
 * SIGPIPE is blocked in the calling thread while the prompt is written:
 * a command that exits without reading its stdin makes write fail with
 * EPIPE instead of killing kctl.  A SIGPIPE raised meanwhile is consumed
 * before the mask is restored.
 */
#include "llm.h"
#include "err.h"
#include "log.h"
#include "sbuf.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LLMCMD_DEFAULT_TIMEOUT_MS 600000L
#define LLMCMD_DEFAULT_MAX_OUTPUT ((size_t)1 << 20)
#define LLMCMD_ERR_KEEP           4096 /* bytes of stderr kept: its end */
#define LLMCMD_ERR_QUOTE          600  /* of which messages quote the last */
#define LLMCMD_READ_CHUNK         65536
#define LLMCMD_WAIT_STEP_MS       10
#define LLMCMD_FD_LOOP_MAX        65536 /* closing by hand without close_range */
#define LLMCMD_CONTEXT_ARG        "{context}"
#define LLMCMD_CONTEXT_ENV        "KCTL_CONTEXT"

extern char **environ;

/* What a command may see of kctl's environment, besides LC_* and pass_env. */
static const char *const llmcmd_env_names[] = {
	"PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR", "TERM",
};

/* Why the child did not get to run the command, as it reports it. */
enum llmcmd_stage {
	LLMCMD_STAGE_CHDIR = 1,
	LLMCMD_STAGE_EXEC = 2,
};

/* One run: our ends of its pipes (-1 once closed) and what came out. */
struct llmcmd_proc {
	pid_t pid;
	int in, out, err, report;
	const char *prompt;
	size_t prompt_len, prompt_pos;
	size_t max_output;
	struct sbuf so;
	struct sbuf se;
	int status; /* from waitpid */
	int poll_errno;
};

static double llmcmd_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void llmcmd_close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Nonzero when the environment entry "NAME=value" may reach the command. */
static int llmcmd_env_passes(const char *entry, const char *const *pass)
{
	size_t len = strcspn(entry, "=");

	if (!entry[len] ||
	    (len == strlen(LLMCMD_CONTEXT_ENV) && !strncmp(entry, LLMCMD_CONTEXT_ENV, len)))
		return 0;
	if (len > 3 && !strncmp(entry, "LC_", 3))
		return 1;
	for (size_t i = 0; i < sizeof(llmcmd_env_names) / sizeof(llmcmd_env_names[0]); i++)
		if (strlen(llmcmd_env_names[i]) == len && !strncmp(entry, llmcmd_env_names[i], len))
			return 1;
	for (const char *const *p = pass; p && *p; p++)
		if (strlen(*p) == len && !strncmp(entry, *p, len))
			return 1;
	return 0;
}

/* The command's environment: pointers into environ, and ctx ("KCTL_CONTEXT=path") last. */
static char **llmcmd_envp(const char *const *pass, char *ctx)
{
	size_t ne = 0, k = 0;
	char **envp;

	while (environ && environ[ne])
		ne++;
	envp = xcalloc(ne + 2, sizeof(*envp));
	for (size_t i = 0; i < ne; i++)
		if (llmcmd_env_passes(environ[i], pass))
			envp[k++] = environ[i];
	if (ctx)
		envp[k++] = ctx;
	envp[k] = NULL;
	return envp;
}

/* argv with each "{context}" replaced by path; the strings are borrowed. */
static char **llmcmd_argv(const char *const *argv, const char *path)
{
	size_t n = 0;
	char **out;

	while (argv[n])
		n++;
	out = xcalloc(n + 1, sizeof(*out));
	for (size_t i = 0; i < n; i++)
		out[i] = (char *)(path && !strcmp(argv[i], LLMCMD_CONTEXT_ARG) ? path : argv[i]);
	return out;
}

/*
 * A close-on-exec pipe with both ends above 2, so that the child's dup2
 * onto 0, 1 and 2 never lands on another of these descriptors (kctl may
 * have been started with one of its standard descriptors closed).
 */
static int llmcmd_pipe(int p[2])
{
	if (pipe2(p, O_CLOEXEC))
		return -1;
	for (int i = 0; i < 2; i++) {
		int fd = p[i];

		if (fd <= 2) {
			p[i] = fcntl(fd, F_DUPFD_CLOEXEC, 3);
			close(fd);
		}
	}
	if (p[0] >= 0 && p[1] >= 0)
		return 0;
	llmcmd_close(&p[0]);
	llmcmd_close(&p[1]);
	return -1;
}

/* Closes every descriptor from 3 up but keep. */
static void llmcmd_close_others(int keep)
{
	if ((keep == 3 || close_range(3, (unsigned)keep - 1, 0) == 0) &&
	    close_range((unsigned)keep + 1, ~0U, 0) == 0)
		return;
	for (int fd = 3; fd < LLMCMD_FD_LOOP_MAX; fd++)
		if (fd != keep)
			close(fd);
}

/*
 * The child, between fork and exec: only async-signal-safe calls.  Never
 * returns; a failure is written to report as {stage, errno}.
 */
__attribute__((noreturn)) static void llmcmd_child(const struct llmcmd_conf *c, char **argv,
						   char **envp, const int fds[3], int report,
						   pid_t parent)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t none;
	int rep[2] = { LLMCMD_STAGE_CHDIR, 0 };

	setsid();
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent) /* kctl died before prctl took effect */
		_exit(127);
	for (int i = 0; i < 3; i++)
		if (dup2(fds[i], i) < 0)
			_exit(127);
	llmcmd_close_others(report);
	sigaction(SIGPIPE, &dfl, NULL); /* an ignored signal stays ignored across exec */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (c->workdir && chdir(c->workdir))
		goto fail;
	rep[0] = LLMCMD_STAGE_EXEC;
	environ = envp;
	execvp(argv[0], argv);
fail:
	rep[1] = errno;
	if (write(report, rep, sizeof(rep)) < 0)
		_exit(127);
	_exit(127);
}

/* Reads what the child reported before exec; 0 once exec closed the pipe. */
static int llmcmd_exec_report(struct llmcmd_proc *p, int rep[2])
{
	ssize_t got;

	do
		got = read(p->report, rep, 2 * sizeof(int));
	while (got < 0 && errno == EINTR);
	llmcmd_close(&p->report);
	return got == (ssize_t)(2 * sizeof(int));
}

/* Writes more of the prompt; a command that stopped reading simply gets no more. */
static void llmcmd_feed(struct llmcmd_proc *p)
{
	ssize_t w = write(p->in, p->prompt + p->prompt_pos, p->prompt_len - p->prompt_pos);

	if (w < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (w < 0) { /* EPIPE: it exited or closed its stdin */
		llmcmd_close(&p->in);
		return;
	}
	p->prompt_pos += (size_t)w;
	if (p->prompt_pos == p->prompt_len)
		llmcmd_close(&p->in);
}

/* Reads from fd into b; returns 1 when its end was reached. */
static int llmcmd_drain(int fd, struct sbuf *b)
{
	ssize_t got;

	sbuf_grow(b, LLMCMD_READ_CHUNK);
	got = read(fd, b->buf + b->len, LLMCMD_READ_CHUNK);
	if (got < 0)
		return errno != EAGAIN && errno != EINTR;
	if (!got)
		return 1;
	b->len += (size_t)got;
	b->buf[b->len] = '\0';
	return 0;
}

/* Keeps the last LLMCMD_ERR_KEEP bytes of stderr once more than over piled up. */
static void llmcmd_trim_err(struct sbuf *se, size_t over)
{
	if (se->len <= over)
		return;
	memmove(se->buf, se->buf + se->len - LLMCMD_ERR_KEEP, LLMCMD_ERR_KEEP);
	se->len = LLMCMD_ERR_KEEP;
	se->buf[se->len] = '\0';
}

/* Adds *fd to the poll set when it is open; fds[i] remembers whose pf[i] it is. */
static void llmcmd_watch(struct pollfd *pf, int **fds, int *np, int *fd, short events)
{
	if (*fd < 0)
		return;
	pf[*np] = (struct pollfd){ .fd = *fd, .events = events };
	fds[(*np)++] = fd;
}

/*
 * Feeds stdin and reads stdout and stderr until both are closed.  Returns
 * 0, KERR_TIMEOUT at the deadline, KERR_LIMIT when stdout is too long, or
 * KERR_IO when poll fails.
 */
static int llmcmd_pump(struct llmcmd_proc *p, double deadline)
{
	while (p->out >= 0 || p->err >= 0) {
		struct pollfd pf[3];
		int *fds[3];
		int np = 0, r;
		double left = deadline - llmcmd_now_ms();

		if (left <= 0)
			return KERR_TIMEOUT;
		llmcmd_watch(pf, fds, &np, &p->in, POLLOUT);
		llmcmd_watch(pf, fds, &np, &p->out, POLLIN);
		llmcmd_watch(pf, fds, &np, &p->err, POLLIN);
		r = poll(pf, (nfds_t)np, left > INT_MAX ? INT_MAX : (int)left + 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			p->poll_errno = errno;
			return KERR_IO;
		}
		for (int i = 0; i < np; i++) {
			if (!pf[i].revents)
				continue;
			if (fds[i] == &p->in && (pf[i].revents & POLLOUT))
				llmcmd_feed(p);
			else if (fds[i] == &p->in) /* POLLERR: the reading end is gone */
				llmcmd_close(&p->in);
			else if (llmcmd_drain(*fds[i], fds[i] == &p->out ? &p->so : &p->se))
				llmcmd_close(fds[i]);
		}
		llmcmd_trim_err(&p->se, 2 * LLMCMD_ERR_KEEP);
		if (p->so.len > p->max_output)
			return KERR_LIMIT;
	}
	llmcmd_close(&p->in);
	return 0;
}

/* Waits, without reaping it, until the command exits; KERR_TIMEOUT at the deadline. */
static int llmcmd_wait_exit(pid_t pid, double deadline)
{
	struct timespec step = { .tv_nsec = LLMCMD_WAIT_STEP_MS * 1000000L };

	for (;;) {
		siginfo_t si = { 0 };

		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 &&
		    errno != EINTR)
			return 0; /* not ours to wait for: waitpid will say */
		if (si.si_pid == pid)
			return 0;
		if (llmcmd_now_ms() >= deadline)
			return KERR_TIMEOUT;
		nanosleep(&step, NULL);
	}
}

/*
 * Kills the command's process group, whatever is left of it, and reaps the
 * command.  It is still unreaped here, so its pid (the group's id) cannot
 * have been reused.
 */
static void llmcmd_reap(struct llmcmd_proc *p)
{
	kill(-p->pid, SIGKILL);
	while (waitpid(p->pid, &p->status, 0) < 0 && errno == EINTR)
		;
}

/* Writes into out (size n) the last bytes of stderr on one line; "" when there are none. */
static void llmcmd_err_tail(const struct sbuf *se, char *out, size_t n)
{
	const char *s = se->buf ? se->buf : "";
	size_t len = se->len, k = 0;

	while (len && (unsigned char)s[len - 1] <= ' ')
		len--;
	if (len > LLMCMD_ERR_QUOTE) {
		s += len - LLMCMD_ERR_QUOTE;
		len = LLMCMD_ERR_QUOTE;
	}
	while (len && (unsigned char)*s <= ' ')
		s++, len--;
	if (!n)
		return;
	if (len > n - 1)
		len = n - 1;
	for (size_t i = 0; i < len; i++)
		out[k++] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? ' ' : s[i];
	out[k] = '\0';
}

/* Starts the command; 0, KERR_IO, or KERR_NOTFOUND when it could not be run. */
static int llmcmd_start(struct llmcmd_proc *p, const struct llmcmd_conf *c, char **argv,
			char **envp, const char *label, char *msg, size_t n)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 }, rep[2] = { -1, -1 };
	int fds[3], why[2];
	pid_t parent = getpid();
	int rc = 0;

	if (llmcmd_pipe(in) || llmcmd_pipe(out) || llmcmd_pipe(err) || llmcmd_pipe(rep)) {
		rc = kerr_set(msg, n, KERR_IO, "%s: pipe: %s", label, strerror(errno));
		goto out;
	}
	fds[0] = in[0], fds[1] = out[1], fds[2] = err[1];
	p->pid = fork();
	if (p->pid < 0) {
		rc = kerr_set(msg, n, KERR_IO, "%s: fork: %s", label, strerror(errno));
		goto out;
	}
	if (!p->pid)
		llmcmd_child(c, argv, envp, fds, rep[1], parent);
	p->in = in[1], p->out = out[0], p->err = err[0], p->report = rep[0];
	in[1] = out[0] = err[0] = rep[0] = -1;
	llmcmd_close(&rep[1]);
	if (llmcmd_exec_report(p, why)) {
		llmcmd_reap(p);
		p->pid = -1;
		if (why[0] == LLMCMD_STAGE_CHDIR)
			rc = kerr_set(msg, n, KERR_NOTFOUND, "%s: cannot enter '%s': %s", label,
				      c->workdir, strerror(why[1]));
		else
			rc = kerr_set(msg, n, KERR_NOTFOUND, "%s: cannot run '%s': %s", label,
				      argv[0], strerror(why[1]));
		goto out;
	}
	fcntl(p->in, F_SETFL, fcntl(p->in, F_GETFL) | O_NONBLOCK);
	if (!p->prompt_len)
		llmcmd_close(&p->in);
out:
	for (int i = 0; i < 2; i++) {
		llmcmd_close(&in[i]);
		llmcmd_close(&out[i]);
		llmcmd_close(&err[i]);
		llmcmd_close(&rep[i]);
	}
	return rc;
}

/* Turns how the command ended into the return code and msg. */
static int llmcmd_verdict(struct llmcmd_proc *p, int rc, const char *label, long timeout_ms,
			  struct llmcmd_out *o, char *msg, size_t n)
{
	char tail[LLMCMD_ERR_QUOTE + 1];
	const char *sep;

	llmcmd_err_tail(&p->se, tail, sizeof(tail));
	sep = *tail ? "; stderr: " : "";
	o->status = WIFEXITED(p->status) ? WEXITSTATUS(p->status) : -1;
	if (rc == KERR_TIMEOUT)
		return kerr_set(msg, n, rc, "%s: timed out after %g s%s%s", label,
				(double)timeout_ms / 1000.0, sep, tail);
	if (rc == KERR_LIMIT)
		return kerr_set(msg, n, rc, "%s: its output exceeds %zu bytes", label,
				p->max_output);
	if (rc)
		return kerr_set(msg, n, rc, "%s: poll: %s", label, strerror(p->poll_errno));
	if (WIFSIGNALED(p->status))
		return kerr_set(msg, n, KERR_CHILD, "%s: killed by signal %d%s%s", label,
				WTERMSIG(p->status), sep, tail);
	if (o->status)
		return kerr_set(msg, n, KERR_CHILD, "%s: exited with status %d%s%s", label,
				o->status, sep, tail);
	if (*tail)
		log_warn("%s: stderr: %s", label, tail);
	return 0;
}

int llmcmd_run(const struct llmcmd_conf *c, const char *prompt, const char *context_path,
	       struct llmcmd_out *o, char *msg, size_t n)
{
	struct llmcmd_proc p = { .pid = -1,
				 .in = -1,
				 .out = -1,
				 .err = -1,
				 .report = -1,
				 .so = SBUF_INIT,
				 .se = SBUF_INIT };
	long timeout_ms = c->timeout_ms > 0 ? c->timeout_ms : LLMCMD_DEFAULT_TIMEOUT_MS;
	double t0 = llmcmd_now_ms();
	char *label = NULL, *ctx = NULL;
	char **argv = NULL, **envp = NULL;
	sigset_t pipe_set, old_mask, pending;
	int had_pipe, rc;

	memset(o, 0, sizeof(*o));
	o->status = -1;
	if (!c->argv || !c->argv[0] || !*c->argv[0])
		return kerr_set(msg, n, KERR_INVALID, "%s: no command",
				c->label ? c->label : "command");
	label = c->label ? xstrdup(c->label) : xasprintf("command '%s'", c->argv[0]);
	p.prompt = prompt ? prompt : "";
	p.prompt_len = strlen(p.prompt);
	p.max_output = c->max_output ? c->max_output : LLMCMD_DEFAULT_MAX_OUTPUT;
	ctx = context_path ? xasprintf("%s=%s", LLMCMD_CONTEXT_ENV, context_path) : NULL;
	argv = llmcmd_argv(c->argv, context_path);
	envp = llmcmd_envp(c->pass_env, ctx);

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old_mask);
	sigpending(&pending);
	had_pipe = sigismember(&pending, SIGPIPE);

	rc = llmcmd_start(&p, c, argv, envp, label, msg, n);
	if (!rc) {
		double deadline = t0 + (double)timeout_ms;

		rc = llmcmd_pump(&p, deadline);
		if (!rc)
			rc = llmcmd_wait_exit(p.pid, deadline);
		llmcmd_reap(&p);
		rc = llmcmd_verdict(&p, rc, label, timeout_ms, o, msg, n);
	}

	if (!had_pipe) {
		struct timespec zero = { 0 };

		while (sigtimedwait(&pipe_set, NULL, &zero) == SIGPIPE)
			;
	}
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	llmcmd_close(&p.in);
	llmcmd_close(&p.out);
	llmcmd_close(&p.err);
	llmcmd_close(&p.report);
	llmcmd_trim_err(&p.se, LLMCMD_ERR_KEEP);
	o->err = sbuf_detach(&p.se, NULL);
	o->out = sbuf_detach(&p.so, &o->len);
	o->ms = llmcmd_now_ms() - t0;
	free(argv);
	free(envp);
	free(ctx);
	free(label);
	return rc;
}

void llmcmd_out_release(struct llmcmd_out *o)
{
	if (!o)
		return;
	free(o->out);
	free(o->err);
	o->out = o->err = NULL;
	o->len = 0;
}
