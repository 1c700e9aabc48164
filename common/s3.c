/*
 * s3.c - the S3 client; the contract is in s3.h.
 *
 * Every operation is one s3_call: where it goes (bucket, key, query), what
 * it carries (a buffer, a file, nothing), and how a failure reads.  The
 * request is signed right before it is sent and the signed target is what
 * is requested, so signing and sending never disagree about encoding.
 */
#include "s3.h"
#include "s3-internal.h"
#include "awsconf.h"
#include "err.h"
#include "http.h"
#include "sbuf.h"
#include "sigv4.h"
#include "xalloc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define S3_DEFAULT_REGION   "us-east-1"
#define S3_TIMEOUT_MS       600000L
#define S3_MAX_KEYS_DEFAULT 1000000u
#define S3_LIST_PAGE_MAX    ((size_t)16 << 20) /* one ListObjectsV2 page's XML */
#define S3_ERROR_BODY_MAX   ((size_t)1 << 20)
#define S3_MAX_KEY_LEN      1024

struct s3 {
	char *bucket;
	char *prefix; /* "" or without leading/trailing '/' */
	char *scheme; /* "http" or "https" */
	char *host;   /* the endpoint's host[:port], default port dropped */
	int virtual_hosted;
	char *region;
	struct awsconf conf;
	struct http_opts http;
	char list_page[16]; /* "" or max-keys per list page */
	int (*interrupted)(void);
};

int s3_is_url(const char *url)
{
	return url && !strncmp(url, "s3://", 5);
}

const char *s3_bucket(const struct s3 *s)
{
	return s->bucket;
}

char *s3_key(const struct s3 *s, const char *rel)
{
	return *s->prefix ? xasprintf("%s/%s", s->prefix, rel) : xstrdup(rel);
}

const char *s3_key_fault(const char *key)
{
	const char *p = key;

	if (!*key)
		return "is empty";
	if (*key == '/')
		return "starts with '/' (an empty segment)";
	for (;;) {
		size_t seg = strcspn(p, "/");

		if (seg == 0)
			return "has an empty segment ('//')";
		if (seg == 1 && p[0] == '.')
			return "has a '.' segment";
		if (seg == 2 && p[0] == '.' && p[1] == '.')
			return "has a '..' segment";
		if (!p[seg])
			return NULL;
		p += seg + 1;
		if (!*p)
			return "ends with '/' (an empty segment)";
	}
}

/* Bucket names as S3 allows them: 3-63 of [a-z0-9.-], starting and ending alphanumeric. */
static int s3_bucket_valid(const char *b, size_t len)
{
	if (len < 3 || len > 63 || !isalnum((unsigned char)b[0]) ||
	    !isalnum((unsigned char)b[len - 1]))
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!islower((unsigned char)b[i]) && !isdigit((unsigned char)b[i]) && b[i] != '.' &&
		    b[i] != '-')
			return 0;
	return 1;
}

static int s3_parse_url(struct s3 *s, const char *url, char *msg, size_t n)
{
	const char *b = url + 5, *slash, *why;
	size_t blen;
	char *p;

	if (!s3_is_url(url))
		return kerr_set(msg, n, KERR_INVALID, "'%.80s' is not an s3://BUCKET[/PREFIX] URL",
				url);
	slash = strchr(b, '/');
	blen = slash ? (size_t)(slash - b) : strlen(b);
	if (!s3_bucket_valid(b, blen))
		return kerr_set(
			msg, n, KERR_INVALID,
			"'%.80s': '%.*s' is not a valid bucket name (3 to 63 of a-z 0-9 . -)", url,
			(int)(blen > 63 ? 63 : blen), b);
	s->bucket = xstrndup(b, blen);
	s->prefix = xstrdup(slash ? slash + 1 : "");
	for (p = s->prefix + strlen(s->prefix); p > s->prefix && p[-1] == '/';)
		*--p = '\0';
	if (*s->prefix && (why = s3_key_fault(s->prefix)))
		return kerr_set(msg, n, KERR_INVALID, "'%.80s': the prefix '%.80s' %s: %s", url,
				s->prefix, why, S3_KEY_FAULT_WHY);
	if (strpbrk(s->prefix, "\r\n\t") || strlen(s->prefix) > S3_MAX_KEY_LEN / 2)
		return kerr_set(msg, n, KERR_INVALID, "'%.80s': the prefix is not a clean key path",
				url);
	return 0;
}

