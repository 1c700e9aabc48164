/*
 * batch-read.c - the typed readers the EvalBatch parser is built from: names
 * and ids, strings, enums, arrays, integer expressions and tables of plain
 * numeric fields, each on top of jsonx so that every message starts with the
 * JSON path at fault.
 *
 * May use: common/ (jsonx, err, xalloc) and expr.h.  Knows nothing of the
 * document's sections; batch.c and batch-problem.c call it (batch-internal.h).
 */
#include "batch-internal.h"
#include "err.h"
#include "jsonx.h"
#include "xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define WHY_LEN    256
#define MAX_FIELDS 16

/* ---- names and ids ---- */

static const char *const name_rules[] = {
	[NK_ANY] = "a string",
	[NK_TEXT] = "a non-empty string",
	[NK_IDENT] = "a C identifier of 1 to 128 characters",
	[NK_ID] = "an id of 1 to 128 characters from [A-Za-z0-9._-], not starting with '.' or '-'",
};

static int is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Length of the C identifier at the start of s (0 if none). */
static size_t ident_len(const char *s)
{
	size_t i = 0;

	if (!is_alpha(s[0]))
		return 0;
	while (is_alpha(s[i]) || is_digit(s[i]))
		i++;
	return i;
}

static int name_ok(const char *s, enum name_kind k)
{
	size_t len = strlen(s);

	if (k == NK_ANY)
		return 1;
	if (k == NK_TEXT)
		return len > 0;
	if (len == 0 || len > BATCH_ID_MAX)
		return 0;
	if (k == NK_IDENT)
		return ident_len(s) == len;
	/* Ids name files: no leading dot, so never "." or "..", never hidden. */
	if (s[0] == '.' || s[0] == '-')
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!is_alpha(s[i]) && !is_digit(s[i]) && s[i] != '.' && s[i] != '-')
			return 0;
	return 1;
}

int check_name(const char *s, enum name_kind k, const char *path, char *msg, size_t n)
{
	if (name_ok(s, k))
		return 0;
	if (k == NK_TEXT)
		return kerr_set(msg, n, KERR_INVALID, "%s: must not be empty", path);
	return kerr_set(msg, n, KERR_INVALID, "%s: '%.40s' is not %s", path, s, name_rules[k]);
}

/* ---- typed getters on top of jsonx ---- */

/*
 * Formats a JSON path into p (PATH_LEN bytes).  Keys come from the document
 * and may be long; a path cut short only shortens the message.
 */
void path_fmt(char *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p, PATH_LEN, fmt, ap);
	va_end(ap);
}

/*
 * Reads string key into *out (a copy) and checks it against kind.  flags:
 * JX_REQUIRED and/or GS_NULLABLE.  *out is left alone when absent or null.
 */
int get_str(json_t *obj, const char *path, const char *key, int flags, enum name_kind kind,
	    char **out, char *msg, size_t n)
{
	char kpath[PATH_LEN];
	const char *s = NULL;
	json_t *v = json_object_get(obj, key);
	int rc;

	if ((flags & GS_NULLABLE) && v && json_is_null(v))
		return 0;
	rc = jx_str(obj, path, key, flags & JX_REQUIRED, &s, msg, n);
	if (rc || !s)
		return rc;
	path_fmt(kpath, "%s.%s", path, key);
	rc = check_name(s, kind, kpath, msg, n);
	if (!rc) {
		free(*out);
		*out = xstrdup(s);
	}
	return rc;
}

/* Array entries that must be objects. */
int need_object(json_t *v, const char *path, char *msg, size_t n)
{
	if (json_is_object(v))
		return 0;
	return kerr_set(msg, n, KERR_PARSE, "%s: expected an object, got %s", path,
			jx_type_name(v));
}

/* Reads key as one of names[0..nr) into *out (its index). */
int get_enum(json_t *obj, const char *path, const char *key, int required, const char *const *names,
	     size_t nr, int *out, char *msg, size_t n)
{
	char list[256] = "";
	const char *s = NULL;
	int rc = jx_str(obj, path, key, required, &s, msg, n);

	if (rc || !s)
		return rc;
	for (size_t i = 0; i < nr; i++) {
		if (!strcmp(s, names[i])) {
			*out = (int)i;
			return 0;
		}
		strlcat(list, i ? ", " : "", sizeof(list));
		strlcat(list, names[i], sizeof(list));
	}
	return kerr_set(msg, n, KERR_INVALID, "%s.%s: '%.40s' is not one of %s", path, key, s,
			list);
}

