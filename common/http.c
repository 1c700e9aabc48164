/*
 * http.c - the shared HTTP client; the contract is in http.h.  This file
 * holds a call's curl handle and callbacks (a streamed body's lines
 * included), its attempts and retries, and the one-shot request;
 * http-stream.c builds streamed requests on top of it.
 *
 * One curl easy handle serves all attempts of a request, so a connection the
 * server kept alive after a 503 is reused for the retry.  Everything shown to
 * a human (msg, log lines) names the URL through http_redact_url and has the
 * URL's query values scrubbed out (http__quote), because presigned URLs carry
 * their signature in the query string and servers sometimes echo it back.
 *
 * May use: http-redact.c (through http-internal.h), err, log, sbuf, xalloc,
 * libcurl; never http-stream.c, which calls in here.
 */
#include "http.h"
#include "http-internal.h"
#include "err.h"
#include "log.h"
#include "sbuf.h"
#include "xalloc.h"

#include <assert.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HTTP_DEFAULT_TIMEOUT_MS         60000L
#define HTTP_DEFAULT_CONNECT_TIMEOUT_MS 10000L
#define HTTP_DEFAULT_MAX_ATTEMPTS       5
#define HTTP_DEFAULT_BACKOFF_MS         200L
#define HTTP_DEFAULT_MAX_BODY           ((size_t)64 << 20)
#define HTTP_BACKOFF_MAX_MS             30000L /* one computed backoff delay at most */
#define HTTP_RETRY_AFTER_MAX_S          30L    /* a server's Retry-After at most */
#define HTTP_STOP_SLICE_MS              200L   /* how often a retry's pause asks opts.stop */
#define HTTP_MAX_HEADERS                65536  /* response header bytes kept */

#define HTTP_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* How a method maps onto libcurl: each needs different options. */
enum http_mode {
	HTTP_MODE_CUSTOM, /* CURLOPT_CUSTOMREQUEST, body as POSTFIELDS */
	HTTP_MODE_GET,
	HTTP_MODE_HEAD, /* CURLOPT_NOBODY: curl must not wait for a body */
	HTTP_MODE_PUT,  /* CURLOPT_UPLOAD: streamed, with Content-Length */
	HTTP_MODE_POST, /* CURLOPT_POSTFIELDS with an explicit size */
};

static const struct http_method {
	const char *name;
	enum http_mode mode;
	int body_ok;
} http_methods[] = {
	{ .name = "GET", .mode = HTTP_MODE_GET, .body_ok = 0 },
	{ .name = "HEAD", .mode = HTTP_MODE_HEAD, .body_ok = 0 },
	{ .name = "PUT", .mode = HTTP_MODE_PUT, .body_ok = 1 },
	{ .name = "POST", .mode = HTTP_MODE_POST, .body_ok = 1 },
};

static const struct http_method http_custom_method = {
	.name = NULL,
	.mode = HTTP_MODE_CUSTOM,
	.body_ok = 1,
};

/* Options that are the same for every request. */
static const struct {
	CURLoption opt;
	long val;
} http_fixed_opts[] = {
	{ CURLOPT_NOSIGNAL, 1L },
	{ CURLOPT_SSL_VERIFYPEER, 1L },
	{ CURLOPT_SSL_VERIFYHOST, 2L },
	{ CURLOPT_FOLLOWLOCATION, 0L },
	{ CURLOPT_FAILONERROR, 0L },
	/* The path goes out as given: a signed one (SigV4) must not lose dot segments. */
	{ CURLOPT_PATH_AS_IS, 1L },
};

/* Transport failures worth another attempt; everything else is final. */
static const CURLcode http_retry_codes[] = {
	CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_OPERATION_TIMEDOUT,
	CURLE_SEND_ERROR,           CURLE_RECV_ERROR,      CURLE_GOT_NOTHING,
	CURLE_PARTIAL_FILE,
};

static pthread_once_t http_once = PTHREAD_ONCE_INIT;
static CURLcode http_global_res;

