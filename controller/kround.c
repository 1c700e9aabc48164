/*
 * kround.c - the Kubernetes backend's rounds (the contract is in kround.h):
 * connecting to the cluster, one attempt at a round (publish the shards'
 * batches, submit their Jobs, wait, conclude), adopting the Jobs a killed
 * kctl left, and what cancel and delete leave behind.  The Jobs themselves
 * are built in kround-job.c and followed in kround-watch.c.  Uses the
 * cluster client (kube.h), object storage (handoff.h), the spec and the
 * session's services; nothing of the loop.
 */
#include "kround.h"
#include "kround-internal.h"
#include "backend.h"
#include "kpod.h"
#include "err.h"
#include "fileio.h"
#include "handoff.h"
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
#include <unistd.h>

int kround_open(struct session *s, char *msg, size_t n)
{
	const struct spec_kube *sk = &s->spec.kube;
	int rc;

	if (!s->s3)
		return kerr_set(msg, n, KERR_INVALID,
				"%s: evaluator.backend kubernetes needs evaluator.storage "
				"s3://BUCKET[/PREFIX]: pods return results through object storage",
				s->spec.path);
	if (!sk->image)
		return kerr_set(msg, n, KERR_INVALID,
				"%s: evaluator.kubernetes.image: the evalpod image is required",
				s->spec.path);
	s->kube = xcalloc(1, sizeof(*s->kube));
	rc = kube_open(s->kube, sk->kubeconfig, sk->context, sk->namespace, msg, n);
	/* the API server may restart or fail for a while (evaluator.kubernetes.api_retry_s) */
	s->kube->retry_s = sk->api_retry_s;
	/* and http.h's own retries end their pauses on SIGINT/SIGTERM */
	s->kube->http.stop = round_interrupted;
	if (!rc)
		rc = kube_version(s->kube, msg, n);
	if (!rc)
		log_info("Kubernetes %s at %s, namespace %s", s->kube->git_version,
			 s->kube->kc.server, s->kube->ns);
	return rc;
}
/* --- the round ----------------------------------------------------------------- */

/* The first attempt number whose first shard's batch is not in dir. */
static int kround_next_attempt(const char *dir)
{
	for (int a = 0;; a++) {
		char *p = xasprintf("%s/batch-a%d-s0.json", dir, a);
		int there = access(p, F_OK) == 0;

		free(p);
		if (!there)
			return a;
	}
}

/* Writes an infra_error result for id saying why, unless it has a result. */
static void kround_infra_result(const char *dir, const char *id, const char *batch_id,
				const char *why)
{
	char *path = xasprintf("%s/results/%s.json", dir, id), msg[256];
	json_t *doc;
	char *text;

	if (access(path, F_OK) == 0) {
		free(path);
		return;
	}
	doc = json_pack("{s:s, s:i, s:s, s:s, s:s, s:{s:s, s:s, s:s}}", "schema", "evalpod.result",
			"version", 1, "id", id, "batch_id", batch_id, "status", "infra_error",
			"fault", "origin", "infrastructure", "kind", "kubernetes", "message", why);
	text = jx_dump(doc);
	if (file_write_atomic(path, text, strlen(text), msg, sizeof(msg)))
		log_warn("%s", msg);
	free(text);
	json_decref(doc);
	free(path);
}

/*
 * Packs one batch per shard into dir and keeps them in w->batches, unsent:
 * each is published when its Job is created (kround_submit_next).
 */
