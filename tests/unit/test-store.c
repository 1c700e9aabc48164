/*
 * test-store.c - unit tests for the store (controller/store*.c): schema versions,
 * persistence across reopen, every table's round trip, the constraints that
 * keep a session honest, transactions, and survival of a killed writer.
 * Every test works in its own database under a mktemp directory.
 */
#include "err.h"
#include "fileio.h"
#include "store.h"
#include "store-internal.h"
#include "xalloc.h"

#include "test.h"

#include <signal.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/test-store.XXXXXX";
static int dbcount;
static char msg[1024];

/* A fresh database path in tmpdir; caller frees. */
static char *db_path(void)
{
	return xasprintf("%s/s%d.db", tmpdir, ++dbcount);
}

static struct store *open_ok(const char *path)
{
	struct store *st = NULL;
	int rc = store_open(path, &st, msg, sizeof(msg));

	if (rc)
		fprintf(stderr, "store_open: %s\n", msg);
	CHECK(rc == 0 && st);
	return st;
}

/* A store at a fresh path holding session "s" (committed). */
static struct store *open_with_session(char **path)
{
	struct store *st;

	*path = db_path();
	st = open_ok(*path);
	CHECK(store_begin(st, msg, sizeof(msg)) == 0);
	CHECK(store_session_create(st, "s", "spec.yaml", "h0", "/out", msg, sizeof(msg)) == 0);
	CHECK(store_commit(st, msg, sizeof(msg)) == 0);
	return st;
}

/* PRAGMA user_version read or written behind the store's back. */
static int user_version(const char *path, int set)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	int v = -1;
	char sql[64];

	if (sqlite3_open(path, &db) != SQLITE_OK)
		goto out;
	if (set >= 0) {
		snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", set);
		sqlite3_exec(db, sql, NULL, NULL, NULL);
	}
	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
out:
	sqlite3_close(db);
	return v;
}

