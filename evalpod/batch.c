/*
 * batch.c - parsing and validating EvalBatch documents (see batch.h and
 * docs/evalbatch.md).
 *
 * The parser is a table of stages, one per top-level section, each reading
 * its keys through jsonx so that every message starts with the JSON path at
 * fault.  Every count in struct batch is set right after its array is
 * allocated zeroed, so batch_release() can free a half-filled struct.
 */
#include "batch.h"
#include "err.h"
#include "initdist.h"
#include "jsonx.h"
#include "xalloc.h"

#include <float.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define PATH_LEN 512 /* ids and names are at most 128 bytes, so paths fit */
#define WHY_LEN  256

#define MAX_BUFFERS      256
#define MAX_SCALARS      256
#define MAX_LAUNCH       64
#define MAX_ARGS         256
#define MAX_SHAPES       64
#define MAX_SHAPE_VALUES 256
#define MAX_VARIANTS     4096
#define MIN_SEEDS        3
#define MAX_SEEDS        64
#define MAX_ARTIFACTS    64
#define MAX_FIELDS       16

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* get_str flags: JX_REQUIRED, and null accepted as "absent". */
#define GS_NULLABLE 2

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

/* ---- other enum names ---- */

static const char *const role_names[] = {
	[ROLE_INPUT] = "input",
	[ROLE_OUTPUT] = "output",
	[ROLE_INOUT] = "inout",
	[ROLE_SCRATCH] = "scratch",
};

static const char *const device_type_names[] = { "any", "gpu", "cpu", "accelerator" };

/* The init distributions: common/initdist.h, shared with kctl's spec reader. */
_Static_assert(INIT_IOTA + 1 == INITDIST_NR, "enum init_dist follows initdist.h");

/* ---- names and ids ---- */

enum name_kind { NK_ANY, NK_TEXT, NK_IDENT, NK_ID };

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

