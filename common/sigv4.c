/*
 * sigv4.c - AWS Signature Version 4; the contract is in sigv4.h.
 *
 * The four steps of the specification, each a function: canonical request,
 * string to sign, signing key, signature.  Header and query signing share
 * all four and differ only in where the date, credential and signed-header
 * list travel.
 */
#include "sigv4.h"
#include "err.h"
#include "sbuf.h"
#include "xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define SIGV4_ALGORITHM  "AWS4-HMAC-SHA256"
#define SIGV4_TERMINATOR "aws4_request"

static const char sigv4_hexdigits[] = "0123456789ABCDEF";

void sigv4_encode(struct sbuf *out, const char *s, size_t len, int keep_slash)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' ||
		    (c == '/' && keep_slash)) {
			sbuf_addch(out, c);
		} else {
			sbuf_addch(out, '%');
			sbuf_addch(out, sigv4_hexdigits[c >> 4]);
			sbuf_addch(out, sigv4_hexdigits[c & 15]);
		}
	}
}

static void sigv4_hex(const unsigned char *d, size_t len, char *out)
{
	static const char lower[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = lower[d[i] >> 4];
		out[2 * i + 1] = lower[d[i] & 15];
	}
	out[2 * len] = '\0';
}

void sigv4_sha256_hex(const void *data, size_t len, char hex[65])
{
	unsigned char d[SHA256_DIGEST_LENGTH];

	SHA256(data, len, d);
	sigv4_hex(d, sizeof(d), hex);
}

int sigv4_sha256_file(const char *path, char hex[65], unsigned long long *size, char *msg, size_t n)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char buf[1 << 16], d[EVP_MAX_MD_SIZE];
	unsigned int dlen = 0;
	unsigned long long total = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;
	ssize_t got;

	if (!ctx)
		abort(); /* out of memory, as xmalloc would */
	if (fd < 0) {
		rc = kerr_set(msg, n, KERR_IO, "cannot open '%s': %s", path, strerror(errno));
		goto out;
	}
	EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	while ((got = read(fd, buf, sizeof(buf))) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			rc = kerr_set(msg, n, KERR_IO, "cannot read '%s': %s", path,
				      strerror(errno));
			goto out;
		}
		EVP_DigestUpdate(ctx, buf, (size_t)got);
		total += (unsigned long long)got;
	}
	EVP_DigestFinal_ex(ctx, d, &dlen);
	sigv4_hex(d, dlen, hex);
	if (size)
		*size = total;
out:
	if (fd >= 0)
		close(fd);
	EVP_MD_CTX_free(ctx);
	return rc;
}

static void sigv4_hmac(const void *key, size_t klen, const char *data, unsigned char out[32])
{
	unsigned int len = 32;

	HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)data, strlen(data), out, &len);
}

/* --- canonical pieces ------------------------------------------------------ */

struct sigv4_kv {
	char *name; /* encoded (query) or lower-cased (headers) */
	char *value;
};

static int sigv4_kv_cmp(const void *a, const void *b)
{
	const struct sigv4_kv *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : strcmp(x->value, y->value);
}

static void sigv4_kv_free(struct sigv4_kv *kv, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(kv[i].name);
		free(kv[i].value);
	}
	free(kv);
}

static char *sigv4_encoded(const char *s, int keep_slash)
{
	struct sbuf b = SBUF_INIT;

	sigv4_encode(&b, s, strlen(s), keep_slash);
	sbuf_addch(&b, '\0'); /* an empty string still gets a buffer */
	return sbuf_detach(&b, NULL);
}

/* The sorted, encoded query "a=1&b=2" of pairs q (nq entries). */
static char *sigv4_canonical_query(const struct sigv4_pair *q, size_t nq)
{
	struct sigv4_kv *kv = xcalloc(nq ? nq : 1, sizeof(*kv));
	struct sbuf b = SBUF_INIT;

	for (size_t i = 0; i < nq; i++) {
		kv[i].name = sigv4_encoded(q[i].name, 0);
		kv[i].value = sigv4_encoded(q[i].value ? q[i].value : "", 0);
	}
	qsort(kv, nq, sizeof(*kv), sigv4_kv_cmp);
	sbuf_addch(&b, '\0');
	b.len = 0;
	for (size_t i = 0; i < nq; i++)
		sbuf_addf(&b, "%s%s=%s", i ? "&" : "", kv[i].name, kv[i].value);
	sigv4_kv_free(kv, nq);
	return sbuf_detach(&b, NULL);
}

/* Header value as canonicalised: outer blanks trimmed, inner runs collapsed. */
static char *sigv4_header_value(const char *v)
{
	struct sbuf b = SBUF_INIT;
	int blank = 0;

	while (*v == ' ' || *v == '\t')
		v++;
	sbuf_addch(&b, '\0');
	b.len = 0;
	for (; *v; v++) {
		if (*v == ' ' || *v == '\t') {
			blank = 1;
			continue;
		}
		if (blank && b.len)
			sbuf_addch(&b, ' ');
		blank = 0;
		sbuf_addch(&b, *v);
	}
	return sbuf_detach(&b, NULL);
}

