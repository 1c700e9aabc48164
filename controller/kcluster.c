/*
 * kcluster.c - kctl's Jobs on a shared cluster, by session (the contract is
 * in kcluster.h).  Uses the cluster client (kube.h) and Kueue's reading of
 * kround-queue.c (kround.h).
 */
#include "kcluster.h"
#include "err.h"
#include "kround.h"
#include "kube.h"
#include "sbuf.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *kcluster_meta(json_t *obj, const char *part, const char *key)
{
	return json_string_value(
		json_object_get(json_object_get(json_object_get(obj, "metadata"), part), key));
}

/* GET of path (a list); *out the list (NULL on failure); 404 noted in *absent. */
static int kcluster_list(struct kube *k, const char *path, json_t **out, int *absent, char *msg,
			 size_t n)
{
	long status = 0;
	int rc = kube_call(k, "GET", path, NULL, NULL, out, &status, msg, n);

	if (absent)
		*absent = rc == KERR_NOTFOUND;
	if (rc && (status == 401 || status == 403)) {
		size_t len = strlen(msg);

		snprintf(msg + len, n - len,
			 " (kctl status --cluster needs the RBAC verbs list on jobs.batch%s: "
			 "manifests/kctl-cluster-viewer.yaml)",
			 strstr(path, "kueue") ? " and workloads.kueue.x-k8s.io" : "");
	}
	return rc;
}

/* The entry of (ns, label) in byname, made when missing. */
static json_t *kcluster_entry(json_t *byname, const char *ns, const char *label, json_t *job)
{
	char *key = xasprintf("%s/%s", ns, label);
	json_t *e = json_object_get(byname, key);

	if (!e) {
		const char *sid = kcluster_meta(job, "annotations", "kctl.dev/session-id");
		const char *queue = kcluster_meta(job, "labels", "kueue.x-k8s.io/queue-name");

		e = json_pack("{s:s, s:s, s:s?, s:i, s:{s:i, s:i, s:i, s:i, s:i}, s:s?, s:n}",
			      "namespace", ns, "session", label, "session_id", sid, "round", -1,
			      "jobs", "total", 0, "active", 0, "succeeded", 0, "failed", 0,
			      "suspended", 0, "queue", queue, "kueue");
		json_object_set_new(byname, key, e);
	}
	free(key);
	return e;
}

/* Which count Job job goes to: Complete, Failed, suspended, else active. */
static const char *kcluster_job_kind(json_t *job)
{
	json_t *c;
	size_t i;

	json_array_foreach (json_object_get(json_object_get(job, "status"), "conditions"), i, c) {
		const char *t = json_string_value(json_object_get(c, "type"));
		const char *st = json_string_value(json_object_get(c, "status"));

		if (t && st && !strcmp(st, "True") && !strcmp(t, "Complete"))
			return "succeeded";
		if (t && st && !strcmp(st, "True") && !strcmp(t, "Failed"))
			return "failed";
	}
	return json_is_true(json_object_get(json_object_get(job, "spec"), "suspend")) ? "suspended"
										      : "active";
}

static void kcluster_bump(json_t *jobs, const char *key)
{
	json_object_set_new(jobs, key,
			    json_integer(json_integer_value(json_object_get(jobs, key)) + 1));
}

/*
 * Counts job into its session's entry; its Workload (in wls) when it waits.
 * no_wls: why there is no list of Workloads (state "no-kueue" for a 404,
 * "unknown" otherwise), or NULL.
 */