static int check_name(const char *s, enum name_kind k, const char *path, char *msg, size_t n)
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
static void path_fmt(char *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void path_fmt(char *p, const char *fmt, ...)
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
static int get_str(json_t *obj, const char *path, const char *key, int flags, enum name_kind kind,
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
static int need_object(json_t *v, const char *path, char *msg, size_t n)
{
	if (json_is_object(v))
		return 0;
	return kerr_set(msg, n, KERR_PARSE, "%s: expected an object, got %s", path,
			jx_type_name(v));
}

/* Reads key as one of names[0..nr) into *out (its index). */
static int get_enum(json_t *obj, const char *path, const char *key, int required,
		    const char *const *names, size_t nr, int *out, char *msg, size_t n)
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
static int get_arr(json_t *obj, const char *path, const char *key, int required, size_t lo,
		   size_t hi, json_t **out, char *msg, size_t n)
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
static int expr_value(json_t *v, const char *path, int allow_negative, char **out, char *msg,
		      size_t n)
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

static int get_expr(json_t *obj, const char *path, const char *key, int required,
		    int allow_negative, char **out, char *msg, size_t n)
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

enum field_kind { FK_INT, FK_I64, FK_U64, FK_SIZE, FK_NUM, FK_BOOL };

struct field {
	const char *key;
	enum field_kind kind;
	size_t off;    /* in the struct being filled */
	double lo, hi; /* inclusive; integers for the integer kinds */
};

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
static int fields_known(json_t *obj, const char *path, const struct field *f, size_t nf,
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
static int fields_read(json_t *obj, const char *path, const struct field *f, size_t nf, void *base,
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

static int parse_problem(struct batch *b, json_t *root, char *msg, size_t n)
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

/* ---- shapes ---- */

static int parse_shape_values(json_t *o, const char *path, struct shape_spec *s, char *msg,
			      size_t n)
{
	char vpath[PATH_LEN], kpath[PATH_LEN];
	const char *key;
	json_t *values, *v;
	int64_t x = 0;
	int rc = jx_obj(o, path, "values", JX_REQUIRED, &values, msg, n);

	if (rc)
		return rc;
	if (json_object_size(values) > MAX_SHAPE_VALUES)
		return kerr_set(msg, n, KERR_RANGE, "%s.values: has %zu names, at most %d", path,
				json_object_size(values), MAX_SHAPE_VALUES);
	path_fmt(vpath, "%s.values", path);
	json_object_foreach (values, key, v) {
		path_fmt(kpath, "%s.%s", vpath, key);
		rc = check_name(key, NK_IDENT, kpath, msg, n);
		if (!rc)
			rc = jx_int(values, vpath, key, JX_REQUIRED, INT64_MIN, INT64_MAX, &x, msg,
				    n);
		if (rc)
			return rc;
		expr_vars_set(&s->vars, key, x);
	}
	return 0;
}

static int parse_shape(struct batch *b, size_t i, json_t *o, const char *path, char *msg, size_t n)
{
	static const char *const keys[] = { "name", "values", "timed", NULL };
	struct shape_spec *s = &b->shapes[i];
	int rc = need_object(o, path, msg, n);

	if (!rc)
		rc = jx_known_keys(o, path, keys, msg, n);
	if (!rc)
		rc = get_str(o, path, "name", JX_REQUIRED, NK_ID, &s->name, msg, n);
	for (size_t j = 0; j < i && !rc; j++)
		if (!strcmp(b->shapes[j].name, s->name))
			rc = kerr_set(msg, n, KERR_INVALID,
				      "%s.name: '%s' is also the name of $.shapes[%zu]", path,
				      s->name, j);
	if (!rc)
		rc = parse_shape_values(o, path, s, msg, n);
	if (!rc)
		rc = jx_bool(o, path, "timed", JX_OPTIONAL, &s->timed, msg, n);
	return rc;
}

static int parse_shapes(struct batch *b, json_t *root, char *msg, size_t n)
{
	char path[PATH_LEN];
	json_t *arr, *v;
	size_t i, timed = SIZE_MAX;
	int rc = get_arr(root, "$", "shapes", JX_REQUIRED, 1, MAX_SHAPES, &arr, msg, n);

	if (rc)
		return rc;
	b->shapes = xcalloc(json_array_size(arr), sizeof(*b->shapes));
	b->nshapes = json_array_size(arr);
	json_array_foreach (arr, i, v) {
		path_fmt(path, "$.shapes[%zu]", i);
		rc = parse_shape(b, i, v, path, msg, n);
		if (rc)
			return rc;
		if (!b->shapes[i].timed)
			continue;
		if (timed != SIZE_MAX)
			return kerr_set(msg, n, KERR_INVALID,
					"%s.timed: shape '%s' is timed and so is $.shapes[%zu] "
					"'%s'; at most one shape is timed",
					path, b->shapes[i].name, timed, b->shapes[timed].name);
		timed = i;
	}
	b->timed_shape = timed == SIZE_MAX ? 0 : timed;
	b->shapes[b->timed_shape].timed = 1;
	return 0;
}

/* ---- programs: reference, baseline, variants ---- */

/*
 * Reads one program object; keys lists what this kind of program may carry.
 * def_id is the id when the document gives none (NULL: id is required).
 */
static int parse_program(json_t *o, const char *path, const char *const *keys, const char *def_id,
			 struct source_spec *s, char *msg, size_t n)
{
	int rc = need_object(o, path, msg, n);

	if (!rc)
		rc = jx_known_keys(o, path, keys, msg, n);
	if (!rc)
		rc = get_str(o, path, "id", def_id ? JX_OPTIONAL : JX_REQUIRED, NK_ID, &s->id, msg,
			     n);
	if (!rc && !s->id)
		s->id = xstrdup(def_id);
	if (!rc)
		rc = get_str(o, path, "parent", GS_NULLABLE, NK_ID, &s->parent, msg, n);
	if (!rc)
		rc = get_str(o, path, "source", JX_REQUIRED, NK_TEXT, &s->source, msg, n);
	if (!rc)
		rc = get_str(o, path, "build_options", JX_OPTIONAL, NK_ANY, &s->options, msg, n);
	if (!rc && !s->options)
		s->options = xstrdup("");
	if (!rc)
		rc = get_str(o, path, "rationale", GS_NULLABLE, NK_ANY, &s->rationale, msg, n);
	return rc;
}

/* Records id (found at path) in seen; fails when reserved or already there. */
static int claim_id(json_t *seen, const char *id, const char *path, char *msg, size_t n)
{
	json_t *other = json_object_get(seen, id);

	/* "reference" names the reference; "summary" would collide with summary.json. */
	if (!strcmp(id, "reference") || !strcmp(id, "summary"))
		return kerr_set(msg, n, KERR_INVALID, "%s.id: '%s' is reserved", path, id);
	if (other)
		return kerr_set(msg, n, KERR_INVALID, "%s.id: '%s' is also the id of %s", path, id,
				json_string_value(other));
	json_object_set_new(seen, id, json_string(path));
	return 0;
}

static int parse_variants(struct batch *b, json_t *root, json_t *seen, char *msg, size_t n)
{
	static const char *const keys[] = { "id",        "parent", "source", "build_options",
					    "rationale", NULL };
	char path[PATH_LEN];
	json_t *arr, *v;
	size_t i;
	int rc = get_arr(root, "$", "variants", JX_OPTIONAL, 0, MAX_VARIANTS, &arr, msg, n);

	if (rc || !arr)
		return rc;
	b->variants = xcalloc(json_array_size(arr), sizeof(*b->variants));
	b->nvariants = json_array_size(arr);
	json_array_foreach (arr, i, v) {
		path_fmt(path, "$.variants[%zu]", i);
		rc = parse_program(v, path, keys, NULL, &b->variants[i], msg, n);
		if (!rc)
			rc = claim_id(seen, b->variants[i].id, path, msg, n);
		if (rc)
			return rc;
	}
	return 0;
}

static int parse_programs(struct batch *b, json_t *root, char *msg, size_t n)
{
	static const char *const ref_keys[] = { "source", "build_options", NULL };
	static const char *const base_keys[] = { "id", "source", "build_options", "parent", NULL };
	json_t *o, *seen = json_object();
	int rc = jx_obj(root, "$", "reference", JX_REQUIRED, &o, msg, n);

	if (!rc)
		rc = parse_program(o, "$.reference", ref_keys, "reference", &b->reference, msg, n);
	if (!rc)
		rc = jx_obj(root, "$", "baseline", JX_OPTIONAL, &o, msg, n);
	if (!rc && o) {
		b->baseline = xcalloc(1, sizeof(*b->baseline));
		rc = parse_program(o, "$.baseline", base_keys, "baseline", b->baseline, msg, n);
		if (!rc)
			rc = claim_id(seen, b->baseline->id, "$.baseline", msg, n);
	}
	if (!rc)
		rc = parse_variants(b, root, seen, msg, n);
	json_decref(seen);
	return rc;
}

/* ---- measurement, correctness, limits, device ---- */

#define MF(key, kind, member, lo, hi)                                                              \
	{                                                                                          \
		key, kind, offsetof(struct measure_spec, member), lo, hi                           \
	}

static const struct field measure_fields[] = {
	MF("warmup", FK_INT, warmup, 0, 1000),
	MF("min_samples", FK_INT, min_samples, 1, 1000000),
	MF("max_samples", FK_INT, max_samples, 1, 1000000),
	MF("min_time_ms", FK_NUM, min_time_ms, 0, 3600000),
	MF("max_time_ms", FK_NUM, max_time_ms, 0, 3600000),
	MF("precision", FK_NUM, precision, 0, 1),
	MF("sample_min_ms", FK_NUM, sample_min_ms, 0, 60000),
	MF("flush", FK_BOOL, flush, 0, 1),
	MF("flush_bytes", FK_I64, flush_bytes, 0, 1099511627776.0),
	MF("order_seed", FK_U64, order_seed, 0, 9e18),
};

static int parse_measure(struct batch *b, json_t *root, char *msg, size_t n)
{
	const char *P = "$.measurement";
	struct measure_spec *m = &b->measure;
	json_t *o;
	int rc = jx_obj(root, "$", "measurement", JX_OPTIONAL, &o, msg, n);

	if (rc || !o)
		return rc;
	rc = fields_known(o, P, measure_fields, ARRAY_SIZE(measure_fields), NULL, msg, n);
	if (!rc)
		rc = fields_read(o, P, measure_fields, ARRAY_SIZE(measure_fields), m, msg, n);
	if (!rc && m->min_samples > m->max_samples)
		rc = kerr_set(msg, n, KERR_RANGE,
			      "%s.min_samples: %d is greater than max_samples (%d)", P,
			      m->min_samples, m->max_samples);
	if (!rc && m->min_time_ms > m->max_time_ms)
		rc = kerr_set(msg, n, KERR_RANGE,
			      "%s.min_time_ms: %g is greater than max_time_ms (%g)", P,
			      m->min_time_ms, m->max_time_ms);
	return rc;
}

static const struct field correct_fields[] = {
	{ "atol", FK_NUM, offsetof(struct correct_spec, atol), 0, DBL_MAX },
	{ "rtol", FK_NUM, offsetof(struct correct_spec, rtol), 0, DBL_MAX },
	{ "determinism", FK_BOOL, offsetof(struct correct_spec, determinism), 0, 1 },
};

static int parse_seeds(struct correct_spec *c, json_t *o, const char *path, char *msg, size_t n)
{
	json_t *arr, *v;
	size_t i;
	int rc = get_arr(o, path, "seeds", JX_OPTIONAL, MIN_SEEDS, MAX_SEEDS, &arr, msg, n);

	if (rc || !arr)
		return rc;
	free(c->seeds);
	c->seeds = xcalloc(json_array_size(arr), sizeof(*c->seeds));
	c->nseeds = 0;
	json_array_foreach (arr, i, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			return kerr_set(msg, n, KERR_PARSE,
					"%s.seeds[%zu]: expected a non-negative integer", path, i);
		c->seeds[i] = (uint64_t)json_integer_value(v);
		for (size_t j = 0; j < i; j++)
			if (c->seeds[j] == c->seeds[i])
				return kerr_set(msg, n, KERR_INVALID,
						"%s.seeds[%zu]: %llu repeats seeds[%zu]", path, i,
						(unsigned long long)c->seeds[i], j);
		c->nseeds = i + 1;
	}
	return 0;
}

static int parse_correct(struct batch *b, json_t *root, char *msg, size_t n)
{
	static const char *const extra[] = { "seeds", NULL };
	const char *P = "$.correctness";
	json_t *o;
	int rc = jx_obj(root, "$", "correctness", JX_OPTIONAL, &o, msg, n);

	if (!rc && o)
		rc = fields_known(o, P, correct_fields, ARRAY_SIZE(correct_fields), extra, msg, n);
	if (!rc && o)
		rc = fields_read(o, P, correct_fields, ARRAY_SIZE(correct_fields), &b->correct, msg,
				 n);
	if (!rc && o)
		rc = parse_seeds(&b->correct, o, P, msg, n);
	if (!rc && !b->correct.seeds) {
		b->correct.seeds = xcalloc(MIN_SEEDS, sizeof(*b->correct.seeds));
		for (size_t i = 0; i < MIN_SEEDS; i++)
			b->correct.seeds[i] = i + 1;
		b->correct.nseeds = MIN_SEEDS;
	}
	return rc;
}

static const struct field limit_fields[] = {
	{ "compile_timeout_s", FK_NUM, offsetof(struct limit_spec, compile_timeout_s), 0.001,
	  86400 },
	{ "run_timeout_s", FK_NUM, offsetof(struct limit_spec, run_timeout_s), 0.001, 86400 },
	{ "time_timeout_s", FK_NUM, offsetof(struct limit_spec, time_timeout_s), 0.001, 604800 },
	{ "log_max_bytes", FK_SIZE, offsetof(struct limit_spec, log_max_bytes), 0, 1 << 26 },
	{ "peak_margin", FK_NUM, offsetof(struct limit_spec, peak_margin), 1, 100 },
	{ "memory_mb", FK_SIZE, offsetof(struct limit_spec, memory_mb), 64, 1 << 24 },
};

static int parse_limits(struct batch *b, json_t *root, char *msg, size_t n)
{
	json_t *o;
	int rc = jx_obj(root, "$", "limits", JX_OPTIONAL, &o, msg, n);

	if (!rc && o)
		rc = fields_known(o, "$.limits", limit_fields, ARRAY_SIZE(limit_fields), NULL, msg,
				  n);
	if (!rc && o)
		rc = fields_read(o, "$.limits", limit_fields, ARRAY_SIZE(limit_fields), &b->limits,
				 msg, n);
	return rc;
}

static const struct field device_fields[] = {
	{ "index", FK_INT, offsetof(struct device_spec, index), 0, 1023 },
};

/* Reads an optional substring filter; "" means no filter (NULL). */
static int device_filter(json_t *o, const char *key, char **out, char *msg, size_t n)
{
	const char *s = NULL;
	int rc = jx_str(o, "$.device", key, JX_OPTIONAL, &s, msg, n);

	if (!rc && s && *s)
		*out = xstrdup(s);
	return rc;
}

static int parse_device(struct batch *b, json_t *root, char *msg, size_t n)
{
	static const char *const extra[] = { "platform", "device", "type", NULL };
	const char *P = "$.device";
	json_t *o;
	int rc = jx_obj(root, "$", "device", JX_OPTIONAL, &o, msg, n);

	if (rc || !o)
		return rc;
	rc = fields_known(o, P, device_fields, ARRAY_SIZE(device_fields), extra, msg, n);
	if (!rc)
		rc = fields_read(o, P, device_fields, ARRAY_SIZE(device_fields), &b->device, msg,
				 n);
	if (!rc)
		rc = device_filter(o, "platform", &b->device.platform, msg, n);
	if (!rc)
		rc = device_filter(o, "device", &b->device.device, msg, n);
	if (!rc)
		rc = get_enum(o, P, "type", JX_OPTIONAL, device_type_names,
			      ARRAY_SIZE(device_type_names), &b->device.type, msg, n);
	return rc;
}

/* ---- outputs ---- */

/* Presigned URLs carry signatures, so messages never quote them. */
static int check_url(const char *u, const char *path, char *msg, size_t n)
{
	size_t skip = !strncasecmp(u, "https://", 8) ? 8 : !strncasecmp(u, "http://", 7) ? 7 : 0;

	if (!skip || !u[skip] || u[skip] == '/')
		return kerr_set(msg, n, KERR_INVALID, "%s: expected an http:// or https:// URL",
				path);
	for (const char *p = u; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return kerr_set(msg, n, KERR_INVALID,
					"%s: URL contains a space or control character", path);
	return 0;
}

/* Reads obj.key (at path.key) as a URL into *out (a copy). */
static int get_url(json_t *obj, const char *path, const char *key, char **out, char *msg, size_t n)
{
	char kpath[PATH_LEN];
	const char *s = NULL;
	int rc = jx_str(obj, path, key, JX_REQUIRED, &s, msg, n);

	if (rc)
		return rc;
	path_fmt(kpath, "%s.%s", path, key);
	rc = check_url(s, kpath, msg, n);
	if (!rc)
		*out = xstrdup(s);
	return rc;
}

/* True when id names a program of the batch (the reference included). */
static int known_program(const struct batch *b, const char *id)
{
	return !strcmp(id, "reference") || (b->baseline && !strcmp(b->baseline->id, id)) ||
	       batch_variant(b, id);
}

/* Finds or appends the targets of id (space is reserved by the caller). */
static struct output_url *output_slot(struct output_spec *o, const char *id)
{
	for (size_t i = 0; i < o->nurls; i++)
		if (!strcmp(o->urls[i].id, id))
			return &o->urls[i];
	o->urls[o->nurls].id = xstrdup(id);
	return &o->urls[o->nurls++];
}

static int check_output_id(const struct batch *b, const char *id, const char *path, char *msg,
			   size_t n)
{
	if (known_program(b, id))
		return 0;
	return kerr_set(msg, n, KERR_INVALID, "%s.%s: '%.40s' is not a program of this batch", path,
			id, id);
}

static int parse_artifacts(struct output_url *u, json_t *o, const char *path, char *msg, size_t n)
{
	char kpath[PATH_LEN];
	const char *name;
	json_t *v;
	int rc = 0;

	if (json_object_size(o) > MAX_ARTIFACTS)
		return kerr_set(msg, n, KERR_RANGE, "%s: has %zu artifacts, at most %d", path,
				json_object_size(o), MAX_ARTIFACTS);
	u->art = xcalloc(json_object_size(o), sizeof(*u->art));
	json_object_foreach (o, name, v) {
		path_fmt(kpath, "%s.%s", path, name);
		rc = check_name(name, NK_ID, kpath, msg, n);
		if (!rc)
			rc = get_url(o, path, name, &u->art[u->nart].url, msg, n);
		if (rc)
			return rc;
		u->art[u->nart++].name = xstrdup(name);
	}
	return 0;
}

static int parse_output_urls(struct batch *b, json_t *results, json_t *artifacts, char *msg,
			     size_t n)
{
	const char *RP = "$.outputs.results", *AP = "$.outputs.artifacts";
	struct output_spec *out = &b->outputs;
	char path[PATH_LEN];
	const char *id;
	json_t *v, *arts;
	int rc = 0;

	out->urls = xcalloc(json_object_size(results) + json_object_size(artifacts),
			    sizeof(*out->urls));
	json_object_foreach (results, id, v) {
		rc = check_output_id(b, id, RP, msg, n);
		if (!rc)
			rc = get_url(results, RP, id, &output_slot(out, id)->result, msg, n);
		if (rc)
			return rc;
	}
	json_object_foreach (artifacts, id, v) {
		path_fmt(path, "%s.%s", AP, id);
		rc = check_output_id(b, id, AP, msg, n);
		if (!rc)
			rc = jx_obj(artifacts, AP, id, JX_REQUIRED, &arts, msg, n);
		if (!rc)
			rc = parse_artifacts(output_slot(out, id), arts, path, msg, n);
		if (rc)
			return rc;
	}
	return 0;
}

static int parse_outputs(struct batch *b, json_t *root, char *msg, size_t n)
{
	static const char *const keys[] = { "dir", "summary", "results", "artifacts", NULL };
	const char *P = "$.outputs";
	json_t *o, *results = NULL, *artifacts = NULL;
	int rc = jx_obj(root, "$", "outputs", JX_OPTIONAL, &o, msg, n);

	if (rc || !o)
		return rc;
	rc = jx_known_keys(o, P, keys, msg, n);
	if (!rc)
		rc = get_str(o, P, "dir", GS_NULLABLE, NK_TEXT, &b->outputs.dir, msg, n);
	if (!rc && json_object_get(o, "summary") && !json_is_null(json_object_get(o, "summary")))
		rc = get_url(o, P, "summary", &b->outputs.summary, msg, n);
	if (!rc)
		rc = jx_obj(o, P, "results", JX_OPTIONAL, &results, msg, n);
	if (!rc)
		rc = jx_obj(o, P, "artifacts", JX_OPTIONAL, &artifacts, msg, n);
	if (!rc)
		rc = parse_output_urls(b, results, artifacts, msg, n);
	return rc;
}

/* ---- the document ---- */

static int parse_header(struct batch *b, json_t *root, char *msg, size_t n)
{
	static const char *const keys[] = {
		"schema",    "version",  "batch_id", "problem",     "shapes",
		"reference", "baseline", "variants", "measurement", "correctness",
		"limits",    "device",   "outputs",  NULL,
	};
	const char *schema = NULL;
	int64_t version = 0;
	int rc = jx_known_keys(root, "$", keys, msg, n);

	if (!rc)
		rc = jx_str(root, "$", "schema", JX_REQUIRED, &schema, msg, n);
	if (!rc && strcmp(schema, BATCH_SCHEMA))
		rc = kerr_set(msg, n, KERR_INVALID, "$.schema: '%.40s' is not '%s'", schema,
			      BATCH_SCHEMA);
	if (!rc)
		rc = jx_int(root, "$", "version", JX_REQUIRED, INT64_MIN, INT64_MAX, &version, msg,
			    n);
	if (!rc && version != BATCH_VERSION)
		rc = kerr_set(msg, n, KERR_INVALID,
			      "$.version: version %lld is not supported (this reader knows %d)",
			      (long long)version, BATCH_VERSION);
	if (!rc)
		rc = get_str(root, "$", "batch_id", JX_REQUIRED, NK_ID, &b->batch_id, msg, n);
	return rc;
}

typedef int (*parse_stage_fn)(struct batch *b, json_t *root, char *msg, size_t n);

/* In document order; outputs last because it refers to the programs. */
static const parse_stage_fn parse_stages[] = {
	parse_header,  parse_problem, parse_shapes, parse_programs, parse_measure,
	parse_correct, parse_limits,  parse_device, parse_outputs,
};

static void batch_defaults(struct batch *b)
{
	memset(b, 0, sizeof(*b));
	b->measure = (struct measure_spec){
		.warmup = 2,
		.min_samples = 10,
		.max_samples = 200,
		.min_time_ms = 100,
		.max_time_ms = 10000,
		.precision = 0.01,
		.sample_min_ms = 1,
		.flush = 1,
		.flush_bytes = 0,
		.order_seed = 1,
	};
	b->correct.atol = 1e-4;
	b->correct.rtol = 1e-4;
	b->correct.determinism = 1;
	b->limits = (struct limit_spec){
		.compile_timeout_s = 120,
		.run_timeout_s = 120,
		.time_timeout_s = 900,
		.log_max_bytes = 16384,
		.peak_margin = 1.15,
		.memory_mb = 8192,
	};
}

int batch_parse(struct batch *b, const char *text, size_t len, char *msg, size_t n)
{
	json_error_t je;
	int rc = 0;

	batch_defaults(b);
	b->doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!b->doc)
		return kerr_set(msg, n, KERR_PARSE, "$: not valid JSON: line %d, column %d: %s",
				je.line, je.column, je.text);
	if (!json_is_object(b->doc))
		return kerr_set(msg, n, KERR_PARSE, "$: expected an object, got %s",
				jx_type_name(b->doc));
	for (size_t i = 0; i < ARRAY_SIZE(parse_stages) && !rc; i++)
		rc = parse_stages[i](b, b->doc, msg, n);
	return rc;
}

/* ---- release ---- */

static void launch_free(struct launch_spec *l, size_t nr)
{
	for (size_t i = 0; l && i < nr; i++) {
		for (size_t j = 0; j < l[i].nargs; j++)
			free(l[i].args[j].local_bytes);
		free(l[i].args);
		free(l[i].kernel);
		for (size_t d = 0; d < 3; d++) {
			free(l[i].global[d]);
			free(l[i].local[d]);
		}
	}
	free(l);
}

static void source_release(struct source_spec *s)
{
	free(s->id);
	free(s->parent);
	free(s->source);
	free(s->options);
	free(s->rationale);
}

static void outputs_release(struct output_spec *o)
{
	for (size_t i = 0; i < o->nurls; i++) {
		for (size_t j = 0; j < o->urls[i].nart; j++) {
			free(o->urls[i].art[j].name);
			free(o->urls[i].art[j].url);
		}
		free(o->urls[i].art);
		free(o->urls[i].id);
		free(o->urls[i].result);
	}
	free(o->urls);
	free(o->dir);
	free(o->summary);
}

void batch_release(struct batch *b)
{
	for (size_t i = 0; i < b->nbuffers; i++) {
		free(b->buffers[i].name);
		free(b->buffers[i].count);
	}
	for (size_t i = 0; i < b->nscalars; i++) {
		free(b->scalars[i].name);
		free(b->scalars[i].expr);
	}
	for (size_t i = 0; i < b->nshapes; i++) {
		free(b->shapes[i].name);
		expr_vars_release(&b->shapes[i].vars);
	}
	for (size_t i = 0; i < b->nvariants; i++)
		source_release(&b->variants[i]);
	if (b->baseline)
		source_release(b->baseline);
	if (b->ref_launch_owned)
		launch_free(b->ref_launch, b->nref_launch);
	launch_free(b->launch, b->nlaunch);
	source_release(&b->reference);
	outputs_release(&b->outputs);
	free(b->batch_id);
	free(b->problem_name);
	free(b->semantics);
	free(b->buffers);
	free(b->scalars);
	free(b->flops);
	free(b->bytes);
	free(b->shapes);
	free(b->baseline);
	free(b->variants);
	free(b->correct.seeds);
	free(b->device.platform);
	free(b->device.device);
	json_decref(b->doc);
	memset(b, 0, sizeof(*b));
}

/* ---- lookups ---- */

const struct source_spec *batch_variant(const struct batch *b, const char *id)
{
	for (size_t i = 0; i < b->nvariants; i++)
		if (b->variants[i].id && !strcmp(b->variants[i].id, id))
			return &b->variants[i];
	return NULL;
}

const struct output_url *batch_output_url(const struct batch *b, const char *id)
{
	for (size_t i = 0; i < b->outputs.nurls; i++)
		if (!strcmp(b->outputs.urls[i].id, id))
			return &b->outputs.urls[i];
	return NULL;
}

int batch_timed_figure(const struct batch *b, const char *text, double *out)
{
	int64_t v = 0;
	char msg[256];

	if (!text || expr_eval(text, expr_vars_lookup, (void *)&b->shapes[b->timed_shape].vars, &v,
			       msg, sizeof(msg)))
		return -1;
	*out = (double)v;
	return 0;
}
