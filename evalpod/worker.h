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
 *
 * Work directory layout (written through temp+rename, except progress/
 * files, rewritten in place: the stall watchdog reads their mtime):
 *   batch.json  the batch document        ids.txt  programs to time
 *   ref/S-SEED-B.bin  reference outputs (shape index, seed, buffer index)
 *   progress/ID  last stage a worker entered (read after a crash/timeout)
 *   pocl/ID/  PoCL's kernel cache for that worker (IR analysis reads it)
 *   art/ID/   artifacts (IR text, assembly, trace)
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

#define WORKER_EXIT_INFRA 3
#define WORKER_EXIT_BAD   4 /* the batch itself is broken (reference fails) */

/*
 * Timing rotates through WORKER_TIMING_SETS input sets, so a kernel that
 * remembers an earlier answer instead of computing is caught; their seeds
 * are none of the correctness seeds.  k < WORKER_TIMING_SETS.
 */
#define WORKER_TIMING_SETS 3
uint64_t worker_timing_seed(const struct batch *b, unsigned k);

/* Loads WORK/batch.json into b; dies with a message on failure. */
int worker_load(struct batch *b, const char *work, char *msg, size_t n);

/* Records the stage a worker is in (WORK/progress/ID). */
void worker_progress(const char *work, const char *id, const char *stage);

/* Path of the reference output file for (shape, seed, buffer); malloc'd. */
char *worker_ref_path(const char *work, size_t shape, uint64_t seed, size_t buf);

/* Worker entry points; argv after "__worker". Return the exit status. */
int worker_reference(const char *work);
int worker_check(const char *work, const char *id);
int worker_time(const char *work);

/* Dispatches `evalpod __worker MODE WORK [ID]`. */
int cmd_worker(int argc, char **argv);

#endif
