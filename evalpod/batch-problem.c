/*
 * batch-problem.c - the "problem" section of an EvalBatch document: element
 * types, the buffers and their initial values, the scalars, and the launch
 * plans (kernel, arguments, global and local sizes) of the variants and of
 * the reference.
 *
 * May use: batch-read.c (batch-internal.h), common/ (jsonx, err, xalloc,
 * initdist) and expr.h.  batch.c calls parse_problem() as one of its stages
 * and frees what it fills in batch_release().
 */
#include "batch-internal.h"
#include "err.h"
#include "initdist.h"
#include "jsonx.h"
#include "xalloc.h"

#include <float.h>
#include <string.h>

#define MAX_BUFFERS 256
#define MAX_SCALARS 256
#define MAX_LAUNCH  64
#define MAX_ARGS    256

/* ---- element types ---- */

static const char *const elem_names[] = {
	[ELEM_FLOAT] = "float", [ELEM_DOUBLE] = "double", [ELEM_INT] = "int",
	[ELEM_UINT] = "uint",   [ELEM_LONG] = "long",     [ELEM_ULONG] = "ulong",
};

static const struct elem_info {
	size_t size;
	int is_float;
	double int_lo, int_hi; /* integers the type holds exactly */
	double fmax;           /* largest finite value (float types) */
} elem_info[ELEM_NR] = {
	[ELEM_FLOAT] = { 4, 1, -16777216.0, 16777216.0, FLT_MAX },
	[ELEM_DOUBLE] = { 8, 1, -9007199254740992.0, 9007199254740992.0, DBL_MAX },
	[ELEM_INT] = { 4, 0, -2147483648.0, 2147483647.0, 0 },
	[ELEM_UINT] = { 4, 0, 0, 4294967295.0, 0 },
	[ELEM_LONG] = { 8, 0, -9007199254740992.0, 9007199254740992.0, 0 },
	[ELEM_ULONG] = { 8, 0, 0, 9007199254740992.0, 0 },
};

const char *elem_type_name(enum elem_type t)
{
	return (unsigned)t < ELEM_NR ? elem_names[t] : "unknown";
}

size_t elem_type_size(enum elem_type t)
{
	return (unsigned)t < ELEM_NR ? elem_info[t].size : 0;
}

int elem_type_is_float(enum elem_type t)
{
	return (unsigned)t < ELEM_NR && elem_info[t].is_float;
}

/* ---- buffer roles ---- */

static const char *const role_names[] = {
	[ROLE_INPUT] = "input",
	[ROLE_OUTPUT] = "output",
	[ROLE_INOUT] = "inout",
	[ROLE_SCRATCH] = "scratch",
};

/* The init distributions: common/initdist.h, shared with kctl's spec reader. */
_Static_assert(INIT_IOTA + 1 == INITDIST_NR, "enum init_dist follows initdist.h");

/* ---- problem: buffers and scalars ---- */

/* Finds name among the first nb buffers and ns scalars; returns 0 when found. */
static int find_symbol(const struct batch *b, const char *name, size_t nb, size_t ns,
		       enum arg_kind *kind, size_t *idx)
{
	for (size_t i = 0; i < nb; i++)
		if (b->buffers[i].name && !strcmp(b->buffers[i].name, name)) {
			*kind = ARG_BUFFER;
			*idx = i;
			return 0;
		}
	for (size_t i = 0; i < ns; i++)
		if (b->scalars[i].name && !strcmp(b->scalars[i].name, name)) {
			*kind = ARG_SCALAR;
			*idx = i;
			return 0;
		}
	return KERR_NOTFOUND;
}

static int check_unique_symbol(const struct batch *b, const char *name, size_t nb, size_t ns,
			       const char *path, char *msg, size_t n)
{
	enum arg_kind kind;
	size_t idx;

	if (find_symbol(b, name, nb, ns, &kind, &idx))
		return 0;
	return kerr_set(msg, n, KERR_INVALID, "%s.name: '%s' is already the name of %s %zu", path,
			name, kind == ARG_BUFFER ? "buffer" : "scalar", idx);
}

