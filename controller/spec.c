/*
 * spec.c - loading and validating the YAML problem spec (see spec.h and
 * docs/spec.md).
 *
 * yamlx (common/yamlx.h) loads the file, checks the tree's shape (mapping
 * keys are unique scalars, strings are valid UTF-8 without NUL bytes,
 * nesting and size are bounded, aliases included) and types its scalars;
 * here one reader per top-level section validates its keys through field
 * tables and either builds the EvalBatch-form JSON the section maps to or
 * fills struct spec.  Every message names the node at fault by its start
 * mark (1-based line and column) and its key path.
 */
#include "spec.h"
#include "spec-internal.h"
#include "err.h"
#include "initdist.h"
#include "expr.h"
#include "fileio.h"
#include "mutate.h"
#include "s3.h"
#include "sbuf.h"
#include "xalloc.h"
#include "yamlx.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPEC_MAX_BYTES   (1u << 20) /* the spec file */
#define SOURCE_MAX_BYTES (4u << 20) /* template and reference */

#define MAX_BUFFERS        256
#define MAX_SCALARS        256
#define MAX_LAUNCH         64
#define MAX_ARGS           256
#define MAX_SHAPES         64
#define MAX_SHAPE_VALUES   256
#define MIN_SEEDS          3
#define MAX_SEEDS          64
#define MAX_TUNABLES       64
#define MAX_TUNABLE_VALUES 4096
#define MAX_CONSTRAINTS    256
#define NAME_MAX_LEN       64  /* kernel.name */
#define ID_MAX_LEN         128 /* EvalBatch names and ids */

#define SPEC_ROOT "a mapping with kernel, problem and shapes" /* what the document is */

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

static void marks_release(struct ld *ld)
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

static int rule_ok(const char *s, enum rule r)
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

