/*
 * expr-ops.c - what each operator and function of an expression computes,
 * with the error each can meet (division by zero, overflow, a domain), for
 * the parser's evaluation and for compiled programs alike (expr.c).
 */
#include "expr-internal.h"
#include "err.h"

#include <stdint.h>
#include <string.h>

/* ---- functions ---- */

static int func_error(struct parser *p, const struct token *name, int code, const char *reason)
{
	return kerr_set(p->msg, p->n, code, "%s in '%.*s' at column %zu", reason, (int)name->len,
			p->text + name->start, expr__col(name));
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

const struct func *expr__find_func(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++)
		if (!strncmp(funcs[i].name, name, len) && !funcs[i].name[len])
			return &funcs[i];
	return NULL;
}

/* ---- arithmetic ---- */

int expr__apply_binary(struct parser *p, const struct token *op, int64_t a, int64_t b, int64_t *out)
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
					expr__col(op));
		overflow = a == INT64_MIN && b == -1;
		r = overflow ? 0 : a / b;
		break;
	case '%':
		if (!b)
			return kerr_set(p->msg, p->n, KERR_RANGE, "modulo by zero at column %zu",
					expr__col(op));
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
				(int)op->len, p->text + op->start, expr__col(op));
	*out = r;
	return 0;
}

int expr__apply_unary(struct parser *p, const struct token *op, int64_t v, int64_t *out)
{
	switch (op->kind) {
	case '-':
		if (__builtin_sub_overflow((int64_t)0, v, out))
			return kerr_set(p->msg, p->n, KERR_RANGE, "overflow in '-' at column %zu",
					expr__col(op));
		return 0;
	case '!': *out = !v; return 0;
	default: *out = v; return 0;
	}
}
