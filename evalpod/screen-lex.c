/*
 * screen-lex.c - the lexer of the source screen: translation phases 1-3
 * (trigraphs, line splices, comments, literals, pp-tokens with the line of
 * the original text).  The rules that decide what is refused are in
 * screen.c.
 *
 * The screen reads a source as clang's preprocessor does, so that what it
 * checks is what the compiler will see.  Phases 1 and 2 (trigraphs, which
 * clang applies to OpenCL C, and line splices, backslash-blanks-newline
 * included) make a logical text in which every byte remembers its original
 * line.  Phase 3 cuts that into pp-tokens; a '#' that is the first token of
 * a line starts a directive, which runs to the next logical newline.
 *
 * Where clang and a simple reading could disagree, the screen takes the
 * reading that sees more: non-ASCII bytes separate tokens (clang treats
 * U+00A0 and friends as white space), a newline inside a block comment
 * starts a line, and text that clang reads raw (#error, #warning) is
 * screened as tokens but may not open a comment it does not close.
 */
#include "screen-internal.h"
#include "err.h"
#include "xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char trigraphs[][2] = {
	{ '=', '#' }, { '(', '[' }, { '/', '\\' }, { ')', ']' }, { '\'', '^' },
	{ '<', '{' }, { '!', '|' }, { '>', '}' },  { '-', '~' },
};

/* Longest first; canonical spellings for the ones the screen cares about. */
static const struct {
	const char *text;
	int punct;
} puncts[] = {
	{ "%:%:", P_PASTE }, { "...", P_OTHER }, { "<<=", P_OTHER }, { ">>=", P_OTHER },
	{ "##", P_PASTE },   { "%:", '#' },      { "<:", '[' },      { ":>", ']' },
	{ "<%", '{' },       { "%>", '}' },      { "->", P_OTHER },  { "++", P_OTHER },
	{ "--", P_OTHER },   { "<<", P_OTHER },  { ">>", P_OTHER },  { "<=", P_OTHER },
	{ ">=", P_OTHER },   { "==", P_OTHER },  { "!=", P_OTHER },  { "&&", P_OTHER },
	{ "||", P_OTHER },   { "*=", P_OTHER },  { "/=", P_OTHER },  { "%=", P_OTHER },
	{ "+=", P_OTHER },   { "-=", P_OTHER },  { "&=", P_OTHER },  { "^=", P_OTHER },
	{ "|=", P_OTHER },
};

/* See screen-internal.h. */
int screen__refuse(struct screen *s, unsigned line, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return kerr_set(s->msg, s->n, KERR_INVALID, "line %u: %s", line, why);
}

/* --- phases 1 and 2 --- */

static int is_blank(int c)
{
	return c == ' ' || c == '\t' || c == '\v' || c == '\f';
}

/* The width of the newline at src[i] (\n, \r\n or a lone \r), or 0. */
static size_t newline_width(const char *src, size_t len, size_t i)
{
	if (i >= len)
		return 0;
	if (src[i] == '\n')
		return 1;
	if (src[i] == '\r')
		return i + 1 < len && src[i + 1] == '\n' ? 2 : 1;
	return 0;
}

/* The character at src[i] after trigraph replacement; *width is 1 or 3. */
static char source_char(const char *src, size_t len, size_t i, size_t *width)
{
	*width = 1;
	if (src[i] != '?' || i + 2 >= len || src[i + 1] != '?')
		return src[i];
	for (size_t k = 0; k < ARRAY_SIZE(trigraphs); k++) {
		if (src[i + 2] == trigraphs[k][0]) {
			*width = 3;
			return trigraphs[k][1];
		}
	}
	return src[i];
}

/* The width of a line splice whose backslash (width w) is at src[i], or 0. */
static size_t splice_width(const char *src, size_t len, size_t i, size_t w)
{
	size_t j = i + w, nl;

	while (j < len && is_blank(src[j]))
		j++;
	nl = newline_width(src, len, j);
	return nl ? j + nl - i : 0;
}

int screen__text_load(struct screen *s, const char *src, size_t len)
{
	struct text *t = &s->t;
	unsigned line = 1;
	size_t i = 0, w, nl, sw;
	char c;

	t->c = xmalloc(len + 1);
	t->line = xreallocarray(NULL, len + 1, sizeof(*t->line));
	t->len = 0;
	while (i < len) {
		if (src[i] == '\0')
			return screen__refuse(s, line,
					      "a NUL byte is not allowed in a kernel source");
		nl = newline_width(src, len, i);
		c = nl ? '\n' : source_char(src, len, i, &w);
		if (!nl && c == '\\' && (sw = splice_width(src, len, i, w))) {
			line++;
			i += sw;
			continue;
		}
		t->c[t->len] = c;
		t->line[t->len++] = line;
		i += nl ? nl : w;
		line += nl ? 1 : 0;
	}
	t->c[t->len] = '\0';
	t->line[t->len] = line;
	return 0;
}

void screen__text_free(struct screen *s)
{
	free(s->t.c);
	free(s->t.line);
	s->t = (struct text){ 0 };
}

