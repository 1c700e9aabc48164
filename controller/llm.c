/*
 * llm.c - asking a language model over HTTP; the contract is in llm.h.
 *
 * Each provider is a row of llm_apis: where it lives, how its request body
 * is shaped, how a whole answer and a streamed event are read.  The retry
 * loop is ours rather than http_request's, because it must count attempts
 * for the reply, honour Retry-After up to the caller's cap, treat a stream
 * that ended before its terminator as dropped, and retry an in-stream
 * overloaded error, none of which http.c knows about; every request below
 * is therefore made with max_attempts 1.
 *
 * The key is in one header line and nowhere else.  Every outcome (msg, the
 * retry warnings) is formatted by llm_outcome (llm-outcome.c), which makes
 * it one line and replaces the key by "<redacted>" should a server echo it
 * back.
 *
 * The top of the model client: may use llm-api.c (the providers'
 * protocols), llm-outcome.c, http and common/; neither calls back into
 * this file.
 */
#include "llm.h"
#include "llm-internal.h"
#include "err.h"
#include "http.h"
#include "jsonx.h"
#include "log.h"
#include "sbuf.h"
#include "xalloc.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double llm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void llm_sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* ---- server-sent events: the framing ---- */

static void llm_sse_dispatch(struct llm_call *k)
{
	if (k->ev_has_data)
		k->api->event(k, k->ev_name.len ? k->ev_name.buf : "message", k->ev_data.buf,
			      k->ev_data.len);
	sbuf_reset(&k->ev_name);
	sbuf_reset(&k->ev_data);
	k->ev_has_data = 0;
}

/*
 * One line of the stream (http.c strips its LF and a CR before it).  A
 * blank line ends an event; data lines are joined with LF; ':' starts a
 * comment; id and retry do not matter for one request.
 */
int llm__sse_line(void *arg, const char *line, size_t len)
{
	struct llm_call *k = arg;
	const char *colon = memchr(line, ':', len);
	size_t flen = colon ? (size_t)(colon - line) : len;
	const char *val = colon ? colon + 1 : line + len;
	size_t vlen = (size_t)(line + len - val);

	if (!len) {
		llm_sse_dispatch(k);
		return k->decided;
	}
	if (line[0] == ':')
		return 0;
	if (vlen && *val == ' ')
		val++, vlen--;
	if (flen == 4 && !memcmp(line, "data", 4)) {
		if (k->ev_has_data)
			sbuf_addch(&k->ev_data, '\n');
		sbuf_add(&k->ev_data, val, vlen);
		k->ev_has_data = 1;
		if (k->ev_data.len > k->max_body)
			return llm_outcome(k, LLM_FINAL, KERR_LIMIT,
					   "a stream event exceeds %zu bytes", k->max_body);
	} else if (flen == 5 && !memcmp(line, "event", 5)) {
		sbuf_reset(&k->ev_name);
		sbuf_add(&k->ev_name, val, vlen);
	}
	return 0;
}

/* ---- one attempt ---- */

static void llm_attempt_reset(struct llm_call *k)
{
	sbuf_reset(&k->text);
	sbuf_reset(&k->ev_name);
	sbuf_reset(&k->ev_data);
	k->ev_has_data = 0;
	k->in_tok = k->out_tok = -1;
	free(k->finish);
	free(k->model);
	k->finish = k->model = NULL;
	k->done = 0;
	k->decided = 0;
	k->verdict = LLM_DONE;
	k->rc = 0;
	k->timed_out = 0;
	k->retry_after_ms = -1;
	k->why[0] = '\0';
}

/* The delay-seconds form of Retry-After in ms; -1 without one (or with a date). */
static long llm_retry_after(const struct http_response *resp)
{
	char v[64], *end;
	long s;

	if (!http_response_header(resp, "Retry-After", v, sizeof(v)) || v[0] < '0' || v[0] > '9')
		return -1;
	s = strtol(v, &end, 10);
	if (*end || s < 0)
		return -1;
	return s > LONG_MAX / 1000 ? LONG_MAX : s * 1000;
}

/* A response with a status other than 2xx: 429 and 5xx pass, the rest are final. */
static void llm_status_error(struct llm_call *k, const struct http_response *resp)
{
	char detail[LLM_QUOTE_MAX + 128];
	int again = resp->status == 429 || (resp->status >= 500 && resp->status <= 599);

	llm_error_detail(resp->body, resp->body_len, detail, sizeof(detail));
	if (again)
		k->retry_after_ms = llm_retry_after(resp);
	llm_outcome(k, again ? LLM_RETRY : LLM_FINAL, KERR_HTTP, "HTTP %ld%s", resp->status,
		    detail);
}