/* Reads init.key (a or b of dist d) into *out within the element type's range. */
static int init_number(json_t *init, const char *path, const char *key, int required, int integral,
		       int nonneg, enum elem_type t, double *out, char *msg, size_t n)
{
	const struct elem_info *e = &elem_info[t];
	int64_t x = 0;
	int rc;

	if (!key)
		return 0;
	if (!integral)
		return jx_num(init, path, key, required, nonneg ? 0 : -e->fmax, e->fmax, out, msg,
			      n);
	rc = jx_int(init, path, key, required, (int64_t)e->int_lo, (int64_t)e->int_hi, &x, msg, n);
	if (!rc && json_object_get(init, key))
		*out = (double)x;
	return rc;
}

static int parse_init(json_t *buf, const char *path, struct buf_spec *bs, char *msg, size_t n)
{
	const struct initdist *d;
	const char *keys[4] = { "dist", NULL, NULL, NULL };
	char ipath[PATH_LEN];
	json_t *init;
	int dist = 0, integral, is_float = elem_info[bs->type].is_float;
	int rc = jx_obj(buf, path, "init", JX_OPTIONAL, &init, msg, n);

	bs->init = is_float ? (struct init_spec){ INIT_UNIFORM, -1, 1 }
			    : (struct init_spec){ INIT_INT, 0, 9 };
	if (rc || !init)
		return rc;
	path_fmt(ipath, "%s.init", path);
	rc = get_enum(init, ipath, "dist", JX_REQUIRED, initdist_names, INITDIST_NR, &dist, msg, n);
	if (rc)
		return rc;
	d = &initdists[dist];
	keys[1] = d->key_a;
	keys[2] = d->key_b;
	rc = jx_known_keys(init, ipath, keys, msg, n);
	if (!rc && d->float_only && !is_float)
		return kerr_set(msg, n, KERR_INVALID,
				"%s.dist: '%s' gives non-integer values; %s buffers take zero, "
				"const, int or iota",
				ipath, initdist_names[dist], elem_names[bs->type]);
	bs->init = (struct init_spec){ (enum init_dist)dist, d->def_a, d->def_b };
	integral = d->integral || !is_float;
	if (!rc)
		rc = init_number(init, ipath, d->key_a, d->a_required, integral, 0, bs->type,
				 &bs->init.a, msg, n);
	if (!rc)
		rc = init_number(init, ipath, d->key_b, JX_OPTIONAL, integral, d->b_nonneg,
				 bs->type, &bs->init.b, msg, n);
	if (!rc && d->ordered && bs->init.b < bs->init.a)
		rc = kerr_set(msg, n, KERR_RANGE, "%s.%s: %g is less than %s (%g)", ipath, d->key_b,
			      bs->init.b, d->key_a, bs->init.a);
	return rc;
}

static int parse_buffer(struct batch *b, size_t i, json_t *o, const char *path, char *msg, size_t n)
{
	static const char *const keys[] = { "name", "type", "count", "role", "init", NULL };
	struct buf_spec *bs = &b->buffers[i];
	int type = ELEM_FLOAT, role = ROLE_INPUT;
	int rc = need_object(o, path, msg, n);

	if (!rc)
		rc = jx_known_keys(o, path, keys, msg, n);
	if (!rc)
		rc = get_str(o, path, "name", JX_REQUIRED, NK_IDENT, &bs->name, msg, n);
	if (!rc)
		rc = check_unique_symbol(b, bs->name, i, 0, path, msg, n);
	if (!rc)
		rc = get_enum(o, path, "type", JX_REQUIRED, elem_names, ELEM_NR, &type, msg, n);
	bs->type = (enum elem_type)type;
	if (!rc)
		rc = get_expr(o, path, "count", JX_REQUIRED, 0, &bs->count, msg, n);
	if (!rc)
		rc = get_enum(o, path, "role", JX_OPTIONAL, role_names, ARRAY_SIZE(role_names),
			      &role, msg, n);
	bs->role = (enum buf_role)role;
	if (!rc)
		rc = parse_init(o, path, bs, msg, n);
	return rc;
}

