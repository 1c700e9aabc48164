#include "pool.h"
#include "clrt.h"
#include "err.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
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

/* Puts fd at target in the child without the close-on-exec flag. */
static void child_fd(int fd, int target)
{
	int tmp;

	if (fd < 0)
		return;
	tmp = fcntl(fd, F_DUPFD, 10); /* out of the way of 0..4 */
	if (tmp < 0 || dup2(tmp, target) < 0)
		_exit(127);
	close(tmp);
}

/*
 * The child's own deadline, in whole seconds for alarm(): the parent's
 * deadline with some grace, so that a parent that is alive kills first
 * (and records a timeout), and one that is not still gets its worker killed.
 */
static unsigned child_deadline_s(double timeout_s)
{
	double grace = timeout_s / 4 > POOL_OWN_GRACE_S ? timeout_s / 4 : POOL_OWN_GRACE_S;
	double s = ceil(timeout_s + grace);

	return s > POOL_OWN_MAX_S ? POOL_OWN_MAX_S : (unsigned)s;
}

/*
 * A worker must not outlive the evalpod that started it: it gets SIGKILL
 * when its parent dies (checked once more after the prctl, since the parent
 * may have died before it), and its own deadline (SIGALRM, which keeps its
 * default action through execve), so it dies even if nobody is watching.
 */
static void child_bind_to(pid_t parent, double timeout_s)
{
	sigset_t alrm;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(127);
	if (timeout_s <= 0)
		return;
	signal(SIGALRM, SIG_DFL);
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	sigprocmask(SIG_UNBLOCK, &alrm, NULL);
	alarm(child_deadline_s(timeout_s));
}

static void child_exec(struct job *j, int wfd, pid_t parent)
{
	static char *const no_env[] = { NULL };
	int devnull = open("/dev/null", O_RDONLY);

	child_bind_to(parent, j->timeout_s);
	setpgid(0, 0);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	child_fd(j->ctl_child, POOL_CTL_FD);
	child_fd(j->shm_child, POOL_SHM_FD);
	if (devnull >= 0)
		dup2(devnull, STDIN_FILENO);
	dup2(wfd, STDERR_FILENO);
	dup2(wfd, STDOUT_FILENO);
	/* Nothing else inherited: above all not the round's lock that kctl
	 * handed to evalpod, which a worker must never hold for it. */
	if (j->ctl_child < 0)
		close(POOL_CTL_FD);
	if (j->shm_child < 0)
		close(POOL_SHM_FD);
	close_range(POOL_SHM_FD + 1, ~0u, 0);
	execve(j->argv[0], j->argv, j->envp ? j->envp : no_env);
	_exit(127);
}

