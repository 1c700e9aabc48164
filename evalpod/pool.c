#include "pool.h"
#include "clrt.h"
#include "err.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void child_exec(struct job *j, int wfd)
{
	int devnull = open("/dev/null", O_RDONLY);

	setpgid(0, 0);
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

static void job_reap(struct job *j, int kill_it)
{
	int status = 0;

	if (kill_it) {
		kill(-j->pid, SIGKILL);
		kill(j->pid, SIGKILL);
		j->timed_out = 1;
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

int pool_run(struct job *jobs, size_t njobs, int parallel, int echo, char *msg, size_t n)
{
	struct pollfd *pfd = calloc(njobs + 1, sizeof(*pfd));
	size_t *map = calloc(njobs + 1, sizeof(*map)), next = 0, running = 0;
	int rc = 0;

	if (!pfd || !map)
		abort();
	if (parallel < 1)
		parallel = 1;
	while ((next < njobs || running) && !rc) {
		double now, wait_ms = 1000;
		size_t np = 0;

		while (next < njobs && running < (size_t)parallel && !rc) {
			rc = job_start(&jobs[next++], msg, n);
			running += rc == 0;
		}
		now = clrt_now_ms();
		for (size_t i = 0; i < next; i++) {
			struct job *j = &jobs[i];
			double left;

			if (!j->started || !j->pid)
				continue;
			left = j->start_ms + j->timeout_s * 1e3 - now;
			if (left <= 0) {
				job_reap(j, 1);
				running--;
				continue;
			}
			if (left < wait_ms)
				wait_ms = left;
			pfd[np].fd = j->fd;
			pfd[np].events = POLLIN;
			map[np++] = i;
		}
		if (!np)
			continue;
		if (poll(pfd, np, (int)wait_ms + 1) < 0 && errno != EINTR)
			rc = kerr_set(msg, n, KERR_IO, "poll: %s", strerror(errno));
		for (size_t k = 0; k < np && !rc; k++) {
			if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (job_drain(&jobs[map[k]], echo)) {
				job_reap(&jobs[map[k]], 0);
				running--;
			}
		}
	}
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
