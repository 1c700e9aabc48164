/*
 * store.h - the session state in SQLite (WAL): sessions, rounds, variants,
 * results, lineages, learnings, decisions.
 *
 * Every step of the loop is committed before the next starts, so a kctl
 * killed at any moment resumes where it stopped.  The schema version lives
 * in PRAGMA user_version; store_open migrates older files forward.  Only
 * bound parameters; every write is inside an explicit transaction
 * (store_begin/store_commit; store_rollback on failure).
 *
 * Transactions belong to the caller: the functions that write never begin
 * or commit one themselves, so one step of the loop (its variants, results,
 * lineages...) commits as a whole or not at all.  A write made while no
 * transaction is open fails with KERR_INVALID.
 *
 * Errors: fallible functions return 0 (or the count/number documented) or
 * a negative KERR_* code with msg set to what was being done and SQLite's
 * reason, e.g.
 *   recording variant 'r01-v002': UNIQUE constraint failed: variants.session, variants.hash
 * A violated constraint (duplicate key, unknown session or parent, a value
 * out of its column's range) is KERR_INVALID, an update of a row that does
 * not exist KERR_NOTFOUND, a malformed JSON argument KERR_PARSE, anything
 * else (disk, locks held past the busy timeout) KERR_IO.
 *
 * Getters return a new JSON reference the caller json_decref()s, with null
 * for absent values; NULL means absent, or a database failure.  A failed
 * read (a damaged page, an unreadable JSON column, a lock held past the
 * busy timeout) is remembered until store_close: store_check reports it,
 * and store_commit refuses to commit after it, so nothing decided on a
 * read that failed is ever recorded.
 * Timestamps are ISO-8601 UTC text ("2025-01-31T12:00:00.000Z").
 */
#ifndef KCTL_STORE_H
#define KCTL_STORE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define STORE_VERSION 7

struct store;

/* Round states, in order; a round moves forward only. */
enum round_state {
	ROUND_PROPOSED = 0,  /* variants chosen and recorded */
	ROUND_PACKED = 1,    /* EvalBatch written */
	ROUND_RUNNING = 2,   /* evalpod started (pid recorded) */
	ROUND_COLLECTED = 3, /* results recorded */
	ROUND_DONE = 4,      /* ranked, lineages/learnings/decision recorded */
};

/*
 * Opens the database at path, in WAL mode with a busy timeout, and migrates
 * it to STORE_VERSION.  A new database is created only where no file
 * exists: an existing empty (0-byte) file is refused (KERR_INVALID), and
 * an existing file must pass PRAGMA quick_check (KERR_IO otherwise, the
 * message saying how to inspect and recover it).  Fails with KERR_INVALID
 * on a file from a newer kctl.  *out is freed with store_close.
 * synchronous=FULL: a committed transaction survives kill -9 and power loss.
 */
int store_open(const char *path, struct store **out, char *msg, size_t n);
/*
 * store_open for the commands that only read (status, show, report, export,
 * brief).  Where the file exists but this user cannot write it or its
 * folder (another user's session, a read-only mount), it is opened
 * read-only instead: checked like store_open, never migrated (a file of an
 * older schema is refused, KERR_INVALID, saying how to upgrade it), and
 * every write on it fails.  Where no kctl has it open (no -wal file), it is
 * read as immutable: a kctl that opens it later is not seen by this
 * connection (status --watch follows only a session a kctl drives, which
 * then has it open).  Otherwise it is store_open.
 */
int store_open_read(const char *path, struct store **out, char *msg, size_t n);
/* Closes st (NULL does nothing); an open transaction is rolled back. */
void store_close(struct store *st);

/* BEGIN IMMEDIATE: takes the write lock now, waiting up to the busy timeout. */
int store_begin(struct store *st, char *msg, size_t n);
/* On failure the transaction is still open: call store_rollback.  Fails
 * (KERR_IO) without committing when a read on this connection failed. */
