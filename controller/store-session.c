/*
 * store-session.c - the queries about sessions, what `kctl resume --set`
 * changed in them (settings), and their rounds.  See store.h for the
 * contract.
 *
 * May use: store-internal.h (store-sql.c's helpers), err, SQLite.
 */
#include "store.h"
#include "store-internal.h"
#include "err.h"

#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const session_states[] = { "running",   "paused", "done",
					      "cancelled", "failed", NULL };

static const char *const round_state_names[] = {
	[ROUND_PROPOSED] = "proposed",   [ROUND_PACKED] = "packed", [ROUND_RUNNING] = "running",
	[ROUND_COLLECTED] = "collected", [ROUND_DONE] = "done",
};

/* --- sessions ---------------------------------------------------------- */

/* Jansson holds only UTF-8, so text we cannot hand back is refused on the way in. */
static int utf8_valid(const char *s)
{
	json_t *j = s ? json_string(s) : NULL;

	json_decref(j);
	return !s || j;
}

int store_session_create(struct store *st, const char *id, const char *spec_path,
			 const char *spec_hash, const char *output_dir, char *msg, size_t n)
{
	int rc = 0;

	if (!id || !*id)
		return kerr_set(msg, n, KERR_INVALID, "creating a session: empty id");
	if (!utf8_valid(id) || !utf8_valid(spec_path) || !utf8_valid(spec_hash) ||
	    !utf8_valid(output_dir))
		rc = sq_note(st, KERR_INVALID, "text is not valid UTF-8");
	if (!rc)
		rc = sq_db_write(
			st, NULL,
			"INSERT INTO sessions (id, spec_path, spec_hash, output_dir, state,"
			" created, updated) VALUES (?1, ?2, ?3, ?4, 'running', " NOW ", " NOW ")",
			"tttt", id, spec_path, spec_hash, output_dir);
	return rc ? sq_fail(st, rc, msg, n, "creating session '%s'", id) : 0;
}

#define SESSION_COLUMNS                                                                            \
	"SELECT id AS id, spec_path AS spec_path, spec_hash AS spec_hash,"                         \
	" output_dir AS output_dir, state AS state, reason AS reason, created AS created,"         \
	" updated AS updated, rng AS rng, winner AS winner, rounds_cap AS rounds_cap"              \
	" FROM sessions "

/* A column stored as JSON text comes back as the value it holds. */
static int json_column_fix(json_t *row, const char *key)
{
	json_t *text = json_object_get(row, key), *doc;

	if (!json_is_string(text))
		return 0;
	doc = sq_doc_parse(json_string_value(text));
	if (!doc)
		return -1;
	return json_object_set_new(row, key, doc);
}

static int session_fix(json_t *row)
{
	return json_column_fix(row, "winner");
}

json_t *store_session_get(struct store *st, const char *id)
{
	return sq_query_one(st, session_fix, SESSION_COLUMNS "WHERE id = ?1", "t", id);
}

json_t *store_session_list(struct store *st)
{
	return sq_query_rows(st, session_fix, SESSION_COLUMNS "ORDER BY created DESC, rowid DESC",
			     "");
}

/* Tables that hold a session's rows, those that others refer to last. */
static const char *const session_tables[] = {
	"settings", "llm_calls", "learnings", "results", "lineages", "variants", "rounds",
};

int store_session_delete(struct store *st, const char *id, int64_t *rows, char *msg, size_t n)
{
	char sql[128];
	int rc = 0;

	*rows = 0;
	for (size_t i = 0; !rc && i < sizeof(session_tables) / sizeof(session_tables[0]); i++) {
		snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE session = ?1", session_tables[i]);
		rc = sq_db_write(st, NULL, sql, "t", id);
		*rows += rc ? 0 : sqlite3_changes(st->db);
	}
	if (!rc)
		rc = sq_db_write(st, "no such session", "DELETE FROM sessions WHERE id = ?1", "t",
				 id);
	*rows += rc ? 0 : 1;
	return rc ? sq_fail(st, rc, msg, n, "deleting session '%s'", id) : 0;
}

