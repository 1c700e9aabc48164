/*
 * test-cache.c - unit tests for the result cache's file (controller/cache.c):
 * the key's canonical form (a table, and one key pinned), where the file
 * lives, entries round trip, expiry, entries that fail their checks
 * (damaged or forged), several processes writing at once, prune and clear,
 * and a file from a newer kctl.  Every test works under a mktemp folder.
 */
#include "cache.h"
#include "err.h"
#include "xalloc.h"

#include "test.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/test-cache.XXXXXX";
static int dbcount;
static char msg[1024];

static char *db_path(void)
{
	return xasprintf("%s/sub%d/cache.db", tmpdir, ++dbcount);
}

static struct cache *open_ok(const char *path)
{
	struct cache *c = NULL;
	int rc = cache_open(path, &c, msg, sizeof(msg));

	if (rc)
		fprintf(stderr, "cache_open: %s\n", msg);
	CHECK(rc == 0 && c);
	return c;
}

static void raw_sql(const char *path, const char *sql)
{
	sqlite3 *db = NULL;

	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
}

static json_t *inputs_of(const char *source)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s}}", "format", CACHE_KEY_FORMAT, "evalpod",
			 "evalpod 0.1.0", "program", "source", source, "build_options", "-DLS=32");
}

/* Stores a result for inputs_of(source); the key goes into key. */
static void put_ok(struct cache *c, const char *source, char key[65])
{
	json_t *in = inputs_of(source), *res, *org;

	res = json_pack("{s:s, s:s, s:{s:f}}", "id", "r01-v000", "status", "ok", "performance",
			"median_ms", 1.5);
	org = json_pack("{s:s, s:s}", "session", "s1", "batch", "s1-r001");
	cache_key(in, key);
	if (cache_put(c, key, in, res, org, msg, sizeof(msg))) {
		fprintf(stderr, "cache_put: %s\n", msg);
		CHECK(!"cache_put failed");
	}
	json_decref(in);
	json_decref(res);
	json_decref(org);
}

TEST(canonical_form)
{
	static const struct {
		const char *json, *canonical;
	} cases[] = {
		{ "{\"b\": 1, \"a\": 2}", "{\"a\":2,\"b\":1}" },
		{ "{\"a\": {\"z\": [3, 2, 1], \"y\": null}}",
		  "{\"a\":{\"y\":null,\"z\":[3,2,1]}}" },
		{ "{\"B\": 1, \"a\": 1, \"_\": 1}", "{\"B\":1,\"_\":1,\"a\":1}" },
		{ "{\"s\": \"caf\\u00e9 \\\"q\\\" a/b\\n\"}",
		  "{\"s\":\"caf\\u00E9 \\\"q\\\" a/b\\n\"}" },
		{ "[0.1, 1e300, -0.0, 2.5]",
		  "[0.10000000000000001,1.0000000000000001e300,-0.0,2.5]" },
		{ "[1, 1.0, true, false]", "[1,1.0,true,false]" },
		{ "\"plain\"", "\"plain\"" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		json_t *v = json_loads(cases[i].json, JSON_DECODE_ANY, NULL);
		char *text = v ? cache_canonical(v) : NULL;

		CHECK(v);
		CHECK_STR(text, cases[i].canonical);
		free(text);
		json_decref(v);
	}
}

TEST(key_is_the_sha256_of_the_canonical_form)
{
	json_t *a = json_loads("{\"program\": {\"source\": \"k\", \"build_options\": \"\"}, "
			       "\"format\": \"kctl.cache/1\"}",
			       0, NULL);
	json_t *b = json_loads("{\"format\": \"kctl.cache/1\", \"program\": "
			       "{\"build_options\": \"\", \"source\": \"k\"}}",
			       0, NULL);
	json_t *c = json_loads("{\"format\": \"kctl.cache/1\", \"program\": "
			       "{\"build_options\": \" \", \"source\": \"k\"}}",
			       0, NULL);
	char ka[65], kb[65], kc[65];

	cache_key(a, ka);
	cache_key(b, kb);
	cache_key(c, kc);
	/* sha256 of {"format":"kctl.cache/1","program":{"build_options":"","source":"k"}} */
	CHECK_STR(ka, "e56704db910f07ab417279870da1a81f400bb9e432a54178fb4952396e29a47b");
	CHECK_STR(kb, ka);
	CHECK(strcmp(kc, ka) != 0);
	json_decref(a);
	json_decref(b);
	json_decref(c);
}

TEST(default_path)
{
	static const struct {
		const char *dir, *xdg, *home, *want;
	} cases[] = {
		{ "/c", "/x", "/h", "/c/cache.db" },
		{ "", "/x", "/h", "/x/kctl/cache.db" },
		{ NULL, NULL, "/h", "/h/.cache/kctl/cache.db" },
		{ NULL, "", "/h", "/h/.cache/kctl/cache.db" },
	};
	char *keep = getenv("HOME") ? xstrdup(getenv("HOME")) : NULL;

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		char *p;

		if (cases[i].dir)
			setenv("KCTL_CACHE_DIR", cases[i].dir, 1);
		else
			unsetenv("KCTL_CACHE_DIR");
		if (cases[i].xdg)
			setenv("XDG_CACHE_HOME", cases[i].xdg, 1);
		else
			unsetenv("XDG_CACHE_HOME");
		setenv("HOME", cases[i].home, 1);
		p = cache_default_path();
		CHECK_STR(p, cases[i].want);
		free(p);
	}
	if (keep)
		setenv("HOME", keep, 1);
	free(keep);
}

