/*
 * spec-internal.h - what the parts of the spec loader share: spec.c reads
 * and checks the document, spec-exprs.c resolves its expressions as
 * evalpod will (at load, and for a program's launch geometry).
 */
#ifndef KCTL_SPEC_INTERNAL_H
#define KCTL_SPEC_INTERNAL_H

#include "spec.h"
#include "yamlx.h"

#define WHY_LEN 512

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

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

/* The node the expression at path was read from; NULL (line 1) if none. */
const yaml_node_t *mark_find(const struct ld *ld, const char *path);

/*
 * Resolves every expression evalpod will evaluate, at every shape, for the
 * reference, the template as written and the tunables' settings; fails
 * with FILE:LINE:COLUMN of the expression (spec-exprs.c).
 */
int check_exprs(struct ld *ld);

#endif
