#include "expr.h"
#include "err.h"
#include "test.h"
#include "arraysize.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct var_init {
	const char *name;
	int64_t value;
};

/* Up to four variables per case; with NO_VARS expr_eval gets a NULL lookup. */
#define NO_VARS                                                                                    \
	{                                                                                          \
		{                                                                                  \
			NULL, 0                                                                    \
		}                                                                                  \
	}

struct eval_case {
	const char *text;
	struct var_init vars[4];
	int64_t want;
};

struct error_case {
	const char *text;
	struct var_init vars[4];
	int code;
	const char *msg; /* a substring of the message */
};

struct check_case {
	const char *text;
	const char *msg; /* NULL: accepted; otherwise a substring of the rejection */
};

static const struct eval_case eval_cases[] = {
	/* precedence and associativity */
	{ "1 + 2 * 3", NO_VARS, 7 },
	{ "(1 + 2) * 3", NO_VARS, 9 },
	{ "10 - 4 - 3", NO_VARS, 3 },
	{ "100 / 10 / 5", NO_VARS, 2 },
	{ "7 % 4 * 3", NO_VARS, 9 },
	{ "-2 * 3", NO_VARS, -6 },
	{ "- -3", NO_VARS, 3 },
	{ "+5", NO_VARS, 5 },
	{ "-(2 + 3) * 2", NO_VARS, -10 },
	{ "!0", NO_VARS, 1 },
	{ "!7", NO_VARS, 0 },
	{ "!!7", NO_VARS, 1 },
	{ "-!0", NO_VARS, -1 },
	{ "1 + 2 < 4", NO_VARS, 1 },
	{ "1 < 2 == 1", NO_VARS, 1 },
	{ "3 > 2 > 1", NO_VARS, 0 },
	{ "1 < 2 + 3", NO_VARS, 1 },
	{ "2 * 3 == 6", NO_VARS, 1 },
	{ "1 + 2 == 3 && 4 > 3", NO_VARS, 1 },
	{ "0 == 1 || 2 < 1 + 2 * 3", NO_VARS, 1 },
	{ " \t1\n+\r2 ", NO_VARS, 3 },
	/* C truncation */
	{ "-7 / 2", NO_VARS, -3 },
	{ "-7 % 2", NO_VARS, -1 },
	{ "7 % -2", NO_VARS, 1 },
	{ "(-9223372036854775807 - 1) % -1", NO_VARS, 0 },
	/* comparisons */
	{ "2 <= 2", NO_VARS, 1 },
	{ "3 <= 2", NO_VARS, 0 },
	{ "2 >= 3", NO_VARS, 0 },
	{ "3 >= 3", NO_VARS, 1 },
	{ "2 < 2", NO_VARS, 0 },
	{ "3 > 2", NO_VARS, 1 },
	{ "2 != 3", NO_VARS, 1 },
	{ "2 == 3", NO_VARS, 0 },
	{ "-1 < 0", NO_VARS, 1 },
	/* logical operators, && binding tighter than || */
	{ "1 && 0", NO_VARS, 0 },
	{ "2 && 3", NO_VARS, 1 },
	{ "1 || 0", NO_VARS, 1 },
	{ "0 || 0", NO_VARS, 0 },
	{ "0 || -4", NO_VARS, 1 },
	{ "1 || 0 && 0", NO_VARS, 1 },
	{ "0 && 1 || 1", NO_VARS, 1 },
	/* the operand C would skip is not evaluated */
	{ "0 && 1 / 0", NO_VARS, 0 },
	{ "1 || 1 / 0", NO_VARS, 1 },
	{ "0 && UNDEFINED", NO_VARS, 0 },
	{ "1 ? 2 : 1 / 0", NO_VARS, 2 },
	{ "0 ? UNDEFINED : 3", NO_VARS, 3 },
	{ "N > 0 ? M / N : 0", { { "N", 0 }, { "M", 7 } }, 0 },
	{ "N > 0 ? M / N : 0", { { "N", 2 }, { "M", 7 } }, 3 },
	/* ternary */
	{ "1 ? 2 : 3", NO_VARS, 2 },
	{ "0 ? 2 : 3", NO_VARS, 3 },
	{ "0 ? 1 : 0 ? 2 : 3", NO_VARS, 3 },
	{ "0 ? 1 : 1 ? 2 : 3", NO_VARS, 2 },
	{ "1 ? 0 ? 4 : 5 : 6", NO_VARS, 5 },
	{ "1 - 1 ? 7 : 8", NO_VARS, 8 },
	{ "1 || 0 ? 7 : 8", NO_VARS, 7 },
	{ "TM * VN <= 128 ? 1 : 0", { { "TM", 16 }, { "VN", 8 } }, 1 },
	{ "TM * VN <= 128 ? 1 : 0", { { "TM", 32 }, { "VN", 8 } }, 0 },
	/* literals */
	{ "0", NO_VARS, 0 },
	{ "0u", NO_VARS, 0 },
	{ "0x10", NO_VARS, 16 },
	{ "0XfF", NO_VARS, 255 },
	{ "0x0", NO_VARS, 0 },
	{ "10u", NO_VARS, 10 },
	{ "10U", NO_VARS, 10 },
	{ "10l", NO_VARS, 10 },
	{ "10L", NO_VARS, 10 },
	{ "10ul", NO_VARS, 10 },
	{ "10Lu", NO_VARS, 10 },
	{ "10LL", NO_VARS, 10 },
	{ "10ll", NO_VARS, 10 },
	{ "10ull", NO_VARS, 10 },
	{ "10llu", NO_VARS, 10 },
	{ "10ULL", NO_VARS, 10 },
	{ "0x10UL", NO_VARS, 16 },
	{ "0xfu", NO_VARS, 15 },
	{ "9223372036854775807", NO_VARS, INT64_MAX },
	{ "0x7fffffffffffffff", NO_VARS, INT64_MAX },
	{ "-9223372036854775807 - 1", NO_VARS, INT64_MIN },
	/* names */
	{ "N", { { "N", 42 } }, 42 },
	{ "N_2 + _x", { { "N_2", 40 }, { "_x", 2 } }, 42 },
	{ "ceil_div(N, VN * WX) * WX", { { "N", 1000 }, { "VN", 4 }, { "WX", 16 } }, 256 },
	{ "abs + 1", { { "abs", 2 } }, 3 },
	{ "BIG - 1 + 1", { { "BIG", INT64_MAX } }, INT64_MAX },
	/* functions */
	{ "ceil_div(7, 2)", NO_VARS, 4 },
	{ "ceil_div(8, 2)", NO_VARS, 4 },
	{ "ceil_div(-7, 2)", NO_VARS, -3 },
	{ "ceil_div(7, -2)", NO_VARS, -3 },
	{ "ceil_div(-7, -2)", NO_VARS, 4 },
	{ "ceil_div(0, 5)", NO_VARS, 0 },
	{ "round_up(7, 4)", NO_VARS, 8 },
	{ "round_up(8, 4)", NO_VARS, 8 },
	{ "round_up(0, 4)", NO_VARS, 0 },
	{ "round_up(1, 1)", NO_VARS, 1 },
	{ "min(3, 1, 2)", NO_VARS, 1 },
	{ "min(-1, 5)", NO_VARS, -1 },
	{ "max(3, 1, 2)", NO_VARS, 3 },
	{ "max(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)", NO_VARS, 16 },
	{ "min (N, 3)", { { "N", 2 } }, 2 },
	{ "max(min(N, 10), 2)", { { "N", 50 } }, 10 },
	{ "abs(-5)", NO_VARS, 5 },
	{ "abs(5)", NO_VARS, 5 },
	{ "abs(0)", NO_VARS, 0 },
	{ "abs(-9223372036854775807)", NO_VARS, INT64_MAX },
	{ "pow(2, 10)", NO_VARS, 1024 },
	{ "pow(3, 0)", NO_VARS, 1 },
	{ "pow(0, 0)", NO_VARS, 1 },
	{ "pow(0, 5)", NO_VARS, 0 },
	{ "pow(-3, 3)", NO_VARS, -27 },
	{ "pow(2, 62)", NO_VARS, INT64_C(4611686018427387904) },
	{ "pow(-2, 63)", NO_VARS, INT64_MIN },
	{ "pow(1, 1000000000000)", NO_VARS, 1 },
	{ "pow(-1, 1000001)", NO_VARS, -1 },
	{ "log2(1)", NO_VARS, 0 },
	{ "log2(1024)", NO_VARS, 10 },
	{ "log2(1023)", NO_VARS, 9 },
	{ "log2(0x7fffffffffffffff)", NO_VARS, 62 },
	{ "is_pow2(1)", NO_VARS, 1 },
	{ "is_pow2(64)", NO_VARS, 1 },
	{ "is_pow2(96)", NO_VARS, 0 },
	{ "is_pow2(0)", NO_VARS, 0 },
	{ "is_pow2(-8)", NO_VARS, 0 },
	{ "is_pow2(-9223372036854775807 - 1)", NO_VARS, 0 },
};

