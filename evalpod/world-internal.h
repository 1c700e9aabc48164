/*
 * world-internal.h - what world.c and world-map.c share; not part of
 * world.h's contract and included only by those two files.
 *
 * world.c owns the worlds: buffers, scalars, fills, checks and launch
 * plans.  world-map.c owns the per-buffer mappings on CPU devices and the
 * table of them that its SIGSEGV/SIGBUS handler reads (see the top of
 * world.h).
 */
#ifndef EVALPOD_WORLD_INTERNAL_H
#define EVALPOD_WORLD_INTERNAL_H

#include <stddef.h>

#include "world.h"

static inline size_t world__round_up(size_t v, size_t to)
{
	return (v + to - 1) / to * to;
}

/*
 * Allocates wb's parent buffer (wb->parent, wb->guard) in a mapping of its
 * own (wb->map, CPU devices) and registers the mapping for the fault
 * handler.  Returns 0 or KERR_NOMEM (msg names the buffer).  After the
 * OpenCL objects, world__map_release undoes it, also after a failure.
 */
int world__map_alloc(struct world *w, struct wbuf *wb, char *msg, size_t n);

/*
 * Unregisters and unmaps wb's mapping, if it has one; after the OpenCL
 * objects on it are released.
 */
void world__map_release(struct wbuf *wb);

#endif
