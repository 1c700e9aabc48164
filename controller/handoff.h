/*
 * handoff.h - a round's batch and results through object storage.
 *
 * With evaluator.storage s3://BUCKET[/PREFIX], evalpod (a local child or a
 * pod) never sees a credential: kctl uploads the EvalBatch, presigns one
 * GET for it, and presigns one PUT for every object evalpod may write
 * (each program's result and artifacts, the batch summary).  Keys are
 * unique per session, round and batch attempt, so nothing is overwritten:
 *
 *   PREFIX/SESSION/rNNN/BATCH_ID/batch.json
 *   PREFIX/SESSION/rNNN/BATCH_ID/summary.json
 *   PREFIX/SESSION/rNNN/BATCH_ID/results/ID.json
 *   PREFIX/SESSION/rNNN/BATCH_ID/artifacts/ID/NAME
 *
 * After evalpod, kctl reads the results back with signed GETs into the
 * round's local results/ folder, which the rest of the loop reads as it
 * does with the local store.  Fetching is idempotent and remembers which
 * batches it has drained (results/.fetched-BATCH_ID), so a kctl that died
 * between evalpod's upload and the fetch picks the results up on resume.
 *
 * The URLs expire after the batch's deadline (handoff_deadline) plus
 * evaluator.s3.url_margin_s, at most seven days: they outlive the Job.
 */
#ifndef KCTL_HANDOFF_H
#define KCTL_HANDOFF_H

#include <jansson.h>
#include <stddef.h>

struct session;
struct s3;

/* Opens the session's store from its spec (s->spec.storage is s3://). */
int handoff_open(struct session *s, char *msg, size_t n);

/*
 * Adds the presigned outputs to batch (an EvalBatch JSON), uploads it and
 * returns a presigned GET URL for it in *url (malloc'd; a credential, never
 * log it).  kernels lists the problem's kernel names (for artifact names).
 */
int handoff_publish(struct session *s, int round, json_t *batch, char **url, char *msg, size_t n);

/*
 * Copies into results_dir whatever the round's batches not yet drained
 * left in the store: ID.json (when not already there), ID/NAME artifacts
 * and summary.json.  Returns 0, or the store's error in msg.
 */
int handoff_fetch(struct session *s, int round, const char *results_dir, char *msg, size_t n);

#define HANDOFF_POD_START_S 300 /* a pod's time to be scheduled and pull its image */

/* The longest evalpod may take on batch, from its limits (seconds): a timing
 * phase per timed shape. */
long handoff_worst_case(const json_t *batch);

/*
 * The batch's deadline: its worst case; on the kubernetes backend the Job's
 * activeDeadlineSeconds (evaluator.kubernetes.active_deadline_s, else the
 * worst case plus HANDOFF_POD_START_S).
 */
long handoff_deadline(const struct session *s, const json_t *batch);

/* Seconds a presigned URL of batch stays valid: its deadline plus url_margin_s, at most 7 days. */
long handoff_expiry(const struct session *s, const json_t *batch);

#endif
