/*
 * kube.h - the few Kubernetes API calls kctl makes, over libcurl (no
 * kubectl): JSON requests with the kubeconfig's credentials, Status errors
 * kept whole, and watch streams.
 *
 * Every request carries the current credentials (an exec plugin's token is
 * renewed before it expires; a 401 renews it once and retries).  http.h
 * retries connection failures, 429 (honouring Retry-After) and 5xx with
 * backoff for a few seconds.  With retry_s set, kube_call goes on for that
 * long, measured in time from the first failure of a run and shared by
 * every request of the struct kube (lists, creates, watches): an API
 * server restart or outage is ridden out, not fatal.  A 401 or 403 is
 * retried too when it follows such a loss and this session's credentials
 * had worked before (an API server still starting refuses requests until
 * it has loaded its RBAC rules and token Secrets); otherwise it is final,
 * and the message says which.  A failure reads
 *   Kubernetes POST /apis/batch/v1/namespaces/ns/jobs: 422 Invalid: Job.batch "x" is invalid: ...
 * with the Status reason and message the server sent.  Tokens and
 * certificates never appear in messages.
 */
#ifndef KCTL_KUBE_H
#define KCTL_KUBE_H

#include "kubeconfig.h"

#include <jansson.h>
#include <stddef.h>
#include <time.h>

#include "http.h"

struct kube {
	struct kubeconfig kc;
	char *ns;              /* the namespace kctl works in */
	struct http_opts http; /* TLS from the kubeconfig */
	int major, minor;      /* server version (kube_version) */
	char git_version[64];
	unsigned long requests; /* API requests sent, watch connections included */
	unsigned long watches;  /* watch connections opened */

	/* Riding out outages (set by the caller after kube_open): */
	long retry_s;        /* how long a run of failures may last; 0: http.h's retries only */
	int (*stop)(void *); /* asked about once a second while waiting; nonzero: give up */
	void *stop_arg;

	/* What the requests so far said (kept by kube_call and kube_watch): */
	int authorized;      /* a request that needed authorization has succeeded */
	int disturbed;       /* the connection was lost, or the server failed, since */
	int transient;       /* the last failure is worth another try (kube_backoff) */
	long retry_after_s;  /* its Retry-After; -1: none */
	time_t outage_since; /* when the current run of failures began; 0: none */
	int outage_tries;
};

/*
 * Loads the kubeconfig (path NULL: KUBECONFIG, ~/.kube/config, in-cluster)
 * and context (NULL: current), picks the namespace (ns, else the
 * context's, else "default").  Sends nothing.  Release with kube_close.
 */
int kube_open(struct kube *k, const char *path, const char *context, const char *ns, char *msg,
	      size_t n);

void kube_close(struct kube *k);

/* GET /version: fills major, minor and git_version. */
int kube_version(struct kube *k, char *msg, size_t n);

/* Whether the server is at least major.minor. */
int kube_at_least(const struct kube *k, int major, int minor);

/*
 * method on path (starting with '/', query included) with body (NULL: none;
 * sent as JSON, or as content_type, e.g. a merge patch).  On success *out (if
 * given) is the decoded response (a new reference) and *status the HTTP
 * status.  On failure *status still says what the server answered (0: no
 * answer): 404 is KERR_NOTFOUND, anything else KERR_HTTP.
 */
int kube_call(struct kube *k, const char *method, const char *path, const json_t *body,
	      const char *content_type, json_t **out, long *status, char *msg, size_t n);

/*
 * After a failed kube_call or kube_watch whose failure k->transient says
 * is worth another try: logs msg and waits (Retry-After, else a doubling
 * pause up to 15 s), then returns 0.  Returns an error instead, with msg
 * saying why, when the run of failures has lasted retry_s (KERR_HTTP, msg
 * ending "giving up") or k->stop asked to give up (KERR_CHILD).
 */
int kube_backoff(struct kube *k, char *msg, size_t n);

/*
 * A watch event: type (ADDED, MODIFIED, DELETED, BOOKMARK) and the object.
 * Return nonzero to end the watch.
 */
typedef int (*kube_event_fn)(void *arg, const char *type, json_t *obj);

enum { KUBE_WATCH_ENDED = 0, KUBE_WATCH_GONE = 1 };

/*
 * Watches the collection at path (e.g. /apis/batch/v1/namespaces/ns/jobs)
 * with selector from resource version rv (in/out: updated by every event
 * and bookmark), until the server closes the stream (KUBE_WATCH_ENDED, to
 * be resumed from rv), the server says rv is too old (KUBE_WATCH_GONE: list
 * again), or event/tick asks to stop (KUBE_WATCH_ENDED).  tick is called
 * about once a second.  One connection, no retries: errors as kube_call,
 * with k->transient saying whether kube_backoff and another watch may
 * help.  A stream the server ends long before timeout_s (a server
 * shutting down) marks the connection as disturbed.
 */
int kube_watch(struct kube *k, const char *path, const char *selector, char *rv, size_t rvlen,
	       long timeout_s, kube_event_fn event, http_tick_fn tick, void *arg, char *msg,
	       size_t n);

/* Appends to b the query-escaped s (label selectors, names). */
struct sbuf;
void kube_escape(struct sbuf *b, const char *s);

#endif
