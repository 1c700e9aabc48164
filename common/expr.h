/*
 * expr.h - integer expressions over named values.
 *
 * Used for buffer element counts, launch geometry, flops/bytes figures and
 * tuning constraints, e.g. "ceil_div(N, VN * WX) * WX" or "TM * VN <= 128".
 *
 * Grammar (C precedence, left associative, all values int64_t):
 *   expr    := cond
 *   cond    := or ( '?' expr ':' cond )?
 *   or      := and ( '||' and )*
 *   and     := cmp ( '&&' cmp )*
 *   cmp     := sum ( ('=='|'!='|'<'|'<='|'>'|'>=') sum )*
 *   sum     := prod ( ('+'|'-') prod )*
 *   prod    := unary ( ('*'|'/'|'%') unary )*
 *   unary   := ('-'|'+'|'!') unary | primary
 *   primary := INTEGER | NAME | NAME '(' expr (',' expr)* ')' | '(' expr ')'
 * INTEGER is decimal or 0x hex, optionally with a u/U/l/L suffix (as in
 * C #defines).  NAME is [A-Za-z_][A-Za-z0-9_]*.
 * Functions: ceil_div(a,b), round_up(a,b), min(a,b,...), max(a,b,...),
 * abs(a), pow(a,b) (b >= 0), log2(a) (floor, a > 0), is_pow2(a).
 * '/' and '%' truncate like C; division by zero, overflow of int64 and
 * unknown names are errors, never silently wrapped.
 */
#ifndef KCTL_EXPR_H
#define KCTL_EXPR_H

#include <stddef.h>
#include <stdint.h>

/*
 * Name lookup: return 0 and set *out when name (of length len, not
 * NUL-terminated) is known; return nonzero when it is not.
 */
typedef int (*expr_lookup_fn)(void *ctx, const char *name, size_t len, int64_t *out);

/*
 * Evaluates the NUL-terminated text.  Returns 0 and sets *out, or a
 * negative KERR_* code with msg (size n) saying what failed and at which
 * column (1-based), e.g. "unknown name 'TM' at column 5".
 * lookup may be NULL when the expression has no names.
 */
int expr_eval(const char *text, expr_lookup_fn lookup, void *ctx, int64_t *out, char *msg,
	      size_t n);

/*
 * Checks syntax only (names are not resolved).  Returns 0 or KERR_PARSE
 * with msg as for expr_eval.
 */
int expr_check(const char *text, char *msg, size_t n);

/*
 * A compiled expression, for one that is evaluated many times (the tuner
 * checks every constraint at every shape for each point it considers):
 * parsed once, its names numbered, so that an evaluation neither scans
 * text nor looks a name up.
 *
 * expr_compile parses text and sets *out to a new program (free it with
 * expr_prog_free), or returns what expr_eval would return for an error in
 * the text itself (KERR_PARSE, KERR_LIMIT, or KERR_RANGE for a literal out
 * of range) with msg set, and *out NULL.
 *
 * Its distinct names are numbered 0 .. expr_prog_names() - 1 in the order
 * they first appear; expr_prog_name(p, i) is name i (owned by p), or NULL
 * past the last.
 *
 * expr_prog_eval evaluates p with name i standing for vals[i].  known, when
 * not NULL, says which names have a value: a name whose known[i] is 0 fails
 * as an unknown name does in expr_eval, and only when evaluated (the
 * untaken side of &&, || and ?: is not).  Result, error code and message
 * are those expr_eval gives for the same text and values.
 */
struct expr_prog;

int expr_compile(const char *text, struct expr_prog **out, char *msg, size_t n);
size_t expr_prog_names(const struct expr_prog *p);
const char *expr_prog_name(const struct expr_prog *p, size_t i);
int expr_prog_eval(const struct expr_prog *p, const int64_t *vals, const unsigned char *known,
		   int64_t *out, char *msg, size_t n);
void expr_prog_free(struct expr_prog *p);

/*
 * A name table usable as an expr_lookup_fn context: v holds the names in
 * the order they were first set, slot (nslot, a power of two, or 0) an
 * open-addressed index into v (i + 1; 0 is empty), so that a source with
 * many #defines (an untrusted candidate's) costs time linear in their
 * number to collect.
 */
struct expr_vars {
	size_t nr, alloc;
	struct expr_var {
		char *name;
		int64_t value;
	} * v;
	size_t *slot, nslot;
};

#define EXPR_VARS_INIT                                                                             \
	{                                                                                          \
		0, 0, NULL, NULL, 0                                                                \
	}

/* Sets name to value, replacing an earlier value of the same name. */
void expr_vars_set(struct expr_vars *vars, const char *name, int64_t value);
/* Returns 0 and sets *out if name is present. */
int expr_vars_get(const struct expr_vars *vars, const char *name, int64_t *out);
/* expr_lookup_fn over a struct expr_vars. */
int expr_vars_lookup(void *vars, const char *name, size_t len, int64_t *out);
void expr_vars_release(struct expr_vars *vars);

#endif
