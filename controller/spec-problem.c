/*
 * spec-problem.c - the spec's problem and shapes sections: element types and
 * initial values, buffers, scalars, launch plans (the template's and the
 * reference's), flops and bytes, and the shapes with their values.
 *
 * May use: spec-internal.h (the field tables and checks of spec-read.c), yamlx,
 * initdist, expr and common/.  spec.c calls read_problem() and read_shapes()
 * from its table of sections.
 */
#include "spec-internal.h"
#include "err.h"
#include "initdist.h"
#include "expr.h"
#include "sbuf.h"
#include "xalloc.h"
#include "yamlx.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BUFFERS      256
#define MAX_SCALARS      256
#define MAX_LAUNCH       64
#define MAX_ARGS         256
#define MAX_SHAPES       64
#define MAX_SHAPE_VALUES 256

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
		rc = spec_check_rule(ld, yamlx_map_key(&ld->y, nd, i), path, name, R_IDENT);
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

		rc = spec_field_read(ld, vn, vpath, &f, &v);
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
		rc = spec_check_rule(ld, k, path, yamlx_text(k), R_IDENT);
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

int read_problem(struct ld *ld, const yaml_node_t *nd, const char *path)
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
		rc = spec_check_rule(ld, k, kpath, yamlx_text(k), R_IDENT);
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
	if (!at && !spec_rule_ok(dflt, R_ID))
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

int read_shapes(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	char spath[YAMLX_PATH_LEN];
	json_t *shape = NULL;
	int rc = yamlx_need_list(&ld->y, nd, path, 1, MAX_SHAPES);

	ld->s->shapes = json_array();
	/* Several may be timed (shape buckets); the first timed is the primary. */
	for (size_t i = 0; !rc && i < yamlx_list_size(nd); i++) {
		const yaml_node_t *item = yamlx_list_item(&ld->y, nd, i);

		yamlx_path_idx(spath, path, i);
		rc = read_shape(ld, item, spath, ld->s->shapes, &shape);
		json_array_append_new(ld->s->shapes, shape);
		shape = NULL;
	}
	return rc;
}
