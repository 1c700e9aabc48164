/*
 * kube.c - the Kubernetes API client; the contract is in kube.h.
 */
#include "kube.h"
#include "err.h"
#include "jsonx.h"
#include "log.h"
#include "sbuf.h"
#include "xalloc.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KUBE_MAX_BODY   ((size_t)64 << 20)
#define KUBE_MAX_EVENT  ((size_t)16 << 20) /* one watch line */
#define KUBE_TIMEOUT_MS 60000L

int kube_open(struct kube *k, const char *path, const char *context, const char *ns, char *msg,
	      size_t n)
{
	int rc;

	memset(k, 0, sizeof(*k));
	rc = kubeconfig_load(&k->kc, path, context, msg, n);
	if (rc)
		return rc;
	kubeconfig_http_opts(&k->kc, &k->http);
	k->http.max_body = KUBE_MAX_BODY;
	k->http.timeout_ms = KUBE_TIMEOUT_MS;
	k->ns = xstrdup(ns && *ns ? ns : k->kc.namespace ? k->kc.namespace : "default");
	return 0;
}

void kube_close(struct kube *k)
{
	kubeconfig_release(&k->kc);
	free(k->ns);
	memset(k, 0, sizeof(*k));
}

int kube_at_least(const struct kube *k, int major, int minor)
{
	return k->major > major || (k->major == major && k->minor >= minor);
}

void kube_escape(struct sbuf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (isalnum(c) || strchr("-._~", c)) {
			sbuf_addch(b, c);
		} else {
			sbuf_addch(b, '%');
			sbuf_addch(b, hex[c >> 4]);
			sbuf_addch(b, hex[c & 15]);
		}
	}
}

/*
 * Makes the credentials current; an exec plugin may have replaced the
 * client certificate, so the TLS options are taken from the kubeconfig
 * again (they point into it).
 */
static int kube_refresh(struct kube *k, int force, char *msg, size_t n)
{
	int rc = kubeconfig_refresh(&k->kc, force, msg, n);

	kubeconfig_http_opts(&k->kc, &k->http);
	return rc;
}

/* The headers of a request: credentials, Accept, Content-Type. */
static const char **kube_headers(struct kube *k, const char *content_type, char **auth)
{
	const char **h = xcalloc(4, sizeof(*h));
	size_t i = 0;

	*auth = kubeconfig_auth_header(&k->kc);
	if (*auth)
		h[i++] = *auth;
	h[i++] = "Accept: application/json";
	if (content_type)
		h[i++] = content_type;
	return h;
}

static void kube_forget(char *auth)
{
	if (auth) {
		explicit_bzero(auth, strlen(auth));
		free(auth);
	}
}

/* The Status the server answered with, into msg; returns the code for it. */
static int kube_failure(const char *method, const char *path, const struct http_response *r,
			const char *http_msg, char *msg, size_t n)
{
	json_t *st = r->body ? json_loadb(r->body, r->body_len, 0, NULL) : NULL;
	const char *reason = json_string_value(json_object_get(st, "reason"));
	const char *text = json_string_value(json_object_get(st, "message"));
	char where[512], *q;
	int rc = r->status == 404 ? KERR_NOTFOUND : KERR_HTTP;

	/* paths carry no secrets, but a query may be long: show the path */
	snprintf(where, sizeof(where), "%s", path);
	if ((q = strchr(where, '?')))
		*q = '\0';
	if (r->status < 300) /* no answer, or a 2xx stream cut short: curl's words */
		kerr_set(msg, n, rc, "Kubernetes %s %s: %s", method, where, http_msg);
	else if (r->status < 400) /* the answer began, then the transfer failed: curl says why */
		kerr_set(msg, n, rc, "Kubernetes %s %s: HTTP %ld, then: %s", method, where,
			 r->status, http_msg);
	else if (reason || text)
		kerr_set(msg, n, rc, "Kubernetes %s %s: %ld %s: %.600s", method, where, r->status,
			 reason ? reason : "", text ? text : "");
	else
		kerr_set(msg, n, rc, "Kubernetes %s %s: HTTP %ld", method, where, r->status);
	json_decref(st);
	return rc;
}