static int kround_pack(struct kwait *w, const char *dir, json_t *todo, size_t per, json_t **shards,
		       char *msg, size_t n)
{
	size_t count = (json_array_size(todo) + per - 1) / per;
	int rc = 0;

	*shards = json_array();
	w->batches = json_array();
	w->deadline = 0;
	for (size_t i = 0; i < count && !rc; i++) {
		json_t *part = json_array(), *b;
		char *bid = xasprintf("%s-r%03d-a%d-s%zu", w->s->id, w->round, w->attempt, i);
		char *path = xasprintf("%s/batch-a%d-s%zu.json", dir, w->attempt, i), *text;
		long t;

		for (size_t j = i * per; j < (i + 1) * per && j < json_array_size(todo); j++)
			json_array_append(part, json_array_get(todo, j));
		b = round_batch_json(w->s, w->round, part, bid);
		text = jx_dump(b);
		rc = file_write_atomic(path, text, strlen(text), msg, n);
		t = handoff_deadline(w->s, b);
		w->deadline = t > w->deadline ? t : w->deadline;
		json_array_append_new(w->batches, b);
		json_array_append_new(*shards,
				      json_pack("{s:s, s:o}", "batch_id", bid, "todo", part));
		free(text);
		free(path);
		free(bid);
	}
	w->unsent = json_array_size(w->batches);
	return rc;
}

/*
 * After the Jobs: fetch, and say why the variants of failed shards have no
 * result.  A shard whose evalpod said the reference was slow gets none:
 * its variants stay pending, and the caller evaluates them again with a
 * longer deadline (*slow counts those shards).
 */
static int kround_conclude(struct kwait *w, const char *dir, json_t *shards, int *slow, char *msg,
			   size_t n)
{
	int refused = 0, rc = round_fetch(w->s, dir, w->round, msg, n);
	int any_failed = 0;

	for (size_t i = 0; i < w->njobs; i++)
		any_failed |= w->jobs[i].failed;
	if (!rc && any_failed && kround_diagnose(w, 0, &refused, msg, n))
		log_warn("%s", msg);
	if (!rc && refused)
		return kerr_set(msg, n, KERR_INVALID,
				"evalpod refused the batch of round %d (exit status 1 or 2) in %d "
				"pod(s); kubectl logs -l kctl.dev/round=%d shows why",
				w->round, refused, w->round);
	for (size_t i = 0; !rc && i < json_array_size(shards); i++) {
		struct kjob *j = kround_job_of_shard(w, (int)i);
		json_t *sh = json_array_get(shards, i), *v;
		char why[1100];
		size_t k;

		if (!j || !j->failed)
			continue; /* a complete Job's missing results are retried as such */
		if (kround_is_slow(j, (int)i)) {
			(*slow)++;
			continue;
		}
		snprintf(why, sizeof(why), "%s%s%s", j->pod_reason,
			 j->pod_reason[0] && j->reason[0] ? "; Job: " : "",
			 j->reason[0] || j->pod_reason[0] ? j->reason : "the Job failed");
		json_array_foreach (json_object_get(sh, "todo"), k, v)
			kround_infra_result(dir, json_string_value(json_object_get(v, "id")),
					    json_string_value(json_object_get(sh, "batch_id")),
					    why);
	}
	return rc;
}

static void kround_wait_release(struct kwait *w)
{
	for (size_t i = 0; i < w->njobs; i++) {
		free(w->jobs[i].name);
		free(w->jobs[i].slow);
	}
	free(w->jobs);
	free(w->selector);
	json_decref(w->batches);
}

/* Integer label key of obj; dflt when it has none or it is not a number. */
static int kround_label_int(json_t *obj, const char *key, int dflt)
{
	const char *v = json_string_value(
		json_object_get(json_object_get(json_object_get(obj, "metadata"), "labels"), key));
	char *end;
	long x = v ? strtol(v, &end, 10) : 0;

	return v && *v && !*end && x >= 0 && x < 1000000 ? (int)x : dflt;
}

/* Follows Job item, found in the cluster, as one of w's. */
static void kround_adopt_one(struct kwait *w, json_t *item)
{
	const char *name =
		json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));
	struct kjob *j;

	w->jobs = xreallocarray(w->jobs, w->njobs + 1, sizeof(*w->jobs));
	j = memset(&w->jobs[w->njobs], 0, sizeof(*w->jobs));
	j->name = xstrdup(name ? name : "?");
	j->attempt = kround_label_int(item, "kctl.dev/attempt", 0);
	/* an Indexed Job (shard "all") runs shards [0, completions) */
	j->first_shard = kround_label_int(item, "kctl.dev/shard", 0);
	j->nshards = kround_label_int(item, "kctl.dev/shard", -1) >= 0
			     ? 1
			     : (int)json_integer_value(json_object_get(
				       json_object_get(item, "spec"), "completions"));
	j->created = kround_created(item);
	w->njobs++;
	w->left++;
	w->quiet = 1;
	kround_job_state(w, "ADDED", item);
	w->quiet = 0;
}

