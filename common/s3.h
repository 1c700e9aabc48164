/*
 * s3.h - an S3 client for kctl: AWS S3 and the stores that speak its API
 * (MinIO, Ceph RGW, OpenStack Swift's s3api, Cloudflare R2, GCS's XML API
 * with HMAC keys).
 *
 * A store is opened on a URL "s3://BUCKET[/PREFIX]".  Every request is signed
 * with AWS Signature Version 4 (sigv4.h) in the header form, with the
 * payload's SHA-256 signed as x-amz-content-sha256 so the store checks the
 * body's integrity; s3_presign makes the query-signed URLs that pods use
 * without credentials.
 *
 * Settings come from s3_opts, falling back to the AWS conventions
 * (awsconf.h): credentials from the environment or the shared files,
 * region, endpoint (AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL / endpoint_url).
 * Without an endpoint the store is AWS itself, https://s3.REGION.amazonaws.com,
 * or the suffix of the region's partition: amazonaws.com.cn for China's
 * (cn-*), c2s.ic.gov (us-iso-*), sc2s.sgov.gov (us-isob-*), cloud.adc-e.uk
 * (eu-isoe-*), csp.hci.ic.gov (us-isof-*); GovCloud (us-gov-*) is
 * amazonaws.com.
 *
 * Addressing: path style puts the bucket in the path
 * (https://host/bucket/key), virtual-hosted style in the host name
 * (https://bucket.host/key).  S3_ADDR_AUTO chooses virtual-hosted for AWS
 * when the bucket name is a valid DNS label without dots (so TLS names
 * match), and path style for a custom endpoint, which is what self-hosted
 * stores (MinIO, Swift, Ceph) answer.
 *
 * Requests are retried (http.h) on connection failures, 429, and 5xx
 * (S3's 503 SlowDown included), with exponential backoff and jitter; a 4xx
 * such as SignatureDoesNotMatch is final.  Errors keep the store's XML
 * error code and message, status and code first and the target last (a
 * key may be 1,024 bytes, so a message cut short keeps what matters):
 * "S3 PUT 403 SignatureDoesNotMatch: The request signature we calculated
 * does not match ...; target 'bucket/key'".  Messages never carry
 * credentials or a presigned URL's query.
 */
#ifndef KCTL_S3_H
#define KCTL_S3_H

#include <stddef.h>
#include <time.h>

enum s3_addressing { S3_ADDR_AUTO, S3_ADDR_PATH, S3_ADDR_VIRTUAL };

struct s3_opts {
	const char *endpoint; /* "http(s)://host[:port]"; NULL: the AWS conventions */
	const char *region;   /* NULL: the AWS conventions, else us-east-1 */
	const char *profile;  /* NULL: AWS_PROFILE, AWS_DEFAULT_PROFILE, "default" */
	enum s3_addressing addressing;
	const char *ca_file; /* NULL: the system store (or CURL_CA_BUNDLE / SSL_CERT_FILE) */
	int max_attempts;    /* 0: http.h's default */
	long backoff_ms;     /* 0: http.h's default */
	long timeout_ms;     /* per request; 0: 10 minutes (artifacts can be large) */
	int list_page;       /* keys per ListObjectsV2 page; 0: the store's default (1000) */
	/* nonzero when the caller was asked to stop (SIGINT/SIGTERM): checked
	 * between retries and between list pages; NULL: never */
	int (*interrupted)(void);
};

struct s3;

struct s3_object {
	char *key;
	unsigned long long size;
	char etag[80];
};

struct s3_list {
	struct s3_object *obj;
	size_t n;
};

/* Returns nonzero when url starts with s3://. */
int s3_is_url(const char *url);

/*
 * Why key cannot be an object key that is sent as signed, or NULL when it
 * can: an empty key, an empty segment (a leading, trailing or doubled '/'),
 * a "." or ".." segment.  HTTP clients (libcurl) and stores remove dot
 * segments and may merge slashes, so the path that arrives is not the one
 * signed and the store answers 403 SignatureDoesNotMatch.  The reason is
 * a static string ("has a '.' segment"); S3_KEY_FAULT_WHY says why it
 * matters, for a message.
 */
const char *s3_key_fault(const char *key);

#define S3_KEY_FAULT_WHY                                                                           \
	"HTTP clients and stores rewrite such paths, so the request would not match its "          \
	"signature"

/*
 * Opens the store named by url.  Returns 0 with *out set (s3_free it), or
 * KERR_INVALID (bad URL, a prefix s3_key_fault refuses, endpoint or addressing), KERR_NOTFOUND (no
 * credentials anywhere, or a named profile that does not exist), KERR_IO or
 * KERR_PARSE (an AWS file that cannot be read), with msg saying which.
 */
int s3_open(struct s3 **out, const char *url, const struct s3_opts *o, char *msg, size_t n);

void s3_free(struct s3 *s);

const char *s3_bucket(const struct s3 *s);

/*
 * The object key for rel under the URL's prefix ("prefix/rel", or rel when
 * the URL has none); malloc'd.
 */
char *s3_key(const struct s3 *s, const char *rel);

/* Uploads len bytes as key.  content_type may be NULL. */
int s3_put(struct s3 *s, const char *key, const void *data, size_t len, const char *content_type,
	   char *msg, size_t n);

/* Uploads the file at path as key, streamed (never held in memory whole). */
int s3_put_file(struct s3 *s, const char *key, const char *path, const char *content_type,
		char *msg, size_t n);

/*
 * Downloads key into *data (malloc'd, NUL-terminated, caller frees) of *len
 * bytes; KERR_LIMIT past max bytes, KERR_NOTFOUND when there is no such key.
 */
int s3_get(struct s3 *s, const char *key, size_t max, char **data, size_t *len, char *msg,
	   size_t n);

/* Fills *info (key left NULL) for key; KERR_NOTFOUND when there is none. */
int s3_head(struct s3 *s, const char *key, struct s3_object *info, char *msg, size_t n);

/*
 * Lists the keys that start with prefix, in the store's (lexical) order,
 * following continuation tokens; at most max_keys (0: 1,000,000) before
 * KERR_LIMIT.  Release out with s3_list_release (it is empty on failure).
 * A store that misbehaves ends the listing with an error naming the bucket
 * and prefix, never a loop: KERR_PARSE for an empty or non-XML answer, a
 * truncated page without a token, the same token twice, or three
 * truncated pages in a row without a key; KERR_LIMIT past 100,000 pages;
 * KERR_CHILD when opts.interrupted says stop.  Keys are the store's words:
 * the caller checks that they start with prefix.
 */
int s3_list(struct s3 *s, const char *prefix, size_t max_keys, struct s3_list *out, char *msg,
	    size_t n);

void s3_list_release(struct s3_list *l);

/* Deletes key (no error when it did not exist, as S3 itself answers). */
int s3_delete(struct s3 *s, const char *key, char *msg, size_t n);

/* Creates the bucket of s (used by tests and set-up); an existing one of ours is fine. */
int s3_create_bucket(struct s3 *s, char *msg, size_t n);

/*
 * A URL that lets its holder perform method ("GET", "PUT") on key for
 * expires seconds from now (1 to 604800).  Returns it malloc'd, or NULL
 * with msg set.  The URL is a bearer credential: never log it.
 */
char *s3_presign(struct s3 *s, const char *method, const char *key, long expires, time_t now,
		 char *msg, size_t n);

#endif