int store_session_set_winner(struct store *st, const char *id, json_t *winner, char *msg, size_t n)
{
	char *text = NULL;
	int rc = winner ? sq_doc_dump(st, winner, &text) : 0;

	if (!rc)
		rc = sq_db_write(st, "no such session",
				 "UPDATE sessions SET winner = ?2, updated = " NOW " WHERE id = ?1",
				 "tt", id, text);
	free(text);
	return rc ? sq_fail(st, rc, msg, n, "recording the winner of session '%s'", id) : 0;
}

static int setting_fix(json_t *row)
{
	return json_column_fix(row, "value") || json_column_fix(row, "was");
}

int store_setting_add(struct store *st, const char *id, const char *key, const json_t *value,
		      const json_t *was, char *msg, size_t n)
{
	char *vtext = NULL, *wtext = NULL;
	int64_t seq = 0;
	int rc = sq_doc_dump(st, value, &vtext);

	if (!rc && was)
		rc = sq_doc_dump(st, was, &wtext);
	/* an aggregate: always one row, so 1 */
	if (!rc && (rc = sq_query_int(st, &seq,
				      "SELECT COALESCE(MAX(seq), 0) + 1 FROM settings "
				      "WHERE session = ?1",
				      "t", id)) == 1)
		rc = 0;
	if (!rc)
		rc = sq_db_write(st, "no such session",
				 "INSERT INTO settings (session, seq, key, value, was, created) "
				 "SELECT ?1, ?2, ?3, ?4, ?5, " NOW " FROM sessions WHERE id = ?1",
				 "tIttt", id, seq, key, vtext, wtext);
	free(vtext);
	free(wtext);
	return rc ? sq_fail(st, rc, msg, n, "recording '%s' of session '%s'", key, id) : 0;
}

json_t *store_settings(struct store *st, const char *id)
{
	return sq_query_rows(
		st, setting_fix,
		"SELECT seq, key, value, was, created FROM settings WHERE session = ?1 "
		"ORDER BY seq",
		"t", id);
}

int store_session_set_state(struct store *st, const char *id, const char *state, const char *reason,
			    char *msg, size_t n)
{
	int known = 0, rc;

	for (size_t i = 0; state && session_states[i]; i++)
		known |= !strcmp(state, session_states[i]);
	if (!known)
		rc = sq_note(st, KERR_INVALID, "unknown state '%s'", state ? state : "(null)");
	else
		rc = sq_db_write(st, "no such session",
				 "UPDATE sessions SET state = ?2, reason = ?3, updated = " NOW
				 " WHERE id = ?1",
				 "ttt", id, state, reason);
	return rc ? sq_fail(st, rc, msg, n, "setting the state of session '%s'", id) : 0;
}

int store_session_set_rng(struct store *st, const char *id, uint64_t rng, char *msg, size_t n)
{
	/* SQLite integers are signed: the bits are kept, the sign is the top bit. */
	int rc = sq_db_write(st, "no such session",
			     "UPDATE sessions SET rng = ?2, updated = " NOW " WHERE id = ?1", "tI",
			     id, (int64_t)rng);

	return rc ? sq_fail(st, rc, msg, n, "saving the random state of session '%s'", id) : 0;
}

int store_session_set_rounds_cap(struct store *st, const char *id, int cap, char *msg, size_t n)
{
	int rc = cap < 1 ? sq_note(st, KERR_RANGE, "round budget %d is not 1 or more", cap)
			 : sq_db_write(st, "no such session",
				       "UPDATE sessions SET rounds_cap = ?2, updated = " NOW
				       " WHERE id = ?1",
				       "ti", id, cap);

	return rc ? sq_fail(st, rc, msg, n, "saving the round budget of session '%s'", id) : 0;
}

/* --- rounds ------------------------------------------------------------ */

int store_round_create(struct store *st, const char *session, int round, const char *mode,
		       char *msg, size_t n)
{
	int rc = sq_db_write(st, NULL,
			     "INSERT INTO rounds (session, round, state, mode, started)"
			     " VALUES (?1, ?2, ?3, ?4, " NOW ")",
			     "tiit", session, round, (int)ROUND_PROPOSED, mode);

	return rc ? sq_fail(st, rc, msg, n, "creating round %d of session '%s'", round, session)
		  : 0;
}

static int round_fix(json_t *row)
{
	return json_column_fix(row, "confirm") || json_column_fix(row, "plan") ? -1 : 0;
}