/* Splits endpoint into scheme and host[:port] (default ports dropped). */
static int s3_parse_endpoint(struct s3 *s, const char *ep, char *msg, size_t n)
{
	const char *h;
	size_t hlen;

	if (!strncasecmp(ep, "https://", 8))
		s->scheme = xstrdup("https"), h = ep + 8;
	else if (!strncasecmp(ep, "http://", 7))
		s->scheme = xstrdup("http"), h = ep + 7;
	else
		return kerr_set(msg, n, KERR_INVALID, "endpoint '%.80s' is not an http(s):// URL",
				ep);
	hlen = strcspn(h, "/?#");
	if (!hlen || strpbrk(h, "@ \t\r\n") || strspn(h + hlen, "/") != strlen(h + hlen))
		return kerr_set(msg, n, KERR_INVALID,
				"endpoint '%.80s' must be scheme://host[:port] with no path", ep);
	s->host = xstrndup(h, hlen);
	if (hlen > 4 && !strcmp(s->scheme, "https") && !strcmp(s->host + hlen - 4, ":443"))
		s->host[hlen - 4] = '\0';
	if (hlen > 3 && !strcmp(s->scheme, "http") && !strcmp(s->host + hlen - 3, ":80"))
		s->host[hlen - 3] = '\0';
	return 0;
}

/*
 * The DNS suffix of AWS's partition for region: China's regions (cn-*) and
 * the isolated ones have their own; the rest, GovCloud (us-gov-*) included,
 * are amazonaws.com.
 */
static const char *s3_dns_suffix(const char *region)
{
	static const struct {
		const char *prefix, *suffix;
	} partitions[] = {
		{ "cn-", "amazonaws.com.cn" },    { "us-isob-", "sc2s.sgov.gov" },
		{ "us-iso-", "c2s.ic.gov" },      { "eu-isoe-", "cloud.adc-e.uk" },
		{ "us-isof-", "csp.hci.ic.gov" },
	};

	for (size_t i = 0; i < sizeof(partitions) / sizeof(partitions[0]); i++)
		if (!strncmp(region, partitions[i].prefix, strlen(partitions[i].prefix)))
			return partitions[i].suffix;
	return "amazonaws.com";
}

static int s3_choose_addressing(struct s3 *s, enum s3_addressing a, int custom, char *msg, size_t n)
{
	const char *style = s->conf.addressing;

	if (a == S3_ADDR_AUTO && style && !strcasecmp(style, "path"))
		a = S3_ADDR_PATH;
	else if (a == S3_ADDR_AUTO && style && !strcasecmp(style, "virtual"))
		a = S3_ADDR_VIRTUAL;
	if (a == S3_ADDR_AUTO)
		a = !custom && !strchr(s->bucket, '.') ? S3_ADDR_VIRTUAL : S3_ADDR_PATH;
	if (a == S3_ADDR_VIRTUAL && strchr(s->bucket, '.') && !strcmp(s->scheme, "https"))
		return kerr_set(msg, n, KERR_INVALID,
				"bucket '%s' has dots: virtual-hosted addressing over https would "
				"not match the store's certificate; use path style",
				s->bucket);
	s->virtual_hosted = a == S3_ADDR_VIRTUAL;
	return 0;
}

int s3_open(struct s3 **out, const char *url, const struct s3_opts *o, char *msg, size_t n)
{
	static const struct s3_opts none;
	struct s3 *s = xcalloc(1, sizeof(*s));
	const char *ep;
	char *aws_ep = NULL;
	int rc;

	*out = NULL;
	if (!o)
		o = &none;
	if ((rc = s3_parse_url(s, url, msg, n)) ||
	    (rc = awsconf_load(&s->conf, o->profile, msg, n)))
		goto fail;
	if (!s->conf.access_key) {
		rc = kerr_set(msg, n, KERR_NOTFOUND,
			      "no AWS credentials for '%s': set AWS_ACCESS_KEY_ID and "
			      "AWS_SECRET_ACCESS_KEY, or profile '%s' in ~/.aws/credentials",
			      url, s->conf.profile);
		goto fail;
	}
	s->region = xstrdup(o->region        ? o->region
			    : s->conf.region ? s->conf.region
					     : S3_DEFAULT_REGION);
	ep = o->endpoint ? o->endpoint : s->conf.endpoint_url;
	if (!ep)
		ep = aws_ep = xasprintf("https://s3.%s.%s", s->region, s3_dns_suffix(s->region));
	if ((rc = s3_parse_endpoint(s, ep, msg, n)) ||
	    (rc = s3_choose_addressing(s, o->addressing, !aws_ep, msg, n)))
		goto fail;
	s->http.ca_file = o->ca_file;
	s->http.max_attempts = o->max_attempts;
	s->http.backoff_ms = o->backoff_ms;
	s->http.timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : S3_TIMEOUT_MS;
	s->http.stop = o->interrupted;
	s->interrupted = o->interrupted;
	if (o->list_page > 0)
		snprintf(s->list_page, sizeof(s->list_page), "%d", o->list_page);
	free(aws_ep);
	*out = s;
	return 0;
fail:
	free(aws_ep);
	s3_free(s);
	return rc;
}

