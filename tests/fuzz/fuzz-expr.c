/*
 * fuzz-expr.c - integer expressions (common/expr.c): the syntax check and
 * the evaluation over a few names, on any bytes up to the first NUL.
 */
#include "expr.h"
#include "fuzz.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

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
	expr_vars_release(&vars);
	free(text);
	return 0;
}