/* Reads key as an array of lo..hi entries; *out is NULL when optional and absent. */
int get_arr(json_t *obj, const char *path, const char *key, int required, size_t lo, size_t hi,
	    json_t **out, char *msg, size_t n)
{
	int rc = jx_arr(obj, path, key, required, out, msg, n);
	size_t nr;

	if (rc || !*out)
		return rc;
	nr = json_array_size(*out);
	if (nr < lo || nr > hi)
		return kerr_set(msg, n, KERR_RANGE, "%s.%s: has %zu entries, expected %zu to %zu",
				path, key, nr, lo, hi);
	return 0;
}

/*
 * v (at path) is an integer expression: a string that expr_check accepts,
 * or a JSON integer kept as its decimal text.  *out is a copy.
 */
int expr_value(json_t *v, const char *path, int allow_negative, char **out, char *msg, size_t n)
{
	char why[WHY_LEN];

	if (json_is_integer(v)) {
		long long x = (long long)json_integer_value(v);

		if (x < 0 && !allow_negative)
			return kerr_set(msg, n, KERR_RANGE, "%s: %lld is negative", path, x);
		*out = xasprintf("%lld", x);
		return 0;
	}
	if (!json_is_string(v))
		return kerr_set(msg, n, KERR_PARSE,
				"%s: expected an expression string or an integer, got %s", path,
				jx_type_name(v));
	if (expr_check(json_string_value(v), why, sizeof(why)))
		return kerr_set(msg, n, KERR_PARSE, "%s: %s", path, why);
	*out = xstrdup(json_string_value(v));
	return 0;
}

int get_expr(json_t *obj, const char *path, const char *key, int required, int allow_negative,
	     char **out, char *msg, size_t n)
{
	char kpath[PATH_LEN];
	json_t *v = json_object_get(obj, key);

	if (!v)
		return required ? kerr_set(msg, n, KERR_PARSE, "%s.%s: required key is missing",
					   path, key)
				: 0;
	path_fmt(kpath, "%s.%s", path, key);
	return expr_value(v, kpath, allow_negative, out, msg, n);
}

/* ---- tables of plain numeric fields ---- */

static void field_store(char *at, enum field_kind kind, int64_t x)
{
	switch (kind) {
	case FK_INT: *(int *)at = (int)x; break;
	case FK_I64: *(int64_t *)at = x; break;
	case FK_U64: *(uint64_t *)at = (uint64_t)x; break;
	case FK_SIZE: *(size_t *)at = (size_t)x; break;
	default: break;
	}
}

/* Checks obj's keys against fields plus extra (NULL-terminated). */
int fields_known(json_t *obj, const char *path, const struct field *f, size_t nf,
		 const char *const *extra, char *msg, size_t n)
{
	const char *keys[MAX_FIELDS + 1];
	size_t k = 0;

	for (size_t i = 0; i < nf && k < MAX_FIELDS; i++)
		keys[k++] = f[i].key;
	for (size_t i = 0; extra && extra[i] && k < MAX_FIELDS; i++)
		keys[k++] = extra[i];
	keys[k] = NULL;
	return jx_known_keys(obj, path, keys, msg, n);
}

/* Reads the optional fields of obj into base; absent keys keep their defaults. */
int fields_read(json_t *obj, const char *path, const struct field *f, size_t nf, void *base,
		char *msg, size_t n)
{
	int rc = 0;

	for (size_t i = 0; i < nf && !rc; i++) {
		char *at = (char *)base + f[i].off;
		int64_t x = 0;

		if (!json_object_get(obj, f[i].key))
			continue;
		if (f[i].kind == FK_BOOL) {
			rc = jx_bool(obj, path, f[i].key, JX_OPTIONAL, (int *)at, msg, n);
		} else if (f[i].kind == FK_NUM) {
			rc = jx_num(obj, path, f[i].key, JX_OPTIONAL, f[i].lo, f[i].hi,
				    (double *)at, msg, n);
		} else {
			rc = jx_int(obj, path, f[i].key, JX_OPTIONAL, (int64_t)f[i].lo,
				    (int64_t)f[i].hi, &x, msg, n);
			if (!rc)
				field_store(at, f[i].kind, x);
		}
	}
	return rc;
}
