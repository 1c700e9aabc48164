/*
 * run-internal.h - what cmd-run.c (running a batch's stages) and emit.c
 * (storing and printing its results) share.
 */
#ifndef EVALPOD_RUN_INTERNAL_H
#define EVALPOD_RUN_INTERNAL_H

#include "batch.h"
#include "http.h"
#include "judge.h"
#include "run.h"

#include <jansson.h>
#include <limits.h>
#include <stddef.h>

struct run {
	const char *batch_arg, *out_dir, *cache_dir, *ca_file;
	int jobs, keep_work, echo;
	char exe[PATH_MAX];
	char *work;
	struct batch b;
	struct outcome ref;
	struct outcome *progs; /* baseline (if any) first, then the variants */
	size_t nprogs;
	json_t *tdoc; /* time.json */
	uint64_t tseeds[WORKER_TIMING_SETS]; /* drawn afresh for this run */
	struct judge judge;
	struct http_opts http;
	char msg[4096];
};

/*
 * Builds every program's result and the summary, writes them (and the
 * artifacts) to the output folder and/or their presigned URLs, and prints
 * the table.  wall_ms is the batch's wall time.  Returns RUN_EXIT_OK, or
 * RUN_EXIT_INFRA with r->msg set when something could not be stored.
 */
int emit_all(struct run *r, double wall_ms);

#endif
