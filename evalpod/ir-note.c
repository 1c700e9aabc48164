/*
 * ir-note.c - the bookkeeping the code scanners share: the histogram of
 * vector widths, the names of functions found, and the JSON allocation
 * check.  Below ir.c and the scanners (ir-llvm.c, ir-ptx.c, ir-x86.c),
 * which all use it; declared in ir-internal.h.
 *
 * May use: ir-internal.h (struct ir_scan, struct span), Jansson; nothing
 * else of the module.
 */
#include "ir-internal.h"

#include <stdio.h>
#include <stdlib.h>

/* See ir-internal.h. */
json_t *ir_json_check(json_t *v)
{
	if (!v) {
		fprintf(stderr, "fatal: out of memory building a JSON value\n");
		abort();
	}
	return v;
}

/* See ir-internal.h. */
void ir_note_width(struct ir_scan *sc, long long width)
{
	char key[32];
	json_t *old;

	snprintf(key, sizeof(key), "%lld", width);
	old = json_object_get(sc->widths, key);
	json_object_set_new(sc->widths, key,
			    ir_json_check(json_integer(old ? json_integer_value(old) + 1 : 1)));
	if (width > sc->max_width)
		sc->max_width = width;
	sc->count[IRC_VECTOR_OPS]++;
}

/* See ir-internal.h. */
void ir_note_name(json_t *arr, struct span name)
{
	json_t *s;

	if (!name.n)
		return;
	s = json_stringn(name.p, name.n);
	if (s)
		json_array_append_new(arr, s);
}
