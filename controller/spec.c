/*
 * spec.c - loading and validating the YAML problem spec (see spec.h and
 * docs/spec.md).
 *
 * libyaml loads the file into a node tree.  A first pass checks the tree's
 * shape (mapping keys are unique scalars, strings are valid UTF-8 without
 * NUL bytes, nesting and size are bounded, aliases included), then one
 * reader per top-level section validates its keys through field tables
 * and either builds the EvalBatch-form JSON the section maps to or fills
 * struct spec.  Every message names the node at fault by its start mark
 * (1-based line and column) and its key path.
 *
 * Scalars are typed like YAML 1.2's core schema, restricted: a quoted
 * scalar is always a string; a plain one is null (~, null, empty), a
 * boolean (true, false), an integer (decimal or 0x hex), a number
 * (1.5, 1e-4) or else a string.  Where a string is expected, a plain
 * integer or number is taken as its text (shape name 512, build options
 * are the usual cases); null and booleans are not.
 */
#include "spec.h"
#include "err.h"
#include "expr.h"
#include "fileio.h"
#include "mutate.h"
#include "sbuf.h"
#include "xalloc.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define SPEC_MAX_BYTES   (1u << 20) /* the spec file */
#define SOURCE_MAX_BYTES (4u << 20) /* template and reference */
#define MAX_DEPTH        64         /* nesting of the YAML tree */
#define MAX_NODES        100000     /* nodes visited, aliases counted each time */
#define MAX_MAP_KEYS     1024       /* keys of any one mapping */

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

#define PATH_LEN 512
#define WHY_LEN  512

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* One load in progress. */
struct ld {
	struct spec *s;
	yaml_document_t doc;
	const char *file; /* the spec path as given, for messages */
	char *msg;
	size_t n;
	size_t nodes;                           /* visited by the shape pass */
	const yaml_node_t *open[MAX_DEPTH + 1]; /* the shape pass's path from the root */
};

/* ---- messages ---- */

static int fail(struct ld *ld, const yaml_node_t *nd, int code, const char *path, const char *fmt,
		...) __attribute__((format(printf, 5, 6)));

/* Formats "FILE:LINE:COLUMN: path: reason" for node nd (NULL: 1:1) and returns code. */
static int fail(struct ld *ld, const yaml_node_t *nd, int code, const char *path, const char *fmt,
		...)
{
	char why[WHY_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	kerr_set(ld->msg, ld->n, code, "%s:%zu:%zu: %s: %s", ld->file,
		 nd ? nd->start_mark.line + 1 : 1, nd ? nd->start_mark.column + 1 : 1,
		 *path ? path : "document", why);
	/* One line, whatever the document's keys and strings hold. */
	for (char *p = ld->msg; p && *p; p++)
		if ((unsigned char)*p < ' ')
			*p = '?';
	return code;
}

static void path_key(char *out, const char *parent, const char *key)
{
	snprintf(out, PATH_LEN, "%s%s%s", parent, *parent ? "." : "", key);
}

static void path_idx(char *out, const char *parent, size_t i)
{
	snprintf(out, PATH_LEN, "%s[%zu]", parent, i);
}

/* ---- nodes and scalar types ---- */

enum ytype { Y_NULL, Y_BOOL, Y_INT, Y_NUM, Y_STR, Y_LIST, Y_MAP };

static yaml_node_t *node_at(struct ld *ld, int i)
{
	return yaml_document_get_node(&ld->doc, i);
}

static const char *text_of(const yaml_node_t *nd)
{
	return (const char *)nd->data.scalar.value;
}

static size_t map_size(const yaml_node_t *nd)
{
	return (size_t)(nd->data.mapping.pairs.top - nd->data.mapping.pairs.start);
}

static size_t list_size(const yaml_node_t *nd)
{
	return (size_t)(nd->data.sequence.items.top - nd->data.sequence.items.start);
}

static yaml_node_t *list_item(struct ld *ld, const yaml_node_t *nd, size_t i)
{
	return node_at(ld, nd->data.sequence.items.start[i]);
}

static int one_of(const char *s, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (!strcmp(s, list[i]))
			return 1;
	return 0;
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_xdigit(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Decimal [-+]?[0-9]+ or hex 0x[0-9a-fA-F]+. */
static int int_text(const char *s)
{
	size_t i = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		for (i = 2; is_xdigit(s[i]); i++)
			;
		return i > 2 && !s[i];
	}
	if (*s == '-' || *s == '+')
		s++;
	while (is_digit(s[i]))
		i++;
	return i > 0 && !s[i];
}

/* [-+]?(digits[.digits*] | .digits)([eE][-+]?digits)? (integers are matched first). */
static int num_text(const char *s)
{
	size_t digits = 0;

	if (*s == '-' || *s == '+')
		s++;
	for (; is_digit(*s); s++)
		digits++;
	if (*s == '.')
		for (s++; is_digit(*s); s++)
			digits++;
	if (!digits)
		return 0;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '-' || *s == '+')
			s++;
		if (!is_digit(*s))
			return 0;
		while (is_digit(*s))
			s++;
	}
	return !*s;
}

static enum ytype plain_type(const char *s)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL", NULL };
	static const char *const bools[] = {
		"true", "True", "TRUE", "false", "False", "FALSE", NULL
	};

	if (one_of(s, nulls))
		return Y_NULL;
	if (one_of(s, bools))
		return Y_BOOL;
	if (int_text(s))
		return Y_INT;
	return num_text(s) ? Y_NUM : Y_STR;
}

