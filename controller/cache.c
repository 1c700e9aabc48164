/*
 * cache.c - the result cache's file: open, look up, store, count and prune
 * entries, each checked against its checksum and key before it is trusted
 * (cache.h).  Uses SQLite, OpenSSL's SHA-256 and Jansson; nothing of the
 * sessions, so that any layer above may use it.
 */
#include "cache.h"
#include "err.h"
#include "fileio.h"
#include "log.h"
#include "xalloc.h"

#include <errno.h>
#include <openssl/evp.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

struct cache {
	sqlite3 *db;
	char *path;
};

/* Entries hold canonical JSON texts; a result is at most this big. */
#define CACHE_MAX_TEXT (64u << 20)

static const char schema[] = "CREATE TABLE IF NOT EXISTS entries ("
			     " key TEXT PRIMARY KEY,"
			     " inputs TEXT NOT NULL,"
			     " result TEXT NOT NULL,"
			     " origin TEXT NOT NULL,"
			     " created REAL NOT NULL,"
			     " checksum TEXT NOT NULL);"
			     "CREATE INDEX IF NOT EXISTS entries_created ON entries(created);";

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fail(struct cache *c, char *msg, size_t n, const char *what)
{
	int code = sqlite3_extended_errcode(c->db) & 0xff;

	return kerr_set(msg, n, code == SQLITE_CONSTRAINT ? KERR_INVALID : KERR_IO,
			"result cache '%s': %s: %s", c->path, what, sqlite3_errmsg(c->db));
}

/* Hex SHA-256 of the parts, each followed by a NUL so that no two splits agree. */
static void sha256_parts(const char *const *parts, size_t count, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL))
		abort(); /* OpenSSL out of memory */
	for (size_t i = 0; i < count; i++)
		if (!EVP_DigestUpdate(ctx, parts[i], strlen(parts[i]) + (count > 1)))
			abort();
	if (!EVP_DigestFinal_ex(ctx, md, &len))
		abort();
	EVP_MD_CTX_free(ctx);
	for (unsigned int i = 0; i < len && i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	out[64] = '\0';
}

char *cache_canonical(const json_t *v)
{
	char *text = json_dumps(v, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENSURE_ASCII |
					   JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));

	if (!text)
		abort(); /* only out of memory: every json_t encodes */
	return text;
}

void cache_key(const json_t *inputs, char out[65])
{
	char *text = cache_canonical(inputs);
	const char *parts[] = { text };

	sha256_parts(parts, 1, out);
	free(text);
}

static void checksum(const char *key, const char *inputs, const char *result, const char *origin,
		     char out[65])
{
	const char *parts[] = { key, inputs, result, origin };

	sha256_parts(parts, 4, out);
}

char *cache_default_path(void)
{
	const char *dir = getenv("KCTL_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");

	if (dir && *dir)
		return xasprintf("%s/cache.db", dir);
	if (xdg && *xdg)
		return xasprintf("%s/kctl/cache.db", xdg);
	return xasprintf("%s/.cache/kctl/cache.db", home && *home ? home : ".");
}

const char *cache_file(const struct cache *c)
{
	return c->path;
}

