/*
 * kube.h - the few Kubernetes API calls kctl makes, over libcurl (no
 * kubectl): JSON requests with the kubeconfig's credentials, Status errors
 * kept whole, and watch streams.
 *
 * Every request carries the current credentials (an exec plugin's token is
 * renewed before it expires; a 401 renews it once and retries).  http.h
 * retries connection failures, 429 (honouring Retry-After) and 5xx with
 * backoff.  A failure reads
 *   Kubernetes POST /apis/batch/v1/namespaces/ns/jobs: 422 Invalid: Job.batch "x" is invalid: ...
 * with the Status reason and message the server sent.  Tokens and
 * certificates never appear in messages.
 */
#ifndef KCTL_KUBE_H
#define KCTL_KUBE_H

#include "kubeconfig.h"

#include <jansson.h>
#include <stddef.h>

#include "http.h"

struct kube {
	struct kubeconfig kc;
	char *ns;              /* the namespace kctl works in */
	struct http_opts http; /* TLS from the kubeconfig */
	int major, minor;      /* server version (kube_version) */
	char git_version[64];
	unsigned long requests; /* API requests sent, watch connections included */
	unsigned long watches;  /* watch connections opened */
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
 * about once a second.  Errors as kube_call.
 */
int kube_watch(struct kube *k, const char *path, const char *selector, char *rv, size_t rvlen,
	       long timeout_s, kube_event_fn event, http_tick_fn tick, void *arg, char *msg,
	       size_t n);

/* Appends to b the query-escaped s (label selectors, names). */
struct sbuf;
void kube_escape(struct sbuf *b, const char *s);

#endif
