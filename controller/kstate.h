/*
 * kstate.h - what a session on the Kubernetes backend tells other
 * processes about its place in the cluster: the file kube.json in the
 * session folder, written atomically by the kctl that drives the session
 * (kround*.c) and read, without a lock and without writing, by `kctl
 * status` and `kctl status --watch` (cmd-status.c).  Not in the state
 * database: it says what the cluster said a moment ago, not what the
 * session recorded, and is rewritten only when that changes.
 *
 * The record is a JSON object:
 *   backend    "kubernetes"
 *   namespace  where the session's Jobs are
 *   queue      the Kueue LocalQueue (evaluator.kubernetes.queue), or absent
 *   round      the round the state is about
 *   state      "" (nothing to say: no Job waits), "queued" (Kueue has not
 *              admitted a Job for want of quota, or has not yet looked),
 *              "evicted" (Kueue evicted a Job: it waits to be admitted
 *              again), "no-kueue" (Jobs suspended and no Workload API:
 *              Kueue is not installed), "unknown" (the Workloads could not
 *              be read: RBAC, an API error)
 *   message    what Kueue said (a Workload condition's message), or why
 *              kctl could not tell
 *   since      when the state began (seconds since the epoch)
 *   suspended  how many of the round's Jobs are suspended
 */
#ifndef KCTL_KSTATE_H
#define KCTL_KSTATE_H

#include <jansson.h>
#include <stddef.h>

struct sbuf;

#define KSTATE_FILE "kube.json"
#define KSTATE_MAX  (64u << 10) /* the file's size limit when it is read */

/* Writes rec to dir/kube.json atomically.  0, or KERR_IO with msg. */
int kstate_save(const char *dir, const json_t *rec, char *msg, size_t n);

/*
 * The record of the session whose folder is dir (a new reference), or NULL
 * when it has none (not on Kubernetes, or not opened since) or it is not a
 * JSON object under KSTATE_MAX bytes.
 */
json_t *kstate_load(const char *dir);

/*
 * Appends to b what rec says of a session that waits, as of now (seconds
 * since the epoch): "queued by Kueue: MESSAGE (queue Q, for 3 min 05 s)",
 * "evicted by Kueue: ...", "suspended; no Kueue Workload found: is Kueue
 * installed and the LocalQueue Q present?", "suspended; Kueue's Workloads
 * could not be read: ...".  Returns 1 when it appended, 0 when rec (NULL
 * allowed) says nothing waits.
 */
int kstate_line(struct sbuf *b, const json_t *rec, double now);

#endif
