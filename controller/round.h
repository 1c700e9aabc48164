/*
 * round.h - the steps of a round, in the order the loop (loop.c) runs
 * them: propose and evaluate (round.c, through the session's backend),
 * collect (round.c), rank (rank.c, confirm.c for a confirmation's rounds,
 * specfault.c), and the files that report them (report.c).  They use the
 * proposers (propose.h), the backends (backend.h), the batch (pack.h),
 * the store and the session's services; never the loop.
 */
#ifndef KCTL_ROUND_H
#define KCTL_ROUND_H

#include <jansson.h>
#include <stddef.h>

struct session;
struct spec;

/*
 * Chooses and records the variants of round r (state PROPOSED).  Returns 1
 * when nothing new was admitted (nothing recorded), with msg saying why.
 */
int round_propose(struct session *s, int round, const char *mode, char *msg, size_t n);

/*
 * Runs evalpod on the round until every variant has a final result (a
 * result that only says the infrastructure failed is retried, up to three
 * such failures per variant, across resumes too) (RUNNING).
 */
int round_evaluate(struct session *s, int round, char *msg, size_t n);

/* Records the results of round r (COLLECTED). */
int round_collect(struct session *s, int round, char *msg, size_t n);

/*
 * Ranks round r: lineages, stagnation, pruning, the learnings, and the
 * navigator's decision for what follows ("exploit", "explore" or "stop")
 * with its reason; records all of it and moves the round to DONE in one
 * transaction.  *stop is set when the session should end.
 */
int round_rank(struct session *s, int round, int *stop, char *msg, size_t n);

/* Noise margin for "faster": the larger of 1% and the spreads measured. */
double rank_margin(json_t *a_result, json_t *b_result);

/*
 * Whether round r's outcome shows the spec is wrong (specfault.c): the
 * starting template failed its own evaluation (round 0), or every variant
 * of a search round failed with one fault no proposal changes.  Returns
 * KERR_INVALID with msg naming the cause, or 0.
 */
int spec_fault(struct session *s, int round, char *msg, size_t n);

/* Rewrites learnings.md from the store. */
int learnings_write(struct session *s, char *msg, size_t n);
/* Rewrites best.cl, report.md and report.html (report.h). */
int report_write(struct session *s, char *msg, size_t n);

/* --- confirmation (confirm.c) --------------------------------------------- */

/* The measurement settings of a confirmation's pass (a new object). */
json_t *confirm_measurement(const struct spec *sp, int pass, int round);
/*
 * Creates round r as a pass of a confirmation: the next pass when round
 * r - 1 decided "confirm", else pass 1 with the incumbent and the fastest
 * other candidates.  why (may be NULL) is why the search stopped when no
 * round says it (the proposer had no new variant).  Committed (PROPOSED).
 */
int confirm_propose(struct session *s, int round, const char *why, char *msg, size_t n);
/* Ranks a confirmation round: the winner, its verdict, another pass or what
 * follows the confirmation; *stop when the session ends. */
int confirm_rank(struct session *s, int round, int *stop, char *msg, size_t n);

#endif
