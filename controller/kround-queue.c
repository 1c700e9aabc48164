/*
 * kround-queue.c - a round's suspended Jobs and their Kueue Workloads:
 * what keeps them waiting, recorded for `kctl status` (kstate.h) and
 * logged when it changes, so that a session waiting for quota says so
 * instead of looking hung.  Kueue v1beta1 creates one Workload per Job in
 * the Job's namespace, owned by the Job and labelled
 * kueue.x-k8s.io/job-uid; its conditions QuotaReserved, Admitted and
 * Evicted say where it stands.  One list of the namespace's Workloads per
 * look serves every Job of the round.  Uses the cluster client (kube.h)
 * and kstate.h.
 */
#include "kround.h"
#include "kround-internal.h"
#include "err.h"
#include "kstate.h"
#include "kube.h"
#include "log.h"
#include "progress.h"
#include "sbuf.h"
#include "session.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KROUND_QUEUE_FIRST_S 2 /* Kueue makes the Workload as the Job appears */

json_t *kround_workload_of(json_t *items, const char *uid)
{
	json_t *wl, *ref;
	size_t i, j;

	json_array_foreach (items, i, wl) {
		json_t *md = json_object_get(wl, "metadata");
		const char *l = json_string_value(
			json_object_get(json_object_get(md, "labels"), "kueue.x-k8s.io/job-uid"));

		if (l && !strcmp(l, uid))
			return wl;
		json_array_foreach (json_object_get(md, "ownerReferences"), j, ref) {
			const char *u = json_string_value(json_object_get(ref, "uid"));

			if (u && !strcmp(u, uid))
				return wl;
		}
	}
	return NULL;
}

/* The condition of type in wl's status whose status is "True" or "False", or NULL. */
static json_t *kround_condition(json_t *wl, const char *type)
{
	json_t *c;
	size_t i;

	json_array_foreach (json_object_get(json_object_get(wl, "status"), "conditions"), i, c) {
		const char *t = json_string_value(json_object_get(c, "type"));

		if (t && !strcmp(t, type))
			return c;
	}
	return NULL;
}

static int kround_is_true(json_t *cond)
{
	const char *st = json_string_value(json_object_get(cond, "status"));

	return st && !strcmp(st, "True");
}

/* "REASON: message" of cond, or dflt. */
static void kround_cond_text(json_t *cond, const char *dflt, char *out, size_t n)
{
	const char *r = json_string_value(json_object_get(cond, "reason"));
	const char *m = json_string_value(json_object_get(cond, "message"));

	if (m && *m)
		snprintf(out, n, "%s", m);
	else if (r && *r)
		snprintf(out, n, "%s", r);
	else
		snprintf(out, n, "%s", dflt);
}

void kround_workload_says(json_t *wl, char *state, size_t sn, char *out, size_t n)
{
	json_t *ev = kround_condition(wl, "Evicted"), *ad = kround_condition(wl, "Admitted");
	json_t *qr = kround_condition(wl, "QuotaReserved");
	char text[512];

	if (kround_is_true(ev)) {
		kround_cond_text(ev, "evicted", text, sizeof(text));
		snprintf(state, sn, "evicted");
		snprintf(out, n, "%s: %s",
			 json_string_value(json_object_get(ev, "reason"))
				 ? json_string_value(json_object_get(ev, "reason"))
				 : "Evicted",
			 text);
	} else if (kround_is_true(ad)) {
		snprintf(state, sn, "%s", "");
		snprintf(out, n, "admitted");
	} else if (kround_is_true(qr)) {
		kround_cond_text(qr, "quota reserved", text, sizeof(text));
		snprintf(state, sn, "queued");
		snprintf(out, n, "%s; waiting for its admission checks", text);
	} else {
		kround_cond_text(qr, "Kueue has not considered the Workload yet", text,
				 sizeof(text));
		snprintf(state, sn, "queued");
		snprintf(out, n, "%s", text);
	}
}

/* Writes the session's kube.json from w's queue state (a failure is only logged). */
static void kround_queue_save(struct session *s, int round, const char *state, const char *text,
			      time_t since, size_t suspended)
{
	json_t *rec = json_pack("{s:s, s:s, s:i, s:s, s:s, s:I, s:I}", "backend", "kubernetes",
				"namespace", s->kube ? s->kube->ns : "", "round", round, "state",
				state, "message", text, "since", (json_int_t)since, "suspended",
				(json_int_t)suspended);
	char msg[512];

	if (s->spec.kube.queue)
		json_object_set_new(rec, "queue", json_string(s->spec.kube.queue));
	if (kstate_save(s->dir, rec, msg, sizeof(msg)))
		log_warn("%s", msg);
	json_decref(rec);
}

void kround_queue_opened(struct session *s)
{
	kround_queue_save(s, -1, "", "", time(NULL), 0);
}