void s3_free(struct s3 *s)
{
	if (!s)
		return;
	free(s->bucket);
	free(s->prefix);
	free(s->scheme);
	free(s->host);
	free(s->region);
	awsconf_release(&s->conf);
	free(s);
}

/* --- XML: the few elements S3 answers with --------------------------------- */

/* Appends the XML text [p, end) to b with the five entities and &#N; decoded. */
static void s3_xml_unescape(struct sbuf *b, const char *p, const char *end)
{
	static const struct {
		const char *ent;
		char ch;
	} ents[] = { { "&amp;", '&' },
		     { "&lt;", '<' },
		     { "&gt;", '>' },
		     { "&quot;", '"' },
		     { "&apos;", '\'' } };

	while (p < end) {
		size_t i, len;

		if (*p != '&') {
			sbuf_addch(b, *p++);
			continue;
		}
		for (i = 0; i < sizeof(ents) / sizeof(ents[0]); i++) {
			len = strlen(ents[i].ent);
			if ((size_t)(end - p) >= len && !memcmp(p, ents[i].ent, len))
				break;
		}
		if (i < sizeof(ents) / sizeof(ents[0])) {
			sbuf_addch(b, ents[i].ch);
			p += len;
		} else if (end - p > 3 && p[1] == '#') {
			char *stop;
			int hex = p[2] == 'x' || p[2] == 'X';
			unsigned long cp = strtoul(p + 2 + hex, &stop, hex ? 16 : 10);

			if (*stop != ';' || cp == 0 || cp > 0x10FFFF) {
				sbuf_addch(b, *p++);
				continue;
			}
			if (cp < 0x80) {
				sbuf_addch(b, (int)cp);
			} else if (cp < 0x800) {
				sbuf_addch(b, (int)(0xC0 | (cp >> 6)));
				sbuf_addch(b, (int)(0x80 | (cp & 0x3F)));
			} else if (cp < 0x10000) {
				sbuf_addch(b, (int)(0xE0 | (cp >> 12)));
				sbuf_addch(b, (int)(0x80 | ((cp >> 6) & 0x3F)));
				sbuf_addch(b, (int)(0x80 | (cp & 0x3F)));
			} else {
				sbuf_addch(b, (int)(0xF0 | (cp >> 18)));
				sbuf_addch(b, (int)(0x80 | ((cp >> 12) & 0x3F)));
				sbuf_addch(b, (int)(0x80 | ((cp >> 6) & 0x3F)));
				sbuf_addch(b, (int)(0x80 | (cp & 0x3F)));
			}
			p = stop + 1;
		} else {
			sbuf_addch(b, *p++);
		}
	}
}

/*
 * The decoded text of the first <tag>...</tag> in [p, end), malloc'd, or
 * NULL; *after (if given) points past the closing tag.
 */
static char *s3_xml_text(const char *p, const char *end, const char *tag, const char **after)
{
	char *open = xasprintf("<%s>", tag), *close = xasprintf("</%s>", tag), *out = NULL;
	const char *a = memmem(p, (size_t)(end - p), open, strlen(open)), *z;

	if (a) {
		a += strlen(open);
		z = memmem(a, (size_t)(end - a), close, strlen(close));
		if (z) {
			struct sbuf b = SBUF_INIT;

			s3_xml_unescape(&b, a, z);
			sbuf_addch(&b, '\0');
			out = sbuf_detach(&b, NULL);
			if (after)
				*after = z + strlen(close);
		}
	}
	free(open);
	free(close);
	return out;
}

