/*
 * http-redact.c - what of a request is shown to a human: the URL with its
 * userinfo and query redacted, and one-line quotes of server text with the
 * request's query values scrubbed out, because presigned URLs carry their
 * signature in the query string and servers sometimes echo it back.  The
 * lowest file of the HTTP client; http.c uses it for every msg and log line.
 *
 * May use: http-internal.h (struct http_call), sbuf; nothing else of the
 * client.
 */
#include "http.h"
#include "http-internal.h"
#include "sbuf.h"

#include <stdio.h>
#include <string.h>

#define HTTP_SCRUB_WINDOW 4096 /* server text scrubbed before cutting */
#define HTTP_SCRUB_MIN    4    /* shorter query values are not secrets */

void http_redact_url(const char *url, char *out, size_t n)
{
	const char *sep = strstr(url, "://");
	const char *host = sep ? sep + 3 : url;
	const char *tail = host + strcspn(host, "?#");
	const char *auth_end = host + strcspn(host, "/?#");
	const char *at = NULL;
	const char *shown_tail = "";

	if (!n)
		return;
	/* userinfo ("user:password@") is a credential as much as a signature */
	for (const char *p = host; p < auth_end; p++)
		if (*p == '@')
			at = p;
	if (*tail)
		shown_tail = *tail == '?' ? "?<redacted>" : "#<redacted>";
	if (at)
		snprintf(out, n, "%.*s<redacted>@%.*s%s", (int)(host - url), url,
			 (int)(tail - at - 1), at + 1, shown_tail);
	else
		snprintf(out, n, "%.*s%s", (int)(tail - url), url, shown_tail);
}

/* Replaces each occurrence of needle (nlen bytes) in s by "<redacted>". */
static void http_replace_all(struct sbuf *s, const char *needle, size_t nlen)
{
	struct sbuf out = SBUF_INIT;
	const char *p = s->buf;
	const char *end = s->buf + s->len;
	const char *hit;

	while ((hit = memmem(p, (size_t)(end - p), needle, nlen))) {
		sbuf_add(&out, p, (size_t)(hit - p));
		sbuf_adds(&out, "<redacted>");
		p = hit + nlen;
	}
	if (!out.buf)
		return;
	sbuf_add(&out, p, (size_t)(end - p));
	sbuf_release(s);
	*s = out;
}

/* Scrubs every value of url's query string (and the whole query) from s. */
static void http_scrub_query(const char *url, struct sbuf *s)
{
	const char *q = strchr(url, '?');
	const char *p;

	if (!q || !s->buf)
		return;
	p = q + 1;
	if (strcspn(p, "#") >= HTTP_SCRUB_MIN)
		http_replace_all(s, p, strcspn(p, "#"));
	while (*p && *p != '#') {
		const char *end = p + strcspn(p, "&#");
		const char *eq = memchr(p, '=', (size_t)(end - p));
		const char *val = eq ? eq + 1 : p;

		if (end - val >= HTTP_SCRUB_MIN)
			http_replace_all(s, val, (size_t)(end - val));
		p = *end == '&' ? end + 1 : end;
	}
}

/*
 * Writes into out (size n) a one-line quote of server text: control bytes
 * become spaces, query values of the request URL are scrubbed, and at most
 * HTTP_QUOTE_MAX bytes are kept, "..." marking a cut.
 */
void http__quote(const struct http_call *c, const char *text, size_t len, char *out, size_t n)
{
	struct sbuf s = SBUF_INIT;
	size_t take = len < HTTP_SCRUB_WINDOW ? len : HTTP_SCRUB_WINDOW;

	while (take && (*text == ' ' || (unsigned char)*text < 0x20)) {
		text++;
		take--;
	}
	for (size_t i = 0; i < take; i++) {
		unsigned char ch = (unsigned char)text[i];

		sbuf_addch(&s, ch < 0x20 || ch == 0x7f ? ' ' : ch);
	}
	http_scrub_query(c->url, &s);
	while (s.len && s.buf[s.len - 1] == ' ')
		s.len--;
	if (s.len > HTTP_QUOTE_MAX)
		snprintf(out, n, "%.*s...", HTTP_QUOTE_MAX, s.buf);
	else
		snprintf(out, n, "%.*s", (int)s.len, s.buf ? s.buf : "");
	sbuf_release(&s);
}
