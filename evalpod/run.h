/*
 * run.h - `evalpod run`: the parent of one batch evaluation.
 */
#ifndef EVALPOD_RUN_H
#define EVALPOD_RUN_H

#include <jansson.h>
#include <stddef.h>

#include "batch.h"

#define RESULT_SCHEMA  "evalpod.result"
#define RESULT_VERSION 1
#define SUMMARY_SCHEMA "evalpod.summary"

/* Exit statuses of `evalpod run`. */
enum {
	RUN_EXIT_OK = 0,    /* the batch ran; see each result's status */
	RUN_EXIT_BATCH = 1, /* the batch document or its reference is at fault */
	RUN_EXIT_USAGE = 2,
	RUN_EXIT_INFRA = 3, /* no device, out of memory, storage unreachable */
	RUN_EXIT_SLOW = 4,  /* the reference ran past its deadline: the machine or the limit */
};

/* Everything the parent learned about one program. */
struct outcome {
	const struct source_spec *src;
	int is_baseline;
	json_t *check; /* WORK/check/ID.json, or a synthesised one */
	json_t *time;  /* its entry in time.json, NULL if not timed */
	double check_wall_ms;
};

/*
 * Builds the result document of one variant (schema evalpod.result v1,
 * see docs/result.md).  ref and base are the reference's and the
 * baseline's outcomes (base may be NULL); tdoc is time.json (may be NULL).
 * Returns a new reference.
 */
json_t *result_build(const struct batch *b, const struct outcome *o, const struct outcome *ref,
		     const struct outcome *base, json_t *tdoc);

/*
 * A batch with several timed shapes: adds performance_by_shape to result,
 * per timed shape (the primary included) the object performance is, as
 * measured at that shape, with gflops and gbs from the problem's flops and
 * bytes there.  docs[s] is the time document of timed shape s (NULL when it
 * was not timed); id is the program's, base_id the baseline's (may be
 * NULL).  A result that is ok at the primary but failed, or above the peaks,
 * at another timed shape takes that failure as its status and fault and
 * loses its figures: every bucket is judged alike.  Does nothing to a
 * result that is not ok.
 */
void result_by_shape(const struct batch *b, json_t *result, const char *id, const char *base_id,
		     json_t *const *docs);

/* Roofline figures and the bottleneck class; adds "roofline" to result. */
void result_roofline(const struct batch *b, json_t *result, json_t *tdoc);

/* What `evalpod run --help` prints. */
extern const char run_usage[];
int cmd_run(int argc, char **argv);
int cmd_devices(int argc, char **argv);

#endif