/* Percent-decoding as S3's encoding-type=url wants ('+' is a space there). */
static char *s3_url_decode(const char *s)
{
	struct sbuf b = SBUF_INIT;

	for (; *s; s++) {
		if (*s == '%' && isxdigit((unsigned char)s[1]) && isxdigit((unsigned char)s[2])) {
			char hex[3] = { s[1], s[2], 0 };

			sbuf_addch(&b, (int)strtoul(hex, NULL, 16));
			s += 2;
		} else {
			sbuf_addch(&b, *s == '+' ? ' ' : *s);
		}
	}
	sbuf_addch(&b, '\0');
	return sbuf_detach(&b, NULL);
}

/* --- one request ------------------------------------------------------------ */

struct s3_call {
	const char *method;
	const char *key; /* NULL: the bucket itself */
	const struct sigv4_pair *query;
	size_t nquery;
	const void *body;
	size_t body_len;
	const char *body_path;
	const char *content_type;
	size_t max_body;
	const char *what; /* names the target in messages; NULL: the key */
};

/*
 * The failure of call as the store told it, into msg; returns the code.
 * Status and S3 error code come first and the target (up to a 1,024-byte
 * key) last, so that a message cut short loses the least useful part.
 */
static int s3_failure(const struct s3 *s, const struct s3_call *c, const struct http_response *resp,
		      const char *http_msg, char *msg, size_t n)
{
	const char *b = resp->body, *e = b ? b + resp->body_len : NULL;
	const char *what = c->what ? c->what : c->key ? c->key : "";
	char *code = b ? s3_xml_text(b, e, "Code", NULL) : NULL;
	char *text = b ? s3_xml_text(b, e, "Message", NULL) : NULL;
	int rc = resp->status == 404 ? KERR_NOTFOUND : KERR_HTTP;

	if (!resp->status)
		kerr_set(msg, n, rc, "S3 %s failed: %s; target '%s/%s'", c->method, http_msg,
			 s->bucket, what);
	else if (code)
		kerr_set(msg, n, rc, "S3 %s %ld %.100s%s%.300s%s; target '%s/%s'", c->method,
			 resp->status, code, text ? ": " : "", text ? text : "",
			 resp->attempts > 1 ? " (after retries)" : "", s->bucket, what);
	else
		kerr_set(msg, n, rc, "S3 %s HTTP %ld%s; target '%s/%s'", c->method, resp->status,
			 resp->status == 404 ? " (no such key)" : "", s->bucket, what);
	free(code);
	free(text);
	return rc;
}

/* Performs call; resp holds the answer on success (release it). */
static int s3_do(struct s3 *s, const struct s3_call *c, struct http_response *resp, char *msg,
		 size_t n)
{
	struct sigv4_key k = { .access_key = s->conf.access_key,
			       .secret_key = s->conf.secret_key,
			       .session_token = s->conf.session_token,
			       .region = s->region,
			       .service = "s3" };
	struct sigv4_pair ct = { "Content-Type", c->content_type };
	struct sigv4_request r = { .method = c->method,
				   .query = c->query,
				   .nquery = c->nquery,
				   .headers = &ct,
				   .nheaders = c->content_type ? 1 : 0,
				   .now = time(NULL) };
	struct sigv4_signed sig = { 0 };
	struct http_opts o = s->http;
	const char **hdrs = NULL, *why;
	char hash[65], http_msg[2048], *host, *path, *url = NULL;
	size_t nh = 0;
	int rc;

	memset(resp, 0, sizeof(*resp));
	if (c->key && (!*c->key || strlen(c->key) > S3_MAX_KEY_LEN))
		return kerr_set(msg, n, KERR_INVALID, "S3 key '%.80s' is empty or too long",
				c->key);
	if (c->key && (why = s3_key_fault(c->key)))
		return kerr_set(msg, n, KERR_INVALID, "S3 key '%.200s' %s: %s", c->key, why,
				S3_KEY_FAULT_WHY);
	host = s->virtual_hosted ? xasprintf("%s.%s", s->bucket, s->host) : xstrdup(s->host);
	path = s->virtual_hosted
		       ? xasprintf("/%s", c->key ? c->key : "")
		       : xasprintf("/%s%s%s", s->bucket, c->key ? "/" : "", c->key ? c->key : "");
	rc = c->body_path ? sigv4_sha256_file(c->body_path, hash, NULL, msg, n)
			  : (sigv4_sha256_hex(c->body ? c->body : "", c->body_len, hash), 0);
	r.host = host;
	r.path = path;
	r.payload_hash = hash;
	if (!rc)
		rc = sigv4_sign(&k, &r, &sig, msg, n);
	if (rc)
		goto out;
	url = xasprintf("%s://%s%s", s->scheme, host, sig.target);
	for (char **h = sig.headers; *h; h++)
		nh++;
	hdrs = xcalloc(nh + 2, sizeof(*hdrs));
	memcpy(hdrs, sig.headers, nh * sizeof(*hdrs));
	if (c->content_type)
		hdrs[nh] = xasprintf("Content-Type: %s", c->content_type);
	o.headers = hdrs;
	o.body_path = c->body_path;
	o.max_body = c->max_body;
	rc = http_request(c->method, url, c->body, c->body_len, &o, resp, http_msg,
			  sizeof(http_msg));
	if (rc == KERR_HTTP || (rc && resp->status >= 400))
		rc = s3_failure(s, c, resp, http_msg, msg, n);
	else if (rc)
		kerr_set(msg, n, rc, "S3 %s failed: %s; target '%s/%s'", c->method, http_msg,
			 s->bucket,
			 c->what  ? c->what
			 : c->key ? c->key
				  : "");
out:
	if (hdrs && c->content_type)
		free((char *)hdrs[nh]);
	free(hdrs);
	sigv4_signed_release(&sig);
	free(url);
	free(host);
	free(path);
	return rc;
}

