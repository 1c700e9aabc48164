/*
 * prompt-text.c - the small renderers every prompt is written with: typed
 * reads of the context document (absent or mistyped members are skipped),
 * one-line and indented text cut at a byte limit on a UTF-8 boundary, code
 * blocks, figures, percentages, sorted key lists, parameters, tunables and
 * a variant's blocks in the template's order.
 *
 * May use: sbuf, jansson, mutate (a template's blocks) and common/.  Knows
 * nothing of prompts, parts or trimming (prompt.c, prompt-brief.c,
 * prompt-reflect.c use it).
 */
#include "prompt-internal.h"
#include "mutate.h"
#include "sbuf.h"
#include "xalloc.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* --- reading the context: absent or mistyped members are skipped -------- */

const char *prompt_str_of(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* 1 with *out set when o.key is a finite number. */
int prompt_num_of(json_t *o, const char *key, double *out)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_number(v) || !isfinite(json_number_value(v)))
		return 0;
	*out = json_number_value(v);
	return 1;
}

json_int_t prompt_int_of(json_t *o, const char *key, json_int_t dflt)
{
	json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/* --- text helpers -------------------------------------------------------- */

/* The largest cut <= max (< strlen(s)) that does not split a UTF-8 sequence. */
size_t prompt_utf8_cut(const char *s, size_t max)
{
	while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
		max--;
	return max;
}

/* s on one line: line breaks and tabs become spaces, cut at max bytes with "...". */
void add_oneline(struct sbuf *b, const char *s, size_t max)
{
	size_t n = strlen(s), cut = n > max ? prompt_utf8_cut(s, max) : n;

	for (size_t i = 0; i < cut; i++)
		sbuf_addch(b, s[i] == '\n' || s[i] == '\r' || s[i] == '\t' ? ' ' : s[i]);
	if (cut < n)
		sbuf_adds(b, "...");
}

/* Multi-line s, each non-empty line after indent, cut at max bytes with a note. */
void add_indented(struct sbuf *b, const char *s, size_t max, const char *indent)
{
	size_t n = strlen(s), cut = n > max ? prompt_utf8_cut(s, max) : n, i = 0;

	while (i < cut) {
		const char *nl = memchr(s + i, '\n', cut - i);
		size_t e = nl ? (size_t)(nl - s) : cut;

		if (e > i && s[e - 1] == '\r')
			e--;
		if (e > i) {
			sbuf_adds(b, indent);
			sbuf_add(b, s + i, e - i);
		}
		sbuf_addch(b, '\n');
		i = nl ? (size_t)(nl - s) + 1 : cut;
	}
	if (cut < n)
		sbuf_addf(b, "%s[%zu more bytes left out]\n", indent, n - cut);
}

/* Source text in a fenced block. */
void add_code(struct sbuf *b, const char *s)
{
	size_t n = strlen(s);

	sbuf_adds(b, "```c\n");
	sbuf_add(b, s, n);
	if (n && s[n - 1] != '\n')
		sbuf_addch(b, '\n');
	sbuf_adds(b, "```\n");
}

/*
 * tmpl in a fenced block, the body of each block between its start and end
 * marker lines replaced by the line stand, indented as its start marker.
 * Returns 0, or -1 with nothing appended when tmpl's blocks cannot be
 * found (blocks_find says why).
 */
int add_code_without_blocks(struct sbuf *b, const char *tmpl, const char *start, const char *end,
			    const char *stand)
{
	struct blocks bl = { 0 };
	struct sbuf t = SBUF_INIT;
	size_t at = 0;
	char why[256];

	if (blocks_find(tmpl, start, end, &bl, why, sizeof(why)))
		return -1;
	for (size_t i = 0; i < bl.n; i++) {
		sbuf_add(&t, tmpl + at, bl.b[i].start - at);
		sbuf_addf(&t, "%s%s\n", bl.b[i].indent, stand);
		at = bl.b[i].end;
	}
	sbuf_adds(&t, tmpl + at);
	add_code(b, t.buf);
	sbuf_release(&t);
	blocks_release(&bl);
	return 0;
}

/* A measured figure: 4 significant digits, whole numbers from 1000 on. */
void add_fig(struct sbuf *b, double v)
{
	double a = fabs(v);

	if (a >= 1000 && a < 1e15)
		sbuf_addf(b, "%.0f", v);
	else
		sbuf_addf(b, "%.4g", v);
}

/* A fraction as a percentage with one decimal. */
void add_pct(struct sbuf *b, double f)
{
	sbuf_addf(b, "%.1f%%", 100.0 * f);
}

void add_scalar(struct sbuf *b, json_t *v)
{
	if (json_is_integer(v)) {
		sbuf_addf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	} else if (json_is_real(v)) {
		add_fig(b, json_real_value(v));
	} else if (json_is_string(v)) {
		add_oneline(b, json_string_value(v), LINE_MAX_BYTES);
	} else if (json_is_boolean(v)) {
		sbuf_adds(b, json_is_true(v) ? "true" : "false");
	} else if (v && !json_is_null(v)) {
		char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);

		add_oneline(b, s ? s : "?", LINE_MAX_BYTES);
		free(s);
	} else {
		sbuf_adds(b, "null");
	}
}