json_t *store_round_get(struct store *st, const char *session, int round)
{
	return sq_query_one(
		st, round_fix,
		"SELECT round AS round, state AS state, mode AS mode, decision AS decision,"
		" reason AS reason, pid AS pid, started AS started, finished AS finished,"
		" confirm AS confirm, plan AS plan FROM rounds WHERE session = ?1 AND round = ?2",
		"ti", session, round);
}

int store_round_set_confirm(struct store *st, const char *session, int round, json_t *confirm,
			    char *msg, size_t n)
{
	char *text = NULL;
	int rc = sq_doc_dump(st, confirm, &text);

	if (!rc)
		rc = sq_db_write(st, "no such round",
				 "UPDATE rounds SET confirm = ?3 WHERE session = ?1 AND round = ?2",
				 "tit", session, round, text);
	free(text);
	return rc ? sq_fail(st, rc, msg, n,
			    "recording the confirmation of round %d of session '%s'", round,
			    session)
		  : 0;
}

int store_round_set_plan(struct store *st, const char *session, int round, json_t *plan, char *msg,
			 size_t n)
{
	char *text = NULL;
	int rc = sq_doc_dump(st, plan, &text);

	if (!rc)
		rc = sq_db_write(st, "no such round",
				 "UPDATE rounds SET plan = ?3 WHERE session = ?1 AND round = ?2",
				 "tit", session, round, text);
	free(text);
	return rc ? sq_fail(st, rc, msg, n, "recording the plan of round %d of session '%s'", round,
			    session)
		  : 0;
}

int store_round_last(struct store *st, const char *session)
{
	int64_t last = 0;
	int rc = sq_query_int(st, &last,
			      "SELECT COALESCE(MAX(round), 0) FROM rounds WHERE session = ?1", "t",
			      session);

	if (rc < 0)
		return rc;
	return last > INT_MAX ? KERR_RANGE : (int)last;
}

/* Inside the caller's transaction, so the check and the update agree. */
static int round_advance(struct store *st, const char *session, int round, enum round_state state)
{
	int64_t cur = 0;
	int rc;

	if ((int)state < ROUND_PROPOSED || state > ROUND_DONE)
		return sq_note(st, KERR_INVALID, "unknown round state %d", (int)state);
	rc = sq_query_int(st, &cur, "SELECT state FROM rounds WHERE session = ?1 AND round = ?2",
			  "ti", session, round);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return sq_note(st, KERR_NOTFOUND, "no such round");
	if (cur > (int64_t)state)
		return sq_note(
			st, KERR_INVALID, "the round is already '%s', it cannot go back to '%s'",
			cur <= ROUND_DONE ? round_state_names[cur] : "?", round_state_names[state]);
	return sq_db_write(st, "no such round",
			   "UPDATE rounds SET state = ?3, finished = CASE WHEN ?3 = 4"
			   " THEN COALESCE(finished, " NOW ") ELSE finished END"
			   " WHERE session = ?1 AND round = ?2",
			   "tii", session, round, (int)state);
}

int store_round_set_state(struct store *st, const char *session, int round, enum round_state state,
			  char *msg, size_t n)
{
	int rc = round_advance(st, session, round, state);

	return rc ? sq_fail(st, rc, msg, n, "setting the state of round %d of session '%s'", round,
			    session)
		  : 0;
}

int store_round_set_pid(struct store *st, const char *session, int round, long pid, char *msg,
			size_t n)
{
	int rc = sq_db_write(st, "no such round",
			     "UPDATE rounds SET pid = ?3 WHERE session = ?1 AND round = ?2", "tiI",
			     session, round, (int64_t)pid);

	return rc ? sq_fail(st, rc, msg, n, "recording the pid of round %d of session '%s'", round,
			    session)
		  : 0;
}

int store_round_set_decision(struct store *st, const char *session, int round, const char *decision,
			     const char *reason, char *msg, size_t n)
{
	int rc = sq_db_write(st, "no such round",
			     "UPDATE rounds SET decision = ?3, reason = ?4"
			     " WHERE session = ?1 AND round = ?2",
			     "titt", session, round, decision, reason);

	return rc ? sq_fail(st, rc, msg, n, "recording the decision of round %d of session '%s'",
			    round, session)
		  : 0;
}