static enum ytype ytype_of(const yaml_node_t *nd)
{
	switch (nd->type) {
	case YAML_SEQUENCE_NODE: return Y_LIST;
	case YAML_MAPPING_NODE: return Y_MAP;
	case YAML_SCALAR_NODE:
		if (nd->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
			return Y_STR;
		return plain_type(text_of(nd));
	default: return Y_NULL;
	}
}

/* What nd is, for "expected X, got Y" (into buf). */
static const char *describe(const yaml_node_t *nd, char *buf, size_t n)
{
	static const char *const what[] = {
		[Y_NULL] = "null",  [Y_BOOL] = "boolean", [Y_INT] = "integer",   [Y_NUM] = "number",
		[Y_STR] = "string", [Y_LIST] = "a list",  [Y_MAP] = "a mapping",
	};
	enum ytype t = ytype_of(nd);

	if (t == Y_NULL || t == Y_LIST || t == Y_MAP)
		return what[t];
	if (t == Y_STR)
		snprintf(buf, n, "string '%.40s%s'", text_of(nd),
			 strlen(text_of(nd)) > 40 ? "..." : "");
	else
		snprintf(buf, n, "%s %.40s", what[t], text_of(nd));
	return buf;
}

static int want(struct ld *ld, const yaml_node_t *nd, const char *path, const char *what)
{
	char buf[80];

	return fail(ld, nd, KERR_PARSE, path, "expected %s, got %s", what,
		    describe(nd, buf, sizeof(buf)));
}

/* ---- the shape pass ---- */

/* The tags the loader gives untagged nodes; explicit other tags are refused. */
static int tag_ok(const yaml_node_t *nd)
{
	const char *tag = (const char *)nd->tag;

	if (!tag)
		return 1;
	switch (nd->type) {
	case YAML_SCALAR_NODE: return !strcmp(tag, YAML_DEFAULT_SCALAR_TAG);
	case YAML_SEQUENCE_NODE: return !strcmp(tag, YAML_DEFAULT_SEQUENCE_TAG);
	case YAML_MAPPING_NODE: return !strcmp(tag, YAML_DEFAULT_MAPPING_TAG);
	default: return 0;
	}
}

static int check_scalar(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	json_t *probe;

	if (strlen(text_of(nd)) != nd->data.scalar.length)
		return fail(ld, nd, KERR_PARSE, path, "contains a NUL character");
	probe = json_stringn(text_of(nd), nd->data.scalar.length);
	if (!probe)
		return fail(ld, nd, KERR_PARSE, path, "is not valid UTF-8");
	json_decref(probe);
	return 0;
}

static int check_tree(struct ld *ld, const yaml_node_t *nd, const char *path, int depth);

/* Keys are scalars and unique; values are checked recursively. */
static int check_map(struct ld *ld, const yaml_node_t *nd, const char *path, int depth)
{
	const yaml_node_pair_t *p0 = nd->data.mapping.pairs.start;
	char kpath[PATH_LEN];
	int rc = 0;

	if (map_size(nd) > MAX_MAP_KEYS)
		return fail(ld, nd, KERR_RANGE, path, "has %zu keys, at most %d", map_size(nd),
			    MAX_MAP_KEYS);
	for (const yaml_node_pair_t *p = p0; p < nd->data.mapping.pairs.top && !rc; p++) {
		const yaml_node_t *k = node_at(ld, p->key);

		if (k->type != YAML_SCALAR_NODE)
			return fail(ld, k, KERR_PARSE, path, "a key must be a scalar, got %s",
				    k->type == YAML_SEQUENCE_NODE ? "a list" : "a mapping");
		path_key(kpath, path, text_of(k));
		rc = check_tree(ld, k, kpath, depth + 1);
		for (const yaml_node_pair_t *q = p0; q < p && !rc; q++) {
			const yaml_node_t *first = node_at(ld, q->key);

			if (!strcmp(text_of(first), text_of(k)))
				rc = fail(ld, k, KERR_PARSE, kpath,
					  "duplicate key (first at line %zu, column %zu)",
					  first->start_mark.line + 1, first->start_mark.column + 1);
		}
		if (!rc)
			rc = check_tree(ld, node_at(ld, p->value), kpath, depth + 1);
	}
	return rc;
}

static int check_tree(struct ld *ld, const yaml_node_t *nd, const char *path, int depth)
{
	char ipath[PATH_LEN];
	int rc = 0;

	if (depth > MAX_DEPTH)
		return fail(ld, nd, KERR_RANGE, path, "nested deeper than %d levels", MAX_DEPTH);
	for (int i = 0; i < depth; i++)
		if (ld->open[i] == nd)
			return fail(ld, nd, KERR_PARSE, path,
				    "an alias refers to a node that contains it");
	ld->open[depth] = nd;
	if (++ld->nodes > MAX_NODES)
		return fail(ld, nd, KERR_RANGE, path, "the document has more than %d nodes",
			    MAX_NODES);
	if (!tag_ok(nd))
		return fail(ld, nd, KERR_PARSE, path, "tag '%s' is not supported",
			    (const char *)nd->tag);
	if (nd->type == YAML_SCALAR_NODE)
		return check_scalar(ld, nd, path);
	if (nd->type == YAML_MAPPING_NODE)
		return check_map(ld, nd, path, depth);
	for (size_t i = 0; i < list_size(nd) && !rc; i++) {
		path_idx(ipath, path, i);
		rc = check_tree(ld, list_item(ld, nd, i), ipath, depth + 1);
	}
	return rc;
}

/* ---- typed scalar getters ---- */

static int get_int(struct ld *ld, const yaml_node_t *nd, const char *path, int64_t lo, int64_t hi,
		   int64_t *out)
{
	const char *s = text_of(nd);
	int hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
	long long x;
	char *end;

	if (ytype_of(nd) != Y_INT)
		return want(ld, nd, path, "an integer");
	errno = 0;
	x = strtoll(s, &end, hex ? 16 : 10);
	if (errno == ERANGE || *end)
		return fail(ld, nd, KERR_RANGE, path, "%.40s does not fit in 64 bits", s);
	if (x < lo || x > hi)
		return fail(ld, nd, KERR_RANGE, path, "%lld is outside [%lld, %lld]", x,
			    (long long)lo, (long long)hi);
	*out = x;
	return 0;
}

static int get_num(struct ld *ld, const yaml_node_t *nd, const char *path, double lo, double hi,
		   double *out)
{
	enum ytype t = ytype_of(nd);
	int64_t i;
	double x;
	char *end;
	int rc;

	if (t == Y_INT) {
		rc = get_int(ld, nd, path, INT64_MIN, INT64_MAX, &i);
		x = (double)i;
	} else if (t == Y_NUM) {
		errno = 0;
		x = strtod(text_of(nd), &end);
		rc = *end || !isfinite(x)
			     ? fail(ld, nd, KERR_RANGE, path, "%.40s is out of range", text_of(nd))
			     : 0;
	} else {
		return want(ld, nd, path, "a number");
	}
	if (rc)
		return rc;
	if (!(x >= lo && x <= hi))
		return fail(ld, nd, KERR_RANGE, path, "%g is outside [%g, %g]", x, lo, hi);
	*out = x;
	return 0;
}

static int get_bool(struct ld *ld, const yaml_node_t *nd, const char *path, int *out)
{
	if (ytype_of(nd) != Y_BOOL)
		return want(ld, nd, path, "a boolean (true or false)");
	*out = text_of(nd)[0] == 't' || text_of(nd)[0] == 'T';
	return 0;
}

/* A scalar's text; plain integers and numbers count as their text, null and booleans do not. */
static int get_text(struct ld *ld, const yaml_node_t *nd, const char *path, const char **out)
{
	enum ytype t = ytype_of(nd);

	if (t != Y_STR && t != Y_INT && t != Y_NUM)
		return want(ld, nd, path, "a string");
	*out = text_of(nd);
	return 0;
}

/* Reads one of names (NULL-terminated) into *idx. */
static int get_enum(struct ld *ld, const yaml_node_t *nd, const char *path,
		    const char *const *names, int *idx)
{
	struct sbuf list = SBUF_INIT;
	const char *s = NULL;
	int rc = get_text(ld, nd, path, &s);

	for (int i = 0; !rc && names[i]; i++)
		if (!strcmp(s, names[i])) {
			*idx = i;
			return 0;
		}
	if (rc)
		return rc;
	for (int i = 0; names[i]; i++)
		sbuf_addf(&list, "%s%s", i ? ", " : "", names[i]);
	rc = fail(ld, nd, KERR_INVALID, path, "'%.40s' is not one of %s", s, list.buf);
	sbuf_release(&list);
	return rc;
}

/* json_string, tolerating bytes that are not UTF-8 (file system paths). */
static json_t *jstr(const char *s)
{
	json_t *j = json_string(s);

	return j ? j : json_string_nocheck(s);
}

/* ---- names, ids, paths, URLs ---- */

enum rule { R_ANY, R_TEXT, R_IDENT, R_ID, R_NAME, R_MARKER };

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
	       (!first && is_digit(c));
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
	return fail(ld, nd, KERR_INVALID, path, "'%.40s' is not %s", s, rule_what[r]);
}