static int job_start(struct job *j, char *msg, size_t n)
{
	pid_t self = getpid();
	int fds[2];

	if (pipe2(fds, O_CLOEXEC))
		return kerr_set(msg, n, KERR_IO, "pipe: %s", strerror(errno));
	/* Before the fork: the child may run for a while before the parent does. */
	j->start_ms = clrt_now_ms();
	j->pid = fork();
	if (j->pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return kerr_set(msg, n, KERR_IO, "fork: %s", strerror(errno));
	}
	if (j->pid == 0) {
		close(fds[0]);
		child_exec(j, fds[1], self);
	}
	setpgid(j->pid, j->pid);
	close(fds[1]);
	/* The child has its copies; ours would keep the channel open forever. */
	if (j->ctl_child >= 0)
		close(j->ctl_child);
	if (j->shm_child >= 0)
		close(j->shm_child);
	j->ctl_child = j->shm_child = -1;
	j->fd = fds[0];
	j->started = 1;
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

enum { REAP_EXITED, REAP_DEADLINE, REAP_STALLED, REAP_ABORT, REAP_MEMORY, REAP_PROTOCOL };

static void job_finish(struct job *j, int status);

static void job_reap(struct job *j, int why)
{
	int status = 0;

	if (why != REAP_EXITED) {
		kill(-j->pid, SIGKILL);
		kill(j->pid, SIGKILL);
		j->timed_out = why == REAP_DEADLINE;
		j->stalled = why == REAP_STALLED;
		j->aborted = why == REAP_ABORT;
		j->mem_exceeded = why == REAP_MEMORY;
		j->protocol_error = why == REAP_PROTOCOL;
	}
	while (waitpid(j->pid, &status, 0) < 0 && errno == EINTR)
		;
	job_finish(j, status);
}

/*
 * Reaps j if it has exited, without waiting; returns 1 when it did.  A
 * child whose output reached its end may still be alive (and waiting on
 * the judge), so the pool never blocks on it: it keeps serving its
 * channel and its limits until it really exits.
 */
static int job_try_reap(struct job *j)
{
	int status = 0;
	pid_t got;

	while ((got = waitpid(j->pid, &status, WNOHANG)) < 0 && errno == EINTR)
		;
	if (got == 0)
		return 0;
	job_finish(j, status);
	return 1;
}

static void job_finish(struct job *j, int status)
{
	if (j->fd >= 0)
		close(j->fd);
	j->fd = -1;
	if (j->ctl >= 0)
		close(j->ctl);
	j->ctl = -1;
	j->wall_ms = clrt_now_ms() - j->start_ms;
	j->exited = WIFEXITED(status);
	j->exit_code = j->exited ? WEXITSTATUS(status) : -1;
	j->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	j->pid = 0;
	if (j->on_finish)
		j->on_finish(j->finish_ctx, j);
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

/* Resident set of pid in bytes (from /proc/PID/statm), 0 when unknown. */
static unsigned long long rss_bytes(pid_t pid)
{
	char path[64], buf[128];
	unsigned long long size = 0, resident = 0;
	ssize_t got;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	got = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (got <= 0)
		return 0;
	buf[got] = '\0';
	if (sscanf(buf, "%llu %llu", &size, &resident) != 2)
		return 0;
	return resident * (unsigned long long)sysconf(_SC_PAGESIZE);
}

/* Which limit j is past, REAP_EXITED when none; lowers *wait_ms to its next check. */
static int overdue(struct job *j, double now, double *wait_ms)
{
	double left = j->start_ms + j->timeout_s * 1e3 - now;
	double age = j->stall_s > 0 ? age_s(j->progress) : -1;

	if (left <= 0)
		return REAP_DEADLINE;
	if (age >= 0 && age > j->stall_s)
		return REAP_STALLED;
	if (j->mem_limit) {
		unsigned long long rss = rss_bytes(j->pid);

		if (rss > j->peak_rss)
			j->peak_rss = rss;
		if (rss > j->mem_limit)
			return REAP_MEMORY;
		if (*wait_ms > POOL_MEM_POLL_MS)
			*wait_ms = POOL_MEM_POLL_MS;
	}
	if (left < *wait_ms)
		*wait_ms = left;
	return REAP_EXITED;
}

/* Kills jobs past a limit; returns how many it reaped. */
static size_t reap_overdue(struct job *jobs, size_t started, double *wait_ms)
{
	double now = clrt_now_ms();
	size_t reaped = 0;

	for (size_t i = 0; i < started; i++) {
		struct job *j = &jobs[i];
		int why;

		if (!j->started || !j->pid)
			continue;
		why = overdue(j, now, wait_ms);
		if (why != REAP_EXITED) {
			job_reap(j, why);
			reaped++;
		} else if (j->fd < 0) {
			/* its output ended: look again soon whether it has exited */
			reaped += (size_t)job_try_reap(j);
			if (*wait_ms > POOL_MEM_POLL_MS)
				*wait_ms = POOL_MEM_POLL_MS;
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

/* Collects the fds to wait on: each running job's output, and its channel. */
static size_t watch(struct job *jobs, size_t started, struct pollfd *pfd, size_t *map)
{
	size_t np = 0;

	for (size_t i = 0; i < started; i++) {
		if (!jobs[i].started || !jobs[i].pid)
			continue;
		if (jobs[i].fd >= 0) {
			pfd[np].fd = jobs[i].fd;
			pfd[np].events = POLLIN;
			map[np++] = i;
		}
		if (jobs[i].ctl < 0)
			continue;
		pfd[np].fd = jobs[i].ctl;
		pfd[np].events = POLLIN;
		map[np++] = i;
	}
	return np;
}

/*
 * Handles what poll() saw on pfd[k]; returns 1 when the job ended.  The
 * channel is served before the output, so a request sent just before the
 * child exits is still answered.
 */
static int serve(struct job *j, const struct pollfd *p, int echo, pool_msg_fn *on_msg, void *ctx)
{
	if (!(p->revents & (POLLIN | POLLHUP | POLLERR)))
		return 0;
	if (p->fd == j->ctl) {
		if (!(p->revents & POLLIN) || !on_msg) {
			close(j->ctl); /* the child closed its end: nothing more to answer */
			j->ctl = -1;
		} else if (on_msg(ctx, j) < 0) {
			job_reap(j, REAP_PROTOCOL);
			return 1;
		}
		return 0;
	}
	if (job_drain(j, echo)) {
		close(j->fd);
		j->fd = -1;
		return job_try_reap(j);
	}
	return 0;
}

/* The jobs among the first `started` that run and count against parallel. */
static size_t counted(const struct job *jobs, size_t started)
{
	size_t c = 0;

	for (size_t i = 0; i < started; i++)
		c += jobs[i].started && jobs[i].pid && !jobs[i].beside;
	return c;
}

int pool_run(struct job *jobs, size_t njobs, int parallel, int echo, pool_msg_fn *on_msg, void *ctx,
	     char *msg, size_t n)
{
	struct pollfd *pfd = calloc(2 * njobs + 1, sizeof(*pfd));
	size_t *map = calloc(2 * njobs + 1, sizeof(*map)), next = 0, running = 0;
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

		while (next < njobs &&
		       (jobs[next].beside || counted(jobs, next) < (size_t)parallel) && !rc &&
		       !pool_signal) {
			struct job *j = &jobs[next++];

			if (j->started) { /* an earlier pool_run's, taken over */
				running += j->pid != 0;
				continue;
			}
			rc = job_start(j, msg, n);
			running += rc == 0;
			if (rc && j->beside)
				rc = 0; /* it was there to save time: the others go on without it */
		}
		if (pool_signal) {
			rc = kerr_set(msg, n, KERR_CHILD, "interrupted by signal %d (%s)",
				      (int)pool_signal, strsignal(pool_signal));
			break;
		}
		running -= reap_overdue(jobs, next, &wait_ms);
		/*
		 * A job beside the others is there for their sake: it ends with
		 * them, or is left to a later pool_run when it outlives them.
		 */
		if (next == njobs && running && !counted(jobs, next)) {
			for (size_t i = 0; i < next; i++)
				if (jobs[i].beside && jobs[i].started && jobs[i].pid) {
					if (!jobs[i].outlive)
						job_reap(&jobs[i], REAP_ABORT);
					running--;
				}
			if (!running)
				break;
		}
		np = watch(jobs, next, pfd, map);
		if (!np && !running)
			continue;
		if (poll(pfd, np, (int)wait_ms + 1) < 0) {
			if (errno != EINTR)
				rc = kerr_set(msg, n, KERR_IO, "poll: %s", strerror(errno));
			continue;
		}
		for (size_t k = np; k-- > 0;) {
			struct job *j = &jobs[map[k]];

			if (j->pid && serve(j, &pfd[k], echo, on_msg, ctx))
				running--;
		}
	}
	if (rc)
		abort_all(jobs, next);
	catch_signals(old, 0);
	free(pfd);
	free(map);
	return rc;
}

void pool_abort(struct job *j)
{
	if (j->started && j->pid)
		job_reap(j, REAP_ABORT);
}

void job_init(struct job *j)
{
	memset(j, 0, sizeof(*j));
	j->ctl = j->ctl_child = j->shm_child = j->fd = -1;
}

void job_release(struct job *j)
{
	for (size_t i = 0; i < 8 && j->argv[i]; i++)
		free(j->argv[i]);
	for (size_t i = 0; j->envp && j->envp[i]; i++)
		free(j->envp[i]);
	free(j->envp);
	if (j->ctl >= 0)
		close(j->ctl);
	if (j->ctl_child >= 0)
		close(j->ctl_child);
	if (j->shm_child >= 0)
		close(j->shm_child);
	job_init(j);
}
