/*
 * github.h - the GitHub REST client behind a session's tracking issue.
 *
 * kctl opens one issue per optimisation session, comments on it after
 * each round and closes it at the end; `kctl resume` finds it again by a
 * hidden marker in its body ("<!-- kctl-session: ID -->") and, when the
 * caller gives one, a label.  This module is the client those steps call:
 * create, find, comment, update a comment, find a comment, close.  It
 * posts nothing on its own.
 *
 * Every request goes to opts.api_url (GitHub, or GitHub Enterprise's
 * https://HOST/api/v3, which Actions hands over as $GITHUB_API_URL) with
 * the headers GitHub asks for: Accept: application/vnd.github+json,
 * X-GitHub-Api-Version: 2022-11-28, a User-Agent and Authorization:
 * Bearer TOKEN.  The token comes from the caller (the spec names the
 * environment variable that holds it); it is sent to api_url's scheme,
 * host and port only, a pagination link to anywhere else is refused, and
 * it never appears in a message or a log line: any server text quoted
 * has it scrubbed out.
 *
 * Waits.  One layer decides them: this one.  http.c's own retries are
 * off (one attempt per http_request), so a 429's Retry-After is not
 * honoured twice.  A rate limit (403 or 429 with x-ratelimit-remaining: 0,
 * a Retry-After, or GitHub's "secondary rate limit" message) waits until
 * x-ratelimit-reset (epoch seconds), Retry-After seconds, or else
 * secondary_wait_s doubled for each such answer in a row (each time kept
 * between 1 s and a day from now).  A server error
 * (5xx) or a lost connection is retried with backoff, a GET or PATCH
 * always, a POST that creates an issue only after a search by its marker
 * found nothing (so a reply lost after the create makes no second issue),
 * a comment's POST never (the caller looks for its marker first).  When a
 * wait would pass max_wait_s the call returns KERR_LATER at once, and
 * github_not_before says when: until then every call returns KERR_LATER
 * without a request, so the caller queues its post and carries on.
 * Redirects (a renamed repository's 301) are not followed: the token
 * would go where the server says.
 *
 * Errors name the operation, the repository and GitHub's own words:
 *   "GitHub create issue in 'o/r': 401 Bad credentials (the token from
 *    $GITHUB_TOKEN was refused)"
 *   "GitHub create issue in 'o/r': 422 Validation Failed: Issue.title
 *    missing_field"
 * Server text is quoted bounded (GITHUB_QUOTE_MAX bytes, cut at a UTF-8
 * boundary) with control characters escaped.  A broken or hostile server
 * (not JSON, a body past max_body, missing fields or wrong types, a
 * pagination loop or more than max_pages pages) ends the call with
 * KERR_PARSE or KERR_LIMIT, never a crash or an endless walk.
 *
 * Bodies are built with jansson.  An issue or comment body longer than
 * GitHub's 65,536 characters is cut at a character boundary and ends with
 * a note saying so; bytes that are not UTF-8 become U+FFFD.  65,536
 * characters are at most 262,144 UTF-8 bytes, the limit GitHub has been
 * measured to apply to bodies, so a fitted body passes either way.
 */
#ifndef KCTL_GITHUB_H
#define KCTL_GITHUB_H

#include <stddef.h>
#include <time.h>

#define GITHUB_API_URL_DEFAULT "https://api.github.com"
#define GITHUB_BODY_MAX        65536 /* characters in an issue or comment body */
#define GITHUB_QUOTE_MAX       200   /* bytes of server text quoted in a message */
#define GITHUB_LABEL_MAX       50    /* characters in a label's name */

struct github_opts {
	const char *api_url;   /* NULL or "": GITHUB_API_URL_DEFAULT; https:// only */
	const char *repo;      /* "owner/name" */
	const char *token;     /* required; a credential, kept in no message */
	const char *token_env; /* the variable it came from, named in messages; may be NULL */
	const char *ca_file;   /* NULL: the system store (or CURL_CA_BUNDLE / SSL_CERT_FILE) */
	long timeout_ms;       /* per request; 0: 30000 */
	long max_wait_s;       /* the longest one pause may be; 0: 30; longer: KERR_LATER */
	long secondary_wait_s; /* a secondary limit without Retry-After; 0: 60, doubling */
	long backoff_ms;       /* the first pause after a 5xx; 0: 1000, doubling */
	int max_attempts;      /* requests per operation step; 0: 4 */
	int max_pages;         /* pages walked by a find; 0: 100 (10,000 items) */
	size_t max_body;       /* response body limit; 0: 32 MiB */
	int (*stop)(void);     /* nonzero: a signal came; pauses end and calls give up */
	/* tests: the clock (epoch seconds) and the pause; NULL: time() and a
	   nanosleep that asks stop every 200 ms */
	time_t (*now)(void *arg);
	void (*pause)(void *arg, long ms);
	void *clock_arg;
};

