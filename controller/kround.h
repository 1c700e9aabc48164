/*
 * kround.h - a round on the Kubernetes backend.  kround.c defines the
 * backend's table (backend_kubernetes, backend.h), through which the loop
 * and the round's steps reach it; the functions below are for it and for
 * the commands that are about Kubernetes only (`kctl render`).
 *
 * The pending variants of a round are split into shards of
 * evaluator.kubernetes.variants_per_pod; each shard is one EvalBatch in the
 * object store (handoff.h) and one pod running evalpod with nothing but the
 * batch's presigned URL.  On servers with Indexed Jobs (1.22+) the round is
 * one Job whose index i runs shard i; on older ones (1.20, 1.21) each shard
 * is a Job of its own.  Job names are derived from the session, round,
 * attempt and shard, so a create that meets 409 AlreadyExists (a kctl that
 * died after creating it) adopts the Job that is there.
 *
 * kctl follows every Job of the session through one watch (labels
 * kctl.dev/session), resumed from its resourceVersion when the stream ends
 * and relisted on 410 Gone.  Pods are looked at (one list per session)
 * only to say why something is wrong: a pod stuck Pending for
 * pending_timeout_s (ImagePullBackOff, ErrImagePull, Unschedulable, ...)
 * fails its Job, and a failed Job's pods say OOMKilled, Evicted,
 * DeadlineExceeded or an exit status.  Those are the infrastructure's
 * failures: the shard's variants get infra_error results naming the
 * reason, and the round's usual retries evaluate them again (three such
 * results at most); nothing is blamed on a kernel.  evalpod refusing its
 * batch (exit 1 or 2) fails the session, as on the local backend.
 *
 * A Job stuck past pending_timeout_s that cannot be deleted fails the
 * round (KERR_HTTP) rather than hold it.  The API server may restart or
 * fail for evaluator.kubernetes.api_retry_s (kube.h's retry budget).
 *
 * A kctl interrupted while Jobs run leaves them running; the resumed one
 * finds the round's unfinished Jobs by label, waits for them (diagnosed as
 * its own: pending_timeout_s counts from their pods' creation) and
 * collects their results before it submits anything new.
 */
#ifndef KCTL_KROUND_H
#define KCTL_KROUND_H

#include <jansson.h>
#include <stddef.h>

struct session;

/* Connects the session to its cluster (kubeconfig, server version). */
int kround_open(struct session *s, char *msg, size_t n);

/*
 * kctl cancel: deletes session id's Jobs in the cluster spec names (one
 * deletecollection by label, propagationPolicy Background).
 */
struct spec;
int kround_cancel(const struct spec *spec, const char *id, char *msg, size_t n);

/*
 * What session id may have left in its cluster when its Jobs could not be
 * deleted (kctl cancel --force, kctl delete --force): a new string naming
 * the Jobs its round folders under dir (the session folder) had submitted
 * and the kubectl command that deletes them all by the session's label.
 * Reads the kubeconfig for the namespace only; sends nothing.
 */
char *kround_leftovers(const struct spec *spec, const char *id, const char *dir);

/*
 * The Job that round 1, attempt 0 would submit for shards presigned batch
 * URLs (placeholders in `kctl render`); a new object, or NULL with msg.
 */
json_t *kround_render(struct session *s, int nshards, char *msg, size_t n);

/*
 * Kueue (kround-queue.c): the Workload among items (a WorkloadList's
 * items) of the Job whose metadata.uid is uid: labelled
 * kueue.x-k8s.io/job-uid or owned by it.  Borrowed from items; NULL: none.
 */
json_t *kround_workload_of(json_t *items, const char *uid);
/*
 * What Workload wl says of its Job, as kstate.h's state ("queued",
 * "evicted", or "" once admitted) and a message: the QuotaReserved
 * condition's ("couldn't assign flavors to pod set main: insufficient
 * unused quota for nvidia.com/gpu in flavor F, 1 more needed"), the
 * Evicted condition's reason and message, or "admitted".
 */
void kround_workload_says(json_t *wl, char *state, size_t sn, char *out, size_t n);

/* Label value naming session id on the cluster (malloc'd). */
char *kround_session_label(const char *id);

#endif
