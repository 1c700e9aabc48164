/*
 * jsonx.h - strict reading of JSON objects with JSON-path error messages.
 *
 * Every getter takes the path of obj (e.g. "$.problem.buffers[2]") so that
 * its error names exactly where the document is wrong:
 *   "$.problem.buffers[2].count: expected a string, got integer"
 * Getters return 0, or KERR_PARSE (wrong type, missing required key) or
 * KERR_RANGE (number out of the allowed range) with msg set.  When an
 * optional key is absent the output is left untouched, so callers preset
 * defaults.  Returned strings point into the json_t (borrowed).
 */
#ifndef KCTL_JSONX_H
#define KCTL_JSONX_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

enum { JX_OPTIONAL = 0, JX_REQUIRED = 1 };

/* Fails naming the first key of obj that is not in the NULL-terminated list. */
int jx_known_keys(json_t *obj, const char *path, const char *const *keys, char *msg, size_t n);

int jx_str(json_t *obj, const char *path, const char *key, int required, const char **out,
	   char *msg, size_t n);
int jx_int(json_t *obj, const char *path, const char *key, int required, int64_t lo, int64_t hi,
	   int64_t *out, char *msg, size_t n);
int jx_num(json_t *obj, const char *path, const char *key, int required, double lo, double hi,
	   double *out, char *msg, size_t n);
int jx_bool(json_t *obj, const char *path, const char *key, int required, int *out, char *msg,
	    size_t n);
/* Object or array members: *out is borrowed, NULL when optional and absent. */
int jx_obj(json_t *obj, const char *path, const char *key, int required, json_t **out, char *msg,
	   size_t n);
int jx_arr(json_t *obj, const char *path, const char *key, int required, json_t **out, char *msg,
	   size_t n);

/* Name of a JSON value's type for messages: "string", "integer"...; "nothing" for NULL. */
const char *jx_type_name(const json_t *v);

/*
 * Serialises v with sorted keys and a trailing newline; returns a malloc'd
 * string (caller frees).  Aborts on out-of-memory like the x-wrappers.
 */
char *jx_dump(const json_t *v);

/*
 * A jansson load error into msg: "WHERE:LINE:COLUMN: TEXT" (KERR_PARSE), or
 * "WHERE: TEXT" (KERR_IO) when it has no place, a file that could not be
 * opened or read.  where names the document ("dataset 'x.json'").
 */
int jx_load_error(char *msg, size_t n, const char *where, const json_error_t *e);

/* Sets key to a new real, or to null when v is not finite (JSON has no NaN). */
void jx_set_real(json_t *obj, const char *key, double v);

#endif
