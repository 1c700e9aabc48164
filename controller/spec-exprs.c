/*
 * spec-exprs.c - a spec's expressions resolved as evalpod resolves them:
 * the load-time check that every one evaluates for the programs a session
 * surely runs, and the launch geometry of a program.
 *
 * May use: spec-internal.h (spec-read.c's marks), spec-render.c (a point
 * rendered as the tuner renders it), defines, expr, mutate and common/.  spec.c calls check_exprs() at the end of a load.
 */
#include "spec-internal.h"
#include "defines.h"
#include "err.h"
#include "expr.h"
#include "mutate.h"
#include "sbuf.h"
#include "xalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- expressions, resolved as evalpod resolves them ---- */

/*
 * evalpod evaluates buffer counts, integer scalar values, flops and bytes
 * over the shape's values alone, and launch sizes and local memory over a
 * program's own names (defines_collect) on top of them.  The load check
 * evaluates each for the programs a session surely runs: the reference,
 * the template as written (round 0) and the tunables' settings as the
 * tuner renders them, so a typo fails the spec, not every variant.
 */

#define KNOWN_MAX    12                 /* names listed after an unknown one */
#define LABEL_MAX    160                /* a tunable setting in a message */
#define CHECK_BUDGET ((size_t)64 << 20) /* program bytes the tunable sweep may resolve */

/* The programs an expression is evaluated for. */
enum {
	FOR_SHAPE = 1 << 0,     /* none: over the shape's values alone */
	FOR_REFERENCE = 1 << 1, /* the reference */
	FOR_VARIANT = 1 << 2,   /* the template and its variants */
};

enum need { NEED_ANY, NEED_POSITIVE, NEED_NONNEG, NEED_INT };

/* What a launch step's "global" or "local" size must be: a global size of 0 skips the step. */
static enum need dim_need(const char *key)
{
	return strcmp(key, "global") ? NEED_POSITIVE : NEED_NONNEG;
}

/* The values evalpod accepts (world.c). */
static const struct need_range {
	int64_t lo, hi;
	const char *what; /* said of a value outside [lo, hi] */
} need_ranges[] = {
	[NEED_ANY] = { INT64_MIN, INT64_MAX, "" },
	[NEED_POSITIVE] = { 1, INT64_MAX, "is not positive" },
	[NEED_NONNEG] = { 0, INT64_MAX, "is negative" }, /* a global size: 0 skips the step */
	[NEED_INT] = { INT32_MIN, INT32_MAX, "does not fit in int" },
};

/* An expression of the problem. */
struct pexpr {
	char *path;       /* its key path, e.g. "problem.launch[0].global[1]" */
	const char *text; /* borrowed from spec->problem */
	int scope;        /* FOR_* bits */
	enum need need;
};

struct pexprs {
	struct pexpr *e;
	size_t n, alloc;
};

/* A program the expressions are resolved for. */
struct cprog {
	int scope;                    /* one FOR_* bit */
	const char *source, *options; /* its names (unused for FOR_SHAPE) */
	int strict;                   /* any failure is an error, not only an unknown name */
	const char *label;            /* appended to "at shape 'S'" in messages */
};

/* Adds text (a JSON string; anything else is not an expression) at path. */
static void pexprs_add(struct pexprs *l, const char *path, const json_t *text, int scope,
		       enum need need)
{
	if (!json_is_string(text))
		return;
	if (l->n == l->alloc) {
		l->alloc = l->alloc ? 2 * l->alloc : 32;
		l->e = xreallocarray(l->e, l->alloc, sizeof(*l->e));
	}
	l->e[l->n++] = (struct pexpr){ xstrdup(path), json_string_value(text), scope, need };
}

/* The sizes of a launch plan's steps: local memory arguments, global, local. */
static void pexprs_plan(struct pexprs *l, const json_t *p, const char *key, int scope)
{
	static const char *const dims[] = { "global", "local" };
	char P[YAMLX_PATH_LEN], sp[YAMLX_PATH_LEN], kp[YAMLX_PATH_LEN], ip[YAMLX_PATH_LEN],
		lp[YAMLX_PATH_LEN];
	json_t *step, *x;
	size_t i, j;

	yamlx_path_key(P, "problem", key);
	json_array_foreach (json_object_get(p, key), i, step) {
		yamlx_path_idx(sp, P, i);
		yamlx_path_key(kp, sp, "args");
		json_array_foreach (json_object_get(step, "args"), j, x) {
			yamlx_path_idx(ip, kp, j);
			yamlx_path_key(lp, ip, "local");
			pexprs_add(l, lp, json_object_get(x, "local"), scope, NEED_POSITIVE);
		}
		for (size_t d = 0; d < ARRAY_SIZE(dims); d++) {
			yamlx_path_key(kp, sp, dims[d]);
			json_array_foreach (json_object_get(step, dims[d]), j, x) {
				yamlx_path_idx(ip, kp, j);
				pexprs_add(l, ip, x, scope, dim_need(dims[d]));
			}
		}
	}
}