static int parse_scalar(struct batch *b, size_t i, json_t *o, const char *path, char *msg, size_t n)
{
	static const char *const keys[] = { "name", "type", "value", NULL };
	struct scalar_spec *s = &b->scalars[i];
	int type = ELEM_INT;
	int rc = need_object(o, path, msg, n);

	if (!rc)
		rc = jx_known_keys(o, path, keys, msg, n);
	if (!rc)
		rc = get_str(o, path, "name", JX_REQUIRED, NK_IDENT, &s->name, msg, n);
	if (!rc)
		rc = check_unique_symbol(b, s->name, b->nbuffers, i, path, msg, n);
	if (!rc)
		rc = get_enum(o, path, "type", JX_REQUIRED, elem_names, ELEM_NR, &type, msg, n);
	s->type = (enum elem_type)type;
	if (rc)
		return rc;
	if (elem_info[s->type].is_float)
		return jx_num(o, path, "value", JX_REQUIRED, -elem_info[s->type].fmax,
			      elem_info[s->type].fmax, &s->fvalue, msg, n);
	return get_expr(o, path, "value", JX_REQUIRED, 1, &s->expr, msg, n);
}

static int parse_buffers(struct batch *b, json_t *p, char *msg, size_t n)
{
	char path[PATH_LEN];
	json_t *arr, *v;
	size_t i;
	int rc = get_arr(p, "$.problem", "buffers", JX_REQUIRED, 1, MAX_BUFFERS, &arr, msg, n);

	if (rc)
		return rc;
	b->buffers = xcalloc(json_array_size(arr), sizeof(*b->buffers));
	b->nbuffers = json_array_size(arr);
	json_array_foreach (arr, i, v) {
		path_fmt(path, "$.problem.buffers[%zu]", i);
		rc = parse_buffer(b, i, v, path, msg, n);
		if (rc)
			return rc;
	}
	for (i = 0; i < b->nbuffers; i++)
		if (b->buffers[i].role == ROLE_OUTPUT || b->buffers[i].role == ROLE_INOUT)
			return 0;
	return kerr_set(msg, n, KERR_INVALID,
			"$.problem.buffers: no buffer has role output or inout, nothing to check");
}

