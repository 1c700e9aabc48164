/*
 * session.h - one optimisation session: its spec, its state in the store,
 * its folder, and the steps of a round.
 *
 * Output folder of a session (spec session.output_dir / SESSION-ID):
 *   rounds/rNNN/batch.json      the EvalBatch evalpod ran (retries: batch-N.json)
 *   rounds/rNNN/results/        evalpod's --out (ID.json, summary.json, artifacts)
 *   rounds/rNNN/evalpod.log     evalpod's output
 *   rounds/rNNN/lock            held (flock) by the evalpod of the round while it runs
 *   learnings.md                failure patterns [Fnnn] and successes [Snnn]
 *   best.cl                     the best kernel, its figures in a header comment
 *   report.md                   the status, the best variants, every round's decision
 *   session.lock                held (flock) by the kctl driving the session
 *
 * The state database holds every session: --state FILE, else
 * $KCTL_STATE_DIR/kctl.db, else $XDG_STATE_HOME/kctl/kctl.db, else
 * ~/.local/state/kctl/kctl.db.
 */
#ifndef KCTL_SESSION_H
#define KCTL_SESSION_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "mutate.h"
#include "propose.h"
#include "spec.h"
#include "store.h"

struct session {
	char *id;
	char *dir; /* output folder of this session */
	struct spec spec;
	struct blocks blocks; /* of the template */
	struct store *st;     /* borrowed */
	struct proposer prop;
	uint64_t rng;
	double started_ms; /* when this process began driving it */
	int interactive;   /* progress line on a terminal */
	int step;          /* --step: ask before each next round */
	int rounds_cap;    /* --rounds N: 0 = spec's max_rounds */
	double eval_s;     /* seconds of rounds this process drove, and */
	int evals;         /* the evaluations in them: the ETA's measured rate */
	int extending;     /* a done session reopened with a larger --rounds: its
			    * last "stop" does not end it (reopen sets, next_step clears) */
	const char *again; /* options a "go on with: kctl resume ID" hint repeats
			    * (" --state FILE" or ""; borrowed; NULL: none) */
	char *evalpod;     /* the evalpod binary used */
	struct s3 *s3;     /* evaluator.storage when it is s3:// (handoff.h), else NULL */
	struct kube *kube; /* the cluster of the kubernetes backend (kround.h), else NULL */
	double deadline_s; /* raised check deadline after a reference ran past it (pack.c) */
};

/* Exit statuses of kctl commands. */
enum {
	KCTL_EXIT_OK = 0,
	KCTL_EXIT_FAIL = 1, /* the session failed, or bad input */
	KCTL_EXIT_USAGE = 2,
	KCTL_EXIT_INFRA = 3, /* no device, evalpod missing, state database unusable */
};

/* Path of the state database: explicit, else $KCTL_STATE_DIR/kctl.db, else
 * $XDG_STATE_HOME/kctl/kctl.db, else ~/.local/state/kctl/kctl.db (malloc'd). */
char *session_state_path(const char *explicit_path);

/*
 * Creates a new session for the spec at spec_path: loads the spec, checks
 * the evalpod binary and that it sees an OpenCL device, creates the folder
 * and the session row.  Returns 0 or a KERR_* code with msg.
 */
int session_create(struct session *s, struct store *st, const char *spec_path, char *msg, size_t n);

/* Re-opens an existing session by id (reloading its spec). */
int session_reopen(struct session *s, struct store *st, const char *id, char *msg, size_t n);

/* As session_reopen, but a done session too: for `kctl confirm`. */
int session_reopen_to_confirm(struct session *s, struct store *st, const char *id, char *msg,
			      size_t n);

/*
 * kctl resume --set KEY=VALUE: checks that KEY is one of the spec's limits
 * (limits.run_timeout_s, ...) and VALUE in its range, records the change in
 * the store (with the value it replaces and the time; later opens of the
 * session apply it over the spec) and applies it to s.  Call inside a store
 * transaction.  Returns 0 or KERR_INVALID / KERR_RANGE with msg.
 */
int session_set(struct session *s, const char *assignment, char *msg, size_t n);

void session_release(struct session *s);

