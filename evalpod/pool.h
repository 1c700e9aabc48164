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
 * SIGINT, SIGTERM and SIGHUP received while jobs run kill every running
 * job's process group; pool_run then returns KERR_CHILD and
 * pool_interrupted() tells which signal it was.
 */
#ifndef EVALPOD_POOL_H
#define EVALPOD_POOL_H

#include <stddef.h>
#include <sys/types.h>

#define POOL_TAIL 4096

struct job {
	/* in */
	char *argv[8]; /* NULL-terminated; argv[0] is the executable */
	char *env[6];  /* "NAME=value", NULL-terminated, may be empty */
	double timeout_s;
	const char *progress; /* file the worker rewrites as it moves on, or NULL */
	double stall_s;       /* kill when progress is older than this (0: never) */
	/* out */
	int started;
	int exited; /* WIFEXITED */
	int exit_code;
	int signal;    /* terminating signal, 0 if none */
	int timed_out; /* we killed it at its deadline */
	int stalled;   /* we killed it: progress stood still for stall_s */
	int aborted;   /* we killed it: the pool was interrupted or failed */
	double wall_ms;
	char tail[POOL_TAIL]; /* end of its stderr, NUL-terminated */
	/* private */
	pid_t pid;
	int fd;
	double start_ms;
	size_t tail_len;
};

/*
 * Runs every job to completion.  Returns 0, or KERR_IO when a process
 * could not be started (msg says why; jobs not started have started == 0).
 * When echo is set, children's stderr is copied to ours as it arrives.
 */
int pool_run(struct job *jobs, size_t njobs, int parallel, int echo, char *msg, size_t n);

/* The signal that interrupted pool_run, or 0. */
int pool_interrupted(void);

/* Frees the strings a caller put in argv/env with xstrdup/xasprintf. */
void job_release(struct job *j);

#endif