static const struct error_case error_cases[] = {
	/* syntax */
	{ "", NO_VARS, KERR_PARSE, "unexpected end of expression at column 1" },
	{ "   ", NO_VARS, KERR_PARSE, "unexpected end of expression at column 4" },
	{ "1 +", NO_VARS, KERR_PARSE, "unexpected end of expression at column 4" },
	{ "(1 + 2", NO_VARS, KERR_PARSE, "expected ')' at column 7" },
	{ "(1 + 2))", NO_VARS, KERR_PARSE, "unexpected ')' at column 8" },
	{ "1 + 2)", NO_VARS, KERR_PARSE, "unexpected ')' at column 6" },
	{ "()", NO_VARS, KERR_PARSE, "unexpected ')' at column 2" },
	{ "1 2", NO_VARS, KERR_PARSE, "unexpected '2' at column 3" },
	{ "1 N", { { "N", 1 } }, KERR_PARSE, "unexpected 'N' at column 3" },
	{ "* 2", NO_VARS, KERR_PARSE, "unexpected '*' at column 1" },
	{ "1 +* 2", NO_VARS, KERR_PARSE, "unexpected '*' at column 4" },
	{ "1 = 2", NO_VARS, KERR_PARSE, "unexpected '=' at column 3" },
	{ "1 & 2", NO_VARS, KERR_PARSE, "unexpected '&' at column 3" },
	{ "1 | 2", NO_VARS, KERR_PARSE, "unexpected '|' at column 3" },
	{ "1 ^ 2", NO_VARS, KERR_PARSE, "unexpected '^' at column 3" },
	{ "1.5", NO_VARS, KERR_PARSE, "unexpected '.' at column 2" },
	{ "1 + @", NO_VARS, KERR_PARSE, "unexpected '@' at column 5" },
	{ "1 + \x01", NO_VARS, KERR_PARSE, "unexpected byte 0x01 at column 5" },
	{ "1 ? 2", NO_VARS, KERR_PARSE, "expected ':' at column 6" },
	{ "1 ? 2 , 3", NO_VARS, KERR_PARSE, "expected ':' at column 7" },
	{ "min(1 2)", NO_VARS, KERR_PARSE, "expected ')' at column 7" },
	{ "min(1, 2", NO_VARS, KERR_PARSE, "expected ')' at column 9" },
	{ "min()", NO_VARS, KERR_PARSE, "unexpected ')' at column 5" },
	{ "min(1,)", NO_VARS, KERR_PARSE, "unexpected ')' at column 7" },
	/* literals */
	{ "12abc", NO_VARS, KERR_PARSE, "invalid suffix on integer literal '12abc' at column 1" },
	{ "10uu", NO_VARS, KERR_PARSE, "invalid suffix on integer literal '10uu'" },
	{ "10lL", NO_VARS, KERR_PARSE, "invalid suffix on integer literal '10lL'" },
	{ "10lul", NO_VARS, KERR_PARSE, "invalid suffix" },
	{ "10lll", NO_VARS, KERR_PARSE, "invalid suffix" },
	{ "1e5", NO_VARS, KERR_PARSE, "invalid suffix on integer literal '1e5'" },
	{ "0x", NO_VARS, KERR_PARSE, "invalid integer literal '0x' at column 1" },
	{ "2 + 0xg", NO_VARS, KERR_PARSE, "invalid integer literal '0xg' at column 5" },
	{ "012", NO_VARS, KERR_PARSE, "octal literal '012' not supported at column 1" },
	{ "09", NO_VARS, KERR_PARSE, "octal literal '09'" },
	{ "9223372036854775808", NO_VARS, KERR_RANGE,
	  "integer literal '9223372036854775808' out of range at column 1" },
	{ "-9223372036854775808", NO_VARS, KERR_RANGE, "out of range at column 2" },
	{ "0x10000000000000000", NO_VARS, KERR_RANGE, "out of range" },
	{ "0xffffffffffffffffu", NO_VARS, KERR_RANGE, "out of range" },
	/* names and functions */
	{ "TM", NO_VARS, KERR_NOTFOUND, "unknown name 'TM' at column 1" },
	{ "1 + TM", { { "T", 1 }, { "TMX", 2 } }, KERR_NOTFOUND, "unknown name 'TM' at column 5" },
	{ "1 ? TM : 0", { { "N", 1 } }, KERR_NOTFOUND, "unknown name 'TM' at column 5" },
	{ "foo(1)", NO_VARS, KERR_PARSE, "unknown function 'foo' at column 1" },
	{ "N(1)", { { "N", 1 } }, KERR_PARSE, "unknown function 'N' at column 1" },
	{ "abs(1, 2)", NO_VARS, KERR_PARSE, "'abs' takes 1 argument, got 2 at column 1" },
	{ "1 + ceil_div(1)", NO_VARS, KERR_PARSE,
	  "'ceil_div' takes 2 arguments, got 1 at column 5" },
	{ "min(1)", NO_VARS, KERR_PARSE, "'min' takes at least 2 arguments, got 1 at column 1" },
	{ "max(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17)", NO_VARS, KERR_LIMIT,
	  "more than 16 arguments to 'max' at column 1" },
	/* division */
	{ "1 / 0", NO_VARS, KERR_RANGE, "division by zero at column 3" },
	{ "N / ZERO", { { "N", 1 }, { "ZERO", 0 } }, KERR_RANGE, "division by zero at column 3" },
	{ "1 % 0", NO_VARS, KERR_RANGE, "modulo by zero at column 3" },
	{ "5 % (2 - 2)", NO_VARS, KERR_RANGE, "modulo by zero at column 3" },
	{ "0 ? 2 : 1/0", NO_VARS, KERR_RANGE, "division by zero at column 10" },
	{ "1 && 1/0", NO_VARS, KERR_RANGE, "division by zero at column 7" },
	{ "0 || 1%0", NO_VARS, KERR_RANGE, "modulo by zero at column 7" },
	{ "ceil_div(1, 0)", NO_VARS, KERR_RANGE, "division by zero in 'ceil_div' at column 1" },
	{ "round_up(1, 0)", NO_VARS, KERR_RANGE, "division by zero in 'round_up' at column 1" },
	/* overflow */
	{ "9223372036854775807 + 1", NO_VARS, KERR_RANGE, "overflow in '+' at column 21" },
	{ "-9223372036854775807 - 2", NO_VARS, KERR_RANGE, "overflow in '-' at column 22" },
	{ "4611686018427387904 * 2", NO_VARS, KERR_RANGE, "overflow in '*' at column 21" },
	{ "BIG * BIG", { { "BIG", INT64_MAX } }, KERR_RANGE, "overflow in '*' at column 5" },
	{ "(-9223372036854775807 - 1) / -1", NO_VARS, KERR_RANGE, "overflow in '/' at column 28" },
	{ "-(-9223372036854775807 - 1)", NO_VARS, KERR_RANGE, "overflow in '-' at column 1" },
	{ "-SMALL", { { "SMALL", INT64_MIN } }, KERR_RANGE, "overflow in '-' at column 1" },
	{ "ceil_div(-9223372036854775807 - 1, -1)", NO_VARS, KERR_RANGE, "overflow in 'ceil_div'" },
	{ "round_up(9223372036854775807, 2)", NO_VARS, KERR_RANGE, "overflow in 'round_up'" },
	{ "abs(-9223372036854775807 - 1)", NO_VARS, KERR_RANGE, "overflow in 'abs' at column 1" },
	{ "pow(2, 63)", NO_VARS, KERR_RANGE, "overflow in 'pow' at column 1" },
	{ "pow(3, 40)", NO_VARS, KERR_RANGE, "overflow in 'pow'" },
	{ "pow(-2, 64)", NO_VARS, KERR_RANGE, "overflow in 'pow'" },
	/* domains */
	{ "pow(2, -1)", NO_VARS, KERR_RANGE, "negative exponent in 'pow' at column 1" },
	{ "log2(0)", NO_VARS, KERR_RANGE, "non-positive argument in 'log2' at column 1" },
	{ "log2(-4)", NO_VARS, KERR_RANGE, "non-positive argument in 'log2'" },
};

