/*
 * github-call.c - one GitHub REST call: the headers GitHub asks for, the
 * rate limits and retries (the only layer that waits: http.c makes one
 * attempt per request here), the pagination link and GitHub's error
 * bodies turned into messages.  The contract is in github-internal.h.
 *
 * May use: github-internal.h, common/ (http, err, log, sbuf, xalloc),
 * jansson, libcurl's URL parser; nothing of github.c.
 */
#include "github-internal.h"
#include "err.h"
#include "http.h"
#include "log.h"
#include "sbuf.h"
#include "xalloc.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#ifndef KCTL_PROJECT_VERSION
#define KCTL_PROJECT_VERSION "0"
#endif

#define GITHUB_SLICE_MS      200L   /* how often a pause asks stop */
#define GITHUB_LINK_MAX      16384  /* bytes of a Link header read */
#define GITHUB_RETRY_MAX_S   86400L /* a Retry-After or reset further off is read as this */
#define GITHUB_SCRUB_WINDOW  4096   /* server text looked at for a quote */
#define GITHUB_ERRORS_QUOTED 4      /* errors[] entries of a 422 quoted */

#define GITHUB_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* What a refused call's status says beyond GitHub's own message. */
static const struct {
	long status;
	const char *before; /* the token's origin goes between the two */
	const char *after;
} github_hints[] = {
	{ 401, "the token", " was refused" },
	{ 403, "the token", " may not do this: it needs Issues read and write on the repository" },
	{ 404, "no such repository, issue or comment, or the token", " cannot see it" },
	{ 301, "the repository or issue moved: name where it is now", NULL },
	{ 410, "issues are disabled in the repository", NULL },
};

time_t github__now(const struct github *gh)
{
	return gh->now ? gh->now(gh->clock_arg) : time(NULL);
}

/* Sleeps ms in slices, ending early once gh->stop says so. */
static void github_pause(const struct github *gh, long ms)
{
	if (gh->pause) {
		gh->pause(gh->clock_arg, ms);
		return;
	}
	while (ms > 0 && !(gh->stop && gh->stop())) {
		long slice = ms < GITHUB_SLICE_MS ? ms : GITHUB_SLICE_MS;
		struct timespec ts = { .tv_sec = slice / 1000,
				       .tv_nsec = (slice % 1000) * 1000000L };

		ms -= slice;
		if (nanosleep(&ts, &ts) == -1 && errno == EINTR)
			ms += ts.tv_sec * 1000 + ts.tv_nsec / 1000000L;
	}
}

static int github_stopped(const struct github *gh)
{
	return gh->stop && gh->stop();
}

void github__scrub(const struct github *gh, char *msg)
{
	size_t tl = gh->token ? strlen(gh->token) : 0;
	static const char red[] = "<redacted>";
	char *hit;

	if (!msg || !tl)
		return;
	while ((hit = strstr(msg, gh->token))) {
		size_t rest = strlen(hit + tl);

		if (tl >= sizeof(red) - 1) {
			memcpy(hit, red, sizeof(red) - 1);
			memmove(hit + sizeof(red) - 1, hit + tl, rest + 1);
		} else { /* a short token: blank it where it stands */
			memset(hit, '*', tl);
		}
	}
}