TEST(round_trip_and_miss)
{
	char *path = db_path(), key[65];
	struct cache *c = open_ok(path);
	json_t *e = NULL;

	put_ok(c, "kernel A", key);
	CHECK(cache_get(c, key, 30, &e, msg, sizeof(msg)) == 1);
	CHECK_STR(json_string_value(json_object_get(json_object_get(e, "result"), "status")), "ok");
	CHECK_STR(json_string_value(json_object_get(json_object_get(e, "origin"), "batch")),
		  "s1-r001");
	CHECK_STR(json_string_value(json_object_get(e, "key")), key);
	json_decref(e);
	e = NULL;
	CHECK(cache_get(c, "0000000000000000000000000000000000000000000000000000000000000000", 30,
			&e, msg, sizeof(msg)) == 0 &&
	      !e);
	cache_close(c);
	/* reopened: still there */
	c = open_ok(path);
	CHECK(cache_get(c, key, 0, &e, msg, sizeof(msg)) == 1);
	json_decref(e);
	cache_close(c);
	free(path);
}

TEST(put_refuses_inputs_of_another_key)
{
	char *path = db_path();
	struct cache *c = open_ok(path);
	json_t *in = inputs_of("x"), *res = json_object(), *org = json_object();

	CHECK(cache_put(c, "0123", in, res, org, msg, sizeof(msg)) == KERR_INVALID);
	CHECK_CONTAINS(msg, "its inputs give key");
	json_decref(in);
	json_decref(res);
	json_decref(org);
	cache_close(c);
	free(path);
}

TEST(expiry)
{
	char *path = db_path(), key[65], *sql;
	struct cache *c = open_ok(path);
	json_t *e = NULL;

	put_ok(c, "old kernel", key);
	/* stored 40 days ago; the time is outside the checksum */
	sql = xasprintf("UPDATE entries SET created = created - 40 * 86400 WHERE key = '%s'", key);
	raw_sql(path, sql);
	CHECK(cache_get(c, key, 30, &e, msg, sizeof(msg)) == 0 && !e);
	CHECK(cache_get(c, key, 50, &e, msg, sizeof(msg)) == 1);
	json_decref(e);
	CHECK(cache_get(c, key, 0, &e, msg, sizeof(msg)) == 1); /* 0: no expiry */
	json_decref(e);
	free(sql);
	cache_close(c);
	free(path);
}

