/*
 * kcluster.h - kctl's Jobs on a shared cluster, by session: what `kctl
 * status --cluster` shows (cmd-cluster.c).  Every kctl session labels its
 * Jobs kctl.dev/session (kround.h), whoever ran it, so one list of Jobs
 * by that label (in a namespace, or across all of them, which needs the
 * ClusterRole of manifests/kctl-cluster-viewer.yaml) finds the sessions
 * of every user, and one list of Kueue Workloads in the same scope says
 * which of them wait for quota.
 */
#ifndef KCTL_KCLUSTER_H
#define KCTL_KCLUSTER_H

#include <jansson.h>
#include <stddef.h>

struct kube;

/*
 * The sessions with Jobs in namespace ns (NULL: every namespace), sorted by
 * namespace and session label: a new array of objects
 *   namespace, session (the label), session_id (the kctl.dev/session-id
 *   annotation, or null), round (the newest round with Jobs), jobs {total,
 *   active, succeeded, failed, suspended}, queue (Kueue LocalQueue, or
 *   null), kueue {state, message} (the state of kstate.h, from the Workload
 *   of the session's first suspended Job: "queued", "evicted", "" once
 *   admitted; "no-kueue" when the Workload API is absent; null when no Job
 *   is suspended).
 * A Job is counted once: succeeded (Complete), failed (Failed), suspended
 * (spec.suspend), else active.  NULL on failure, with msg keeping the
 * server's Status (a 403 says which RBAC the listing needs).
 */
json_t *kcluster_sessions(struct kube *k, const char *ns, char *msg, size_t n);

#endif