/* Every expression of the EvalBatch problem p, in document order. */
static void pexprs_collect(struct pexprs *l, const json_t *p)
{
	static const char *const lists[] = { "buffers", "scalars" };
	static const char *const keys[] = { "count", "value" };
	char lp[YAMLX_PATH_LEN], ep[YAMLX_PATH_LEN];
	int has_ref = json_object_get(p, "reference_launch") != NULL;
	json_t *x;
	size_t i;

	for (size_t k = 0; k < ARRAY_SIZE(lists); k++) {
		json_array_foreach (json_object_get(p, lists[k]), i, x) {
			const char *type = json_string_value(json_object_get(x, "type"));

			yamlx_path_key(lp, k ? "problem.scalars" : "problem.buffers",
				       json_string_value(json_object_get(x, "name")));
			yamlx_path_key(ep, lp, keys[k]);
			pexprs_add(l, ep, json_object_get(x, keys[k]), FOR_SHAPE,
				   !k                     ? NEED_POSITIVE
				   : !strcmp(type, "int") ? NEED_INT
							  : NEED_ANY);
		}
	}
	/* Without its own plan, the reference runs the variants' plan. */
	pexprs_plan(l, p, "launch", FOR_VARIANT | (has_ref ? 0 : FOR_REFERENCE));
	pexprs_plan(l, p, "reference_launch", FOR_REFERENCE);
	pexprs_add(l, "problem.flops", json_object_get(p, "flops"), FOR_SHAPE, NEED_ANY);
	pexprs_add(l, "problem.bytes", json_object_get(p, "bytes"), FOR_SHAPE, NEED_ANY);
}

static void pexprs_release(struct pexprs *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->e[i].path);
	free(l->e);
	memset(l, 0, sizeof(*l));
}

/* The values of an EvalBatch shape into vars. */
static void shape_vars(const json_t *shape, struct expr_vars *vars)
{
	const char *key;
	json_t *x;

	json_object_foreach (json_object_get(shape, "values"), key, x)
		expr_vars_set(vars, key, json_integer_value(x));
}

/*
 * Evaluates text over vars.  Returns 0 with *v in need's range, or the
 * failure with why set: expr_eval's code (KERR_NOTFOUND for an unknown
 * name), or KERR_RANGE for a value evalpod would refuse.
 */
static int pexpr_eval(const char *text, enum need need, const struct expr_vars *vars, int64_t *v,
		      char *why, size_t n)
{
	const struct need_range *r = &need_ranges[need];
	int rc = expr_eval(text, expr_vars_lookup, (void *)vars, v, why, n);

	if (!rc && (*v < r->lo || *v > r->hi))
		rc = kerr_set(why, n, KERR_RANGE, "'%s' = %lld %s", text, (long long)*v, r->what);
	return rc;
}

/* "a, b, c": the first KNOWN_MAX names of vars, then ", ..."; "none" when empty. */
static void known_names(const struct expr_vars *vars, char *out, size_t n)
{
	snprintf(out, n, "%s", vars->nr ? "" : "none");
	for (size_t i = 0; i < vars->nr && i < KNOWN_MAX; i++) {
		if (i)
			strlcat(out, ", ", n);
		strlcat(out, vars->v[i].name, n);
	}
	if (vars->nr > KNOWN_MAX)
		strlcat(out, ", ...", n);
}

static int check_expr(struct ld *ld, const struct pexpr *e, const struct cprog *pg,
		      const char *shape, const struct expr_vars *vars)
{
	char why[WHY_LEN], known[WHY_LEN];
	int64_t v = 0;
	int rc = pexpr_eval(e->text, e->need, vars, &v, why, sizeof(why));

	if (rc == KERR_NOTFOUND) {
		known_names(vars, known, sizeof(known));
		return yamlx_fail(&ld->y, mark_find(ld, e->path), KERR_INVALID, e->path,
				  "%s at shape '%s'%s (known: %s)", why, shape, pg->label, known);
	}
	if (rc && pg->strict)
		return yamlx_fail(&ld->y, mark_find(ld, e->path), KERR_RANGE, e->path,
				  "%s at shape '%s'%s", why, shape, pg->label);
	return 0;
}

