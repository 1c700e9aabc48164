/*
 * yamlx.c - strict reading of one YAML document (see yamlx.h).
 *
 * libyaml loads the whole document; the shape pass (check_tree) walks it
 * once with a depth and node budget, so that the typed getters and the
 * callers' readers can walk it freely afterwards.
 */
#include "yamlx.h"
#include "err.h"
#include "sbuf.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define YAMLX_WHY_LEN 512

/* ---- messages ---- */

/* Formats "FILE:LINE:COLUMN: path: reason" for node nd (NULL: 1:1) and returns code. */
int yamlx_fail(struct yamlx *y, const yaml_node_t *nd, int code, const char *path, const char *fmt,
	       ...)
{
	char why[YAMLX_WHY_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	kerr_set(y->msg, y->n, code, "%s:%zu:%zu: %s: %s", y->file,
		 nd ? nd->start_mark.line + 1 : 1, nd ? nd->start_mark.column + 1 : 1,
		 *path ? path : "document", why);
	/* One line, whatever the document's keys and strings hold. */
	for (char *p = y->msg; p && *p; p++)
		if ((unsigned char)*p < ' ')
			*p = '?';
	return code;
}

void yamlx_path_key(char *out, const char *parent, const char *key)
{
	snprintf(out, YAMLX_PATH_LEN, "%s%s%s", parent, *parent ? "." : "", key);
}

void yamlx_path_idx(char *out, const char *parent, size_t i)
{
	snprintf(out, YAMLX_PATH_LEN, "%s[%zu]", parent, i);
}

/* ---- nodes and scalar types ---- */

static const yaml_node_t *node_at(struct yamlx *y, int i)
{
	return yaml_document_get_node(&y->doc, i);
}

const char *yamlx_text(const yaml_node_t *nd)
{
	return (const char *)nd->data.scalar.value;
}

size_t yamlx_map_size(const yaml_node_t *map)
{
	return (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
}

const yaml_node_t *yamlx_map_key(struct yamlx *y, const yaml_node_t *map, size_t i)
{
	return node_at(y, map->data.mapping.pairs.start[i].key);
}

const yaml_node_t *yamlx_map_value(struct yamlx *y, const yaml_node_t *map, size_t i)
{
	return node_at(y, map->data.mapping.pairs.start[i].value);
}

const yaml_node_t *yamlx_map_get(struct yamlx *y, const yaml_node_t *map, const char *key)
{
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++)
		if (!strcmp(yamlx_text(node_at(y, p->key)), key))
			return node_at(y, p->value);
	return NULL;
}

size_t yamlx_list_size(const yaml_node_t *list)
{
	return (size_t)(list->data.sequence.items.top - list->data.sequence.items.start);
}

const yaml_node_t *yamlx_list_item(struct yamlx *y, const yaml_node_t *list, size_t i)
{
	return node_at(y, list->data.sequence.items.start[i]);
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

static enum yamlx_type plain_type(const char *s)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL", NULL };
	static const char *const bools[] = {
		"true", "True", "TRUE", "false", "False", "FALSE", NULL
	};

	if (one_of(s, nulls))
		return YAMLX_NULL;
	if (one_of(s, bools))
		return YAMLX_BOOL;
	if (int_text(s))
		return YAMLX_INT;
	return num_text(s) ? YAMLX_NUM : YAMLX_STR;
}

enum yamlx_type yamlx_type_of(const yaml_node_t *nd)
{
	switch (nd->type) {
	case YAML_SEQUENCE_NODE: return YAMLX_LIST;
	case YAML_MAPPING_NODE: return YAMLX_MAP;
	case YAML_SCALAR_NODE:
		if (nd->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
			return YAMLX_STR;
		return plain_type(yamlx_text(nd));
	default: return YAMLX_NULL;
	}
}

/* What nd is, for "expected X, got Y" (into buf). */
static const char *describe(const yaml_node_t *nd, char *buf, size_t n)
{
	static const char *const what[] = {
		[YAMLX_NULL] = "null",     [YAMLX_BOOL] = "boolean", [YAMLX_INT] = "integer",
		[YAMLX_NUM] = "number",    [YAMLX_STR] = "string",   [YAMLX_LIST] = "a list",
		[YAMLX_MAP] = "a mapping",
	};
	enum yamlx_type t = yamlx_type_of(nd);

	if (t == YAMLX_NULL || t == YAMLX_LIST || t == YAMLX_MAP)
		return what[t];
	if (t == YAMLX_STR)
		snprintf(buf, n, "string '%.40s%s'", yamlx_text(nd),
			 strlen(yamlx_text(nd)) > 40 ? "..." : "");
	else
		snprintf(buf, n, "%s %.40s", what[t], yamlx_text(nd));
	return buf;
}

int yamlx_want(struct yamlx *y, const yaml_node_t *nd, const char *path, const char *what)
{
	char buf[80];

	return yamlx_fail(y, nd, KERR_PARSE, path, "expected %s, got %s", what,
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

static int check_scalar(struct yamlx *y, const yaml_node_t *nd, const char *path)
{
	json_t *probe;

	if (strlen(yamlx_text(nd)) != nd->data.scalar.length)
		return yamlx_fail(y, nd, KERR_PARSE, path, "contains a NUL character");
	probe = json_stringn(yamlx_text(nd), nd->data.scalar.length);
	if (!probe)
		return yamlx_fail(y, nd, KERR_PARSE, path, "is not valid UTF-8");
	json_decref(probe);
	return 0;
}

static int check_tree(struct yamlx *y, const yaml_node_t *nd, const char *path, int depth);

/* Keys are scalars and unique; values are checked recursively. */
static int check_map(struct yamlx *y, const yaml_node_t *nd, const char *path, int depth)
{
	const yaml_node_pair_t *p0 = nd->data.mapping.pairs.start;
	char kpath[YAMLX_PATH_LEN];
	int rc = 0;

	if (yamlx_map_size(nd) > YAMLX_MAX_MAP_KEYS)
		return yamlx_fail(y, nd, KERR_RANGE, path, "has %zu keys, at most %d",
				  yamlx_map_size(nd), YAMLX_MAX_MAP_KEYS);
	for (const yaml_node_pair_t *p = p0; p < nd->data.mapping.pairs.top && !rc; p++) {
		const yaml_node_t *k = node_at(y, p->key);

		if (k->type != YAML_SCALAR_NODE)
			return yamlx_fail(y, k, KERR_PARSE, path, "a key must be a scalar, got %s",
					  k->type == YAML_SEQUENCE_NODE ? "a list" : "a mapping");
		yamlx_path_key(kpath, path, yamlx_text(k));
		rc = check_tree(y, k, kpath, depth + 1);
		for (const yaml_node_pair_t *q = p0; q < p && !rc; q++) {
			const yaml_node_t *first = node_at(y, q->key);

			if (!strcmp(yamlx_text(first), yamlx_text(k)))
				rc = yamlx_fail(y, k, KERR_PARSE, kpath,
						"duplicate key (first at line %zu, column %zu)",
						first->start_mark.line + 1,
						first->start_mark.column + 1);
		}
		if (!rc)
			rc = check_tree(y, node_at(y, p->value), kpath, depth + 1);
	}
	return rc;
}

static int check_tree(struct yamlx *y, const yaml_node_t *nd, const char *path, int depth)
{
	char ipath[YAMLX_PATH_LEN];
	int rc = 0;

	if (depth > YAMLX_MAX_DEPTH)
		return yamlx_fail(y, nd, KERR_RANGE, path, "nested deeper than %d levels",
				  YAMLX_MAX_DEPTH);
	for (int i = 0; i < depth; i++)
		if (y->open[i] == nd)
			return yamlx_fail(y, nd, KERR_PARSE, path,
					  "an alias refers to a node that contains it");
	y->open[depth] = nd;
	if (++y->nodes > YAMLX_MAX_NODES)
		return yamlx_fail(y, nd, KERR_RANGE, path, "the document has more than %d nodes",
				  YAMLX_MAX_NODES);
	if (!tag_ok(nd))
		return yamlx_fail(y, nd, KERR_PARSE, path, "tag '%s' is not supported",
				  (const char *)nd->tag);
	if (nd->type == YAML_SCALAR_NODE)
		return check_scalar(y, nd, path);
	if (nd->type == YAML_MAPPING_NODE)
		return check_map(y, nd, path, depth);
	for (size_t i = 0; i < yamlx_list_size(nd) && !rc; i++) {
		yamlx_path_idx(ipath, path, i);
		rc = check_tree(y, yamlx_list_item(y, nd, i), ipath, depth + 1);
	}
	return rc;
}

int yamlx_check(struct yamlx *y, const yaml_node_t *root)
{
	y->nodes = 0;
	return check_tree(y, root, "", 0);
}

/* ---- containers ---- */

int yamlx_need_map(struct yamlx *y, const yaml_node_t *nd, const char *path, size_t lo, size_t hi)
{
	if (nd->type != YAML_MAPPING_NODE)
		return yamlx_want(y, nd, path, "a mapping");
	if (yamlx_map_size(nd) < lo || yamlx_map_size(nd) > hi)
		return yamlx_fail(y, nd, KERR_RANGE, path, "has %zu entries, expected %zu to %zu",
				  yamlx_map_size(nd), lo, hi);
	return 0;
}

int yamlx_need_list(struct yamlx *y, const yaml_node_t *nd, const char *path, size_t lo, size_t hi)
{
	if (nd->type != YAML_SEQUENCE_NODE)
		return yamlx_want(y, nd, path, "a list");
	if (yamlx_list_size(nd) < lo || yamlx_list_size(nd) > hi)
		return yamlx_fail(y, nd, KERR_RANGE, path, "has %zu entries, expected %zu to %zu",
				  yamlx_list_size(nd), lo, hi);
	return 0;
}

int yamlx_keys_known(struct yamlx *y, const yaml_node_t *map, const char *path,
		     const char *const *keys, size_t nkeys)
{
	char kpath[YAMLX_PATH_LEN];
	struct sbuf list = SBUF_INIT;
	int rc = 0;

	for (size_t j = 0; j < yamlx_map_size(map) && !rc; j++) {
		const yaml_node_t *k = yamlx_map_key(y, map, j);
		size_t i = 0;

		while (i < nkeys && strcmp(keys[i], yamlx_text(k)))
			i++;
		if (i < nkeys)
			continue;
		for (i = 0; i < nkeys; i++)
			sbuf_addf(&list, "%s%s", i ? ", " : "", keys[i]);
		yamlx_path_key(kpath, path, yamlx_text(k));
		rc = yamlx_fail(y, k, KERR_PARSE, kpath, "unknown key (expected one of %s)",
				list.buf);
	}
	sbuf_release(&list);
	return rc;
}

/* ---- typed scalar getters ---- */

int yamlx_get_int(struct yamlx *y, const yaml_node_t *nd, const char *path, int64_t lo, int64_t hi,
		  int64_t *out)
{
	const char *s = yamlx_text(nd);
	int hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
	long long x;
	char *end;

	if (yamlx_type_of(nd) != YAMLX_INT)
		return yamlx_want(y, nd, path, "an integer");
	errno = 0;
	x = strtoll(s, &end, hex ? 16 : 10);
	if (errno == ERANGE || *end)
		return yamlx_fail(y, nd, KERR_RANGE, path, "%.40s does not fit in 64 bits", s);
	if (x < lo || x > hi)
		return yamlx_fail(y, nd, KERR_RANGE, path, "%lld is outside [%lld, %lld]", x,
				  (long long)lo, (long long)hi);
	*out = x;
	return 0;
}

int yamlx_get_num(struct yamlx *y, const yaml_node_t *nd, const char *path, double lo, double hi,
		  double *out)
{
	enum yamlx_type t = yamlx_type_of(nd);
	int64_t i;
	double x;
	char *end;
	int rc;

	if (t == YAMLX_INT) {
		rc = yamlx_get_int(y, nd, path, INT64_MIN, INT64_MAX, &i);
		x = (double)i;
	} else if (t == YAMLX_NUM) {
		errno = 0;
		x = strtod(yamlx_text(nd), &end);
		rc = *end || !isfinite(x) ? yamlx_fail(y, nd, KERR_RANGE, path,
						       "%.40s is out of range", yamlx_text(nd))
					  : 0;
	} else {
		return yamlx_want(y, nd, path, "a number");
	}
	if (rc)
		return rc;
	if (!(x >= lo && x <= hi))
		return yamlx_fail(y, nd, KERR_RANGE, path, "%g is outside [%g, %g]", x, lo, hi);
	*out = x;
	return 0;
}

int yamlx_get_bool(struct yamlx *y, const yaml_node_t *nd, const char *path, int *out)
{
	if (yamlx_type_of(nd) != YAMLX_BOOL)
		return yamlx_want(y, nd, path, "a boolean (true or false)");
	*out = yamlx_text(nd)[0] == 't' || yamlx_text(nd)[0] == 'T';
	return 0;
}

/* A scalar's text; plain integers and numbers count as their text, null and booleans do not. */
int yamlx_get_text(struct yamlx *y, const yaml_node_t *nd, const char *path, const char **out)
{
	enum yamlx_type t = yamlx_type_of(nd);

	if (t != YAMLX_STR && t != YAMLX_INT && t != YAMLX_NUM)
		return yamlx_want(y, nd, path, "a string");
	*out = yamlx_text(nd);
	return 0;
}

int yamlx_get_enum(struct yamlx *y, const yaml_node_t *nd, const char *path,
		   const char *const *names, int *idx)
{
	struct sbuf list = SBUF_INIT;
	const char *s = NULL;
	int rc = yamlx_get_text(y, nd, path, &s);

	for (int i = 0; !rc && names[i]; i++)
		if (!strcmp(s, names[i])) {
			*idx = i;
			return 0;
		}
	if (rc)
		return rc;
	for (int i = 0; names[i]; i++)
		sbuf_addf(&list, "%s%s", i ? ", " : "", names[i]);
	rc = yamlx_fail(y, nd, KERR_INVALID, path, "'%.40s' is not one of %s", s, list.buf);
	sbuf_release(&list);
	return rc;
}

/* Any YAML value as JSON, scalars typed as everywhere else (the shape pass bounds the tree). */
int yamlx_to_json(struct yamlx *y, const yaml_node_t *nd, const char *path, json_t **out)
{
	char sub[YAMLX_PATH_LEN];
	json_t *v = NULL;
	int64_t x = 0;
	double d = 0;
	int b = 0, rc = 0;

	switch (yamlx_type_of(nd)) {
	case YAMLX_NULL: *out = json_null(); return 0;
	case YAMLX_BOOL:
		yamlx_get_bool(y, nd, path, &b);
		*out = json_boolean(b);
		return 0;
	case YAMLX_STR: *out = json_string(yamlx_text(nd)); return 0;
	case YAMLX_INT:
		rc = yamlx_get_int(y, nd, path, INT64_MIN, INT64_MAX, &x);
		*out = json_integer(x);
		return rc;
	case YAMLX_NUM:
		rc = yamlx_get_num(y, nd, path, -DBL_MAX, DBL_MAX, &d);
		*out = json_real(d);
		return rc;
	case YAMLX_LIST:
		*out = json_array();
		for (size_t i = 0; !rc && i < yamlx_list_size(nd); i++) {
			yamlx_path_idx(sub, path, i);
			rc = yamlx_to_json(y, yamlx_list_item(y, nd, i), sub, &v);
			json_array_append_new(*out, v);
		}
		return rc;
	case YAMLX_MAP:
		*out = json_object();
		for (size_t i = 0; !rc && i < yamlx_map_size(nd); i++) {
			const char *k = yamlx_text(yamlx_map_key(y, nd, i));

			yamlx_path_key(sub, path, k);
			rc = yamlx_to_json(y, yamlx_map_value(y, nd, i), sub, &v);
			json_object_set_new(*out, k, v);
		}
		return rc;
	}
	return 0;
}

/* ---- loading ---- */

void yamlx_init(struct yamlx *y, const char *file, char *msg, size_t n)
{
	memset(y, 0, sizeof(*y));
	y->file = file;
	y->msg = msg;
	y->n = n;
}

/* Line and column (1-based) of byte offset off in text. */
static void offset_mark(const char *text, size_t len, size_t off, size_t *line, size_t *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < len && text[i] && i < off; i++) {
		if (text[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

/*
 * Whether the text holds a tab at line:col (from 1; col counts bytes, as
 * libyaml's does for ASCII lines, and a tab is never part of a longer
 * UTF-8 character).  libyaml says only "found character that cannot start
 * any token" there, which names neither the tab nor the rule.
 */
static int tab_at(const char *text, size_t len, size_t line, size_t col)
{
	size_t i = 0;

	for (size_t l = 1; l < line && i < len; i++)
		if (text[i] == '\n')
			l++;
	for (size_t c = 1; c < col && i < len && text[i] != '\n'; c++)
		i++;
	return i < len && text[i] == '\t';
}

/* Reports libyaml's error: its problem and mark, and the context it was in. */
static int parser_fail(struct yamlx *y, const yaml_parser_t *yp)
{
	size_t line = yp->problem_mark.line + 1, col = yp->problem_mark.column + 1;
	char ctx[200] = "";

	if (yp->error == YAML_MEMORY_ERROR)
		abort(); /* out of memory, like the x-wrappers */
	if (yp->error == YAML_READER_ERROR)
		offset_mark(y->text, y->len, yp->problem_offset, &line, &col);
	if (yp->context)
		snprintf(ctx, sizeof(ctx), " (%s at line %zu, column %zu)", yp->context,
			 yp->context_mark.line + 1, yp->context_mark.column + 1);
	if (y->text && tab_at(y->text, y->len, line, col) &&
	    !strstr(yp->problem ? yp->problem : "", "tab"))
		snprintf(ctx + strlen(ctx), sizeof(ctx) - strlen(ctx),
			 "; it is a tab, and YAML indents with spaces only");
	return kerr_set(y->msg, y->n, KERR_PARSE, "%s:%zu:%zu: document: %s%s", y->file, line, col,
			yp->problem ? yp->problem : "malformed YAML", ctx);
}

/* A parser over the len bytes of text. */
static void parser_start(yaml_parser_t *yp, const char *text, size_t len)
{
	memset(yp, 0, sizeof(*yp));
	if (!yaml_parser_initialize(yp))
		abort(); /* out of memory */
	yaml_parser_set_input_string(yp, (const unsigned char *)text, len);
}

/*
 * Refuses nesting deeper than YAMLX_MAX_DEPTH where it begins, from the
 * stream's events, before the document is loaded.  libyaml's scanner keeps
 * a possible simple key per open flow collection and looks at all of them
 * at every token, so loading 100,000 nested "[" (200 KB) took 23 s before
 * the tree's depth could be measured; here parsing stops at the first
 * collection too deep.  A malformed stream is left for the loader to
 * report, as it reports it.  check_tree keeps its own check: an alias
 * puts a whole subtree under it, deeper than the events show.
 */
static int depth_scan(struct yamlx *y, const char *text, size_t len)
{
	yaml_parser_t yp;
	yaml_event_t ev;
	int depth = -1, rc = 0, done = 0; /* the root is level 0, as yamlx_check counts */

	parser_start(&yp, text, len);
	while (!done && !rc && yaml_parser_parse(&yp, &ev)) {
		if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) {
			if (++depth > YAMLX_MAX_DEPTH)
				rc = kerr_set(y->msg, y->n, KERR_RANGE,
					      "%s:%zu:%zu: document: nested deeper than %d levels",
					      y->file, ev.start_mark.line + 1,
					      ev.start_mark.column + 1, YAMLX_MAX_DEPTH);
		} else if (ev.type == YAML_SEQUENCE_END_EVENT ||
			   ev.type == YAML_MAPPING_END_EVENT) {
			depth--;
		} else if (ev.type == YAML_STREAM_END_EVENT) {
			done = 1;
		}
		yaml_event_delete(&ev);
	}
	if (yp.error == YAML_MEMORY_ERROR)
		abort();
	yaml_parser_delete(&yp);
	return rc;
}

/* Loads the one document of the stream; a second document is an error. */
static int load_one(struct yamlx *y, yaml_parser_t *yp, const char *noun, const char *expect)
{
	yaml_document_t more;
	yaml_node_t *root;
	int rc = 0;

	if (!yaml_parser_load(yp, &y->doc))
		return parser_fail(y, yp);
	y->loaded = 1;
	if (!yaml_document_get_root_node(&y->doc))
		return kerr_set(y->msg, y->n, KERR_PARSE,
				"%s:1:1: document: the file is empty; expected %s", y->file,
				expect);
	if (!yaml_parser_load(yp, &more))
		return parser_fail(y, yp);
	root = yaml_document_get_root_node(&more);
	if (root)
		rc = kerr_set(y->msg, y->n, KERR_PARSE,
			      "%s:%zu:%zu: document: a second YAML document; %s is one document",
			      y->file, more.start_mark.line + 1, more.start_mark.column + 1, noun);
	yaml_document_delete(&more);
	return rc;
}

int yamlx_load(struct yamlx *y, const char *text, size_t len, const char *noun, const char *expect)
{
	yaml_parser_t yp;
	int rc;

	y->text = text;
	y->len = len;
	rc = depth_scan(y, text, len);
	if (rc)
		return rc;
	parser_start(&yp, text, len);
	rc = load_one(y, &yp, noun, expect);
	yaml_parser_delete(&yp);
	return rc;
}

const yaml_node_t *yamlx_root(struct yamlx *y)
{
	return y->loaded ? yaml_document_get_root_node(&y->doc) : NULL;
}

void yamlx_release(struct yamlx *y)
{
	if (y->loaded)
		yaml_document_delete(&y->doc);
	y->loaded = 0;
}
