/*
 * screen-internal.h - what the two halves of the source screen share; not
 * part of screen.h's contract and included only by screen.c and screen-lex.c.
 *
 * screen-lex.c reads a source as clang's preprocessor does (translation
 * phases 1-3) into pp-tokens that carry their original line; screen.c holds
 * the rules: which directives, pragmas, attributes, builtins and build
 * options are refused, and the guard options.  Both work on one struct
 * screen: the lexer moves pos and bol and reads dir (comments and literals
 * behave differently in #error text); the rules own the rest.
 */
#ifndef EVALPOD_SCREEN_INTERNAL_H
#define EVALPOD_SCREEN_INTERNAL_H

#include "arraysize.h"

#include <stddef.h>
#include <string.h>

enum tok_kind { TK_EOF, TK_NEWLINE, TK_IDENT, TK_NUMBER, TK_LITERAL, TK_PUNCT };

enum { P_PASTE = 256, P_OTHER };

struct token {
	enum tok_kind kind;
	size_t start, len;
	unsigned line;
	int punct; /* TK_PUNCT: the character ('#' for "%:"), P_PASTE or P_OTHER */
};

enum dir_kind {
	DIR_NONE,    /* not in a directive */
	DIR_PLAIN,   /* if, ifdef, line, ...: only the tokens are screened */
	DIR_DEFINE,  /* define: the name, then a body */
	DIR_UNDEF,   /* undef: the name */
	DIR_PRAGMA,  /* pragma: the first words name it */
	DIR_TEXT,    /* error, warning: clang reads the rest of the line raw */
	DIR_REFUSED, /* table entries only */
};

/* The logical text after phases 1 and 2. */
struct text {
	char *c;
	unsigned *line; /* the original line of each byte */
	size_t len;
};

/* Where parentheses stand, for __attribute__((...)) and [[...]]. */
struct nesting {
	int depth;      /* open ( and [ */
	int attr_depth; /* depth outside the attribute being read, or -1 */
	int attr_want;  /* '(' still required after __attribute__ */
	int attr_start; /* depth where that __attribute__ stood */
	int prev;       /* the previous token's punct, 0 if not one */
};

struct screen {
	struct text t;
	size_t pos;
	int bol; /* only white space since the last newline */
	struct nesting nest, saved;
	enum dir_kind dir;
	int dir_words;            /* tokens read after the directive name */
	int pragma_ns;            /* the pragma's first word is clang or GCC */
	unsigned attr_macro_line; /* a #define body holds __attribute__ */
	struct token loose_attr;  /* a load-time attribute name outside one */
	char *msg;
	size_t n;
};

/*
 * The character tests and screen__tok_is() are static inline: they run for
 * every byte or token and were static in one file before the lexer was
 * split out; screen.c also uses them on build options and directive names.
 */
static inline int screen__is_ident_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '$';
}

static inline int screen__is_digit(int c)
{
	return c >= '0' && c <= '9';
}

/* Whether tok is spelled word. */
static inline int screen__tok_is(const struct screen *s, const struct token *tok, const char *word)
{
	size_t len = strlen(word);

	return tok->len == len && !memcmp(s->t.c + tok->start, word, len);
}

/* Formats "line N: ..." into s->msg (size s->n); returns KERR_INVALID. */
int screen__refuse(struct screen *s, unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Phases 1 and 2: loads src (len bytes) into s->t, trigraphs replaced and
 * lines spliced, each byte with its original line.  Returns 0 or
 * KERR_INVALID (a NUL byte); s->t is to be freed with screen__text_free()
 * either way.
 */
int screen__text_load(struct screen *s, const char *src, size_t len);
void screen__text_free(struct screen *s);

/*
 * Phase 3: reads the next pp-token (or newline) of s->t at s->pos into tok.
 * Skips white space and comments; a newline inside a block comment outside
 * a directive sets s->bol.  Returns 0 or KERR_INVALID (an unterminated
 * comment or literal, a stray backslash, a comment left open in #error text).
 */
int screen__lex(struct screen *s, struct token *tok);

#endif