int store_commit(struct store *st, char *msg, size_t n);
/*
 * 0 when every read on st so far succeeded; else KERR_IO with msg naming
 * the database file and SQLite's reason for the first failed read.
 */
int store_check(struct store *st, char *msg, size_t n);
/* Discards the open transaction's writes; does nothing when none is open. */
void store_rollback(struct store *st);

/* --- sessions --------------------------------------------------------- */
/* state: "running", "paused", "done", "cancelled", "failed"
 * A new session is "running"; its rng is null until store_session_set_rng.
 * id, paths and hash must be valid UTF-8; a duplicate id is KERR_INVALID. */
int store_session_create(struct store *st, const char *id, const char *spec_path,
			 const char *spec_hash, const char *output_dir, char *msg, size_t n);
/* Returns a new JSON object {id, spec_path, spec_hash, output_dir, state, reason,
 * created, updated, rng, winner, rounds_cap} or NULL when absent; winner is the
 * object last given to store_session_set_winner, or null; rounds_cap the
 * last given to store_session_set_rounds_cap, or null (the spec's budget). */
json_t *store_session_get(struct store *st, const char *id);
/* All sessions, newest first: a JSON array of the objects above. */
json_t *store_session_list(struct store *st);
/* Removes the session's rows from every table (in the caller's transaction);
 * *rows gets how many rows went.  KERR_NOTFOUND when there is no such session. */
int store_session_delete(struct store *st, const char *id, int64_t *rows, char *msg, size_t n);
int store_session_set_state(struct store *st, const char *id, const char *state, const char *reason,
			    char *msg, size_t n);
/* Records that key (e.g. "limits.run_timeout_s") of session id's spec is value
 * from now on; was is what it was (NULL: the spec left it out).  Rows are
 * numbered from 1 per session and keep their time (kctl resume --set). */
int store_setting_add(struct store *st, const char *id, const char *key, const json_t *value,
		      const json_t *was, char *msg, size_t n);
/* The settings of session id, oldest first: a new array of
 * {seq, key, value, was, created}; NULL on failure. */
json_t *store_settings(struct store *st, const char *id);
/* The proposer's random state, saved with each round so resumes replay.
 * SQLite integers are signed, so "rng" comes back as the same 64 bits:
 * (uint64_t)json_integer_value(rng) is the value saved. */
int store_session_set_rng(struct store *st, const char *id, uint64_t rng, char *msg, size_t n);

/* The round budget given with --rounds (>= 1; else KERR_RANGE), kept so
 * that a resume without --rounds keeps it. */
int store_session_set_rounds_cap(struct store *st, const char *id, int cap, char *msg, size_t n);

/* The winner record every output reads (session.h, session_winner); NULL
 * clears it.  Inside the transaction that moves lineage 0. */
int store_session_set_winner(struct store *st, const char *id, json_t *winner, char *msg, size_t n);

/* --- rounds ----------------------------------------------------------- */
/* Creates round (>= 0) in state ROUND_PROPOSED, "started" now. */
int store_round_create(struct store *st, const char *session, int round, const char *mode,
		       char *msg, size_t n);
/* {round, state, mode, decision, reason, pid, started, finished, confirm, plan} or
 * NULL.  state is the enum round_state value (an integer); finished is set
 * when the round reaches ROUND_DONE; confirm is null but for a round that
 * re-times candidates (mode "confirm": the object of store_round_set_confirm). */
json_t *store_round_get(struct store *st, const char *session, int round);
/* What a confirmation round re-times: {pass, passes, programs: [ids], measurement}. */
int store_round_set_confirm(struct store *st, const char *session, int round, json_t *confirm,
			    char *msg, size_t n);
/* How the proposers shared round's slots and why (mix.c): {slots: {model,
 * tune, sweep}, why}; comes back as "plan" of store_round_get. */
int store_round_set_plan(struct store *st, const char *session, int round, json_t *plan, char *msg,
			 size_t n);
