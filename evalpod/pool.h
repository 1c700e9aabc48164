/*
 * pool.h - running worker processes with deadlines.
 *
 * Each job is a fork+exec of evalpod itself in its own process group, with
 * extra environment variables, stdin from /dev/null and stderr captured
 * (the last POOL_TAIL bytes are kept for the record).  Jobs run up to
 * `parallel` at a time; the parent sleeps in poll() on the children's
 * stderr pipes, never spinning, and kills a job's whole process group with
 * SIGKILL when its deadline passes, or when its progress file has not
 * changed for stall_s seconds (a hang inside a long phase).
 *
 * A job may also have a control channel: the child finds the other end of
 * a socket pair on fd POOL_CTL_FD and a shared-memory file on fd
 * POOL_SHM_FD, and the parent's on_msg hook answers what the child sends
 * (the judge of judge.h).  A hook that returns < 0 marks the job
 * protocol_error and kills it.
 *
 * With mem_limit set, the parent reads the child's resident set every
 * POOL_MEM_POLL_MS and kills it when it exceeds the limit (mem_exceeded),
 * so a memory bomb costs its own worker, not the node.
 *
 * SIGINT, SIGTERM and SIGHUP received while jobs run kill every running
 * job's process group; pool_run then returns KERR_CHILD and
 * pool_interrupted() tells which signal it was.
 *
 * A job never outlives the process that ran pool_run: it gets SIGKILL when
 * that process dies (PR_SET_PDEATHSIG, SIGKILL included), and keeps its
 * own deadline, timeout_s plus a grace of a quarter of it (at least
 * POOL_OWN_GRACE_S), as an alarm() that survives its execve: a worker
 * spinning in a hung kernel dies even when no parent is left to kill it.
 */
#ifndef EVALPOD_POOL_H
#define EVALPOD_POOL_H

#include <stddef.h>
#include <sys/types.h>

#define POOL_TAIL        4096
#define POOL_CTL_FD      3
#define POOL_SHM_FD      4
#define POOL_MEM_POLL_MS 100
#define POOL_OWN_GRACE_S 10
#define POOL_OWN_MAX_S   (7u * 24 * 3600)

struct job {
	/* in */
	char *argv[8]; /* NULL-terminated; argv[0] is the executable */
	char **envp;   /* the child's whole environment, NULL-terminated (owned) */
	double timeout_s;
	const char *progress;         /* file the worker rewrites as it moves on, or NULL */
	double stall_s;               /* kill when progress is older than this (0: never) */
	unsigned long long mem_limit; /* bytes of resident memory, 0: none */
	int ctl;                      /* parent's end of the control channel, or -1 */
	int ctl_child, shm_child;     /* given to the child as POOL_CTL_FD/POOL_SHM_FD, or -1 */
	void *user;                   /* for the on_msg hook */
	int beside;                   /* runs beside the others (see pool_run) */
	int outlive;                  /* with beside: left running for a later pool_run */
	/* called once when the job has exited (out fields set), or NULL */
	void (*on_finish)(void *ctx, struct job *j);
	void *finish_ctx;
	/* out */
	int started;
	int exited; /* WIFEXITED */
	int exit_code;
	int signal;                  /* terminating signal, 0 if none */
	int timed_out;               /* we killed it at its deadline */
	int stalled;                 /* we killed it: progress stood still for stall_s */
	int aborted;                 /* we killed it: the pool was interrupted or failed */
	int mem_exceeded;            /* we killed it: resident memory over mem_limit */
	int protocol_error;          /* we killed it: on_msg refused what it sent */
	unsigned long long peak_rss; /* largest resident set seen, bytes */
	double wall_ms;
	char tail[POOL_TAIL]; /* end of its stderr, NUL-terminated */
	/* private */
	pid_t pid;
	int fd;
	double start_ms;
	size_t tail_len;
};

/* Answers a message on j->ctl; returns 0, or < 0 to kill the job. */
typedef int pool_msg_fn(void *ctx, struct job *j);

/*
 * Runs every job to completion.  Returns 0, or KERR_IO when a process
 * could not be started (msg says why; jobs not started have started == 0).
 * A job with `beside` set is there to help the others: it starts when its
 * turn comes whatever `parallel` says and is not counted against it, a
 * failure to start it is not an error, and it is killed (aborted) once
 * every other job has ended, unless `outlive` is set too: then it is left
 * running (or exited, not yet reaped) for a later pool_run to take over, or
 * for pool_abort.  A job that is already started is not started again: a
 * later pool_run watches it, its deadline counting from its first start.
 * When echo is set, children's stderr is copied to ours as it arrives.
 */
int pool_run(struct job *jobs, size_t njobs, int parallel, int echo, pool_msg_fn *on_msg, void *ctx,
	     char *msg, size_t n);

/* Kills and reaps j if it still runs (aborted set); nothing when it has ended. */
void pool_abort(struct job *j);

/* Initialises j (all fds -1); the caller fills argv, envp and the limits. */
void job_init(struct job *j);

/* The signal that interrupted pool_run, or 0. */
int pool_interrupted(void);

/* Frees argv's and envp's strings (xstrdup/xasprintf) and closes the channel fds. */
void job_release(struct job *j);

#endif