static int kube_once(struct kube *k, const char *method, const char *path, const char *body,
		     const char *content_type, struct http_response *resp, char *http_msg,
		     size_t hn)
{
	char *url = xasprintf("%s%s", k->kc.server, path), *auth = NULL;
	char *ct = body ? xasprintf("Content-Type: %s",
				    content_type ? content_type : "application/json")
			: NULL;
	const char **hdrs = kube_headers(k, ct, &auth);
	struct http_opts o = k->http;
	int rc;

	o.headers = hdrs;
	k->requests++;
	rc = http_request(method, url, body, body ? strlen(body) : 0, &o, resp, http_msg, hn);
	kube_forget(auth);
	free(hdrs);
	free(ct);
	free(url);
	return rc;
}

/* Appends printf-style text to msg (size n), as far as it fits. */
static void kube_append(char *msg, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void kube_append(char *msg, size_t n, const char *fmt, ...)
{
	size_t len = msg && n ? strnlen(msg, n - 1) : 0;
	va_list ap;

	if (!msg || len + 1 >= n)
		return;
	va_start(ap, fmt);
	vsnprintf(msg + len, n - len, fmt, ap);
	va_end(ap);
}

/*
 * Records what a request to path said: an answer that proves the server
 * up and these credentials good ends a run of failures; a lost connection,
 * 429 or 5xx is transient and disturbs; a 401/403 is transient only after
 * a disturbance, once the credentials have worked.
 */
static void kube_note(struct kube *k, const char *path, int rc, const struct http_response *r)
{
	int auth = r->status == 401 || r->status == 403;
	char ra[32];

	k->retry_after_s = -1;
	k->transient = 0;
	if (r->attempts > 1)
		k->disturbed = 1; /* http.h retried: the first tries failed */
	if (r->status >= 200 && r->status < 300 && strcmp(path, "/version"))
		k->authorized = 1;
	if (r->retryable) {
		k->transient = 1;
		k->disturbed = 1;
		if (http_response_header(r, "Retry-After", ra, sizeof(ra)) &&
		    isdigit((unsigned char)ra[0]))
			k->retry_after_s = strtol(ra, NULL, 10);
	} else if (rc && auth) {
		k->transient = k->authorized && k->disturbed;
	} else if (!rc || r->status >= 400) {
		/* the server answered, and not "who are you?" */
		k->disturbed = 0;
		k->outage_since = 0;
		k->outage_tries = 0;
	}
}

/* Says in msg why a 401/403 was not retried. */
static void kube_explain_final(const struct kube *k, long status, char *msg, size_t n)
{
	if (status != 401 && status != 403)
		return;
	if (!k->authorized)
		kube_append(msg, n,
			    " (final: no request of this session had been authorized yet: "
			    "check the kubeconfig's credentials and the Role)");
	else
		kube_append(msg, n,
			    " (final: the connection to the API server had not been lost "
			    "before it, so this is the server's considered answer)");
}

int kube_backoff(struct kube *k, char *msg, size_t n)
{
	time_t now = time(NULL);
	long delay, left;

	if (!k->outage_since)
		k->outage_since = now;
	left = k->retry_s - (long)(now - k->outage_since);
	if (left <= 0) {
		kube_append(msg, n,
			    "; the Kubernetes API has failed for %ld s, the limit "
			    "(evaluator.kubernetes.api_retry_s): giving up",
			    (long)(now - k->outage_since));
		return KERR_HTTP;
	}
	k->outage_tries++;
	delay = k->retry_after_s >= 0 ? k->retry_after_s
				      : 1L << (k->outage_tries < 4 ? k->outage_tries - 1 : 4);
	delay = delay < 1 ? 1 : delay > 60 ? 60 : delay;
	if (delay > left)
		delay = left;
	log_warn("%s%s; trying again in %ld s (%ld s left of evaluator.kubernetes.api_retry_s)",
		 msg,
		 k->retry_after_s < 0 && k->disturbed && k->authorized &&
				 (strstr(msg, ": 401 ") || strstr(msg, ": 403 "))
			 ? " (transient: it follows a lost connection, and the API server may "
			   "still be loading its RBAC rules or token Secrets)"
			 : "",
		 delay, left);
	for (long i = 0; i < delay; i++) {
		if (k->stop && k->stop(k->stop_arg))
			return kerr_set(msg, n, KERR_CHILD,
					"stopped while waiting for the Kubernetes API");
		sleep(1);
	}
	return 0;
}

/* One request (with the exec plugin's renewal); see kube_call. */
static int kube_call_once(struct kube *k, const char *method, const char *path, const char *text,
			  const char *content_type, json_t **out, long *status, char *msg, size_t n)
{
	struct http_response resp = { 0 };
	char http_msg[1024];
	int rc = kube_refresh(k, 0, msg, n);

	*status = 0;
	if (rc) {
		k->transient = 0; /* the credentials, not the server */
		return rc;
	}
	rc = kube_once(k, method, path, text, content_type, &resp, http_msg, sizeof(http_msg));
	if (rc && resp.status == 401 && k->kc.exec_command && !kube_refresh(k, 1, msg, n)) {
		/* the plugin's token went stale early: renew it and try once more */
		http_response_release(&resp);
		rc = kube_once(k, method, path, text, content_type, &resp, http_msg,
			       sizeof(http_msg));
	}
	*status = resp.status;
	kube_note(k, path, rc, &resp);
	if (rc)
		rc = kube_failure(method, path, &resp, http_msg, msg, n);
	else if (out && resp.body_len && !(*out = json_loadb(resp.body, resp.body_len, 0, NULL)))
		rc = kerr_set(msg, n, KERR_PARSE, "Kubernetes %s %s: the answer is not JSON",
			      method, path);
	http_response_release(&resp);
	return rc;
}

int kube_call(struct kube *k, const char *method, const char *path, const json_t *body,
	      const char *content_type, json_t **out, long *status, char *msg, size_t n)
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	long st = 0;
	int rc, brc;

	for (;;) {
		if (out)
			*out = NULL;
		rc = kube_call_once(k, method, path, text, content_type, out, &st, msg, n);
		if (!rc || !k->transient || k->retry_s <= 0)
			break;
		brc = kube_backoff(k, msg, n);
		if (brc) {
			if (brc == KERR_CHILD)
				rc = brc; /* else the request's own failure, msg saying "giving up" */
			break;
		}
	}
	if (rc && !k->transient)
		kube_explain_final(k, st, msg, n);
	if (status)
		*status = st;
	free(text);
	return rc;
}