static int exec_sql(struct cache *c, const char *sql, char *msg, size_t n)
{
	return sqlite3_exec(c->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : fail(c, msg, n, sql);
}

/* Sets *version to the file's user_version; a newer kctl's file is refused. */
static int read_version(struct cache *c, int64_t *version, char *msg, size_t n)
{
	sqlite3_stmt *st = NULL;

	*version = -1;
	if (sqlite3_prepare_v2(c->db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		*version = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (*version < 0)
		return fail(c, msg, n, "reading its version");
	if (*version > CACHE_VERSION)
		return kerr_set(
			msg, n, KERR_INVALID,
			"result cache '%s' is version %lld, from a newer kctl (this one "
			"knows %d): use that kctl, another KCTL_CACHE_DIR, or remove the file",
			c->path, (long long)*version, CACHE_VERSION);
	return 0;
}

/* Opens c->path with the SQLite open flags given, and sets the busy timeout. */
static int open_db(struct cache *c, int flags, char *msg, size_t n)
{
	if (sqlite3_open_v2(c->path, &c->db, flags, NULL) != SQLITE_OK)
		return c->db ? fail(c, msg, n, "opening")
			     : kerr_set(msg, n, KERR_IO, "result cache '%s': cannot open", c->path);
	if (sqlite3_busy_timeout(c->db, CACHE_BUSY_MS) != SQLITE_OK)
		return fail(c, msg, n, "busy timeout");
	return 0;
}

/* WAL, the schema, the version check. */
static int configure(struct cache *c, char *msg, size_t n)
{
	int64_t version = -1;
	int rc;

	if ((rc = exec_sql(c, "PRAGMA journal_mode = WAL", msg, n)) ||
	    (rc = exec_sql(c, "PRAGMA synchronous = NORMAL", msg, n)) ||
	    (rc = exec_sql(c, "BEGIN IMMEDIATE", msg, n)))
		return rc;
	rc = read_version(c, &version, msg, n);
	if (!rc && version < CACHE_VERSION)
		rc = exec_sql(c, schema, msg, n);
	if (!rc && version < CACHE_VERSION)
		rc = exec_sql(c, "PRAGMA user_version = 1", msg, n);
	if (!rc)
		rc = exec_sql(c, "COMMIT", msg, n);
	else
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

int cache_open(const char *path, struct cache **out, char *msg, size_t n)
{
	struct cache *c = xcalloc(1, sizeof(*c));
	char *dir = xstrdup(path), *slash = strrchr(dir, '/');
	int rc = 0;

	*out = NULL;
	c->path = xstrdup(path);
	if (slash && slash != dir) {
		*slash = '\0';
		rc = dir_make(dir, msg, n);
		if (!rc)
			chmod(dir, 0700);
	}
	if (!rc)
		rc = open_db(c, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, msg, n);
	if (!rc)
		rc = configure(c, msg, n);
	free(dir);
	if (rc) {
		cache_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

int cache_open_ro(const char *path, struct cache **out, char *msg, size_t n)
{
	struct cache *c = NULL;
	struct stat sb;
	int64_t version = -1;
	int rc;

	*out = NULL;
	if (stat(path, &sb))
		return kerr_set(msg, n, errno == ENOENT ? KERR_NOTFOUND : KERR_IO,
				"result cache '%s': %s", path, strerror(errno));
	c = xcalloc(1, sizeof(*c));
	c->path = xstrdup(path);
	rc = open_db(c, SQLITE_OPEN_READONLY, msg, n);
	if (!rc)
		rc = read_version(c, &version, msg, n);
	if (!rc && version < CACHE_VERSION)
		rc = kerr_set(msg, n, KERR_INVALID,
			      "result cache '%s' is not one: its version is %lld, not %d", path,
			      (long long)version, CACHE_VERSION);
	if (rc) {
		cache_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

void cache_close(struct cache *c)
{
	if (!c)
		return;
	sqlite3_close(c->db);
	free(c->path);
	free(c);
}

static const char *col_text(sqlite3_stmt *st, int i)
{
	const char *t = (const char *)sqlite3_column_text(st, i);

	return t ? t : "";
}

/* Why the row (key, inputs, result, origin, checksum) cannot be trusted, or NULL. */
static const char *row_fault(const char *want, sqlite3_stmt *st, json_t **doc)
{
	const char *key = col_text(st, 0), *inputs = col_text(st, 1), *result = col_text(st, 2);
	const char *origin = col_text(st, 3), *sum = col_text(st, 5);
	json_t *in = NULL;
	char have[65], again[65];

	checksum(key, inputs, result, origin, have);
	if (strcmp(key, want))
		return "its key column is another key";
	if (strcmp(have, sum))
		return "its checksum does not match what it holds";
	if (!(in = json_loads(inputs, 0, NULL)))
		return "its inputs do not parse";
	cache_key(in, again);
	json_decref(in);
	if (strcmp(again, want))
		return "its inputs do not give its key";
	*doc = json_pack("{s:s, s:o?, s:o?, s:o?, s:f}", "key", key, "inputs",
			 json_loads(inputs, 0, NULL), "result", json_loads(result, 0, NULL),
			 "origin", json_loads(origin, 0, NULL), "created",
			 sqlite3_column_double(st, 4));
	if (!json_is_object(json_object_get(*doc, "result")) ||
	    !json_is_object(json_object_get(*doc, "origin"))) {
		json_decref(*doc);
		*doc = NULL;
		return "its result or origin is not a JSON object";
	}
	return NULL;
}

json_t *cache_entry_doc(const char *key, const json_t *inputs, const json_t *result,
			const json_t *origin, double created)
{
	char *in = cache_canonical(inputs), *res = cache_canonical(result);
	char *org = cache_canonical(origin), sum[65];
	json_t *doc;

	checksum(key, in, res, org, sum);
	doc = json_pack("{s:s, s:O, s:O, s:O, s:f, s:s}", "key", key, "inputs", inputs, "result",
			result, "origin", origin, "created", created, "checksum", sum);
	free(in);
	free(res);
	free(org);
	return doc;
}

const char *cache_entry_fault(const json_t *doc, const char *key)
{
	const json_t *inputs = json_object_get(doc, "inputs"),
		     *res = json_object_get(doc, "result");
	const json_t *origin = json_object_get(doc, "origin");
	const char *sum = json_string_value(json_object_get(doc, "checksum"));
	const char *have = json_string_value(json_object_get(doc, "key"));
	const char *fault = NULL;
	char *in, *rs, *org, want[65], again[65];

	if (!json_is_object(inputs) || !json_is_object(res) || !json_is_object(origin) || !sum ||
	    !have || !json_is_number(json_object_get(doc, "created")))
		return "it lacks a part of an entry";
	if (strcmp(have, key))
		return "it holds another key";
	in = cache_canonical(inputs);
	rs = cache_canonical(res);
	org = cache_canonical(origin);
	checksum(key, in, rs, org, want);
	cache_key(inputs, again);
	if (strcmp(want, sum))
		fault = "its checksum does not match what it holds";
	else if (strcmp(again, key))
		fault = "its inputs do not give its key";
	free(in);
	free(rs);
	free(org);
	return fault;
}

int cache_get(struct cache *c, const char *key, double max_age_days, json_t **entry, char *msg,
	      size_t n)
{
	sqlite3_stmt *st = NULL;
	const char *why;
	int rc = 0, step;

	*entry = NULL;
	if (sqlite3_prepare_v2(c->db,
			       "SELECT key, inputs, result, origin, created, checksum FROM entries "
			       "WHERE key = ?1",
			       -1, &st, NULL) != SQLITE_OK)
		return fail(c, msg, n, "looking up an entry");
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	step = sqlite3_step(st);
	if (step == SQLITE_ROW) {
		double created = sqlite3_column_double(st, 4);

		if (max_age_days > 0 && created < now_s() - max_age_days * 86400) {
			log_debug("cache: entry %s in '%s' has expired", key, c->path);
		} else if ((why = row_fault(key, st, entry))) {
			log_warn("cache: entry %s in '%s' fails its check (%s); ignored: the "
				 "variant is evaluated again and the entry replaced",
				 key, c->path, why);
		} else {
			rc = 1;
		}
	} else if (step != SQLITE_DONE) {
		rc = fail(c, msg, n, "looking up an entry");
	}
	sqlite3_finalize(st);
	return rc;
}

int cache_put(struct cache *c, const char *key, const json_t *inputs, const json_t *result,
	      const json_t *origin, char *msg, size_t n)
{
	char *in = cache_canonical(inputs), *res = cache_canonical(result);
	char *org = cache_canonical(origin), sum[65], want[65];
	sqlite3_stmt *st = NULL;
	int rc = 0;

	cache_key(inputs, want);
	if (strcmp(want, key))
		rc = kerr_set(msg, n, KERR_INVALID, "cache entry %s: its inputs give key %s", key,
			      want);
	else if (strlen(res) > CACHE_MAX_TEXT)
		rc = kerr_set(msg, n, KERR_LIMIT, "cache entry %s: the result passes %u bytes", key,
			      CACHE_MAX_TEXT);
	checksum(key, in, res, org, sum);
	if (!rc &&
	    sqlite3_prepare_v2(c->db,
			       "INSERT OR REPLACE INTO entries (key, inputs, result, origin, "
			       "created, checksum) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
			       -1, &st, NULL) != SQLITE_OK)
		rc = fail(c, msg, n, "storing an entry");
	if (!rc) {
		sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, in, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, res, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, org, -1, SQLITE_STATIC);
		sqlite3_bind_double(st, 5, now_s());
		sqlite3_bind_text(st, 6, sum, -1, SQLITE_STATIC);
		/* one statement: its own transaction, waiting for other writers */
		if (sqlite3_step(st) != SQLITE_DONE)
			rc = fail(c, msg, n, "storing an entry");
	}
	sqlite3_finalize(st);
	free(in);
	free(res);
	free(org);
	return rc;
}

static int64_t file_size(const char *path)
{
	struct stat sb;

	return stat(path, &sb) ? 0 : (int64_t)sb.st_size;
}

int cache_stats(struct cache *c, json_t **out, char *msg, size_t n)
{
	sqlite3_stmt *st = NULL;
	char *wal = xasprintf("%s-wal", c->path);
	int rc = 0;

	*out = NULL;
	if (sqlite3_prepare_v2(c->db, "SELECT count(*), min(created), max(created) FROM entries",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		rc = fail(c, msg, n, "counting entries");
	} else {
		int64_t count = sqlite3_column_int64(st, 0);

		*out = json_pack(
			"{s:s, s:I, s:I, s:o, s:o}", "file", c->path, "entries", (json_int_t)count,
			"bytes", (json_int_t)(file_size(c->path) + file_size(wal)), "oldest",
			count ? json_real(sqlite3_column_double(st, 1)) : json_null(), "newest",
			count ? json_real(sqlite3_column_double(st, 2)) : json_null());
	}
	sqlite3_finalize(st);
	free(wal);
	return rc;
}

int cache_prune(struct cache *c, double days, int64_t *removed, char *msg, size_t n)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;

	*removed = 0;
	if (sqlite3_prepare_v2(c->db, "DELETE FROM entries WHERE ?1 OR created < ?2", -1, &st,
			       NULL) != SQLITE_OK)
		return fail(c, msg, n, "removing entries");
	sqlite3_bind_int(st, 1, days < 0);
	sqlite3_bind_double(st, 2, now_s() - (days < 0 ? 0 : days) * 86400);
	if (sqlite3_step(st) != SQLITE_DONE)
		rc = fail(c, msg, n, "removing entries");
	else
		*removed = sqlite3_changes(c->db);
	sqlite3_finalize(st);
	if (!rc && *removed)
		sqlite3_exec(c->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
	return rc;
}