/* Storage URLs: file://PATH or s3://BUCKET[/PREFIX], no spaces or control characters. */
static int check_url(struct ld *ld, const yaml_node_t *nd, const char *path, const char *u)
{
	size_t skip = !strncmp(u, "file://", 7) ? 7 : !strncmp(u, "s3://", 5) ? 5 : 0;

	if (!skip || !u[skip] || (skip == 5 && u[skip] == '/'))
		return fail(ld, nd, KERR_INVALID, path,
			    "'%.60s' is not a file://PATH or s3://BUCKET[/PREFIX] URL", u);
	for (const char *p = u; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return fail(ld, nd, KERR_INVALID, path,
				    "the URL contains a space or control character");
	return 0;
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
	enum ytype t = ytype_of(nd);
	int64_t x = 0;
	int rc;

	if (t == Y_INT) {
		rc = get_int(ld, nd, path, INT64_MIN, INT64_MAX, &x);
		if (!rc && x < 0 && !allow_negative)
			rc = fail(ld, nd, KERR_RANGE, path, "%lld is negative", (long long)x);
		snprintf(num, sizeof(num), "%lld", (long long)x);
		if (!rc)
			*out = json_string(num);
		return rc;
	}
	if (t != Y_STR)
		return want(ld, nd, path, "an integer expression (a string or an integer)");
	if (expr_check(text_of(nd), why, sizeof(why)))
		return fail(ld, nd, KERR_PARSE, path, "%s", why);
	*out = json_string(text_of(nd));
	return 0;
}

/* ---- mappings, lists and field tables ---- */

static int need_map(struct ld *ld, const yaml_node_t *nd, const char *path, size_t lo, size_t hi)
{
	if (nd->type != YAML_MAPPING_NODE)
		return want(ld, nd, path, "a mapping");
	if (map_size(nd) < lo || map_size(nd) > hi)
		return fail(ld, nd, KERR_RANGE, path, "has %zu entries, expected %zu to %zu",
			    map_size(nd), lo, hi);
	return 0;
}

static int need_list(struct ld *ld, const yaml_node_t *nd, const char *path, size_t lo, size_t hi)
{
	if (nd->type != YAML_SEQUENCE_NODE)
		return want(ld, nd, path, "a list");
	if (list_size(nd) < lo || list_size(nd) > hi)
		return fail(ld, nd, KERR_RANGE, path, "has %zu entries, expected %zu to %zu",
			    list_size(nd), lo, hi);
	return 0;
}

/* The value of key in map, or NULL. */
static yaml_node_t *map_get(struct ld *ld, const yaml_node_t *map, const char *key)
{
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++)
		if (!strcmp(text_of(node_at(ld, p->key)), key))
			return node_at(ld, p->value);
	return NULL;
}

enum fkind {
	F_INT,    /* integer in [ilo, ihi] -> JSON integer */
	F_NUM,    /* number in [lo, hi] -> JSON real */
	F_BOOL,   /* -> JSON boolean */
	F_TEXT,   /* string obeying rule -> JSON string */
	F_ENUM,   /* one of names -> JSON string */
	F_PATH,   /* non-empty path, resolved against the spec's folder -> JSON string */
	F_URL,    /* storage URL -> JSON string */
	F_EXPR,   /* non-negative integer expression -> JSON string */
	F_CUSTOM, /* a known key the caller reads itself */
};

struct field {
	const char *key;
	enum fkind kind;
	int required;
	int64_t ilo, ihi;
	double lo, hi;
	enum rule rule;
	const char *const *names;
};

#define FINT(k, a, b)                                                                              \
	{                                                                                          \
		.key = k, .kind = F_INT, .ilo = a, .ihi = b                                        \
	}
#define FNUM(k, a, b)                                                                              \
	{                                                                                          \
		.key = k, .kind = F_NUM, .lo = a, .hi = b                                          \
	}
#define FBOOL(k)                                                                                   \
	{                                                                                          \
		.key = k, .kind = F_BOOL                                                           \
	}
#define FTEXT(k, req, r)                                                                           \
	{                                                                                          \
		.key = k, .kind = F_TEXT, .required = req, .rule = r                               \
	}
#define FENUM(k, req, n)                                                                           \
	{                                                                                          \
		.key = k, .kind = F_ENUM, .required = req, .names = n                              \
	}
#define FPATH(k, req)                                                                              \
	{                                                                                          \
		.key = k, .kind = F_PATH, .required = req                                          \
	}
#define FURL(k)                                                                                    \
	{                                                                                          \
		.key = k, .kind = F_URL                                                            \
	}
#define FEXPR(k, req)                                                                              \
	{                                                                                          \
		.key = k, .kind = F_EXPR, .required = req                                          \
	}
#define FCUSTOM(k, req)                                                                            \
	{                                                                                          \
		.key = k, .kind = F_CUSTOM, .required = req                                        \
	}

/* Fails at the first key of map (at path) that is not in f[0..nf). */
static int fields_known(struct ld *ld, const yaml_node_t *map, const char *path,
			const struct field *f, size_t nf)
{
	char kpath[PATH_LEN];
	struct sbuf list = SBUF_INIT;
	int rc = 0;

	for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
	     p < map->data.mapping.pairs.top && !rc; p++) {
		const yaml_node_t *k = node_at(ld, p->key);
		size_t i = 0;

		while (i < nf && strcmp(f[i].key, text_of(k)))
			i++;
		if (i < nf)
			continue;
		for (i = 0; i < nf; i++)
			sbuf_addf(&list, "%s%s", i ? ", " : "", f[i].key);
		path_key(kpath, path, text_of(k));
		rc = fail(ld, k, KERR_PARSE, kpath, "unknown key (expected one of %s)", list.buf);
	}
	sbuf_release(&list);
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
		rc = get_int(ld, v, path, f->ilo, f->ihi, &x);
		*out = rc ? NULL : json_integer(x);
		break;
	case F_NUM:
		rc = get_num(ld, v, path, f->lo, f->hi, &d);
		*out = rc ? NULL : json_real(d);
		break;
	case F_BOOL:
		rc = get_bool(ld, v, path, &b);
		*out = rc ? NULL : json_boolean(b);
		break;
	case F_ENUM:
		rc = get_enum(ld, v, path, f->names, &b);
		*out = rc ? NULL : json_string(f->names[b]);
		break;
	case F_EXPR: rc = read_expr(ld, v, path, 0, out); break;
	case F_CUSTOM: break;
	case F_TEXT:
	case F_PATH:
	case F_URL:
		rc = get_text(ld, v, path, &t);
		if (!rc && f->kind == F_TEXT)
			rc = check_rule(ld, v, path, t, f->rule);
		if (!rc && f->kind == F_URL)
			rc = check_url(ld, v, path, t);
		if (!rc && f->kind == F_PATH && !*t)
			rc = fail(ld, v, KERR_INVALID, path, "the path is empty");
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
static int fields_read(struct ld *ld, const yaml_node_t *map, const char *path,
		       const struct field *f, size_t nf, json_t *out)
{
	char kpath[PATH_LEN];
	int rc = 0;

	for (size_t i = 0; i < nf && !rc; i++) {
		const yaml_node_t *v = map_get(ld, map, f[i].key);
		json_t *j = NULL;

		path_key(kpath, path, f[i].key);
		if (!v && f[i].required)
			rc = fail(ld, map, KERR_PARSE, kpath, "required key is missing");
		if (!v || rc)
			continue;
		rc = field_read(ld, v, kpath, &f[i], &j);
		if (j)
			json_object_set_new(out, f[i].key, j);
	}
	return rc;
}

