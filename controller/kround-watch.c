/*
 * kround-watch.c - following a round's Jobs on the Kubernetes backend: one
 * watch per session (resumed from its resourceVersion, relisted on 410
 * Gone), and the pods looked at only to say why something is wrong (stuck
 * Pending, OOMKilled, Evicted, an exit status).  Uses the cluster client
 * (kube.h, kpod.h) and the session's services (cancellation, interruption).
 */
#include "kround.h"
#include "kround-internal.h"
#include "kpod.h"
#include "err.h"
#include "jsonx.h"
#include "kube.h"
#include "log.h"
#include "sbuf.h"
#include "session.h"
#include "services.h"
#include "pack.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <time.h>

static struct kjob *kround_find(struct kwait *w, const char *name)
{
	for (size_t i = 0; name && i < w->njobs; i++)
		if (!strcmp(w->jobs[i].name, name))
			return &w->jobs[i];
	return NULL;
}

static void kround_finish(struct kwait *w, struct kjob *j, int failed, const char *reason)
{
	if (j->done)
		return;
	j->done = 1;
	j->failed = failed;
	if (reason && !j->reason[0])
		snprintf(j->reason, sizeof(j->reason), "%s", reason);
	w->left--;
	if (!w->quiet)
		log_info("Job %s %s%s%s", j->name, failed ? "failed" : "complete",
			 reason ? ": " : "", reason ? reason : "");
}

/*
 * Within a round the Job's pod counts are all there is to show: a line
 * whenever more of its pods have ended (the local backend relays evalpod's
 * per-program lines instead).
 */
static void kround_progress(struct kwait *w, struct kjob *j, json_t *status)
{
	json_int_t ok = json_integer_value(json_object_get(status, "succeeded"));
	json_int_t bad = json_integer_value(json_object_get(status, "failed"));
	json_int_t active = json_integer_value(json_object_get(status, "active"));

	if (ok < 0 || bad < 0 || ok + bad <= j->ended_pods || ok + bad > INT_MAX)
		return;
	j->ended_pods = (int)(ok + bad);
	if (!w->quiet)
		log_info("round %d: Job %s: %lld of %d shard(s) done, %lld pod(s) failed, "
			 "%lld running",
			 w->round, j->name, (long long)ok, j->nshards, (long long)bad,
			 (long long)(active > 0 ? active : 0));
}

/* Reads a Job's conditions; finishes it when Complete or Failed. */
void kround_job_state(struct kwait *w, const char *type, json_t *obj)
{
	json_t *md = json_object_get(obj, "metadata"), *cond;
	struct kjob *j = kround_find(w, json_string_value(json_object_get(md, "name")));
	size_t i;

	if (!j || j->done)
		return;
	snprintf(j->uid, sizeof(j->uid), "%s",
		 json_string_value(json_object_get(md, "uid"))
			 ? json_string_value(json_object_get(md, "uid"))
			 : "");
	j->suspended = json_is_true(json_object_get(json_object_get(obj, "spec"), "suspend")) != 0;
	if (!strcmp(type, "DELETED")) {
		kround_finish(w, j, 1, "the Job was deleted");
		return;
	}
	kround_progress(w, j, json_object_get(obj, "status"));
	json_array_foreach (json_object_get(json_object_get(obj, "status"), "conditions"), i,
			    cond) {
		const char *t = json_string_value(json_object_get(cond, "type"));
		const char *st = json_string_value(json_object_get(cond, "status"));
		const char *why = json_string_value(json_object_get(cond, "reason"));
		const char *text = json_string_value(json_object_get(cond, "message"));
		char reason[512];

		if (!t || !st || strcmp(st, "True"))
			continue;
		if (!strcmp(t, "Complete")) {
			kround_finish(w, j, 0, NULL);
		} else if (!strcmp(t, "Failed")) {
			snprintf(reason, sizeof(reason), "%s%s%s", why ? why : "Failed",
				 text ? ": " : "", text ? text : "");
			kround_finish(w, j, 1, reason);
		}
	}
}

static int kround_event(void *arg, const char *type, json_t *obj)
{
	struct kwait *w = arg;

	kround_job_state(w, type, obj);
	/* a Job over leaves room for a shard that waits: the watch ends to submit it */
	return w->left == 0 || kround_room(w);
}