static const char *jstr(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static long long jint(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static int jnull(json_t *o, const char *k)
{
	return json_is_null(json_object_get(o, k));
}

static json_t *variant(const char *id, const char *hash, int round, const char *parent)
{
	json_t *v = json_pack("{s:s, s:s, s:i, s:s, s:s, s:{s:i, s:i}, s:s}", "id", id, "hash",
			      hash, "round", round, "source", "kernel void k() {}", "options",
			      "-DTM=4", "params", "TM", 4, "TN", 8, "rationale", "try 4x8");

	json_object_set_new(v, "parent", parent ? json_string(parent) : json_null());
	return v;
}

static int add_variant(struct store *st, const char *id, const char *hash, int round,
		       const char *parent)
{
	json_t *v = variant(id, hash, round, parent);
	int rc = store_variant_add(st, "s", v, msg, sizeof(msg));

	json_decref(v);
	return rc;
}

TEST(open_create_reopen)
{
	char *path = db_path();
	struct store *st = open_ok(path);
	json_t *s;

	CHECK(store_begin(st, msg, sizeof(msg)) == 0);
	CHECK(store_session_create(st, "a", "p.yaml", "h", "/o", msg, sizeof(msg)) == 0);
	CHECK(store_commit(st, msg, sizeof(msg)) == 0);
	store_close(st);
	CHECK(user_version(path, -1) == STORE_VERSION);

	st = open_ok(path);
	s = store_session_get(st, "a");
	CHECK_STR(jstr(s, "spec_path"), "p.yaml");
	json_decref(s);
	store_close(st);
	CHECK(user_version(path, -1) == STORE_VERSION);
	store_close(NULL);
	free(path);
}

/* Runs sql on the file behind the store's back. */
static void raw_sql(const char *path, const char *sql)
{
	sqlite3 *db = NULL;

	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
}

/* What version 5 added, taken away again (a version-4 file). */
#define V5_UNDO "ALTER TABLE sessions DROP COLUMN rounds_cap;"
/* What version 7 added (the result cache's key of a result), taken away again. */
#define V7_UNDO "ALTER TABLE results DROP COLUMN cache_key;"

/* What version 3 added, taken away again (a version-2 file). */
#define V3_UNDO                                                                                    \
	"ALTER TABLE variants DROP COLUMN origin; ALTER TABLE variants DROP COLUMN tunables;"      \
	"ALTER TABLE rounds DROP COLUMN plan; DROP TABLE llm_calls;"                               \
	"CREATE TABLE l2 (session TEXT NOT NULL REFERENCES sessions(id),"                          \
	" kind TEXT NOT NULL CHECK (kind IN ('F', 'S')), number INTEGER NOT NULL,"                 \
	" key TEXT NOT NULL, grp TEXT, text TEXT NOT NULL, count INTEGER NOT NULL,"                \
	" round INTEGER, PRIMARY KEY (session, kind, number), UNIQUE (session, kind, key));"       \
	"INSERT INTO l2 SELECT * FROM learnings; DROP TABLE learnings;"                            \
	"ALTER TABLE l2 RENAME TO learnings;"

TEST(version_1_migrates_to_the_winner_and_confirm_columns)
{
	char *path = NULL;
	struct store *st = open_with_session(&path);
	json_t *w = json_pack("{s:s, s:b}", "variant", "v1", "confirmed", 1), *row, *conf;

	store_close(st);
	/* what a version-1 file looked like */
	raw_sql(path, "ALTER TABLE sessions DROP COLUMN winner; ALTER TABLE rounds DROP COLUMN "
		      "confirm; " V7_UNDO V5_UNDO V3_UNDO "PRAGMA user_version = 1;");
	CHECK(user_version(path, -1) == 1);
	st = open_ok(path);
	CHECK(user_version(path, -1) == STORE_VERSION);
	row = store_session_get(st, "s");
	CHECK(row && json_is_null(json_object_get(row, "winner")));
	json_decref(row);

	CHECK(store_begin(st, msg, sizeof(msg)) == 0);
	CHECK(store_session_set_winner(st, "s", w, msg, sizeof(msg)) == 0);
	CHECK(store_round_create(st, "s", 0, "confirm", msg, sizeof(msg)) == 0);
	conf = json_pack("{s:i, s:[s]}", "pass", 2, "programs", "v1");
	CHECK(store_round_set_confirm(st, "s", 0, conf, msg, sizeof(msg)) == 0);
	CHECK(store_session_set_winner(st, "nope", w, msg, sizeof(msg)) == KERR_NOTFOUND);
	CHECK(store_commit(st, msg, sizeof(msg)) == 0);
	row = store_session_get(st, "s");
	CHECK(json_equal(json_object_get(row, "winner"), w));
	json_decref(row);
	row = store_round_get(st, "s", 0);
	CHECK(json_equal(json_object_get(row, "confirm"), conf));
	json_decref(row);
	json_decref(conf);
	json_decref(w);
	store_close(st);
	free(path);
}

TEST(version_2_migrates_to_model_exchanges_and_learnings)
{
	char *path = NULL;
	struct store *st = open_with_session(&path);
	json_t *c, *row, *tot, *calls;

	CHECK(store_begin(st, msg, sizeof(msg)) == 0);
	CHECK(store_learning_add(st, "s", 'F', "k1", NULL, "a failure", 1, msg, sizeof(msg)) == 1);
	CHECK(store_commit(st, msg, sizeof(msg)) == 0);
	store_close(st);
	raw_sql(path, V7_UNDO V5_UNDO V3_UNDO "PRAGMA user_version = 2;");
	st = open_ok(path);
	CHECK(user_version(path, -1) == STORE_VERSION);
	CHECK(store_begin(st, msg, sizeof(msg)) == 0);
	/* the old learning kept its number; the model's kind is allowed now */
	CHECK(store_learning_add(st, "s", 'F', "k1", NULL, "a failure", 1, msg, sizeof(msg)) == 1);
	CHECK(store_learning_add(st, "s", 'M', "m1", NULL, "tiles help", 2, msg, sizeof(msg)) == 1);
	CHECK(store_learning_add(st, "s", 'X', "x", NULL, "no", 2, msg, sizeof(msg)) ==
	      KERR_INVALID);
	c = json_pack("{s:i, s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:f, s:f, s:i, "
		      "s:{s:s, s:{s:i, s:i}}}",
		      "round", 2, "seq", 1, "purpose", "propose", "asked", "openai m", "prompt_sha",
		      "abc", "prompt", "the prompt", "answer", "the answer", "status", "ok",
		      "input_tokens", 1200, "output_tokens", 300, "cost", 0.25, "ms", 1500.0,
		      "attempts", 2, "meta", "parent", "r01-v001", "outcomes", "accepted", 3,
		      "malformed", 1);
	CHECK(store_llm_call_put(st, "s", c, msg, sizeof(msg)) == 0);
	json_object_set_new(c, "seq", json_integer(2));
	json_object_set_new(c, "status", json_string("error"));
	CHECK(store_llm_call_put(st, "s", c, msg, sizeof(msg)) == 0);
	/* the same round and seq again replaces the row */
	CHECK(store_llm_call_put(st, "s", c, msg, sizeof(msg)) == 0);
	json_object_del(c, "prompt");
	CHECK(store_llm_call_put(st, "s", c, msg, sizeof(msg)) == KERR_PARSE);
	{
		json_t *m2 = json_pack("{s:{s:i}}", "outcomes", "duplicate", 2);

		CHECK(store_llm_call_set_meta(st, "s", 2, 2, m2, msg, sizeof(msg)) == 0);
		CHECK(store_llm_call_set_meta(st, "s", 2, 9, m2, msg, sizeof(msg)) ==
		      KERR_NOTFOUND);
		json_decref(m2);
	}
	CHECK(store_commit(st, msg, sizeof(msg)) == 0);
	row = store_llm_call_get(st, "s", 2, 1);
	CHECK(row && !strcmp(json_string_value(json_object_get(row, "answer")), "the answer"));
	CHECK(json_integer_value(json_object_get(
		      json_object_get(json_object_get(row, "meta"), "outcomes"), "accepted")) == 3);
	json_decref(row);
	CHECK(store_llm_call_get(st, "s", 2, 3) == NULL);
	calls = store_llm_calls(st, "s", -1);
	CHECK(json_array_size(calls) == 2 && !json_object_get(json_array_get(calls, 0), "prompt"));
	json_decref(calls);
	tot = store_llm_totals(st, "s");
	CHECK(tot && json_integer_value(json_object_get(tot, "calls")) == 2);
	CHECK(json_integer_value(json_object_get(tot, "errors")) == 1);
	CHECK(json_integer_value(json_object_get(tot, "input_tokens")) == 2400);
	CHECK(fabs(json_number_value(json_object_get(tot, "cost")) - 0.5) < 1e-9);
	CHECK(json_integer_value(json_object_get(json_object_get(tot, "outcomes"), "accepted")) ==
	      3);
	CHECK(json_integer_value(json_object_get(json_object_get(tot, "outcomes"), "duplicate")) ==
	      2);
	json_decref(tot);
	json_decref(c);
	store_close(st);
	free(path);
}

TEST(version_4_migrates_to_the_round_budget)
{
	char *path = NULL;
	struct store *st = open_with_session(&path);
	json_t *row;

	store_close(st);
	raw_sql(path, V7_UNDO V5_UNDO "PRAGMA user_version = 4;");
	st = open_ok(path);
	CHECK(user_version(path, -1) == STORE_VERSION);
	row = store_session_get(st, "s");
	CHECK(row && jnull(row, "rounds_cap")); /* the spec's budget, as before */
	json_decref(row);
	CHECK(store_begin(st, msg, sizeof(msg)) == 0);
	CHECK(store_session_set_rounds_cap(st, "s", 3, msg, sizeof(msg)) == 0);
	CHECK(store_session_set_rounds_cap(st, "s", 0, msg, sizeof(msg)) == KERR_RANGE);
	CHECK_CONTAINS(msg, "round budget 0 is not 1 or more");
	CHECK(store_session_set_rounds_cap(st, "nope", 2, msg, sizeof(msg)) == KERR_NOTFOUND);
	CHECK(store_commit(st, msg, sizeof(msg)) == 0);
	row = store_session_get(st, "s");
	CHECK(jint(row, "rounds_cap") == 3);
	json_decref(row);
	store_close(st);
	free(path);
}

TEST(newer_version_refused)
{
	char *path = db_path();
	struct store *st = open_ok(path);

	store_close(st);
	CHECK(user_version(path, STORE_VERSION + 1) == STORE_VERSION + 1);
	st = (struct store *)1;
	CHECK(store_open(path, &st, msg, sizeof(msg)) == KERR_INVALID);
	CHECK(st == NULL);
	CHECK_CONTAINS(msg, path);
	CHECK_CONTAINS(msg, "newer than this kctl");
	free(path);
}

TEST(not_a_database)
{
	char *path = xasprintf("%s/junk.db", tmpdir);
	FILE *f = fopen(path, "w");
	struct store *st = NULL;

	CHECK(f != NULL);
	if (f) {
		fputs("this is not an SQLite database, not even close to one....\n", f);
		fclose(f);
	}
	CHECK(store_open(path, &st, msg, sizeof(msg)) == KERR_IO);
	CHECK(st == NULL);
	CHECK_CONTAINS(msg, "opening store");
	free(path);
}

/* "" is no path: SQLite would take it for a temporary database, lost at exit. */
TEST(empty_path_refused)
{
	struct store *st = NULL;

	CHECK(store_open("", &st, msg, sizeof(msg)) == KERR_IO);
	CHECK(st == NULL);
	CHECK_CONTAINS(msg, "opening store '': the path is empty");
}

TEST(sessions)
{
	char *path;
	struct store *st = open_with_session(&path);
	json_t *s, *list;
	const uint64_t rng = 0xfedcba9876543210ull;

	s = store_session_get(st, "s");
	CHECK_STR(jstr(s, "id"), "s");
	CHECK_STR(jstr(s, "spec_hash"), "h0");
	CHECK_STR(jstr(s, "output_dir"), "/out");
	CHECK_STR(jstr(s, "state"), "running");
	CHECK(jnull(s, "reason") && jnull(s, "rng"));
	CHECK(strlen(jstr(s, "created") ? jstr(s, "created") : "") == 24);
	CHECK_CONTAINS(jstr(s, "created"), "Z");
	json_decref(s);
	CHECK(store_session_get(st, "nope") == NULL);

	CHECK(store_begin(st, msg, sizeof(msg)) == 0);
	CHECK(store_session_create(st, "t", "q.yaml", "h1", "/o2", msg, sizeof(msg)) == 0);
	CHECK(store_session_create(st, "t", "q.yaml", "h1", "/o2", msg, sizeof(msg)) ==
	      KERR_INVALID);
	CHECK_CONTAINS(msg, "creating session 't': UNIQUE constraint failed");
	CHECK(store_session_set_state(st, "s", "paused", "user asked", msg, sizeof(msg)) == 0);
	CHECK(store_session_set_state(st, "s", "sleeping", NULL, msg, sizeof(msg)) == KERR_INVALID);
	CHECK_STR(msg, "setting the state of session 's': unknown state 'sleeping'");
	CHECK(store_session_set_state(st, "x", "done", NULL, msg, sizeof(msg)) == KERR_NOTFOUND);
	CHECK(store_session_set_rng(st, "s", rng, msg, sizeof(msg)) == 0);
	CHECK(store_commit(st, msg, sizeof(msg)) == 0);

	s = store_session_get(st, "s");
	CHECK_STR(jstr(s, "state"), "paused");
	CHECK_STR(jstr(s, "reason"), "user asked");
	CHECK((uint64_t)jint(s, "rng") == rng);
	json_decref(s);

	list = store_session_list(st);
	CHECK(json_array_size(list) == 2);
	CHECK_STR(jstr(json_array_get(list, 0), "id"), "t");
	CHECK_STR(jstr(json_array_get(list, 1), "id"), "s");
	json_decref(list);
	store_close(st);
	free(path);
}

TEST(write_needs_transaction)
{
	char *path;
	struct store *st = open_with_session(&path);

	CHECK(store_session_set_state(st, "s", "done", NULL, msg, sizeof(msg)) == KERR_INVALID);
	CHECK_CONTAINS(msg, "no transaction is open");
	CHECK(store_round_create(st, "s", 1, "explore", msg, sizeof(msg)) == KERR_INVALID);
	store_close(st);
	free(path);
}

TEST(rounds)
{
	char *path;
	struct store *st = open_with_session(&path);
	json_t *r;

	CHECK(store_round_last(st, "s") == 0);
	CHECK(store_begin(st, msg, sizeof(msg)) == 0);
	CHECK(store_round_create(st, "s", 1, "exploit", msg, sizeof(msg)) == 0);
	CHECK(store_round_create(st, "s", 2, "explore", msg, sizeof(msg)) == 0);
	CHECK(store_round_create(st, "s", 2, "explore", msg, sizeof(msg)) == KERR_INVALID);
	CHECK(store_round_create(st, "nope", 1, "explore", msg, sizeof(msg)) == KERR_INVALID);
	CHECK_CONTAINS(msg, "FOREIGN KEY constraint failed");
	CHECK(store_round_set_state(st, "s", 1, ROUND_RUNNING, msg, sizeof(msg)) == 0);
	CHECK(store_round_set_pid(st, "s", 1, 4242, msg, sizeof(msg)) == 0);
	CHECK(store_round_set_state(st, "s", 1, ROUND_PACKED, msg, sizeof(msg)) == KERR_INVALID);
	CHECK_STR(msg, "setting the state of round 1 of session 's': the round is already "
		       "'running', it cannot go back to 'packed'");
	CHECK(store_round_set_state(st, "s", 1, ROUND_RUNNING, msg, sizeof(msg)) == 0);
	CHECK(store_round_set_state(st, "s", 9, ROUND_DONE, msg, sizeof(msg)) == KERR_NOTFOUND);
	CHECK(store_round_set_pid(st, "s", 9, 1, msg, sizeof(msg)) == KERR_NOTFOUND);
	CHECK(store_round_set_decision(st, "s", 1, "continue", "improved 3%", msg, sizeof(msg)) ==
	      0);
	CHECK(store_round_set_state(st, "s", 1, ROUND_DONE, msg, sizeof(msg)) == 0);
	CHECK(store_commit(st, msg, sizeof(msg)) == 0);

	CHECK(store_round_last(st, "s") == 2);
	r = store_round_get(st, "s", 1);
	CHECK(jint(r, "round") == 1);
	CHECK(jint(r, "state") == ROUND_DONE);
	CHECK_STR(jstr(r, "mode"), "exploit");
	CHECK_STR(jstr(r, "decision"), "continue");
	CHECK_STR(jstr(r, "reason"), "improved 3%");
	CHECK(jint(r, "pid") == 4242);
	CHECK(jstr(r, "started") && jstr(r, "finished"));
	json_decref(r);
	r = store_round_get(st, "s", 2);
	CHECK(jint(r, "state") == ROUND_PROPOSED);
	CHECK(jnull(r, "pid") && jnull(r, "decision") && jnull(r, "finished"));
	json_decref(r);
	CHECK(store_round_get(st, "s", 3) == NULL);
	store_close(st);
	free(path);
}

TEST(variants)
{
	char *path;
	struct store *st = open_with_session(&path);
	json_t *v, *all, *bad;

	CHECK(store_begin(st, msg, sizeof(msg)) == 0);
	CHECK(add_variant(st, "r00-v000", "h-a", 0, NULL) == 0);
	CHECK(add_variant(st, "r01-v001", "h-b", 1, "r00-v000") == 0);
	CHECK(add_variant(st, "r01-v002", "h-c", 1, "r00-v000") == 0);
	CHECK(add_variant(st, "r02-v003", "h-d", 2, "r01-v002") == 0);
	CHECK(add_variant(st, "r01-v002", "h-b", 1, NULL) == KERR_INVALID);
	CHECK_STR(msg, "recording variant 'r01-v002': UNIQUE constraint failed: "
		       "variants.session, variants.hash");
	CHECK(add_variant(st, "r01-v002", "h-new", 1, NULL) == KERR_INVALID);
	CHECK_STR(msg, "recording variant 'r01-v002': UNIQUE constraint failed: "
		       "variants.session, variants.id");
	CHECK(add_variant(st, "r02-v004", "h-e", 2, "ghost") == KERR_INVALID);
	CHECK_CONTAINS(msg, "FOREIGN KEY constraint failed");

	bad = json_pack("{s:s, s:s, s:i, s:s, s:i}", "id", "x", "hash", "h-x", "round", 1, "source",
			"s", "colour", 3);
	CHECK(store_variant_add(st, "s", bad, msg, sizeof(msg)) == KERR_PARSE);
	CHECK_STR(msg, "recording variant 'x': $.colour: unknown key");
	json_object_del(bad, "colour");
	json_object_set_new(bad, "params", json_string("TM=4"));
	CHECK(store_variant_add(st, "s", bad, msg, sizeof(msg)) == KERR_PARSE);
	CHECK_STR(msg, "recording variant 'x': $.params: expected an object, got string");
	json_object_del(bad, "params");
	json_object_del(bad, "hash");
	CHECK(store_variant_add(st, "s", bad, msg, sizeof(msg)) == KERR_PARSE);
	CHECK_STR(msg, "recording variant 'x': $.hash: required key is missing");
	json_decref(bad);

	CHECK(store_variant_set_lineage(st, "s", "r01-v001", 3, msg, sizeof(msg)) == 0);
	CHECK(store_variant_set_lineage(st, "s", "nope", 3, msg, sizeof(msg)) == KERR_NOTFOUND);
	CHECK_STR(msg, "setting the lineage of variant 'nope': no such variant");
	CHECK(store_commit(st, msg, sizeof(msg)) == 0);

	CHECK(store_variant_has_hash(st, "s", "h-c") == 1);
	CHECK(store_variant_has_hash(st, "s", "h-z") == 0);
	CHECK(store_variant_has_hash(st, "other", "h-c") == 0);

	v = store_variant_get(st, "s", "r01-v001");
	CHECK_STR(jstr(v, "hash"), "h-b");
	CHECK_STR(jstr(v, "parent"), "r00-v000");
	CHECK_STR(jstr(v, "options"), "-DTM=4");
	CHECK_STR(jstr(v, "rationale"), "try 4x8");
	CHECK(jint(v, "round") == 1 && jint(v, "lineage") == 3);
	CHECK(jint(json_object_get(v, "params"), "TN") == 8);
	CHECK(jnull(v, "status") && jnull(v, "speedup_ref") && jnull(v, "fault_kind"));
	json_decref(v);

	all = store_variants(st, "s", 1);
	CHECK(json_array_size(all) == 2);
	CHECK_STR(jstr(json_array_get(all, 0), "id"), "r01-v001");
	CHECK_STR(jstr(json_array_get(all, 1), "id"), "r01-v002");
	CHECK(jnull(json_array_get(all, 1), "lineage"));
	json_decref(all);
	all = store_variants(st, "s", -1);
	CHECK(json_array_size(all) == 4);
	CHECK_STR(jstr(json_array_get(all, 0), "id"), "r00-v000");
	CHECK(jnull(json_array_get(all, 0), "parent"));
	CHECK_STR(jstr(json_array_get(all, 3), "id"), "r02-v003");
	json_decref(all);
	all = store_variants(st, "s", 7);
	CHECK(all && json_array_size(all) == 0);
	json_decref(all);
	store_close(st);
	free(path);
}

/* Result documents: one complete, one failed (figures absent), one with nulls. */
static json_t *result_ok(void)
{
	return json_pack("{s:s, s:{s:f, s:{s:f, s:i}, s:{s:f}}, s:{s:f, s:f, s:s}}", "status", "ok",
			 "performance", "median_ms", 0.5, "speedup_vs_reference",
			 "ratio_of_medians", 4.0, "pairs", 20, "speedup_vs_baseline",
			 "ratio_of_medians", 2.0, "roofline", "gflops", 123.5, "gbs", 45.25,
			 "bottleneck", "memory");
}

static json_t *result_failed(void)
{
	return json_pack("{s:s, s:{s:s, s:s, s:s}}", "status", "incorrect", "fault", "origin",
			 "candidate", "kind", "wrong_values", "message", "y[3] is off");
}

static json_t *result_nulls(void)
{
	return json_pack("{s:s, s:{s:f, s:{s:n}}, s:{s:n, s:n, s:s}}", "status", "ok",
			 "performance", "median_ms", 2.0, "speedup_vs_reference",
			 "ratio_of_medians", "roofline", "gflops", "gbs", "bottleneck", "latency");
}

static void add_results(struct store *st)
{
	json_t *docs[] = { result_ok(), result_failed(), result_nulls() };
	const char *ids[] = { "r01-v001", "r01-v002", "r02-v003" };

	for (size_t i = 0; i < 3; i++) {
		CHECK(store_result_add(st, "s", ids[i], docs[i], msg, sizeof(msg)) == 0);
		json_decref(docs[i]);
	}
}

TEST(results)
{
	char *path;
	struct store *st = open_with_session(&path);
	json_t *doc, *all, *v;

	CHECK(store_begin(st, msg, sizeof(msg)) == 0);
	CHECK(add_variant(st, "r01-v001", "h-a", 1, NULL) == 0);
	CHECK(add_variant(st, "r01-v002", "h-b", 1, NULL) == 0);
	CHECK(add_variant(st, "r02-v003", "h-c", 2, NULL) == 0);
	CHECK(add_variant(st, "r02-v004", "h-d", 2, NULL) == 0);
	add_results(st);
	doc = result_ok();
	CHECK(store_result_add(st, "s", "r01-v001", doc, msg, sizeof(msg)) == KERR_INVALID);
	CHECK_STR(msg, "recording the result of variant 'r01-v001': UNIQUE constraint failed: "
		       "results.session, results.variant");
	CHECK(store_result_add(st, "s", "ghost", doc, msg, sizeof(msg)) == KERR_INVALID);
	json_decref(doc);
	doc = json_pack("{s:s, s:{s:s}}", "status", "ok", "performance", "median_ms", "fast");
	CHECK(store_result_add(st, "s", "r02-v004", doc, msg, sizeof(msg)) == KERR_PARSE);
	CHECK_STR(msg, "recording the result of variant 'r02-v004': $.performance.median_ms: "
		       "expected a number, got string");
	json_decref(doc);
	CHECK(store_commit(st, msg, sizeof(msg)) == 0);
	CHECK(store_result_count(st, "s") == 3);

	doc = store_result_get(st, "s", "r01-v002");
	CHECK_STR(jstr(json_object_get(doc, "fault"), "message"), "y[3] is off");
	json_decref(doc);
	CHECK(store_result_get(st, "s", "r02-v004") == NULL);

	all = store_variants(st, "s", -1);
	CHECK(json_array_size(all) == 4);
	v = json_array_get(all, 0);
	CHECK_STR(jstr(v, "status"), "ok");
	CHECK(json_real_value(json_object_get(v, "speedup_ref")) == 4.0);
	CHECK(json_real_value(json_object_get(v, "speedup_base")) == 2.0);
	CHECK(json_real_value(json_object_get(v, "median_ms")) == 0.5);
	CHECK(json_real_value(json_object_get(v, "gflops")) == 123.5);
	CHECK(json_real_value(json_object_get(v, "gbs")) == 45.25);
	CHECK_STR(jstr(v, "bottleneck"), "memory");
	CHECK(jnull(v, "fault_kind"));
	v = json_array_get(all, 1);
	CHECK_STR(jstr(v, "status"), "incorrect");
	CHECK_STR(jstr(v, "fault_kind"), "wrong_values");
	CHECK(jnull(v, "speedup_ref") && jnull(v, "median_ms") && jnull(v, "bottleneck"));
	v = json_array_get(all, 2);
	CHECK(json_real_value(json_object_get(v, "median_ms")) == 2.0);
	CHECK(jnull(v, "speedup_ref") && jnull(v, "speedup_base") && jnull(v, "gflops"));
	CHECK_STR(jstr(v, "bottleneck"), "latency");
	v = json_array_get(all, 3);
	CHECK(jnull(v, "status") && jnull(v, "fault_kind"));
	json_decref(all);
	store_close(st);
	free(path);
}

TEST(lineages)
{
	char *path;
	struct store *st = open_with_session(&path);
	json_t *l, *e;

	CHECK(store_begin(st, msg, sizeof(msg)) == 0);
	CHECK(add_variant(st, "a", "h-a", 1, NULL) == 0);
	CHECK(add_variant(st, "b", "h-b", 2, "a") == 0);
	CHECK(store_lineage_put(st, "s", 2, NULL, 0, 1, 1, msg, sizeof(msg)) == 0);
	CHECK(store_lineage_put(st, "s", 1, "a", 0, 1, 1, msg, sizeof(msg)) == 0);
	CHECK(store_lineage_put(st, "s", 1, "b", 2, 0, 5, msg, sizeof(msg)) == 0);
	CHECK(store_lineage_put(st, "s", 3, "ghost", 0, 1, 2, msg, sizeof(msg)) == KERR_INVALID);
	CHECK(store_commit(st, msg, sizeof(msg)) == 0);

	l = store_lineages(st, "s");
	CHECK(json_array_size(l) == 2);
	e = json_array_get(l, 0);
	CHECK(jint(e, "lineage") == 1);
	CHECK_STR(jstr(e, "best"), "b");
	CHECK(jint(e, "stagnation") == 2);
	CHECK(json_is_false(json_object_get(e, "active")));
	CHECK(jint(e, "created_round") == 1);
	e = json_array_get(l, 1);
	CHECK(jint(e, "lineage") == 2 && jnull(e, "best"));
	CHECK(json_is_true(json_object_get(e, "active")));
	json_decref(l);
	store_close(st);
	free(path);
}

TEST(learnings)
{
	static const struct {
		char kind;
		const char *key, *text;
		int want;
	} cases[] = {
		{ 'F', "tm8-slow", "TM=8 spills", 1 },
		{ 'F', "wg256", "256 beats 128", 2 },
		{ 'S', "tile-first", "tile before unrolling", 1 },
		{ 'F', "tm8-slow", "TM=8 spills registers", 1 },
		{ 'F', "vec4", "float4 loads help", 3 },
	};
	char *path;
	struct store *st = open_with_session(&path);
	json_t *l, *e;

	CHECK(store_begin(st, msg, sizeof(msg)) == 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CHECK(store_learning_add(st, "s", cases[i].kind, cases[i].key, "tiling",
					 cases[i].text, (int)i + 1, msg,
					 sizeof(msg)) == cases[i].want);
	CHECK(store_learning_add(st, "s", 'X', "k", NULL, "t", 1, msg, sizeof(msg)) ==
	      KERR_INVALID);
	CHECK(store_learning_add(st, "s", 'F', "", NULL, "t", 1, msg, sizeof(msg)) == KERR_INVALID);
	CHECK(store_commit(st, msg, sizeof(msg)) == 0);
	store_close(st);

	st = open_ok(path);
	CHECK(store_begin(st, msg, sizeof(msg)) == 0);
	CHECK(store_learning_add(st, "s", 'S', "unroll", NULL, "unroll by 4", 9, msg,
				 sizeof(msg)) == 2);
	CHECK(store_learning_add(st, "s", 'F', "wg256", NULL, "256 still wins", 9, msg,
				 sizeof(msg)) == 2);
	CHECK(store_commit(st, msg, sizeof(msg)) == 0);

	l = store_learnings(st, "s");
	CHECK(json_array_size(l) == 5);
	e = json_array_get(l, 0);
	CHECK_STR(jstr(e, "kind"), "F");
	/* a repeat counts; the first occurrence's text, group and round stay */
	CHECK(jint(e, "number") == 1 && jint(e, "count") == 2 && jint(e, "round") == 1);
	CHECK_STR(jstr(e, "text"), "TM=8 spills");
	CHECK_STR(jstr(e, "group"), "tiling");
	e = json_array_get(l, 1);
	CHECK(jint(e, "number") == 2 && jint(e, "count") == 2);
	CHECK_STR(jstr(e, "text"), "256 beats 128");
	CHECK_STR(jstr(e, "group"), "tiling");
	CHECK(jint(json_array_get(l, 2), "number") == 3);
	e = json_array_get(l, 3);
	CHECK_STR(jstr(e, "kind"), "S");
	CHECK(jint(e, "number") == 1 && jint(e, "count") == 1);
	CHECK_STR(jstr(json_array_get(l, 4), "key"), "unroll");
	json_decref(l);
	store_close(st);
	free(path);
}

TEST(rollback)
{
	char *path;
	struct store *st = open_with_session(&path);
	json_t *s;

	CHECK(store_begin(st, msg, sizeof(msg)) == 0);
	CHECK(store_session_set_state(st, "s", "failed", "boom", msg, sizeof(msg)) == 0);
	CHECK(store_round_create(st, "s", 1, "explore", msg, sizeof(msg)) == 0);
	CHECK(add_variant(st, "v", "h", 1, NULL) == 0);
	store_rollback(st);
	store_rollback(st);
	CHECK(store_round_last(st, "s") == 0);
	CHECK(store_variant_has_hash(st, "s", "h") == 0);
	s = store_session_get(st, "s");
	CHECK_STR(jstr(s, "state"), "running");
	json_decref(s);
	CHECK(store_commit(st, msg, sizeof(msg)) != 0);
	store_close(st);
	free(path);
}

/* Child: writes a round in a transaction, then either dies before the
 * commit or commits, reports on fd and waits to be killed. */
static void child_write(const char *path, int round, int commit, int fd)
{
	struct store *st = NULL;
	char m[512];

	if (store_open(path, &st, m, sizeof(m)) || store_begin(st, m, sizeof(m)) ||
	    store_round_create(st, "s", round, "explore", m, sizeof(m)))
		_exit(3);
	if (!commit)
		_exit(0);
	if (store_commit(st, m, sizeof(m)))
		_exit(4);
	if (write(fd, "c", 1) != 1)
		_exit(5);
	for (;;)
		pause();
}

TEST(crash_safety)
{
	char *path;
	struct store *st = open_with_session(&path);
	int status = 0, fds[2];
	pid_t pid;
	char c = 0;
	json_t *r;

	store_close(st);
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		child_write(path, 1, 0, -1);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	st = open_ok(path);
	CHECK(store_round_last(st, "s") == 0);
	CHECK(store_round_get(st, "s", 1) == NULL);
	store_close(st);

	CHECK(pipe(fds) == 0);
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		child_write(path, 2, 1, fds[1]);
	}
	close(fds[1]);
	CHECK(read(fds[0], &c, 1) == 1 && c == 'c');
	close(fds[0]);
	CHECK(kill(pid, SIGKILL) == 0);
	CHECK(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) &&
	      WTERMSIG(status) == SIGKILL);
	st = open_ok(path);
	CHECK(store_round_last(st, "s") == 2);
	r = store_round_get(st, "s", 2);
	CHECK_STR(jstr(r, "mode"), "explore");
	json_decref(r);
	store_close(st);
	free(path);
}

TEST(settings_are_recorded_in_order)
{
	char *path = NULL;
	struct store *st = open_with_session(&path);
	json_t *v600 = json_real(600), *v120 = json_integer(120), *rows, *r;

	rows = store_settings(st, "s");
	CHECK(rows && json_array_size(rows) == 0);
	json_decref(rows);
	CHECK(store_begin(st, msg, sizeof(msg)) == 0);
	CHECK(store_setting_add(st, "s", "limits.run_timeout_s", v600, NULL, msg, sizeof(msg)) ==
	      0);
	CHECK(store_setting_add(st, "s", "limits.run_timeout_s", v120, v600, msg, sizeof(msg)) ==
	      0);
	CHECK(store_setting_add(st, "nope", "limits.run_timeout_s", v120, NULL, msg, sizeof(msg)) ==
	      KERR_NOTFOUND);
	CHECK(strstr(msg, "nope") != NULL);
	CHECK(store_commit(st, msg, sizeof(msg)) == 0);
	store_close(st);

	/* they outlive the connection, numbered from 1, each with what it replaced */
	st = open_ok(path);
	rows = store_settings(st, "s");
	CHECK(rows && json_array_size(rows) == 2);
	r = json_array_get(rows, 0);
	CHECK(jint(r, "seq") == 1);
	CHECK_STR(jstr(r, "key"), "limits.run_timeout_s");
	CHECK(json_equal(json_object_get(r, "value"), v600));
	CHECK(jnull(r, "was"));
	CHECK(jstr(r, "created") != NULL);
	r = json_array_get(rows, 1);
	CHECK(jint(r, "seq") == 2);
	CHECK(json_equal(json_object_get(r, "value"), v120));
	CHECK(json_equal(json_object_get(r, "was"), v600));
	json_decref(rows);
	rows = store_settings(st, "nope");
	CHECK(rows && json_array_size(rows) == 0);
	json_decref(rows);
	json_decref(v600);
	json_decref(v120);
	store_close(st);
	free(path);
}

TEST(bound_parameters)
{
	static const char *const ids[] = {
		"it's \"quoted\"",
		"'; DROP TABLE sessions; --",
		"\"); DELETE FROM variants; --",
	};
	char *path = db_path();
	struct store *st = open_ok(path);
	json_t *s, *list, *v;

	CHECK(store_begin(st, msg, sizeof(msg)) == 0);
	for (size_t i = 0; i < 3; i++)
		CHECK(store_session_create(st, ids[i], ids[i], "h", "/o", msg, sizeof(msg)) == 0);
	v = variant(ids[1], ids[0], 0, NULL);
	CHECK(store_variant_add(st, ids[1], v, msg, sizeof(msg)) == 0);
	json_decref(v);
	CHECK(store_learning_add(st, ids[1], 'F', ids[1], ids[0], ids[2], 1, msg, sizeof(msg)) ==
	      1);
	CHECK(store_commit(st, msg, sizeof(msg)) == 0);
	store_close(st);

	st = open_ok(path);
	for (size_t i = 0; i < 3; i++) {
		s = store_session_get(st, ids[i]);
		CHECK_STR(jstr(s, "id"), ids[i]);
		CHECK_STR(jstr(s, "spec_path"), ids[i]);
		json_decref(s);
	}
	list = store_session_list(st);
	CHECK(json_array_size(list) == 3);
	json_decref(list);
	v = store_variant_get(st, ids[1], ids[1]);
	CHECK_STR(jstr(v, "hash"), ids[0]);
	json_decref(v);
	CHECK(store_variant_has_hash(st, ids[1], ids[0]) == 1);
	list = store_learnings(st, ids[1]);
	CHECK_STR(jstr(json_array_get(list, 0), "text"), ids[2]);
	json_decref(list);
	store_close(st);
	free(path);
}

/* A store at a fresh path holding many sessions (a file of many pages), closed. */
static char *many_sessions_db(void)
{
	char *path = db_path(), pad[400];
	struct store *st = open_ok(path);

	memset(pad, 'p', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	CHECK(store_begin(st, msg, sizeof(msg)) == 0);
	for (int i = 0; i < 200; i++) {
		char id[32];

		snprintf(id, sizeof(id), "s%03d", i);
		CHECK(store_session_create(st, id, pad, "h", pad, msg, sizeof(msg)) == 0);
	}
	CHECK(store_commit(st, msg, sizeof(msg)) == 0);
	store_close(st);
	return path;
}

/* Overwrites the page in the middle of the file with garbage; returns 0 on success. */
static int damage_middle_page(const char *path)
{
	FILE *f = fopen(path, "r+b");
	char junk[4096];
	long size, page;
	int rc = -1;

	if (!f)
		return -1;
	memset(junk, 0xa5, sizeof(junk));
	if (!fseek(f, 0, SEEK_END) && (size = ftell(f)) >= 8 * 4096) {
		page = size / 4096 / 2;
		if (!fseek(f, page * 4096, SEEK_SET) && fwrite(junk, 1, sizeof(junk), f) == 4096)
			rc = 0;
	}
	if (fclose(f))
		rc = -1;
	return rc;
}

TEST(empty_file_is_not_a_new_database)
{
	char *path = db_path();
	FILE *f = fopen(path, "w");
	struct store *st = NULL;
	struct stat sb;

	CHECK(f != NULL);
	if (f)
		fclose(f);
	CHECK(store_open(path, &st, msg, sizeof(msg)) == KERR_INVALID);
	CHECK(st == NULL);
	CHECK_CONTAINS(msg, path);
	CHECK_CONTAINS(msg, "empty (0 bytes)");
	CHECK(stat(path, &sb) == 0 && sb.st_size == 0);
	free(path);
}

/*
 * kctl processes that find no database at once (a `kctl status` beside the
 * first `kctl start`) all open one whole database: none meets the 0-byte
 * file a creating SQLite starts with, and no temporary file is left.
 */
TEST(concurrent_creators_all_open_one_database)
{
	enum { PATHS = 12, PROCS = 6 };
	int failed = 0;

	for (int i = 0; i < PATHS; i++) {
		char *path = db_path();
		pid_t pids[PROCS];
		int gate[2];

		CHECK(pipe(gate) == 0);
		for (int k = 0; k < PROCS; k++) {
			pids[k] = fork();
			if (pids[k] == 0) {
				struct store *st = NULL;
				char c, m[1024] = "";

				close(gate[1]);
				/* everyone starts when the parent closes the gate */
				if (read(gate[0], &c, 1) < 0)
					_exit(3);
				if (store_open(path, &st, m, sizeof(m))) {
					fprintf(stderr, "child %d: %s\n", k, m);
					_exit(1);
				}
				store_close(st);
				_exit(0);
			}
		}
		close(gate[0]);
		close(gate[1]);
		for (int k = 0; k < PROCS; k++) {
			int status = 0;

			if (pids[k] < 0 || waitpid(pids[k], &status, 0) != pids[k] ||
			    !WIFEXITED(status) || WEXITSTATUS(status))
				failed++;
		}
		CHECK(user_version(path, -1) == STORE_VERSION);
		free(path);
	}
	CHECK(failed == 0);
	{
		char *cmd = xasprintf("ls %s | grep -q '[.]new-'", tmpdir);

		CHECK(system(cmd) != 0); /* no PATH.new-PID-XXXXXX left */
		free(cmd);
	}
}

TEST(damaged_page_refused_on_open)
{
	char *path = many_sessions_db();
	struct store *st = NULL;

	CHECK(damage_middle_page(path) == 0);
	CHECK(store_open(path, &st, msg, sizeof(msg)) == KERR_IO);
	CHECK(st == NULL);
	CHECK_CONTAINS(msg, path);
	CHECK_CONTAINS(msg, "is damaged");
	CHECK_CONTAINS(msg, "PRAGMA integrity_check");
	CHECK_CONTAINS(msg, ".recover");
	free(path);
}

/* Damage that appears while the store is open: reads fail, nothing commits. */
TEST(read_error_is_an_error_and_blocks_commits)
{
	char *path = many_sessions_db();
	struct store *st = open_ok(path);
	json_t *list;

	CHECK(store_check(st, msg, sizeof(msg)) == 0);
	CHECK(damage_middle_page(path) == 0);
	/* drop the pages this connection keeps, so the next read goes to the file */
	sqlite3_db_release_memory(st->db);
	list = store_session_list(st);
	CHECK(list == NULL);
	CHECK(store_check(st, msg, sizeof(msg)) == KERR_IO);
	CHECK_CONTAINS(msg, path);
	CHECK_CONTAINS(msg, "malformed");
	/* a write decided after the failed read is never committed */
	if (store_begin(st, msg, sizeof(msg)) == 0) {
		CHECK(store_round_create(st, "s000", 1, "exploit", msg, sizeof(msg)) == 0);
		CHECK(store_commit(st, msg, sizeof(msg)) == KERR_IO);
		CHECK_CONTAINS(msg, "not committing");
		store_rollback(st);
	}
	json_decref(list);
	store_close(st);
	free(path);
}

int main(void)
{
	int rc;

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(open_create_reopen);
	RUN(version_1_migrates_to_the_winner_and_confirm_columns);
	RUN(version_2_migrates_to_model_exchanges_and_learnings);
	RUN(version_4_migrates_to_the_round_budget);
	RUN(newer_version_refused);
	RUN(not_a_database);
	RUN(empty_path_refused);
	RUN(sessions);
	RUN(write_needs_transaction);
	RUN(rounds);
	RUN(variants);
	RUN(results);
	RUN(lineages);
	RUN(learnings);
	RUN(rollback);
	RUN(crash_safety);
	RUN(bound_parameters);
	RUN(settings_are_recorded_in_order);
	RUN(empty_file_is_not_a_new_database);
	RUN(concurrent_creators_all_open_one_database);
	RUN(damaged_page_refused_on_open);
	RUN(read_error_is_an_error_and_blocks_commits);
	rc = test_summary();
	if (dir_remove_tree(tmpdir))
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return rc;
}
