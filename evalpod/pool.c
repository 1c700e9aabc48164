#include "pool.h"
#include "clrt.h"
#include "err.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t pool_signal;

static void on_signal(int sig)
{
	pool_signal = sig;
}

int pool_interrupted(void)
{
	return pool_signal;
}

/* Catches the signals that should end the batch, or puts the old ones back. */
static void catch_signals(struct sigaction *old, int on)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < 3; i++) {
		if (on)
			sigaction(sigs[i], &sa, &old[i]);
		else
			sigaction(sigs[i], &old[i], NULL);
	}
}

/* Seconds since path was last modified; -1 when it does not exist yet. */
static double age_s(const char *path)
{
	struct stat st;
	struct timespec now;

	if (!path || stat(path, &st))
		return -1;
	clock_gettime(CLOCK_REALTIME, &now);
	return (double)(now.tv_sec - st.st_mtim.tv_sec) +
	       (double)(now.tv_nsec - st.st_mtim.tv_nsec) / 1e9;
}

static void child_exec(struct job *j, int wfd)
{
	int devnull = open("/dev/null", O_RDONLY);

	setpgid(0, 0);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	if (devnull >= 0)
		dup2(devnull, STDIN_FILENO);
	dup2(wfd, STDERR_FILENO);
	dup2(wfd, STDOUT_FILENO);
	for (size_t i = 0; i < 6 && j->env[i]; i++)
		putenv(j->env[i]);
	execv(j->argv[0], j->argv);
	_exit(127);
}

static int job_start(struct job *j, char *msg, size_t n)
{
	int fds[2];

	if (pipe2(fds, O_CLOEXEC))
		return kerr_set(msg, n, KERR_IO, "pipe: %s", strerror(errno));
	j->pid = fork();
	if (j->pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return kerr_set(msg, n, KERR_IO, "fork: %s", strerror(errno));
	}
	if (j->pid == 0) {
		close(fds[0]);
		child_exec(j, fds[1]);
	}
	setpgid(j->pid, j->pid);
	close(fds[1]);
	j->fd = fds[0];
	j->started = 1;
	j->start_ms = clrt_now_ms();
	j->tail_len = 0;
	j->tail[0] = '\0';
	return 0;
}

static void tail_add(struct job *j, const char *buf, size_t len)
{
	if (len >= POOL_TAIL - 1) {
		buf += len - (POOL_TAIL - 1);
		len = POOL_TAIL - 1;
	}
	if (j->tail_len + len > POOL_TAIL - 1) {
		size_t drop = j->tail_len + len - (POOL_TAIL - 1);

		memmove(j->tail, j->tail + drop, j->tail_len - drop);
		j->tail_len -= drop;
	}
	memcpy(j->tail + j->tail_len, buf, len);
	j->tail_len += len;
	j->tail[j->tail_len] = '\0';
}

enum { REAP_EXITED, REAP_DEADLINE, REAP_STALLED, REAP_ABORT };

static void job_reap(struct job *j, int why)
{
	int status = 0;

	if (why != REAP_EXITED) {
		kill(-j->pid, SIGKILL);
		kill(j->pid, SIGKILL);
		j->timed_out = why == REAP_DEADLINE;
		j->stalled = why == REAP_STALLED;
		j->aborted = why == REAP_ABORT;
	}
	while (waitpid(j->pid, &status, 0) < 0 && errno == EINTR)
		;
	close(j->fd);
	j->fd = -1;
	j->wall_ms = clrt_now_ms() - j->start_ms;
	j->exited = WIFEXITED(status);
	j->exit_code = j->exited ? WEXITSTATUS(status) : -1;
	j->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	j->pid = 0;
}

/* Reads what a child wrote; returns 1 on EOF (the child is gone or closed it). */
static int job_drain(struct job *j, int echo)
{
	char buf[4096];
	ssize_t got = read(j->fd, buf, sizeof(buf));

	if (got < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (got <= 0)
		return 1;
	tail_add(j, buf, (size_t)got);
	if (echo && write(STDERR_FILENO, buf, (size_t)got) < 0)
		return 0;
	return 0;
}

/* Kills jobs past their deadline or stalled; returns how many it reaped. */
static size_t reap_overdue(struct job *jobs, size_t started, double *wait_ms)
{
	double now = clrt_now_ms();
	size_t reaped = 0;

	for (size_t i = 0; i < started; i++) {
		struct job *j = &jobs[i];
		double left, age;

		if (!j->started || !j->pid)
			continue;
		left = j->start_ms + j->timeout_s * 1e3 - now;
		age = j->stall_s > 0 ? age_s(j->progress) : -1;
		if (left <= 0 || (age >= 0 && age > j->stall_s)) {
			job_reap(j, left <= 0 ? REAP_DEADLINE : REAP_STALLED);
			reaped++;
		} else if (left < *wait_ms) {
			*wait_ms = left;
		}
	}
	return reaped;
}

static void abort_all(struct job *jobs, size_t started)
{
	for (size_t i = 0; i < started; i++)
		if (jobs[i].started && jobs[i].pid)
			job_reap(&jobs[i], REAP_ABORT);
}

int pool_run(struct job *jobs, size_t njobs, int parallel, int echo, char *msg, size_t n)
{
	struct pollfd *pfd = calloc(njobs + 1, sizeof(*pfd));
	size_t *map = calloc(njobs + 1, sizeof(*map)), next = 0, running = 0;
	struct sigaction old[3];
	int rc = 0;

	if (!pfd || !map)
		abort();
	if (parallel < 1)
		parallel = 1;
	catch_signals(old, 1);
	while ((next < njobs || running) && !rc) {
		double wait_ms = 1000;
		size_t np = 0;

		while (next < njobs && running < (size_t)parallel && !rc && !pool_signal) {
			rc = job_start(&jobs[next++], msg, n);
			running += rc == 0;
		}
		if (pool_signal) {
			rc = kerr_set(msg, n, KERR_CHILD, "interrupted by signal %d (%s)",
				      (int)pool_signal, strsignal(pool_signal));
			break;
		}
		running -= reap_overdue(jobs, next, &wait_ms);
		for (size_t i = 0; i < next; i++) {
			if (!jobs[i].started || !jobs[i].pid)
				continue;
			pfd[np].fd = jobs[i].fd;
			pfd[np].events = POLLIN;
			map[np++] = i;
		}
		if (!np)
			continue;
		if (poll(pfd, np, (int)wait_ms + 1) < 0) {
			if (errno != EINTR)
				rc = kerr_set(msg, n, KERR_IO, "poll: %s", strerror(errno));
			continue;
		}
		for (size_t k = 0; k < np; k++) {
			if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (job_drain(&jobs[map[k]], echo)) {
				job_reap(&jobs[map[k]], REAP_EXITED);
				running--;
			}
		}
	}
	if (rc)
		abort_all(jobs, next);
	catch_signals(old, 0);
	free(pfd);
	free(map);
	return rc;
}

void job_release(struct job *j)
{
	for (size_t i = 0; i < 8 && j->argv[i]; i++)
		free(j->argv[i]);
	for (size_t i = 0; i < 6 && j->env[i]; i++)
		free(j->env[i]);
	memset(j, 0, sizeof(*j));
}