struct sigv4_headers {
	struct sigv4_kv *kv;
	size_t n;
	char *canonical;   /* "name:value\n" lines */
	char *signed_list; /* "host;x-amz-date" */
};

static void sigv4_headers_add(struct sigv4_headers *h, const char *name, const char *value)
{
	char *lower = xstrdup(name);

	for (char *p = lower; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	h->kv = xrealloc(h->kv, (h->n + 1) * sizeof(*h->kv));
	h->kv[h->n].name = lower;
	h->kv[h->n].value = sigv4_header_value(value);
	h->n++;
}

/* Sorts the headers and writes the canonical block and the signed list. */
static void sigv4_headers_finish(struct sigv4_headers *h)
{
	struct sbuf c = SBUF_INIT, s = SBUF_INIT;

	qsort(h->kv, h->n, sizeof(*h->kv), sigv4_kv_cmp);
	for (size_t i = 0; i < h->n; i++) {
		sbuf_addf(&c, "%s:%s\n", h->kv[i].name, h->kv[i].value);
		sbuf_addf(&s, "%s%s", i ? ";" : "", h->kv[i].name);
	}
	h->canonical = sbuf_detach(&c, NULL);
	h->signed_list = sbuf_detach(&s, NULL);
}

static void sigv4_headers_release(struct sigv4_headers *h)
{
	sigv4_kv_free(h->kv, h->n);
	free(h->canonical);
	free(h->signed_list);
}

/* --- the algorithm ------------------------------------------------------- */

struct sigv4_ctx {
	const struct sigv4_key *k;
	const struct sigv4_request *r;
	char amzdate[17]; /* 20130524T000000Z */
	char day[9];      /* 20130524 */
	char *scope;      /* 20130524/us-east-1/s3/aws4_request */
};

static int sigv4_ctx_init(struct sigv4_ctx *c, const struct sigv4_key *k,
			  const struct sigv4_request *r, char *msg, size_t n)
{
	struct tm tm;

	memset(c, 0, sizeof(*c));
	if (!k->access_key || !*k->access_key || !k->secret_key || !*k->secret_key)
		return kerr_set(msg, n, KERR_INVALID, "SigV4: no credentials to sign with");
	if (!k->region || !*k->region || !k->service || !r->method || !r->host || !r->path ||
	    r->path[0] != '/')
		return kerr_set(msg, n, KERR_INVALID, "SigV4: request lacks region, host or path");
	for (size_t i = 0; i < r->nheaders; i++)
		if (strpbrk(r->headers[i].value, "\r\n") || strpbrk(r->headers[i].name, "\r\n:"))
			return kerr_set(msg, n, KERR_INVALID,
					"SigV4: header '%.40s' has CR, LF or ':'",
					r->headers[i].name);
	if (!gmtime_r(&r->now, &tm))
		return kerr_set(msg, n, KERR_INVALID, "SigV4: time out of range");
	strftime(c->amzdate, sizeof(c->amzdate), "%Y%m%dT%H%M%SZ", &tm);
	strftime(c->day, sizeof(c->day), "%Y%m%d", &tm);
	c->k = k;
	c->r = r;
	c->scope = xasprintf("%s/%s/%s/%s", c->day, k->region, k->service, SIGV4_TERMINATOR);
	return 0;
}

/* The canonical request of c's request with query q (nq pairs) and headers h. */
static char *sigv4_canonical_request(const struct sigv4_ctx *c, const char *path, const char *query,
				     const struct sigv4_headers *h, const char *payload)
{
	return xasprintf("%s\n%s\n%s\n%s\n%s\n%s", c->r->method, path, query, h->canonical,
			 h->signed_list, payload);
}

static char *sigv4_string_to_sign(const struct sigv4_ctx *c, const char *canonical)
{
	char hex[65];

	sigv4_sha256_hex(canonical, strlen(canonical), hex);
	return xasprintf("%s\n%s\n%s\n%s", SIGV4_ALGORITHM, c->amzdate, c->scope, hex);
}

static char *sigv4_signature(const struct sigv4_ctx *c, const char *sts)
{
	char *secret = xasprintf("AWS4%s", c->k->secret_key), hex[65];
	unsigned char kdate[32], kregion[32], kservice[32], ksigning[32], sig[32];

	sigv4_hmac(secret, strlen(secret), c->day, kdate);
	sigv4_hmac(kdate, 32, c->k->region, kregion);
	sigv4_hmac(kregion, 32, c->k->service, kservice);
	sigv4_hmac(kservice, 32, SIGV4_TERMINATOR, ksigning);
	sigv4_hmac(ksigning, 32, sts, sig);
	sigv4_hex(sig, 32, hex);
	explicit_bzero(secret, strlen(secret));
	explicit_bzero(ksigning, sizeof(ksigning));
	free(secret);
	return xstrdup(hex);
}

/* Fills out->canonical, string_to_sign and signature. */
static void sigv4_compute(const struct sigv4_ctx *c, const char *path, const char *query,
			  const struct sigv4_headers *h, const char *payload,
			  struct sigv4_signed *out)
{
	out->canonical = sigv4_canonical_request(c, path, query, h, payload);
	out->string_to_sign = sigv4_string_to_sign(c, out->canonical);
	out->signature = sigv4_signature(c, out->string_to_sign);
}

static char *sigv4_target(const char *path, const char *query)
{
	return *query ? xasprintf("%s?%s", path, query) : xstrdup(path);
}

static int sigv4_has_token(const struct sigv4_key *k)
{
	return k->session_token && *k->session_token;
}

int sigv4_sign(const struct sigv4_key *k, const struct sigv4_request *r, struct sigv4_signed *out,
	       char *msg, size_t n)
{
	struct sigv4_ctx c;
	struct sigv4_headers h = { 0 };
	const char *payload = r->payload_hash ? r->payload_hash : SIGV4_UNSIGNED_PAYLOAD;
	char *path, *query;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = sigv4_ctx_init(&c, k, r, msg, n)))
		return rc;
	path = sigv4_encoded(r->path, 1);
	query = sigv4_canonical_query(r->query, r->nquery);
	sigv4_headers_add(&h, "host", r->host);
	sigv4_headers_add(&h, "x-amz-date", c.amzdate);
	sigv4_headers_add(&h, "x-amz-content-sha256", payload);
	if (sigv4_has_token(k))
		sigv4_headers_add(&h, "x-amz-security-token", k->session_token);
	for (size_t i = 0; i < r->nheaders; i++)
		sigv4_headers_add(&h, r->headers[i].name, r->headers[i].value);
	sigv4_headers_finish(&h);
	sigv4_compute(&c, path, query, &h, payload, out);
	out->target = sigv4_target(path, query);
	out->headers = xcalloc(5, sizeof(char *));
	out->headers[0] =
		xasprintf("Authorization: %s Credential=%s/%s, SignedHeaders=%s, "
			  "Signature=%s",
			  SIGV4_ALGORITHM, k->access_key, c.scope, h.signed_list, out->signature);
	out->headers[1] = xasprintf("x-amz-date: %s", c.amzdate);
	out->headers[2] = xasprintf("x-amz-content-sha256: %s", payload);
	if (sigv4_has_token(k))
		out->headers[3] = xasprintf("x-amz-security-token: %s", k->session_token);
	sigv4_headers_release(&h);
	free(path);
	free(query);
	free(c.scope);
	return 0;
}

