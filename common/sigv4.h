/*
 * sigv4.h - AWS Signature Version 4 (AWS4-HMAC-SHA256), for S3.
 *
 * Two forms of one algorithm:
 *   - header signing (sigv4_sign): kctl's own requests carry an
 *     Authorization header, x-amz-date and x-amz-content-sha256;
 *   - query presigning (sigv4_presign): a URL that anyone holding it may use
 *     until it expires, handed to pods that hold no credentials.
 *
 * The caller gives the request in decoded form (the object key as it is,
 * spaces and '+' included, query names and values unencoded) and gets back
 * the encoded request target ("/path?query") that was signed: what is sent
 * is exactly what was signed, so no second encoder can disagree with the
 * first.  Encoding follows the specification for S3: every byte but
 * A-Z a-z 0-9 - . _ ~ becomes %XX (upper-case hex), '/' is kept in the path
 * and encoded in the query, the path is encoded once (S3 does not normalise
 * or double-encode), query parameters are sorted by encoded name then value.
 *
 * Secrets never leave this module except inside the signature; nothing here
 * logs.  Times are UTC seconds, so tests can sign at the instants of AWS's
 * published examples.
 */
#ifndef KCTL_SIGV4_H
#define KCTL_SIGV4_H

#include <stddef.h>
#include <time.h>

#define SIGV4_UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"
#define SIGV4_EMPTY_SHA256     "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define SIGV4_MAX_EXPIRES      604800L /* seven days: the longest a presigned URL may live */

struct sigv4_key {
	const char *access_key;
	const char *secret_key;
	const char *session_token; /* NULL or "" when the credentials have none */
	const char *region;        /* e.g. "us-east-1" */
	const char *service;       /* "s3" */
};

struct sigv4_pair {
	const char *name;
	const char *value; /* NULL: a query flag such as "?lifecycle"; signed as "lifecycle=" */
};

struct sigv4_request {
	const char *method;
	const char *host;               /* the Host header as sent, port included if not default */
	const char *path;               /* decoded, starts with '/' */
	const struct sigv4_pair *query; /* decoded */
	size_t nquery;
	const struct sigv4_pair *headers; /* further headers to sign (Host and x-amz-* are added) */
	size_t nheaders;
	const char *payload_hash; /* hex SHA-256 of the body, or SIGV4_UNSIGNED_PAYLOAD */
	time_t now;
};

/* What sigv4_sign produced; release with sigv4_signed_release. */
struct sigv4_signed {
	char *target;    /* encoded "/path?query" to request */
	char **headers;  /* NULL-terminated "Name: value" lines to add to the request */
	char *canonical; /* the canonical request (for tests and debugging; no secret) */
	char *string_to_sign;
	char *signature; /* hex */
};

/*
 * Signs r with k for header authentication.  Returns 0, or KERR_INVALID
 * (msg says why: a header value with CR/LF, a missing field) with *out
 * zeroed.
 */
int sigv4_sign(const struct sigv4_key *k, const struct sigv4_request *r, struct sigv4_signed *out,
	       char *msg, size_t n);

/*
 * Presigns r (its headers, if any, are signed too and must be sent as
 * given; payload_hash NULL means UNSIGNED-PAYLOAD) valid for expires seconds
 * from r->now (1 to SIGV4_MAX_EXPIRES).  Fills out like sigv4_sign, with
 * target carrying the X-Amz-* parameters and headers empty.
 */
int sigv4_presign(const struct sigv4_key *k, const struct sigv4_request *r, long expires,
		  struct sigv4_signed *out, char *msg, size_t n);

void sigv4_signed_release(struct sigv4_signed *s);

/*
 * Appends s (len bytes) to out percent-encoded as SigV4 wants; '/' is kept
 * when keep_slash.  out is a struct sbuf.
 */
struct sbuf;
void sigv4_encode(struct sbuf *out, const char *s, size_t len, int keep_slash);

/* Writes the lower-case hex SHA-256 of data (65 bytes with the NUL) into hex. */
void sigv4_sha256_hex(const void *data, size_t len, char hex[65]);

/* The same over a file's contents; returns 0, or KERR_IO with msg naming path. */
int sigv4_sha256_file(const char *path, char hex[65], unsigned long long *size, char *msg,
		      size_t n);

#endif