static const struct check_case check_cases[] = {
	{ "TM * VN <= 128", NULL },
	{ "ceil_div(N, VN * WX) * WX", NULL },
	{ "UNKNOWN / 0", NULL },
	{ "pow(2, 64) + 1 % 0", NULL },
	{ "A ? B : C ? D : E", NULL },
	{ "min(A, B, C) && !D || -E", NULL },
	{ "0x10UL + 3u", NULL },
	{ "", "unexpected end of expression at column 1" },
	{ "1 +", "unexpected end of expression at column 4" },
	{ "(A", "expected ')' at column 3" },
	{ "A B", "unexpected 'B' at column 3" },
	{ "A ? B", "expected ':' at column 6" },
	{ "foo(A)", "unknown function 'foo' at column 1" },
	{ "min(A)", "'min' takes at least 2 arguments, got 1" },
	{ "12abc", "invalid suffix" },
	{ "9223372036854775808", "out of range" },
	{ "A $ B", "unexpected '$' at column 3" },
};

static void load_vars(struct expr_vars *vars, const struct var_init *init, size_t max)
{
	for (size_t i = 0; i < max && init[i].name; i++)
		expr_vars_set(vars, init[i].name, init[i].value);
}

static int eval_with(const char *text, const struct var_init *init, size_t max, int64_t *out,
		     char *msg, size_t n)
{
	struct expr_vars vars = EXPR_VARS_INIT;
	int err;

	load_vars(&vars, init, max);
	if (vars.nr)
		err = expr_eval(text, expr_vars_lookup, &vars, out, msg, n);
	else
		err = expr_eval(text, NULL, NULL, out, msg, n);
	expr_vars_release(&vars);
	return err;
}