/* The highest round number of the session, 0 if none; negative on failure. */
int store_round_last(struct store *st, const char *session);
/* Setting the current state again is allowed (a resume may repeat a step);
 * going back is KERR_INVALID, an unknown round KERR_NOTFOUND. */
int store_round_set_state(struct store *st, const char *session, int round, enum round_state state,
			  char *msg, size_t n);
int store_round_set_pid(struct store *st, const char *session, int round, long pid, char *msg,
			size_t n);
int store_round_set_decision(struct store *st, const char *session, int round, const char *decision,
			     const char *reason, char *msg, size_t n);

/* --- variants --------------------------------------------------------- */
/*
 * v: {id, hash, round, parent, lineage, source, options, params, rationale,
 * origin, tunables}.  origin says which proposer wrote it ("tune", "sweep",
 * "model", "start"); tunables (an array) are a model variant's own
 * [{name, values}], which the tuner may sweep.
 * Fails with KERR_INVALID when the session already has that hash (the same
 * variant is never evaluated twice) or that id.
 * id, hash, round (>= 0) and source are required; parent, lineage,
 * options (default ""), params (an object), rationale, origin and tunables may be absent or
 * null.  A parent must be a variant of the session already recorded.  Other
 * keys or wrong types fail with KERR_PARSE and the JSON path.  v is not
 * modified or stolen.
 */
int store_variant_add(struct store *st, const char *session, json_t *v, char *msg, size_t n);
/* 1 when the session has a variant with that hash, 0 if not, negative on failure. */
int store_variant_has_hash(struct store *st, const char *session, const char *hash);
/* Variants of a round (round 0 = the starting template), or all when round < 0,
 * oldest first, each with its result's status/speedups when there is one.
 * Each element: {id, hash, round, parent, lineage, source, options, params
 * (the object back), rationale, origin, tunables, created, status, speedup_ref, speedup_base,
 * median_ms, gflops, gbs, bottleneck, fault_kind, robust_cv, quality}, null where absent (all
 * result figures are null before the result is recorded). */
json_t *store_variants(struct store *st, const char *session, int round);
/* One variant in the form above, or NULL. */
json_t *store_variant_get(struct store *st, const char *session, const char *id);
/* As store_variants, but "source" is null except for variants without params:
 * what ranking and proposing need, at a fraction of the memory. */
json_t *store_variants_brief(struct store *st, const char *session, int round);
int store_variant_set_lineage(struct store *st, const char *session, const char *id, int lineage,
			      char *msg, size_t n);

/* --- results ---------------------------------------------------------- */
/* Records evalpod's result document for variant id (keeps the full JSON and
 * the ranked figures); a second result for the same variant is refused.
 * Figures (status; performance.speedup_vs_reference.ratio_of_medians,
 * .speedup_vs_baseline.ratio_of_medians, .median_ms; roofline.gflops,
 * .gbs, .bottleneck) may be absent or null; a figure of the wrong type is
 * KERR_PARSE.  A result taken from the result cache (cache.key, a string)
 * is recorded as such: store_result_cached.  The variant must exist (KERR_INVALID otherwise). */
int store_result_add(struct store *st, const char *session, const char *id, json_t *result,
		     char *msg, size_t n);
/* The whole result document as recorded, or NULL. */
json_t *store_result_get(struct store *st, const char *session, const char *id);
/* How many results the session has; negative on failure. */
int store_result_count(struct store *st, const char *session);
/* How many of them came from the result cache (their "cache" has a key); negative on failure. */
int store_result_cached_count(struct store *st, const char *session);
/* The session's results taken from the result cache: a new object, variant id -> cache key
 * (NULL on failure). */
json_t *store_result_cached(struct store *st, const char *session);

/* --- lineages --------------------------------------------------------- */
/* {lineage, best, stagnation, active, created_round} per row, a JSON array,
 * by lineage number; active is a boolean. */
