/*
 * frontend.c - the front-end worker (worker.h): on PoCL, builds the
 * programs of a batch one after another in one process, so that PoCL reads
 * its kernel library once for all of them rather than once in every check
 * worker, and leaves each program's built module where that program's
 * check worker adopts it (pocladopt.h).
 *
 * A fresh process's first clBuildProgram on PoCL parses PoCL's kernel
 * library (about 0.4 s of CPU on the CI host); a build that finds its
 * program.bc in the cache parses nothing, and the compile at the first
 * launch does not need the library either.  The worker builds the programs
 * in WORK/w/frontend/p/.ids, in the order their check workers start; after
 * each build it moves the one program directory PoCL made into
 * WORK/w/frontend/p/ID/, with one rename, so a check worker sees the
 * directory whole or not at all.  A check worker of a program in that list
 * waits for its directory, for at most a few
 * seconds (check.c), unless this worker has written p/.failed-ID (not
 * built, or not handed over) or the parent p/.end (this worker ended);
 * after that wait it compiles for itself, as when there is no front end.
 * Beside the directory, written before it appears, WORK/w/frontend/p/ID.ms
 * holds the build's wall time in milliseconds: what one compile costs a
 * process that has read the library already (check.c reports it).
 *
 * It runs candidates' code through the compiler only, never on the device,
 * in the check workers' sandbox; a check worker takes what it left as it
 * takes nothing else on trust (pocladopt.h).  On other platforms there is
 * nothing to share and the worker exits at once.
 */
#include "worker.h"
#include "err.h"
#include "fileio.h"
#include "log.h"
#include "pocladopt.h"
#include "prog.h"
#include "sandbox.h"
#include "screen.h"
#include "xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FRONTEND_MAX_IDS 100000
/*
 * One build's limit: a source that takes the compiler longer is one its
 * own check worker will time out or fail on, and the programs after it
 * are better off compiling for themselves than waiting.  SIGALRM ends
 * the worker.
 */
#define FRONTEND_BUILD_S 20

/*
 * Moves the one program directory that appeared in cache since before
 * into dir/p/ID/BUCKET/HASH, after writing build_ms to dir/p/ID.ms.
 * Returns 0, or -1 (nothing moved, why logged).
 */
static int hand_over(const char *cache, const struct pocl_progs *before, const char *dir,
		     const char *id, double build_ms)
{
	struct pocl_progs now;
	const char *made;
	size_t fresh;
	int rc = -1;

	pocladopt_list(cache, &now);
	if ((made = pocladopt_fresh(before, &now, &fresh))) {
		char *dst_root = xasprintf("%s/p/%s", dir, id);
		char *stage = xasprintf("%s/stage-%s", dir, id);
		char *bucket = xasprintf("%s/%.2s", stage, made);
		char *src = xasprintf("%s/%s", cache, made);
		char *dst = xasprintf("%s/%s", stage, made);
		char why[1024];

		/* Assembled aside, then renamed into p/ whole. */
		if (mkdir(stage, 0755) && errno != EEXIST)
			log_info("front end: %s: cannot create '%s': %s", id, stage,
				 strerror(errno));
		else if (mkdir(bucket, 0755) && errno != EEXIST)
			log_info("front end: %s: cannot create '%s': %s", id, bucket,
				 strerror(errno));
		else if (rename(src, dst))
			log_info("front end: %s: cannot move its program: %s", id, strerror(errno));
		else if (pocladopt_write_ms(dst_root, build_ms, why, sizeof(why)))
			log_info("front end: %s: %s", id, why);
		else if (rename(stage, dst_root))
			log_info("front end: %s: cannot move its program: %s", id, strerror(errno));
		else
			rc = 0;
		free(dst_root);
		free(stage);
		free(bucket);
		free(src);
		free(dst);
	} else {
		log_info("front end: %s: %zu new program directories, not one", id, fresh);
	}
	pocladopt_release(&now);
	return rc;
}

/*
 * Tells id's check worker, which may be waiting for the program, that it
 * will not come: dir/p/.failed-ID (an id never starts with '.').
 */
static void give_up(const char *dir, const char *id, int built)
{
	char *path = xasprintf("%s/p/.failed-%s", dir, id), msg[512];

	if (!built)
		log_info("front end: %s: not built (its check worker will say why)", id);
	if (file_mark(path, msg, sizeof(msg)))
		log_info("front end: %s", msg);
	free(path);
}

int worker_frontend(const char *work)
{
	char *dir = worker_dir(work, "frontend"), *path = xasprintf("%s/p/.ids", dir);
	char *reads[2] = { xasprintf("%s/batch.json", work), NULL };
	char *text = NULL, *save = NULL, msg[1024], *pdir = xasprintf("%s/p", dir);
	const char *cache = getenv("POCL_CACHE_DIR");
	json_t *report = NULL;
	struct batch b;
	struct clrt rt;
	size_t done = 0, count = 0;
	int rc;

	memset(&rt, 0, sizeof(rt));
	memset(&b, 0, sizeof(b));
	rc = worker_confine(dir, (const char *const *)reads, 0, &report, msg, sizeof(msg));
	json_decref(report);
	free(reads[0]);
	if (!rc)
		rc = worker_load(&b, work, msg, sizeof(msg));
	if (!rc)
		rc = clrt_open(&rt, &b.device, msg, sizeof(msg));
	if (!rc && (!cache || !clrt_is_pocl(&rt.info))) {
		log_info("front end: nothing to share on this platform");
		goto out;
	}
	/* It never launches a kernel, so it never needs to start a process. */
	if (!rc)
		rc = sandbox_lock_spawn(NULL, msg, sizeof(msg));
	if (!rc)
		rc = file_read(path, 1u << 24, &text, NULL, msg, sizeof(msg));
	if (!rc && mkdir(pdir, 0755) && errno != EEXIST)
		rc = kerr_set(msg, sizeof(msg), KERR_IO, "cannot create '%s': %s", pdir,
			      strerror(errno));
	if (rc) {
		log_error("front end: %s", msg);
		goto out;
	}
	for (char *id = strtok_r(text, "\n", &save); id && count < FRONTEND_MAX_IDS;
	     id = strtok_r(NULL, "\n", &save), count++) {
		const struct source_spec *src = batch_source(&b, id);
		struct pocl_progs before;
		struct prog pg;
		char *opts;
		double build_ms;
		int built;

		if (!src)
			continue;
		worker_progress(dir, id);
		pocladopt_list(cache, &before);
		memset(&pg, 0, sizeof(pg));
		/* The very options the check worker builds with (check.c). */
		opts = screen_build_options(src->options);
		alarm(FRONTEND_BUILD_S);
		built = !prog_build_source(&pg, &rt, src->source, opts, b.limits.log_max_bytes, msg,
					   sizeof(msg));
		alarm(0);
		build_ms = pg.build_ms;
		prog_release(&pg);
		if (built && !hand_over(cache, &before, dir, id, build_ms))
			done++;
		else
			give_up(dir, id, built);
		free(opts);
		pocladopt_release(&before);
	}
	log_info("front end: %zu of %zu programs built for their check workers", done, count);
out:
	clrt_close(&rt);
	batch_release(&b);
	free(text);
	free(path);
	free(pdir);
	free(dir);
	return rc ? WORKER_EXIT_INFRA : 0;
}