TEST(eval_table)
{
	for (size_t i = 0; i < ARRAY_SIZE(eval_cases); i++) {
		const struct eval_case *c = &eval_cases[i];
		int before = test_failed_checks;
		char msg[256] = "";
		int64_t got = -12345;
		int err = eval_with(c->text, c->vars, ARRAY_SIZE(c->vars), &got, msg, sizeof(msg));

		CHECK(err == 0);
		CHECK(got == c->want);
		if (test_failed_checks != before)
			fprintf(stderr, "  case \"%s\": err %d (%s), got %lld, want %lld\n",
				c->text, err, msg, (long long)got, (long long)c->want);
	}
}

TEST(error_table)
{
	for (size_t i = 0; i < ARRAY_SIZE(error_cases); i++) {
		const struct error_case *c = &error_cases[i];
		int before = test_failed_checks;
		char msg[256] = "";
		int64_t got = -12345;
		int err = eval_with(c->text, c->vars, ARRAY_SIZE(c->vars), &got, msg, sizeof(msg));

		CHECK(err == c->code);
		CHECK_CONTAINS(msg, c->msg);
		CHECK(got == -12345); /* *out is left alone on failure */
		if (test_failed_checks != before)
			fprintf(stderr, "  case \"%s\": err %d (%s)\n", c->text, err,
				kerr_str(err));
	}
}