static int s3_simple(struct s3 *s, const struct s3_call *c, char *msg, size_t n)
{
	struct http_response resp;
	int rc = s3_do(s, c, &resp, msg, n);

	http_response_release(&resp);
	return rc;
}

/* --- operations -------------------------------------------------------------- */

int s3_put(struct s3 *s, const char *key, const void *data, size_t len, const char *content_type,
	   char *msg, size_t n)
{
	struct s3_call c = { .method = "PUT",
			     .key = key,
			     .body = data,
			     .body_len = len,
			     .content_type = content_type,
			     .max_body = S3_ERROR_BODY_MAX };

	return s3_simple(s, &c, msg, n);
}

int s3_put_file(struct s3 *s, const char *key, const char *path, const char *content_type,
		char *msg, size_t n)
{
	struct s3_call c = { .method = "PUT",
			     .key = key,
			     .body_path = path,
			     .content_type = content_type,
			     .max_body = S3_ERROR_BODY_MAX };

	return s3_simple(s, &c, msg, n);
}

int s3_get(struct s3 *s, const char *key, size_t max, char **data, size_t *len, char *msg, size_t n)
{
	/* room for an error document even when the object may be tiny */
	struct s3_call c = { .method = "GET",
			     .key = key,
			     .max_body = max > S3_ERROR_BODY_MAX ? max : S3_ERROR_BODY_MAX };
	struct http_response resp;
	int rc = s3_do(s, &c, &resp, msg, n);

	*data = NULL;
	*len = 0;
	if (!rc && resp.body_len > max)
		rc = kerr_set(msg, n, KERR_LIMIT,
			      "S3 GET: the object exceeds %zu bytes; target '%s/%s'", max,
			      s->bucket, key);
	if (!rc) {
		*data = resp.body ? resp.body : xstrdup("");
		*len = resp.body_len;
		resp.body = NULL;
	}
	http_response_release(&resp);
	return rc;
}

int s3_head(struct s3 *s, const char *key, struct s3_object *info, char *msg, size_t n)
{
	struct s3_call c = { .method = "HEAD", .key = key, .max_body = S3_ERROR_BODY_MAX };
	struct http_response resp;
	char len[32];
	int rc = s3_do(s, &c, &resp, msg, n);

	memset(info, 0, sizeof(*info));
	if (!rc) {
		http_response_header(&resp, "Content-Length", len, sizeof(len));
		info->size = strtoull(len, NULL, 10);
		http_response_header(&resp, "ETag", info->etag, sizeof(info->etag));
	}
	http_response_release(&resp);
	return rc;
}

