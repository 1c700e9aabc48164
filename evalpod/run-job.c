/*
 * run-job.c - what the phases of `evalpod run` share to drive their
 * workers: setting up a worker's job (its clean environment, PoCL's
 * cache, the memory limit), the timing seeds on its command line, its
 * channel to the judge, and the progress lines on stderr.  Declared in
 * run-internal.h; below cmd-run.c (the reference and the checks) and
 * run-timing.c (the timing phase), which both use it.
 *
 * May use: run-internal.h (struct run), judge, pool, sandbox, xalloc;
 * never cmd-run.c or run-timing.c.
 */
#include "run-internal.h"
#include "judge.h"
#include "pool.h"
#include "sandbox.h"
#include "xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

extern char **environ;

/* The worker's ASAN_OPTIONS: LeakSanitizer's exit check needs ptrace, which the sandbox forbids. */
static char *asan_options(void)
{
#if defined(__SANITIZE_ADDRESS__)
	const char *cur = getenv("ASAN_OPTIONS");

	return xasprintf("ASAN_OPTIONS=%s%sdetect_leaks=0", cur ? cur : "", cur && *cur ? ":" : "");
#else
	return NULL;
#endif
}

/*
 * The worker's GLIBC_TUNABLES: malloc asks for transparent huge pages for
 * the memory it maps (glibc 2.35 on; older ones ignore the name).  A check
 * worker's compile grows the heap by tens of MiB, and on a host where page
 * faults are costly (the CI VM: about 10 us each) one batch of 17 matmul
 * programs took 742,000 of them, about a fifth of its CPU time; with this,
 * 358,000 (docs/benchmarks.md).  Tunables of evalpod's own environment
 * come after ours, so a user's setting wins.
 */
static char *malloc_tunables(void)
{
	const char *cur = getenv("GLIBC_TUNABLES");

	return xasprintf("GLIBC_TUNABLES=glibc.malloc.hugetlb=1%s%s", cur && *cur ? ":" : "",
			 cur ? cur : "");
}

/*
 * Sets up the job of a worker whose directory is dir (taken): a clean
 * environment (sandbox_worker_env) with PoCL's cache and TMPDIR in the
 * worker's own directory, malloc's huge pages, and the batch's memory limit.
 */
void run_job_setup(struct run *r, struct job *j, const char *mode, char *dir, const char *arg,
		   double timeout_s)
{
	char *extra[7] = {
		xasprintf("POCL_CACHE_DIR=%s/pocl", dir),
		xstrdup("POCL_KERNEL_CACHE=1"),
		/* Keeps parallel.bc (the vectorised work-group function) for stage 5. */
		xstrdup("POCL_LEAVE_KERNEL_COMPILER_TEMP_FILES=1"),
		xasprintf("TMPDIR=%s/tmp", dir),
		malloc_tunables(),
		asan_options(),
		NULL,
	};

	job_init(j);
	j->argv[0] = xstrdup(r->exe);
	j->argv[1] = xstrdup("__worker");
	j->argv[2] = xstrdup(mode);
	j->argv[3] = xstrdup(r->work);
	j->argv[4] = arg ? xstrdup(arg) : NULL;
	j->envp = sandbox_worker_env(environ, (const char *const *)extra);
	j->timeout_s = timeout_s;
	j->mem_limit = (unsigned long long)r->b.limits.memory_mb << 20;
	for (size_t i = 0; i < 6; i++)
		free(extra[i]);
	free(dir);
}

/* "S0,S1,...": the timing seeds for a worker's command line. */
char *run_seeds_arg(const struct run *r)
{
	return worker_seeds_text(r->tseeds);
}

int run_on_judge(void *ctx, struct job *j)
{
	(void)ctx;
	return judge_serve(j->user, j->ctl);
}

/* Hands c's descriptors to job j, which owns them from now on (pool.h). */
void run_give_chan(struct job *j, struct judge_chan *c)
{
	j->ctl = c->ctl;
	j->ctl_child = c->ctl_child;
	j->shm_child = c->shm_child;
	c->ctl = c->ctl_child = c->shm_child = -1;
	j->user = c;
}

/*
 * A progress line on stderr, "evalpod: ..." (not with --quiet): what a
 * person or kctl watching the run sees move before the results exist.
 */
void run_progress(const struct run *r, const char *fmt, ...)
{
	va_list ap;

	if (r->quiet)
		return;
	va_start(ap, fmt);
	fputs("evalpod: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	fflush(stderr);
}
