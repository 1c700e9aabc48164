#include "expr.h"
#include "err.h"
#include "xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * A recursive-descent parser that evaluates as it parses.  Each parse
 * function takes a "live" flag: when it is 0 the text is only parsed,
 * names are not resolved and no arithmetic is done (the value is a
 * placeholder).  expr_check runs the whole text that way; expr_eval
 * turns it off for the operand C would not evaluate (the right side of
 * a short-circuited && or ||, the untaken arm of ?:), so that guards
 * like "N > 0 ? M / N : 0" work and names there need not exist.
 *
 * Everything knowable from the text alone (syntax, literals, function
 * names and argument counts, the limits) is checked in both modes, so an
 * expression expr_check accepts can only fail expr_eval on a name or on
 * arithmetic.
 */

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
};

static const struct {
	char text[3];
	int kind;
} two_char_ops[] = {
	{ "==", TK_EQ }, { "!=", TK_NE },  { "<=", TK_LE },
	{ ">=", TK_GE }, { "&&", TK_AND }, { "||", TK_OR },
};

static const char one_char_ops[] = "()?:,+-*/%!<>";

/* Binary operators from loosest to tightest; each list ends with 0. */
static const struct binary_level {
	int ops[7];
} binary_levels[] = {
	{ { TK_OR } },    { { TK_AND } },        { { TK_EQ, TK_NE, '<', TK_LE, '>', TK_GE } },
	{ { '+', '-' } }, { { '*', '/', '%' } },
};

#define NR_LEVELS (sizeof(binary_levels) / sizeof(binary_levels[0]))

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_name_char(char c)
{
	return is_name_start(c) || is_digit(c);
}

