/*
 * spec-internal.h - what the parts of the spec loader share, in layers that
 * call only downwards:
 *
 *   spec.c            the load, its table of sections, the kernel and
 *                     tunables sections (the top; nothing calls back into it)
 *   spec-problem.c    the problem and shapes sections,
 *   spec-evaluator.c  those on evaluation,
 *   spec-proposer.c   the proposer's,
 *   spec-exprs.c      the expressions resolved as evalpod will (at load,
 *                     and for a program's launch geometry)
 *   spec-read.c       the field tables, text rules, URL and expression
 *                     readers and the marks all of the above share (the
 *                     bottom; it calls none of them)
 */
#ifndef KCTL_SPEC_INTERNAL_H
#define KCTL_SPEC_INTERNAL_H

#include "spec.h"
#include "yamlx.h"
#include "arraysize.h"

#include <stdint.h>

#define WHY_LEN 512

/* One load in progress. */
struct ld {
	struct spec *s;
	struct yamlx y;
	/* Every expression read: its key path and node, for the checks at the end. */
	struct mark {
		char *path;
		const yaml_node_t *nd;
	} * marks;
	size_t nmarks, amarks;
};

/* The node the expression at path was read from; NULL (line 1) if none (spec-read.c). */
const yaml_node_t *mark_find(const struct ld *ld, const char *path);
/* Frees the marks of ld (spec-read.c). */
void marks_release(struct ld *ld);

/*
 * Resolves every expression evalpod will evaluate, at every shape, for the
 * reference, the template as written and the tunables' settings; fails
 * with FILE:LINE:COLUMN of the expression (spec-exprs.c).
 */
int check_exprs(struct ld *ld);

/* What a text value must look like (spec-read.c's spec_check_rule). */
enum rule { R_ANY, R_TEXT, R_IDENT, R_ID, R_NAME, R_MARKER };

/* ---- field tables (spec-read.c): one entry per key of a mapping ---- */

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
int fld_known(struct ld *ld, const yaml_node_t *map, const char *path, const struct field *f,
	      size_t nf);
/* Reads the fields of map present in f[0..nf) into out (absent keys are left out). */
int fld_read(struct ld *ld, const yaml_node_t *map, const char *path, const struct field *f,
	     size_t nf, json_t *out);
/* yamlx_need_map + fld_known + fld_read into the new object *out (caller decrefs, even on failure). */
int fld_load(struct ld *ld, const yaml_node_t *map, const char *path, const struct field *f,
	     size_t nf, json_t **out);
/* The value of o.key read by the functions above, or def when absent. */
int64_t fld_int(const json_t *o, const char *key, int64_t def);
double fld_num(const json_t *o, const char *key, double def);
/* Replaces *dst with a copy of o.key when present. */
void fld_text(const json_t *o, const char *key, char **dst);
int fld_enum(const json_t *o, const char *key, const char *const *names, int def);

/* The proposer section (spec-proposer.c). */
int read_proposer(struct ld *ld, const yaml_node_t *nd, const char *path);
/* Its defaults, and what spec_release frees of it. */
void proposer_defaults(struct spec *s);
void proposer_release(struct spec *s);

/* ---- spec-read.c: checks the sections share ---- */

/* Whether s obeys rule r; spec_check_rule fails with "FILE:LINE: path: ..." when not. */
int spec_rule_ok(const char *s, enum rule r);
int spec_check_rule(struct ld *ld, const yaml_node_t *nd, const char *path, const char *s,
		    enum rule r);

/*
 * nd (at path) is an integer expression: a plain integer, kept as its
 * decimal text, or a string that expr_check accepts.  *out is a new
 * JSON string.
 */
int read_expr(struct ld *ld, const yaml_node_t *nd, const char *path, int allow_negative,
	      json_t **out);

/* Reads the value v (at path) of field f into the new JSON value *out. */
int spec_field_read(struct ld *ld, const yaml_node_t *v, const char *path, const struct field *f,
		    json_t **out);

/*
 * The sections spec.c's table reads, each from its node nd at path into
 * ld->s: problem and shapes (spec-problem.c); correctness, measurement,
 * limits, device, evaluator, session and batch (spec-evaluator.c).
 */
int read_problem(struct ld *ld, const yaml_node_t *nd, const char *path);
int read_shapes(struct ld *ld, const yaml_node_t *nd, const char *path);
int read_correctness(struct ld *ld, const yaml_node_t *nd, const char *path);
int read_measurement(struct ld *ld, const yaml_node_t *nd, const char *path);
int read_limits(struct ld *ld, const yaml_node_t *nd, const char *path);
int read_device(struct ld *ld, const yaml_node_t *nd, const char *path);
int read_evaluator(struct ld *ld, const yaml_node_t *nd, const char *path);
int read_session(struct ld *ld, const yaml_node_t *nd, const char *path);
int read_batch(struct ld *ld, const yaml_node_t *nd, const char *path);
int read_cache(struct ld *ld, const yaml_node_t *nd, const char *path);

#endif