struct github;

/*
 * The API URL the environment names: $GITHUB_API_URL when set and not
 * empty (Actions sets it, to GitHub Enterprise's https://HOST/api/v3
 * there), else GITHUB_API_URL_DEFAULT.  Borrowed; for opts.api_url.
 */
const char *github_env_api_url(void);

/*
 * Checks opts and makes a client: api_url https:// with a host and no
 * query, user or fragment (a trailing '/' is dropped); repo "owner/name"
 * as GitHub allows them; a token without blanks or control characters.
 * Copies what it keeps.  Returns 0 with *out set (github_free it), or
 * KERR_INVALID with msg naming the option.
 */
int github_new(const struct github_opts *opts, struct github **out, char *msg, size_t n);

/* Frees gh and wipes its copy of the token; NULL does nothing. */
void github_free(struct github *gh);

/*
 * The epoch second before which gh makes no request (a rate limit asked
 * for it); 0 when none.  Set when a call returned KERR_LATER.
 */
time_t github_not_before(const struct github *gh);

/*
 * Writes the hidden marker of session id into out (size n):
 * "<!-- kctl-session: ID -->".  Returns 0, or KERR_INVALID when id is
 * empty, longer than 100 bytes or holds anything but [A-Za-z0-9._:-].
 */
int github_session_marker(const char *id, char *out, size_t n);

/*
 * Opens an issue: title (non-empty, at most 256 characters), body with
 * marker (may be NULL) as its first line, labels (NULL-terminated, may be
 * NULL; GitHub drops labels silently when the token may not set them).
 * *number is the new issue's number.  With a marker, a create whose
 * answer was lost (5xx, connection) is retried only after
 * github_issue_find(labels NULL, marker) found nothing; one it found is
 * the answer.  Returns 0, KERR_LATER, or KERR_HTTP / KERR_PARSE /
 * KERR_LIMIT / KERR_INVALID with msg.  After a failure the issue may
 * exist all the same: look for it with github_issue_find before creating
 * it again.
 */
int github_issue_create(struct github *gh, const char *title, const char *marker, const char *body,
			const char *const *labels, long long *number, char *msg, size_t n);

/*
 * Finds the open issue whose body contains marker (non-empty), among the
 * open issues with label (NULL: all open issues; a comma is refused),
 * walking every page (per_page=100, the Link header's rel="next").  Pull
 * requests are skipped.  *number is the lowest such issue number, 0 when
 * there is none.  Returns 0 (found or not), KERR_LATER, or an error.
 */
int github_issue_find(struct github *gh, const char *label, const char *marker, long long *number,
		      char *msg, size_t n);

/*
 * Closes issue number as completed (state=closed,
 * state_reason=completed).  Closing a closed issue is not an error.
 */
int github_issue_close(struct github *gh, long long number, char *msg, size_t n);

/*
 * Comments body (with marker, may be NULL, as its first line) on issue
 * number; *id is the comment's id.  Not retried after a 5xx or a lost
 * connection (the comment may exist): look for the marker with
 * github_comment_find before posting again.
 */
int github_comment_add(struct github *gh, long long number, const char *marker, const char *body,
		       long long *id, char *msg, size_t n);

/* Replaces comment id's body (marker as github_comment_add). */
int github_comment_update(struct github *gh, long long id, const char *marker, const char *body,
			  char *msg, size_t n);

/*
 * Finds the first comment on issue number whose body contains marker,
 * walking every page; *id is its id, 0 when there is none.
 */
int github_comment_find(struct github *gh, long long number, const char *marker, long long *id,
			char *msg, size_t n);

/*
 * The body GitHub gets for text (len bytes) with marker first: invalid
 * UTF-8 (and NUL) replaced by U+FFFD, and when longer than max characters
 * (0: GITHUB_BODY_MAX), cut at a character boundary with a note in its
 * place, the whole within max.  malloc'd, NUL-terminated; caller frees.
 */
char *github_body_fit(const char *marker, const char *text, size_t len, size_t max);

#endif
