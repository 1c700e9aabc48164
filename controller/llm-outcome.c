/*
 * llm-outcome.c - how an attempt of the model client ends up in words: the
 * verdict and its one-line message, the key scrubbed from it should a
 * server echo it back, and a server's text quoted for a message.
 *
 * The bottom of the model client: llm.c (the call) and llm-api.c (the
 * providers' protocols) both decide attempts through it; it calls neither.
 * May use: llm-internal.h (struct llm_call) and common/.
 */
#include "llm-internal.h"
#include "sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Replaces each occurrence of key in s by "<redacted>". */
static void llm_scrub(struct sbuf *s, const char *key)
{
	struct sbuf out = SBUF_INIT;
	size_t klen = key ? strlen(key) : 0;
	const char *p, *end, *hit;

	if (klen < LLM_SCRUB_MIN || !s->buf)
		return;
	p = s->buf;
	end = s->buf + s->len;
	while ((hit = memmem(p, (size_t)(end - p), key, klen))) {
		sbuf_add(&out, p, (size_t)(hit - p));
		sbuf_adds(&out, "<redacted>");
		p = hit + klen;
	}
	if (!out.buf)
		return;
	sbuf_add(&out, p, (size_t)(end - p));
	sbuf_release(s);
	*s = out;
}

/*
 * Decides the attempt: verdict, error code and why (prefixed with the
 * provider's name, one line, the key scrubbed).  The first decision
 * stands.  Returns 1, so that a stream callback can return it to stop.
 */
__attribute__((format(printf, 4, 5))) int llm_outcome(struct llm_call *k, enum llm_verdict v,
						      int rc, const char *fmt, ...)
{
	struct sbuf s = SBUF_INIT;
	va_list ap;

	if (k->decided)
		return 1;
	sbuf_addf(&s, "%s: ", k->api->name);
	va_start(ap, fmt);
	sbuf_addv(&s, fmt, ap);
	va_end(ap);
	for (size_t i = 0; i < s.len; i++)
		if ((unsigned char)s.buf[i] < 0x20 || s.buf[i] == 0x7f)
			s.buf[i] = ' ';
	llm_scrub(&s, k->conf->api_key);
	snprintf(k->why, sizeof(k->why), "%s", s.buf);
	sbuf_release(&s);
	k->decided = 1;
	k->verdict = v;
	k->rc = rc;
	return 1;
}

/* Writes into out (size n) at most LLM_QUOTE_MAX bytes of text, "..." marking a cut. */
void llm_quote(const char *text, size_t len, char *out, size_t n)
{
	while (len && (*text == ' ' || *text == '\n' || *text == '\r' || *text == '\t'))
		text++, len--;
	while (len && (text[len - 1] == ' ' || text[len - 1] == '\n' || text[len - 1] == '\r'))
		len--;
	if (len > LLM_QUOTE_MAX)
		snprintf(out, n, "%.*s...", LLM_QUOTE_MAX, text);
	else
		snprintf(out, n, "%.*s", (int)len, text ? text : "");
}