TEST(check_table)
{
	for (size_t i = 0; i < ARRAY_SIZE(check_cases); i++) {
		const struct check_case *c = &check_cases[i];
		int before = test_failed_checks;
		char msg[256] = "";
		int err = expr_check(c->text, msg, sizeof(msg));

		if (c->msg) {
			CHECK(err == KERR_PARSE);
			CHECK_CONTAINS(msg, c->msg);
		} else {
			CHECK(err == 0);
		}
		if (test_failed_checks != before)
			fprintf(stderr, "  case \"%s\": err %d, msg \"%s\"\n", c->text, err, msg);
	}
}

/* Returns a malloc'd string of count copies of open, then mid, then count copies of close. */
static char *nest(size_t count, const char *open, const char *mid, const char *close)
{
	size_t lo = strlen(open), lm = strlen(mid), lc = strlen(close);
	char *s = malloc(count * (lo + lc) + lm + 1), *q = s;

	if (!s)
		abort();
	for (size_t i = 0; i < count; i++, q += lo)
		memcpy(q, open, lo);
	memcpy(q, mid, lm);
	q += lm;
	for (size_t i = 0; i < count; i++, q += lc)
		memcpy(q, close, lc);
	*q = '\0';
	return s;
}

TEST(depth_limit)
{
	static const struct {
		size_t count;
		const char *open, *close;
		int code;
	} cases[] = {
		{ 63, "(", ")", 0 },
		{ 64, "(", ")", KERR_LIMIT },
		{ 1000, "(", ")", KERR_LIMIT },
		{ 63, "-", "", 0 },
		{ 64, "!", "", KERR_LIMIT },
		{ 1000, "-", "", KERR_LIMIT },
		{ 63, "abs(", ")", 0 },
		{ 200, "max(1, ", ")", KERR_LIMIT },
		{ 200, "1 ? 1 : ", "", KERR_LIMIT },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *text = nest(cases[i].count, cases[i].open, "7", cases[i].close);
		char msg[256] = "";
		int64_t got = 0;
		int err = expr_eval(text, NULL, NULL, &got, msg, sizeof(msg));
		int before = test_failed_checks;

		CHECK(err == cases[i].code);
		if (cases[i].code) {
			CHECK_CONTAINS(msg, "expression nested deeper than 64 at column");
			CHECK(expr_check(text, msg, sizeof(msg)) == KERR_PARSE);
			CHECK_CONTAINS(msg, "nested deeper than 64");
		} else {
			CHECK(got == 7 || got == -7);
			CHECK(expr_check(text, msg, sizeof(msg)) == 0);
		}
		if (test_failed_checks != before)
			fprintf(stderr, "  case %zu x \"%s\": err %d, msg \"%s\"\n", cases[i].count,
				cases[i].open, err, msg);
		free(text);
	}
}

