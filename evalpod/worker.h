/*
 * worker.h - the processes evalpod runs its stages in.
 *
 * `evalpod run` (the parent) never touches the OpenCL device.  It prepares
 * a work directory and starts workers, each a fresh exec of evalpod itself
 * (`evalpod __worker MODE WORK [ID]`), so a kernel that faults, hangs or
 * exhausts a PoCL thread stack takes down only its worker:
 *
 *   reference  compile the reference, compute reference outputs for every
 *              shape and seed (and the three timing seeds) into WORK/ref/
 *   check ID   stages 1, 2 and 5 for one program: compile, correctness, IR;
 *              WORK/check/ID.json, the program binary in WORK/bin/ID.bin
 *   time       stages 3 and 4 for every program that passed, interleaved in
 *              one process: WORK/time.json and WORK/art/ID/trace.json
 *   frontend   PoCL only, beside the reference worker (when it runs) and the
 *              check workers: builds the programs of
 *              ids.txt in one process (PoCL reads its kernel library once)
 *              and leaves each built module in p/ID/ for that program's
 *              check worker to adopt (frontend.c)
 *
 * Every worker runs in the sandbox of sandbox.h and writes only to its own
 * directory, WORK/w/NAME, NAME being "reference", "time" or "p-" + the
 * program id (worker_dir).  It reads WORK/batch.json, a copy of the batch
 * without its output URLs.  Its directory holds (written through
 * temp+rename, except progress, rewritten in place: the stall watchdog
 * reads its mtime):
 *   doc.json   the check document (reference, check) or time.json (time)
 *   progress   the last stage entered, or for the timing worker the program
 *              whose kernels ran last (read after a crash or timeout)
 *   fault      what the worker's fault handler saw (world.h), if anything
 *   bin.bin    the program binary (reference, check) for the timing worker
 *   ref/S-SEED-B.bin  reference outputs (reference only; the parent maps
 *              and unlinks them before any candidate runs: judge.h)
 *   ids.txt    the programs to time, the reference first unless anchored
 *              (run-timing.c; time only)
 *   pocl/      PoCL's kernel cache (IR analysis reads it); tmp/ = TMPDIR
 *   art/       artifacts (IR text, assembly; art/ID/trace.json for time)
 *
 * Outputs are never compared in a worker: they are handed to the judge in
 * the parent (judge.h) through the channel on fds POOL_CTL_FD/POOL_SHM_FD.
 *
 * Exit status of a worker: 0 its document was written; WORKER_EXIT_INFRA
 * the device or the harness failed (not the candidate's fault; the document
 * says why); anything else, or death by signal, is judged by the parent.
 */
#ifndef EVALPOD_WORKER_H
#define EVALPOD_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "clrt.h"

#include <jansson.h>

#define WORKER_EXIT_INFRA 3
#define WORKER_EXIT_BAD   4 /* the batch itself is broken (reference fails) */
/*
 * The timing worker: a candidate's failed launch left the device context
 * unusable (a GPU's sticky fault: an illegal address on NVIDIA fails every
 * later call of the process).  The progress record names the candidate, the
 * fault note says what failed; the parent blames it (runtime_error /
 * launch_failed) and times again without it, in a fresh process.
 */
#define WORKER_EXIT_DEVICE_LOST 5

/*
 * The timing seeds: WORKER_TIMING_SETS input sets at every timed shape, each
 * with the reference's outputs.  A program's samples rotate through the
 * first WORKER_ROTATING_SETS, so a kernel that remembers an earlier answer
 * instead of computing is caught; the others are audit sets, which no
 * program meets before its audit (timing.c): one of its runs on inputs it
 * has never seen is verified.  Their seeds are drawn afresh for every run
 * by the parent (worker_draw_seeds) and given only to the reference and
 * timing workers, on their command line.
 */
#define WORKER_TIMING_SETS   5
#define WORKER_ROTATING_SETS 3

/* Draws WORKER_TIMING_SETS random seeds, none a correctness seed and no two alike. */
void worker_draw_seeds(const struct batch *b, uint64_t *seeds);

/* "S0,S1,...": the WORKER_TIMING_SETS seeds as text; malloc'd. */
char *worker_seeds_text(const uint64_t *seeds);

/* Parses "S0,S1,...", WORKER_TIMING_SETS seeds, into seeds; returns 0 or -1. */
int worker_parse_seeds(const char *text, uint64_t *seeds);

/* WORK/w/NAME for a worker ("reference", "time") or a program ("p-ID"); malloc'd. */
char *worker_dir(const char *work, const char *name);
char *worker_prog_dir(const char *work, const char *id);

/* Loads WORK/batch.json into b. */
int worker_load(struct batch *b, const char *work, char *msg, size_t n);

/* Records the stage a worker is in (DIR/progress). */
void worker_progress(const char *dir, const char *stage);

/*
 * The same, with a detail for a message about the stage (DIR/progress.detail,
 * removed when detail is NULL); DIR/progress keeps the stage alone.
 */
void worker_progress_at(const char *dir, const char *stage, const char *detail);

/* Path of the reference output file for (shape, seed, buffer) under dir/ref; malloc'd. */
char *worker_ref_path(const char *dir, size_t shape, uint64_t seed, size_t buf);

/*
 * The worker's end of the judge's channel (judge.h): the socket on
 * POOL_CTL_FD and the shared memory on POOL_SHM_FD, mapped read-write.
 */
struct judge_client {
	int fd;
	void *shm;
	size_t len;
};
int worker_judge_open(struct judge_client *jc, char *msg, size_t n);
void worker_judge_close(struct judge_client *jc);
struct judge_req;
struct judge_rep;
/* Sends q and waits for the verdict.  Returns 0 or KERR_IO (the parent is gone). */
int worker_judge_ask(struct judge_client *jc, const struct judge_req *q, struct judge_rep *rep,
		     char *msg, size_t n);

/*
 * Confines the worker (sandbox.h) to dir; call after opening the device.
 * report gets the layers that applied (new reference).  Returns 0 or KERR_*.
 */
int worker_confine(const char *dir, const char *const *reads, double cpu_s, json_t **report,
		   char *msg, size_t n);

/*
 * Once the device is open: forbids creating processes (sandbox_lock_spawn)
 * unless the platform is PoCL, which runs the linker for every kernel.
 * Returns 0 or KERR_*.
 */
int worker_lock_spawn(const struct clrt *rt, json_t *report, char *msg, size_t n);

/* Worker entry points; argv after "__worker". Return the exit status. */
int worker_reference(const char *work, const uint64_t *tseeds);
int worker_check(const char *work, const char *id);
int worker_time(const char *work, const uint64_t *tseeds);
int worker_frontend(const char *work);
/* The timing worker at timed shape `shape` (an index into the shapes; -1: the primary). */
int worker_time_at(const char *work, const uint64_t *tseeds, long shape);

/* Dispatches `evalpod __worker MODE WORK [ID|SEEDS] [SHAPE]` (SHAPE: time only). */
int cmd_worker(int argc, char **argv);

#endif
