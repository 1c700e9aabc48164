/*
 * answer.c - parsing a proposer's answer and applying its directions.
 *
 * The parser reads the answer a line at a time; each line is classified
 * once (a table of the format's header lines) and each kind of section
 * runs its own small loop over the lines that follow its header.  Every
 * error names the line a model has to fix.
 *
 * Applying a direction works on the parent's block spans (mutate.c): EDIT
 * results are spliced back byte for byte, BLOCK bodies go through
 * blocks_inject so that a new body is indented like its block, and the
 * result must still pass blocks_verify against the parent.
 *
 * This file holds the parser; applying is answer-apply.c, which shares two
 * line helpers with it (answer-internal.h).  May use mutate, sbuf and
 * common/.
 */
#include "answer-internal.h"
#include "err.h"
#include "mutate.h"
#include "sbuf.h"
#include "xalloc.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define TUNABLE_MAX_VALUES 64

/* --- lines ------------------------------------------------------------------ */

enum kind {
	K_OTHER,
	K_BLANK,
	K_DIRECTION,
	K_PARENT,
	K_TUNABLE,
	K_BLOCK,
	K_EDIT,
	K_END,
	K_SEARCH,
	K_DIVIDER,
	K_REPLACE,
};

/*
 * The lines the format gives a meaning, recognised at the start of a line.
 * args: 0 when only blanks may follow the head, 1 when the rest of the line
 * holds the header's arguments (then a head ending in a letter must end a
 * word there, so "--- BLOCKS" is not "--- BLOCK").
 */
static const struct head {
	const char *text;
	enum kind kind;
	int args;
} heads[] = {
	{ "=== DIRECTION", K_DIRECTION, 1 }, { "PARENT:", K_PARENT, 1 },
	{ "TUNABLE:", K_TUNABLE, 1 },        { "--- BLOCK", K_BLOCK, 1 },
	{ "--- EDIT", K_EDIT, 1 },           { "--- END", K_END, 1 },
	{ "<<<<<<< SEARCH", K_SEARCH, 0 },   { "=======", K_DIVIDER, 0 },
	{ ">>>>>>> REPLACE", K_REPLACE, 0 },
};

/* One line of the answer, without its '\n' and the '\r' of a CRLF answer. */
struct line {
	const char *p;
	size_t len;
	size_t no;   /* 1-based */
	size_t rest; /* where the arguments start (a header's) */
	enum kind kind;
};

int answer_blank(char c)
{
	return c == ' ' || c == '\t';
}

static int word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

static int all_blank(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!answer_blank(p[i]))
			return 0;
	return 1;
}

static void classify(struct line *l)
{
	l->kind = all_blank(l->p, l->len) ? K_BLANK : K_OTHER;
	l->rest = 0;
	for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		const struct head *h = &heads[i];
		size_t hl = strlen(h->text);

		if (l->len < hl || memcmp(l->p, h->text, hl))
			continue;
		if (h->args ? (l->len > hl && word_char(h->text[hl - 1]) && word_char(l->p[hl]))
			    : !all_blank(l->p + hl, l->len - hl))
			continue;
		l->kind = h->kind;
		l->rest = hl;
		return;
	}
}

/* A header's arguments with the blanks around them trimmed. */
static const char *line_args(const struct line *l, size_t *len)
{
	const char *p = l->p + l->rest;
	size_t n = l->len - l->rest;

	while (n && answer_blank(*p))
		p++, n--;
	while (n && answer_blank(p[n - 1]))
		n--;
	*len = n;
	return p;
}

/* --- the parser ------------------------------------------------------------- */

struct parser {
	const char *text;
	size_t len, off;
	struct line l; /* the current line */
	struct answer *a;
	char *msg;
	size_t n;
};