static int digit_value(char c, int base)
{
	if (is_digit(c))
		return c - '0';
	if (base == 16 && c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (base == 16 && c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static size_t col(const struct token *t)
{
	return t->start + 1;
}

static int is_u(char c)
{
	return c == 'u' || c == 'U';
}

static int is_l(char c)
{
	return c == 'l' || c == 'L';
}

/* C's integer suffixes: u, l, ll, ul, ull, lu, llu in either case, LL not mixed. */
static int suffix_ok(const char *s, size_t len)
{
	size_t i = 0;
	int u = 0;

	if (i < len && is_u(s[i])) {
		u = 1;
		i++;
	}
	if (i < len && is_l(s[i])) {
		char l = s[i++];

		if (i < len && s[i] == l)
			i++;
	}
	if (!u && i < len && is_u(s[i]))
		i++;
	return i == len;
}

/* Scans the literal at p->pos into p->tok; the whole alphanumeric run is the token. */
static int lex_number(struct parser *p)
{
	const char *t = p->text;
	size_t start = p->pos, i = start, digits = 0, suffix;
	int base = 10, overflow = 0, d;
	int64_t v = 0;

	if (t[i] == '0' && (t[i + 1] == 'x' || t[i + 1] == 'X')) {
		base = 16;
		i += 2;
	}
	for (; (d = digit_value(t[i], base)) >= 0; i++, digits++)
		if (__builtin_mul_overflow(v, base, &v) || __builtin_add_overflow(v, d, &v))
			overflow = 1;
	suffix = i;
	while (is_name_char(t[i]))
		i++;
	p->tok = (struct token){ .kind = TK_NUM, .start = start, .len = i - start, .value = v };
	p->pos = i;

	if (!digits)
		return kerr_set(p->msg, p->n, KERR_PARSE,
				"invalid integer literal '%.*s' at column %zu", (int)p->tok.len,
				t + start, col(&p->tok));
	if (base == 10 && t[start] == '0' && digits > 1)
		return kerr_set(p->msg, p->n, KERR_PARSE,
				"octal literal '%.*s' not supported at column %zu", (int)p->tok.len,
				t + start, col(&p->tok));
	if (!suffix_ok(t + suffix, i - suffix))
		return kerr_set(p->msg, p->n, KERR_PARSE,
				"invalid suffix on integer literal '%.*s' at column %zu",
				(int)p->tok.len, t + start, col(&p->tok));
	if (overflow)
		return kerr_set(p->msg, p->n, KERR_RANGE,
				"integer literal '%.*s' out of range at column %zu",
				(int)p->tok.len, t + start, col(&p->tok));
	return 0;
}

/* Returns the operator kind at s and its length, or 0 if s starts no operator. */
static int op_kind(const char *s, size_t *len)
{
	for (size_t i = 0; i < sizeof(two_char_ops) / sizeof(two_char_ops[0]); i++) {
		if (s[0] == two_char_ops[i].text[0] && s[1] == two_char_ops[i].text[1]) {
			*len = 2;
			return two_char_ops[i].kind;
		}
	}
	if (s[0] && strchr(one_char_ops, s[0])) {
		*len = 1;
		return (unsigned char)s[0];
	}
	return 0;
}

/* Moves p->tok to the next token. */
static int advance(struct parser *p)
{
	const char *t = p->text;
	size_t i = p->pos, len = 0;
	int kind;

	while (is_space(t[i]))
		i++;
	p->pos = i;
	if (is_digit(t[i]))
		return lex_number(p);
	if (!t[i]) {
		kind = TK_END;
	} else if (is_name_start(t[i])) {
		while (is_name_char(t[i + len]))
			len++;
		kind = TK_NAME;
	} else if (!(kind = op_kind(t + i, &len))) {
		unsigned char c = (unsigned char)t[i];

		if (c >= 0x20 && c < 0x7f)
			return kerr_set(p->msg, p->n, KERR_PARSE, "unexpected '%c' at column %zu",
					c, i + 1);
		return kerr_set(p->msg, p->n, KERR_PARSE, "unexpected byte 0x%02x at column %zu", c,
				i + 1);
	}
	p->tok = (struct token){ .kind = kind, .start = i, .len = len };
	p->pos = i + len;
	return 0;
}

static int unexpected(struct parser *p)
{
	if (p->tok.kind == TK_END)
		return kerr_set(p->msg, p->n, KERR_PARSE,
				"unexpected end of expression at column %zu", col(&p->tok));
	return kerr_set(p->msg, p->n, KERR_PARSE, "unexpected '%.*s' at column %zu",
			(int)p->tok.len, p->text + p->tok.start, col(&p->tok));
}

/* Consumes a one-character token, or fails naming what was expected. */
static int expect(struct parser *p, char c)
{
	if (p->tok.kind != c)
		return kerr_set(p->msg, p->n, KERR_PARSE, "expected '%c' at column %zu", c,
				col(&p->tok));
	return advance(p);
}

/* Counts one level of nesting; the caller undoes it with p->depth-- whatever the result. */
static int enter(struct parser *p)
{
	if (++p->depth > EXPR_MAX_DEPTH)
		return kerr_set(p->msg, p->n, KERR_LIMIT,
				"expression nested deeper than %d at column %zu", EXPR_MAX_DEPTH,
				col(&p->tok));
	return 0;
}

/* ---- functions ---- */

struct func {
	const char *name;
	size_t min_args, max_args;
	/* Called only when live, with an argument count already checked. */
	int (*fn)(struct parser *p, const struct token *name, const int64_t *a, size_t nr,
		  int64_t *out);
};

static int func_error(struct parser *p, const struct token *name, int code, const char *reason)
{
	return kerr_set(p->msg, p->n, code, "%s in '%.*s' at column %zu", reason, (int)name->len,
			p->text + name->start, col(name));
}

/* Rounds the quotient towards +infinity, for either sign of a and b. */
static int ceil_div(struct parser *p, const struct token *name, int64_t a, int64_t b, int64_t *out)
{
	int64_t q, r;

	if (!b)
		return func_error(p, name, KERR_RANGE, "division by zero");
	if (a == INT64_MIN && b == -1)
		return func_error(p, name, KERR_RANGE, "overflow");
	q = a / b;
	r = a % b;
	if (r && (r < 0) == (b < 0))
		q++;
	*out = q;
	return 0;
}

static int fn_ceil_div(struct parser *p, const struct token *name, const int64_t *a, size_t nr,
		       int64_t *out)
{
	return ceil_div(p, name, a[0], a[1], out);
}

static int fn_round_up(struct parser *p, const struct token *name, const int64_t *a, size_t nr,
		       int64_t *out)
{
	int64_t q = 0;
	int err = ceil_div(p, name, a[0], a[1], &q);

	if (!err && __builtin_mul_overflow(q, a[1], out))
		err = func_error(p, name, KERR_RANGE, "overflow");
	return err;
}

static int fn_min(struct parser *p, const struct token *name, const int64_t *a, size_t nr,
		  int64_t *out)
{
	int64_t v = a[0];

	for (size_t i = 1; i < nr; i++)
		if (a[i] < v)
			v = a[i];
	*out = v;
	return 0;
}

static int fn_max(struct parser *p, const struct token *name, const int64_t *a, size_t nr,
		  int64_t *out)
{
	int64_t v = a[0];

	for (size_t i = 1; i < nr; i++)
		if (a[i] > v)
			v = a[i];
	*out = v;
	return 0;
}

static int fn_abs(struct parser *p, const struct token *name, const int64_t *a, size_t nr,
		  int64_t *out)
{
	if (a[0] == INT64_MIN)
		return func_error(p, name, KERR_RANGE, "overflow");
	*out = a[0] < 0 ? -a[0] : a[0];
	return 0;
}

/*
 * Square-and-multiply.  The base is squared only while exponent bits
 * remain, so it never exceeds |result| and a representable result
 * (INT64_MIN = pow(-2, 63) included) is never reported as overflow.
 */
static int fn_pow(struct parser *p, const struct token *name, const int64_t *a, size_t nr,
		  int64_t *out)
{
	int64_t base = a[0], e = a[1], r = 1;

	if (e < 0)
		return func_error(p, name, KERR_RANGE, "negative exponent");
	while (e) {
		if ((e & 1) && __builtin_mul_overflow(r, base, &r))
			return func_error(p, name, KERR_RANGE, "overflow");
		e >>= 1;
		if (e && __builtin_mul_overflow(base, base, &base))
			return func_error(p, name, KERR_RANGE, "overflow");
	}
	*out = r;
	return 0;
}

static int fn_log2(struct parser *p, const struct token *name, const int64_t *a, size_t nr,
		   int64_t *out)
{
	if (a[0] <= 0)
		return func_error(p, name, KERR_RANGE, "non-positive argument");
	*out = 63 - __builtin_clzll((unsigned long long)a[0]);
	return 0;
}

static int fn_is_pow2(struct parser *p, const struct token *name, const int64_t *a, size_t nr,
		      int64_t *out)
{
	*out = a[0] > 0 && !(a[0] & (a[0] - 1));
	return 0;
}

static const struct func funcs[] = {
	{ .name = "ceil_div", .min_args = 2, .max_args = 2, .fn = fn_ceil_div },
	{ .name = "round_up", .min_args = 2, .max_args = 2, .fn = fn_round_up },
	{ .name = "min", .min_args = 2, .max_args = EXPR_MAX_ARGS, .fn = fn_min },
	{ .name = "max", .min_args = 2, .max_args = EXPR_MAX_ARGS, .fn = fn_max },
	{ .name = "abs", .min_args = 1, .max_args = 1, .fn = fn_abs },
	{ .name = "pow", .min_args = 2, .max_args = 2, .fn = fn_pow },
	{ .name = "log2", .min_args = 1, .max_args = 1, .fn = fn_log2 },
	{ .name = "is_pow2", .min_args = 1, .max_args = 1, .fn = fn_is_pow2 },
};

static const struct func *find_func(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++)
		if (!strncmp(funcs[i].name, name, len) && !funcs[i].name[len])
			return &funcs[i];
	return NULL;
}

/* ---- arithmetic ---- */

static int apply_binary(struct parser *p, const struct token *op, int64_t a, int64_t b,
			int64_t *out)
{
	int64_t r = 0;
	int overflow = 0;

	switch (op->kind) {
	case '+': overflow = __builtin_add_overflow(a, b, &r); break;
	case '-': overflow = __builtin_sub_overflow(a, b, &r); break;
	case '*': overflow = __builtin_mul_overflow(a, b, &r); break;
	case '/':
		if (!b)
			return kerr_set(p->msg, p->n, KERR_RANGE, "division by zero at column %zu",
					col(op));
		overflow = a == INT64_MIN && b == -1;
		r = overflow ? 0 : a / b;
		break;
	case '%':
		if (!b)
			return kerr_set(p->msg, p->n, KERR_RANGE, "modulo by zero at column %zu",
					col(op));
		/* INT64_MIN % -1 is undefined in C; the true remainder is 0. */
		r = b == -1 ? 0 : a % b;
		break;
	case TK_EQ: r = a == b; break;
	case TK_NE: r = a != b; break;
	case '<': r = a < b; break;
	case TK_LE: r = a <= b; break;
	case '>': r = a > b; break;
	case TK_GE: r = a >= b; break;
	case TK_AND: r = a && b; break;
	case TK_OR: r = a || b; break;
	}
	if (overflow)
		return kerr_set(p->msg, p->n, KERR_RANGE, "overflow in '%.*s' at column %zu",
				(int)op->len, p->text + op->start, col(op));
	*out = r;
	return 0;
}

static int apply_unary(struct parser *p, const struct token *op, int64_t v, int64_t *out)
{
	switch (op->kind) {
	case '-':
		if (__builtin_sub_overflow((int64_t)0, v, out))
			return kerr_set(p->msg, p->n, KERR_RANGE, "overflow in '-' at column %zu",
					col(op));
		return 0;
	case '!': *out = !v; return 0;
	default: *out = v; return 0;
	}
}

/* ---- grammar ---- */

static int parse_expr(struct parser *p, int live, int64_t *out);

/* Parses the arguments after NAME '(' and calls the function when live. */
static int parse_call(struct parser *p, const struct token *name, int live, int64_t *out)
{
	const struct func *f = find_func(p->text + name->start, name->len);
	int64_t args[EXPR_MAX_ARGS] = { 0 };
	size_t nr = 0;
	int err;

	if (!f)
		return kerr_set(p->msg, p->n, KERR_PARSE, "unknown function '%.*s' at column %zu",
				(int)name->len, p->text + name->start, col(name));
	err = advance(p);
	while (!err) {
		if (nr == EXPR_MAX_ARGS)
			return kerr_set(p->msg, p->n, KERR_LIMIT,
					"more than %d arguments to '%s' at column %zu",
					EXPR_MAX_ARGS, f->name, col(name));
		err = parse_expr(p, live, &args[nr++]);
		if (err || p->tok.kind != ',')
			break;
		err = advance(p);
	}
	if (!err)
		err = expect(p, ')');
	if (!err && (nr < f->min_args || nr > f->max_args))
		err = kerr_set(p->msg, p->n, KERR_PARSE,
			       "'%s' takes %s%zu argument%s, got %zu at column %zu", f->name,
			       f->min_args == f->max_args ? "" : "at least ", f->min_args,
			       f->min_args == 1 ? "" : "s", nr, col(name));
	if (!err && live)
		err = f->fn(p, name, args, nr, out);
	else if (!err)
		*out = 0;
	return err;
}

static int parse_name(struct parser *p, int live, int64_t *out)
{
	struct token name = p->tok;
	int err = advance(p);

	if (err)
		return err;
	if (p->tok.kind == '(')
		return parse_call(p, &name, live, out);
	*out = 0;
	if (live && (!p->lookup || p->lookup(p->ctx, p->text + name.start, name.len, out)))
		return kerr_set(p->msg, p->n, KERR_NOTFOUND, "unknown name '%.*s' at column %zu",
				(int)name.len, p->text + name.start, col(&name));
	return 0;
}

static int parse_primary(struct parser *p, int live, int64_t *out)
{
	int err;

	switch (p->tok.kind) {
	case TK_NUM: *out = p->tok.value; return advance(p);
	case TK_NAME: return parse_name(p, live, out);
	case '(':
		err = advance(p);
		if (!err)
			err = parse_expr(p, live, out);
		if (!err)
			err = expect(p, ')');
		return err;
	default: return unexpected(p);
	}
}

static int parse_unary(struct parser *p, int live, int64_t *out)
{
	struct token op = p->tok;
	int64_t v = 0;
	int err;

	if (op.kind != '-' && op.kind != '+' && op.kind != '!')
		return parse_primary(p, live, out);
	err = enter(p);
	if (!err)
		err = advance(p);
	if (!err)
		err = parse_unary(p, live, &v);
	if (!err && live)
		err = apply_unary(p, &op, v, out);
	else if (!err)
		*out = 0;
	p->depth--;
	return err;
}

static int level_has(const struct binary_level *l, int kind)
{
	for (size_t i = 0; l->ops[i]; i++)
		if (l->ops[i] == kind)
			return 1;
	return 0;
}

/* Parses a left-associative chain of the operators at binary_levels[level]. */
static int parse_binary(struct parser *p, size_t level, int live, int64_t *out)
{
	int64_t lhs = 0, rhs = 0;
	int err;

	if (level == NR_LEVELS)
		return parse_unary(p, live, out);
	err = parse_binary(p, level + 1, live, &lhs);
	while (!err && level_has(&binary_levels[level], p->tok.kind)) {
		struct token op = p->tok;
		int rhs_live = live && !(op.kind == TK_AND && !lhs) && !(op.kind == TK_OR && lhs);

		err = advance(p);
		if (!err)
			err = parse_binary(p, level + 1, rhs_live, &rhs);
		if (!err && live)
			err = apply_binary(p, &op, lhs, rhs, &lhs);
	}
	if (!err)
		*out = lhs;
	return err;
}

static int parse_expr(struct parser *p, int live, int64_t *out)
{
	int64_t c = 0, a = 0, b = 0;
	int err = enter(p);

	if (!err)
		err = parse_binary(p, 0, live, &c);
	if (!err && p->tok.kind == '?') {
		err = advance(p);
		if (!err)
			err = parse_expr(p, live && c, &a);
		if (!err)
			err = expect(p, ':');
		if (!err)
			err = parse_expr(p, live && !c, &b);
		c = c ? a : b;
	}
	if (!err)
		*out = c;
	p->depth--;
	return err;
}

static int expr_run(const char *text, expr_lookup_fn lookup, void *ctx, int live, int64_t *out,
		    char *msg, size_t n)
{
	struct parser p = { .text = text, .lookup = lookup, .ctx = ctx, .msg = msg, .n = n };
	int64_t v = 0;
	int err;

	if (strnlen(text, EXPR_MAX_LEN + 1) > EXPR_MAX_LEN)
		return kerr_set(msg, n, KERR_LIMIT, "expression longer than %d bytes",
				EXPR_MAX_LEN);
	err = advance(&p);
	if (!err)
		err = parse_expr(&p, live, &v);
	if (!err && p.tok.kind != TK_END)
		err = unexpected(&p);
	if (!err && out)
		*out = v;
	return err;
}

int expr_eval(const char *text, expr_lookup_fn lookup, void *ctx, int64_t *out, char *msg, size_t n)
{
	return expr_run(text, lookup, ctx, 1, out, msg, n);
}

int expr_check(const char *text, char *msg, size_t n)
{
	/* A literal out of range or a limit is as fatal as bad syntax; one code keeps the contract. */
	return expr_run(text, NULL, NULL, 0, NULL, msg, n) ? KERR_PARSE : 0;
}

/* ---- expr_vars ---- */

/* FNV-1a of the len bytes of name. */
static size_t vars_hash(const char *name, size_t len)
{
	uint64_t h = 14695981039346656037u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * 1099511628211u;
	return (size_t)h;
}

/* The slot that holds name, or the empty one where it would go. */
static size_t *vars_slot(const struct expr_vars *vars, const char *name, size_t len)
{
	size_t mask = vars->nslot - 1, i = vars_hash(name, len) & mask;

	for (;; i = (i + 1) & mask) {
		size_t *s = &vars->slot[i];
		const char *have = *s ? vars->v[*s - 1].name : NULL;

		if (!have || (!strncmp(have, name, len) && !have[len]))
			return s;
	}
}

static struct expr_var *vars_find(const struct expr_vars *vars, const char *name, size_t len)
{
	size_t *s = vars->nslot ? vars_slot(vars, name, len) : NULL;

	return s && *s ? &vars->v[*s - 1] : NULL;
}

/* Keeps the index at most half full: rebuilt twice as large. */
static void vars_grow(struct expr_vars *vars)
{
	if (2 * (vars->nr + 1) <= vars->nslot)
		return;
	free(vars->slot);
	vars->nslot = vars->nslot ? 2 * vars->nslot : 16;
	vars->slot = xcalloc(vars->nslot, sizeof(*vars->slot));
	for (size_t i = 0; i < vars->nr; i++)
		*vars_slot(vars, vars->v[i].name, strlen(vars->v[i].name)) = i + 1;
}

void expr_vars_set(struct expr_vars *vars, const char *name, int64_t value)
{
	struct expr_var *v = vars_find(vars, name, strlen(name));

	if (v) {
		v->value = value;
		return;
	}
	vars_grow(vars);
	if (vars->nr == vars->alloc) {
		vars->alloc = vars->alloc ? vars->alloc * 2 : 8;
		vars->v = xreallocarray(vars->v, vars->alloc, sizeof(*vars->v));
	}
	vars->v[vars->nr].name = xstrdup(name);
	vars->v[vars->nr].value = value;
	vars->nr++;
	*vars_slot(vars, name, strlen(name)) = vars->nr;
}

int expr_vars_get(const struct expr_vars *vars, const char *name, int64_t *out)
{
	const struct expr_var *v = vars_find(vars, name, strlen(name));

	if (!v)
		return KERR_NOTFOUND;
	*out = v->value;
	return 0;
}

int expr_vars_lookup(void *vars, const char *name, size_t len, int64_t *out)
{
	const struct expr_var *v = vars_find(vars, name, len);

	if (!v)
		return KERR_NOTFOUND;
	*out = v->value;
	return 0;
}

void expr_vars_release(struct expr_vars *vars)
{
	for (size_t i = 0; i < vars->nr; i++)
		free(vars->v[i].name);
	free(vars->v);
	free(vars->slot);
	*vars = (struct expr_vars)EXPR_VARS_INIT;
}