/* Each edit breaks the entry differently; every one is a miss, and a new put heals it. */
TEST(damaged_and_forged_entries_are_misses)
{
	static const char *const edits[] = {
		/* a flipped byte in the result */
		"UPDATE entries SET result = replace(result, '\"ok\"', '\"ko\"')",
		/* the inputs changed */
		"UPDATE entries SET inputs = replace(inputs, 'kernel', 'kernal')",
		/* the origin changed */
		"UPDATE entries SET origin = replace(origin, 's1', 's9')",
		/* the checksum changed */
		"UPDATE entries SET checksum = 'x' || substr(checksum, 2)",
		/* a forged result with a checksum recomputed the way kctl does is
		 * still caught when its inputs are not its key's (see below) */
	};
	char *path = db_path(), key[65];
	struct cache *c = open_ok(path);
	json_t *e = NULL;

	for (size_t i = 0; i < sizeof(edits) / sizeof(*edits); i++) {
		put_ok(c, "kernel B", key);
		CHECK(cache_get(c, key, 0, &e, msg, sizeof(msg)) == 1);
		json_decref(e);
		e = NULL;
		raw_sql(path, edits[i]);
		CHECK(cache_get(c, key, 0, &e, msg, sizeof(msg)) == 0 && !e);
	}
	put_ok(c, "kernel B", key);
	CHECK(cache_get(c, key, 0, &e, msg, sizeof(msg)) == 1);
	json_decref(e);
	cache_close(c);
	free(path);
}

/* An entry of another key moved under this key: its inputs give the other key. */
TEST(an_entry_under_another_key_is_a_miss)
{
	char *path = db_path(), ka[65], kb[65], *sql;
	struct cache *c = open_ok(path);
	json_t *e = NULL;

	put_ok(c, "kernel C", ka);
	put_ok(c, "kernel D", kb);
	sql = xasprintf("DELETE FROM entries WHERE key = '%s'; UPDATE entries SET key = '%s' "
			"WHERE key = '%s'",
			ka, ka, kb);
	raw_sql(path, sql);
	CHECK(cache_get(c, ka, 0, &e, msg, sizeof(msg)) == 0 && !e);
	free(sql);
	cache_close(c);
	free(path);
}

/* The portable form (object storage): what passes, and each way it fails. */
TEST(portable_entries)
{
	json_t *in = inputs_of("kernel E"), *other = inputs_of("kernel F");
	json_t *res = json_pack("{s:s}", "status", "ok"), *org = json_pack("{s:s}", "session", "s");
	char key[65], okey[65];
	json_t *doc, *bad;

	cache_key(in, key);
	cache_key(other, okey);
	doc = cache_entry_doc(key, in, res, org, 1e9);
	CHECK(cache_entry_fault(doc, key) == NULL);
	CHECK_STR(cache_entry_fault(doc, okey), "it holds another key");
	/* a round trip through text keeps it sound */
	{
		char *text = json_dumps(doc, 0);
		json_t *back = json_loads(text, 0, NULL);

		CHECK(cache_entry_fault(back, key) == NULL);
		json_decref(back);
		free(text);
	}
	bad = json_deep_copy(doc);
	json_object_set_new(json_object_get(bad, "result"), "status", json_string("incorrect"));
	CHECK_STR(cache_entry_fault(bad, key), "its checksum does not match what it holds");
	json_decref(bad);
	bad = json_deep_copy(doc);
	json_object_del(bad, "origin");
	CHECK_STR(cache_entry_fault(bad, key), "it lacks a part of an entry");
	json_decref(bad);
	/* inputs of another key under this key, with a checksum made for them */
	bad = cache_entry_doc(key, other, res, org, 1e9);
	CHECK_STR(cache_entry_fault(bad, key), "its inputs do not give its key");
	json_decref(bad);
	json_decref(doc);
	json_decref(in);
	json_decref(other);
	json_decref(res);
	json_decref(org);
}

#define WRITERS 4
#define PER     150