static void http_global_init(void)
{
	http_global_res = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int http_is_url(const char *s)
{
	return !strncasecmp(s, "http://", 7) || !strncasecmp(s, "https://", 8);
}

void http_response_release(struct http_response *resp)
{
	if (!resp)
		return;
	free(resp->body);
	free(resp->headers);
	resp->body = NULL;
	resp->headers = NULL;
	resp->body_len = 0;
}

int http_response_header(const struct http_response *resp, const char *name, char *out, size_t n)
{
	size_t nlen = strlen(name);

	if (n)
		out[0] = '\0';
	for (const char *p = resp ? resp->headers : NULL; p && *p;) {
		const char *end = p + strcspn(p, "\r\n");

		if ((size_t)(end - p) > nlen && p[nlen] == ':' && !strncasecmp(p, name, nlen)) {
			const char *v = p + nlen + 1;

			while (v < end && (*v == ' ' || *v == '\t'))
				v++;
			while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
				end--;
			if (n)
				snprintf(out, n, "%.*s", (int)(end - v), v);
			return 1;
		}
		p = end + strspn(end, "\r\n");
	}
	return 0;
}

/* Streaming: hands every complete line in c->body to the line callback. */
static size_t http_stream_lines(struct http_call *c, size_t len)
{
	char *start = c->body.buf, *nl;
	size_t left = c->body.len;

	while (left && (nl = memchr(start, '\n', left))) {
		size_t l = (size_t)(nl - start);

		if (c->line_fn(c->stream_arg, start, l && start[l - 1] == '\r' ? l - 1 : l)) {
			c->stopped = 1;
			return 0;
		}
		left -= l + 1;
		start = nl + 1;
	}
	memmove(c->body.buf, start, left);
	c->body.len = left;
	if (left > c->max_body) {
		c->over_limit = 1;
		return 0;
	}
	return len;
}

static size_t http_write_cb(char *data, size_t size, size_t nmemb, void *arg)
{
	struct http_call *c = arg;
	size_t len = size * nmemb;
	long status = 0;

	if (c->line_fn && !curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status) &&
	    status >= 200 && status < 300) {
		sbuf_add(&c->body, data, len);
		return http_stream_lines(c, len);
	}
	if (len > c->max_body - c->body.len) {
		c->over_limit = 1;
		return 0; /* len > 0 here, so curl sees a short write and stops */
	}
	sbuf_add(&c->body, data, len);
	return len;
}

static size_t http_read_cb(char *dst, size_t size, size_t nmemb, void *arg)
{
	struct http_call *c = arg;
	size_t len = c->upload_len - c->upload_pos;

	if (len > size * nmemb)
		len = size * nmemb;
	if (len && c->upload_fd >= 0) {
		ssize_t got = pread(c->upload_fd, dst, len, (off_t)c->upload_pos);

		if (got <= 0) /* the file shrank or failed under us: stop the upload */
			return CURL_READFUNC_ABORT;
		len = (size_t)got;
	} else if (len) {
		memcpy(dst, c->upload + c->upload_pos, len);
	}
	c->upload_pos += len;
	return len;
}

static int http_seek_cb(void *arg, curl_off_t offset, int origin)
{
	struct http_call *c = arg;

	if (origin != SEEK_SET || offset < 0 || (uint64_t)offset > c->upload_len)
		return CURL_SEEKFUNC_FAIL;
	c->upload_pos = (size_t)offset;
	return CURL_SEEKFUNC_OK;
}

/*
 * Parses the delay-seconds form of Retry-After (value of len bytes, not
 * NUL-terminated), capped at HTTP_RETRY_AFTER_MAX_S.  Returns -1 for
 * anything else, the HTTP-date form included: backoff applies then.
 */
static long http_parse_retry_after(const char *v, size_t len)
{
	size_t i = 0;
	long secs = 0;

	while (i < len && (v[i] == ' ' || v[i] == '\t'))
		i++;
	if (i == len || v[i] < '0' || v[i] > '9')
		return -1;
	for (; i < len && v[i] >= '0' && v[i] <= '9'; i++)
		if (secs <= HTTP_RETRY_AFTER_MAX_S)
			secs = secs * 10 + (v[i] - '0');
	for (; i < len; i++)
		if (v[i] != ' ' && v[i] != '\t' && v[i] != '\r' && v[i] != '\n')
			return -1;
	return secs > HTTP_RETRY_AFTER_MAX_S ? HTTP_RETRY_AFTER_MAX_S : secs;
}

