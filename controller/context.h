/*
 * context.h - the context document a proposer model is given (context.c):
 * the problem, the device, the template, the parent with its measured
 * figures, the inspirations, the failures, the learnings and what the tuner
 * found, in the form prompt.h describes.  The command proposer gets the
 * same document as a JSON file.
 */
#ifndef KCTL_CONTEXT_H
#define KCTL_CONTEXT_H

#include <jansson.h>
#include <stddef.h>

#include "propose.h"

struct session;

/* The "kernel" part: problem, shapes, tunables, template and blocks (new). */
json_t *context_kernel(const struct spec *sp, const struct blocks *bl);
/* The device of the session's latest measurement with its peaks (new), or NULL. */
json_t *context_device(struct session *s);
/* One VARIANT object for id (new), or NULL when the session has no such variant. */
json_t *context_variant(struct session *s, const char *id);

/*
 * The whole document for one request: parent (an id, NULL: none) and
 * inspirations (ids) from ctx's session, the failures of the last round,
 * ctx's learnings and a summary of the tuner's findings over ctx's history.
 */
json_t *context_build(const struct propose_ctx *ctx, const char *parent,
		      const char *const *inspirations, size_t ninsp, size_t directions);

/* The reflection document for round r (prompt_reflect's ctx). */
json_t *context_reflect(struct session *s, int round, const char *learnings);

#endif