/* Records state and text when they differ from what w last recorded; logs the change. */
static void kround_queue_record(struct kwait *w, const char *state, const char *text,
				const char *job, size_t suspended)
{
	time_t now = time(NULL);
	struct sbuf line = SBUF_INIT;
	json_t *rec;

	if (!strcmp(state, w->queue_state) && !strcmp(text, w->queue_msg)) {
		w->queue_every = w->queue_every * 2 > KROUND_QUEUE_MAX_S ? KROUND_QUEUE_MAX_S
									 : w->queue_every * 2;
		return;
	}
	w->queue_every = KROUND_QUEUE_FIRST_S;
	if (w->live) {
		fputs("\r\033[K", stderr); /* the log line takes the live line's place */
		w->live = 0;
	}
	if (strcmp(state, w->queue_state))
		w->queue_since = now;
	snprintf(w->queue_state, sizeof(w->queue_state), "%s", state);
	snprintf(w->queue_msg, sizeof(w->queue_msg), "%s", text);
	kround_queue_save(w->s, w->round, state, text, w->queue_since, suspended);
	rec = json_pack("{s:s, s:s, s:I}", "state", state, "message", text, "since",
			(json_int_t)w->queue_since);
	if (w->s->spec.kube.queue)
		json_object_set_new(rec, "queue", json_string(w->s->spec.kube.queue));
	if (kstate_line(&line, rec, (double)now))
		log_warn("round %d: Job %s: %s", w->round, job, line.buf);
	json_decref(rec);
	sbuf_release(&line);
}

void kround_queue_clear(struct kwait *w)
{
	if (!w->queue_state[0])
		return;
	log_info("round %d: no Job waits for Kueue any more", w->round);
	kround_queue_record(w, "", "", "-", 0);
}

/* The first suspended Job of w that is not over, and how many there are. */
static struct kjob *kround_first_suspended(struct kwait *w, size_t *count)
{
	struct kjob *first = NULL;

	*count = 0;
	for (size_t i = 0; i < w->njobs; i++) {
		if (w->jobs[i].done || !w->jobs[i].suspended)
			continue;
		(*count)++;
		first = first ? first : &w->jobs[i];
	}
	return first;
}

void kround_queue_live(struct kwait *w)
{
	struct sbuf line = SBUF_INIT;
	size_t waiting, left = 0;
	int cols = progress_columns(STDERR_FILENO);
	json_t *rec;

	if (!w->s->interactive)
		return;
	for (size_t i = 0; i < w->njobs; i++)
		left += !w->jobs[i].done;
	kround_first_suspended(w, &waiting);
	rec = json_pack("{s:s, s:s, s:I}", "state", w->queue_state, "message", w->queue_msg,
			"since", (json_int_t)w->queue_since);
	if (w->s->spec.kube.queue)
		json_object_set_new(rec, "queue", json_string(w->s->spec.kube.queue));
	sbuf_addf(&line, "\rround %d: ", w->round);
	/* only while nothing else runs: a running Job's lines would land on it */
	if (waiting && waiting == left && kstate_line(&line, rec, (double)time(NULL))) {
		/* cols - 1 columns, so that it never wraps, and the \r that takes none */
		size_t max = (size_t)(cols < 20 ? 20 : cols);

		fwrite(line.buf, 1, line.len < max ? line.len : max, stderr);
		fputs("\033[K", stderr);
		fflush(stderr);
		w->live = 1;
	} else if (w->live) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		w->live = 0;
	}
	json_decref(rec);
	sbuf_release(&line);
}

void kround_queue_look(struct kwait *w)
{
	const char *queue = w->s->spec.kube.queue;
	char state[16] = "", text[700], msg[600];
	struct kjob *j;
	json_t *list = NULL, *wl = NULL;
	size_t count;
	time_t t = time(NULL);
	long status = 0;
	char *path;
	int rc;

	if (!(j = kround_first_suspended(w, &count))) {
		if (w->queue_state[0])
			kround_queue_clear(w);
		w->next_queue_look = 0;
		return;
	}
	if (!w->next_queue_look) {
		w->next_queue_look = t + KROUND_QUEUE_FIRST_S;
		w->queue_every = KROUND_QUEUE_FIRST_S;
	}
	if (t < w->next_queue_look)
		return;
	path = xasprintf("/apis/kueue.x-k8s.io/v1beta1/namespaces/%s/workloads", w->k->ns);
	rc = kube_call(w->k, "GET", path, NULL, NULL, &list, &status, msg, sizeof(msg));
	if (rc == KERR_NOTFOUND ||
	    (!rc && !(wl = kround_workload_of(json_object_get(list, "items"), j->uid)))) {
		snprintf(state, sizeof(state), "no-kueue");
		snprintf(text, sizeof(text),
			 "no Kueue Workload found: is Kueue installed and the LocalQueue %s "
			 "present?",
			 queue ? queue : "(evaluator.kubernetes.queue is not set)");
	} else if (rc) {
		snprintf(state, sizeof(state), "unknown");
		snprintf(text, sizeof(text), "%s%s", msg,
			 status == 401 || status == 403
				 ? " (kctl needs the RBAC verbs get, list, watch on "
				   "workloads.kueue.x-k8s.io: manifests/rbac.yaml)"
				 : "");
	} else {
		kround_workload_says(wl, state, sizeof(state), text, sizeof(text));
	}
	kround_queue_record(w, state, text, j->name, count);
	w->next_queue_look = t + w->queue_every;
	json_decref(list);
	free(path);
}