TEST(length_limit)
{
	char *text = malloc(4098);
	char msg[256] = "";
	int64_t got = 0;

	if (!text)
		abort();
	memset(text, ' ', 4097);
	text[0] = '1';
	text[4096] = '\0'; /* exactly 4096 bytes: accepted */
	CHECK(expr_eval(text, NULL, NULL, &got, msg, sizeof(msg)) == 0);
	CHECK(got == 1);
	CHECK(expr_check(text, msg, sizeof(msg)) == 0);

	text[4096] = ' ';
	text[4097] = '\0'; /* 4097 bytes */
	CHECK(expr_eval(text, NULL, NULL, &got, msg, sizeof(msg)) == KERR_LIMIT);
	CHECK_CONTAINS(msg, "expression longer than 4096 bytes");
	CHECK(expr_check(text, msg, sizeof(msg)) == KERR_PARSE);
	CHECK_CONTAINS(msg, "longer than 4096 bytes");
	free(text);
}

TEST(message_buffer)
{
	char small[8];
	int64_t got = 5;

	/* msg may be NULL; the code still comes back. */
	CHECK(expr_eval("1 / 0", NULL, NULL, &got, NULL, 0) == KERR_RANGE);
	CHECK(expr_check("1 +", NULL, 0) == KERR_PARSE);
	CHECK(got == 5);

	/* A short buffer is truncated, not overrun. */
	memset(small, 'x', sizeof(small));
	CHECK(expr_eval("1 + TM", NULL, NULL, &got, small, sizeof(small)) == KERR_NOTFOUND);
	CHECK_STR(small, "unknown");
}

TEST(vars_set_get_replace)
{
	struct expr_vars vars = EXPR_VARS_INIT;
	int64_t v = 0;

	CHECK(expr_vars_get(&vars, "TM", &v) != 0);
	expr_vars_set(&vars, "TM", 4);
	expr_vars_set(&vars, "VN", 8);
	CHECK(vars.nr == 2);
	CHECK(expr_vars_get(&vars, "TM", &v) == 0 && v == 4);
	CHECK(expr_vars_get(&vars, "VN", &v) == 0 && v == 8);

	expr_vars_set(&vars, "TM", -3);
	CHECK(vars.nr == 2);
	CHECK(expr_vars_get(&vars, "TM", &v) == 0 && v == -3);

	v = 99;
	CHECK(expr_vars_get(&vars, "T", &v) != 0);
	CHECK(expr_vars_get(&vars, "TMX", &v) != 0);
	CHECK(v == 99);

	CHECK(expr_eval("TM * VN", expr_vars_lookup, &vars, &v, NULL, 0) == 0 && v == -24);

	expr_vars_release(&vars);
	CHECK(vars.nr == 0 && vars.alloc == 0 && vars.v == NULL);
	expr_vars_release(&vars); /* releasing twice is harmless */
}

TEST(vars_lookup_lengths)
{
	struct expr_vars vars = EXPR_VARS_INIT;
	int64_t v = 0;

	expr_vars_set(&vars, "TM", 4);
	/* The name is not NUL-terminated: only len bytes count. */
	CHECK(expr_vars_lookup(&vars, "TMX", 2, &v) == 0 && v == 4);
	CHECK(expr_vars_lookup(&vars, "TMX", 3, &v) != 0);
	CHECK(expr_vars_lookup(&vars, "TM", 1, &v) != 0);
	expr_vars_release(&vars);
}

/*
 * Many names (a source with 100,000 #defines, as a hostile candidate may
 * send): every one found with its last value, kept in the order first set,
 * and the index at most half full, so a lookup stays short.  With a list
 * walked per lookup this took minutes under ASan.
 */