TEST(several_processes_write_at_once)
{
	char *path = db_path(), key[65];
	struct cache *c = open_ok(path);
	pid_t pids[WRITERS];
	json_t *st = NULL, *e = NULL;
	int ok = 1;

	cache_close(c);
	for (int w = 0; w < WRITERS; w++) {
		int before = test_failed_checks;

		pids[w] = fork();
		if (pids[w] == 0) {
			struct cache *mine = NULL;
			int bad = cache_open(path, &mine, msg, sizeof(msg)) != 0;

			if (bad)
				fprintf(stderr, "writer %d: %s\n", w, msg);

			for (int i = 0; !bad && i < PER; i++) {
				/* half shared by every writer, half its own */
				char *src = i % 2 ? xasprintf("own %d %d", w, i)
						  : xasprintf("shared %d", i);

				put_ok(mine, src, key);
				free(src);
			}
			cache_close(mine);
			_exit(bad || test_failed_checks != before ? 1 : 0);
		}
	}
	for (int w = 0; w < WRITERS; w++) {
		int status = 0;

		waitpid(pids[w], &status, 0);
		ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
	}
	CHECK(ok);
	c = open_ok(path);
	CHECK(cache_stats(c, &st, msg, sizeof(msg)) == 0);
	CHECK(json_integer_value(json_object_get(st, "entries")) == WRITERS * PER / 2 + PER / 2);
	json_decref(st);
	for (int i = 0; i < PER; i += 2) {
		char *src = xasprintf("shared %d", i);
		json_t *in = inputs_of(src);

		cache_key(in, key);
		CHECK(cache_get(c, key, 0, &e, msg, sizeof(msg)) == 1);
		json_decref(e);
		e = NULL;
		json_decref(in);
		free(src);
	}
	cache_close(c);
	free(path);
}

TEST(prune_and_clear)
{
	char *path = db_path(), key[65], *sql;
	struct cache *c = open_ok(path);
	int64_t removed = -1;
	json_t *st = NULL;

	put_ok(c, "p1", key);
	sql = xasprintf("UPDATE entries SET created = created - 10 * 86400 WHERE key = '%s'", key);
	raw_sql(path, sql);
	put_ok(c, "p2", key);
	put_ok(c, "p3", key);
	CHECK(cache_prune(c, 5, &removed, msg, sizeof(msg)) == 0 && removed == 1);
	CHECK(cache_stats(c, &st, msg, sizeof(msg)) == 0);
	CHECK(json_integer_value(json_object_get(st, "entries")) == 2);
	CHECK(json_integer_value(json_object_get(st, "bytes")) > 0);
	json_decref(st);
	CHECK(cache_prune(c, -1, &removed, msg, sizeof(msg)) == 0 && removed == 2);
	CHECK(cache_stats(c, &st, msg, sizeof(msg)) == 0);
	CHECK(json_integer_value(json_object_get(st, "entries")) == 0);
	CHECK(json_is_null(json_object_get(st, "oldest")));
	json_decref(st);
	free(sql);
	cache_close(c);
	free(path);
}

TEST(a_newer_file_is_refused)
{
	char *path = db_path();
	struct cache *c = open_ok(path);

	cache_close(c);
	raw_sql(path, "PRAGMA user_version = 99");
	c = NULL;
	CHECK(cache_open(path, &c, msg, sizeof(msg)) == KERR_INVALID && !c);
	CHECK_CONTAINS(msg, "from a newer kctl");
	free(path);
}

int main(void)
{
	if (!mkdtemp(tmpdir))
		return 1;
	RUN(canonical_form);
	RUN(key_is_the_sha256_of_the_canonical_form);
	RUN(default_path);
	RUN(round_trip_and_miss);
	RUN(put_refuses_inputs_of_another_key);
	RUN(expiry);
	RUN(damaged_and_forged_entries_are_misses);
	RUN(an_entry_under_another_key_is_a_miss);
	RUN(portable_entries);
	RUN(several_processes_write_at_once);
	RUN(prune_and_clear);
	RUN(a_newer_file_is_refused);
	return test_summary();
}
