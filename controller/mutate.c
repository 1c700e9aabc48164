/*
 * mutate.c - finding, replacing and checking EVOLVE-BLOCK regions.
 *
 * Everything here works on byte offsets into the original text, so a
 * variant can be compared with its template byte for byte: the code
 * outside the blocks (marker lines included) is the contract a proposer
 * must keep, and blocks_verify() is what enforces it.
 */
#include "mutate.h"
#include "err.h"
#include "expr.h"
#include "sbuf.h"
#include "xalloc.h"

#include <ctype.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One line of a text: [off, off + len), the next line starts at next. */
struct line {
	size_t off, len, next;
};

static int line_at(const char *s, size_t slen, size_t off, struct line *l)
{
	const char *nl;

	if (off >= slen)
		return 0;
	nl = memchr(s + off, '\n', slen - off);
	l->off = off;
	l->len = nl ? (size_t)(nl - (s + off)) : slen - off;
	l->next = nl ? off + l->len + 1 : slen;
	return 1;
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* 1-based line number of byte offset off in s. */
static size_t line_number(const char *s, size_t off)
{
	size_t line = 1;

	for (size_t i = 0; i < off; i++)
		line += s[i] == '\n';
	return line;
}

/*
 * The name written after a start marker: trimmed, and without the closer
 * of a block comment, so "/" "* EVOLVE-BLOCK-START tile *" "/" is "tile".
 */
static char *marker_name(const char *p, size_t len)
{
	while (len && is_space(*p))
		p++, len--;
	while (len && is_space(p[len - 1]))
		len--;
	if (len >= 2 && p[len - 2] == '*' && p[len - 1] == '/') {
		len -= 2;
		while (len && is_space(p[len - 1]))
			len--;
	}
	return xstrndup(p, len);
}

static int block_named(const struct blocks *bl, const char *name)
{
	for (size_t i = 0; i < bl->n; i++)
		if (!strcmp(bl->b[i].name, name))
			return (int)i;
	return -1;
}

/*
 * Opens a block whose start marker is line l (marker at m); checks the
 * name against names (each block's index by name: a source of many blocks,
 * as an untrusted proposer may send, is read in time linear in them).
 */
static int block_open(struct blocks *out, struct expr_vars *names, const char *src,
		      const struct line *l, const char *m, size_t mlen, size_t lineno, char *msg,
		      size_t n)
{
	const char *p = src + l->off, *after = m + mlen;
	struct block b = { 0 };
	size_t ind = 0;
	int64_t dup;

	b.name = marker_name(after, (size_t)(p + l->len - after));
	if (!b.name[0]) {
		free(b.name);
		b.name = xasprintf("%zu", out->n);
	}
	if (!expr_vars_get(names, b.name, &dup)) {
		kerr_set(msg, n, KERR_PARSE,
			 "line %zu: duplicate block name '%s' (first at line %zu)", lineno, b.name,
			 out->b[dup].line);
		free(b.name);
		return KERR_PARSE;
	}
	while (ind < l->len && (p[ind] == ' ' || p[ind] == '\t'))
		ind++;
	b.indent = xstrndup(p, ind);
	b.start = b.end = l->next;
	b.line = lineno;
	if (!(out->n & (out->n - 1))) /* 0 or a power of two: the array is full */
		out->b = xreallocarray(out->b, out->n ? 2 * out->n : 1, sizeof(*out->b));
	expr_vars_set(names, b.name, (int64_t)out->n);
	out->b[out->n++] = b;
	return 0;
}

int blocks_find(const char *src, const char *start_marker, const char *end_marker,
		struct blocks *out, char *msg, size_t n)
{
	size_t slen = strlen(src), smlen = strlen(start_marker), emlen = strlen(end_marker);
	size_t off = 0, lineno = 0;
	struct block *open = NULL;
	struct expr_vars names = EXPR_VARS_INIT;
	struct line l;
	int rc = 0;

	out->b = NULL;
	out->n = 0;
	if (!smlen || !emlen)
		return kerr_set(msg, n, KERR_INVALID, "the block markers must not be empty");
	for (; line_at(src, slen, off, &l); off = l.next) {
		const char *m = memmem(src + l.off, l.len, start_marker, smlen);

		lineno++;
		if (m && open) {
			rc = kerr_set(msg, n, KERR_PARSE,
				      "line %zu: start marker inside block '%s' opened at line %zu",
				      lineno, open->name, open->line);
			goto out;
		}
		if (m) {
			rc = block_open(out, &names, src, &l, m, smlen, lineno, msg, n);
			if (rc)
				goto out;
			open = &out->b[out->n - 1];
		} else if (memmem(src + l.off, l.len, end_marker, emlen)) {
			if (!open) {
				rc = kerr_set(msg, n, KERR_PARSE, "line %zu: %s without a start",
					      lineno, end_marker);
				goto out;
			}
			open->end = l.off;
			open = NULL;
		}
	}
	if (open)
		rc = kerr_set(msg, n, KERR_PARSE, "line %zu: block '%s' is never closed",
			      open->line, open->name);
	else if (!out->n)
		rc = kerr_set(msg, n, KERR_PARSE, "no %s marker in the source", start_marker);
out:
	expr_vars_release(&names);
	if (rc)
		blocks_release(out);
	return rc;
}

void blocks_release(struct blocks *bl)
{
	if (!bl)
		return;
	for (size_t i = 0; i < bl->n; i++) {
		free(bl->b[i].name);
		free(bl->b[i].indent);
	}
	free(bl->b);
	bl->b = NULL;
	bl->n = 0;
}

char *block_body(const char *src, const struct blocks *bl, size_t i)
{
	return xstrndup(src + bl->b[i].start, bl->b[i].end - bl->b[i].start);
}

static int line_blank(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!is_space(p[i]))
			return 0;
	return 1;
}

