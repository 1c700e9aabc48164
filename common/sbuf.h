/*
 * sbuf.h - growable NUL-terminated byte buffer (caller-owned struct).
 *
 *   struct sbuf b = SBUF_INIT;
 *   sbuf_addf(&b, "%d", 42);
 *   ... use b.buf / b.len ...
 *   sbuf_release(&b);
 *
 * b.buf is never NULL after any add; it is always NUL-terminated.
 */
#ifndef KCTL_SBUF_H
#define KCTL_SBUF_H

#include <stdarg.h>
#include <stddef.h>

struct sbuf {
	char *buf;
	size_t len;
	size_t alloc;
};

#define SBUF_INIT                                                                                  \
	{                                                                                          \
		NULL, 0, 0                                                                         \
	}

void sbuf_grow(struct sbuf *b, size_t extra);
void sbuf_add(struct sbuf *b, const void *data, size_t n);
void sbuf_adds(struct sbuf *b, const char *s);
void sbuf_addch(struct sbuf *b, int c);
void sbuf_addf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* sbuf_addf with a va_list (ap is consumed). */
void sbuf_addv(struct sbuf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/*
 * Appends at most max bytes of s as text for a Markdown table cell: no
 * line breaks, '|' and Markdown's emphasis and link characters escaped,
 * '<', '>', '&' and '`' as HTML entities (so neither a table nor a page
 * can be broken or given markup), control characters dropped; " ..."
 * when s was cut.  NULL appends nothing.
 */
void sbuf_add_md(struct sbuf *b, const char *s, size_t max);
/*
 * Appends s with every "FROM:" in it written "TO:": a file renamed where a
 * compiler's message names it (FROM:LINE:COL).  from is not empty.
 */
void sbuf_add_renamed(struct sbuf *b, const char *s, const char *from, const char *to);
/*
 * Appends s as HTML/XML text, safe inside an element and inside a quoted
 * attribute: '&', '<', '>', '"' and '\'' as entities; control characters
 * other than tab and newline, and bytes that are not well-formed UTF-8
 * (overlong forms, surrogates, beyond U+10FFFF), as U+FFFD, so the page
 * stays valid UTF-8 whatever s holds.  NULL appends nothing.
 */
void sbuf_add_html(struct sbuf *b, const char *s);
/*
 * Rewrites s in place so that printing it cannot drive a terminal: each
 * control character but tab and newline (C0, DEL, and C1 written as UTF-8,
 * U+0080 to U+009F) becomes '?'.  For text from untrusted sources (a
 * model's rationale, an API server's message) before kctl keeps or prints
 * it: an escape sequence there could retitle, clear or rewrite the
 * user's screen.  Returns how many were replaced.  NULL is left alone.
 */
size_t text_defang(char *s);
void sbuf_reset(struct sbuf *b);
/* Hands the buffer to the caller (who frees it; never NULL, always
 * NUL-terminated, "" for a buffer never added to) and resets b. */
char *sbuf_detach(struct sbuf *b, size_t *len);
void sbuf_release(struct sbuf *b);

#endif