static int check_rule(struct ld *ld, const yaml_node_t *nd, const char *path, const char *s,
		      enum rule r)
{
	if (rule_ok(s, r))
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
static int read_expr(struct ld *ld, const yaml_node_t *nd, const char *path, int allow_negative,
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

static int field_read(struct ld *ld, const yaml_node_t *v, const char *path, const struct field *f,
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
			rc = check_rule(ld, v, path, t, f->rule);
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
		rc = field_read(ld, v, kpath, &f[i], &j);
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

/* ---- kernel ---- */

static const struct field kernel_fields[] = {
	FTEXT("name", 1, R_NAME),
	FPATH("template", 1),
	FPATH("reference", 1),
	FCUSTOM("markers", 0),
	FTEXT("build_options", 0, R_ANY),
};

static const struct field marker_fields[] = {
	FTEXT("start", 0, R_MARKER),
	FTEXT("end", 0, R_MARKER),
};

static int read_markers(struct ld *ld, const yaml_node_t *nd)
{
	const char *P = "kernel.markers";
	json_t *o = NULL;
	int rc = fld_load(ld, nd, P, marker_fields, ARRAY_SIZE(marker_fields), &o);

	if (!rc) {
		fld_text(o, "start", &ld->s->marker_start);
		fld_text(o, "end", &ld->s->marker_end);
	}
	if (!rc && !strcmp(ld->s->marker_start, ld->s->marker_end))
		rc = yamlx_fail(&ld->y, nd, KERR_INVALID, P, "start and end are both '%.40s'",
				ld->s->marker_start);
	json_decref(o);
	return rc;
}

/* Reads file (named by node nd at path) into *out; an empty file is an error. */
static int load_source(struct ld *ld, const yaml_node_t *nd, const char *path, const char *file,
		       char **out)
{
	char why[WHY_LEN];
	size_t len = 0;

	if (file_read(file, SOURCE_MAX_BYTES, out, &len, why, sizeof(why)))
		return yamlx_fail(&ld->y, nd, KERR_IO, path, "%s", why);
	if (!len)
		return yamlx_fail(&ld->y, nd, KERR_INVALID, path, "'%s' is empty", file);
	return 0;
}

static int check_blocks(struct ld *ld, const yaml_node_t *nd)
{
	struct spec *s = ld->s;
	struct blocks bl = { NULL, 0 };
	char why[WHY_LEN];
	int rc = 0;

	if (blocks_find(s->template_src, s->marker_start, s->marker_end, &bl, why, sizeof(why)))
		rc = yamlx_fail(&ld->y, nd, KERR_PARSE, "kernel.template", "%s: %s", yamlx_text(nd),
				why);
	else if (!bl.n)
		rc = yamlx_fail(&ld->y, nd, KERR_PARSE, "kernel.template", "%s: no %s marker",
				yamlx_text(nd), s->marker_start);
	blocks_release(&bl);
	return rc;
}

static int read_kernel(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	struct spec *s = ld->s;
	const yaml_node_t *markers;
	json_t *o = NULL;
	int rc = fld_load(ld, nd, path, kernel_fields, ARRAY_SIZE(kernel_fields), &o);

	if (!rc) {
		fld_text(o, "name", &s->name);
		fld_text(o, "template", &s->template_path);
		fld_text(o, "reference", &s->reference_path);
		fld_text(o, "build_options", &s->build_options);
		markers = yamlx_map_get(&ld->y, nd, "markers");
		if (markers)
			rc = read_markers(ld, markers);
	}
	if (!rc)
		rc = load_source(ld, yamlx_map_get(&ld->y, nd, "template"), "kernel.template",
				 s->template_path, &s->template_src);
	if (!rc)
		rc = check_blocks(ld, yamlx_map_get(&ld->y, nd, "template"));
	if (!rc)
		rc = load_source(ld, yamlx_map_get(&ld->y, nd, "reference"), "kernel.reference",
				 s->reference_path, &s->reference_src);
	json_decref(o);
	return rc;
}

/* ---- problem: element types and init ---- */

static const char *const type_names[] = { "float", "double", "int", "uint", "long", "ulong", NULL };
static const char *const role_names[] = { "input", "output", "inout", "scratch", NULL };

enum { T_FLOAT, T_DOUBLE, T_INT, T_UINT, T_LONG, T_ULONG };

#define P2_24 16777216LL
#define P2_53 9007199254740992LL

/* What init numbers an element type takes (as evalpod's batch.c checks them). */
static const struct elem {
	int is_float;
	int64_t ilo, ihi; /* integers the type holds exactly */
	double fmax;      /* largest finite value (float types) */
} elems[] = {
	[T_FLOAT] = { 1, -P2_24, P2_24, FLT_MAX }, [T_DOUBLE] = { 1, -P2_53, P2_53, DBL_MAX },
	[T_INT] = { 0, INT32_MIN, INT32_MAX, 0 },  [T_UINT] = { 0, 0, UINT32_MAX, 0 },
	[T_LONG] = { 0, -P2_53, P2_53, 0 },        [T_ULONG] = { 0, 0, P2_53, 0 },
};

/* The field that reads init key of an element type e. */
static struct field init_field(const char *key, int required, int integral, int nonneg,
			       const struct elem *e)
{
	struct field f = { .key = key, .required = required };

	if (integral) {
		f.kind = F_INT;
		f.ilo = nonneg && e->ilo < 0 ? 0 : e->ilo;
		f.ihi = e->ihi;
	} else {
		f.kind = F_NUM;
		f.lo = nonneg ? 0 : -e->fmax;
		f.hi = e->fmax;
	}
	return f;
}

static int check_init_order(struct ld *ld, const yaml_node_t *nd, const char *path,
			    const struct initdist *d, const json_t *o)
{
	char kpath[YAMLX_PATH_LEN];
	double a = fld_num(o, d->key_a, d->def_a), b = fld_num(o, d->key_b, d->def_b);
	const yaml_node_t *at = yamlx_map_get(&ld->y, nd, d->key_b);

	if (!d->ordered || b >= a)
		return 0;
	if (!at) {
		yamlx_path_key(kpath, path, d->key_a);
		return yamlx_fail(&ld->y, yamlx_map_get(&ld->y, nd, d->key_a), KERR_RANGE, kpath,
				  "%g is greater than %s (%g, the default)", a, d->key_b, b);
	}
	yamlx_path_key(kpath, path, d->key_b);
	return yamlx_fail(&ld->y, at, KERR_RANGE, kpath, "%g is less than %s (%g)", b, d->key_a, a);
}

static int read_init(struct ld *ld, const yaml_node_t *nd, const char *path, int type, json_t **out)
{
	const struct elem *e = &elems[type];
	struct field f[3] = { FENUM("dist", 1, initdist_names) };
	const yaml_node_t *dn;
	char dpath[YAMLX_PATH_LEN];
	size_t nf = 1;
	int dist = 0, integral, rc = yamlx_need_map(&ld->y, nd, path, 0, YAMLX_MAX_MAP_KEYS);

	*out = NULL;
	yamlx_path_key(dpath, path, "dist");
	dn = rc ? NULL : yamlx_map_get(&ld->y, nd, "dist");
	if (!rc && !dn)
		rc = yamlx_fail(&ld->y, nd, KERR_PARSE, dpath, "required key is missing");
	if (!rc)
		rc = yamlx_get_enum(&ld->y, dn, dpath, initdist_names, &dist);
	if (rc)
		return rc;
	if (initdists[dist].float_only && !e->is_float)
		return yamlx_fail(
			&ld->y, dn, KERR_INVALID, dpath,
			"'%s' gives non-integer values; %s buffers take zero, const, int or iota",
			initdist_names[dist], type_names[type]);
	integral = initdists[dist].integral || !e->is_float;
	if (initdists[dist].key_a)
		f[nf++] = init_field(initdists[dist].key_a, initdists[dist].a_required, integral, 0,
				     e);
	if (initdists[dist].key_b)
		f[nf++] =
			init_field(initdists[dist].key_b, 0, integral, initdists[dist].b_nonneg, e);
	rc = fld_load(ld, nd, path, f, nf, out);
	if (!rc && initdists[dist].key_b)
		rc = check_init_order(ld, nd, path, &initdists[dist], *out);
	return rc;
}

/* ---- problem: buffers and scalars ---- */

static const struct field buffer_fields[] = {
	FENUM("type", 1, type_names),
	FEXPR("count", 1),
	FENUM("role", 0, role_names),
	FCUSTOM("init", 0),
};

/* Reads one buffer into the new object *out (name first, role always present). */
static int read_buffer(struct ld *ld, const yaml_node_t *nd, const char *path, const char *name,
		       json_t **out)
{
	char ipath[YAMLX_PATH_LEN];
	const yaml_node_t *in;
	json_t *init = NULL;
	int rc;

	*out = json_object();
	json_object_set_new(*out, "name", json_string(name));
	rc = yamlx_need_map(&ld->y, nd, path, 0, YAMLX_MAX_MAP_KEYS);
	if (!rc)
		rc = fld_known(ld, nd, path, buffer_fields, ARRAY_SIZE(buffer_fields));
	if (!rc)
		rc = fld_read(ld, nd, path, buffer_fields, ARRAY_SIZE(buffer_fields), *out);
	if (rc)
		return rc;
	if (!json_object_get(*out, "role"))
		json_object_set_new(*out, "role", json_string("input"));
	in = yamlx_map_get(&ld->y, nd, "init");
	if (!in)
		return 0;
	yamlx_path_key(ipath, path, "init");
	rc = read_init(ld, in, ipath, fld_enum(*out, "type", type_names, 0), &init);
	if (!rc)
		json_object_set(*out, "init", init);
	json_decref(init);
	return rc;
}

/* True when name is the name of an entry of the problem's buffers or scalars. */
static int has_symbol(const json_t *p, const char *key, const char *name)
{
	json_t *arr = json_object_get(p, key), *v;
	size_t i;

	json_array_foreach (arr, i, v)
		if (!strcmp(json_string_value(json_object_get(v, "name")), name))
			return 1;
	return 0;
}

static int read_buffers(struct ld *ld, const yaml_node_t *nd, json_t *p)
{
	const char *P = "problem.buffers";
	char path[YAMLX_PATH_LEN];
	json_t *arr = json_array(), *b = NULL;
	int rc = yamlx_need_map(&ld->y, nd, P, 1, MAX_BUFFERS), checked = 0;

	json_object_set_new(p, "buffers", arr);
	for (size_t i = 0; !rc && i < yamlx_map_size(nd); i++) {
		const char *name = yamlx_text(yamlx_map_key(&ld->y, nd, i));
		const char *role;

		yamlx_path_key(path, P, name);
		rc = check_rule(ld, yamlx_map_key(&ld->y, nd, i), path, name, R_IDENT);
		if (!rc)
			rc = read_buffer(ld, yamlx_map_value(&ld->y, nd, i), path, name, &b);
		if (!rc) {
			role = json_string_value(json_object_get(b, "role"));
			checked |= !strcmp(role, "output") || !strcmp(role, "inout");
			json_array_append(arr, b);
		}
		json_decref(b);
		b = NULL;
	}
	if (!rc && !checked)
		rc = yamlx_fail(
			&ld->y, nd, KERR_INVALID, P,
			"no buffer has role output or inout: there would be nothing to check");
	return rc;
}

static const struct field scalar_fields[] = {
	FENUM("type", 1, type_names),
	FCUSTOM("value", 1),
};

static int read_scalar(struct ld *ld, const yaml_node_t *nd, const char *path, const char *name,
		       json_t *s)
{
	char vpath[YAMLX_PATH_LEN];
	const yaml_node_t *vn;
	json_t *v = NULL;
	int type, rc = yamlx_need_map(&ld->y, nd, path, 0, YAMLX_MAX_MAP_KEYS);

	json_object_set_new(s, "name", json_string(name));
	if (!rc)
		rc = fld_known(ld, nd, path, scalar_fields, ARRAY_SIZE(scalar_fields));
	if (!rc)
		rc = fld_read(ld, nd, path, scalar_fields, ARRAY_SIZE(scalar_fields), s);
	if (rc)
		return rc;
	type = fld_enum(s, "type", type_names, 0);
	vn = yamlx_map_get(&ld->y, nd, "value");
	yamlx_path_key(vpath, path, "value");
	if (elems[type].is_float) {
		struct field f = FNUM("value", -elems[type].fmax, elems[type].fmax);

		rc = field_read(ld, vn, vpath, &f, &v);
	} else {
		rc = read_expr(ld, vn, vpath, 1, &v);
	}
	if (!rc)
		json_object_set_new(s, "value", v);
	return rc;
}

static int read_scalars(struct ld *ld, const yaml_node_t *nd, json_t *p)
{
	const char *P = "problem.scalars";
	char path[YAMLX_PATH_LEN];
	json_t *arr = json_array(), *s;
	int rc = yamlx_need_map(&ld->y, nd, P, 0, MAX_SCALARS);

	json_object_set_new(p, "scalars", arr);
	for (size_t i = 0; !rc && i < yamlx_map_size(nd); i++) {
		const yaml_node_t *k = yamlx_map_key(&ld->y, nd, i);

		yamlx_path_key(path, P, yamlx_text(k));
		rc = check_rule(ld, k, path, yamlx_text(k), R_IDENT);
		if (!rc && has_symbol(p, "buffers", yamlx_text(k)))
			rc = yamlx_fail(
				&ld->y, k, KERR_INVALID, path,
				"'%s' is already the name of a buffer (buffers and scalars share "
				"one namespace)",
				yamlx_text(k));
		if (rc)
			break;
		s = json_object();
		rc = read_scalar(ld, yamlx_map_value(&ld->y, nd, i), path, yamlx_text(k), s);
		json_array_append_new(arr, s);
	}
	return rc;
}

/* ---- problem: launch plans ---- */

static const struct field local_arg_fields[] = { FEXPR("local", 1) };

static int read_arg(struct ld *ld, const yaml_node_t *nd, const char *path, const json_t *p,
		    json_t **out)
{
	enum yamlx_type t = yamlx_type_of(nd);
	const char *name;

	*out = NULL;
	if (t == YAMLX_MAP)
		return fld_load(ld, nd, path, local_arg_fields, ARRAY_SIZE(local_arg_fields), out);
	if (t != YAMLX_STR && t != YAMLX_INT && t != YAMLX_NUM)
		return yamlx_want(&ld->y, nd, path, "a buffer or scalar name or {local: BYTES}");
	name = yamlx_text(nd);
	if (!has_symbol(p, "buffers", name) && !has_symbol(p, "scalars", name))
		return yamlx_fail(&ld->y, nd, KERR_INVALID, path,
				  "'%.40s' names no buffer or scalar", name);
	*out = json_string(name);
	return 0;
}

/* Reads a list of 1 to 3 non-negative expressions (a global or local size) into *out. */
static int read_dims(struct ld *ld, const yaml_node_t *nd, const char *path, json_t **out)
{
	char ipath[YAMLX_PATH_LEN];
	json_t *v = NULL;
	int rc = yamlx_need_list(&ld->y, nd, path, 1, 3);

	*out = json_array();
	for (size_t i = 0; !rc && i < yamlx_list_size(nd); i++) {
		yamlx_path_idx(ipath, path, i);
		rc = read_expr(ld, yamlx_list_item(&ld->y, nd, i), ipath, 0, &v);
		if (!rc)
			json_array_append_new(*out, v);
	}
	return rc;
}

static const struct field step_fields[] = {
	FTEXT("kernel", 1, R_IDENT),
	FCUSTOM("args", 1),
	FCUSTOM("global", 1),
	FCUSTOM("local", 0),
};

static int read_step_args(struct ld *ld, const yaml_node_t *nd, const char *path, const json_t *p,
			  json_t *step)
{
	char apath[YAMLX_PATH_LEN];
	json_t *args = json_array(), *a = NULL;
	int rc = yamlx_need_list(&ld->y, nd, path, 0, MAX_ARGS);

	json_object_set_new(step, "args", args);
	for (size_t i = 0; !rc && i < yamlx_list_size(nd); i++) {
		yamlx_path_idx(apath, path, i);
		rc = read_arg(ld, yamlx_list_item(&ld->y, nd, i), apath, p, &a);
		if (a)
			json_array_append_new(args, a);
	}
	return rc;
}

static int read_step(struct ld *ld, const yaml_node_t *nd, const char *path, const json_t *p,
		     json_t **out)
{
	char kpath[YAMLX_PATH_LEN];
	const yaml_node_t *local;
	json_t *g = NULL, *l = NULL;
	int rc = fld_load(ld, nd, path, step_fields, ARRAY_SIZE(step_fields), out);

	yamlx_path_key(kpath, path, "args");
	if (!rc)
		rc = read_step_args(ld, yamlx_map_get(&ld->y, nd, "args"), kpath, p, *out);
	yamlx_path_key(kpath, path, "global");
	if (!rc)
		rc = read_dims(ld, yamlx_map_get(&ld->y, nd, "global"), kpath, &g);
	if (g)
		json_object_set_new(*out, "global", g);
	local = rc ? NULL : yamlx_map_get(&ld->y, nd, "local");
	if (!local)
		return rc;
	yamlx_path_key(kpath, path, "local");
	rc = read_dims(ld, local, kpath, &l);
	json_object_set_new(*out, "local", l);
	if (!rc && json_array_size(l) != json_array_size(g))
		rc = yamlx_fail(&ld->y, local, KERR_INVALID, kpath,
				"has %zu entries, global has %zu", json_array_size(l),
				json_array_size(g));
	return rc;
}

static int read_launch(struct ld *ld, const yaml_node_t *nd, const char *key, json_t *p)
{
	char P[YAMLX_PATH_LEN], path[YAMLX_PATH_LEN];
	json_t *arr = json_array(), *step = NULL;
	int rc;

	yamlx_path_key(P, "problem", key);
	json_object_set_new(p, key, arr);
	rc = yamlx_need_list(&ld->y, nd, P, 1, MAX_LAUNCH);
	for (size_t i = 0; !rc && i < yamlx_list_size(nd); i++) {
		yamlx_path_idx(path, P, i);
		rc = read_step(ld, yamlx_list_item(&ld->y, nd, i), path, p, &step);
		json_array_append_new(arr, step);
	}
	return rc;
}

static const struct field problem_fields[] = {
	FTEXT("semantics", 0, R_TEXT),
	FCUSTOM("buffers", 1),
	FCUSTOM("scalars", 0),
	FCUSTOM("launch", 1),
	FCUSTOM("reference_launch", 0),
	FEXPR("flops", 0),
	FEXPR("bytes", 0),
};

static int read_problem(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	struct spec *s = ld->s;
	const yaml_node_t *v;
	json_t *p = NULL;
	int rc = fld_load(ld, nd, path, problem_fields, ARRAY_SIZE(problem_fields), &p);

	s->problem = p;
	json_object_set_new(p, "name", json_string(s->name));
	if (!rc)
		fld_text(p, "semantics", &s->semantics);
	if (!rc)
		rc = read_buffers(ld, yamlx_map_get(&ld->y, nd, "buffers"), p);
	v = rc ? NULL : yamlx_map_get(&ld->y, nd, "scalars");
	if (v)
		rc = read_scalars(ld, v, p);
	if (!rc)
		rc = read_launch(ld, yamlx_map_get(&ld->y, nd, "launch"), "launch", p);
	v = rc ? NULL : yamlx_map_get(&ld->y, nd, "reference_launch");
	if (v)
		rc = read_launch(ld, v, "reference_launch", p);
	return rc;
}

/* ---- shapes ---- */

static const struct field shape_fields[] = {
	FTEXT("name", 0, R_ID),
	FBOOL("timed"),
	FCUSTOM("values", 1),
};

/* Reads values into a new object; *dflt gets the values joined by 'x' (the default name). */
static int read_shape_values(struct ld *ld, const yaml_node_t *nd, const char *path, json_t **out,
			     struct sbuf *dflt)
{
	char kpath[YAMLX_PATH_LEN];
	int64_t x = 0;
	int rc = yamlx_need_map(&ld->y, nd, path, 0, MAX_SHAPE_VALUES);

	*out = json_object();
	for (size_t i = 0; !rc && i < yamlx_map_size(nd); i++) {
		const yaml_node_t *k = yamlx_map_key(&ld->y, nd, i);

		yamlx_path_key(kpath, path, yamlx_text(k));
		rc = check_rule(ld, k, kpath, yamlx_text(k), R_IDENT);
		if (!rc)
			rc = yamlx_get_int(&ld->y, yamlx_map_value(&ld->y, nd, i), kpath, INT64_MIN,
					   INT64_MAX, &x);
		if (rc)
			break;
		json_object_set_new(*out, yamlx_text(k), json_integer(x));
		sbuf_addf(dflt, "%s%lld", dflt->len ? "x" : "", (long long)x);
	}
	return rc;
}

/* Gives shape i (node nd) its default name when it has none; checks names are unique. */
static int name_shape(struct ld *ld, const yaml_node_t *nd, const char *path, json_t *arr,
		      json_t *shape, const char *dflt)
{
	char npath[YAMLX_PATH_LEN];
	const yaml_node_t *at = yamlx_map_get(&ld->y, nd, "name");
	const char *name;
	json_t *v;
	size_t j;

	yamlx_path_key(npath, path, "name");
	if (!at && !rule_ok(dflt, R_ID))
		return yamlx_fail(
			&ld->y, nd, KERR_INVALID, npath,
			"missing, and the values do not make a valid id ('%.40s'); give the "
			"shape a name",
			dflt);
	if (!at)
		json_object_set_new(shape, "name", json_string(dflt));
	name = json_string_value(json_object_get(shape, "name"));
	json_array_foreach (arr, j, v)
		if (!strcmp(json_string_value(json_object_get(v, "name")), name))
			return yamlx_fail(&ld->y, at ? at : nd, KERR_INVALID, npath,
					  "'%s' is also the name of shapes[%zu]", name, j);
	return 0;
}

static int read_shape(struct ld *ld, const yaml_node_t *nd, const char *path, json_t *arr,
		      json_t **out)
{
	struct sbuf dflt = SBUF_INIT;
	char vpath[YAMLX_PATH_LEN];
	json_t *values = NULL;
	int rc = fld_load(ld, nd, path, shape_fields, ARRAY_SIZE(shape_fields), out);

	yamlx_path_key(vpath, path, "values");
	if (!rc)
		rc = read_shape_values(ld, yamlx_map_get(&ld->y, nd, "values"), vpath, &values,
				       &dflt);
	if (values)
		json_object_set_new(*out, "values", values);
	sbuf_addch(&dflt, '\0');
	if (!rc)
		rc = name_shape(ld, nd, path, arr, *out, dflt.buf);
	sbuf_release(&dflt);
	return rc;
}

static int read_shapes(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	char spath[YAMLX_PATH_LEN], tpath[YAMLX_PATH_LEN];
	json_t *shape = NULL;
	size_t timed = SIZE_MAX;
	int rc = yamlx_need_list(&ld->y, nd, path, 1, MAX_SHAPES);

	ld->s->shapes = json_array();
	for (size_t i = 0; !rc && i < yamlx_list_size(nd); i++) {
		const yaml_node_t *item = yamlx_list_item(&ld->y, nd, i);

		yamlx_path_idx(spath, path, i);
		rc = read_shape(ld, item, spath, ld->s->shapes, &shape);
		if (!rc && json_is_true(json_object_get(shape, "timed"))) {
			if (timed != SIZE_MAX) {
				yamlx_path_key(tpath, spath, "timed");
				rc = yamlx_fail(
					&ld->y, yamlx_map_get(&ld->y, item, "timed"), KERR_INVALID,
					tpath,
					"shapes[%zu] is timed already; at most one shape is timed",
					timed);
			}
			timed = i;
		}
		json_array_append_new(ld->s->shapes, shape);
		shape = NULL;
	}
	return rc;
}

/* ---- tunables ---- */

static const char *const render_names[] = { "define", "options", NULL };

static const struct field tunable_fields[] = {
	FCUSTOM("params", 1),
	FCUSTOM("constraints", 0),
	FENUM("render", 0, render_names),
};

static int read_param(struct ld *ld, const yaml_node_t *nd, const char *path, struct tunable *t)
{
	char ipath[YAMLX_PATH_LEN];
	int rc = yamlx_need_list(&ld->y, nd, path, 1, MAX_TUNABLE_VALUES);

	if (rc)
		return rc;
	t->values = xcalloc(yamlx_list_size(nd), sizeof(*t->values));
	for (size_t i = 0; !rc && i < yamlx_list_size(nd); i++) {
		yamlx_path_idx(ipath, path, i);
		rc = yamlx_get_int(&ld->y, yamlx_list_item(&ld->y, nd, i), ipath, INT64_MIN,
				   INT64_MAX, &t->values[i]);
		for (size_t j = 0; !rc && j < i; j++)
			if (t->values[j] == t->values[i])
				rc = yamlx_fail(&ld->y, yamlx_list_item(&ld->y, nd, i),
						KERR_INVALID, ipath, "%lld repeats %s[%zu]",
						(long long)t->values[i], t->name, j);
		t->nvalues = i + 1;
	}
	return rc;
}

static int read_params(struct ld *ld, const yaml_node_t *nd)
{
	const char *P = "tunables.params";
	struct spec *s = ld->s;
	char path[YAMLX_PATH_LEN];
	int rc = yamlx_need_map(&ld->y, nd, P, 1, MAX_TUNABLES);

	if (rc)
		return rc;
	s->tunables = xcalloc(yamlx_map_size(nd), sizeof(*s->tunables));
	for (size_t i = 0; !rc && i < yamlx_map_size(nd); i++) {
		const yaml_node_t *k = yamlx_map_key(&ld->y, nd, i);
		struct tunable *t = &s->tunables[s->ntunables];

		yamlx_path_key(path, P, yamlx_text(k));
		rc = check_rule(ld, k, path, yamlx_text(k), R_IDENT);
		if (rc)
			break;
		t->name = xstrdup(yamlx_text(k));
		s->ntunables++;
		rc = read_param(ld, yamlx_map_value(&ld->y, nd, i), path, t);
	}
	return rc;
}

static int read_constraints(struct ld *ld, const yaml_node_t *nd)
{
	const char *P = "tunables.constraints";
	struct spec *s = ld->s;
	char path[YAMLX_PATH_LEN];
	json_t *e = NULL;
	int rc = yamlx_need_list(&ld->y, nd, P, 0, MAX_CONSTRAINTS);

	if (rc)
		return rc;
	s->constraints = xcalloc(yamlx_list_size(nd), sizeof(*s->constraints));
	for (size_t i = 0; !rc && i < yamlx_list_size(nd); i++) {
		yamlx_path_idx(path, P, i);
		rc = read_expr(ld, yamlx_list_item(&ld->y, nd, i), path, 1, &e);
		if (!rc)
			s->constraints[s->nconstraints++] = xstrdup(json_string_value(e));
		json_decref(e);
		e = NULL;
	}
	return rc;
}

static int read_tunables(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	const yaml_node_t *c;
	json_t *o = NULL;
	int rc = fld_load(ld, nd, path, tunable_fields, ARRAY_SIZE(tunable_fields), &o);

	if (!rc)
		ld->s->render = fld_enum(o, "render", render_names, RENDER_DEFINE);
	if (!rc)
		rc = read_params(ld, yamlx_map_get(&ld->y, nd, "params"));
	c = rc ? NULL : yamlx_map_get(&ld->y, nd, "constraints");
	if (c)
		rc = read_constraints(ld, c);
	json_decref(o);
	return rc;
}

/* ---- correctness, measurement, limits, device: EvalBatch objects ---- */

static const struct field correct_fields[] = {
	FNUM("atol", 0, DBL_MAX),
	FNUM("rtol", 0, DBL_MAX),
	FCUSTOM("seeds", 0),
	FBOOL("determinism"),
};

static int read_seeds(struct ld *ld, const yaml_node_t *nd, json_t *c)
{
	const char *P = "correctness.seeds";
	char path[YAMLX_PATH_LEN];
	json_t *arr = json_array(), *prev;
	int64_t x = 0;
	size_t j;
	int rc = yamlx_need_list(&ld->y, nd, P, MIN_SEEDS, MAX_SEEDS);

	json_object_set_new(c, "seeds", arr);
	for (size_t i = 0; !rc && i < yamlx_list_size(nd); i++) {
		yamlx_path_idx(path, P, i);
		rc = yamlx_get_int(&ld->y, yamlx_list_item(&ld->y, nd, i), path, 0, INT64_MAX, &x);
		json_array_foreach (arr, j, prev)
			if (!rc && json_integer_value(prev) == x)
				rc = yamlx_fail(&ld->y, yamlx_list_item(&ld->y, nd, i),
						KERR_INVALID, path, "%lld repeats seeds[%zu]",
						(long long)x, j);
		if (!rc)
			json_array_append_new(arr, json_integer(x));
	}
	return rc;
}

static int read_correctness(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	const yaml_node_t *seeds;
	int rc = fld_load(ld, nd, path, correct_fields, ARRAY_SIZE(correct_fields),
			  &ld->s->correctness);

	seeds = rc ? NULL : yamlx_map_get(&ld->y, nd, "seeds");
	if (seeds)
		rc = read_seeds(ld, seeds, ld->s->correctness);
	return rc;
}

static const struct field measure_fields[] = {
	FINT("warmup", 0, 1000),           FINT("min_samples", 1, 1000000),
	FINT("max_samples", 1, 1000000),   FNUM("min_time_ms", 0, 3600000),
	FNUM("max_time_ms", 0, 3600000),   FNUM("precision", 0, 1),
	FNUM("sample_min_ms", 0, 60000),   FBOOL("flush"),
	FINT("flush_bytes", 0, 1LL << 40), FINT("order_seed", 0, 9000000000000000000LL),
};

/* min_key must not exceed max_key, either given or at its EvalBatch default. */
static int check_order(struct ld *ld, const yaml_node_t *nd, const char *min_key, double min_def,
		       const char *max_key, double max_def)
{
	const json_t *o = ld->s->measurement;
	double lo = fld_num(o, min_key, min_def), hi = fld_num(o, max_key, max_def);
	const yaml_node_t *at = yamlx_map_get(&ld->y, nd, min_key);
	char path[YAMLX_PATH_LEN];

	if (lo <= hi)
		return 0;
	yamlx_path_key(path, "measurement", at ? min_key : max_key);
	if (at)
		return yamlx_fail(&ld->y, at, KERR_RANGE, path, "%g is greater than %s (%g%s)", lo,
				  max_key, hi,
				  yamlx_map_get(&ld->y, nd, max_key) ? "" : ", the default");
	return yamlx_fail(&ld->y, yamlx_map_get(&ld->y, nd, max_key), KERR_RANGE, path,
			  "%g is less than %s (%g, the default)", hi, min_key, lo);
}

static int read_measurement(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	int rc = fld_load(ld, nd, path, measure_fields, ARRAY_SIZE(measure_fields),
			  &ld->s->measurement);

	if (!rc)
		rc = check_order(ld, nd, "min_samples", 10, "max_samples", 200);
	if (!rc)
		rc = check_order(ld, nd, "min_time_ms", 100, "max_time_ms", 10000);
	return rc;
}

static const struct field limit_fields[] = {
	FNUM("compile_timeout_s", 0.001, 86400),
	FNUM("run_timeout_s", 0.001, 86400),
	FNUM("time_timeout_s", 0.001, 604800),
	FINT("log_max_bytes", 0, 1 << 26),
	FNUM("peak_margin", 1, 100),
};

static int read_limits(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	return fld_load(ld, nd, path, limit_fields, ARRAY_SIZE(limit_fields), &ld->s->limits);
}

int spec_limit_value(const char *key, const char *text, json_t **out, char *msg, size_t n)
{
	char names[256] = "";
	const struct field *f = NULL;
	char *end = NULL;

	*out = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(limit_fields); i++) {
		if (!strcmp(key, limit_fields[i].key))
			f = &limit_fields[i];
		strlcat(names, i ? ", " : "", sizeof(names));
		strlcat(names, limit_fields[i].key, sizeof(names));
	}
	if (!f)
		return kerr_set(msg, n, KERR_INVALID,
				"limits.%s: no such limit (the limits are %s)", key, names);
	errno = 0;
	if (f->kind == F_INT) {
		long long v = strtoll(text, &end, 10);

		if (end == text || *end || errno || v < f->ilo || v > f->ihi)
			return kerr_set(msg, n, KERR_RANGE,
					"limits.%s: '%s' is not an integer from %lld to %lld", key,
					text, (long long)f->ilo, (long long)f->ihi);
		*out = json_integer(v);
	} else {
		double v = strtod(text, &end);

		if (end == text || *end || errno || !isfinite(v) || v < f->lo || v > f->hi)
			return kerr_set(msg, n, KERR_RANGE,
					"limits.%s: '%s' is not a number from %g to %g", key, text,
					f->lo, f->hi);
		*out = json_real(v);
	}
	return 0;
}

static const char *const device_type_names[] = { "any", "gpu", "cpu", "accelerator", NULL };

static const struct field device_fields[] = {
	FTEXT("platform", 0, R_ANY),
	FTEXT("device", 0, R_ANY),
	FENUM("type", 0, device_type_names),
	FINT("index", 0, 1023),
};

static int read_device(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	return fld_load(ld, nd, path, device_fields, ARRAY_SIZE(device_fields), &ld->s->device);
}

/* ---- evaluator, session, batch, proposer ---- */

static const char *const backend_names[] = { "local", "kubernetes", NULL };

static const struct field evaluator_fields[] = {
	FENUM("backend", 0, backend_names),
	FPATH("evalpod", 0),
	FINT("jobs", 1, 64),
	FURL("storage"),
	FCUSTOM("s3", 0),
	FCUSTOM("kubernetes", 0),
};

/* Same order as enum s3_addressing. */
static const char *const addressing_names[] = { "auto", "path", "virtual", NULL };

static const struct field s3_fields[] = {
	FTEXT("endpoint", 0, R_TEXT),
	FTEXT("region", 0, R_TEXT),
	FTEXT("profile", 0, R_TEXT),
	FPATH("ca_file", 0),
	FENUM("addressing", 0, addressing_names),
	FINT("url_margin_s", 60, 86400),
};

static const char *const pull_policy_names[] = { "Always", "IfNotPresent", "Never", NULL };

static const struct field kube_fields[] = {
	FPATH("kubeconfig", 0),
	FTEXT("context", 0, R_TEXT),
	FTEXT("namespace", 0, R_TEXT),
	FPATH("job_template", 0),
	FTEXT("image", 0, R_TEXT),
	FENUM("image_pull_policy", 0, pull_policy_names),
	FTEXT("service_account", 0, R_TEXT),
	FTEXT("priority_class", 0, R_TEXT),
	FTEXT("queue", 0, R_TEXT),
	FTEXT("gpu_resource", 0, R_TEXT),
	FINT("gpus", 0, 64),
	FCUSTOM("node_selector", 0),
	FCUSTOM("tolerations", 0),
	FINT("parallelism", 1, 4096),
	FINT("variants_per_pod", 1, 4096),
	FINT("active_deadline_s", 60, 30 * 86400),
	FINT("backoff_limit", 0, 100),
	FINT("ttl_s", 0, 30 * 86400),
	FINT("pending_timeout_s", 10, 86400),
	FINT("api_retry_s", 0, 86400),
};

/* node_selector: a mapping of strings; tolerations: a list of mappings. */
static int read_kube_structs(struct ld *ld, const yaml_node_t *nd, struct spec_kube *k)
{
	const yaml_node_t *ns = yamlx_map_get(&ld->y, nd, "node_selector");
	const yaml_node_t *tl = yamlx_map_get(&ld->y, nd, "tolerations");
	int rc = 0;

	if (ns) {
		rc = yamlx_need_map(&ld->y, ns, "evaluator.kubernetes.node_selector", 0, 64);
		for (size_t i = 0; !rc && i < yamlx_map_size(ns); i++) {
			const char *t = NULL;
			char kp[YAMLX_PATH_LEN];

			yamlx_path_key(kp, "evaluator.kubernetes.node_selector",
				       yamlx_text(yamlx_map_key(&ld->y, ns, i)));
			rc = yamlx_get_text(&ld->y, yamlx_map_value(&ld->y, ns, i), kp, &t);
		}
		if (!rc)
			rc = yamlx_to_json(&ld->y, ns, "evaluator.kubernetes.node_selector",
					   &k->node_selector);
	}
	if (!rc && tl) {
		rc = yamlx_need_list(&ld->y, tl, "evaluator.kubernetes.tolerations", 0, 64);
		for (size_t i = 0; !rc && i < yamlx_list_size(tl); i++) {
			char ip[YAMLX_PATH_LEN];

			yamlx_path_idx(ip, "evaluator.kubernetes.tolerations", i);
			rc = yamlx_need_map(&ld->y, yamlx_list_item(&ld->y, tl, i), ip, 1, 8);
		}
		if (!rc)
			rc = yamlx_to_json(&ld->y, tl, "evaluator.kubernetes.tolerations",
					   &k->tolerations);
	}
	return rc;
}

static int read_kube(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	struct spec_kube *k = &ld->s->kube;
	json_t *o = NULL;
	int rc = fld_load(ld, nd, path, kube_fields, ARRAY_SIZE(kube_fields), &o);
	static const char *const texts[] = { "kubeconfig",      "context",
					     "namespace",       "job_template",
					     "image",           "image_pull_policy",
					     "service_account", "priority_class",
					     "queue",           "gpu_resource" };
	char **dst[] = { &k->kubeconfig,      &k->context,        &k->namespace,
			 &k->job_template,    &k->image,          &k->image_pull_policy,
			 &k->service_account, &k->priority_class, &k->queue,
			 &k->gpu_resource };

	if (!rc)
		rc = read_kube_structs(ld, nd, k);
	if (!rc) {
		for (size_t i = 0; i < ARRAY_SIZE(texts); i++)
			fld_text(o, texts[i], dst[i]);
		k->gpus = (int)fld_int(o, "gpus", 1);
		k->parallelism = (int)fld_int(o, "parallelism", 0);
		k->variants_per_pod = (int)fld_int(o, "variants_per_pod", 8);
		k->active_deadline_s = (int)fld_int(o, "active_deadline_s", 0);
		k->backoff_limit = (int)fld_int(o, "backoff_limit", 1);
		k->ttl_s = (int)fld_int(o, "ttl_s", 3600);
		k->pending_timeout_s = (int)fld_int(o, "pending_timeout_s", 600);
		k->api_retry_s = (int)fld_int(o, "api_retry_s", 300);
	}
	json_decref(o);
	return rc;
}

static int read_s3(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	struct spec_s3 *c = &ld->s->s3;
	json_t *o = NULL;
	int rc = fld_load(ld, nd, path, s3_fields, ARRAY_SIZE(s3_fields), &o);
	const char *ep = json_string_value(json_object_get(o, "endpoint"));

	if (!rc && ep && strncmp(ep, "http://", 7) && strncmp(ep, "https://", 8))
		rc = yamlx_fail(&ld->y, yamlx_map_get(&ld->y, nd, "endpoint"), KERR_INVALID,
				"evaluator.s3.endpoint", "'%.80s' is not an http(s):// URL", ep);
	if (!rc) {
		fld_text(o, "endpoint", &c->endpoint);
		fld_text(o, "region", &c->region);
		fld_text(o, "profile", &c->profile);
		fld_text(o, "ca_file", &c->ca_file);
		c->addressing = fld_enum(o, "addressing", addressing_names, 0);
		c->url_margin_s = (int)fld_int(o, "url_margin_s", 900);
	}
	json_decref(o);
	return rc;
}

static int read_evaluator(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	struct spec *s = ld->s;
	json_t *o = NULL;
	int rc = fld_load(ld, nd, path, evaluator_fields, ARRAY_SIZE(evaluator_fields), &o);

	if (!rc) {
		s->backend = fld_enum(o, "backend", backend_names, BACKEND_LOCAL);
		fld_text(o, "evalpod", &s->evalpod);
		s->jobs = (int)fld_int(o, "jobs", 0);
		fld_text(o, "storage", &s->storage);
	}
	s->s3.url_margin_s = 900;
	if (!rc && yamlx_map_get(&ld->y, nd, "s3"))
		rc = read_s3(ld, yamlx_map_get(&ld->y, nd, "s3"), "evaluator.s3");
	s->kube.gpus = 1;
	s->kube.variants_per_pod = 8;
	s->kube.backoff_limit = 1;
	s->kube.ttl_s = 3600;
	s->kube.pending_timeout_s = 600;
	s->kube.api_retry_s = 300;
	if (!rc && yamlx_map_get(&ld->y, nd, "kubernetes"))
		rc = read_kube(ld, yamlx_map_get(&ld->y, nd, "kubernetes"), "evaluator.kubernetes");
	json_decref(o);
	return rc;
}

static const struct field session_fields[] = {
	FINT("max_rounds", 1, 10000),        FNUM("target_speedup", 0, 1e6),
	FINT("max_evaluations", 1, 1000000), FNUM("max_minutes", 0, 1e6),
	FINT("stagnation_rounds", 1, 1000),  FPATH("output_dir", 0),
	FINT("confirm_passes", 0, 10),       FINT("confirm_candidates", 1, 16),
};

static int read_session(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	struct spec *s = ld->s;
	json_t *o = NULL;
	int rc = fld_load(ld, nd, path, session_fields, ARRAY_SIZE(session_fields), &o);

	if (!rc) {
		s->max_rounds = (int)fld_int(o, "max_rounds", s->max_rounds);
		s->target_speedup = fld_num(o, "target_speedup", s->target_speedup);
		s->max_evaluations = (int)fld_int(o, "max_evaluations", s->max_evaluations);
		s->max_minutes = fld_num(o, "max_minutes", s->max_minutes);
		s->stagnation_rounds = (int)fld_int(o, "stagnation_rounds", s->stagnation_rounds);
		fld_text(o, "output_dir", &s->output_dir);
		s->confirm_passes = (int)fld_int(o, "confirm_passes", s->confirm_passes);
		s->confirm_candidates =
			(int)fld_int(o, "confirm_candidates", s->confirm_candidates);
	}
	json_decref(o);
	return rc;
}

static const struct field batch_fields[] = {
	FINT("variants_per_round", 1, 4096),
	FINT("top_k", 1, 64),
	FINT("max_active_lineages", 1, 64),
};

static int read_batch(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	struct spec *s = ld->s;
	json_t *o = NULL;
	int rc = fld_load(ld, nd, path, batch_fields, ARRAY_SIZE(batch_fields), &o);

	if (!rc) {
		s->variants_per_round =
			(int)fld_int(o, "variants_per_round", s->variants_per_round);
		s->top_k = (int)fld_int(o, "top_k", s->top_k);
		s->max_active_lineages =
			(int)fld_int(o, "max_active_lineages", s->max_active_lineages);
	}
	json_decref(o);
	return rc;
}

/* ---- the document ---- */

static const struct section {
	const char *key;
	int required;
	int (*read)(struct ld *ld, const yaml_node_t *nd, const char *path);
} sections[] = {
	/* In this order: problem needs kernel.name, session's default needs it too. */
	{ "kernel", 1, read_kernel },
	{ "problem", 1, read_problem },
	{ "shapes", 1, read_shapes },
	{ "tunables", 0, read_tunables },
	{ "correctness", 0, read_correctness },
	{ "measurement", 0, read_measurement },
	{ "limits", 0, read_limits },
	{ "device", 0, read_device },
	{ "evaluator", 0, read_evaluator },
	{ "session", 0, read_session },
	{ "batch", 0, read_batch },
	{ "proposer", 0, read_proposer },
};

static int read_document(struct ld *ld, const yaml_node_t *root)
{
	struct field keys[ARRAY_SIZE(sections)];
	int rc;

	for (size_t i = 0; i < ARRAY_SIZE(sections); i++)
		keys[i] = (struct field)FCUSTOM(sections[i].key, sections[i].required);
	if (root->type != YAML_MAPPING_NODE)
		return yamlx_want(&ld->y, root, "", SPEC_ROOT);
	rc = yamlx_check(&ld->y, root);
	if (!rc)
		rc = fld_known(ld, root, "", keys, ARRAY_SIZE(keys));
	if (!rc)
		rc = fld_read(ld, root, "", keys, ARRAY_SIZE(keys), NULL);
	for (size_t i = 0; !rc && i < ARRAY_SIZE(sections); i++) {
		const yaml_node_t *v = yamlx_map_get(&ld->y, root, sections[i].key);

		if (v)
			rc = sections[i].read(ld, v, sections[i].key);
	}
	if (!rc)
		rc = check_exprs(ld);
	if (!rc && !ld->s->output_dir)
		ld->s->output_dir = xasprintf("%s/runs/%s", ld->s->dir, ld->s->name);
	return rc;
}

/* s->dir: the absolute folder of the spec file. */
static int spec_dir(struct spec *s, const char *path, char *msg, size_t n)
{
	const char *slash = strrchr(path, '/');
	char *d = !slash          ? xstrdup(".")
		  : slash == path ? xstrdup("/")
				  : xstrndup(path, (size_t)(slash - path));
	int rc = 0;

	s->dir = realpath(d, NULL);
	if (!s->dir)
		rc = kerr_set(msg, n, KERR_IO, "%s:1:1: document: cannot resolve '%s': %s", path, d,
			      strerror(errno));
	free(d);
	return rc;
}

static void spec_defaults(struct spec *s)
{
	s->marker_start = xstrdup("EVOLVE-BLOCK-START");
	s->marker_end = xstrdup("EVOLVE-BLOCK-END");
	s->build_options = xstrdup("");
	s->render = RENDER_DEFINE;
	s->backend = BACKEND_LOCAL;
	s->max_rounds = 10;
	s->max_evaluations = 200;
	s->stagnation_rounds = 3;
	s->confirm_passes = 3;
	s->confirm_candidates = 4;
	s->variants_per_round = 8;
	s->top_k = 3;
	s->max_active_lineages = 4;
	s->proposer = PROPOSER_TUNE;
	s->seed = 1;
	s->proposer_conf = json_pack("{s:s, s:i}", "kind", "tune", "seed", 1);
	proposer_defaults(s);
}

int spec_load(struct spec *s, const char *path, char *msg, size_t n)
{
	struct ld ld = { .s = s };
	char why[WHY_LEN];
	size_t len = 0;
	int rc;

	memset(s, 0, sizeof(*s));
	yamlx_init(&ld.y, path, msg, n);
	spec_defaults(s);
	s->path = xstrdup(path);
	if (file_read(path, SPEC_MAX_BYTES, &s->text, &len, why, sizeof(why)))
		return kerr_set(msg, n, KERR_IO, "%s:1:1: document: %s", path, why);
	rc = spec_dir(s, path, msg, n);
	if (rc)
		return rc;
	rc = yamlx_load(&ld.y, s->text, len, "a spec", SPEC_ROOT);
	if (!rc)
		rc = read_document(&ld, yamlx_root(&ld.y));
	marks_release(&ld);
	yamlx_release(&ld.y);
	return rc;
}

void spec_release(struct spec *s)
{
	char **strs[] = {
		&s->path,
		&s->dir,
		&s->text,
		&s->name,
		&s->template_path,
		&s->template_src,
		&s->reference_path,
		&s->reference_src,
		&s->marker_start,
		&s->marker_end,
		&s->build_options,
		&s->semantics,
		&s->evalpod,
		&s->storage,
		&s->output_dir,
		&s->s3.endpoint,
		&s->s3.region,
		&s->s3.profile,
		&s->s3.ca_file,
		&s->kube.kubeconfig,
		&s->kube.context,
		&s->kube.namespace,
		&s->kube.job_template,
		&s->kube.image,
		&s->kube.image_pull_policy,
		&s->kube.service_account,
		&s->kube.priority_class,
		&s->kube.queue,
		&s->kube.gpu_resource,
	};
	json_t **objs[] = { &s->problem,         &s->shapes,
			    &s->correctness,     &s->measurement,
			    &s->limits,          &s->device,
			    &s->proposer_conf,   &s->kube.node_selector,
			    &s->kube.tolerations };

	for (size_t i = 0; i < ARRAY_SIZE(strs); i++)
		free(*strs[i]);
	for (size_t i = 0; i < ARRAY_SIZE(objs); i++)
		json_decref(*objs[i]);
	for (size_t i = 0; i < s->ntunables; i++) {
		free(s->tunables[i].name);
		free(s->tunables[i].values);
	}
	free(s->tunables);
	for (size_t i = 0; i < s->nconstraints; i++)
		free(s->constraints[i]);
	free(s->constraints);
	proposer_release(s);
	memset(s, 0, sizeof(*s));
}