/*
 * Drives the session until a stop rule fires, it is cancelled, or (--step)
 * the user declines to go on.  Resumable at any point.  Returns a
 * KCTL_EXIT_* status; msg says why on failure.
 */
int session_run(struct session *s, char *msg, size_t n);

/*
 * kctl confirm: re-times the session's top candidates side by side now
 * (confirm.c), then leaves the session as it was: a done session done with
 * the new verdict, a paused or failed one resumable.  Returns a KCTL_EXIT_*
 * status.
 */
int session_confirm(struct session *s, char *msg, size_t n);

/* --- internal steps (loop.c, round.c, rank.c, report.c) ------------- */

/* Folder of round r (malloc'd). */
char *session_round_dir(const struct session *s, int round);

/* Variant id of the k-th proposal of a round: "r03-v002"; round 0: "r00-start". */
char *session_variant_id(int round, size_t k);

/*
 * Ends the transaction of one step of round r: when rc is 0, moves the
 * round to state and commits, then passes the crash point; otherwise rolls
 * back.  Returns rc or the commit's error.
 */
int round_step_end(struct session *s, int round, enum round_state state, const char *point, int rc,
		   char *msg, size_t n);

/* Chooses and records the variants of round r (state PROPOSED). */
int round_propose(struct session *s, int round, const char *mode, char *msg, size_t n);
/* Writes the EvalBatch for the variants of round r without results (PACKED). */
int round_pack(struct session *s, int round, char **batch_path, char *msg, size_t n);
/*
 * Runs evalpod on the round until every variant has a final result (a
 * result that only says the infrastructure failed is retried, up to three
 * such failures per variant, across resumes too) (RUNNING).
 */
int round_evaluate(struct session *s, int round, char *msg, size_t n);
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
/* The signal (SIGINT/SIGTERM) that interrupted an evaluation, or 0. */
int round_interrupted(void);
/* The handler that records it (async-signal-safe). */
void session_note_signal(int sig);

/* evalpod runs per round and kctl run; infra_error results per variant. */
#define EVALPOD_ATTEMPTS  3
#define EVALPOD_EXIT_SLOW 4 /* evalpod: the reference ran past its deadline (docs/evalpod.md) */

/* Records the results of round r (COLLECTED). */
int round_collect(struct session *s, int round, char *msg, size_t n);

/* The incumbent: the session's best variant so far (a new JSON from
 * store_variant_get with its figures), or NULL before any ok result. */
json_t *session_incumbent(struct session *s);

/*
 * Ranks round r: lineages, stagnation, pruning, the learnings, and the
 * navigator's decision for what follows ("exploit", "explore" or "stop")
 * with its reason; records all of it and moves the round to DONE in one
 * transaction.  *stop is set when the session should end.
 */
int round_rank(struct session *s, int round, int *stop, char *msg, size_t n);

/*
 * Test hook for the crash-safety tests: when $KCTL_TEST_CRASH_AT is
 * "POINT:ROUND" (or "POINT" for any round), kctl kills itself with SIGKILL
 * at that point, as a power cut would.  Points: proposed, packed, spawned,
 * collected, ranked, ended (the session's final state committed, its
 * report not yet rewritten; its round is the session's last).
 */
void crash_point(const char *point, int round);

/*
 * Whether round r's outcome shows the spec is wrong (specfault.c): the
 * starting template failed its own evaluation (round 0), or every variant
 * of a search round failed with one fault no proposal changes.  Returns
 * KERR_INVALID with msg naming the cause, or 0.
 */
int spec_fault(struct session *s, int round, char *msg, size_t n);

/*
 * session.lock records who holds it: "pid N\nboot ID\nstart TICKS\nhost
 * NAME\npidns pid:[INODE]\n" (the boot id and the process's start time tell
 * a pid reused after a reboot or by another process apart; the host name
 * and the pid namespace tell a kctl in a container or on another machine
 * sharing the state folder, whose pid means nothing here).
 * session_owner_record writes it into the lock file fd just locked;
 * returns 0 or -1 (errno set).
 */
int session_owner_record(int fd);

