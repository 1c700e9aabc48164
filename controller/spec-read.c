/*
 * spec-read.c - the readers and checks every section of the spec shares:
 * the field tables (fld_*), the text rules names and ids obey, storage URLs
 * and paths, integer expressions, and the marks that remember where each
 * expression was read (for spec-exprs.c's messages).
 *
 * The bottom layer of the spec loader: spec.c and the section files
 * (spec-problem.c, spec-evaluator.c, spec-proposer.c) and spec-exprs.c call
 * it; it calls none of them.  May use: spec-internal.h, yamlx, expr, s3 and
 * common/.
 */
#include "spec-internal.h"
#include "err.h"
#include "expr.h"
#include "s3.h"
#include "xalloc.h"
#include "yamlx.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 64  /* kernel.name */
#define ID_MAX_LEN   128 /* EvalBatch names and ids */

/* Remembers that the expression at path was read from node nd. */
static void mark_add(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	if (ld->nmarks == ld->amarks) {
		ld->amarks = ld->amarks ? 2 * ld->amarks : 64;
		ld->marks = xreallocarray(ld->marks, ld->amarks, sizeof(*ld->marks));
	}
	ld->marks[ld->nmarks].path = xstrdup(path);
	ld->marks[ld->nmarks++].nd = nd;
}

/* The node the expression at path was read from; NULL (line 1) if none. */
const yaml_node_t *mark_find(const struct ld *ld, const char *path)
{
	for (size_t i = 0; i < ld->nmarks; i++)
		if (!strcmp(ld->marks[i].path, path))
			return ld->marks[i].nd;
	return NULL;
}

void marks_release(struct ld *ld)
{
	for (size_t i = 0; i < ld->nmarks; i++)
		free(ld->marks[i].path);
	free(ld->marks);
	ld->marks = NULL;
	ld->nmarks = ld->amarks = 0;
}

/* json_string, tolerating bytes that are not UTF-8 (file system paths). */
static json_t *jstr(const char *s)
{
	json_t *j = json_string(s);

	return j ? j : json_string_nocheck(s);
}

/* ---- names, ids, paths, URLs ---- */

static const char *const rule_what[] = {
	[R_ANY] = "a string",
	[R_TEXT] = "a non-empty string",
	[R_IDENT] = "a C identifier of 1 to 128 characters",
	[R_ID] = "an id: 1 to 128 characters from [A-Za-z0-9._-], not starting with '.' or '-'",
	[R_NAME] = "a name: 1 to 64 characters from [A-Za-z0-9._-], not starting with '.' or '-'",
	[R_MARKER] = "a non-empty string on one line",
};

static int is_ident_char(char c, int first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (!first && c >= '0' && c <= '9');
}

int spec_rule_ok(const char *s, enum rule r)
{
	size_t len = strlen(s);

	switch (r) {
	case R_ANY: return 1;
	case R_TEXT: return len > 0;
	case R_MARKER: return len > 0 && !strpbrk(s, "\r\n");
	case R_IDENT:
		if (!len || len > ID_MAX_LEN)
			return 0;
		for (size_t i = 0; i < len; i++)
			if (!is_ident_char(s[i], i == 0))
				return 0;
		return 1;
	case R_ID:
	case R_NAME:
		if (!len || len > (r == R_ID ? ID_MAX_LEN : NAME_MAX_LEN) || s[0] == '.' ||
		    s[0] == '-')
			return 0;
		for (size_t i = 0; i < len; i++)
			if (!is_ident_char(s[i], 0) && s[i] != '.' && s[i] != '-')
				return 0;
		return 1;
	}
	return 0;
}

int spec_check_rule(struct ld *ld, const yaml_node_t *nd, const char *path, const char *s,
		    enum rule r)
{
	if (spec_rule_ok(s, r))
		return 0;
	return yamlx_fail(&ld->y, nd, KERR_INVALID, path, "'%.40s' is not %s", s, rule_what[r]);
}