static size_t http_header_cb(char *line, size_t size, size_t nitems, void *arg)
{
	static const char name[] = "Retry-After:";
	struct http_call *c = arg;
	size_t len = size * nitems;
	size_t nlen = sizeof(name) - 1;

	if (len >= 5 && !memcmp(line, "HTTP/", 5)) {
		c->retry_after_s = -1; /* a new response (1xx included) begins */
		sbuf_reset(&c->hdrs);
	}
	if (c->hdrs.len + len <= HTTP_MAX_HEADERS)
		sbuf_add(&c->hdrs, line, len);
	if (len > nlen && !strncasecmp(line, name, nlen))
		c->retry_after_s = http_parse_retry_after(line + nlen, len - nlen);
	return len;
}

/* Returns nonzero when method is an RFC 9110 token. */
static int http_method_valid(const char *method)
{
	if (!*method)
		return 0;
	for (const char *p = method; *p; p++)
		if (*p <= ' ' || *p >= 0x7f || strchr("\"(),/:;<=>?@[\\]{}", *p))
			return 0;
	return 1;
}

static const struct http_method *http_method_find(const char *method)
{
	for (size_t i = 0; i < HTTP_ARRAY_SIZE(http_methods); i++)
		if (!strcmp(http_methods[i].name, method))
			return &http_methods[i];
	return &http_custom_method;
}

/* The CA bundle named by the environment, as http.h promises; or NULL. */
static const char *http_env_ca_file(void)
{
	static const char *const vars[] = { "CURL_CA_BUNDLE", "SSL_CERT_FILE" };

	for (size_t i = 0; i < HTTP_ARRAY_SIZE(vars); i++) {
		const char *v = getenv(vars[i]);

		if (v && *v)
			return v;
	}
	return NULL;
}

static int http_call_server_name(struct http_call *c, char *msg, size_t n);

/* Fills c from the arguments and defaults; checks what curl would not. */
int http__call_init(struct http_call *c, const char *method, const char *url, const void *body,
		    size_t body_len, const struct http_opts *opts, char *msg, size_t n)
{
	static const struct http_opts defaults;

	assert(method && url && (body || !body_len));
	if (!opts)
		opts = &defaults;
	c->method = method;
	c->url = url;
	http_redact_url(url, c->shown_url, sizeof(c->shown_url));
	c->ca_file = opts->ca_file ? opts->ca_file : http_env_ca_file();
	c->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : HTTP_DEFAULT_TIMEOUT_MS;
	c->connect_timeout_ms = opts->connect_timeout_ms > 0 ? opts->connect_timeout_ms
							     : HTTP_DEFAULT_CONNECT_TIMEOUT_MS;
	c->backoff_ms = opts->backoff_ms > 0 ? opts->backoff_ms : HTTP_DEFAULT_BACKOFF_MS;
	c->max_attempts = opts->max_attempts > 0 ? opts->max_attempts : HTTP_DEFAULT_MAX_ATTEMPTS;
	c->max_body = opts->max_body > 0 ? opts->max_body : HTTP_DEFAULT_MAX_BODY;
	c->upload = body;
	c->upload_len = body_len;
	c->upload_fd = -1;
	c->retry_after_s = -1;
	c->how = http_method_find(method);
	c->opts = opts;
	if (opts->tls_server_name && *opts->tls_server_name && http_call_server_name(c, msg, n))
		return KERR_HTTP;

	if (!http_method_valid(method))
		return kerr_set(msg, n, KERR_HTTP, "%.32s %s: invalid method", method,
				c->shown_url);
	if (body_len && !c->how->body_ok)
		return kerr_set(msg, n, KERR_HTTP, "%s %s: a %s request carries no body", method,
				c->shown_url, method);
	if (opts->body_path) {
		struct stat st;

		if (body_len || c->how->mode != HTTP_MODE_PUT)
			return kerr_set(msg, n, KERR_HTTP, "%s %s: a file body is for PUT alone",
					method, c->shown_url);
		c->upload_fd = open(opts->body_path, O_RDONLY | O_CLOEXEC);
		if (c->upload_fd < 0 || fstat(c->upload_fd, &st))
			return kerr_set(msg, n, KERR_IO, "cannot read '%s': %s", opts->body_path,
					strerror(errno));
		c->upload_len = (size_t)st.st_size;
	}
	for (const char *const *h = opts->headers; h && *h; h++) {
		if (strpbrk(*h, "\r\n"))
			return kerr_set(msg, n, KERR_HTTP, "%s %s: header line contains CR or LF",
					method, c->shown_url);
		c->headers = curl_slist_append(c->headers, *h);
		if (!c->headers)
			return kerr_set(msg, n, KERR_HTTP, "%s %s: out of memory", method,
					c->shown_url);
	}
	return 0;
}

