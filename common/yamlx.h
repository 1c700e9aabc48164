/*
 * yamlx.h - strict reading of one YAML document through libyaml, with
 * FILE:LINE:COLUMN and key-path error messages.
 *
 * The document is loaded whole into libyaml's node tree; yamlx_check then
 * checks the tree's shape (mapping keys are unique scalars, strings are
 * valid UTF-8 without NUL bytes, no explicit tags, nesting and size are
 * bounded with aliases counted at each use, no alias contains itself), so
 * that readers walking the tree afterwards meet none of that.
 *
 * Scalars are typed like YAML 1.2's core schema, restricted: a quoted
 * scalar is always a string; a plain one is null (~, null, empty), a
 * boolean (true, false), an integer (decimal or 0x hex), a number
 * (1.5, 1e-4) or else a string.  Where a string is expected, a plain
 * integer or number is taken as its text; null and booleans are not.
 *
 * Key paths name a node for messages: "" is the document, "a.b" the value
 * of key b in the mapping at a, "a[2]" the third item of the list at a;
 * yamlx_path_key and yamlx_path_idx build them in YAMLX_PATH_LEN buffers.
 *
 * Errors: every function that takes a path and returns int returns 0, or
 * a negative KERR_* code (err.h) with the struct yamlx's msg set to
 *   FILE:LINE:COLUMN: key.path: reason
 * (the node's start mark, 1-based; "document" for the path "").  Messages
 * are one line: control characters in them become '?'.
 *
 * Nodes (const yaml_node_t *) point into the loaded document: they live
 * until yamlx_release.  Strings returned are borrowed from the nodes.
 */
#ifndef KCTL_YAMLX_H
#define KCTL_YAMLX_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#define YAMLX_PATH_LEN     512    /* key paths, cut to fit */
#define YAMLX_MAX_DEPTH    64     /* nesting of the tree */
#define YAMLX_MAX_NODES    100000 /* nodes visited, aliases counted each time */
#define YAMLX_MAX_MAP_KEYS 1024   /* keys of any one mapping */

enum yamlx_type { YAMLX_NULL, YAMLX_BOOL, YAMLX_INT, YAMLX_NUM, YAMLX_STR, YAMLX_LIST, YAMLX_MAP };

/* One document being read; caller-owned, yamlx_init then yamlx_release. */
struct yamlx {
	const char *file; /* the name messages start with (borrowed) */
	char *msg;        /* where failures are described (caller's buffer) */
	size_t n;
	const char *text; /* the bytes loaded (borrowed), for reader-error marks */
	size_t len;
	yaml_document_t doc;
	int loaded; /* doc holds a document to delete */
	size_t nodes;
	const yaml_node_t *open[YAMLX_MAX_DEPTH + 1]; /* yamlx_check's path from the root */
};

/* ---- the document ---- */

/*
 * Prepares y to read a document named file (kept, not copied, for
 * messages), describing failures into msg[n] (kept too).  Allocates
 * nothing; yamlx_release is still safe.
 */
void yamlx_init(struct yamlx *y, const char *file, char *msg, size_t n);

/*
 * Parses text[0..len) (kept, not copied, until yamlx_release) as exactly
 * one YAML document.  Returns 0, or KERR_PARSE for
 * malformed YAML ("FILE:LINE:COLUMN: document: " libyaml's problem and its
 * context), an empty stream ("...: the file is empty; expected <expect>")
 * or a second document ("...: a second YAML document; <noun> is one
 * document").  Out of memory aborts.
 */
int yamlx_load(struct yamlx *y, const char *text, size_t len, const char *noun, const char *expect);

/* The loaded document's root node, NULL before a successful yamlx_load. */
const yaml_node_t *yamlx_root(struct yamlx *y);

/*
 * Checks the shape of the tree under root (see the top of this file).
 * Returns 0, KERR_PARSE (key not a scalar, duplicate key, NUL or bad
 * UTF-8 in a scalar, a tag, an alias inside itself) or KERR_RANGE (more
 * than YAMLX_MAX_MAP_KEYS keys, deeper than YAMLX_MAX_DEPTH, more than
 * YAMLX_MAX_NODES nodes).  The other functions assume a checked tree.
 */