/* Judges an attempt a stream callback did not already decide. */
static void llm_judge(struct llm_call *k, int rc, const struct http_response *resp,
		      const char *hmsg)
{
	int ok = resp->status >= 200 && resp->status < 300;
	json_t *root;

	if (rc == KERR_LIMIT) {
		llm_outcome(k, LLM_FINAL, KERR_LIMIT,
			    "the reply exceeds %zu bytes (an answer of %zu)", k->max_body,
			    k->max_answer);
	} else if (rc && (ok || !resp->status)) {
		k->timed_out = resp->timed_out;
		llm_outcome(k, resp->retryable ? LLM_RETRY : LLM_FINAL, rc, "%s%s",
			    ok ? "the reply broke off: " : "", hmsg);
	} else if (!ok) {
		llm_status_error(k, resp);
	} else if (k->conf->stream) {
		if (!k->done)
			llm_outcome(k, LLM_RETRY, KERR_HTTP, "the stream ended before %s",
				    k->api->terminator);
	} else {
		root = llm_parse(k, "the reply", resp->body, resp->body_len);
		if (root)
			k->api->answer(k, root);
		json_decref(root);
	}
}

static void llm_attempt(struct llm_call *k)
{
	struct http_opts o = {
		.ca_file = k->conf->ca_file,
		.timeout_ms = k->timeout_ms,
		.max_attempts = 1,
		.max_body = k->max_body,
		.headers = k->hdrs,
	};
	struct http_response resp;
	char hmsg[LLM_WHY_MAX];
	size_t blen = strlen(k->body);
	int rc;

	llm_attempt_reset(k);
	if (k->conf->stream)
		rc = http_stream_request("POST", k->url, k->body, blen, &o, llm__sse_line, NULL, k,
					 &resp, hmsg, sizeof(hmsg));
	else
		rc = http_request("POST", k->url, k->body, blen, &o, &resp, hmsg, sizeof(hmsg));
	if (!k->decided)
		llm_judge(k, rc, &resp, hmsg);
	http_response_release(&resp);
}

/* The pause before attempt + 1: Retry-After up to the cap, else backoff with jitter. */
static long llm_delay(const struct llm_call *k, int attempt)
{
	long d = k->backoff_ms;

	if (k->retry_after_ms >= 0)
		return k->retry_after_ms < k->retry_cap_ms ? k->retry_after_ms : k->retry_cap_ms;
	for (int i = 1; i < attempt && d < LLM_BACKOFF_MAX_MS; i++)
		d *= 2;
	if (d > LLM_BACKOFF_MAX_MS)
		d = LLM_BACKOFF_MAX_MS;
	return d / 2 + (long)arc4random_uniform((uint32_t)(d / 2) + 1);
}

/* ---- the call ---- */

static int llm_utf8(const char *s)
{
	json_t *j = json_string(s);

	json_decref(j);
	return j != NULL;
}