/* Sets the options that depend on the method. */
static CURLcode http_call_set_method(struct http_call *c)
{
	CURL *h = c->curl;
	CURLcode res = CURLE_OK;

	switch (c->how->mode) {
	case HTTP_MODE_GET: res = curl_easy_setopt(h, CURLOPT_HTTPGET, 1L); break;
	case HTTP_MODE_HEAD: res = curl_easy_setopt(h, CURLOPT_NOBODY, 1L); break;
	case HTTP_MODE_PUT:
		res = curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		if (!res)
			res = curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE,
					       (curl_off_t)c->upload_len);
		if (!res)
			res = curl_easy_setopt(h, CURLOPT_READFUNCTION, http_read_cb);
		if (!res)
			res = curl_easy_setopt(h, CURLOPT_READDATA, c);
		if (!res)
			res = curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, http_seek_cb);
		if (!res)
			res = curl_easy_setopt(h, CURLOPT_SEEKDATA, c);
		break;
	case HTTP_MODE_CUSTOM:
		/* a custom method sends its body the way POST does */
		res = curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, c->method);
		if (res || !c->upload_len)
			break;
		/* fall through */
	case HTTP_MODE_POST:
		res = curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)c->upload_len);
		if (!res)
			res = curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->upload ? c->upload : "");
		break;
	}
	return res;
}

static CURLcode http_blob(CURL *h, CURLoption opt, const char *pem)
{
	struct curl_blob b = { .data = (void *)pem, .len = strlen(pem), .flags = CURL_BLOB_COPY };

	return curl_easy_setopt(h, opt, &b);
}

/* CA, client certificate and the verification the caller asked for. */
static CURLcode http_call_set_tls(struct http_call *c)
{
	const struct http_opts *o = c->opts;
	CURL *h = c->curl;
	CURLcode res = CURLE_OK;

	if (c->ca_file && !o->ca_pem)
		res = curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
	if (!res && o->ca_pem)
		res = http_blob(h, CURLOPT_CAINFO_BLOB, o->ca_pem);
	if (!res && o->client_cert)
		res = curl_easy_setopt(h, CURLOPT_SSLCERT, o->client_cert);
	if (!res && o->client_cert_pem)
		res = http_blob(h, CURLOPT_SSLCERT_BLOB, o->client_cert_pem);
	if (!res && (o->client_cert || o->client_cert_pem))
		res = curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
	if (!res && o->client_key)
		res = curl_easy_setopt(h, CURLOPT_SSLKEY, o->client_key);
	if (!res && o->client_key_pem)
		res = http_blob(h, CURLOPT_SSLKEY_BLOB, o->client_key_pem);
	if (!res && o->insecure_skip_verify) {
		res = curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		if (!res)
			res = curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (!res && c->connect_to)
		res = curl_easy_setopt(h, CURLOPT_CONNECT_TO, c->connect_to);
	return res;
}

/*
 * tls_server_name: the request goes to the URL's host and port, but TLS
 * (SNI and the certificate check) speaks to the given name.  curl does
 * that when the URL names tls_server_name and CONNECT_TO maps it to the
 * real address.
 */
static int http_call_server_name(struct http_call *c, char *msg, size_t n)
{
	CURLU *u = curl_url();
	char *host = NULL, *port = NULL, *url = NULL, *map;
	int rc = 0;

	if (!u)
		abort();
	if (curl_url_set(u, CURLUPART_URL, c->url, 0) ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) ||
	    curl_url_set(u, CURLUPART_HOST, c->opts->tls_server_name, 0) ||
	    curl_url_get(u, CURLUPART_URL, &url, 0)) {
		rc = kerr_set(msg, n, KERR_HTTP, "%s: cannot apply tls-server-name '%.80s'",
			      c->shown_url, c->opts->tls_server_name);
	} else {
		map = xasprintf("%s:%s:%s:%s", c->opts->tls_server_name, port, host, port);
		c->connect_to = curl_slist_append(NULL, map);
		free(map);
		c->url_owned = xstrdup(url);
		c->url = c->url_owned;
	}
	curl_free(host);
	curl_free(port);
	curl_free(url);
	curl_url_cleanup(u);
	return rc;
}