int yamlx_check(struct yamlx *y, const yaml_node_t *root);

/* Frees the document; y can be initialized again. */
void yamlx_release(struct yamlx *y);

/* ---- messages ---- */

/*
 * Sets msg to "FILE:LINE:COLUMN: path: " and the printf-formatted reason,
 * for node nd (NULL: line 1, column 1); returns code.
 */
int yamlx_fail(struct yamlx *y, const yaml_node_t *nd, int code, const char *path, const char *fmt,
	       ...) __attribute__((format(printf, 5, 6)));

/* Fails with KERR_PARSE: "expected <what>, got <what nd is>". */
int yamlx_want(struct yamlx *y, const yaml_node_t *nd, const char *path, const char *what);

/* out (YAMLX_PATH_LEN bytes) = parent.key, or key when parent is "". */
void yamlx_path_key(char *out, const char *parent, const char *key);

/* out (YAMLX_PATH_LEN bytes) = parent[i]. */
void yamlx_path_idx(char *out, const char *parent, size_t i);

/* ---- nodes ---- */

enum yamlx_type yamlx_type_of(const yaml_node_t *nd);

/* A scalar's text. */
const char *yamlx_text(const yaml_node_t *nd);

/* Entries of a mapping, in document order: key i (a scalar) and its value. */
size_t yamlx_map_size(const yaml_node_t *map);
const yaml_node_t *yamlx_map_key(struct yamlx *y, const yaml_node_t *map, size_t i);
const yaml_node_t *yamlx_map_value(struct yamlx *y, const yaml_node_t *map, size_t i);

/* The value of key in map, or NULL. */
const yaml_node_t *yamlx_map_get(struct yamlx *y, const yaml_node_t *map, const char *key);

size_t yamlx_list_size(const yaml_node_t *list);
const yaml_node_t *yamlx_list_item(struct yamlx *y, const yaml_node_t *list, size_t i);

/* ---- containers ---- */

/* nd is a mapping (KERR_PARSE) of lo to hi entries (KERR_RANGE). */
int yamlx_need_map(struct yamlx *y, const yaml_node_t *nd, const char *path, size_t lo, size_t hi);

/* nd is a list (KERR_PARSE) of lo to hi items (KERR_RANGE). */
int yamlx_need_list(struct yamlx *y, const yaml_node_t *nd, const char *path, size_t lo, size_t hi);

/*
 * Fails with KERR_PARSE at the first key of map (at path) that is not one
 * of keys[0..nkeys): "path.key: unknown key (expected one of a, b, c)".
 */
int yamlx_keys_known(struct yamlx *y, const yaml_node_t *map, const char *path,
		     const char *const *keys, size_t nkeys);

/* ---- typed scalars: KERR_PARSE for the wrong type ---- */

/* A decimal or 0x integer in [lo, hi] (else KERR_RANGE). */
int yamlx_get_int(struct yamlx *y, const yaml_node_t *nd, const char *path, int64_t lo, int64_t hi,
		  int64_t *out);

/* An integer or a finite number in [lo, hi] (else KERR_RANGE). */
int yamlx_get_num(struct yamlx *y, const yaml_node_t *nd, const char *path, double lo, double hi,
		  double *out);

int yamlx_get_bool(struct yamlx *y, const yaml_node_t *nd, const char *path, int *out);

/* A string, or a plain integer or number as its text; *out is borrowed. */
int yamlx_get_text(struct yamlx *y, const yaml_node_t *nd, const char *path, const char **out);

/*
 * A text that is one of names (NULL-terminated); *idx is its index.
 * Another text fails with KERR_INVALID listing names.
 */
int yamlx_get_enum(struct yamlx *y, const yaml_node_t *nd, const char *path,
		   const char *const *names, int *idx);

/*
 * Any value as JSON, scalars typed as above (integers out of 64 bits and
 * numbers out of range fail with KERR_RANGE).  *out is a new reference the
 * caller decrefs, also on failure (it may then hold part of the value).
 */
int yamlx_to_json(struct yamlx *y, const yaml_node_t *nd, const char *path, json_t **out);

#endif