static int line_directive(const char *p, size_t len)
{
	size_t i = 0;

	while (i < len && is_space(p[i]))
		i++;
	return i < len && p[i] == '#';
}

/*
 * A body is already indented when its code lines all start with the
 * block's indent.  Preprocessor lines are left out of the test because C
 * code often keeps them in column 0 inside indented code; a body with
 * nothing but directives is judged on those.
 */
static int body_indented(const char *body, const char *indent)
{
	size_t blen = strlen(body), ilen = strlen(indent), code = 0, ok = 0, all = 0, allok = 0;
	struct line l;

	for (size_t off = 0; line_at(body, blen, off, &l); off = l.next) {
		const char *p = body + l.off;
		int starts = l.len >= ilen && !memcmp(p, indent, ilen);

		if (line_blank(p, l.len))
			continue;
		all++;
		allok += starts;
		if (!line_directive(p, l.len)) {
			code++;
			ok += starts;
		}
	}
	return code ? ok == code : allok == all;
}

/* Appends body, indented with indent unless it already is, ending in '\n'. */
static void add_body(struct sbuf *sb, const char *body, const char *indent)
{
	size_t blen = strlen(body);
	struct line l;

	if (!indent[0] || body_indented(body, indent)) {
		sbuf_add(sb, body, blen);
	} else {
		for (size_t off = 0; line_at(body, blen, off, &l); off = l.next) {
			if (!line_blank(body + l.off, l.len)) {
				sbuf_adds(sb, indent);
				sbuf_add(sb, body + l.off, l.len);
			}
			if (l.next > l.off + l.len)
				sbuf_addch(sb, '\n');
		}
	}
	if (blen && sb->buf[sb->len - 1] != '\n')
		sbuf_addch(sb, '\n');
}

char *blocks_inject(const char *tmpl, const struct blocks *bl, const char *const *names,
		    const char *const *bodies, size_t n, char *msg, size_t mlen)
{
	const char **repl = xcalloc(bl->n ? bl->n : 1, sizeof(*repl));
	struct sbuf sb = SBUF_INIT;
	char *res = NULL;
	size_t prev = 0;

	for (size_t i = 0; i < n; i++) {
		int j = block_named(bl, names[i]);

		if (j < 0) {
			kerr_set(msg, mlen, KERR_NOTFOUND, "no block '%s' in the template",
				 names[i]);
			goto out;
		}
		if (repl[j]) {
			kerr_set(msg, mlen, KERR_INVALID, "block '%s' is given twice", names[i]);
			goto out;
		}
		repl[j] = bodies[i];
	}
	for (size_t j = 0; j < bl->n; j++) {
		const struct block *b = &bl->b[j];

		sbuf_add(&sb, tmpl + prev, b->start - prev);
		if (repl[j])
			add_body(&sb, repl[j], b->indent);
		else
			sbuf_add(&sb, tmpl + b->start, b->end - b->start);
		prev = b->end;
	}
	sbuf_adds(&sb, tmpl + prev);
	res = sbuf_detach(&sb, NULL);
out:
	sbuf_release(&sb);
	free(repl);
	return res;
}