/* Moves to the next line; 0 at the end of the text. */
static int next_line(struct parser *p)
{
	const char *s = p->text + p->off, *nl;

	if (p->off >= p->len)
		return 0;
	nl = memchr(s, '\n', p->len - p->off);
	p->l.p = s;
	p->l.len = nl ? (size_t)(nl - s) : p->len - p->off;
	p->off += p->l.len + (nl != NULL);
	if (p->l.len && s[p->l.len - 1] == '\r')
		p->l.len--;
	p->l.no++;
	classify(&p->l);
	return 1;
}

static struct direction *cur(struct parser *p)
{
	return &p->a->d[p->a->n - 1];
}

static size_t count_directions(const char *text)
{
	struct parser q = { .text = text, .len = strlen(text) };
	size_t count = 0;

	while (next_line(&q))
		count += q.l.kind == K_DIRECTION;
	return count;
}

static int direction_begin(struct parser *p)
{
	struct direction *d;
	size_t len;
	const char *r = line_args(&p->l, &len);

	if (!len || *r != ':')
		return kerr_set(p->msg, p->n, KERR_PARSE,
				"line %zu: '=== DIRECTION' must be followed by ':' and a one-line "
				"rationale",
				p->l.no);
	for (r++, len--; len && answer_blank(*r);)
		r++, len--;
	if (!len)
		return kerr_set(
			p->msg, p->n, KERR_PARSE,
			"line %zu: the direction's rationale is empty; say in one line after "
			"'=== DIRECTION:' what changes and why",
			p->l.no);
	p->a->d = xreallocarray(p->a->d, p->a->n + 1, sizeof(*p->a->d));
	d = &p->a->d[p->a->n++];
	memset(d, 0, sizeof(*d));
	d->rationale = xstrndup(r, len);
	d->line = p->l.no;
	return 0;
}

static int direction_end(struct parser *p)
{
	const struct direction *d = cur(p);

	if (!d->nparts)
		return kerr_set(p->msg, p->n, KERR_PARSE,
				"line %zu: direction %zu has no BLOCK or EDIT section", d->line,
				p->a->n);
	return 0;
}

/* PARENT and TUNABLE lines belong before a direction's first section. */
static int before_sections(struct parser *p, const char *what)
{
	if (cur(p)->nparts)
		return kerr_set(p->msg, p->n, KERR_PARSE,
				"line %zu: %s must come before the direction's first section",
				p->l.no, what);
	return 0;
}

static int parent_line(struct parser *p)
{
	struct direction *d = cur(p);
	size_t len;
	const char *id = line_args(&p->l, &len);
	int rc = before_sections(p, "PARENT");

	if (rc)
		return rc;
	if (d->parent)
		return kerr_set(p->msg, p->n, KERR_PARSE,
				"line %zu: a second PARENT in direction %zu", p->l.no, p->a->n);
	for (size_t i = 0; i < len; i++)
		if (!word_char(id[i]) && id[i] != '-')
			len = 0;
	if (!len)
		return kerr_set(p->msg, p->n, KERR_PARSE,
				"line %zu: PARENT takes one id of letters, digits, '_' and '-' "
				"(e.g. 'PARENT: r02-v003')",
				p->l.no);
	d->parent = xstrndup(id, len);
	return 0;
}

/*
 * Reads a decimal integer, optionally negative, at s (len bytes); *used is
 * its length.  Returns 0 when there is none, it overflows, or a letter or
 * digit sticks to it ("4u", "0x10").
 */
int answer_parse_int(const char *s, size_t len, size_t *used, int64_t *v)
{
	int neg = len > 0 && s[0] == '-';
	size_t i = (size_t)neg;
	uint64_t x = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;

	if (i >= len || s[i] < '0' || s[i] > '9')
		return 0;
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
		unsigned dig = (unsigned)(s[i] - '0');

		if (x > (lim - dig) / 10)
			return 0;
		x = x * 10 + dig;
	}
	if (i < len && word_char(s[i]))
		return 0;
	*used = i;
	*v = neg ? (int64_t)(0 - x) : (int64_t)x;
	return 1;
}