/* What session.lock's record says of the kctl it names, seen from here. */
enum session_owner {
	SESSION_OWNER_UNKNOWN,   /* no record, or one without a pid */
	SESSION_OWNER_ALIVE,     /* here, and still running */
	SESSION_OWNER_GONE,      /* here (host, boot, pid namespace) and gone, or
				    this host rebooted since */
	SESSION_OWNER_ELSEWHERE, /* another host or pid namespace: cannot tell */
};

struct session_owner_info {
	long pid;
	char host[256];    /* the host name recorded */
	int other_machine; /* ELSEWHERE: another boot id too (else a container here) */
};

/*
 * Reads dir/session.lock (old records without the pidns line too) into o
 * and says what its kctl is from here; see enum session_owner.
 */
enum session_owner session_owner_check(const char *dir, struct session_owner_info *o);

/* Whether `kctl cancel` has marked the session cancelled. */
int session_cancelled(struct session *s);

/* Rewrites learnings.md from the store. */
int learnings_write(struct session *s, char *msg, size_t n);
/* Rewrites best.cl and report.md. */
int report_write(struct session *s, char *msg, size_t n);

/*
 * A finished (done) session whose report.md does not say so: a
 * kctl killed between recording the end and rewriting the report.  Reopens
 * the session (its spec) and rewrites learnings.md, best.cl and report.md.
 * Returns 1 when it rewrote them, 0 when they were up to date (or the
 * session is not finished), or a negative KERR_* code with msg.
 */
int session_report_refresh(struct store *st, const char *id, char *msg, size_t n);

/* Noise margin for "faster": the larger of 1% and the spreads measured. */
double rank_margin(json_t *a_result, json_t *b_result);

/* The session's status as `kctl status -o json` prints it (new reference). */
json_t *session_status_json(struct store *st, const char *id);

/* The result evalpod wrote for id in round r's folder (new reference), or NULL. */
json_t *session_round_result(struct session *s, int round, const char *id);
/* What round r evaluates: its variants, or the variants a confirmation re-times. */
json_t *round_programs(struct session *s, int round);

/* --- the model proposer (model.c) ----------------------------------------- */

/* Whether the model's budget (proposer.max_tokens, max_cost) is spent;
 * why says so when it is. */
int model_budget_spent(struct session *s, char *why, size_t n);

/* --- the winner (winner.c) ----------------------------------------------- */

/*
 * The one record every output reads (new reference), or NULL before there
 * is an incumbent: {variant, round (where its figures were measured),
 * status, shape, median_ms, samples, robust_cv, quality,
 * speedup_vs_reference, speedup_vs_reference_iqr, speedup_vs_baseline,
 * gflops, gbps, bottleneck, device, params, build_options,
 * best_cl_build_options, launch, confirmed, settled, verdict, runner_up,
 * passes, candidates}.
 */
json_t *session_winner(struct store *st, const char *id);
/* The figures of a result document, as in the record above. */
json_t *winner_figures(json_t *result);
/* Build options for best.cl: the variant's, less the -D of parameters that
 * best.cl applies as #defines (render: options); malloc'd. */
char *winner_best_options(const struct spec *sp, json_t *variant);
/* Records variant (store_variant_get form) as the winner, with its figures
 * from result (timed in round) and extra's keys on top.  In the caller's
 * transaction, with lineage 0 already naming it. */
int winner_record(struct session *s, int round, json_t *variant, json_t *result, json_t *extra,
		  char *msg, size_t n);
/* "robust CV 12.3%, unstable" for w (a winner or a figures object). */
void winner_noise(json_t *w, char *out, size_t n);

/* --- confirmation (confirm.c) --------------------------------------------- */

/* The measurement settings of a confirmation's pass (a new object). */
json_t *confirm_measurement(const struct spec *sp, int pass, int round);
/*
 * Creates round r as a pass of a confirmation: the next pass when round
 * r - 1 decided "confirm", else pass 1 with the incumbent and the fastest
 * other candidates.  why (may be NULL) is why the search stopped when no
 * round says it (the search space exhausted).  Committed (PROPOSED).
 */
int confirm_propose(struct session *s, int round, const char *why, char *msg, size_t n);
/* Ranks a confirmation round: the winner, its verdict, another pass or what
 * follows the confirmation; *stop when the session ends. */
int confirm_rank(struct session *s, int round, int *stop, char *msg, size_t n);

#endif