static void kcluster_add(json_t *byname, json_t *job, json_t *wls, const char *no_wls)
{
	const char *kind = kcluster_job_kind(job), *ns;
	const char *label = kcluster_meta(job, "labels", "kctl.dev/session");
	const char *round = kcluster_meta(job, "labels", "kctl.dev/round");
	json_t *md = json_object_get(job, "metadata"), *e;
	char state[16] = "", text[700] = "";

	ns = json_string_value(json_object_get(md, "namespace"));
	if (!ns || !label)
		return;
	e = kcluster_entry(byname, ns, label, job);
	kcluster_bump(json_object_get(e, "jobs"), "total");
	kcluster_bump(json_object_get(e, "jobs"), kind);
	if (round) {
		char *end;
		long r = strtol(round, &end, 10);

		if (*round && !*end && r >= 0 && r < 1000000 &&
		    r > json_integer_value(json_object_get(e, "round")))
			json_object_set_new(e, "round", json_integer(r));
	}
	if (strcmp(kind, "suspended") || !json_is_null(json_object_get(e, "kueue")))
		return;
	if (no_wls) {
		snprintf(state, sizeof(state), "%s", wls ? "unknown" : "no-kueue");
		snprintf(text, sizeof(text), "%s", no_wls);
	} else {
		json_t *wl = kround_workload_of(json_object_get(wls, "items"),
						json_string_value(json_object_get(md, "uid")));

		if (wl) {
			kround_workload_says(wl, state, sizeof(state), text, sizeof(text));
		} else {
			snprintf(state, sizeof(state), "no-kueue");
			snprintf(text, sizeof(text), "no Kueue Workload found for Job %s",
				 json_string_value(json_object_get(md, "name")));
		}
	}
	json_object_set_new(e, "kueue", json_pack("{s:s, s:s}", "state", state, "message", text));
}

static int kcluster_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

json_t *kcluster_sessions(struct kube *k, const char *ns, char *msg, size_t n)
{
	struct sbuf jp = SBUF_INIT, wp = SBUF_INIT;
	json_t *jobs = NULL, *wls = NULL, *byname = json_object(), *out = NULL, *job, *e;
	char why[600] = "";
	int no_kueue = 0, looked = 0;
	const char *key;
	size_t i;

	if (ns) {
		sbuf_addf(&jp,
			  "/apis/batch/v1/namespaces/%s/jobs?labelSelector=kctl.dev%%2Fsession",
			  ns);
		sbuf_addf(&wp, "/apis/kueue.x-k8s.io/v1beta1/namespaces/%s/workloads", ns);
	} else {
		sbuf_adds(&jp, "/apis/batch/v1/jobs?labelSelector=kctl.dev%2Fsession");
		sbuf_adds(&wp, "/apis/kueue.x-k8s.io/v1beta1/workloads");
	}
	if (kcluster_list(k, jp.buf, &jobs, NULL, msg, n))
		goto out;
	/* Workloads say why Jobs wait: only worth a request when some do */
	json_array_foreach (json_object_get(jobs, "items"), i, job) {
		if (looked || strcmp(kcluster_job_kind(job), "suspended"))
			continue;
		looked = 1;
		if (kcluster_list(k, wp.buf, &wls, &no_kueue, why, sizeof(why))) {
			if (no_kueue)
				snprintf(why, sizeof(why), "no Kueue Workload API in the cluster");
			/* a Workload list refused is said per session, not fatal: Jobs were listed */
			wls = no_kueue ? NULL : json_object();
		}
	}
	json_array_foreach (json_object_get(jobs, "items"), i, job)
		kcluster_add(byname, job, wls, why[0] ? why : NULL);
	out = json_array();
	/* jansson keeps an object's keys in insertion order: sort them */
	{
		const char **keys = xcalloc(json_object_size(byname) + 1, sizeof(*keys));
		size_t count = 0;

		json_object_foreach (byname, key, e)
			keys[count++] = key;
		qsort(keys, count, sizeof(*keys), kcluster_cmp);
		for (i = 0; i < count; i++)
			json_array_append(out, json_object_get(byname, keys[i]));
		free(keys);
	}
out:
	json_decref(byname);
	json_decref(jobs);
	json_decref(wls);
	sbuf_release(&jp);
	sbuf_release(&wp);
	return out;
}
