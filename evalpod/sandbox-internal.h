/*
 * sandbox-internal.h - what the layers of the sandbox share; not part of
 * sandbox.h's contract and included only by sandbox.c, sandbox-landlock.c
 * and sandbox-seccomp.c.
 *
 * sandbox.c owns the public entry points, the environment allowlist, the
 * rlimits, prctl and namespace layers and the report; sandbox-landlock.c
 * builds and applies the Landlock ruleset; sandbox-seccomp.c builds and
 * installs the seccomp-BPF filters of both stages.  Each layer adds its own
 * member to the report object it is given.
 */
#ifndef EVALPOD_SANDBOX_INTERNAL_H
#define EVALPOD_SANDBOX_INTERNAL_H

#include "sandbox.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Marks a layer's report object "unavailable: <strerror(err)>". */
static inline void sandbox__set_unavailable(json_t *layer, int err)
{
	char buf[160];

	snprintf(buf, sizeof(buf), "unavailable: %s", strerror(err));
	json_object_set_new(layer, "status", json_string(buf));
}

/* ---- sandbox-landlock.c ----------------------------------------------- */

/* The Landlock ABI the kernel offers, or -errno when it offers none. */
int sandbox__landlock_abi(void);

/* Applies the Landlock layer (report member "landlock"); threads is the
   number of threads running, more than one asks for TSYNC where the ABI
   has it.  An unavailable Landlock is recorded and returns 0. */
int sandbox__apply_landlock(const struct sandbox_cfg *cfg, int threads, json_t *rep, char *msg,
			    size_t n);

/* ---- sandbox-seccomp.c ------------------------------------------------ */

/* Installs the stage-1 filter (report member "seccomp"); an unavailable
   seccomp is recorded and returns 0. */
int sandbox__apply_seccomp(json_t *rep, char *msg, size_t n);

/* Installs the stage-2 filter (the spawn lock) and records it in sj, the
   "seccomp" member of the report; an unavailable seccomp is recorded and
   returns 0. */
int sandbox__seccomp_lock_spawn(json_t *sj, char *msg, size_t n);

#endif
