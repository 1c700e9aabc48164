/*
 * test-pool.c - pool.h: a job beside the others ends with them, or, with
 * outlive, is left running for a later pool_run to take over, or for
 * pool_abort.  The jobs are /bin/sh scripts that wait for a file, so what
 * is asserted does not depend on how busy the machine is.
 */
#include "test.h"
#include "pool.h"
#include "xalloc.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/test-pool-XXXXXX";

/* A job running script under /bin/sh, with 30 s to live. */
static void sh_job(struct job *j, const char *script)
{
	job_init(j);
	j->argv[0] = xstrdup("/bin/sh");
	j->argv[1] = xstrdup("-c");
	j->argv[2] = xstrdup(script);
	j->timeout_s = 30;
}

static char *path(const char *name)
{
	return xasprintf("%s/%s", dir, name);
}

static void touch(const char *name)
{
	char *p = path(name);
	FILE *f = fopen(p, "w");

	CHECK(f != NULL);
	if (f)
		fclose(f);
	free(p);
}

/* A script that waits for `name` to exist, prints what, exits with code. */
static char *waiter(const char *name, const char *what, int code)
{
	char *p = path(name), *s;

	s = xasprintf("while [ ! -e %s ]; do /bin/sleep 0.02; done; echo %s; exit %d", p, what,
		      code);
	free(p);
	return s;
}

TEST(beside_job_ends_with_the_others)
{
	struct job jobs[2];
	char *w = waiter("never", "x", 0), msg[256];

	sh_job(&jobs[0], w);
	jobs[0].beside = 1;
	sh_job(&jobs[1], "exit 0");
	CHECK(pool_run(jobs, 2, 1, 0, NULL, NULL, msg, sizeof(msg)) == 0);
	CHECK(jobs[1].exited && jobs[1].exit_code == 0);
	CHECK(jobs[0].started && jobs[0].aborted && jobs[0].pid == 0);
	CHECK(jobs[0].signal == SIGKILL);
	job_release(&jobs[0]);
	job_release(&jobs[1]);
	free(w);
}

TEST(outliving_job_is_taken_over_by_a_later_pool)
{
	struct job first[2], second[2];
	char *w = waiter("go", "finished", 3), msg[256];

	sh_job(&first[0], w);
	first[0].beside = first[0].outlive = 1;
	sh_job(&first[1], "exit 0");
	/* Returns with the outliving job still waiting for "go". */
	CHECK(pool_run(first, 2, 1, 0, NULL, NULL, msg, sizeof(msg)) == 0);
	CHECK(first[1].exited && first[1].exit_code == 0);
	CHECK(first[0].started && first[0].pid > 0 && !first[0].aborted && !first[0].exited);
	CHECK(kill(first[0].pid, 0) == 0);

	/* A later pool watches it instead of starting it again. */
	second[0] = first[0];
	second[0].outlive = 0;
	second[0].beside = 0;
	sh_job(&second[1], "exit 0");
	touch("go");
	CHECK(pool_run(second, 2, 2, 0, NULL, NULL, msg, sizeof(msg)) == 0);
	CHECK(second[0].exited && second[0].exit_code == 3 && !second[0].aborted);
	CHECK(strstr(second[0].tail, "finished") != NULL);
	CHECK(second[0].pid == 0);
	CHECK(second[1].exited && second[1].exit_code == 0);
	pool_abort(&second[0]); /* nothing left to kill */
	CHECK(!second[0].aborted);
	job_release(&second[0]);
	job_release(&second[1]);
	job_release(&first[1]);
	free(w);
}

TEST(outliving_job_that_nobody_takes_is_aborted)
{
	struct job jobs[2];
	char *w = waiter("never", "x", 0), msg[256];
	pid_t pid;

	sh_job(&jobs[0], w);
	jobs[0].beside = jobs[0].outlive = 1;
	sh_job(&jobs[1], "exit 1");
	CHECK(pool_run(jobs, 2, 1, 0, NULL, NULL, msg, sizeof(msg)) == 0);
	CHECK(jobs[1].exited && jobs[1].exit_code == 1);
	pid = jobs[0].pid;
	CHECK(pid > 0);
	pool_abort(&jobs[0]);
	CHECK(jobs[0].aborted && jobs[0].pid == 0 && jobs[0].signal == SIGKILL);
	/* Reaped: the pid is no longer ours (or anyone's child of ours). */
	CHECK(kill(pid, 0) != 0);
	job_release(&jobs[0]);
	job_release(&jobs[1]);
	free(w);
}

int main(void)
{
	char *p;

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(beside_job_ends_with_the_others);
	RUN(outliving_job_is_taken_over_by_a_later_pool);
	RUN(outliving_job_that_nobody_takes_is_aborted);
	p = path("go");
	unlink(p);
	free(p);
	rmdir(dir);
	return test_summary();
}