/* Creates the easy handle and sets every option; returns curl's verdict. */
CURLcode http__call_open(struct http_call *c)
{
	CURLcode res = CURLE_OK;
	CURL *h;

	pthread_once(&http_once, http_global_init);
	if (http_global_res)
		return http_global_res;
	h = c->curl = curl_easy_init();
	if (!h)
		return CURLE_FAILED_INIT;
	for (size_t i = 0; i < HTTP_ARRAY_SIZE(http_fixed_opts) && !res; i++)
		res = curl_easy_setopt(h, http_fixed_opts[i].opt, http_fixed_opts[i].val);
	if (!res)
		res = curl_easy_setopt(h, CURLOPT_URL, c->url);
#if LIBCURL_VERSION_NUM >= 0x075500
	if (!res)
		res = curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	if (!res)
		res = curl_easy_setopt(h, CURLOPT_PROTOCOLS,
				       (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	if (!res)
		res = http_call_set_tls(c);
	if (!res)
		res = curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
	if (!res)
		res = curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
	if (!res)
		res = curl_easy_setopt(h, CURLOPT_USERAGENT, "kctl");
	if (!res && c->headers)
		res = curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->headers);
	if (!res)
		res = curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf);
	if (!res)
		res = curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, http_write_cb);
	if (!res)
		res = curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
	if (!res)
		res = curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, http_header_cb);
	if (!res)
		res = curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
	/* lets curl refuse a too-long Content-Length up front; a HEAD has none */
	if (!res && c->how->mode != HTTP_MODE_HEAD)
		res = curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)c->max_body);
	if (!res)
		res = http_call_set_method(c);
	return res;
}

void http__call_release(struct http_call *c)
{
	if (c->curl)
		curl_easy_cleanup(c->curl);
	curl_slist_free_all(c->headers);
	sbuf_release(&c->body);
	sbuf_release(&c->hdrs);
	if (c->upload_fd >= 0)
		close(c->upload_fd);
	curl_slist_free_all(c->connect_to);
	free(c->url_owned);
}

/* Makes one request; *status is the response's code or 0. */
CURLcode http__attempt(struct http_call *c, long *status)
{
	CURLcode res;

	sbuf_reset(&c->body);
	sbuf_reset(&c->hdrs);
	c->over_limit = 0;
	c->upload_pos = 0;
	c->retry_after_s = -1;
	c->errbuf[0] = '\0';
	res = curl_easy_perform(c->curl);
	if (curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, status) != CURLE_OK)
		*status = 0;
	return res;
}

int http__is_retryable(const struct http_call *c, CURLcode res, long status)
{
	if (c->over_limit)
		return 0;
	if (res != CURLE_OK) {
		for (size_t i = 0; i < HTTP_ARRAY_SIZE(http_retry_codes); i++)
			if (res == http_retry_codes[i])
				return 1;
		return 0;
	}
	return status == 429 || (status >= 500 && status <= 599);
}

/*
 * The pause before attempt number attempt + 1: the server's Retry-After
 * when it sent one, else backoff_ms doubled per attempt, capped, with the
 * upper half jittered so that many pods do not retry in step.
 */
static long http_retry_delay(const struct http_call *c, int attempt)
{
	long d = c->backoff_ms;

	if (c->retry_after_s >= 0)
		return c->retry_after_s * 1000;
	for (int i = 1; i < attempt && d < HTTP_BACKOFF_MAX_MS; i++)
		d *= 2;
	if (d > HTTP_BACKOFF_MAX_MS)
		d = HTTP_BACKOFF_MAX_MS;
	return d / 2 + (long)arc4random_uniform((uint32_t)(d / 2) + 1);
}

/*
 * Sleeps ms, in slices of at most HTTP_STOP_SLICE_MS, and ends early once
 * stop (when given) says a signal came: a Retry-After of 30 s must not
 * hold an interrupted kctl for 30 s.  A signal also cuts the slice it
 * lands in short (EINTR), so the stop is seen at once.
 */
