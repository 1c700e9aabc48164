/*
 * http.h - the small HTTP client both binaries share (libcurl).
 *
 * TLS peer and host verification are on unless a caller sets
 * insecure_skip_verify, which only a kubeconfig that says
 * insecure-skip-tls-verify may do (and kctl warns when it does).  A private
 * CA is given with http_opts.ca_file or ca_pem (or the CURL_CA_BUNDLE /
 * SSL_CERT_FILE environment variables); a client certificate and key as
 * files or PEM text; tls_server_name checks the server's certificate for
 * another name than the URL's host (kubeconfig's tls-server-name).
 *
 * Requests are retried on connection failures, 429 and 5xx, with
 * exponential backoff and jitter, honouring Retry-After (seconds form,
 * capped).  Bodies read from the network are bounded by max_body.
 *
 * URLs are logged with their query string replaced by "?<redacted>" because
 * presigned URLs carry signatures there; Authorization headers are never
 * logged.
 */
#ifndef KCTL_HTTP_H
#define KCTL_HTTP_H

#include <stddef.h>

struct http_opts {
	const char *ca_file;         /* NULL: system store */
	long timeout_ms;             /* whole request; 0 = 60000 */
	long connect_timeout_ms;     /* 0 = 10000 */
	int max_attempts;            /* 0 = 5 */
	long backoff_ms;             /* first retry delay; 0 = 200 */
	size_t max_body;             /* response body limit; 0 = 64 MiB */
	const char *const *headers;  /* NULL-terminated "Name: value" list, may be NULL */
	const char *body_path;       /* PUT: stream the body from this file (body NULL, len 0) */
	const char *ca_pem;          /* CA certificates as PEM text (instead of ca_file) */
	const char *client_cert;     /* client certificate, PEM file */
	const char *client_key;      /* its private key, PEM file */
	const char *client_cert_pem; /* or the certificate as PEM text */
	const char *client_key_pem;  /* and the key as PEM text */
	const char *tls_server_name; /* verify the server (and send SNI) as this name */
	int insecure_skip_verify;    /* see above: kubeconfig's explicit choice only */
	int (*stop)(void);           /* nonzero: make no further attempt (a signal came);
					asked between attempts and every 200 ms of the
					pause before a retry, which it cuts short */
};

struct http_response {
	long status; /* final HTTP status; 0 if no response */
	char *body;  /* malloc'd, NUL-terminated; may be NULL */
	size_t body_len;
	int attempts;  /* how many requests were made */
	char *headers; /* the final response's header lines, malloc'd, NUL-terminated */
	int timed_out; /* the final attempt ran out of time (timeout_ms) */
	int retryable; /* the final attempt failed in a way worth another try: no
			  connection, a timeout, a transfer cut short, 429 or 5xx */
};

/*
 * Performs method (GET, PUT, POST, DELETE, HEAD...) on url with an optional
 * request body.  Returns 0 when a response with status < 400 arrived
 * (possibly after retries); KERR_HTTP when the final status is >= 400 (resp
 * still holds status and body, and msg quotes the start of the server's
 * reason) or no response came; KERR_LIMIT when the body exceeded max_body.
 * resp must be released with http_response_release in every case.
 */
int http_request(const char *method, const char *url, const void *body, size_t body_len,
		 const struct http_opts *opts, struct http_response *resp, char *msg, size_t n);

void http_response_release(struct http_response *resp);

/*
 * A streamed GET (a Kubernetes watch): each complete line of a 2xx body is
 * passed to line (without its newline) as it arrives; a line longer than
 * max_body is an error (KERR_LIMIT).  tick, when given, is called about
 * once a second.  Either callback returning nonzero ends the stream early
 * and http_stream returns 0.  One attempt, no retries: the caller
 * reconnects.  Returns 0 when the stream ended (server closed, or a
 * callback asked), KERR_HTTP for a transport failure or a status >= 300
 * (resp holds the status and the error body), KERR_LIMIT as said.
 */
typedef int (*http_line_fn)(void *arg, const char *line, size_t len);
typedef int (*http_tick_fn)(void *arg);
int http_stream(const char *url, const struct http_opts *opts, http_line_fn line, http_tick_fn tick,
		void *arg, struct http_response *resp, char *msg, size_t n);

/*
 * http_stream for any method, with an optional request body (a POST whose
 * answer comes as server-sent events); the same contract otherwise.  resp
 * also holds the response's headers (a 429's Retry-After), and timed_out
 * and retryable, so the caller can choose to try again: a transfer cut
 * short after a 2xx status returns KERR_HTTP with retryable set.
 */
int http_stream_request(const char *method, const char *url, const void *body, size_t body_len,
			const struct http_opts *opts, http_line_fn line, http_tick_fn tick,
			void *arg, struct http_response *resp, char *msg, size_t n);

/*
 * Copies the value of resp's header name (case-insensitive; blanks trimmed)
 * into out (size n); returns 1 when the header is there, else 0 (out "").
 */
int http_response_header(const struct http_response *resp, const char *name, char *out, size_t n);

/* Writes url into out (size n) with any query string redacted. */
void http_redact_url(const char *url, char *out, size_t n);

/* Returns nonzero when s starts with http:// or https://. */
int http_is_url(const char *s);

#endif