/*
 * infra_error results for the variants of an adopted Job that failed (its
 * shards' batches are in dir): retried as the round's own would be.
 */
static void kround_adopted_failures(struct kwait *w, const char *dir)
{
	char msg[1024];
	int refused, failed = 0;

	for (size_t i = 0; i < w->njobs; i++)
		failed |= w->jobs[i].failed;
	/* what the pods said, and whose evalpod found the reference slow */
	if (failed && kround_diagnose(w, 0, &refused, msg, sizeof(msg)))
		log_warn("%s", msg);
	for (size_t i = 0; i < w->njobs; i++) {
		struct kjob *j = &w->jobs[i];
		char why[1100];

		if (!j->failed)
			continue;
		snprintf(why, sizeof(why), "%s%s%s", j->pod_reason,
			 j->pod_reason[0] && j->reason[0] ? "; Job: " : "",
			 j->reason[0] || j->pod_reason[0] ? j->reason : "the Job failed");
		for (int sh = j->first_shard; sh < j->first_shard + j->nshards; sh++) {
			char *path = xasprintf("%s/batch-a%d-s%d.json", dir, j->attempt, sh);
			json_t *b, *v;
			size_t k;

			if (kround_is_slow(j, sh)) {
				/* pending, not the infrastructure's: evaluated again */
				free(path);
				continue;
			}
			b = json_load_file(path, 0, NULL);
			json_array_foreach (json_object_get(b, "variants"), k, v)
				kround_infra_result(
					dir, json_string_value(json_object_get(v, "id")),
					json_string_value(json_object_get(b, "batch_id")), why);
			json_decref(b);
			free(path);
		}
	}
}

/* A kctl that stopped while Jobs ran: wait for this round's leftovers first. */
static int kround_adopt(struct session *s, int round, const char *dir, char *msg, size_t n)
{
	struct kwait w = { .s = s, .k = s->kube, .round = round, .attempt = -1 };
	char *label = kround_session_label(s->id);
	struct sbuf p = SBUF_INIT;
	json_t *list = NULL, *item;
	size_t i;
	int rc;

	s->kube->stop = kround_stop;
	s->kube->stop_arg = &w;
	w.selector = xasprintf("kctl.dev/session=%s", label);
	sbuf_addf(&p, "/apis/batch/v1/namespaces/%s/jobs?labelSelector=", s->kube->ns);
	kube_escape(&p, w.selector);
	sbuf_addf(&p, "%%2Ckctl.dev%%2Fround%%3D%d", round);
	rc = kube_call(s->kube, "GET", p.buf, NULL, NULL, &list, NULL, msg, n);
	json_array_foreach (json_object_get(list, "items"), i, item)
		kround_adopt_one(&w, item);
	if (!rc && w.left) {
		log_warn("round %d: %zu Job(s) from before are still running; waiting for them",
			 round, w.left);
		w.next_diag = time(NULL) + kround_diag_every(s);
		rc = kround_wait(&w, msg, n);
	}
	if ((!rc || rc == KERR_CHILD) && (w.interrupted || w.cancelled))
		rc = kerr_set(msg, n, KERR_CHILD, w.cancelled ? "cancelled" : "interrupted");
	if (!rc)
		rc = round_fetch(s, dir, round, msg, n);
	if (!rc)
		kround_adopted_failures(&w, dir);
	s->kube->stop = NULL;
	s->kube->stop_arg = NULL;
	json_decref(list);
	sbuf_release(&p);
	free(label);
	kround_wait_release(&w);
	return rc;
}