static void http_sleep_ms(long ms, int (*stop)(void))
{
	while (ms > 0 && !(stop && stop())) {
		long slice = ms < HTTP_STOP_SLICE_MS ? ms : HTTP_STOP_SLICE_MS;
		struct timespec ts = { .tv_sec = slice / 1000,
				       .tv_nsec = (slice % 1000) * 1000000L };

		ms -= slice;
		if (nanosleep(&ts, &ts) == -1 && errno == EINTR)
			ms += ts.tv_sec * 1000 + ts.tv_nsec / 1000000L; /* the slice's rest */
	}
}

/* Writes into out why an attempt failed: curl's words or the status. */
static void http_reason(const struct http_call *c, CURLcode res, long status, char *out, size_t n)
{
	char detail[HTTP_QUOTE_MAX + 4];

	if (res == CURLE_OK) {
		snprintf(out, n, "HTTP %ld", status);
		return;
	}
	http__quote(c, c->errbuf, strlen(c->errbuf), detail, sizeof(detail));
	if (*detail)
		snprintf(out, n, "%s: %s", curl_easy_strerror(res), detail);
	else
		snprintf(out, n, "%s", curl_easy_strerror(res));
}

static void http_wait_retry(const struct http_call *c, CURLcode res, long status, int attempt)
{
	char why[2 * HTTP_QUOTE_MAX];
	long delay = http_retry_delay(c, attempt);

	http_reason(c, res, status, why, sizeof(why));
	log_warn("%s %s: %s; retrying in %ld ms (attempt %d of %d)", c->method, c->shown_url, why,
		 delay, attempt + 1, c->max_attempts);
	http_sleep_ms(delay, c->opts->stop);
}

/* Turns the final attempt into the return code and msg. */
int http__result(const struct http_call *c, CURLcode res, const struct http_response *resp,
		 char *msg, size_t n)
{
	char why[2 * HTTP_QUOTE_MAX];
	char quote[HTTP_QUOTE_MAX + 4];
	char tries[32] = "";

	if (c->over_limit || res == CURLE_FILESIZE_EXCEEDED)
		return kerr_set(msg, n, KERR_LIMIT, "%s %s: response body exceeds %zu bytes",
				c->method, c->shown_url, c->max_body);
	if (res == CURLE_OK && resp->status < 400) {
		if (msg && n)
			msg[0] = '\0';
		return 0;
	}
	if (resp->attempts > 1)
		snprintf(tries, sizeof(tries), " (after %d attempts)", resp->attempts);
	http_reason(c, res, resp->status, why, sizeof(why));
	if (res != CURLE_OK)
		return kerr_set(msg, n, KERR_HTTP, "%s %s: %s%s", c->method, c->shown_url, why,
				tries);
	http__quote(c, resp->body, resp->body_len, quote, sizeof(quote));
	return kerr_set(msg, n, KERR_HTTP, "%s %s: %s%s%s%s", c->method, c->shown_url, why, tries,
			*quote ? ": " : "", quote);
}

int http_request(const char *method, const char *url, const void *body, size_t body_len,
		 const struct http_opts *opts, struct http_response *resp, char *msg, size_t n)
{
	struct http_call c = { .body = SBUF_INIT, .hdrs = SBUF_INIT, .upload_fd = -1 };
	CURLcode res;
	int rc;

	memset(resp, 0, sizeof(*resp));
	rc = http__call_init(&c, method, url, body, body_len, opts, msg, n);
	if (rc)
		goto out;
	res = http__call_open(&c);
	if (res) {
		rc = kerr_set(msg, n, KERR_HTTP, "%s %s: cannot set up the request: %s", method,
			      c.shown_url, curl_easy_strerror(res));
		goto out;
	}
	for (;;) {
		res = http__attempt(&c, &resp->status);
		resp->attempts++;
		if (resp->attempts >= c.max_attempts || !http__is_retryable(&c, res, resp->status))
			break;
		if (c.opts->stop && c.opts->stop())
			break; /* the final attempt's failure stands */
		http_wait_retry(&c, res, resp->status, resp->attempts);
		if (c.opts->stop && c.opts->stop())
			break;
	}
	if (c.body.buf)
		resp->body = sbuf_detach(&c.body, &resp->body_len);
	if (c.hdrs.buf)
		resp->headers = sbuf_detach(&c.hdrs, NULL);
	resp->timed_out = res == CURLE_OPERATION_TIMEDOUT;
	resp->retryable = http__is_retryable(&c, res, resp->status);
	rc = http__result(&c, res, resp, msg, n);
out:
	http__call_release(&c);
	return rc;
}
