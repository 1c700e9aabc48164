/*
 * expr-internal.h - what the parts of common/expr share: the tokens, the
 * parser's state (the operators write their messages through it) and the
 * operators and functions (expr-ops.c).  Not for use outside expr*.c.
 */
#ifndef KCTL_EXPR_INTERNAL_H
#define KCTL_EXPR_INTERNAL_H

#include "expr.h"

#include <stddef.h>
#include <stdint.h>

enum {
	EXPR_MAX_LEN = 4096, /* bytes of text */
	EXPR_MAX_DEPTH = 64, /* nested sub-expressions and prefix operators */
	EXPR_MAX_ARGS = 16,  /* arguments to one function call */
};

enum tok_kind {
	/* Single-character tokens use the character itself. */
	TK_END = 256,
	TK_NUM,
	TK_NAME,
	TK_EQ,
	TK_NE,
	TK_LE,
	TK_GE,
	TK_AND,
	TK_OR,
};

struct token {
	int kind;
	size_t start, len; /* byte offset and length in the text */
	int64_t value;     /* for TK_NUM */
};

struct parser {
	const char *text;
	size_t pos;       /* where the next token starts scanning */
	struct token tok; /* the current token */
	expr_lookup_fn lookup;
	void *ctx;
	int depth;
	char *msg;
	size_t n;
	struct expr_prog *prog; /* expr_compile: the nodes being built, else NULL */
};

struct func {
	const char *name;
	size_t min_args, max_args;
	/* Called only when live, with an argument count already checked. */
	int (*fn)(struct parser *p, const struct token *name, const int64_t *a, size_t nr,
		  int64_t *out);
};

/* A token's 1-based column, as messages give it. */
static inline size_t expr__col(const struct token *t)
{
	return t->start + 1;
}

/* The function called name (len bytes), or NULL. */
const struct func *expr__find_func(const char *name, size_t len);

/*
 * op applied to a and b (or to v), into *out; an overflow or a division by
 * zero is KERR_RANGE with p->msg naming the operator and its column.
 */
int expr__apply_binary(struct parser *p, const struct token *op, int64_t a, int64_t b,
		       int64_t *out);
int expr__apply_unary(struct parser *p, const struct token *op, int64_t v, int64_t *out);

#endif