/* The values of "TUNABLE: NAME = v1, v2, ..." from s (after the '='). */
static int tunable_values(struct parser *p, const char *name, size_t nlen, const char *s,
			  size_t len, int64_t *vals, size_t *nv)
{
	size_t i = 0, used;

	*nv = 0;
	for (;;) {
		int64_t v;

		while (i < len && answer_blank(s[i]))
			i++;
		if (*nv == TUNABLE_MAX_VALUES)
			return kerr_set(p->msg, p->n, KERR_PARSE,
					"line %zu: TUNABLE %.*s has more than %d values", p->l.no,
					(int)nlen, name, TUNABLE_MAX_VALUES);
		if (!answer_parse_int(s + i, len - i, &used, &v))
			return kerr_set(
				p->msg, p->n, KERR_PARSE,
				"line %zu: TUNABLE %.*s: value %zu is not a decimal integer",
				p->l.no, (int)nlen, name, *nv + 1);
		for (size_t j = 0; j < *nv; j++)
			if (vals[j] == v)
				return kerr_set(p->msg, p->n, KERR_PARSE,
						"line %zu: TUNABLE %.*s: value %" PRId64
						" is given twice",
						p->l.no, (int)nlen, name, v);
		vals[(*nv)++] = v;
		for (i += used; i < len && answer_blank(s[i]);)
			i++;
		if (i == len)
			return 0;
		if (s[i++] != ',')
			return kerr_set(p->msg, p->n, KERR_PARSE,
					"line %zu: TUNABLE %.*s: ',' expected after value %zu",
					p->l.no, (int)nlen, name, *nv);
	}
}

static int tunable_line(struct parser *p)
{
	int64_t vals[TUNABLE_MAX_VALUES];
	struct direction *d = cur(p);
	struct answer_tunable *t;
	size_t len, i = 0, eq, nv;
	const char *s = line_args(&p->l, &len);
	int rc = before_sections(p, "TUNABLE");

	if (rc)
		return rc;
	while (i < len && word_char(s[i]))
		i++;
	if (!i || (s[0] >= '0' && s[0] <= '9'))
		return kerr_set(
			p->msg, p->n, KERR_PARSE,
			"line %zu: TUNABLE needs a C identifier: 'TUNABLE: NAME = v1, v2, ...'",
			p->l.no);
	for (size_t j = 0; j < d->ntunables; j++)
		if (strlen(d->tunables[j].name) == i && !memcmp(d->tunables[j].name, s, i))
			return kerr_set(p->msg, p->n, KERR_PARSE,
					"line %zu: TUNABLE %.*s is declared twice in direction %zu",
					p->l.no, (int)i, s, p->a->n);
	for (eq = i; eq < len && answer_blank(s[eq]);)
		eq++;
	if (eq == len || s[eq] != '=')
		return kerr_set(p->msg, p->n, KERR_PARSE,
				"line %zu: TUNABLE %.*s: '=' expected after the name "
				"('TUNABLE: NAME = v1, v2, ...')",
				p->l.no, (int)i, s);
	rc = tunable_values(p, s, i, s + eq + 1, len - eq - 1, vals, &nv);
	if (rc)
		return rc;
	if (nv < 2)
		return kerr_set(p->msg, p->n, KERR_PARSE,
				"line %zu: TUNABLE %.*s needs at least 2 values to choose from",
				p->l.no, (int)i, s);
	d->tunables = xreallocarray(d->tunables, d->ntunables + 1, sizeof(*d->tunables));
	t = &d->tunables[d->ntunables++];
	t->name = xstrndup(s, i);
	t->values = xreallocarray(NULL, nv, sizeof(*t->values));
	memcpy(t->values, vals, nv * sizeof(*vals));
	t->nvalues = nv;
	return 0;
}

/* --- sections --------------------------------------------------------------- */