TEST(vars_growth)
{
	enum { NAMES = 100000 };
	struct expr_vars vars = EXPR_VARS_INIT;
	char name[16], text[64];
	int64_t v = 0;
	int ordered = 1, found = 1;

	for (int i = 0; i < NAMES; i++) {
		snprintf(name, sizeof(name), "V%d", i);
		expr_vars_set(&vars, name, i * 10);
	}
	for (int i = 0; i < NAMES; i += 2) {
		snprintf(name, sizeof(name), "V%d", i);
		expr_vars_set(&vars, name, -i);
	}
	CHECK(vars.nr == NAMES);
	CHECK(vars.alloc >= NAMES);
	CHECK(vars.nslot >= 2 * vars.nr && (vars.nslot & (vars.nslot - 1)) == 0);
	for (int i = 0; i < NAMES; i++) {
		snprintf(name, sizeof(name), "V%d", i);
		ordered = ordered && !strcmp(vars.v[i].name, name);
		found = found && expr_vars_get(&vars, name, &v) == 0 && v == (i % 2 ? i * 10 : -i);
	}
	CHECK(ordered);
	CHECK(found);
	for (int i = 0; i < 100; i++) {
		snprintf(text, sizeof(text), "V%d + 0", i);
		CHECK(expr_eval(text, expr_vars_lookup, &vars, &v, NULL, 0) == 0);
		CHECK(v == (i % 2 ? i * 10 : -i));
	}
	CHECK(expr_vars_get(&vars, "V100000", &v) != 0 && expr_vars_get(&vars, "V", &v) != 0);
	expr_vars_release(&vars);
	CHECK(vars.nr == 0 && vars.slot == NULL && vars.nslot == 0);
}

/* ---- compiled programs: the same answers as expr_eval ---- */

/*
 * Compiles text and, when that succeeds, evaluates the program with the
 * values vars holds (a name it lacks unknown) and checks that the code,
 * the value and the message are expr_eval's.  When compiling fails,
 * expr_check must fail too and expr_eval must not succeed.  Returns 1
 * when it compiled.
 */
static int same_as_eval(const char *text, const struct expr_vars *vars)
{
	struct expr_prog *p = NULL;
	char want_msg[256] = "", got_msg[256] = "", cmsg[256] = "";
	int64_t want = -777, got = -777, vals[64];
	unsigned char known[64];
	int want_err, got_err, cerr = expr_compile(text, &p, cmsg, sizeof(cmsg));

	want_err =
		expr_eval(text, expr_vars_lookup, (void *)vars, &want, want_msg, sizeof(want_msg));
	if (cerr) {
		CHECK(p == NULL && cmsg[0]);
		CHECK(expr_check(text, NULL, 0) == KERR_PARSE);
		CHECK(want_err != 0);
		return 0;
	}
	CHECK(expr_prog_names(p) <= 64);
	for (size_t i = 0; i < expr_prog_names(p) && i < 64; i++)
		known[i] = !expr_vars_get(vars, expr_prog_name(p, i), &vals[i]);
	CHECK(expr_prog_name(p, expr_prog_names(p)) == NULL);
	got_err = expr_prog_eval(p, vals, known, &got, got_msg, sizeof(got_msg));
	if (got_err != want_err || got != want || strcmp(got_msg, want_msg)) {
		fprintf(stderr, "'%s': compiled %d %lld '%s', expr_eval %d %lld '%s'\n", text,
			got_err, (long long)got, got_msg, want_err, (long long)want, want_msg);
		test_failed_checks++;
	}
	expr_prog_free(p);
	return 1;
}

TEST(compiled_tables)
{
	for (size_t i = 0; i < ARRAY_SIZE(eval_cases); i++) {
		struct expr_vars vars = EXPR_VARS_INIT;

		load_vars(&vars, eval_cases[i].vars, ARRAY_SIZE(eval_cases[i].vars));
		CHECK(same_as_eval(eval_cases[i].text, &vars));
		expr_vars_release(&vars);
	}
	for (size_t i = 0; i < ARRAY_SIZE(error_cases); i++) {
		struct expr_vars vars = EXPR_VARS_INIT;

		load_vars(&vars, error_cases[i].vars, ARRAY_SIZE(error_cases[i].vars));
		same_as_eval(error_cases[i].text, &vars);
		expr_vars_release(&vars);
	}
	for (size_t i = 0; i < ARRAY_SIZE(check_cases); i++)
		CHECK(same_as_eval(check_cases[i].text, &(struct expr_vars)EXPR_VARS_INIT) ==
		      !check_cases[i].msg);
}

struct gen {
	uint64_t rng;
	char buf[4096];
	size_t len;
};

static size_t gen_below(struct gen *g, size_t n)
{
	g->rng = g->rng * 6364136223846793005ull + 1442695040888963407ull;
	return (size_t)(g->rng >> 33) % n;
}

static void gen_put(struct gen *g, const char *s)
{
	size_t n = strlen(s);

	if (g->len + n < sizeof(g->buf) - 1) {
		memcpy(g->buf + g->len, s, n);
		g->len += n;
		g->buf[g->len] = '\0';
	}
}