static int parse_scalars(struct batch *b, json_t *p, char *msg, size_t n)
{
	char path[PATH_LEN];
	json_t *arr, *v;
	size_t i;
	int rc = get_arr(p, "$.problem", "scalars", JX_OPTIONAL, 0, MAX_SCALARS, &arr, msg, n);

	if (rc || !arr)
		return rc;
	b->scalars = xcalloc(json_array_size(arr), sizeof(*b->scalars));
	b->nscalars = json_array_size(arr);
	json_array_foreach (arr, i, v) {
		path_fmt(path, "$.problem.scalars[%zu]", i);
		rc = parse_scalar(b, i, v, path, msg, n);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- problem: launch plans ---- */

static int parse_arg(const struct batch *b, json_t *v, const char *path, struct arg_spec *a,
		     char *msg, size_t n)
{
	static const char *const keys[] = { "local", NULL };
	int rc;

	if (json_is_string(v)) {
		if (!find_symbol(b, json_string_value(v), b->nbuffers, b->nscalars, &a->kind,
				 &a->index))
			return 0;
		return kerr_set(msg, n, KERR_INVALID, "%s: '%.40s' names no buffer or scalar", path,
				json_string_value(v));
	}
	if (!json_is_object(v))
		return kerr_set(msg, n, KERR_PARSE,
				"%s: expected a buffer or scalar name or {\"local\": bytes}, "
				"got %s",
				path, jx_type_name(v));
	a->kind = ARG_LOCAL;
	rc = jx_known_keys(v, path, keys, msg, n);
	if (!rc)
		rc = get_expr(v, path, "local", JX_REQUIRED, 0, &a->local_bytes, msg, n);
	return rc;
}

/* Reads key (global or local) into out[0..*dims) as expressions. */
static int parse_dims(json_t *o, const char *path, const char *key, char **out, unsigned *dims,
		      char *msg, size_t n)
{
	char epath[PATH_LEN];
	json_t *arr, *v;
	size_t i;
	int rc = get_arr(o, path, key, JX_REQUIRED, 1, 3, &arr, msg, n);

	if (rc)
		return rc;
	*dims = (unsigned)json_array_size(arr);
	json_array_foreach (arr, i, v) {
		path_fmt(epath, "%s.%s[%zu]", path, key, i);
		rc = expr_value(v, epath, 0, &out[i], msg, n);
		if (rc)
			return rc;
	}
	return 0;
}

static int parse_launch_step(const struct batch *b, json_t *o, const char *path,
			     struct launch_spec *ls, char *msg, size_t n)
{
	static const char *const keys[] = { "kernel", "args", "global", "local", NULL };
	char apath[PATH_LEN];
	json_t *args, *v, *local = json_object_get(o, "local");
	unsigned ldims = 0;
	size_t i;
	int rc = need_object(o, path, msg, n);

	if (!rc)
		rc = jx_known_keys(o, path, keys, msg, n);
	if (!rc)
		rc = get_str(o, path, "kernel", JX_REQUIRED, NK_IDENT, &ls->kernel, msg, n);
	if (!rc)
		rc = get_arr(o, path, "args", JX_REQUIRED, 0, MAX_ARGS, &args, msg, n);
	if (rc)
		return rc;
	ls->args = xcalloc(json_array_size(args), sizeof(*ls->args));
	ls->nargs = json_array_size(args);
	json_array_foreach (args, i, v) {
		path_fmt(apath, "%s.args[%zu]", path, i);
		rc = parse_arg(b, v, apath, &ls->args[i], msg, n);
		if (rc)
			return rc;
	}
	rc = parse_dims(o, path, "global", ls->global, &ls->dims, msg, n);
	if (rc || !local || json_is_null(local))
		return rc;
	rc = parse_dims(o, path, "local", ls->local, &ldims, msg, n);
	if (!rc && ldims != ls->dims)
		rc = kerr_set(msg, n, KERR_INVALID, "%s.local: has %u entries, global has %u", path,
			      ldims, ls->dims);
	return rc;
}

static int parse_launch_list(struct batch *b, json_t *p, const char *key, struct launch_spec **out,
			     size_t *nout, char *msg, size_t n)
{
	char path[PATH_LEN];
	json_t *arr, *v;
	size_t i;
	int rc = get_arr(p, "$.problem", key, JX_REQUIRED, 1, MAX_LAUNCH, &arr, msg, n);

	if (rc)
		return rc;
	*out = xcalloc(json_array_size(arr), sizeof(**out));
	*nout = json_array_size(arr);
	json_array_foreach (arr, i, v) {
		path_fmt(path, "$.problem.%s[%zu]", key, i);
		rc = parse_launch_step(b, v, path, &(*out)[i], msg, n);
		if (rc)
			return rc;
	}
	return 0;
}

int parse_problem(struct batch *b, json_t *root, char *msg, size_t n)
{
	static const char *const keys[] = {
		"name",  "semantics", "buffers", "scalars", "launch", "reference_launch",
		"flops", "bytes",     NULL,
	};
	const char *P = "$.problem";
	json_t *p;
	int rc = jx_obj(root, "$", "problem", JX_REQUIRED, &p, msg, n);

	if (!rc)
		rc = jx_known_keys(p, P, keys, msg, n);
	if (!rc)
		rc = get_str(p, P, "name", JX_REQUIRED, NK_TEXT, &b->problem_name, msg, n);
	if (!rc)
		rc = get_str(p, P, "semantics", GS_NULLABLE, NK_TEXT, &b->semantics, msg, n);
	if (!rc)
		rc = parse_buffers(b, p, msg, n);
	if (!rc)
		rc = parse_scalars(b, p, msg, n);
	if (!rc)
		rc = parse_launch_list(b, p, "launch", &b->launch, &b->nlaunch, msg, n);
	if (!rc && json_object_get(p, "reference_launch")) {
		b->ref_launch_owned = 1;
		rc = parse_launch_list(b, p, "reference_launch", &b->ref_launch, &b->nref_launch,
				       msg, n);
	} else if (!rc) {
		b->ref_launch = b->launch;
		b->nref_launch = b->nlaunch;
	}
	if (!rc)
		rc = get_expr(p, P, "flops", JX_OPTIONAL, 0, &b->flops, msg, n);
	if (!rc)
		rc = get_expr(p, P, "bytes", JX_OPTIONAL, 0, &b->bytes, msg, n);
	return rc;
}