json_t *store_lineages(struct store *st, const char *session);
/* Inserts the lineage, or updates best, stagnation and active of an existing
 * one; round is its created_round, kept from the first put.  best (may be
 * NULL) must be a variant of the session. */
int store_lineage_put(struct store *st, const char *session, int lineage, const char *best,
		      int stagnation, int active, int round, char *msg, size_t n);

/* --- the GitHub tracking issue's queue (store-github.c) ----------------- */
/*
 * Queues a post of session id: kind "open" (the issue: title and body),
 * "comment" (body) or "close"; round may be -1.  Sent in seq order by
 * tracker.c.  Returns the new seq (>= 1) or a negative error with msg.
 */
int64_t store_github_post_add(struct store *st, const char *id, const char *kind, int round,
			      const char *title, const char *body, char *msg, size_t n);
/* The posts of session id still pending, oldest first: a new array of
 * {seq, kind, round, title, body, attempts, error, comment}; NULL on failure. */
json_t *store_github_pending(struct store *st, const char *id);
/*
 * Records what became of post seq: state "sent" (issue: the issue's
 * number for an "open", comment: the comment's id, 0 when none),
 * "dropped", or it stays pending with error saying why: "pending" counts
 * one more attempt (recorded before the attempt is made), "failed" counts
 * none more, "later" takes one back (GitHub asked to wait and took nothing).
 */
int store_github_post_set(struct store *st, const char *id, int64_t seq, const char *state,
			  const char *error, int64_t issue, int64_t comment, char *msg, size_t n);
/* The number of session id's issue (its "open" post sent), 0 when none, negative on failure. */
int64_t store_github_issue(struct store *st, const char *id);
/* How many posts of kind about round (-1: none) session id has queued, in any state;
 * negative on failure. */
int64_t store_github_queued(struct store *st, const char *id, const char *kind, int round);

/* --- learnings (store-llm.c) ----------------------------------------- */
/* kind "F" (failure), "S" (success) or "M" (the model's reflection); numbers are allocated per kind and never reused. Returns
 * the number (>= 1) or a negative error. key dedups (same key -> same entry,
 * its count incremented); text, group and round stay those of the first
 * occurrence, which the text describes. */
int store_learning_add(struct store *st, const char *session, char kind, const char *key,
		       const char *group, const char *text, int round, char *msg, size_t n);
/* [{kind, number, key, group, text, count, round}], by kind then number. */
json_t *store_learnings(struct store *st, const char *session);

/* --- the model's exchanges (store-llm.c) ------------------------------- */
/*
 * c: {round, seq (>= 1, per round), purpose ("propose", "retry",
 * "reflect"), asked (who answered: "openai gpt-4o", "command 'x'",
 * "replay DIR"), prompt_sha, prompt, answer (may be null), status ("ok" or
 * "error"), error, input_tokens, output_tokens, cost, ms, attempts, meta
 * (an object: the parent, the directions asked, the outcome counts...)}.
 * Inserts, or replaces the row of the same round and seq.
 */
int store_llm_call_put(struct store *st, const char *session, json_t *c, char *msg, size_t n);
/* Replaces the meta of exchange seq of round (KERR_NOTFOUND when there is none). */
int store_llm_call_set_meta(struct store *st, const char *session, int round, int seq, json_t *meta,
			    char *msg, size_t n);
/* The exchange (form above, meta an object), or NULL. */
json_t *store_llm_call_get(struct store *st, const char *session, int round, int seq);
/* Every exchange of a round (round < 0: of the session) without prompt
 * and answer texts, oldest first. */
json_t *store_llm_calls(struct store *st, const char *session, int round);
/*
 * The session's totals: {calls, errors, input_tokens, output_tokens, cost,
 * ms, outcomes: {accepted, malformed, not_applied, outside_blocks,
 * duplicate, ...}} (outcomes summed over the calls' meta.outcomes), or
 * NULL on failure.
 */
json_t *store_llm_totals(struct store *st, const char *session);

#endif