/* need_map + fields_known + fields_read into the new object *out (caller decrefs, even on failure). */
static int fields_load(struct ld *ld, const yaml_node_t *map, const char *path,
		       const struct field *f, size_t nf, json_t **out)
{
	int rc = need_map(ld, map, path, 0, MAX_MAP_KEYS);

	*out = json_object();
	if (!rc)
		rc = fields_known(ld, map, path, f, nf);
	if (!rc)
		rc = fields_read(ld, map, path, f, nf, *out);
	return rc;
}

static int64_t jint(const json_t *o, const char *key, int64_t def)
{
	json_t *v = json_object_get(o, key);

	return v ? (int64_t)json_integer_value(v) : def;
}

static double jnum(const json_t *o, const char *key, double def)
{
	json_t *v = json_object_get(o, key);

	return v ? json_number_value(v) : def;
}

/* Replaces *dst with a copy of o.key when present. */
static void jtext(const json_t *o, const char *key, char **dst)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return;
	free(*dst);
	*dst = xstrdup(json_string_value(v));
}

static int jenum(const json_t *o, const char *key, const char *const *names, int def)
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
	int rc = fields_load(ld, nd, P, marker_fields, ARRAY_SIZE(marker_fields), &o);

	if (!rc) {
		jtext(o, "start", &ld->s->marker_start);
		jtext(o, "end", &ld->s->marker_end);
	}
	if (!rc && !strcmp(ld->s->marker_start, ld->s->marker_end))
		rc = fail(ld, nd, KERR_INVALID, P, "start and end are both '%.40s'",
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
		return fail(ld, nd, KERR_IO, path, "%s", why);
	if (!len)
		return fail(ld, nd, KERR_INVALID, path, "'%s' is empty", file);
	return 0;
}

static int check_blocks(struct ld *ld, const yaml_node_t *nd)
{
	struct spec *s = ld->s;
	struct blocks bl = { NULL, 0 };
	char why[WHY_LEN];
	int rc = 0;

	if (blocks_find(s->template_src, s->marker_start, s->marker_end, &bl, why, sizeof(why)))
		rc = fail(ld, nd, KERR_PARSE, "kernel.template", "%s: %s", text_of(nd), why);
	else if (!bl.n)
		rc = fail(ld, nd, KERR_PARSE, "kernel.template", "%s: no %s marker", text_of(nd),
			  s->marker_start);
	blocks_release(&bl);
	return rc;
}

static int read_kernel(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	struct spec *s = ld->s;
	const yaml_node_t *markers;
	json_t *o = NULL;
	int rc = fields_load(ld, nd, path, kernel_fields, ARRAY_SIZE(kernel_fields), &o);

	if (!rc) {
		jtext(o, "name", &s->name);
		jtext(o, "template", &s->template_path);
		jtext(o, "reference", &s->reference_path);
		jtext(o, "build_options", &s->build_options);
		markers = map_get(ld, nd, "markers");
		if (markers)
			rc = read_markers(ld, markers);
	}
	if (!rc)
		rc = load_source(ld, map_get(ld, nd, "template"), "kernel.template",
				 s->template_path, &s->template_src);
	if (!rc)
		rc = check_blocks(ld, map_get(ld, nd, "template"));
	if (!rc)
		rc = load_source(ld, map_get(ld, nd, "reference"), "kernel.reference",
				 s->reference_path, &s->reference_src);
	json_decref(o);
	return rc;
}

/* ---- problem: element types and init ---- */

static const char *const type_names[] = { "float", "double", "int", "uint", "long", "ulong", NULL };
static const char *const role_names[] = { "input", "output", "inout", "scratch", NULL };
static const char *const dist_names[] = {
	"zero", "const", "uniform", "normal", "int", "iota", NULL
};

enum { T_FLOAT, T_DOUBLE, T_INT, T_UINT, T_LONG, T_ULONG };
enum { D_ZERO, D_CONST, D_UNIFORM, D_NORMAL, D_INT, D_IOTA };

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

/* The keys of each init distribution (see docs/evalbatch.md). */
static const struct dist {
	const char *a, *b; /* NULL when unused */
	double def_a, def_b;
	int a_required;
	int integral;   /* a and b are integers */
	int ordered;    /* b >= a */
	int b_nonneg;   /* b >= 0 */
	int float_only; /* gives non-integer values */
} dists[] = {
	[D_ZERO] = { .a = NULL },
	[D_CONST] = { .a = "value", .a_required = 1 },
	[D_UNIFORM] = { .a = "lo",
			.b = "hi",
			.def_a = -1,
			.def_b = 1,
			.ordered = 1,
			.float_only = 1 },
	[D_NORMAL] = { .a = "mean",
		       .b = "std",
		       .def_a = 0,
		       .def_b = 1,
		       .b_nonneg = 1,
		       .float_only = 1 },
	[D_INT] = { .a = "lo", .b = "hi", .def_a = 0, .def_b = 9, .integral = 1, .ordered = 1 },
	[D_IOTA] = { .a = NULL },
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
			    const struct dist *d, const json_t *o)
{
	char kpath[PATH_LEN];
	double a = jnum(o, d->a, d->def_a), b = jnum(o, d->b, d->def_b);
	const yaml_node_t *at = map_get(ld, nd, d->b);

	if (!d->ordered || b >= a)
		return 0;
	if (!at) {
		path_key(kpath, path, d->a);
		return fail(ld, map_get(ld, nd, d->a), KERR_RANGE, kpath,
			    "%g is greater than %s (%g, the default)", a, d->b, b);
	}
	path_key(kpath, path, d->b);
	return fail(ld, at, KERR_RANGE, kpath, "%g is less than %s (%g)", b, d->a, a);
}