int s3_delete(struct s3 *s, const char *key, char *msg, size_t n)
{
	struct s3_call c = { .method = "DELETE", .key = key, .max_body = S3_ERROR_BODY_MAX };
	int rc = s3_simple(s, &c, msg, n);

	return rc == KERR_NOTFOUND ? 0 : rc;
}

int s3_create_bucket(struct s3 *s, char *msg, size_t n)
{
	struct s3_call c = { .method = "PUT", .max_body = S3_ERROR_BODY_MAX };
	struct http_response resp;
	int rc = s3_do(s, &c, &resp, msg, n);

	if (rc && resp.status == 409 && resp.body && strstr(resp.body, "BucketAlreadyOwnedByYou"))
		rc = 0;
	http_response_release(&resp);
	return rc;
}

/* Appends the <Contents> entries of one page to out; returns their count. */
static size_t s3_list_page(const char *xml, size_t len, struct s3_list *out, size_t max)
{
	const char *p = xml, *end = xml + len, *after;
	char *entry;
	size_t added = 0;

	while (out->n < max && (entry = s3_xml_text(p, end, "Contents", &after))) {
		const char *ee = entry + strlen(entry);
		char *key = s3_xml_text(entry, ee, "Key", NULL);
		char *size = s3_xml_text(entry, ee, "Size", NULL);
		char *etag = s3_xml_text(entry, ee, "ETag", NULL);

		if (key) {
			struct s3_object *o;

			out->obj = xreallocarray(out->obj, out->n + 1, sizeof(*out->obj));
			o = &out->obj[out->n++];
			memset(o, 0, sizeof(*o));
			o->key = s3_url_decode(key);
			o->size = size ? strtoull(size, NULL, 10) : 0;
			snprintf(o->etag, sizeof(o->etag), "%s", etag ? etag : "");
			added++;
		}
		free(key);
		free(size);
		free(etag);
		free(entry);
		p = after;
	}
	return added;
}

/*
 * Reads one ListObjectsV2 answer: appends its keys to out and sets *token
 * to its NextContinuationToken when IsTruncated says more follow (NULL
 * otherwise).  *added counts the keys.  An empty body or one that is not a
 * ListBucketResult is an error, as is a truncated page without a token.
 */
static int s3_list_answer(const struct s3 *s, const char *what, const struct http_response *resp,
			  struct s3_list *out, size_t max, char **token, size_t *added, char *msg,
			  size_t n)
{
	const char *b = resp->body, *e;
	char *truncated = NULL;
	int rc = 0;

	*token = NULL;
	*added = 0;
	if (!b || !resp->body_len)
		return kerr_set(msg, n, KERR_PARSE,
				"S3 GET %ld: the list answer has an empty body; target '%s/%s'",
				resp->status, s->bucket, what);
	e = b + resp->body_len;
	if (!memmem(b, resp->body_len, "<ListBucketResult", 17))
		return kerr_set(msg, n, KERR_PARSE,
				"S3 GET %ld: the list answer is not a ListBucketResult document; "
				"target '%s/%s'",
				resp->status, s->bucket, what);
	*added = s3_list_page(b, resp->body_len, out, max);
	truncated = s3_xml_text(b, e, "IsTruncated", NULL);
	if (truncated && !strcmp(truncated, "true")) {
		*token = s3_xml_text(b, e, "NextContinuationToken", NULL);
		if (!*token || !**token) {
			free(*token);
			*token = NULL;
			rc = kerr_set(msg, n, KERR_PARSE,
				      "S3 GET: a truncated list page without a continuation token; "
				      "target '%s/%s'",
				      s->bucket, what);
		}
	}
	free(truncated);
	return rc;
}

int s3__list_stuck(const char *bucket, const char *what, const char *prev, const char *token,
		   int pages, int empty, int interrupted, char *msg, size_t n)
{
	if (interrupted)
		return kerr_set(msg, n, KERR_CHILD,
				"S3 list interrupted by a signal; target '%s/%s'", bucket, what);
	if (prev && !strcmp(prev, token))
		return kerr_set(msg, n, KERR_PARSE,
				"S3 list: the store sent the same continuation token twice; "
				"target '%s/%s'",
				bucket, what);
	if (empty >= S3__LIST_EMPTY_MAX)
		return kerr_set(
			msg, n, KERR_PARSE,
			"S3 list: %d truncated pages in a row without a key; target '%s/%s'", empty,
			bucket, what);
	if (pages >= S3__LIST_PAGES_MAX)
		return kerr_set(msg, n, KERR_LIMIT, "S3 list: more than %d pages; target '%s/%s'",
				S3__LIST_PAGES_MAX, bucket, what);
	return 0;
}

