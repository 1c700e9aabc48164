/*
 * expr-vars.c - struct expr_vars, the name table expressions look names up
 * in (expr.h).
 */
#include "expr.h"
#include "err.h"
#include "xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- expr_vars ---- */

/* FNV-1a of the len bytes of name. */
static size_t vars_hash(const char *name, size_t len)
{
	uint64_t h = 14695981039346656037u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * 1099511628211u;
	return (size_t)h;
}

/* The slot that holds name, or the empty one where it would go. */
static size_t *vars_slot(const struct expr_vars *vars, const char *name, size_t len)
{
	size_t mask = vars->nslot - 1, i = vars_hash(name, len) & mask;

	for (;; i = (i + 1) & mask) {
		size_t *s = &vars->slot[i];
		const char *have = *s ? vars->v[*s - 1].name : NULL;

		if (!have || (!strncmp(have, name, len) && !have[len]))
			return s;
	}
}

static struct expr_var *vars_find(const struct expr_vars *vars, const char *name, size_t len)
{
	size_t *s = vars->nslot ? vars_slot(vars, name, len) : NULL;

	return s && *s ? &vars->v[*s - 1] : NULL;
}

/* Keeps the index at most half full: rebuilt twice as large. */
static void vars_grow(struct expr_vars *vars)
{
	if (2 * (vars->nr + 1) <= vars->nslot)
		return;
	free(vars->slot);
	vars->nslot = vars->nslot ? 2 * vars->nslot : 16;
	vars->slot = xcalloc(vars->nslot, sizeof(*vars->slot));
	for (size_t i = 0; i < vars->nr; i++)
		*vars_slot(vars, vars->v[i].name, strlen(vars->v[i].name)) = i + 1;
}

void expr_vars_set(struct expr_vars *vars, const char *name, int64_t value)
{
	struct expr_var *v = vars_find(vars, name, strlen(name));

	if (v) {
		v->value = value;
		return;
	}
	vars_grow(vars);
	if (vars->nr == vars->alloc) {
		vars->alloc = vars->alloc ? vars->alloc * 2 : 8;
		vars->v = xreallocarray(vars->v, vars->alloc, sizeof(*vars->v));
	}
	vars->v[vars->nr].name = xstrdup(name);
	vars->v[vars->nr].value = value;
	vars->nr++;
	*vars_slot(vars, name, strlen(name)) = vars->nr;
}

int expr_vars_get(const struct expr_vars *vars, const char *name, int64_t *out)
{
	const struct expr_var *v = vars_find(vars, name, strlen(name));

	if (!v)
		return KERR_NOTFOUND;
	*out = v->value;
	return 0;
}

int expr_vars_lookup(void *vars, const char *name, size_t len, int64_t *out)
{
	const struct expr_var *v = vars_find(vars, name, len);

	if (!v)
		return KERR_NOTFOUND;
	*out = v->value;
	return 0;
}

void expr_vars_release(struct expr_vars *vars)
{
	for (size_t i = 0; i < vars->nr; i++)
		free(vars->v[i].name);
	free(vars->v);
	free(vars->slot);
	*vars = (struct expr_vars)EXPR_VARS_INIT;
}