int sigv4_presign(const struct sigv4_key *k, const struct sigv4_request *r, long expires,
		  struct sigv4_signed *out, char *msg, size_t n)
{
	struct sigv4_ctx c;
	struct sigv4_headers h = { 0 };
	struct sigv4_pair *q = NULL;
	size_t nq = 0;
	char *path = NULL, *query = NULL, *cred = NULL, exp[24];
	int rc;

	memset(out, 0, sizeof(*out));
	if (expires < 1 || expires > SIGV4_MAX_EXPIRES)
		return kerr_set(msg, n, KERR_RANGE, "SigV4: expiry %ld s is not within 1 to %ld",
				expires, SIGV4_MAX_EXPIRES);
	if ((rc = sigv4_ctx_init(&c, k, r, msg, n)))
		return rc;
	sigv4_headers_add(&h, "host", r->host);
	for (size_t i = 0; i < r->nheaders; i++)
		sigv4_headers_add(&h, r->headers[i].name, r->headers[i].value);
	sigv4_headers_finish(&h);

	cred = xasprintf("%s/%s", k->access_key, c.scope);
	snprintf(exp, sizeof(exp), "%ld", expires);
	q = xcalloc(r->nquery + 7, sizeof(*q));
	for (size_t i = 0; i < r->nquery; i++)
		q[nq++] = r->query[i];
	q[nq++] = (struct sigv4_pair){ "X-Amz-Algorithm", SIGV4_ALGORITHM };
	q[nq++] = (struct sigv4_pair){ "X-Amz-Credential", cred };
	q[nq++] = (struct sigv4_pair){ "X-Amz-Date", c.amzdate };
	q[nq++] = (struct sigv4_pair){ "X-Amz-Expires", exp };
	q[nq++] = (struct sigv4_pair){ "X-Amz-SignedHeaders", h.signed_list };
	if (sigv4_has_token(k))
		q[nq++] = (struct sigv4_pair){ "X-Amz-Security-Token", k->session_token };
	path = sigv4_encoded(r->path, 1);
	query = sigv4_canonical_query(q, nq);
	sigv4_compute(&c, path, query, &h,
		      r->payload_hash ? r->payload_hash : SIGV4_UNSIGNED_PAYLOAD, out);
	out->target = xasprintf("%s?%s&X-Amz-Signature=%s", path, query, out->signature);
	out->headers = xcalloc(1, sizeof(char *));
	sigv4_headers_release(&h);
	free(q);
	free(cred);
	free(path);
	free(query);
	free(c.scope);
	return 0;
}

void sigv4_signed_release(struct sigv4_signed *s)
{
	if (!s)
		return;
	for (char **h = s->headers; h && *h; h++)
		free(*h);
	free(s->headers);
	free(s->target);
	free(s->canonical);
	free(s->string_to_sign);
	free(s->signature);
	memset(s, 0, sizeof(*s));
}
