#include "jsonx.h"
#include "err.h"
#include "xalloc.h"

#include <math.h>
#include <stdlib.h>

const char *jx_type_name(const json_t *v)
{
	if (!v)
		return "nothing"; /* a member that is not there */
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "number";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	case JSON_NULL: return "null";
	}
	return "unknown";
}

int jx_known_keys(json_t *obj, const char *path, const char *const *keys, char *msg, size_t n)
{
	const char *key;
	json_t *v;

	json_object_foreach (obj, key, v) {
		int known = 0;

		for (size_t i = 0; keys[i]; i++)
			if (!strcmp(keys[i], key))
				known = 1;
		if (!known)
			return kerr_set(msg, n, KERR_PARSE, "%s.%s: unknown key", path, key);
	}
	return 0;
}

/* Finds key; returns 1 when present, 0 when absent and optional, <0 on error. */
static int jx_find(json_t *obj, const char *path, const char *key, int required, json_t **v,
		   char *msg, size_t n)
{
	*v = json_object_get(obj, key);
	if (*v)
		return 1;
	if (required)
		return kerr_set(msg, n, KERR_PARSE, "%s.%s: required key is missing", path, key);
	return 0;
}

static int jx_wrong(const char *path, const char *key, const char *want, json_t *v, char *msg,
		    size_t n)
{
	return kerr_set(msg, n, KERR_PARSE, "%s.%s: expected %s, got %s", path, key, want,
			jx_type_name(v));
}

int jx_str(json_t *obj, const char *path, const char *key, int required, const char **out,
	   char *msg, size_t n)
{
	json_t *v;
	int rc = jx_find(obj, path, key, required, &v, msg, n);

	if (rc <= 0)
		return rc;
	if (!json_is_string(v))
		return jx_wrong(path, key, "a string", v, msg, n);
	*out = json_string_value(v);
	return 0;
}

int jx_int(json_t *obj, const char *path, const char *key, int required, int64_t lo, int64_t hi,
	   int64_t *out, char *msg, size_t n)
{
	json_t *v;
	int rc = jx_find(obj, path, key, required, &v, msg, n);
	int64_t x;

	if (rc <= 0)
		return rc;
	if (!json_is_integer(v))
		return jx_wrong(path, key, "an integer", v, msg, n);
	x = (int64_t)json_integer_value(v);
	if (x < lo || x > hi)
		return kerr_set(msg, n, KERR_RANGE, "%s.%s: %lld is outside [%lld, %lld]", path,
				key, (long long)x, (long long)lo, (long long)hi);
	*out = x;
	return 0;
}

int jx_num(json_t *obj, const char *path, const char *key, int required, double lo, double hi,
	   double *out, char *msg, size_t n)
{
	json_t *v;
	int rc = jx_find(obj, path, key, required, &v, msg, n);
	double x;

	if (rc <= 0)
		return rc;
	if (!json_is_number(v))
		return jx_wrong(path, key, "a number", v, msg, n);
	x = json_number_value(v);
	if (!(x >= lo && x <= hi))
		return kerr_set(msg, n, KERR_RANGE, "%s.%s: %g is outside [%g, %g]", path, key, x,
				lo, hi);
	*out = x;
	return 0;
}

int jx_bool(json_t *obj, const char *path, const char *key, int required, int *out, char *msg,
	    size_t n)
{
	json_t *v;
	int rc = jx_find(obj, path, key, required, &v, msg, n);

	if (rc <= 0)
		return rc;
	if (!json_is_boolean(v))
		return jx_wrong(path, key, "a boolean", v, msg, n);
	*out = json_is_true(v);
	return 0;
}

int jx_obj(json_t *obj, const char *path, const char *key, int required, json_t **out, char *msg,
	   size_t n)
{
	json_t *v;
	int rc = jx_find(obj, path, key, required, &v, msg, n);

	*out = NULL;
	if (rc <= 0)
		return rc;
	if (!json_is_object(v))
		return jx_wrong(path, key, "an object", v, msg, n);
	*out = v;
	return 0;
}

int jx_arr(json_t *obj, const char *path, const char *key, int required, json_t **out, char *msg,
	   size_t n)
{
	json_t *v;
	int rc = jx_find(obj, path, key, required, &v, msg, n);

	*out = NULL;
	if (rc <= 0)
		return rc;
	if (!json_is_array(v))
		return jx_wrong(path, key, "an array", v, msg, n);
	*out = v;
	return 0;
}

char *jx_dump(const json_t *v)
{
	char *s = json_dumps(v, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(10));
	char *out;

	if (!s)
		abort();
	out = xasprintf("%s\n", s);
	free(s);
	return out;
}

void jx_set_real(json_t *obj, const char *key, double v)
{
	json_object_set_new(obj, key, isfinite(v) ? json_real(v) : json_null());
}

int jx_load_error(char *msg, size_t n, const char *where, const json_error_t *e)
{
	if (e->line < 1 || json_error_code(e) == json_error_cannot_open_file)
		return kerr_set(msg, n, KERR_IO, "%s: %s", where, e->text);
	return kerr_set(msg, n, KERR_PARSE, "%s:%d:%d: %s", where, e->line, e->column, e->text);
}
