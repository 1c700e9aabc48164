#include "sbuf.h"
#include "xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void sbuf_grow(struct sbuf *b, size_t extra)
{
	size_t need = b->len + extra + 1;

	if (need <= b->alloc)
		return;
	if (need < 64)
		need = 64;
	if (need < b->alloc * 2)
		need = b->alloc * 2;
	b->buf = xrealloc(b->buf, need);
	b->alloc = need;
}

void sbuf_add(struct sbuf *b, const void *data, size_t n)
{
	sbuf_grow(b, n);
	if (n)
		memcpy(b->buf + b->len, data, n);
	b->len += n;
	b->buf[b->len] = '\0';
}

void sbuf_adds(struct sbuf *b, const char *s)
{
	sbuf_add(b, s, strlen(s));
}

void sbuf_addch(struct sbuf *b, int c)
{
	char ch = (char)c;

	sbuf_add(b, &ch, 1);
}

void sbuf_addv(struct sbuf *b, const char *fmt, va_list ap)
{
	va_list again;
	int n;

	va_copy(again, ap);
	n = vsnprintf(NULL, 0, fmt, ap);
	if (n >= 0) {
		sbuf_grow(b, (size_t)n);
		vsnprintf(b->buf + b->len, (size_t)n + 1, fmt, again);
		b->len += (size_t)n;
	}
	va_end(again);
}

void sbuf_addf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sbuf_addv(b, fmt, ap);
	va_end(ap);
}

void sbuf_reset(struct sbuf *b)
{
	b->len = 0;
	if (b->buf)
		b->buf[0] = '\0';
}

char *sbuf_detach(struct sbuf *b, size_t *len)
{
	char *p;

	sbuf_grow(b, 0);
	b->buf[b->len] = '\0'; /* a buffer never added to has no NUL yet */
	p = b->buf;
	if (len)
		*len = b->len;
	b->buf = NULL;
	b->len = b->alloc = 0;
	return p;
}

void sbuf_release(struct sbuf *b)
{
	free(b->buf);
	b->buf = NULL;
	b->len = b->alloc = 0;
}

/* Length of the well-formed UTF-8 sequence at s (2..4), 0 when it is not one. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;
	unsigned cp = s[0] & (0x7f >> n);

	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void sbuf_add_html(struct sbuf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (p && *p) {
		size_t n;

		switch (*p) {
		case '&': sbuf_adds(b, "&amp;"); break;
		case '<': sbuf_adds(b, "&lt;"); break;
		case '>': sbuf_adds(b, "&gt;"); break;
		case '"': sbuf_adds(b, "&quot;"); break;
		case '\'': sbuf_adds(b, "&#39;"); break;
		case '\t':
		case '\n': sbuf_addch(b, *p); break;
		default:
			if (*p < 0x20 || *p == 0x7f) {
				sbuf_adds(b, "\xef\xbf\xbd");
			} else if (*p < 0x80) {
				sbuf_addch(b, *p);
			} else if ((n = utf8_len(p))) {
				sbuf_add(b, p, n);
				p += n;
				continue;
			} else {
				sbuf_adds(b, "\xef\xbf\xbd");
			}
		}
		p++;
	}
}

void sbuf_add_renamed(struct sbuf *b, const char *s, const char *from, const char *to)
{
	size_t n = strlen(from);
	const char *p;

	while ((p = strstr(s, from))) {
		if (p[n] == ':') {
			sbuf_add(b, s, (size_t)(p - s));
			sbuf_adds(b, to);
		} else {
			sbuf_add(b, s, (size_t)(p - s) + n);
		}
		s = p + n;
	}
	sbuf_adds(b, s);
}

void sbuf_add_md(struct sbuf *b, const char *s, size_t max)
{
	size_t len = 0;

	for (; s && *s && len < max; s++, len++) {
		switch (*s) {
		case '|': sbuf_adds(b, "\\|"); break;
		case '<': sbuf_adds(b, "&lt;"); break;
		case '>': sbuf_adds(b, "&gt;"); break;
		case '&': sbuf_adds(b, "&amp;"); break;
		case '\\': sbuf_adds(b, "\\\\"); break;
		case '`': sbuf_adds(b, "&#96;"); break;
		case '*':
		case '_':
		case '[':
		case ']':
			sbuf_addch(b, '\\');
			sbuf_addch(b, *s);
			break;
		case '\n':
		case '\r':
		case '\t': sbuf_addch(b, ' '); break;
		default:
			if ((unsigned char)*s >= 0x20 && *s != 0x7f)
				sbuf_addch(b, *s);
		}
	}
	if (s && *s)
		sbuf_adds(b, " ...");
}

size_t text_defang(char *s)
{
	size_t count = 0, w = 0;

	if (!s)
		return 0;
	for (size_t r = 0; s[r]; r++) {
		unsigned char c = (unsigned char)s[r];

		if (c == 0xc2 && (unsigned char)s[r + 1] >= 0x80 &&
		    (unsigned char)s[r + 1] <= 0x9f) {
			r++; /* C1 as UTF-8: both bytes become one '?' */
			c = '?';
			count++;
		} else if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) {
			c = '?';
			count++;
		}
		s[w++] = (char)c;
	}
	s[w] = '\0';
	return count;
}