static int llm_check_conf(const struct llm_conf *c, const char *system, const char *prompt,
			  char *msg, size_t n)
{
	if ((size_t)c->provider >= LLM_NAPIS)
		return kerr_set(msg, n, KERR_INVALID, "llm: unknown provider %d", (int)c->provider);
	if (!c->model || !*c->model || !llm_utf8(c->model))
		return kerr_set(msg, n, KERR_INVALID, "%s: no model named",
				llm_apis[c->provider].name);
	if (!prompt || !llm_utf8(prompt) || (system && !llm_utf8(system)))
		return kerr_set(msg, n, KERR_INVALID, "%s: the prompt or system text is not UTF-8",
				llm_apis[c->provider].name);
	if ((!isnan(c->temperature) && !isfinite(c->temperature)) ||
	    (!isnan(c->top_p) && !isfinite(c->top_p)))
		return kerr_set(msg, n, KERR_INVALID, "%s: temperature or top_p is infinite",
				llm_apis[c->provider].name);
	if (c->max_output_tokens < 0 || c->timeout_ms < 0 || c->max_attempts < 0 ||
	    c->backoff_ms < 0 || c->retry_after_cap_ms < 0)
		return kerr_set(msg, n, KERR_INVALID, "%s: a negative limit",
				llm_apis[c->provider].name);
	for (const char *p = c->api_key; p && *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return kerr_set(msg, n, KERR_INVALID,
					"%s: the API key holds a blank or control character",
					llm_apis[c->provider].name);
	return 0;
}

static int llm_call_init(struct llm_call *k, const struct llm_conf *c, const char *system,
			 const char *prompt, char *msg, size_t n)
{
	const char *base;
	size_t blen, nh = 0;
	json_t *root;
	int rc = llm_check_conf(c, system, prompt, msg, n);

	if (rc)
		return rc;
	k->api = &llm_apis[c->provider];
	k->timeout_ms = c->timeout_ms ? c->timeout_ms : LLM_DEFAULT_TIMEOUT_MS;
	k->max_attempts = c->max_attempts ? c->max_attempts : LLM_DEFAULT_ATTEMPTS;
	k->backoff_ms = c->backoff_ms ? c->backoff_ms : LLM_DEFAULT_BACKOFF_MS;
	k->retry_cap_ms = c->retry_after_cap_ms ? c->retry_after_cap_ms : LLM_DEFAULT_RETRY_CAP_MS;
	k->max_answer = c->max_answer_bytes ? c->max_answer_bytes : LLM_DEFAULT_MAX_ANSWER;
	k->max_body = k->max_answer > (SIZE_MAX - LLM_BODY_SLACK) / LLM_ESCAPE_FACTOR
			      ? SIZE_MAX
			      : k->max_answer * LLM_ESCAPE_FACTOR + LLM_BODY_SLACK;
	base = c->base_url && *c->base_url ? c->base_url : k->api->base_url;
	if (!http_is_url(base))
		return kerr_set(msg, n, KERR_INVALID, "%s: base URL '%.200s' is not http(s)",
				k->api->name, base);
	blen = strlen(base);
	while (blen && base[blen - 1] == '/')
		blen--;
	k->url = xasprintf("%.*s%s", (int)blen, base, k->api->path);

	root = k->api->body(c, c->max_output_tokens ? c->max_output_tokens : LLM_DEFAULT_MAX_TOKENS,
			    system, prompt);
	k->body = jx_dump(root);
	json_decref(root);

	if (c->api_key && *c->api_key) {
		k->auth = xasprintf("%s%s", k->api->auth_prefix, c->api_key);
		k->hdrs[nh++] = k->auth;
	}
	for (const char *const *h = k->api->fixed_hdrs; *h; h++)
		k->hdrs[nh++] = *h;
	k->hdrs[nh++] = "Expect:"; /* no 100-continue round trip for a large prompt */
	k->hdrs[nh] = NULL;
	return 0;
}

static void llm_call_release(struct llm_call *k)
{
	if (k->auth)
		explicit_bzero(k->auth, strlen(k->auth));
	free(k->auth);
	free(k->url);
	free(k->body);
	free(k->finish);
	free(k->model);
	sbuf_release(&k->text);
	sbuf_release(&k->ev_name);
	sbuf_release(&k->ev_data);
}

/* Hands the answer to r, or says why there is none. */
static int llm_result(struct llm_call *k, struct llm_reply *r, int all_timed_out, char *msg,
		      size_t n)
{
	if (k->verdict == LLM_RETRY)
		return kerr_set(msg, n, all_timed_out ? KERR_TIMEOUT : KERR_HTTP,
				"%s (gave up after %d attempts)", k->why, r->attempts);
	if (k->verdict == LLM_FINAL)
		return kerr_set(msg, n, k->rc ? k->rc : KERR_HTTP, "%s", k->why);
	sbuf_addch(&k->text, '\0'); /* an empty answer is "", not NULL */
	k->text.len--;
	r->text = sbuf_detach(&k->text, NULL);
	r->input_tokens = k->in_tok;
	r->output_tokens = k->out_tok;
	r->finish = k->finish;
	r->model = k->model;
	k->finish = k->model = NULL;
	if (msg && n)
		msg[0] = '\0';
	return 0;
}

int llm_complete(const struct llm_conf *c, const char *system, const char *prompt,
		 struct llm_reply *r, char *msg, size_t n)
{
	struct llm_call k = {
		.conf = c, .text = SBUF_INIT, .ev_name = SBUF_INIT, .ev_data = SBUF_INIT
	};
	double t0 = llm_now_ms();
	int all_timed_out = 1;
	long delay;
	int rc;

	memset(r, 0, sizeof(*r));
	r->input_tokens = r->output_tokens = -1;
	rc = llm_call_init(&k, c, system, prompt, msg, n);
	if (rc)
		goto out;
	for (;;) {
		llm_attempt(&k);
		r->attempts++;
		if (k.verdict != LLM_RETRY)
			break;
		all_timed_out &= k.timed_out;
		if (r->attempts >= k.max_attempts)
			break;
		delay = llm_delay(&k, r->attempts);
		log_warn("%s; retrying in %ld ms (attempt %d of %d)", k.why, delay, r->attempts + 1,
			 k.max_attempts);
		llm_sleep_ms(delay);
	}
	rc = llm_result(&k, r, all_timed_out, msg, n);
out:
	r->ms = llm_now_ms() - t0;
	llm_call_release(&k);
	return rc;
}

void llm_reply_release(struct llm_reply *r)
{
	if (!r)
		return;
	free(r->text);
	free(r->finish);
	free(r->model);
	r->text = r->finish = r->model = NULL;
}