/* Length of the UTF-8 sequence starting at s (at most left bytes), 0 if invalid. */
static size_t github_utf8_len(const unsigned char *s, size_t left)
{
	size_t len = *s < 0x80         ? 1
		     : (*s >> 5) == 6  ? 2
		     : (*s >> 4) == 14 ? 3
		     : (*s >> 3) == 30 ? 4
				       : 0;

	if (!len || len > left)
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

void github__quote(const struct github *gh, const char *text, size_t len, char *out, size_t n)
{
	struct sbuf s = SBUF_INIT, q = SBUF_INIT;
	size_t take = len < GITHUB_SCRUB_WINDOW ? len : GITHUB_SCRUB_WINDOW;
	int cut = take < len;

	sbuf_add(&s, text ? text : "", text ? take : 0);
	sbuf_adds(&s, ""); /* s.buf is set, even for no text */
	github__scrub(gh, s.buf);
	s.len = strlen(s.buf); /* a NUL in server text ends the quote */
	for (size_t i = 0; i < s.len;) {
		const unsigned char *p = (const unsigned char *)s.buf + i;
		size_t l = github_utf8_len(p, s.len - i);
		size_t before = q.len;

		if (*p == '\n')
			sbuf_adds(&q, "\\n");
		else if (*p == '\t')
			sbuf_adds(&q, "\\t");
		else if (*p < 0x20 || *p == 0x7f || !l)
			sbuf_addf(&q, "\\x%02x", *p);
		else
			sbuf_add(&q, p, l);
		if (q.len > GITHUB_QUOTE_MAX) {
			q.len = before;
			cut = 1;
			break;
		}
		i += l ? l : 1;
	}
	snprintf(out, n, "%.*s%s", (int)q.len, q.buf ? q.buf : "", cut ? "..." : "");
	sbuf_release(&s);
	sbuf_release(&q);
}

/* The message prefix: "GitHub create issue in 'o/r'". */
static void github_prefix(const struct github *gh, const char *what, char *out, size_t n)
{
	snprintf(out, n, "GitHub %s in '%s'", what, gh->repo);
}

/* Parses a non-negative decimal header value; -1 when absent or malformed. */
static long long github_header_num(const struct http_response *resp, const char *name)
{
	char v[64];
	char *end;
	long long x;

	if (!http_response_header(resp, name, v, sizeof(v)) || v[0] < '0' || v[0] > '9')
		return -1;
	errno = 0;
	x = strtoll(v, &end, 10);
	if (errno || *end)
		return -1;
	return x;
}

/* GitHub's "message" of a JSON error body, quoted into out; 0 when there is none. */
static int github_error_message(const struct github *gh, const json_t *doc, char *out, size_t n)
{
	json_t *m = json_is_object(doc) ? json_object_get(doc, "message") : NULL;

	if (!json_is_string(m))
		return 0;
	github__quote(gh, json_string_value(m), json_string_length(m), out, n);
	return 1;
}

/*
 * t kept between a second and GITHUB_RETRY_MAX_S from now: a reset
 * already past, or Retry-After: 0, must not make a burst of retries, and
 * a far-off one is read as a day.
 */
static time_t github_clamp(time_t now, long long t)
{
	if (t <= now)
		return now + 1;
	return t - now > GITHUB_RETRY_MAX_S ? now + GITHUB_RETRY_MAX_S : (time_t)t;
}

/*
 * When status with these headers and body is a rate limit, the epoch
 * second to wait for (GitHub's order: Retry-After, then an exhausted
 * x-ratelimit-remaining's reset, else a minute, growing); else 0.
 */
static time_t github_limit_until(struct github *gh, const struct http_response *resp,
				 const json_t *doc)
{
	long long ra = github_header_num(resp, "Retry-After");
	long long remaining = github_header_num(resp, "x-ratelimit-remaining");
	long long reset = github_header_num(resp, "x-ratelimit-reset");
	const char *m = json_string_value(json_object_get(doc, "message"));
	time_t now = github__now(gh);
	long wait;

	if (resp->status != 403 && resp->status != 429)
		return 0;
	if (ra >= 0)
		return github_clamp(now, now + (ra > GITHUB_RETRY_MAX_S ? GITHUB_RETRY_MAX_S : ra));
	if (remaining == 0 && reset >= 0)
		return github_clamp(now, reset);
	if (resp->status == 403 && remaining != 0 &&
	    !(m && (strcasestr(m, "secondary rate limit") || strcasestr(m, "abuse"))))
		return 0; /* forbidden, not limited */
	wait = gh->secondary_wait_s;
	for (int i = 0; i < gh->secondary_streak && wait < GITHUB_RETRY_MAX_S; i++)
		wait *= 2;
	gh->secondary_streak++;
	return github_clamp(now, now + wait);
}

/* The message for a refused call: status, GitHub's words, errors[], a hint. */
static int github_refusal(const struct github *gh, const char *pre,
			  const struct http_response *resp, const json_t *doc, char *msg, size_t n)
{
	char said[GITHUB_QUOTE_MAX + 8], hint[256] = "";
	struct sbuf errs = SBUF_INIT;
	json_t *list = json_is_object(doc) ? json_object_get(doc, "errors") : NULL;
	size_t i;
	json_t *e;
	int rc;

	if (!github_error_message(gh, doc, said, sizeof(said))) {
		char q[GITHUB_QUOTE_MAX + 8];

		github__quote(gh, resp->body, resp->body_len, q, sizeof(q));
		if (*q)
			snprintf(said, sizeof(said), "(no JSON message: \"%s\")", q);
		else
			snprintf(said, sizeof(said), "(an empty answer)");
	}
	json_array_foreach (list, i, e) {
		char one[GITHUB_QUOTE_MAX + 8];

		if (i == GITHUB_ERRORS_QUOTED) {
			sbuf_addf(&errs, "; and %zu more", json_array_size(list) - i);
			break;
		}
		sbuf_adds(&errs, i ? "; " : ": ");
		if (json_is_string(e)) {
			github__quote(gh, json_string_value(e), json_string_length(e), one,
				      sizeof(one));
		} else {
			const char *res = json_string_value(json_object_get(e, "resource"));
			const char *fld = json_string_value(json_object_get(e, "field"));
			const char *code = json_string_value(json_object_get(e, "code"));
			const char *em = json_string_value(json_object_get(e, "message"));
			char raw[512];

			if (em)
				snprintf(raw, sizeof(raw), "%s", em);
			else
				snprintf(raw, sizeof(raw), "%s%s%s %s", res ? res : "",
					 res && fld ? "." : "", fld ? fld : "", code ? code : "?");
			github__quote(gh, raw, strlen(raw), one, sizeof(one));
		}
		sbuf_adds(&errs, one);
	}
	for (i = 0; i < GITHUB_ARRAY_SIZE(github_hints); i++)
		if (github_hints[i].status == resp->status) {
			int from = github_hints[i].after && gh->token_env;

			snprintf(hint, sizeof(hint), " (%s%s%s%s)", github_hints[i].before,
				 from ? " from $" : "", from ? gh->token_env : "",
				 github_hints[i].after ? github_hints[i].after : "");
		}
	rc = kerr_set(msg, n, KERR_HTTP, "%s: %ld %s%s%s", pre, resp->status, said,
		      errs.buf ? errs.buf : "", hint);
	sbuf_release(&errs);
	return rc;
}

/* Nonzero when url has api_url's scheme, host and port, and no user. */
static int github_same_origin(const struct github *gh, const char *url)
{
	static const CURLUPart parts[] = { CURLUPART_SCHEME, CURLUPART_HOST, CURLUPART_PORT };
	CURLU *a = curl_url(), *b = curl_url();
	char *user = NULL;
	int same = a && b && !curl_url_set(a, CURLUPART_URL, gh->api_url, 0) &&
		   !curl_url_set(b, CURLUPART_URL, url, 0);

	if (same && curl_url_get(b, CURLUPART_USER, &user, 0) != CURLUE_NO_USER)
		same = 0;
	for (size_t i = 0; same && i < GITHUB_ARRAY_SIZE(parts); i++) {
		char *x = NULL, *y = NULL;

		same = !curl_url_get(a, parts[i], &x, CURLU_DEFAULT_PORT) &&
		       !curl_url_get(b, parts[i], &y, CURLU_DEFAULT_PORT) && !strcasecmp(x, y);
		curl_free(x);
		curl_free(y);
	}
	curl_free(user);
	curl_url_cleanup(a);
	curl_url_cleanup(b);
	return same;
}

/* Nonzero when the rel value (len bytes, blank-separated relation types) holds "next". */
static int github_rel_next(const char *v, size_t len)
{
	for (size_t i = 0; i < len;) {
		size_t w = 0;

		while (i < len && (v[i] == ' ' || v[i] == '\t'))
			i++;
		while (i + w < len && v[i + w] != ' ' && v[i + w] != '\t')
			w++;
		if (w == 4 && !strncasecmp(v + i, "next", 4))
			return 1;
		i += w;
	}
	return 0;
}

/*
 * Reads one link-param at p (just past its ';'): name, '=', a token or a
 * quoted string.  Sets *rel_next when it is rel and names "next"; returns
 * where it ends.
 */
static const char *github_link_param(const char *p, int *rel_next)
{
	const char *name, *val;
	size_t nlen, vlen = 0;

	p += strspn(p, " \t");
	name = p;
	nlen = strcspn(p, "=;, \t");
	p += nlen;
	p += strspn(p, " \t");
	val = p;
	if (*p == '=') {
		p++;
		p += strspn(p, " \t");
		if (*p == '"') {
			val = ++p;
			while (*p && *p != '"')
				p += *p == '\\' && p[1] ? 2 : 1;
			vlen = (size_t)(p - val);
			if (*p == '"')
				p++;
		} else {
			val = p;
			vlen = strcspn(p, ";, \t");
			p += vlen;
		}
	}
	if (nlen == 3 && !strncasecmp(name, "rel", 3) && github_rel_next(val, vlen))
		*rel_next = 1;
	return p;
}

char *github__link_next(const char *v)
{
	const char *p = v;

	for (;;) {
		const char *lt, *gt;
		int next = 0;

		p += strspn(p, " \t,");
		if (*p != '<' || !(gt = strchr(p, '>')))
			return NULL;
		lt = p;
		p = gt + 1;
		while (*(p += strspn(p, " \t")) == ';')
			p = github_link_param(p + 1, &next);
		if (next)
			return xstrndup(lt + 1, (size_t)(gt - lt - 1));
		p += strcspn(p, ","); /* past anything that is not a parameter */
		if (!*p)
			return NULL;
	}
}

/* r->next from the Link header, refused unless it stays on api_url's origin. */
static int github_take_link(const struct github *gh, const char *pre,
			    const struct http_response *resp, struct github_reply *r, char *msg,
			    size_t n)
{
	char *v = xmalloc(GITHUB_LINK_MAX);
	int rc = 0;

	if (!http_response_header(resp, "Link", v, GITHUB_LINK_MAX))
		goto out;
	if (strlen(v) >= GITHUB_LINK_MAX - 1) {
		rc = kerr_set(msg, n, KERR_LIMIT, "%s: the Link header passes %d bytes", pre,
			      GITHUB_LINK_MAX - 2);
		goto out;
	}
	r->next = github__link_next(v);
	if (r->next && (!http_is_url(r->next) || !github_same_origin(gh, r->next))) {
		char shown[512];

		http_redact_url(r->next, shown, sizeof(shown));
		github__scrub(gh, shown);
		rc = kerr_set(msg, n, KERR_PARSE,
			      "%s: the next page's link '%.200s' leaves %s: refused (the token "
			      "goes to that host alone)",
			      pre, shown, gh->api_url);
	}
out:
	free(v);
	return rc;
}

/* A 2xx: its body as JSON (an empty 204 is null) and its next link. */
static int github_accept(struct github *gh, const char *pre, const struct http_response *resp,
			 struct github_reply *r, char *msg, size_t n)
{
	json_error_t err;

	gh->secondary_streak = 0;
	if (!resp->body_len && resp->status == 204) {
		r->json = json_null();
		return 0;
	}
	r->json = json_loadb(resp->body ? resp->body : "", resp->body_len, 0, &err);
	if (!r->json) {
		char q[GITHUB_QUOTE_MAX + 8];

		github__quote(gh, resp->body, resp->body_len, q, sizeof(q));
		return kerr_set(msg, n, KERR_PARSE, "%s: %ld answer is not JSON (%s): \"%s\"", pre,
				resp->status, err.text, q);
	}
	return github_take_link(gh, pre, resp, r, msg, n);
}

static char *github_dump(const json_t *body)
{
	return body ? json_dumps(body, JSON_COMPACT) : NULL;
}

/* Returns KERR_LATER, saying when, and remembers it. */
static int github_later(struct github *gh, const char *pre, const char *why, time_t until,
			char *msg, size_t n)
{
	if (until > gh->not_before)
		gh->not_before = until;
	return kerr_set(msg, n, KERR_LATER, "%s: %s; retry later, not before %lld (in %lld s)", pre,
			why, (long long)gh->not_before,
			(long long)(gh->not_before - github__now(gh)));
}

/* The pause before attempt + 1 after a server error: Retry-After, else backoff doubled. */
static long github_backoff_ms(const struct github *gh, const struct http_response *resp,
			      int attempt)
{
	long long ra = resp ? github_header_num(resp, "Retry-After") : -1;
	long d = gh->backoff_ms;

	if (ra >= 0)
		return ra > gh->max_wait_s ? gh->max_wait_s * 1000L : (long)ra * 1000L;
	for (int i = 1; i < attempt && d < gh->max_wait_s * 1000L; i++)
		d *= 2;
	return d > gh->max_wait_s * 1000L ? gh->max_wait_s * 1000L : d;
}

void github__backoff(const struct github *gh, int attempt)
{
	if (!github_stopped(gh))
		github_pause(gh, github_backoff_ms(gh, NULL, attempt));
}

/* One attempt's answer: 1 to try again, else the call's result. */
static int github_judge(struct github *gh, const char *pre, const struct http_response *resp,
			int hrc, const char *hmsg, enum github_retry retry, int attempt,
			struct github_reply *r, char *msg, size_t n)
{
	json_t *doc = NULL;
	time_t until;
	int rc;

	r->status = resp->status;
	if (hrc == KERR_LIMIT || (hrc && !resp->status)) {
		r->unsure = hrc != KERR_LIMIT;
		if (r->unsure && retry == GITHUB_RETRY_ALL && attempt < gh->max_attempts)
			return 1;
		return kerr_set(msg, n, hrc, "%s: %s", pre, hmsg);
	}
	if (resp->status >= 200 && resp->status < 300)
		return github_accept(gh, pre, resp, r, msg, n);
	doc = json_loadb(resp->body ? resp->body : "", resp->body_len, 0, NULL);
	until = github_limit_until(gh, resp, doc);
	if (until) {
		char why[GITHUB_QUOTE_MAX + 64], said[GITHUB_QUOTE_MAX + 8] = "";

		github_error_message(gh, doc, said, sizeof(said));
		snprintf(why, sizeof(why), "%ld rate limited%s%s", resp->status, *said ? ": " : "",
			 said);
		json_decref(doc);
		if (until - github__now(gh) <= gh->max_wait_s && attempt < gh->max_attempts &&
		    !github_stopped(gh)) {
			long s = (long)(until - github__now(gh));

			log_warn("%s: %s; waiting %ld s", pre, why, s > 0 ? s : 0);
			github_pause(gh, (s > 0 ? s : 0) * 1000L);
			return github_stopped(gh) ? github_later(gh, pre, why, until, msg, n) : 1;
		}
		return github_later(gh, pre, why, until, msg, n);
	}
	r->unsure = resp->status >= 500;
	if (r->unsure && retry == GITHUB_RETRY_ALL && attempt < gh->max_attempts) {
		json_decref(doc);
		return 1;
	}
	rc = github_refusal(gh, pre, resp, doc, msg, n);
	json_decref(doc);
	return rc;
}

int github__call(struct github *gh, const char *what, const char *method, const char *url,
		 const json_t *body, enum github_retry retry, struct github_reply *r, char *msg,
		 size_t n)
{
	const char *headers[] = { "Accept: application/vnd.github+json",
				  "X-GitHub-Api-Version: 2022-11-28",
				  "User-Agent: kctl/" KCTL_PROJECT_VERSION,
				  body ? "Content-Type: application/json" : NULL,
				  NULL,
				  NULL };
	struct http_opts ho = { .ca_file = gh->ca_file,
				.timeout_ms = gh->timeout_ms,
				.max_attempts = 1, /* this layer waits, http.c does not */
				.max_body = gh->max_body,
				.headers = headers,
				.stop = gh->stop };
	char pre[256], hmsg[1024];
	char *text = github_dump(body);
	int rc = 0;

	memset(r, 0, sizeof(*r));
	headers[body ? 4 : 3] = gh->auth;
	github_prefix(gh, what, pre, sizeof(pre));
	if (gh->not_before > github__now(gh)) {
		rc = github_later(gh, pre, "a rate limit asked to wait", gh->not_before, msg, n);
		goto out;
	}
	for (int attempt = 1;; attempt++) {
		struct http_response resp;
		int hrc = http_request(method, url, text, text ? strlen(text) : 0, &ho, &resp, hmsg,
				       sizeof(hmsg));

		log_debug("%s: %s %ld", pre, method, resp.status);
		rc = github_judge(gh, pre, &resp, hrc, hmsg, retry, attempt, r, msg, n);
		if (rc == 1 && !github_stopped(gh) && resp.status != 403 && resp.status != 429)
			github_pause(gh, github_backoff_ms(gh, &resp, attempt));
		http_response_release(&resp);
		if (rc != 1)
			break;
		if (github_stopped(gh)) {
			rc = kerr_set(msg, n, KERR_HTTP, "%s: interrupted before attempt %d", pre,
				      attempt + 1);
			break;
		}
	}
out:
	free(text);
	if (rc)
		github__scrub(gh, msg);
	return rc;
}

void github__reply_release(struct github_reply *r)
{
	json_decref(r->json);
	free(r->next);
	r->json = NULL;
	r->next = NULL;
}