static int read_init(struct ld *ld, const yaml_node_t *nd, const char *path, int type, json_t **out)
{
	const struct elem *e = &elems[type];
	struct field f[3] = { FENUM("dist", 1, dist_names) };
	const yaml_node_t *dn;
	char dpath[PATH_LEN];
	size_t nf = 1;
	int dist = 0, integral, rc = need_map(ld, nd, path, 0, MAX_MAP_KEYS);

	*out = NULL;
	path_key(dpath, path, "dist");
	dn = rc ? NULL : map_get(ld, nd, "dist");
	if (!rc && !dn)
		rc = fail(ld, nd, KERR_PARSE, dpath, "required key is missing");
	if (!rc)
		rc = get_enum(ld, dn, dpath, dist_names, &dist);
	if (rc)
		return rc;
	if (dists[dist].float_only && !e->is_float)
		return fail(
			ld, dn, KERR_INVALID, dpath,
			"'%s' gives non-integer values; %s buffers take zero, const, int or iota",
			dist_names[dist], type_names[type]);
	integral = dists[dist].integral || !e->is_float;
	if (dists[dist].a)
		f[nf++] = init_field(dists[dist].a, dists[dist].a_required, integral, 0, e);
	if (dists[dist].b)
		f[nf++] = init_field(dists[dist].b, 0, integral, dists[dist].b_nonneg, e);
	rc = fields_load(ld, nd, path, f, nf, out);
	if (!rc && dists[dist].b)
		rc = check_init_order(ld, nd, path, &dists[dist], *out);
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
	char ipath[PATH_LEN];
	const yaml_node_t *in;
	json_t *init = NULL;
	int rc;

	*out = json_object();
	json_object_set_new(*out, "name", json_string(name));
	rc = need_map(ld, nd, path, 0, MAX_MAP_KEYS);
	if (!rc)
		rc = fields_known(ld, nd, path, buffer_fields, ARRAY_SIZE(buffer_fields));
	if (!rc)
		rc = fields_read(ld, nd, path, buffer_fields, ARRAY_SIZE(buffer_fields), *out);
	if (rc)
		return rc;
	if (!json_object_get(*out, "role"))
		json_object_set_new(*out, "role", json_string("input"));
	in = map_get(ld, nd, "init");
	if (!in)
		return 0;
	path_key(ipath, path, "init");
	rc = read_init(ld, in, ipath, jenum(*out, "type", type_names, 0), &init);
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
	char path[PATH_LEN];
	json_t *arr = json_array(), *b = NULL;
	int rc = need_map(ld, nd, P, 1, MAX_BUFFERS), checked = 0;

	json_object_set_new(p, "buffers", arr);
	for (yaml_node_pair_t *pr = nd->data.mapping.pairs.start;
	     !rc && pr < nd->data.mapping.pairs.top; pr++) {
		const char *name = text_of(node_at(ld, pr->key));
		const char *role;

		path_key(path, P, name);
		rc = check_rule(ld, node_at(ld, pr->key), path, name, R_IDENT);
		if (!rc)
			rc = read_buffer(ld, node_at(ld, pr->value), path, name, &b);
		if (!rc) {
			role = json_string_value(json_object_get(b, "role"));
			checked |= !strcmp(role, "output") || !strcmp(role, "inout");
			json_array_append(arr, b);
		}
		json_decref(b);
		b = NULL;
	}
	if (!rc && !checked)
		rc = fail(ld, nd, KERR_INVALID, P,
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
	char vpath[PATH_LEN];
	const yaml_node_t *vn;
	json_t *v = NULL;
	int type, rc = need_map(ld, nd, path, 0, MAX_MAP_KEYS);

	json_object_set_new(s, "name", json_string(name));
	if (!rc)
		rc = fields_known(ld, nd, path, scalar_fields, ARRAY_SIZE(scalar_fields));
	if (!rc)
		rc = fields_read(ld, nd, path, scalar_fields, ARRAY_SIZE(scalar_fields), s);
	if (rc)
		return rc;
	type = jenum(s, "type", type_names, 0);
	vn = map_get(ld, nd, "value");
	path_key(vpath, path, "value");
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
	char path[PATH_LEN];
	json_t *arr = json_array(), *s;
	int rc = need_map(ld, nd, P, 0, MAX_SCALARS);

	json_object_set_new(p, "scalars", arr);
	for (yaml_node_pair_t *pr = nd->data.mapping.pairs.start;
	     !rc && pr < nd->data.mapping.pairs.top; pr++) {
		const yaml_node_t *k = node_at(ld, pr->key);

		path_key(path, P, text_of(k));
		rc = check_rule(ld, k, path, text_of(k), R_IDENT);
		if (!rc && has_symbol(p, "buffers", text_of(k)))
			rc = fail(ld, k, KERR_INVALID, path,
				  "'%s' is already the name of a buffer (buffers and scalars share "
				  "one namespace)",
				  text_of(k));
		if (rc)
			break;
		s = json_object();
		rc = read_scalar(ld, node_at(ld, pr->value), path, text_of(k), s);
		json_array_append_new(arr, s);
	}
	return rc;
}

/* ---- problem: launch plans ---- */

static const struct field local_arg_fields[] = { FEXPR("local", 1) };

static int read_arg(struct ld *ld, const yaml_node_t *nd, const char *path, const json_t *p,
		    json_t **out)
{
	enum ytype t = ytype_of(nd);
	const char *name;

	*out = NULL;
	if (t == Y_MAP)
		return fields_load(ld, nd, path, local_arg_fields, ARRAY_SIZE(local_arg_fields),
				   out);
	if (t != Y_STR && t != Y_INT && t != Y_NUM)
		return want(ld, nd, path, "a buffer or scalar name or {local: BYTES}");
	name = text_of(nd);
	if (!has_symbol(p, "buffers", name) && !has_symbol(p, "scalars", name))
		return fail(ld, nd, KERR_INVALID, path, "'%.40s' names no buffer or scalar", name);
	*out = json_string(name);
	return 0;
}

/* Reads a list of 1 to 3 non-negative expressions (a global or local size) into *out. */
static int read_dims(struct ld *ld, const yaml_node_t *nd, const char *path, json_t **out)
{
	char ipath[PATH_LEN];
	json_t *v = NULL;
	int rc = need_list(ld, nd, path, 1, 3);

	*out = json_array();
	for (size_t i = 0; !rc && i < list_size(nd); i++) {
		path_idx(ipath, path, i);
		rc = read_expr(ld, list_item(ld, nd, i), ipath, 0, &v);
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
	char apath[PATH_LEN];
	json_t *args = json_array(), *a = NULL;
	int rc = need_list(ld, nd, path, 0, MAX_ARGS);

	json_object_set_new(step, "args", args);
	for (size_t i = 0; !rc && i < list_size(nd); i++) {
		path_idx(apath, path, i);
		rc = read_arg(ld, list_item(ld, nd, i), apath, p, &a);
		if (a)
			json_array_append_new(args, a);
	}
	return rc;
}

static int read_step(struct ld *ld, const yaml_node_t *nd, const char *path, const json_t *p,
		     json_t **out)
{
	char kpath[PATH_LEN];
	const yaml_node_t *local;
	json_t *g = NULL, *l = NULL;
	int rc = fields_load(ld, nd, path, step_fields, ARRAY_SIZE(step_fields), out);

	path_key(kpath, path, "args");
	if (!rc)
		rc = read_step_args(ld, map_get(ld, nd, "args"), kpath, p, *out);
	path_key(kpath, path, "global");
	if (!rc)
		rc = read_dims(ld, map_get(ld, nd, "global"), kpath, &g);
	if (g)
		json_object_set_new(*out, "global", g);
	local = rc ? NULL : map_get(ld, nd, "local");
	if (!local)
		return rc;
	path_key(kpath, path, "local");
	rc = read_dims(ld, local, kpath, &l);
	json_object_set_new(*out, "local", l);
	if (!rc && json_array_size(l) != json_array_size(g))
		rc = fail(ld, local, KERR_INVALID, kpath, "has %zu entries, global has %zu",
			  json_array_size(l), json_array_size(g));
	return rc;
}

static int read_launch(struct ld *ld, const yaml_node_t *nd, const char *key, json_t *p)
{
	char P[PATH_LEN], path[PATH_LEN];
	json_t *arr = json_array(), *step = NULL;
	int rc;

	path_key(P, "problem", key);
	json_object_set_new(p, key, arr);
	rc = need_list(ld, nd, P, 1, MAX_LAUNCH);
	for (size_t i = 0; !rc && i < list_size(nd); i++) {
		path_idx(path, P, i);
		rc = read_step(ld, list_item(ld, nd, i), path, p, &step);
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
	int rc = fields_load(ld, nd, path, problem_fields, ARRAY_SIZE(problem_fields), &p);

	s->problem = p;
	json_object_set_new(p, "name", json_string(s->name));
	if (!rc)
		jtext(p, "semantics", &s->semantics);
	if (!rc)
		rc = read_buffers(ld, map_get(ld, nd, "buffers"), p);
	v = rc ? NULL : map_get(ld, nd, "scalars");
	if (v)
		rc = read_scalars(ld, v, p);
	if (!rc)
		rc = read_launch(ld, map_get(ld, nd, "launch"), "launch", p);
	v = rc ? NULL : map_get(ld, nd, "reference_launch");
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
	char kpath[PATH_LEN];
	int64_t x = 0;
	int rc = need_map(ld, nd, path, 0, MAX_SHAPE_VALUES);

	*out = json_object();
	for (yaml_node_pair_t *pr = nd->data.mapping.pairs.start;
	     !rc && pr < nd->data.mapping.pairs.top; pr++) {
		const yaml_node_t *k = node_at(ld, pr->key);

		path_key(kpath, path, text_of(k));
		rc = check_rule(ld, k, kpath, text_of(k), R_IDENT);
		if (!rc)
			rc = get_int(ld, node_at(ld, pr->value), kpath, INT64_MIN, INT64_MAX, &x);
		if (rc)
			break;
		json_object_set_new(*out, text_of(k), json_integer(x));
		sbuf_addf(dflt, "%s%lld", dflt->len ? "x" : "", (long long)x);
	}
	return rc;
}

/* Gives shape i (node nd) its default name when it has none; checks names are unique. */
static int name_shape(struct ld *ld, const yaml_node_t *nd, const char *path, json_t *arr,
		      json_t *shape, const char *dflt)
{
	char npath[PATH_LEN];
	const yaml_node_t *at = map_get(ld, nd, "name");
	const char *name;
	json_t *v;
	size_t j;

	path_key(npath, path, "name");
	if (!at && !rule_ok(dflt, R_ID))
		return fail(ld, nd, KERR_INVALID, npath,
			    "missing, and the values do not make a valid id ('%.40s'); give the "
			    "shape a name",
			    dflt);
	if (!at)
		json_object_set_new(shape, "name", json_string(dflt));
	name = json_string_value(json_object_get(shape, "name"));
	json_array_foreach (arr, j, v)
		if (!strcmp(json_string_value(json_object_get(v, "name")), name))
			return fail(ld, at ? at : nd, KERR_INVALID, npath,
				    "'%s' is also the name of shapes[%zu]", name, j);
	return 0;
}

static int read_shape(struct ld *ld, const yaml_node_t *nd, const char *path, json_t *arr,
		      json_t **out)
{
	struct sbuf dflt = SBUF_INIT;
	char vpath[PATH_LEN];
	json_t *values = NULL;
	int rc = fields_load(ld, nd, path, shape_fields, ARRAY_SIZE(shape_fields), out);

	path_key(vpath, path, "values");
	if (!rc)
		rc = read_shape_values(ld, map_get(ld, nd, "values"), vpath, &values, &dflt);
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
	char spath[PATH_LEN], tpath[PATH_LEN];
	json_t *shape = NULL;
	size_t timed = SIZE_MAX;
	int rc = need_list(ld, nd, path, 1, MAX_SHAPES);

	ld->s->shapes = json_array();
	for (size_t i = 0; !rc && i < list_size(nd); i++) {
		const yaml_node_t *item = list_item(ld, nd, i);

		path_idx(spath, path, i);
		rc = read_shape(ld, item, spath, ld->s->shapes, &shape);
		if (!rc && json_is_true(json_object_get(shape, "timed"))) {
			if (timed != SIZE_MAX) {
				path_key(tpath, spath, "timed");
				rc = fail(
					ld, map_get(ld, item, "timed"), KERR_INVALID, tpath,
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
	char ipath[PATH_LEN];
	int rc = need_list(ld, nd, path, 1, MAX_TUNABLE_VALUES);

	if (rc)
		return rc;
	t->values = xcalloc(list_size(nd), sizeof(*t->values));
	for (size_t i = 0; !rc && i < list_size(nd); i++) {
		path_idx(ipath, path, i);
		rc = get_int(ld, list_item(ld, nd, i), ipath, INT64_MIN, INT64_MAX, &t->values[i]);
		for (size_t j = 0; !rc && j < i; j++)
			if (t->values[j] == t->values[i])
				rc = fail(ld, list_item(ld, nd, i), KERR_INVALID, ipath,
					  "%lld repeats %s[%zu]", (long long)t->values[i], t->name,
					  j);
		t->nvalues = i + 1;
	}
	return rc;
}

static int read_params(struct ld *ld, const yaml_node_t *nd)
{
	const char *P = "tunables.params";
	struct spec *s = ld->s;
	char path[PATH_LEN];
	int rc = need_map(ld, nd, P, 1, MAX_TUNABLES);

	if (rc)
		return rc;
	s->tunables = xcalloc(map_size(nd), sizeof(*s->tunables));
	for (yaml_node_pair_t *pr = nd->data.mapping.pairs.start;
	     !rc && pr < nd->data.mapping.pairs.top; pr++) {
		const yaml_node_t *k = node_at(ld, pr->key);
		struct tunable *t = &s->tunables[s->ntunables];

		path_key(path, P, text_of(k));
		rc = check_rule(ld, k, path, text_of(k), R_IDENT);
		if (rc)
			break;
		t->name = xstrdup(text_of(k));
		s->ntunables++;
		rc = read_param(ld, node_at(ld, pr->value), path, t);
	}
	return rc;
}

static int read_constraints(struct ld *ld, const yaml_node_t *nd)
{
	const char *P = "tunables.constraints";
	struct spec *s = ld->s;
	char path[PATH_LEN];
	json_t *e = NULL;
	int rc = need_list(ld, nd, P, 0, MAX_CONSTRAINTS);

	if (rc)
		return rc;
	s->constraints = xcalloc(list_size(nd), sizeof(*s->constraints));
	for (size_t i = 0; !rc && i < list_size(nd); i++) {
		path_idx(path, P, i);
		rc = read_expr(ld, list_item(ld, nd, i), path, 1, &e);
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
	int rc = fields_load(ld, nd, path, tunable_fields, ARRAY_SIZE(tunable_fields), &o);

	if (!rc)
		ld->s->render = jenum(o, "render", render_names, RENDER_DEFINE);
	if (!rc)
		rc = read_params(ld, map_get(ld, nd, "params"));
	c = rc ? NULL : map_get(ld, nd, "constraints");
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
	char path[PATH_LEN];
	json_t *arr = json_array(), *prev;
	int64_t x = 0;
	size_t j;
	int rc = need_list(ld, nd, P, MIN_SEEDS, MAX_SEEDS);

	json_object_set_new(c, "seeds", arr);
	for (size_t i = 0; !rc && i < list_size(nd); i++) {
		path_idx(path, P, i);
		rc = get_int(ld, list_item(ld, nd, i), path, 0, INT64_MAX, &x);
		json_array_foreach (arr, j, prev)
			if (!rc && json_integer_value(prev) == x)
				rc = fail(ld, list_item(ld, nd, i), KERR_INVALID, path,
					  "%lld repeats seeds[%zu]", (long long)x, j);
		if (!rc)
			json_array_append_new(arr, json_integer(x));
	}
	return rc;
}

static int read_correctness(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	const yaml_node_t *seeds;
	int rc = fields_load(ld, nd, path, correct_fields, ARRAY_SIZE(correct_fields),
			     &ld->s->correctness);

	seeds = rc ? NULL : map_get(ld, nd, "seeds");
	if (seeds)
		rc = read_seeds(ld, seeds, ld->s->correctness);
	return rc;
}

static const struct field measure_fields[] = {
	FINT("warmup", 0, 1000),
	FINT("min_samples", 1, 1000000),
	FINT("max_samples", 1, 1000000),
	FNUM("min_time_ms", 0, 3600000),
	FNUM("max_time_ms", 0, 3600000),
	FNUM("sample_min_ms", 0, 60000),
	FBOOL("flush"),
	FINT("flush_bytes", 0, 1LL << 40),
	FINT("order_seed", 0, 9000000000000000000LL),
};

/* min_key must not exceed max_key, either given or at its EvalBatch default. */
static int check_order(struct ld *ld, const yaml_node_t *nd, const char *min_key, double min_def,
		       const char *max_key, double max_def)
{
	const json_t *o = ld->s->measurement;
	double lo = jnum(o, min_key, min_def), hi = jnum(o, max_key, max_def);
	const yaml_node_t *at = map_get(ld, nd, min_key);
	char path[PATH_LEN];

	if (lo <= hi)
		return 0;
	path_key(path, "measurement", at ? min_key : max_key);
	if (at)
		return fail(ld, at, KERR_RANGE, path, "%g is greater than %s (%g%s)", lo, max_key,
			    hi, map_get(ld, nd, max_key) ? "" : ", the default");
	return fail(ld, map_get(ld, nd, max_key), KERR_RANGE, path,
		    "%g is less than %s (%g, the default)", hi, min_key, lo);
}

static int read_measurement(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	int rc = fields_load(ld, nd, path, measure_fields, ARRAY_SIZE(measure_fields),
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
	return fields_load(ld, nd, path, limit_fields, ARRAY_SIZE(limit_fields), &ld->s->limits);
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
	return fields_load(ld, nd, path, device_fields, ARRAY_SIZE(device_fields), &ld->s->device);
}

/* ---- evaluator, session, batch, proposer ---- */

static const char *const backend_names[] = { "local", "kubernetes", NULL };

static const struct field evaluator_fields[] = {
	FENUM("backend", 0, backend_names),
	FPATH("evalpod", 0),
	FINT("jobs", 1, 64),
	FURL("storage"),
};

static int read_evaluator(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	struct spec *s = ld->s;
	json_t *o = NULL;
	int rc = fields_load(ld, nd, path, evaluator_fields, ARRAY_SIZE(evaluator_fields), &o);

	if (!rc) {
		s->backend = jenum(o, "backend", backend_names, BACKEND_LOCAL);
		jtext(o, "evalpod", &s->evalpod);
		s->jobs = (int)jint(o, "jobs", 0);
		jtext(o, "storage", &s->storage);
	}
	json_decref(o);
	return rc;
}

static const struct field session_fields[] = {
	FINT("max_rounds", 1, 10000),        FNUM("target_speedup", 0, 1e6),
	FINT("max_evaluations", 1, 1000000), FNUM("max_minutes", 0, 1e6),
	FINT("stagnation_rounds", 1, 1000),  FPATH("output_dir", 0),
};

static int read_session(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	struct spec *s = ld->s;
	json_t *o = NULL;
	int rc = fields_load(ld, nd, path, session_fields, ARRAY_SIZE(session_fields), &o);

	if (!rc) {
		s->max_rounds = (int)jint(o, "max_rounds", s->max_rounds);
		s->target_speedup = jnum(o, "target_speedup", s->target_speedup);
		s->max_evaluations = (int)jint(o, "max_evaluations", s->max_evaluations);
		s->max_minutes = jnum(o, "max_minutes", s->max_minutes);
		s->stagnation_rounds = (int)jint(o, "stagnation_rounds", s->stagnation_rounds);
		jtext(o, "output_dir", &s->output_dir);
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
	int rc = fields_load(ld, nd, path, batch_fields, ARRAY_SIZE(batch_fields), &o);

	if (!rc) {
		s->variants_per_round = (int)jint(o, "variants_per_round", s->variants_per_round);
		s->top_k = (int)jint(o, "top_k", s->top_k);
		s->max_active_lineages =
			(int)jint(o, "max_active_lineages", s->max_active_lineages);
	}
	json_decref(o);
	return rc;
}

static const char *const proposer_names[] = { "tune", "llm", "command", NULL };

static const struct field proposer_fields[] = {
	FENUM("kind", 0, proposer_names),
	FINT("seed", 0, INT64_MAX),
};

/* Any YAML value as JSON, scalars typed as everywhere else (the shape pass bounds the tree). */
static int to_json(struct ld *ld, const yaml_node_t *nd, const char *path, json_t **out)
{
	char sub[PATH_LEN];
	json_t *v = NULL;
	int64_t x = 0;
	double d = 0;
	int b = 0, rc = 0;

	switch (ytype_of(nd)) {
	case Y_NULL: *out = json_null(); return 0;
	case Y_BOOL:
		get_bool(ld, nd, path, &b);
		*out = json_boolean(b);
		return 0;
	case Y_STR: *out = json_string(text_of(nd)); return 0;
	case Y_INT:
		rc = get_int(ld, nd, path, INT64_MIN, INT64_MAX, &x);
		*out = json_integer(x);
		return rc;
	case Y_NUM:
		rc = get_num(ld, nd, path, -DBL_MAX, DBL_MAX, &d);
		*out = json_real(d);
		return rc;
	case Y_LIST:
		*out = json_array();
		for (size_t i = 0; !rc && i < list_size(nd); i++) {
			path_idx(sub, path, i);
			rc = to_json(ld, list_item(ld, nd, i), sub, &v);
			json_array_append_new(*out, v);
		}
		return rc;
	case Y_MAP:
		*out = json_object();
		for (yaml_node_pair_t *p = nd->data.mapping.pairs.start;
		     !rc && p < nd->data.mapping.pairs.top; p++) {
			const char *k = text_of(node_at(ld, p->key));

			path_key(sub, path, k);
			rc = to_json(ld, node_at(ld, p->value), sub, &v);
			json_object_set_new(*out, k, v);
		}
		return rc;
	}
	return 0;
}

static int read_proposer(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	struct spec *s = ld->s;
	json_t *o = json_object(), *conf = NULL;
	int rc = need_map(ld, nd, path, 0, MAX_MAP_KEYS);

	if (!rc)
		rc = fields_read(ld, nd, path, proposer_fields, ARRAY_SIZE(proposer_fields), o);
	if (!rc) {
		s->proposer = jenum(o, "kind", proposer_names, PROPOSER_TUNE);
		s->seed = (uint64_t)jint(o, "seed", (int64_t)s->seed);
	}
	/* Only the proposers that read more settings take more keys. */
	if (!rc && s->proposer == PROPOSER_TUNE)
		rc = fields_known(ld, nd, path, proposer_fields, ARRAY_SIZE(proposer_fields));
	if (!rc && s->proposer != PROPOSER_TUNE)
		rc = to_json(ld, nd, path, &conf);
	if (!rc) {
		if (!conf)
			conf = json_object();
		json_object_set_new(conf, "kind", json_string(proposer_names[s->proposer]));
		json_object_set_new(conf, "seed", json_integer((json_int_t)s->seed));
		json_decref(s->proposer_conf);
		s->proposer_conf = conf;
		conf = NULL;
	}
	json_decref(conf);
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
		return want(ld, root, "", "a mapping with kernel, problem and shapes");
	rc = check_tree(ld, root, "", 0);
	if (!rc)
		rc = fields_known(ld, root, "", keys, ARRAY_SIZE(keys));
	if (!rc)
		rc = fields_read(ld, root, "", keys, ARRAY_SIZE(keys), NULL);
	for (size_t i = 0; !rc && i < ARRAY_SIZE(sections); i++) {
		const yaml_node_t *v = map_get(ld, root, sections[i].key);

		if (v)
			rc = sections[i].read(ld, v, sections[i].key);
	}
	if (!rc && !ld->s->output_dir)
		ld->s->output_dir = xasprintf("%s/runs/%s", ld->s->dir, ld->s->name);
	return rc;
}

/* Line and column (1-based) of byte offset off in text. */
static void offset_mark(const char *text, size_t off, size_t *line, size_t *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; text[i] && i < off; i++) {
		if (text[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

/* Reports libyaml's error: its problem and mark, and the context it was in. */
static int yaml_fail(struct ld *ld, const yaml_parser_t *yp)
{
	size_t line = yp->problem_mark.line + 1, col = yp->problem_mark.column + 1;
	char ctx[160] = "";

	if (yp->error == YAML_MEMORY_ERROR)
		abort(); /* out of memory, like the x-wrappers */
	if (yp->error == YAML_READER_ERROR)
		offset_mark(ld->s->text, yp->problem_offset, &line, &col);
	if (yp->context)
		snprintf(ctx, sizeof(ctx), " (%s at line %zu, column %zu)", yp->context,
			 yp->context_mark.line + 1, yp->context_mark.column + 1);
	return kerr_set(ld->msg, ld->n, KERR_PARSE, "%s:%zu:%zu: document: %s%s", ld->file, line,
			col, yp->problem ? yp->problem : "malformed YAML", ctx);
}

/* Loads the one document of the stream; a second document is an error. */
static int load_yaml(struct ld *ld, yaml_parser_t *yp, int *loaded)
{
	yaml_document_t more;
	yaml_node_t *root;
	int rc = 0;

	if (!yaml_parser_load(yp, &ld->doc))
		return yaml_fail(ld, yp);
	*loaded = 1;
	if (!yaml_document_get_root_node(&ld->doc))
		return kerr_set(ld->msg, ld->n, KERR_PARSE,
				"%s:1:1: document: the file is empty; expected a mapping with "
				"kernel, problem and shapes",
				ld->file);
	if (!yaml_parser_load(yp, &more))
		return yaml_fail(ld, yp);
	root = yaml_document_get_root_node(&more);
	if (root)
		rc = kerr_set(ld->msg, ld->n, KERR_PARSE,
			      "%s:%zu:%zu: document: a second YAML document; a spec is one "
			      "document",
			      ld->file, more.start_mark.line + 1, more.start_mark.column + 1);
	yaml_document_delete(&more);
	return rc;
}

/* s->dir: the absolute folder of the spec file. */
static int spec_dir(struct ld *ld, const char *path)
{
	const char *slash = strrchr(path, '/');
	char *d = !slash          ? xstrdup(".")
		  : slash == path ? xstrdup("/")
				  : xstrndup(path, (size_t)(slash - path));
	int rc = 0;

	ld->s->dir = realpath(d, NULL);
	if (!ld->s->dir)
		rc = kerr_set(ld->msg, ld->n, KERR_IO, "%s:1:1: document: cannot resolve '%s': %s",
			      path, d, strerror(errno));
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
	s->variants_per_round = 8;
	s->top_k = 3;
	s->max_active_lineages = 4;
	s->proposer = PROPOSER_TUNE;
	s->seed = 1;
	s->proposer_conf = json_pack("{s:s, s:i}", "kind", "tune", "seed", 1);
}

int spec_load(struct spec *s, const char *path, char *msg, size_t n)
{
	struct ld ld = { .s = s, .file = path, .msg = msg, .n = n };
	yaml_parser_t yp;
	char why[WHY_LEN];
	size_t len = 0;
	int rc, loaded = 0;

	memset(s, 0, sizeof(*s));
	memset(&yp, 0, sizeof(yp));
	spec_defaults(s);
	s->path = xstrdup(path);
	if (file_read(path, SPEC_MAX_BYTES, &s->text, &len, why, sizeof(why)))
		return kerr_set(msg, n, KERR_IO, "%s:1:1: document: %s", path, why);
	rc = spec_dir(&ld, path);
	if (rc)
		return rc;
	if (!yaml_parser_initialize(&yp))
		abort(); /* out of memory */
	yaml_parser_set_input_string(&yp, (const unsigned char *)s->text, len);
	rc = load_yaml(&ld, &yp, &loaded);
	if (!rc)
		rc = read_document(&ld, yaml_document_get_root_node(&ld.doc));
	if (loaded)
		yaml_document_delete(&ld.doc);
	yaml_parser_delete(&yp);
	return rc;
}

void spec_release(struct spec *s)
{
	char **strs[] = {
		&s->path,          &s->dir,          &s->text,           &s->name,
		&s->template_path, &s->template_src, &s->reference_path, &s->reference_src,
		&s->marker_start,  &s->marker_end,   &s->build_options,  &s->semantics,
		&s->evalpod,       &s->storage,      &s->output_dir,
	};
	json_t **objs[] = { &s->problem, &s->shapes, &s->correctness,  &s->measurement,
			    &s->limits,  &s->device, &s->proposer_conf };

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
	memset(s, 0, sizeof(*s));
}