/* Lists the session's Jobs: their states, and the resourceVersion to watch from. */
static int kround_list(struct kwait *w, char *msg, size_t n)
{
	struct sbuf p = SBUF_INIT;
	json_t *list = NULL, *item;
	size_t i;
	int rc;

	sbuf_addf(&p, "/apis/batch/v1/namespaces/%s/jobs?labelSelector=", w->k->ns);
	kube_escape(&p, w->selector);
	rc = kube_call(w->k, "GET", p.buf, NULL, NULL, &list, NULL, msg, n);
	if (!rc) {
		const char *rv = json_string_value(
			json_object_get(json_object_get(list, "metadata"), "resourceVersion"));

		snprintf(w->rv, sizeof(w->rv), "%s", rv ? rv : "");
		json_array_foreach (json_object_get(list, "items"), i, item)
			kround_job_state(w, "ADDED", item);
		/* one of ours that is gone was deleted (by a person, or its TTL) */
		for (i = 0; i < w->njobs; i++) {
			int found = 0;
			size_t j;

			json_array_foreach (json_object_get(list, "items"), j, item)
				found |= !strcmp(
					w->jobs[i].name,
					json_string_value(json_object_get(
						json_object_get(item, "metadata"), "name")));
			if (!found && !w->jobs[i].done)
				kround_finish(w, &w->jobs[i], 1, "the Job is gone");
		}
	}
	json_decref(list);
	sbuf_release(&p);
	return rc;
}

/* --- pods: why something is wrong -------------------------------------------- */

struct kjob *kround_job_of_shard(struct kwait *w, int shard)
{
	for (size_t i = 0; i < w->njobs; i++)
		if (shard >= w->jobs[i].first_shard &&
		    shard < w->jobs[i].first_shard + w->jobs[i].nshards)
			return &w->jobs[i];
	return NULL;
}

/* The Job that owns pod: by its ownerReference, else by its shard. */
static struct kjob *kround_job_of_pod(struct kwait *w, json_t *pod)
{
	json_t *refs = json_object_get(json_object_get(pod, "metadata"), "ownerReferences"), *ref;
	size_t i;

	json_array_foreach (refs, i, ref) {
		const char *kind = json_string_value(json_object_get(ref, "kind"));

		if (kind && !strcmp(kind, "Job"))
			return kround_find(w, json_string_value(json_object_get(ref, "name")));
	}
	return kround_job_of_shard(w, kpod_shard(pod));
}

/*
 * Notes that shard's evalpod exited with EVALPOD_EXIT_SLOW: the reference
 * ran past its deadline, which says the node is slow or the limit low, not
 * that the batch is bad.  Shards outside job j are the pod's word only and
 * are not taken.
 */
static void kround_note_slow(struct kjob *j, int shard)
{
	if (shard < j->first_shard || shard >= j->first_shard + j->nshards)
		return;
	if (!j->slow)
		j->slow = xcalloc((size_t)j->nshards, 1);
	j->slow[shard - j->first_shard] = 1;
}

int kround_is_slow(const struct kjob *j, int shard)
{
	return j->slow && shard >= j->first_shard && shard < j->first_shard + j->nshards &&
	       j->slow[shard - j->first_shard];
}

/*
 * Ends Job j, stuck as j->pod_reason says: deletes it and fails it.  A
 * Job that cannot be deleted (403: the Role lacks delete) would hold the
 * round until its activeDeadlineSeconds: the round fails instead, saying
 * what to do.
 */
static void kround_end_stuck(struct kwait *w, struct kjob *j)
{
	char *del = xasprintf("/apis/batch/v1/namespaces/%s/jobs/%s?propagationPolicy=Background",
			      w->k->ns, j->name);
	char msg[1024];
	long status = 0;
	int rc;

	log_warn("Job %s: %s; deleting it", j->name, j->pod_reason);
	rc = kube_call(w->k, "DELETE", del, NULL, NULL, NULL, &status, msg, sizeof(msg));
	free(del);
	if (!rc || status == 404) {
		kround_finish(w, j, 1, NULL);
	} else if (rc != KERR_CHILD) {
		w->failed = 1;
		char rbac[256] = "";

		if (status == 401 || status == 403)
			snprintf(
				rbac, sizeof(rbac),
				"kctl needs the RBAC verb 'delete' on jobs.batch in namespace %s: ",
				w->k->ns);
		snprintf(w->why, sizeof(w->why),
			 "Job %s is stuck (%s) and kctl could not delete it: %s%s; delete it "
			 "(kubectl delete job -n %s %s) and run 'kctl resume'",
			 j->name, j->pod_reason, rbac, msg, w->k->ns, j->name);
	}
}

/*
 * Lists the round's pods (one request; attempt < 0: every attempt's) and
 * records why they fail; with act, a Job whose pod has been stuck past
 * pending_timeout_s is ended (kround_end_stuck).  The pending clock runs
 * from the pod's creationTimestamp, else its Job's, as the API server
 * says: a Job adopted by a resumed kctl is not given a new one.  Returns
 * the count of pods that said "exit status 1/2" (evalpod refused its
 * batch) in *refused.
 */