/* The PREFIX of s3://BUCKET/PREFIX (trailing '/'s aside) must be sent as it is signed. */
static int check_s3_prefix(struct ld *ld, const yaml_node_t *nd, const char *path, const char *u)
{
	const char *slash = strchr(u + 5, '/'), *why;
	size_t len;
	char *prefix;
	int rc = 0;

	if (!slash)
		return 0;
	len = strlen(slash + 1);
	while (len && slash[len] == '/')
		len--;
	if (!len)
		return 0;
	prefix = xstrndup(slash + 1, len);
	if ((why = s3_key_fault(prefix)))
		rc = yamlx_fail(&ld->y, nd, KERR_INVALID, path, "the key prefix '%.80s' %s: %s",
				prefix, why, S3_KEY_FAULT_WHY);
	free(prefix);
	return rc;
}

/* Storage URLs: file://PATH or s3://BUCKET[/PREFIX], no spaces or control characters. */
static int check_url(struct ld *ld, const yaml_node_t *nd, const char *path, const char *u)
{
	size_t skip = !strncmp(u, "file://", 7) ? 7 : !strncmp(u, "s3://", 5) ? 5 : 0;

	if (!skip || !u[skip] || (skip == 5 && u[skip] == '/'))
		return yamlx_fail(&ld->y, nd, KERR_INVALID, path,
				  "'%.60s' is not a file://PATH or s3://BUCKET[/PREFIX] URL", u);
	for (const char *p = u; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return yamlx_fail(&ld->y, nd, KERR_INVALID, path,
					  "the URL contains a space or control character");
	return skip == 5 ? check_s3_prefix(ld, nd, path, u) : 0;
}

/* p resolved against the spec's folder; a malloc'd string. */
static char *resolve(const struct spec *s, const char *p)
{
	return p[0] == '/' ? xstrdup(p) : xasprintf("%s/%s", s->dir, p);
}

/* ---- expressions ---- */

/*
 * nd (at path) is an integer expression: a plain integer, kept as its
 * decimal text, or a string that expr_check accepts.  *out is a new
 * JSON string.
 */
int read_expr(struct ld *ld, const yaml_node_t *nd, const char *path, int allow_negative,
	      json_t **out)
{
	char why[WHY_LEN], num[32];
	enum yamlx_type t = yamlx_type_of(nd);
	int64_t x = 0;
	int rc;

	if (t == YAMLX_INT) {
		rc = yamlx_get_int(&ld->y, nd, path, INT64_MIN, INT64_MAX, &x);
		if (!rc && x < 0 && !allow_negative)
			rc = yamlx_fail(&ld->y, nd, KERR_RANGE, path, "%lld is negative",
					(long long)x);
		snprintf(num, sizeof(num), "%lld", (long long)x);
		if (!rc) {
			*out = json_string(num);
			mark_add(ld, nd, path);
		}
		return rc;
	}
	if (t != YAMLX_STR)
		return yamlx_want(&ld->y, nd, path,
				  "an integer expression (a string or an integer)");
	if (expr_check(yamlx_text(nd), why, sizeof(why)))
		return yamlx_fail(&ld->y, nd, KERR_PARSE, path, "%s", why);
	*out = json_string(yamlx_text(nd));
	mark_add(ld, nd, path);
	return 0;
}

/* ---- field tables (spec-internal.h) ---- */

/* Fails at the first key of map (at path) that is not in f[0..nf). */
int fld_known(struct ld *ld, const yaml_node_t *map, const char *path, const struct field *f,
	      size_t nf)
{
	const char **keys = xcalloc(nf, sizeof(*keys));
	int rc;

	for (size_t i = 0; i < nf; i++)
		keys[i] = f[i].key;
	rc = yamlx_keys_known(&ld->y, map, path, keys, nf);
	free(keys);
	return rc;
}

int spec_field_read(struct ld *ld, const yaml_node_t *v, const char *path, const struct field *f,
		    json_t **out)
{
	const char *t = NULL;
	int64_t x = 0;
	double d = 0;
	int b = 0, rc = 0;

	switch (f->kind) {
	case F_INT:
		rc = yamlx_get_int(&ld->y, v, path, f->ilo, f->ihi, &x);
		*out = rc ? NULL : json_integer(x);
		break;
	case F_NUM:
		rc = yamlx_get_num(&ld->y, v, path, f->lo, f->hi, &d);
		*out = rc ? NULL : json_real(d);
		break;
	case F_BOOL:
		rc = yamlx_get_bool(&ld->y, v, path, &b);
		*out = rc ? NULL : json_boolean(b);
		break;
	case F_ENUM:
		rc = yamlx_get_enum(&ld->y, v, path, f->names, &b);
		*out = rc ? NULL : json_string(f->names[b]);
		break;
	case F_EXPR: rc = read_expr(ld, v, path, 0, out); break;
	case F_CUSTOM: break;
	case F_TEXT:
	case F_PATH:
	case F_URL:
		rc = yamlx_get_text(&ld->y, v, path, &t);
		if (!rc && f->kind == F_TEXT)
			rc = spec_check_rule(ld, v, path, t, f->rule);
		if (!rc && f->kind == F_URL)
			rc = check_url(ld, v, path, t);
		if (!rc && f->kind == F_PATH && !*t)
			rc = yamlx_fail(&ld->y, v, KERR_INVALID, path, "the path is empty");
		if (!rc && f->kind == F_PATH) {
			char *r = resolve(ld->s, t);

			*out = jstr(r);
			free(r);
		} else if (!rc) {
			*out = json_string(t);
		}
		break;
	}
	return rc;
}

/* Reads the fields of map present in f[0..nf) into out (absent keys are left out). */
int fld_read(struct ld *ld, const yaml_node_t *map, const char *path, const struct field *f,
	     size_t nf, json_t *out)
{
	char kpath[YAMLX_PATH_LEN];
	int rc = 0;

	for (size_t i = 0; i < nf && !rc; i++) {
		const yaml_node_t *v = yamlx_map_get(&ld->y, map, f[i].key);
		json_t *j = NULL;

		yamlx_path_key(kpath, path, f[i].key);
		if (!v && f[i].required)
			rc = yamlx_fail(&ld->y, map, KERR_PARSE, kpath, "required key is missing");
		if (!v || rc)
			continue;
		rc = spec_field_read(ld, v, kpath, &f[i], &j);
		if (j)
			json_object_set_new(out, f[i].key, j);
	}
	return rc;
}

/* yamlx_need_map + fields_known + fields_read into the new object *out (caller decrefs, even on failure). */
int fld_load(struct ld *ld, const yaml_node_t *map, const char *path, const struct field *f,
	     size_t nf, json_t **out)
{
	int rc = yamlx_need_map(&ld->y, map, path, 0, YAMLX_MAX_MAP_KEYS);

	*out = json_object();
	if (!rc)
		rc = fld_known(ld, map, path, f, nf);
	if (!rc)
		rc = fld_read(ld, map, path, f, nf, *out);
	return rc;
}

int64_t fld_int(const json_t *o, const char *key, int64_t def)
{
	json_t *v = json_object_get(o, key);

	return v ? (int64_t)json_integer_value(v) : def;
}

double fld_num(const json_t *o, const char *key, double def)
{
	json_t *v = json_object_get(o, key);

	return v ? json_number_value(v) : def;
}

/* Replaces *dst with a copy of o.key when present. */
void fld_text(const json_t *o, const char *key, char **dst)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return;
	free(*dst);
	*dst = xstrdup(json_string_value(v));
}

int fld_enum(const json_t *o, const char *key, const char *const *names, int def)
{
	json_t *v = json_object_get(o, key);

	for (int i = 0; v && names[i]; i++)
		if (!strcmp(json_string_value(v), names[i]))
			return i;
	return def;
}