static const char *section_kind(const struct answer_part *pt)
{
	return pt->whole ? "BLOCK" : "EDIT";
}

static int end_missing(struct parser *p, const struct answer_part *pt)
{
	return kerr_set(p->msg, p->n, KERR_PARSE,
			"line %zu: '--- END' missing for the %s section opened at line %zu",
			p->l.no, section_kind(pt), pt->line);
}

/* A line that can only be the next header: the section before it is not closed. */
static int starts_section(enum kind k)
{
	return k == K_DIRECTION || k == K_BLOCK || k == K_EDIT;
}

static int fence_open(const char *p, size_t len)
{
	size_t i = 3;

	if (len < 3 || memcmp(p, "```", 3))
		return 0;
	while (i < len && !answer_blank(p[i]) && p[i] != '`')
		i++;
	return all_blank(p + i, len - i);
}

static int fence_close(const char *p, size_t len)
{
	return len >= 3 && !memcmp(p, "```", 3) && all_blank(p + 3, len - 3);
}

/* The first and last non-blank lines of body: offsets and their index. */
struct edge {
	size_t off, len, idx;
};

static int body_edges(const char *body, struct edge *first, struct edge *last)
{
	size_t off = 0, idx = 0, found = 0;

	while (body[off]) {
		const char *nl = strchr(body + off, '\n');
		size_t len = nl ? (size_t)(nl - (body + off)) : strlen(body + off);

		if (!all_blank(body + off, len)) {
			struct edge e = { off, len, idx };

			if (!found++)
				*first = e;
			*last = e;
		}
		off += len + (nl != NULL);
		idx++;
	}
	return found > 0;
}

/*
 * Drops a Markdown fence around a BLOCK body (blank lines outside it go
 * too).  A fence opened and not closed, or closed and not opened, is an
 * error: neither is code.
 */
static int unfence(struct parser *p, struct answer_part *pt, char *body)
{
	struct edge f = { 0 }, l = { 0 };

	pt->body = body;
	if (!body_edges(body, &f, &l))
		return 0;
	if (fence_open(body + f.off, f.len) && f.idx != l.idx && fence_close(body + l.off, l.len)) {
		size_t from = f.off + f.len + 1;

		pt->body = xstrndup(body + from, l.off - from);
		free(body);
		return 0;
	}
	if (fence_open(body + f.off, f.len))
		return kerr_set(p->msg, p->n, KERR_PARSE,
				"line %zu: the BLOCK body opens a ``` fence here and does not end "
				"with a closing ``` line",
				pt->line + 1 + f.idx);
	if (fence_close(body + l.off, l.len))
		return kerr_set(p->msg, p->n, KERR_PARSE,
				"line %zu: the BLOCK body ends with a ``` fence it never opened",
				pt->line + 1 + l.idx);
	return 0;
}

/* A BLOCK body: every line up to "--- END", verbatim. */
static int block_section(struct parser *p, struct answer_part *pt)
{
	struct sbuf sb = SBUF_INIT;
	int rc;

	while (next_line(p)) {
		size_t alen;

		if (p->l.kind == K_END) {
			line_args(&p->l, &alen);
			if (!alen)
				return unfence(p, pt, sbuf_detach(&sb, NULL));
			rc = kerr_set(p->msg, p->n, KERR_PARSE,
				      "line %zu: nothing may follow '--- END' on its line",
				      p->l.no);
			goto fail;
		}
		if (starts_section(p->l.kind)) {
			rc = end_missing(p, pt);
			goto fail;
		}
		sbuf_add(&sb, p->l.p, p->l.len);
		sbuf_addch(&sb, '\n');
	}
	rc = end_missing(p, pt);
fail:
	sbuf_release(&sb);
	return rc;
}

enum edit_state { E_BETWEEN, E_SEARCH, E_REPLACE };

