/*
 * pack.h - a round's batch (pack.c): the variants still without a final
 * result, the EvalBatch and its limits, the batch file, and what evalpods
 * uploaded to object storage.  Shared by the round's steps (round.c) and
 * the backends that run the batch (backend.h); uses the store, the spec
 * and object storage (handoff.h).
 */
#ifndef KCTL_PACK_H
#define KCTL_PACK_H

#include <jansson.h>
#include <stddef.h>

struct session;

/* Variants of round r without a final result in dir/results (a new array). */
json_t *round_pending(struct session *s, int round, const char *dir);
/* Renames the infra_error results of vars to ID.infra-N.json (see kctl.md). */
void round_set_aside_infra(const char *dir, json_t *vars);
/*
 * The limits of round r's batch (a new object): the spec's, with
 * compile_timeout_s + run_timeout_s raised to REF_DEADLINE_FACTOR times the
 * reference's estimated check time in the newest summary of the session, or
 * to s->deadline_s, when either is longer; time_timeout_s grows in the same
 * ratio.  See kctl.md, "A busy machine".
 */
json_t *session_batch_limits(struct session *s, int round);
/* compile_timeout_s + run_timeout_s of those limits. */
double session_check_deadline(struct session *s, int round);
#define REF_DEADLINE_FACTOR 4
/* The EvalBatch of round r for the variants todo, named batch_id (a new object). */
json_t *round_batch_json(struct session *s, int round, json_t *todo, const char *batch_id);
/* With object storage: what evalpods uploaded for round r, into dir/results. */
int round_fetch(struct session *s, const char *dir, int round, char *msg, size_t n);

/* Writes the EvalBatch for the variants of round r without results (PACKED);
 * *batch_path is the new batch file (malloc'd). */
int round_pack(struct session *s, int round, char **batch_path, char *msg, size_t n);

/* evalpod runs per round and kctl run; infra_error results per variant. */
#define EVALPOD_ATTEMPTS  3
#define EVALPOD_EXIT_SLOW 4 /* evalpod: the reference ran past its deadline (docs/evalpod.md) */

#endif