int s3_list(struct s3 *s, const char *prefix, size_t max_keys, struct s3_list *out, char *msg,
	    size_t n)
{
	char *token = NULL, *prev = NULL;
	char *what = xasprintf("?prefix=%s", prefix ? prefix : "");
	size_t max = max_keys ? max_keys : S3_MAX_KEYS_DEFAULT, added = 0;
	int rc = 0, pages = 0, empty = 0;

	memset(out, 0, sizeof(*out));
	for (;;) {
		struct sigv4_pair q[5] = { { "list-type", "2" },
					   { "encoding-type", "url" },
					   { "prefix", prefix ? prefix : "" } };
		struct s3_call c = { .method = "GET",
				     .query = q,
				     .nquery = 3,
				     .max_body = S3_LIST_PAGE_MAX,
				     .what = what };
		struct http_response resp;

		if (*s->list_page)
			q[c.nquery++] = (struct sigv4_pair){ "max-keys", s->list_page };
		if (token)
			q[c.nquery++] = (struct sigv4_pair){ "continuation-token", token };
		rc = s3_do(s, &c, &resp, msg, n);
		free(prev);
		prev = token;
		token = NULL;
		if (!rc)
			rc = s3_list_answer(s, what, &resp, out, max, &token, &added, msg, n);
		http_response_release(&resp);
		pages++;
		empty = added ? 0 : empty + 1;
		if (rc || !token)
			break;
		if (out->n >= max) {
			rc = kerr_set(msg, n, KERR_LIMIT,
				      "S3 list: more than %zu keys; target '%s/%s'", max, s->bucket,
				      what);
			break;
		}
		if ((rc = s3__list_stuck(s->bucket, what, prev, token, pages, empty,
					 s->interrupted && s->interrupted(), msg, n)))
			break;
	}
	free(token);
	free(prev);
	free(what);
	if (rc)
		s3_list_release(out);
	return rc;
}

void s3_list_release(struct s3_list *l)
{
	for (size_t i = 0; l && i < l->n; i++)
		free(l->obj[i].key);
	if (l)
		free(l->obj);
	if (l)
		memset(l, 0, sizeof(*l));
}

char *s3_presign(struct s3 *s, const char *method, const char *key, long expires, time_t now,
		 char *msg, size_t n)
{
	struct sigv4_key k = { .access_key = s->conf.access_key,
			       .secret_key = s->conf.secret_key,
			       .session_token = s->conf.session_token,
			       .region = s->region,
			       .service = "s3" };
	struct sigv4_request r = { .method = method,
				   .payload_hash = SIGV4_UNSIGNED_PAYLOAD,
				   .now = now };
	struct sigv4_signed sig;
	char *host, *path, *url = NULL;
	const char *why;

	if (!key || !*key || strlen(key) > S3_MAX_KEY_LEN) {
		kerr_set(msg, n, KERR_INVALID, "S3 key '%.80s' is empty or too long",
			 key ? key : "");
		return NULL;
	}
	if ((why = s3_key_fault(key))) {
		kerr_set(msg, n, KERR_INVALID, "S3 key '%.200s' %s: %s", key, why,
			 S3_KEY_FAULT_WHY);
		return NULL;
	}
	host = s->virtual_hosted ? xasprintf("%s.%s", s->bucket, s->host) : xstrdup(s->host);
	path = s->virtual_hosted ? xasprintf("/%s", key) : xasprintf("/%s/%s", s->bucket, key);
	r.host = host;
	r.path = path;
	if (!sigv4_presign(&k, &r, expires, &sig, msg, n)) {
		url = xasprintf("%s://%s%s", s->scheme, host, sig.target);
		sigv4_signed_release(&sig);
	}
	free(host);
	free(path);
	return url;
}

/* --- for tests and fuzz harnesses (s3-internal.h) ------------------------ */

size_t s3__list_page(const char *xml, size_t len, struct s3_list *out, size_t max)
{
	return s3_list_page(xml, len, out, max);
}

char *s3__xml_text(const char *p, const char *end, const char *tag, const char **after)
{
	return s3_xml_text(p, end, tag, after);
}