/* Where a line that is not text in the current state leads. */
static int edit_misplaced(struct parser *p, struct answer_part *pt, enum edit_state st,
			  size_t sline)
{
	if (st == E_SEARCH)
		return kerr_set(p->msg, p->n, KERR_PARSE,
				"line %zu: '=======' missing for the SEARCH opened at line %zu",
				p->l.no, sline);
	if (st == E_REPLACE)
		return kerr_set(
			p->msg, p->n, KERR_PARSE,
			"line %zu: '>>>>>>> REPLACE' missing for the SEARCH opened at line %zu",
			p->l.no, sline);
	if (starts_section(p->l.kind))
		return end_missing(p, pt);
	return kerr_set(p->msg, p->n, KERR_PARSE,
			"line %zu: only blank lines may stand between the SEARCH/REPLACE pairs of "
			"the EDIT section opened at line %zu",
			p->l.no, pt->line);
}

static void edit_add(struct answer_part *pt, struct sbuf *s, struct sbuf *r, size_t sline)
{
	struct answer_edit *e;

	pt->edits = xreallocarray(pt->edits, pt->nedits + 1, sizeof(*pt->edits));
	e = &pt->edits[pt->nedits++];
	e->search = sbuf_detach(s, NULL);
	e->replace = sbuf_detach(r, NULL);
	e->line = sline;
}

/* One step of an EDIT section; *done when its "--- END" was read. */
static int edit_step(struct parser *p, struct answer_part *pt, enum edit_state *st, size_t *sline,
		     struct sbuf *s, struct sbuf *r, int *done)
{
	enum kind k = p->l.kind;
	size_t alen;

	if (*st == E_BETWEEN && k == K_BLANK)
		return 0;
	if (*st == E_BETWEEN && k == K_SEARCH) {
		*st = E_SEARCH;
		*sline = p->l.no;
		return 0;
	}
	if (*st == E_BETWEEN && k == K_END && (line_args(&p->l, &alen), !alen)) {
		*done = 1;
		if (!pt->nedits)
			return kerr_set(p->msg, p->n, KERR_PARSE,
					"line %zu: the EDIT section opened at line %zu has no "
					"SEARCH/REPLACE pair",
					p->l.no, pt->line);
		return 0;
	}
	if (*st == E_SEARCH && k == K_DIVIDER) {
		if (!s->len || strspn(s->buf, " \t\n") == s->len)
			return kerr_set(
				p->msg, p->n, KERR_PARSE,
				"line %zu: the SEARCH text is empty; it must quote lines of "
				"the block",
				*sline);
		*st = E_REPLACE;
		return 0;
	}
	if (*st == E_REPLACE && k == K_REPLACE) {
		edit_add(pt, s, r, *sline);
		*st = E_BETWEEN;
		return 0;
	}
	if (*st == E_BETWEEN || starts_section(k) || k == K_END || k == K_SEARCH ||
	    k == K_DIVIDER || k == K_REPLACE)
		return edit_misplaced(p, pt, *st, *sline);
	sbuf_add(*st == E_SEARCH ? s : r, p->l.p, p->l.len);
	sbuf_addch(*st == E_SEARCH ? s : r, '\n');
	return 0;
}

static int edit_section(struct parser *p, struct answer_part *pt)
{
	struct sbuf s = SBUF_INIT, r = SBUF_INIT;
	enum edit_state st = E_BETWEEN;
	size_t sline = 0;
	int rc = 0, done = 0;

	while (!rc && !done && next_line(p))
		rc = edit_step(p, pt, &st, &sline, &s, &r, &done);
	if (!rc && !done)
		rc = st == E_BETWEEN ? end_missing(p, pt) : edit_misplaced(p, pt, st, sline);
	sbuf_release(&s);
	sbuf_release(&r);
	return rc;
}

