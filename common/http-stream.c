/*
 * http-stream.c - a streamed request whose body is read line by line as it
 * arrives (a Kubernetes watch, a language model's server-sent events); the
 * contract is http_stream and http_stream_request in http.h.  One attempt:
 * a stream that ends or breaks is resumed or retried by the caller, who
 * knows where it was (a resourceVersion) or what it asked.
 *
 * May use: http.c's calls (through http-internal.h), err, sbuf, libcurl.
 */
#include "http-internal.h"
#include "err.h"
#include "sbuf.h"

#include <string.h>

static int http_xferinfo_cb(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
			    curl_off_t ulnow)
{
	struct http_call *c = arg;
	time_t now = time(NULL);

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	if (!c->tick_fn || now == c->last_tick)
		return 0;
	c->last_tick = now;
	if (c->tick_fn(c->stream_arg)) {
		c->stopped = 1;
		return 1; /* curl aborts the transfer with CURLE_ABORTED_BY_CALLBACK */
	}
	return 0;
}

/* Sets what a stream needs beyond an ordinary request: the tick, no size limit. */
static CURLcode http_stream_open(struct http_call *c)
{
	CURLcode res = http__call_open(c);

	if (!res)
		res = curl_easy_setopt(c->curl, CURLOPT_XFERINFOFUNCTION, http_xferinfo_cb);
	if (!res)
		res = curl_easy_setopt(c->curl, CURLOPT_XFERINFODATA, c);
	if (!res)
		res = curl_easy_setopt(c->curl, CURLOPT_NOPROGRESS, 0L);
	/* a stream has no size: only max_body per line applies */
	if (!res)
		res = curl_easy_setopt(c->curl, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)0);
	return res;
}

int http_stream_request(const char *method, const char *url, const void *body, size_t body_len,
			const struct http_opts *opts, http_line_fn line, http_tick_fn tick,
			void *arg, struct http_response *resp, char *msg, size_t n)
{
	struct http_call c = { .body = SBUF_INIT, .hdrs = SBUF_INIT, .upload_fd = -1 };
	CURLcode res;
	int ok, rc;

	memset(resp, 0, sizeof(*resp));
	rc = http__call_init(&c, method, url, body, body_len, opts, msg, n);
	if (rc)
		goto out;
	c.line_fn = line;
	c.tick_fn = tick;
	c.stream_arg = arg;
	c.last_tick = time(NULL);
	res = http_stream_open(&c);
	if (res) {
		rc = kerr_set(msg, n, KERR_HTTP, "%s %s: cannot set up the request: %s", method,
			      c.shown_url, curl_easy_strerror(res));
		goto out;
	}
	res = http__attempt(&c, &resp->status);
	resp->attempts = 1;
	if (c.hdrs.buf)
		resp->headers = sbuf_detach(&c.hdrs, NULL);
	if (c.stopped)
		goto out;
	ok = resp->status >= 200 && resp->status < 300;
	resp->timed_out = res == CURLE_OPERATION_TIMEDOUT;
	resp->retryable = http__is_retryable(&c, res, resp->status);
	if (res == CURLE_OK && ok) {
		if (c.body.len) /* a last line without its newline */
			line(arg, c.body.buf, c.body.len);
		goto out;
	}
	if (c.body.buf && !ok)
		resp->body = sbuf_detach(&c.body, &resp->body_len);
	if (res == CURLE_OK && resp->status < 400 && !ok)
		rc = kerr_set(msg, n, KERR_HTTP, "%s %s: unexpected HTTP %ld", method, c.shown_url,
			      resp->status);
	else
		rc = http__result(&c, res, resp, msg, n);
out:
	http__call_release(&c);
	return rc;
}

int http_stream(const char *url, const struct http_opts *opts, http_line_fn line, http_tick_fn tick,
		void *arg, struct http_response *resp, char *msg, size_t n)
{
	return http_stream_request("GET", url, NULL, 0, opts, line, tick, arg, resp, msg, n);
}
