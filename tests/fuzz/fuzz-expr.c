/*
 * fuzz-expr.c - integer expressions (common/expr.c): the syntax check and
 * the evaluation over a few names, on any bytes up to the first NUL; and a
 * compiled program, which must give expr_eval's code, value and message
 * (it aborts where it does not).
 */
#include "expr.h"
#include "fuzz.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A name that vars lacks is unknown to the program too. */
static void compiled_agrees(const char *text, struct expr_vars *vars)
{
	struct expr_prog *p = NULL;
	char want_msg[512] = "", got_msg[512] = "";
	int64_t want = 0, got = 0, *vals;
	unsigned char *known;
	int want_err, got_err;
	size_t nn;

	if (expr_compile(text, &p, NULL, 0))
		return;
	nn = expr_prog_names(p);
	vals = xcalloc(nn + 1, sizeof(*vals));
	known = xcalloc(nn + 1, 1);
	for (size_t i = 0; i < nn; i++)
		known[i] = !expr_vars_get(vars, expr_prog_name(p, i), &vals[i]);
	want_err = expr_eval(text, expr_vars_lookup, vars, &want, want_msg, sizeof(want_msg));
	got_err = expr_prog_eval(p, vals, known, &got, got_msg, sizeof(got_msg));
	if (got_err != want_err || got != want || strcmp(got_msg, want_msg)) {
		fprintf(stderr, "compiled %d '%s', expr_eval %d '%s'\n", got_err, got_msg, want_err,
			want_msg);
		abort();
	}
	free(known);
	free(vals);
	expr_prog_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct {
		const char *name;
		int64_t value;
	} names[] = { { "N", 1024 },        { "M", 3 },           { "K", -7 },
		      { "BIG", INT64_MAX }, { "MIN", INT64_MIN }, { "Z", 0 } };
	struct expr_vars vars = EXPR_VARS_INIT;
	char *text = xmalloc(size + 1), msg[512];
	int64_t v;

	memcpy(text, data, size);
	text[size] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		expr_vars_set(&vars, names[i].name, names[i].value);
	expr_check(text, msg, sizeof(msg));
	expr_eval(text, expr_vars_lookup, &vars, &v, msg, sizeof(msg));
	expr_eval(text, NULL, NULL, &v, msg, sizeof(msg));
	compiled_agrees(text, &vars);
	expr_vars_release(&vars);
	free(text);
	return 0;
}