/* Resolves the expressions of pg's scope for pg at every shape. */
static int check_prog(struct ld *ld, const struct pexprs *l, const struct cprog *pg)
{
	json_t *sh;
	size_t i;
	int rc = 0;

	json_array_foreach (ld->s->shapes, i, sh) {
		const char *name = json_string_value(json_object_get(sh, "name"));
		struct expr_vars vars = EXPR_VARS_INIT;

		shape_vars(sh, &vars);
		if (pg->scope != FOR_SHAPE)
			defines_collect(pg->source, pg->options, &vars);
		for (size_t k = 0; !rc && k < l->n; k++)
			if (l->e[k].scope & pg->scope)
				rc = check_expr(ld, &l->e[k], pg, name, &vars);
		expr_vars_release(&vars);
		if (rc)
			break;
	}
	return rc;
}

/* The tunables' starting values: the template's own #define, else the first value. */
static void tunable_starts(const struct spec *s, int64_t *vals)
{
	struct expr_vars vars = EXPR_VARS_INIT;

	defines_collect(s->template_src, s->build_options, &vars);
	for (size_t j = 0; j < s->ntunables; j++)
		if (expr_vars_get(&vars, s->tunables[j].name, &vals[j]))
			vals[j] = s->tunables[j].values[0];
	expr_vars_release(&vars);
}

/* " with A=1 B=2", cut to LABEL_MAX bytes. */
static void setting_label(const struct spec *s, const int64_t *vals, char *out, size_t n)
{
	char one[YAMLX_PATH_LEN];

	snprintf(out, n, " with");
	for (size_t j = 0; j < s->ntunables; j++) {
		snprintf(one, sizeof(one), " %s=%lld", s->tunables[j].name, (long long)vals[j]);
		if (strlen(out) + strlen(one) + 4 >= n) {
			strlcat(out, " ...", n);
			break;
		}
		strlcat(out, one, n);
	}
}

/*
 * Resolves the variants' expressions for the template rendered at vals,
 * as the tuner renders it.  Only an unknown name fails: the constraints may
 * exclude a setting whose arithmetic fails.  A setting that would take the
 * sweep past *budget is skipped unless forced.
 */
static int check_setting(struct ld *ld, const struct pexprs *l, const struct blocks *bl,
			 const int64_t *vals, size_t *budget, int forced)
{
	const struct spec *s = ld->s;
	size_t cost = (strlen(s->template_src) + strlen(s->build_options) + 32 * s->ntunables) *
		      (json_array_size(s->shapes) + 2);
	json_t *params = json_object();
	char *src = NULL, *opt = NULL, why[WHY_LEN], label[LABEL_MAX];
	struct cprog pg = { FOR_VARIANT, NULL, NULL, 0, label };
	int rc = 0;

	if (!forced && cost > *budget)
		goto out;
	*budget -= cost < *budget ? cost : *budget;
	for (size_t j = 0; j < s->ntunables; j++)
		json_object_set_new(params, s->tunables[j].name, json_integer(vals[j]));
	if (spec_render_point(s, bl, params, &src, &opt, why, sizeof(why))) {
		rc = yamlx_fail(&ld->y, yamlx_map_get(&ld->y, yamlx_root(&ld->y), "tunables"),
				KERR_INVALID, "tunables", "%s", why);
		goto out;
	}
	setting_label(s, vals, label, sizeof(label));
	pg.source = src;
	pg.options = opt;
	rc = check_prog(ld, l, &pg);
out:
	free(src);
	free(opt);
	json_decref(params);
	return rc;
}

/*
 * The tunables' settings: the starting values, every tunable at its first
 * value, then each tunable through its values with the others at their
 * starting values (while the budget lasts).
 */