int kube_version(struct kube *k, char *msg, size_t n)
{
	json_t *v = NULL;
	int rc = kube_call(k, "GET", "/version", NULL, NULL, &v, NULL, msg, n);

	if (!rc) {
		const char *maj = json_string_value(json_object_get(v, "major"));
		const char *min = json_string_value(json_object_get(v, "minor"));
		const char *gv = json_string_value(json_object_get(v, "gitVersion"));

		/* minors like "27+" (managed clusters) count by their digits */
		k->major = maj ? (int)strtol(maj, NULL, 10) : 0;
		k->minor = min ? (int)strtol(min, NULL, 10) : 0;
		snprintf(k->git_version, sizeof(k->git_version), "%s", gv ? gv : "?");
		if (!k->major)
			rc = kerr_set(msg, n, KERR_PARSE,
				      "Kubernetes GET /version: no version in "
				      "the answer");
	}
	json_decref(v);
	return rc;
}

/* --- watch ------------------------------------------------------------------ */

struct kube_watch_ctx {
	kube_event_fn event;
	http_tick_fn tick;
	void *arg;
	char *rv;
	size_t rvlen;
	int gone;
	int stopped; /* event or tick asked to end the watch */
	int bad;     /* lines that were not events */
};

static int kube_watch_line(void *arg, const char *line, size_t len)
{
	struct kube_watch_ctx *w = arg;
	json_t *ev = len ? json_loadb(line, len, 0, NULL) : NULL;
	const char *type = json_string_value(json_object_get(ev, "type"));
	json_t *obj = json_object_get(ev, "object");
	const char *rv = json_string_value(
		json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
	int stop = 0;

	if (!len) {
		json_decref(ev);
		return 0;
	}
	if (!type || !json_is_object(obj)) {
		w->bad++;
	} else if (!strcmp(type, "ERROR")) {
		/* a Status; 410 Gone (Expired) means our resourceVersion is too old */
		w->gone = json_integer_value(json_object_get(obj, "code")) == 410;
		if (!w->gone)
			log_warn("Kubernetes watch: %s",
				 json_string_value(json_object_get(obj, "message")));
		stop = 1;
	} else {
		if (rv)
			snprintf(w->rv, w->rvlen, "%s", rv);
		if (strcmp(type, "BOOKMARK"))
			stop = w->stopped = w->event(w->arg, type, obj);
	}
	json_decref(ev);
	return stop;
}

static int kube_watch_tick(void *arg)
{
	struct kube_watch_ctx *w = arg;

	if (w->tick && w->tick(w->arg))
		w->stopped = 1;
	return w->stopped;
}

int kube_watch(struct kube *k, const char *path, const char *selector, char *rv, size_t rvlen,
	       long timeout_s, kube_event_fn event, http_tick_fn tick, void *arg, char *msg,
	       size_t n)
{
	struct kube_watch_ctx w = {
		.event = event, .tick = tick, .arg = arg, .rv = rv, .rvlen = rvlen
	};
	struct sbuf u = SBUF_INIT;
	struct http_response resp = { 0 };
	struct http_opts o = k->http;
	const char **hdrs;
	char *auth = NULL, http_msg[1024];
	time_t began;
	int rc = kube_refresh(k, 0, msg, n);

	if (rc) {
		k->transient = 0; /* the credentials, not the server */
		return rc;
	}
	sbuf_addf(&u, "%s%s?watch=1&allowWatchBookmarks=true&timeoutSeconds=%ld", k->kc.server,
		  path, timeout_s);
	if (selector && *selector) {
		sbuf_adds(&u, "&labelSelector=");
		kube_escape(&u, selector);
	}
	if (rv && *rv) {
		sbuf_adds(&u, "&resourceVersion=");
		kube_escape(&u, rv);
	}
	hdrs = kube_headers(k, NULL, &auth);
	o.headers = hdrs;
	o.max_body = KUBE_MAX_EVENT;
	o.timeout_ms = (timeout_s + 30) * 1000; /* the server ends it first */
	k->requests++;
	k->watches++;
	began = time(NULL);
	rc = http_stream(u.buf, &o, kube_watch_line, kube_watch_tick, &w, &resp, http_msg,
			 sizeof(http_msg));
	kube_note(k, path, rc, &resp);
	if (!rc && !w.stopped && !w.gone && time(NULL) - began < timeout_s - 5)
		k->disturbed = 1; /* ended early: the server may be going down */
	if (rc && resp.status == 410) {
		w.gone = 1, rc = 0;
	} else if (rc) {
		rc = kube_failure("GET", path, &resp, http_msg, msg, n);
		if (!k->transient)
			kube_explain_final(k, resp.status, msg, n);
	}
	if (w.bad)
		log_warn("Kubernetes watch %s: %d lines were not events", path, w.bad);
	http_response_release(&resp);
	kube_forget(auth);
	free(hdrs);
	sbuf_release(&u);
	return rc ? rc : w.gone ? KUBE_WATCH_GONE : KUBE_WATCH_ENDED;
}