/*
 * Evaluates what is pending in round (results under dir/results).  Returns
 * 0 when the Jobs are over and their results fetched (variants may still
 * be pending: the caller retries), or an error: KERR_CHILD for an
 * interruption or cancellation (msg says which), KERR_INVALID when evalpod
 * refused a batch, KERR_HTTP for the API server or the store.  *slow is
 * the count of failed shards whose evalpod exited EVALPOD_EXIT_SLOW (the
 * reference ran past its deadline): their variants are left pending, with
 * no infra_error result, for the caller to evaluate again with a longer
 * deadline, as for a local evalpod.
 */
static int kround_evaluate(struct session *s, int round, const char *dir, int *slow, char *msg,
			   size_t n)
{
	struct kwait w = { .s = s, .k = s->kube, .round = round };
	json_t *todo = NULL, *shards = NULL;
	char *label = kround_session_label(s->id);
	size_t per =
		(size_t)(s->spec.kube.variants_per_pod > 0 ? s->spec.kube.variants_per_pod : 8);
	int rc;

	*slow = 0;
	/* kctl status shows where the session's Jobs are, and that none waits yet */
	kround_queue_opened(s);
	rc = kround_adopt(s, round, dir, msg, n);
	if (rc)
		goto out;
	s->kube->stop = kround_stop;
	s->kube->stop_arg = &w;
	todo = round_pending(s, round, dir);
	if (!json_array_size(todo))
		goto out;
	{
		/* a confirmation's programs are timed side by side: one pod */
		json_t *row = store_round_get(s->st, s->id, round);

		if (json_is_object(json_object_get(row, "confirm")))
			per = json_array_size(todo);
		json_decref(row);
	}
	round_set_aside_infra(dir, todo);
	w.attempt = kround_next_attempt(dir);
	w.selector = xasprintf("kctl.dev/session=%s", label);
	w.caps = kround_caps_of(s->kube);
	rc = kround_pack(&w, dir, todo, per, &shards, msg, n);
	/* the URLs are signed for the deadline plus the margin when each Job is created */
	if (!rc)
		rc = kround_submit_next(&w, msg, n);
	crash_point("spawned", round);
	w.started = time(NULL);
	w.next_diag = w.started + kround_diag_every(s);
	if (!rc)
		rc = kround_wait(&w, msg, n);
	if ((!rc || rc == KERR_CHILD) && w.cancelled)
		rc = kerr_set(msg, n, KERR_CHILD, "cancelled");
	else if ((!rc || rc == KERR_CHILD) && w.interrupted)
		rc = kerr_set(msg, n, KERR_CHILD,
			      "interrupted; round %d's Jobs keep running and 'kctl resume' "
			      "collects them",
			      round);
	else if (!rc)
		rc = kround_conclude(&w, dir, shards, slow, msg, n);
out:
	s->kube->stop = NULL;
	s->kube->stop_arg = NULL;
	log_info("round %d: %lu Kubernetes API requests so far (%lu watches)", round,
		 s->kube->requests, s->kube->watches);
	kround_wait_release(&w);
	json_decref(shards);
	json_decref(todo);
	free(label);
	return rc;
}

#define KROUND_LEFTOVERS_NAMED 20 /* Jobs named in full; the label selector covers all */