static int check_tunables(struct ld *ld, const struct pexprs *l)
{
	const struct spec *s = ld->s;
	struct blocks bl = { NULL, 0 };
	int64_t *start = xcalloc(s->ntunables, sizeof(*start));
	int64_t *vals = xcalloc(s->ntunables, sizeof(*vals));
	size_t budget = CHECK_BUDGET, size = s->ntunables * sizeof(*vals);
	char why[WHY_LEN];
	int rc = 0, differs = 0;

	/* check_blocks has found them already: this cannot fail. */
	if (blocks_find(s->template_src, s->marker_start, s->marker_end, &bl, why, sizeof(why)))
		goto out;
	tunable_starts(s, start);
	rc = check_setting(ld, l, &bl, start, &budget, 1);
	for (size_t j = 0; j < s->ntunables; j++) {
		vals[j] = s->tunables[j].values[0];
		differs |= vals[j] != start[j];
	}
	if (!rc && differs)
		rc = check_setting(ld, l, &bl, vals, &budget, 1);
	for (size_t j = 0; !rc && j < s->ntunables; j++) {
		memcpy(vals, start, size);
		for (size_t k = 0; !rc && k < s->tunables[j].nvalues; k++) {
			vals[j] = s->tunables[j].values[k];
			if (vals[j] != start[j])
				rc = check_setting(ld, l, &bl, vals, &budget, 0);
		}
	}
out:
	blocks_release(&bl);
	free(start);
	free(vals);
	return rc;
}

/* Resolves every expression of the problem for the programs a session surely runs. */
int check_exprs(struct ld *ld)
{
	const struct spec *s = ld->s;
	const struct cprog progs[] = {
		{ FOR_SHAPE, NULL, NULL, 1, "" },
		{ FOR_REFERENCE, s->reference_src, s->build_options, 1, " for the reference" },
		{ FOR_VARIANT, s->template_src, s->build_options, 1, "" },
	};
	struct pexprs l = { NULL, 0, 0 };
	int rc = 0;

	pexprs_collect(&l, s->problem);
	for (size_t i = 0; !rc && i < ARRAY_SIZE(progs); i++)
		rc = check_prog(ld, &l, &progs[i]);
	if (!rc && s->ntunables)
		rc = check_tunables(ld, &l);
	pexprs_release(&l);
	return rc;
}

/* ---- launch geometry ---- */

/* The global or local sizes of step (at path) over vars into *out; "local" may be absent (null). */
static int step_dims(const json_t *step, const char *path, const char *key, const char *shape,
		     const struct expr_vars *vars, json_t **out, char *msg, size_t n)
{
	char why[WHY_LEN], known[WHY_LEN] = "";
	json_t *arr = json_object_get(step, key), *x;
	int64_t v = 0;
	size_t d;
	int rc = 0;

	*out = arr ? json_array() : json_null();
	json_array_foreach (arr, d, x) {
		rc = pexpr_eval(json_string_value(x), dim_need(key), vars, &v, why, sizeof(why));
		if (rc == KERR_NOTFOUND)
			known_names(vars, known, sizeof(known));
		if (rc)
			return kerr_set(msg, n, KERR_INVALID,
					"shape '%s': %s.%s[%zu] '%s': %s%s%s%s", shape, path, key,
					d, json_string_value(x), why, *known ? " (known: " : "",
					known, *known ? ")" : "");
		json_array_append_new(*out, json_integer(v));
	}
	return 0;
}

/* The launch plan's steps over vars into the new array *out (caller decrefs). */
static int plan_geometry(const json_t *plan, const char *shape, const struct expr_vars *vars,
			 json_t **out, char *msg, size_t n)
{
	char path[YAMLX_PATH_LEN];
	json_t *step, *g = NULL, *l = NULL;
	size_t i;
	int rc = 0;

	*out = json_array();
	json_array_foreach (plan, i, step) {
		yamlx_path_idx(path, "problem.launch", i);
		rc = step_dims(step, path, "global", shape, vars, &g, msg, n);
		if (!rc)
			rc = step_dims(step, path, "local", shape, vars, &l, msg, n);
		if (!rc)
			json_array_append_new(*out, json_pack("{s:O, s:O, s:O}", "kernel",
							      json_object_get(step, "kernel"),
							      "global", g, "local", l));
		json_decref(g);
		json_decref(l);
		g = l = NULL;
		if (rc)
			break;
	}
	return rc;
}

json_t *spec_launch_geometry(const struct spec *s, const char *source, const char *options,
			     char *msg, size_t n)
{
	json_t *out = json_object(), *sh, *steps = NULL;
	size_t i;
	int rc = 0;

	json_array_foreach (s->shapes, i, sh) {
		const char *name = json_string_value(json_object_get(sh, "name"));
		struct expr_vars vars = EXPR_VARS_INIT;

		shape_vars(sh, &vars);
		defines_collect(source, options, &vars);
		rc = plan_geometry(json_object_get(s->problem, "launch"), name, &vars, &steps, msg,
				   n);
		expr_vars_release(&vars);
		if (!rc)
			json_object_set(out, name, steps);
		json_decref(steps);
		steps = NULL;
		if (rc)
			break;
	}
	if (rc) {
		json_decref(out);
		out = NULL;
	}
	return out;
}