int kround_diagnose(struct kwait *w, int act, int *refused, char *msg, size_t n)
{
	struct sbuf p = SBUF_INIT, sel = SBUF_INIT;
	json_t *list = NULL, *pod;
	time_t now = time(NULL);
	size_t i;
	int rc;

	*refused = 0;
	sbuf_addf(&sel, "%s,kctl.dev/round=%d", w->selector, w->round);
	if (w->attempt >= 0)
		sbuf_addf(&sel, ",kctl.dev/attempt=%d", w->attempt);
	sbuf_addf(&p, "/api/v1/namespaces/%s/pods?labelSelector=", w->k->ns);
	kube_escape(&p, sel.buf);
	rc = kube_call(w->k, "GET", p.buf, NULL, NULL, &list, NULL, msg, n);
	json_array_foreach (json_object_get(list, "items"), i, pod) {
		struct kjob *j = kround_job_of_pod(w, pod);
		time_t born = kpod_time(json_string_value(
			json_object_get(json_object_get(pod, "metadata"), "creationTimestamp")));
		char why[400];
		int stuck;

		kpod_diagnose(pod, why, sizeof(why), &stuck);
		if (!j || !why[0])
			continue;
		if (!born)
			born = j->created;
		if (strstr(why, "(exit status 1)") || strstr(why, "(exit status 2)"))
			(*refused)++;
		if (kpod_exit_status(pod) == EVALPOD_EXIT_SLOW)
			kround_note_slow(j, kpod_shard(pod));
		if (!j->pod_reason[0] || stuck)
			snprintf(j->pod_reason, sizeof(j->pod_reason), "pod %s: %s",
				 json_string_value(
					 json_object_get(json_object_get(pod, "metadata"), "name")),
				 why);
		if (act && stuck && !j->done && !w->failed && born &&
		    now - born >= w->s->spec.kube.pending_timeout_s)
			kround_end_stuck(w, j);
	}
	json_decref(list);
	sbuf_release(&p);
	sbuf_release(&sel);
	return rc;
}

/* Seconds between looks at the pods: often enough to honour pending_timeout_s. */
int kround_diag_every(const struct session *s)
{
	int t = s->spec.kube.pending_timeout_s / 3;

	return t < 2 ? 2 : t > KROUND_DIAG_EVERY_S ? KROUND_DIAG_EVERY_S : t;
}

/* Whether to stop: kctl interrupted or the session cancelled (k->stop too). */
int kround_stop(void *arg)
{
	struct kwait *w = arg;

	if (!w->interrupted && !w->cancelled) {
		if (round_interrupted())
			w->interrupted = 1;
		else if (session_cancelled(w->s))
			w->cancelled = 1;
	}
	return w->interrupted || w->cancelled;
}

static int kround_tick(void *arg)
{
	struct kwait *w = arg;
	char msg[1024];
	int refused;

	if (kround_stop(w))
		return 1;
	if (time(NULL) >= w->next_diag) {
		w->next_diag = time(NULL) + kround_diag_every(w->s);
		if (kround_diagnose(w, 1, &refused, msg, sizeof(msg)))
			log_warn("%s", msg);
	}
	kround_queue_look(w);
	kround_queue_live(w);
	return w->left == 0 || w->failed || kround_room(w);
}

/*
 * Follows the Jobs until all are over, kctl is interrupted or the session
 * cancelled (0 then, with w saying which).  A failed watch is resumed from
 * its resourceVersion; the failures of the watches and of the lists share
 * the API's retry budget (kube_backoff).
 */
int kround_wait(struct kwait *w, char *msg, size_t n)
{
	char *path = xasprintf("/apis/batch/v1/namespaces/%s/jobs", w->k->ns);
	int rc = kround_list(w, msg, n);

	while (!rc && (w->left || w->unsent) && !w->failed && !kround_stop(w)) {
		int r;

		if (kround_room(w)) {
			rc = kround_submit_next(w, msg, n);
			continue;
		}
		r = kube_watch(w->k, path, w->selector, w->rv, sizeof(w->rv), KROUND_WATCH_S,
			       kround_event, kround_tick, w, msg, n);

		if (w->failed) {
			break;
		} else if (r == KUBE_WATCH_GONE) {
			log_info("watch: resourceVersion %s expired; listing again", w->rv);
			rc = kround_list(w, msg, n);
		} else if (r < 0 && w->k->transient && w->k->retry_s > 0) {
			rc = kube_backoff(w->k, msg, n);
		} else if (r < 0) {
			rc = r;
		}
	}
	kround_queue_clear(w);
	if (!rc && w->failed)
		rc = kerr_set(msg, n, KERR_HTTP, "%s", w->why);
	if (rc == KERR_CHILD && (w->interrupted || w->cancelled))
		rc = 0; /* stopped while waiting for the API: the caller says which */
	free(path);
	return rc;
}