char *kround_leftovers(const struct spec *spec, const char *id, const char *dir)
{
	char *label = kround_session_label(id), msg[512], *ns = NULL;
	struct sbuf b = SBUF_INIT, names = SBUF_INIT;
	struct kube k;
	int count = 0;

	if (!kube_open(&k, spec->kube.kubeconfig, spec->kube.context, spec->kube.namespace, msg,
		       sizeof(msg))) {
		ns = xstrdup(k.ns);
		kube_close(&k);
	} else if (spec->kube.namespace) {
		ns = xstrdup(spec->kube.namespace);
	}
	/* rounds and their attempts are numbered without gaps (kround_next_attempt) */
	for (int r = 0;; r++) {
		char *rdir = xasprintf("%s/rounds/r%03d", dir, r);

		if (access(rdir, F_OK)) {
			free(rdir);
			break;
		}
		for (int a = 0;; a++) {
			char *batch = xasprintf("%s/batch-a%d-s0.json", rdir, a), *name;
			int there = access(batch, F_OK) == 0;

			free(batch);
			if (!there)
				break;
			if (count++ < KROUND_LEFTOVERS_NAMED) {
				name = kround_job_name(label, r, a, -1);
				sbuf_addf(&names, "%s%s", count > 1 ? ", " : "", name);
				free(name);
			}
		}
		free(rdir);
	}
	if (count > KROUND_LEFTOVERS_NAMED)
		sbuf_addf(&names, " and %d more", count - KROUND_LEFTOVERS_NAMED);
	if (count)
		sbuf_addf(&b,
			  "these Jobs of the session may remain in the cluster%s%s%s: %s (one Job "
			  "per shard, NAME-sN, on servers before 1.22); ",
			  ns ? " (namespace " : "", ns ? ns : "", ns ? ")" : "", names.buf);
	else
		sbuf_addf(&b, "Jobs of the session may remain in the cluster; ");
	sbuf_addf(&b,
		  "once it can be reached, remove them with: kubectl delete jobs%s%s -l "
		  "kctl.dev/session=%s",
		  ns ? " -n " : "", ns ? ns : "", label);
	sbuf_release(&names);
	free(ns);
	free(label);
	return sbuf_detach(&b, NULL);
}

int kround_cancel(const struct spec *spec, const char *id, char *msg, size_t n)
{
	char *label = kround_session_label(id);
	struct sbuf p = SBUF_INIT;
	struct kube k;
	int rc = kube_open(&k, spec->kube.kubeconfig, spec->kube.context, spec->kube.namespace, msg,
			   n);

	if (!rc) {
		sbuf_addf(&p,
			  "/apis/batch/v1/namespaces/%s/jobs?propagationPolicy=Background"
			  "&labelSelector=kctl.dev%%2Fsession%%3D",
			  k.ns);
		kube_escape(&p, label);
		rc = kube_call(&k, "DELETE", p.buf, NULL, NULL, NULL, NULL, msg, n);
		kube_close(&k);
	}
	free(label);
	sbuf_release(&p);
	return rc;
}

/* --- the backend (backend.h) -------------------------------------------------- */

static void kround_close(struct session *s)
{
	if (s->kube)
		kube_close(s->kube);
	free(s->kube);
	s->kube = NULL;
}

/* One attempt on the Kubernetes backend (backend.h); 0 ok, 1 retry, <0 fatal (msg). */
static int kround_attempt(struct session *s, int round, const char *dir, int lockfd, int attempt,
			  char *msg, size_t n)
{
	char where[64];
	int slow = 0, rc = kround_evaluate(s, round, dir, &slow, msg, n);
	json_t *left;

	(void)lockfd; /* pods cannot hold it: a resumed kctl adopts their Jobs instead */
	if (rc)
		return rc;
	left = round_pending(s, round, dir);
	rc = json_array_size(left) ? 1 : 0;
	if (rc && slow) {
		char *label = kround_session_label(s->id);
		char *logs = xasprintf("(kubectl logs -l kctl.dev/session=%s,kctl.dev/round=%d "
				       "shows what evalpod said)",
				       label, round);

		snprintf(where, sizeof(where), " in %d pod(s) (evalpod exit status %d)", slow,
			 EVALPOD_EXIT_SLOW);
		rc = backend_reference_slow(s, round, attempt, where, logs, msg, n);
		free(logs);
		free(label);
	} else if (rc) {
		kerr_set(msg, n, KERR_CHILD, "round %d: %zu variants are still without a result",
			 round, json_array_size(left));
	}
	json_decref(left);
	return rc;
}

const struct backend backend_kubernetes = {
	.name = "kubernetes",
	.open = kround_open,
	.evaluate = kround_attempt,
	.close = kround_close,
	.cancel = kround_cancel,
	.leftovers = kround_leftovers,
};
