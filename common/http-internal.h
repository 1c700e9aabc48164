/*
 * http-internal.h - what the files of the HTTP client share.  Not for
 * other modules.  The layers, each using only those below it:
 *   http-stream.c  streamed requests: watches, server-sent events
 *   http.c         a call's handle and attempts; one request, with retries
 *   http-redact.c  what of a request is shown to a human
 */
#ifndef KCTL_HTTP_INTERNAL_H
#define KCTL_HTTP_INTERNAL_H

#include "http.h"
#include "sbuf.h"

#include <curl/curl.h>
#include <time.h>

#define HTTP_URL_SHOWN_MAX 1024
#define HTTP_QUOTE_MAX     200 /* bytes of server text quoted in msg */

struct http_method;

struct http_call {
	CURL *curl;
	struct curl_slist *headers;
	const char *method;
	const struct http_method *how;
	const char *url;
	char shown_url[HTTP_URL_SHOWN_MAX]; /* redacted, for msg and logs */
	const char *ca_file;
	long timeout_ms;
	long connect_timeout_ms;
	long backoff_ms;
	int max_attempts;
	size_t max_body;
	const char *upload; /* request body, read by http_read_cb */
	int upload_fd;      /* or the file it streams from (-1: none) */
	size_t upload_len;
	size_t upload_pos;
	struct sbuf body; /* response body of the latest attempt */
	struct sbuf hdrs; /* response header lines of the latest attempt */
	const struct http_opts *opts;
	http_line_fn line_fn; /* streaming: body lines go here */
	http_tick_fn tick_fn;
	void *stream_arg;
	int stopped; /* a callback ended the stream */
	time_t last_tick;
	char *url_owned; /* the URL rewritten for tls_server_name */
	struct curl_slist *connect_to;
	int over_limit;     /* http_write_cb refused bytes past max_body */
	long retry_after_s; /* -1: the latest response carried none */
	char errbuf[CURL_ERROR_SIZE];
};

/* Fills c from the arguments and defaults; 0 or KERR_* with msg. */
int http__call_init(struct http_call *c, const char *method, const char *url, const void *body,
		    size_t body_len, const struct http_opts *opts, char *msg, size_t n);

/* Creates c's easy handle with every option set; curl's verdict. */
CURLcode http__call_open(struct http_call *c);

/* Frees what c holds (not c). */
void http__call_release(struct http_call *c);

/* One request; *status is the response's code or 0. */
CURLcode http__attempt(struct http_call *c, long *status);

/* Nonzero when an attempt that ended so is worth another (see http.h). */
int http__is_retryable(const struct http_call *c, CURLcode res, long status);

/* The return code and msg for the final attempt (see http_request). */
int http__result(const struct http_call *c, CURLcode res, const struct http_response *resp,
		 char *msg, size_t n);

/*
 * Writes into out (size n) a one-line quote of server text (len bytes):
 * control bytes become spaces, query values of c's URL are scrubbed, and
 * at most HTTP_QUOTE_MAX bytes are kept, "..." marking a cut.  In
 * http-redact.c.
 */
void http__quote(const struct http_call *c, const char *text, size_t len, char *out, size_t n);

#endif