/* The elements of arr joined by sep. */
void add_joined(struct sbuf *b, json_t *arr, const char *sep)
{
	size_t i;
	json_t *v;

	json_array_foreach (arr, i, v) {
		if (i)
			sbuf_adds(b, sep);
		add_scalar(b, v);
	}
}

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/* Keys in order: by value when both are digit strings, else bytewise. */
static int key_cmp(const void *pa, const void *pb)
{
	const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;

	if (all_digits(a) && all_digits(b)) {
		const char *x = a, *y = b;
		size_t lx, ly;
		int c;

		while (*x == '0' && x[1])
			x++;
		while (*y == '0' && y[1])
			y++;
		lx = strlen(x);
		ly = strlen(y);
		if (lx != ly)
			return lx < ly ? -1 : 1;
		if ((c = strcmp(x, y)))
			return c;
	}
	return strcmp(a, b);
}

/* o's keys, sorted (malloc'd; the strings are borrowed). */
const char **prompt_sorted_keys(json_t *o, size_t *n)
{
	size_t cnt = json_object_size(o), i = 0;
	const char **k = xcalloc(cnt ? cnt : 1, sizeof(*k));
	const char *key;
	json_t *v;

	json_object_foreach (o, key, v)
		k[i++] = key;
	qsort(k, cnt, sizeof(*k), key_cmp);
	*n = cnt;
	return k;
}

/* "K=1024, M=1024" from {"M": 1024, "K": 1024}. */
void add_assignments(struct sbuf *b, json_t *o)
{
	size_t n, i;
	const char **k = prompt_sorted_keys(o, &n);

	for (i = 0; i < n; i++) {
		sbuf_addf(b, "%s%s=", i ? ", " : "", k[i]);
		add_scalar(b, json_object_get(o, k[i]));
	}
	free(k);
}

/* A variant's "Rationale: ..." and "Parameters: ..." lines, when it has them. */
void add_rationale_params(struct sbuf *b, json_t *v)
{
	const char *s = prompt_str_of(v, "rationale");

	if (s && *s) {
		sbuf_adds(b, "Rationale: ");
		add_oneline(b, s, LINE_MAX_BYTES);
		sbuf_addch(b, '\n');
	}
	if (json_object_size(json_object_get(v, "params"))) {
		sbuf_adds(b, "Parameters: ");
		add_assignments(b, json_object_get(v, "params"));
		sbuf_addch(b, '\n');
	}
}

/* "- TM = 1, 2, 4" lines of a tunables array. */
void add_tunables(struct sbuf *b, json_t *arr, const char *indent)
{
	size_t i;
	json_t *t;

	json_array_foreach (arr, i, t) {
		sbuf_addf(b, "%s- %s = ", indent,
			  prompt_str_of(t, "name") ? prompt_str_of(t, "name") : "?");
		add_joined(b, json_object_get(t, "values"), ", ");
		sbuf_addch(b, '\n');
	}
}

static void add_block(struct sbuf *b, const char *name, json_t *body)
{
	const char *s = json_is_string(body) ? json_string_value(body) : "";

	if (!*s) {
		sbuf_addf(b, "Block `%s`: (empty)\n", name);
		return;
	}
	sbuf_addf(b, "Block `%s`:\n", name);
	add_code(b, s);
}

int prompt_in_names(json_t *names, const char *s)
{
	size_t i;
	json_t *v;

	json_array_foreach (names, i, v)
		if (json_is_string(v) && !strcmp(json_string_value(v), s))
			return 1;
	return 0;
}

/* A variant's blocks: those named in order first, in its order, then the rest. */
void add_blocks(struct sbuf *b, json_t *blocks, json_t *order)
{
	const char *key;
	size_t i;
	json_t *v;

	if (!json_is_object(blocks))
		return;
	json_array_foreach (order, i, v) {
		json_t *body =
			json_is_string(v) ? json_object_get(blocks, json_string_value(v)) : NULL;

		if (body)
			add_block(b, json_string_value(v), body);
	}
	json_object_foreach (blocks, key, v)
		if (!prompt_in_names(order, key))
			add_block(b, key, v);
}