/* "--- BLOCK name" or "--- EDIT name" and what follows up to its "--- END". */
static int section(struct parser *p)
{
	struct direction *d = cur(p);
	struct answer_part *pt;
	const char *kind = p->l.kind == K_BLOCK ? "BLOCK" : "EDIT";
	size_t len, w = 0;
	const char *name = line_args(&p->l, &len);

	while (w < len && !answer_blank(name[w]))
		w++;
	if (!len)
		return kerr_set(p->msg, p->n, KERR_PARSE, "line %zu: '--- %s' needs a block name",
				p->l.no, kind);
	if (w < len)
		return kerr_set(p->msg, p->n, KERR_PARSE,
				"line %zu: '--- %s' takes one block name, not '%.*s'", p->l.no,
				kind, (int)len, name);
	for (size_t i = 0; i < d->nparts; i++)
		if (strlen(d->parts[i].block) == len && !memcmp(d->parts[i].block, name, len))
			return kerr_set(p->msg, p->n, KERR_PARSE,
					"line %zu: block '%.*s' appears twice in direction %zu",
					p->l.no, (int)len, name, p->a->n);
	d->parts = xreallocarray(d->parts, d->nparts + 1, sizeof(*d->parts));
	pt = &d->parts[d->nparts++];
	memset(pt, 0, sizeof(*pt));
	pt->block = xstrndup(name, len);
	pt->whole = p->l.kind == K_BLOCK;
	pt->line = p->l.no;
	return pt->whole ? block_section(p, pt) : edit_section(p, pt);
}

/* A line of a direction outside its sections. */
static int direction_line(struct parser *p)
{
	int rc;

	switch (p->l.kind) {
	case K_BLANK: return 0;
	case K_DIRECTION: rc = direction_end(p); return rc ? rc : direction_begin(p);
	case K_PARENT: return parent_line(p);
	case K_TUNABLE: return tunable_line(p);
	case K_BLOCK:
	case K_EDIT: return section(p);
	case K_END:
		return kerr_set(p->msg, p->n, KERR_PARSE,
				"line %zu: '--- END' without an open section", p->l.no);
	default:
		return kerr_set(p->msg, p->n, KERR_PARSE,
				"line %zu: text outside a section (only blank lines may stand "
				"between sections)",
				p->l.no);
	}
}

int answer_parse(const char *text, size_t max_directions, struct answer *a, char *msg, size_t n)
{
	struct parser p = { .text = text, .len = strlen(text), .a = a, .msg = msg, .n = n };
	size_t count = count_directions(text);
	int rc;

	a->d = NULL;
	a->n = 0;
	if (!count)
		return kerr_set(msg, n, KERR_PARSE, "no '=== DIRECTION' header in the answer");
	if (count > max_directions)
		return kerr_set(msg, n, KERR_PARSE,
				"the answer has %zu directions; at most %zu %s asked for", count,
				max_directions, max_directions == 1 ? "was" : "were");
	while (next_line(&p) && p.l.kind != K_DIRECTION)
		; /* the preamble */
	rc = direction_begin(&p);
	while (!rc && next_line(&p))
		rc = direction_line(&p);
	if (!rc)
		rc = direction_end(&p);
	if (rc)
		answer_release(a);
	return rc;
}

static void part_release(struct answer_part *pt)
{
	free(pt->block);
	free(pt->body);
	for (size_t i = 0; i < pt->nedits; i++) {
		free(pt->edits[i].search);
		free(pt->edits[i].replace);
	}
	free(pt->edits);
}

void answer_release(struct answer *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++) {
		struct direction *d = &a->d[i];

		free(d->rationale);
		free(d->parent);
		for (size_t j = 0; j < d->nparts; j++)
			part_release(&d->parts[j]);
		free(d->parts);
		for (size_t j = 0; j < d->ntunables; j++) {
			free(d->tunables[j].name);
			free(d->tunables[j].values);
		}
		free(d->tunables);
	}
	free(a->d);
	a->d = NULL;
	a->n = 0;
}