/* A random expression, mostly well formed, over the names of compiled_random. */
static void gen_expr(struct gen *g, int depth)
{
	static const char *const leaves[] = { "0",   "1",   "2",    "3",
					      "7",   "64",  "0x10", "9223372036854775807",
					      "A",   "B",   "C",    "Z",
					      "MIN", "MAX", "U" };
	static const char *const ops[] = { "+", "-",  "*", "/",  "%",  "==", "!=",
					   "<", "<=", ">", ">=", "&&", "||" };
	static const char *const unary[] = { "-", "+", "!" };
	static const struct {
		const char *name;
		int args;
	} calls[] = { { "ceil_div", 2 }, { "round_up", 2 }, { "min", 3 },  { "max", 2 },
		      { "abs", 1 },      { "pow", 2 },      { "log2", 1 }, { "is_pow2", 1 } };
	size_t pick = depth > 5 ? 0 : gen_below(g, 6);

	switch (pick) {
	case 0: gen_put(g, leaves[gen_below(g, ARRAY_SIZE(leaves))]); break;
	case 1:
		gen_expr(g, depth + 1);
		gen_put(g, " ");
		gen_put(g, ops[gen_below(g, ARRAY_SIZE(ops))]);
		gen_put(g, " ");
		gen_expr(g, depth + 1);
		break;
	case 2:
		gen_put(g, unary[gen_below(g, ARRAY_SIZE(unary))]);
		gen_expr(g, depth + 1);
		break;
	case 3:
		gen_put(g, "(");
		gen_expr(g, depth + 1);
		gen_put(g, gen_below(g, 50) ? ")" : "");
		break;
	case 4:
		gen_expr(g, depth + 1);
		gen_put(g, " ? ");
		gen_expr(g, depth + 1);
		gen_put(g, " : ");
		gen_expr(g, depth + 1);
		break;
	default: {
		size_t c = gen_below(g, ARRAY_SIZE(calls));
		int args = calls[c].args + (gen_below(g, 40) ? 0 : 1);

		gen_put(g, calls[c].name);
		gen_put(g, "(");
		for (int a = 0; a < args; a++) {
			gen_put(g, a ? ", " : "");
			gen_expr(g, depth + 1);
		}
		gen_put(g, ")");
	}
	}
}

/*
 * Random expressions over every operator and function, with values at the
 * edges of int64 and one name (U) without a value: the compiled program
 * gives expr_eval's value, or its error and message, for each.
 */
TEST(compiled_random)
{
	struct expr_vars vars = EXPR_VARS_INIT;
	struct gen g = { .rng = 1 };
	int compiled = 0, failed_eval = 0;

	expr_vars_set(&vars, "A", 3);
	expr_vars_set(&vars, "B", -5);
	expr_vars_set(&vars, "C", 64);
	expr_vars_set(&vars, "Z", 0);
	expr_vars_set(&vars, "MIN", INT64_MIN);
	expr_vars_set(&vars, "MAX", INT64_MAX);
	for (int i = 0; i < 20000; i++) {
		int64_t v;

		g.len = 0;
		g.buf[0] = '\0';
		gen_expr(&g, 0);
		compiled += same_as_eval(g.buf, &vars);
		failed_eval += expr_eval(g.buf, expr_vars_lookup, &vars, &v, NULL, 0) != 0;
	}
	/* both outcomes were tried many times */
	CHECK(compiled > 15000);
	CHECK(failed_eval > 2000 && failed_eval < 18000);
	expr_vars_release(&vars);
}

/* A chain of 2,000 operators is a loop, not 2,000 nested calls; a NULL known means all known. */
TEST(compiled_long_chain)
{
	char text[4097];
	struct expr_prog *p = NULL;
	int64_t one = 1, v = 0;
	size_t len = 0;

	while (len + 4 < sizeof(text) - 1)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%sX", len ? "+" : "");
	CHECK(expr_compile(text, &p, NULL, 0) == 0);
	CHECK(p && expr_prog_names(p) == 1);
	CHECK(p && expr_prog_eval(p, &one, NULL, &v, NULL, 0) == 0 && v == (int64_t)(len + 1) / 2);
	expr_prog_free(p);
	expr_prog_free(NULL);
	CHECK(expr_compile("1 +", &p, NULL, 0) == KERR_PARSE && p == NULL);
}

int main(void)
{
	RUN(eval_table);
	RUN(error_table);
	RUN(check_table);
	RUN(depth_limit);
	RUN(length_limit);
	RUN(message_buffer);
	RUN(vars_set_get_replace);
	RUN(vars_lookup_lengths);
	RUN(vars_growth);
	RUN(compiled_tables);
	RUN(compiled_random);
	RUN(compiled_long_chain);
	return test_summary();
}