/* --- phase 3 --- */

static char peek(const struct screen *s, size_t k)
{
	return s->pos + k < s->t.len ? s->t.c[s->pos + k] : '\0';
}

static unsigned line_at(const struct screen *s, size_t pos)
{
	return s->t.line[pos < s->t.len ? pos : s->t.len];
}

static int skip_block_comment(struct screen *s)
{
	size_t start = s->pos;

	for (s->pos += 2; s->pos < s->t.len; s->pos++) {
		if (peek(s, 0) == '*' && peek(s, 1) == '/') {
			s->pos += 2;
			return 0;
		}
		if (peek(s, 0) != '\n')
			continue;
		if (s->dir == DIR_TEXT)
			return screen__refuse(
				s, line_at(s, start),
				"a comment opened in '#error' or '#warning' text must close on "
				"its line: clang reads that text raw");
		s->bol = s->dir == DIR_NONE ? 1 : s->bol;
	}
	return screen__refuse(s, line_at(s, start), "unterminated comment");
}

/* Skips blanks, non-ASCII bytes and comments, up to a newline or a token. */
static int skip_space(struct screen *s)
{
	int err;

	for (;;) {
		unsigned char c = (unsigned char)peek(s, 0);

		if (s->pos < s->t.len && (is_blank(c) || c >= 0x80)) {
			s->pos++;
		} else if (c == '/' && peek(s, 1) == '/') {
			while (s->pos < s->t.len && peek(s, 0) != '\n')
				s->pos++;
		} else if (c == '/' && peek(s, 1) == '*') {
			if ((err = skip_block_comment(s)))
				return err;
		} else {
			return 0;
		}
	}
}

static int lex_literal(struct screen *s, struct token *tok)
{
	char quote = peek(s, 0), c;

	for (s->pos++; (c = peek(s, 0)) != quote; s->pos++) {
		if (c == '\n' || s->pos >= s->t.len) {
			if (s->dir == DIR_TEXT)
				break; /* read raw by clang, to the end of the line */
			return screen__refuse(s, tok->line, "unterminated %s literal",
					      quote == '"' ? "string" : "character");
		}
		if (c == '\\')
			s->pos++;
	}
	if (c == quote)
		s->pos++;
	tok->kind = TK_LITERAL;
	return 0;
}

static int is_exponent(int c)
{
	return c == 'e' || c == 'E' || c == 'p' || c == 'P';
}

/* A pp-number: digits, letters, '.', and a sign after an exponent letter. */
static void lex_number(struct screen *s, struct token *tok)
{
	char prev = peek(s, 0), c;

	for (s->pos++;; s->pos++) {
		c = peek(s, 0);
		if (!screen__is_ident_char(c) && c != '.' &&
		    !((c == '+' || c == '-') && is_exponent(prev)))
			break;
		prev = c;
	}
	tok->kind = TK_NUMBER;
}

static void lex_punct(struct screen *s, struct token *tok)
{
	for (size_t i = 0; i < ARRAY_SIZE(puncts); i++) {
		size_t len = strlen(puncts[i].text);

		if (s->pos + len <= s->t.len && !memcmp(s->t.c + s->pos, puncts[i].text, len)) {
			s->pos += len;
			tok->punct = puncts[i].punct;
			return;
		}
	}
	tok->punct = (unsigned char)peek(s, 0);
	s->pos++;
}

/* See screen-internal.h. */
int screen__lex(struct screen *s, struct token *tok)
{
	int err = skip_space(s);
	char c = peek(s, 0);

	if (err)
		return err;
	memset(tok, 0, sizeof(*tok));
	tok->start = s->pos;
	tok->line = line_at(s, s->pos);
	if (s->pos >= s->t.len) {
		tok->kind = TK_EOF;
	} else if (c == '\n') {
		tok->kind = TK_NEWLINE;
		s->pos++;
	} else if (screen__is_ident_char(c) && !screen__is_digit(c)) {
		while (screen__is_ident_char(peek(s, 0)))
			s->pos++;
		tok->kind = TK_IDENT;
		/* L"", u"", U"", u8"": clang may or may not take the prefix; both readings agree */
		if (peek(s, 0) == '"' || peek(s, 0) == '\'') {
			tok->len = s->pos - tok->start;
			if (screen__tok_is(s, tok, "L") || screen__tok_is(s, tok, "u") ||
			    screen__tok_is(s, tok, "U") || screen__tok_is(s, tok, "u8"))
				err = lex_literal(s, tok);
		}
	} else if (screen__is_digit(c) || (c == '.' && screen__is_digit(peek(s, 1)))) {
		lex_number(s, tok);
	} else if (c == '"' || c == '\'') {
		err = lex_literal(s, tok);
	} else if (c == '\\') {
		return screen__refuse(s, tok->line,
				      "a backslash outside a literal is not allowed (no universal "
				      "character names in identifiers)");
	} else {
		tok->kind = TK_PUNCT;
		lex_punct(s, tok);
	}
	tok->len = s->pos - tok->start;
	return err;
}