/* Compares the outside segments [tprev, tend) and [sprev, send). */
static int segment_check(const char *tmpl, size_t tprev, size_t tend, const char *src, size_t sprev,
			 size_t send, char *msg, size_t n)
{
	size_t tl = tend - tprev, sl = send - sprev, i = 0;
	size_t sline, tline;

	while (i < tl && i < sl && tmpl[tprev + i] == src[sprev + i])
		i++;
	if (i == tl && i == sl)
		return 0;
	sline = line_number(src, sprev + i);
	tline = line_number(tmpl, tprev + i);
	if (sline == tline)
		return kerr_set(msg, n, KERR_INVALID,
				"line %zu outside the blocks differs from the template", sline);
	return kerr_set(msg, n, KERR_INVALID,
			"line %zu outside the blocks differs from the template (template line %zu)",
			sline, tline);
}

int blocks_verify(const char *tmpl, const struct blocks *bl, const char *src,
		  const char *start_marker, const char *end_marker, char *msg, size_t n)
{
	struct blocks sb = { 0 };
	char why[256];
	size_t tprev = 0, sprev = 0;
	int rc;

	rc = blocks_find(src, start_marker, end_marker, &sb, why, sizeof(why));
	if (rc) {
		rc = kerr_set(msg, n, KERR_INVALID, "the variant's blocks: %s", why);
		goto out;
	}
	if (sb.n != bl->n) {
		rc = kerr_set(msg, n, KERR_INVALID, "the variant has %zu blocks, the template %zu",
			      sb.n, bl->n);
		goto out;
	}
	for (size_t i = 0; i <= bl->n; i++) {
		int last = i == bl->n;
		size_t tend = last ? strlen(tmpl) : bl->b[i].start;
		size_t send = last ? strlen(src) : sb.b[i].start;

		rc = segment_check(tmpl, tprev, tend, src, sprev, send, msg, n);
		if (rc)
			goto out;
		if (last)
			break;
		if (strcmp(sb.b[i].name, bl->b[i].name)) {
			rc = kerr_set(msg, n, KERR_INVALID,
				      "line %zu: block '%s' where the template has block '%s'",
				      sb.b[i].line, sb.b[i].name, bl->b[i].name);
			goto out;
		}
		tprev = bl->b[i].end;
		sprev = sb.b[i].end;
	}
out:
	blocks_release(&sb);
	return rc;
}

void variant_hash(const char *source, const char *options, char out[65])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_MD_CTX *c = EVP_MD_CTX_new();

	if (!options)
		options = "";
	/* strlen + 1 hashes the source's NUL: the separator from the options */
	if (!c || !EVP_DigestInit_ex(c, EVP_sha256(), NULL) ||
	    !EVP_DigestUpdate(c, source, strlen(source) + 1) ||
	    !EVP_DigestUpdate(c, options, strlen(options)) || !EVP_DigestFinal_ex(c, md, &mdlen) ||
	    mdlen != 32) {
		/* only an allocation failure gets here: treated like xmalloc's */
		fprintf(stderr, "fatal: SHA-256 is unavailable\n");
		abort();
	}
	EVP_MD_CTX_free(c);
	for (unsigned int i = 0; i < mdlen; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[64] = '\0';
}

/* --- #define lines -------------------------------------------------------- */

static int define_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

int define_line_parse(const char *p, size_t len, struct define_line *d)
{
	size_t i = 0;

	while (i < len && define_blank(p[i]))
		i++;
	if (i >= len || p[i++] != '#')
		return 0;
	while (i < len && define_blank(p[i]))
		i++;
	if (len - i < 7 || memcmp(p + i, "define", 6) || !define_blank(p[i + 6]))
		return 0;
	for (i += 6; i < len && define_blank(p[i]);)
		i++;
	d->name = i;
	while (i < len && (isalnum((unsigned char)p[i]) || p[i] == '_'))
		i++;
	d->name_len = i - d->name;
	if (!d->name_len || isdigit((unsigned char)p[d->name]) || (i < len && p[i] == '('))
		return 0; /* not an identifier, or a function-like macro */
	while (i < len && define_blank(p[i]))
		i++;
	d->value = d->value_end = i;
	for (; i < len; i++) {
		if (p[i] == '/' && i + 1 < len && (p[i + 1] == '/' || p[i + 1] == '*'))
			break;
		if (!define_blank(p[i]))
			d->value_end = i + 1;
	}
	return 1;
}
