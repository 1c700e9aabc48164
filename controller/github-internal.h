/*
 * github-internal.h - what the files of the GitHub client share.  Not for
 * other modules.  The layers, each using only the one below:
 *   github.c       the operations: issues, comments, pages, bodies
 *   github-call.c  one REST call: headers, waits, retries, GitHub's errors
 */
#ifndef KCTL_GITHUB_INTERNAL_H
#define KCTL_GITHUB_INTERNAL_H

#include "github.h"

#include <jansson.h>
#include <stddef.h>
#include <time.h>

struct github {
	char *api_url;   /* without a trailing '/' */
	char *repo;      /* "owner/name" */
	char *token;     /* wiped by github_free */
	char *auth;      /* "Authorization: Bearer TOKEN", wiped too */
	char *token_env; /* for messages; may be NULL */
	char *ca_file;
	long timeout_ms;
	long max_wait_s;
	long secondary_wait_s;
	long backoff_ms;
	int max_attempts;
	int max_pages;
	size_t max_body;
	int (*stop)(void);
	time_t (*now)(void *arg);
	void (*pause)(void *arg, long ms);
	void *clock_arg;
	time_t not_before;    /* no request before this epoch second */
	int secondary_streak; /* secondary limits without Retry-After in a row */
};

/* How a call may be repeated after a server error or a lost connection. */
enum github_retry {
	GITHUB_RETRY_ALL,    /* idempotent (GET, PATCH): retried with backoff */
	GITHUB_RETRY_LIMITS, /* a POST: only after a rate limit (nothing happened) */
};

struct github_reply {
	long status;  /* the final status; 0: no answer */
	json_t *json; /* the parsed body of a 2xx; NULL otherwise */
	char *next;   /* the Link header's rel="next" URL (checked), malloc'd, or NULL */
	int unsure;   /* the call failed in a way that may have taken effect (5xx, lost) */
};

/*
 * One call: method on url (api_url + path, or a checked next link) with
 * body (may be NULL) as JSON.  what names the operation for messages
 * ("create issue").  Waits and retries as github.h says.  Returns 0 with
 * r->json set (a 2xx with a JSON body; r->next when there is a next
 * page), KERR_LATER (gh->not_before set), or KERR_HTTP, KERR_PARSE,
 * KERR_LIMIT with msg.  Release r with github__reply_release in every
 * case.
 */
int github__call(struct github *gh, const char *what, const char *method, const char *url,
		 const json_t *body, enum github_retry retry, struct github_reply *r, char *msg,
		 size_t n);

void github__reply_release(struct github_reply *r);

/* The pause before attempt + 1 after a server error: backoff_ms doubled, at most max_wait_s. */
void github__backoff(const struct github *gh, int attempt);

/* The current epoch second by gh's clock. */
time_t github__now(const struct github *gh);

/*
 * Writes into out (size n) a quote of server text (len bytes): gh's token
 * scrubbed, control characters escaped, at most GITHUB_QUOTE_MAX bytes
 * cut at a UTF-8 boundary with "..." marking the cut.
 */
void github__quote(const struct github *gh, const char *text, size_t len, char *out, size_t n);

/*
 * The target of the link whose rel holds "next" in a Link header value
 * (RFC 8288: <URI> then ;name=value or ;name="value" parameters, links
 * separated by ','), malloc'd; NULL when there is none or v is malformed
 * before one.  Unchecked: the caller vets where it points.
 */
char *github__link_next(const char *v);

/* Replaces gh's token in msg by "<redacted>", in place. */
void github__scrub(const struct github *gh, char *msg);

#endif
