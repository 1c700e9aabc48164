/*
 * store.c - the session state in SQLite: the schema with its migrations,
 * opening and closing the database, transactions.  See store.h for the
 * contract.  The queries live beside it: store-session.c (sessions, their
 * settings, rounds), store-variant.c (variants, results, lineages),
 * store-llm.c (learnings, the model's exchanges); all of them, this file
 * included, talk to SQLite through the helpers of store-sql.c.
 *
 * May use: store-internal.h (store-sql.c's helpers), err, xalloc, SQLite.
 *
 * The only SQL built with snprintf here is the PRAGMA that writes
 * user_version: PRAGMAs take no parameters, and the value is the
 * compile-time STORE_VERSION, never input.
 */
#include "store.h"
#include "store-internal.h"
#include "err.h"
#include "xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* How long a writer waits for another connection's lock before failing. */
#define STORE_BUSY_MS 10000

/*
 * The schema, one entry per version: migrations[v] takes a file from
 * version v - 1 to v.  Entries are append-only once released.
 */
static const char *const migrations[] = {
	[1] = "CREATE TABLE sessions ("
	      "  id TEXT NOT NULL PRIMARY KEY,"
	      "  spec_path TEXT NOT NULL,"
	      "  spec_hash TEXT NOT NULL,"
	      "  output_dir TEXT NOT NULL,"
	      "  state TEXT NOT NULL"
	      "    CHECK (state IN ('running', 'paused', 'done', 'cancelled', 'failed')),"
	      "  reason TEXT,"
	      "  created TEXT NOT NULL,"
	      "  updated TEXT NOT NULL,"
	      "  rng INTEGER);"
	      "CREATE TABLE rounds ("
	      "  session TEXT NOT NULL REFERENCES sessions(id),"
	      "  round INTEGER NOT NULL CHECK (round >= 0),"
	      "  state INTEGER NOT NULL CHECK (state BETWEEN 0 AND 4),"
	      "  mode TEXT,"
	      "  decision TEXT,"
	      "  reason TEXT,"
	      "  pid INTEGER,"
	      "  started TEXT NOT NULL,"
	      "  finished TEXT,"
	      "  PRIMARY KEY (session, round));"
	      "CREATE TABLE variants ("
	      "  session TEXT NOT NULL REFERENCES sessions(id),"
	      "  id TEXT NOT NULL,"
	      "  hash TEXT NOT NULL,"
	      "  round INTEGER NOT NULL CHECK (round >= 0),"
	      "  parent TEXT,"
	      "  lineage INTEGER,"
	      "  source TEXT NOT NULL,"
	      "  options TEXT NOT NULL,"
	      "  params TEXT,"
	      "  rationale TEXT,"
	      "  created TEXT NOT NULL,"
	      "  PRIMARY KEY (session, id),"
	      "  UNIQUE (session, hash),"
	      "  FOREIGN KEY (session, parent) REFERENCES variants(session, id));"
	      "CREATE INDEX variants_by_round ON variants(session, round);"
	      "CREATE TABLE results ("
	      "  session TEXT NOT NULL,"
	      "  variant TEXT NOT NULL,"
	      "  status TEXT,"
	      "  speedup_ref REAL,"
	      "  speedup_base REAL,"
	      "  median_ms REAL,"
	      "  gflops REAL,"
	      "  gbs REAL,"
	      "  bottleneck TEXT,"
	      "  json TEXT NOT NULL,"
	      "  PRIMARY KEY (session, variant),"
	      "  FOREIGN KEY (session, variant) REFERENCES variants(session, id));"
	      "CREATE TABLE lineages ("
	      "  session TEXT NOT NULL REFERENCES sessions(id),"
	      "  lineage INTEGER NOT NULL,"
	      "  best TEXT,"
	      "  stagnation INTEGER NOT NULL,"
	      "  active INTEGER NOT NULL CHECK (active IN (0, 1)),"
	      "  created_round INTEGER NOT NULL,"
	      "  PRIMARY KEY (session, lineage),"
	      "  FOREIGN KEY (session, best) REFERENCES variants(session, id));"
	      "CREATE TABLE learnings ("
	      "  session TEXT NOT NULL REFERENCES sessions(id),"
	      "  kind TEXT NOT NULL CHECK (kind IN ('F', 'S')),"
	      "  number INTEGER NOT NULL CHECK (number >= 1),"
	      "  key TEXT NOT NULL,"
	      "  grp TEXT,"
	      "  text TEXT NOT NULL,"
	      "  count INTEGER NOT NULL,"
	      "  round INTEGER,"
	      "  PRIMARY KEY (session, kind, number),"
	      "  UNIQUE (session, kind, key));",
	/* 2: the winner every output reads, and the rounds that confirm it */
	[2] = "ALTER TABLE sessions ADD COLUMN winner TEXT;"
	      "ALTER TABLE rounds ADD COLUMN confirm TEXT;",
	/* 3: the model proposer: where a variant came from, its own tunables,
	 * how a round's slots were shared, model learnings, every exchange */
	[3] = "ALTER TABLE variants ADD COLUMN origin TEXT;"
	      "ALTER TABLE variants ADD COLUMN tunables TEXT;"
	      "ALTER TABLE rounds ADD COLUMN plan TEXT;"
	      "CREATE TABLE learnings3 ("
	      "  session TEXT NOT NULL REFERENCES sessions(id),"
	      "  kind TEXT NOT NULL CHECK (kind IN ('F', 'S', 'M')),"
	      "  number INTEGER NOT NULL CHECK (number >= 1),"
	      "  key TEXT NOT NULL,"
	      "  grp TEXT,"
	      "  text TEXT NOT NULL,"
	      "  count INTEGER NOT NULL,"
	      "  round INTEGER,"
	      "  PRIMARY KEY (session, kind, number),"
	      "  UNIQUE (session, kind, key));"
	      "INSERT INTO learnings3 SELECT session, kind, number, key, grp, text, count, round"
	      "  FROM learnings;"
	      "DROP TABLE learnings;"
	      "ALTER TABLE learnings3 RENAME TO learnings;"
	      "CREATE TABLE llm_calls ("
	      "  session TEXT NOT NULL REFERENCES sessions(id),"
	      "  round INTEGER NOT NULL CHECK (round >= 0),"
	      "  seq INTEGER NOT NULL CHECK (seq >= 1),"
	      "  purpose TEXT NOT NULL CHECK (purpose IN ('propose', 'retry', 'reflect')),"
	      "  asked TEXT NOT NULL,"
	      "  prompt_sha TEXT NOT NULL,"
	      "  prompt TEXT NOT NULL,"
	      "  answer TEXT,"
	      "  status TEXT NOT NULL CHECK (status IN ('ok', 'error')),"
	      "  error TEXT,"
	      "  input_tokens INTEGER,"
	      "  output_tokens INTEGER,"
	      "  cost REAL,"
	      "  ms REAL,"
	      "  attempts INTEGER,"
	      "  meta TEXT,"
	      "  created TEXT NOT NULL,"
	      "  PRIMARY KEY (session, round, seq));",
	/* 4: what `kctl resume --set` changed in a session's spec, and when */
	[4] = "CREATE TABLE IF NOT EXISTS settings ("
	      "  session TEXT NOT NULL REFERENCES sessions(id),"
	      "  seq INTEGER NOT NULL CHECK (seq >= 1),"
	      "  key TEXT NOT NULL,"
	      "  value TEXT NOT NULL,"
	      "  was TEXT,"
	      "  created TEXT NOT NULL,"
	      "  PRIMARY KEY (session, seq));",
	/* 5: the round budget of `kctl start/resume --rounds N` (NULL: the spec's) */
	[5] = "ALTER TABLE sessions ADD COLUMN rounds_cap INTEGER CHECK (rounds_cap >= 1);",
	/* 6: what a session posts to its GitHub tracking issue, queued until it is sent */
	[6] = "CREATE TABLE IF NOT EXISTS github_posts ("
	      "  session TEXT NOT NULL REFERENCES sessions(id),"
	      "  seq INTEGER NOT NULL CHECK (seq >= 1),"
	      "  kind TEXT NOT NULL CHECK (kind IN ('open', 'comment', 'close')),"
	      "  round INTEGER,"
	      "  title TEXT,"
	      "  body TEXT NOT NULL,"
	      "  state TEXT NOT NULL CHECK (state IN ('pending', 'sent', 'dropped')),"
	      "  attempts INTEGER NOT NULL DEFAULT 0,"
	      "  error TEXT,"
	      "  issue INTEGER,"
	      "  comment INTEGER,"
	      "  created TEXT NOT NULL,"
	      "  updated TEXT NOT NULL,"
	      "  PRIMARY KEY (session, seq));",
	/* 7: the result cache's key of a result taken from it (cache-use.h), else NULL */
	[7] = "ALTER TABLE results ADD COLUMN cache_key TEXT;",
};

_Static_assert(sizeof(migrations) / sizeof(migrations[0]) == STORE_VERSION + 1,
	       "one migration per schema version");

/* --- open, close, transactions ----------------------------------------- */

/* The connection settings: WAL so readers never block the writer, FULL
 * sync so a commit survives power loss as well as kill -9, foreign keys. */
static int configure(struct store *st)
{
	sqlite3_stmt *s = NULL;
	int rc;

	sqlite3_extended_result_codes(st->db, 1);
	if (sqlite3_busy_timeout(st->db, STORE_BUSY_MS) != SQLITE_OK)
		return sq_note_db(st);
	rc = sq_prepare(st, &s, "PRAGMA journal_mode = WAL", "");
	if (!rc) {
		if (sqlite3_step(s) != SQLITE_ROW)
			rc = sq_note_db(st);
		else if (strcmp((const char *)sqlite3_column_text(s, 0), "wal"))
			rc = sq_note(st, KERR_IO, "cannot use WAL mode (journal mode is '%s')",
				     (const char *)sqlite3_column_text(s, 0));
	}
	sqlite3_finalize(s);
	if (!rc)
		rc = sq_db_exec(st, "PRAGMA synchronous = FULL");
	if (!rc)
		rc = sq_db_exec(st, "PRAGMA foreign_keys = ON");
	return rc;
}

/* KERR_INVALID (noted) for a schema version no migration leads from, else 0. */
static int version_refused(struct store *st, int64_t version)
{
	if (version > STORE_VERSION)
		return sq_note(st, KERR_INVALID,
			       "schema version %lld is newer than this kctl's %d; use a newer kctl",
			       (long long)version, STORE_VERSION);
	if (version < 0)
		return sq_note(st, KERR_INVALID, "unknown schema version %lld", (long long)version);
	return 0;
}

/* Inside the open transaction: applies the migrations above the file's version. */
static int migrate_locked(struct store *st)
{
	int64_t version = 0;
	char sql[64];
	int rc;

	rc = sq_query_int(st, &version, "PRAGMA user_version", "");
	if (rc < 0)
		return rc;
	if ((rc = version_refused(st, version)))
		return rc;
	if (version == STORE_VERSION)
		return 0;
	for (int64_t v = version + 1; v <= STORE_VERSION; v++) {
		rc = sq_db_exec(st, migrations[v]);
		if (rc)
			return sq_note(st, rc, "migrating to version %lld: %.400s", (long long)v,
				       sqlite3_errmsg(st->db));
	}
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", STORE_VERSION);
	return sq_db_exec(st, sql);
}

static int migrate(struct store *st)
{
	int rc = sq_db_exec(st, "BEGIN IMMEDIATE");

	if (rc)
		return rc;
	rc = migrate_locked(st);
	if (!rc)
		rc = sq_db_exec(st, "COMMIT");
	if (rc)
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/* The folder holding path ("." for a bare name); a new string. */
static char *folder_of(const char *path)
{
	char *dir = xstrdup(path), *slash = strrchr(dir, '/');

	if (!slash) {
		free(dir);
		return xstrdup(".");
	}
	*(slash == dir ? slash + 1 : slash) = '\0';
	return dir;
}

/*
 * "; its file system is full (N KiB free)" when the folder holding path
 * has next to no room, else "".
 */
static void full_note(const char *path, char *out, size_t n)
{
	char *dir = folder_of(path);
	struct statvfs vfs;
	unsigned long long avail;

	out[0] = '\0';
	if (!statvfs(dir, &vfs)) {
		avail = (unsigned long long)vfs.f_bavail * vfs.f_frsize;
		if (avail < (1ull << 20))
			snprintf(out, n, "; its file system is full (%llu KiB free)", avail >> 10);
	}
	free(dir);
}

/* The end of an open: st to *out, or on failure (rc) closed, msg saying so. */
static int opened(struct store *st, int rc, struct store **out, char *msg, size_t n,
		  const char *how)
{
	if (rc) {
		sq_fail(st, rc, msg, n, "opening store '%s'%s", st->path, how);
		store_close(st);
		return rc;
	}
	*out = st;
	return 0;
}

/* 1 when path exists and this user cannot write it or the folder holding it. */
static int write_denied(const char *path)
{
	char *dir = folder_of(path);
	int denied = !access(path, F_OK) && (access(path, W_OK) || access(dir, W_OK));

	free(dir);
	return denied;
}

/*
 * PRAGMA quick_check: a damaged file is refused before anything reads it as
 * if it were whole (a damaged page must never look like "no rows").  An
 * error reading it (a full disk, where SQLite cannot size its shared-memory
 * file: "disk I/O error"; permissions) is not damage and is not called so.
 */
static int check_whole(struct store *st)
{
	sqlite3_stmt *s = NULL;
	const char *line;
	int rc = sqlite3_busy_timeout(st->db, STORE_BUSY_MS) != SQLITE_OK
			 ? sq_note_db(st)
			 : sq_prepare(st, &s, "PRAGMA quick_check(5)", "");
	int step = rc ? SQLITE_ERROR : sqlite3_step(s), busy, code, answered = 0;

	if (!rc && step == SQLITE_ROW) {
		line = (const char *)sqlite3_column_text(s, 0);
		answered = 1;
		if (!line || strcmp(line, "ok"))
			rc = sq_note(st, KERR_IO, "%.200s", line ? line : "(no answer)");
	} else if (!rc) {
		rc = sq_note_db(st);
	}
	sqlite3_finalize(s);
	/* a lock held past the busy timeout is not damage: say what it is */
	code = sqlite3_errcode(st->db) & 0xff;
	busy = code == SQLITE_BUSY || code == SQLITE_LOCKED;
	if (rc && !busy && !answered && code != SQLITE_CORRUPT && code != SQLITE_NOTADB) {
		char why[256], full[96];

		strlcpy(why, st->err, sizeof(why));
		full_note(st->path, full, sizeof(full));
		if (write_denied(st->path))
			rc = sq_note(
				st, KERR_IO,
				"cannot use the database: %s.  It was not found damaged: this "
				"user may not write '%.200s' or its folder, and this command "
				"writes to it (status, show, report, export and brief only read "
				"it, and do so as it is); run it as the user who owns the file, "
				"or make the file and its folder writable",
				why, st->path);
		else
			rc = sq_note(
				st, KERR_IO,
				"cannot read the database: %s%s.  It was not found damaged: "
				"free some space, or make '%.200s' and its folder readable and "
				"writable, and run the command again",
				why, full, st->path);
	} else if (rc && !busy) {
		char why[256];

		strlcpy(why, st->err, sizeof(why));
		/* quick_check's answer spans lines; the message is one */
		for (char *p = why; (p = strchr(p, '\n'));)
			*p = ' ';
		rc = sq_note(st, KERR_IO,
			     "the database is damaged (PRAGMA quick_check: %s); kctl does not "
			     "use it.  Inspect it with: sqlite3 '%.200s' 'PRAGMA integrity_check'; "
			     "recover what is readable, after keeping a copy, with: sqlite3 "
			     "'%.200s' .recover | sqlite3 NEW.db, then use --state NEW.db",
			     why, st->path, st->path);
	}
	return rc;
}

/*
 * A new database appears whole or not at all: it is made under a temporary
 * name beside path (its schema written, its WAL checkpointed into it), then
 * linked to path.  Another kctl that finds path meanwhile finds either
 * nothing or a whole database, never the 0-byte file SQLite starts with,
 * which open_flags must refuse as a truncated database.  When another kctl
 * linked its own first (EEXIST), that one is used.  A temporary file left by
 * a kctl killed before the link is named PATH.new-PID-XXXXXX.
 */
static int create_whole(struct store *st)
{
	char *tmp = xasprintf("%s.new-%ld-XXXXXX", st->path, (long)getpid());
	char *dir = xstrdup(st->path), *slash;
	int fd = mkstemp(tmp), rc = 0, dfd;

	if (fd < 0) {
		rc = sq_note(st, KERR_IO, "creating '%s': %s", tmp, strerror(errno));
		goto out;
	}
	close(fd);
	if (sqlite3_open_v2(tmp, &st->db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
		rc = st->db ? sq_note_db(st) : sq_note(st, KERR_IO, "out of memory");
	if (!rc)
		rc = configure(st);
	if (!rc)
		rc = migrate(st);
	/* the last connection's close checkpoints the WAL into the file and removes it */
	if (sqlite3_close(st->db) != SQLITE_OK && !rc)
		rc = sq_note(st, KERR_IO, "closing '%s'", tmp);
	st->db = NULL;
	if (!rc && link(tmp, st->path) && errno != EEXIST)
		rc = sq_note(st, KERR_IO, "linking '%s' to '%s': %s", tmp, st->path,
			     strerror(errno));
	unlink(tmp);
	if (!rc) {
		/* the new name is durable before anything is recorded under it */
		slash = strrchr(dir, '/');
		if (slash)
			*(slash == dir ? slash + 1 : slash) = '\0';
		dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
	}
out:
	free(dir);
	free(tmp);
	return rc;
}

/*
 * How to open path: a file that does not exist is created whole
 * (create_whole); an existing empty one is refused (a truncated database is
 * not a new one).
 */
static int open_flags(struct store *st, int *flags)
{
	struct stat sb;
	int rc;

	*flags = SQLITE_OPEN_READWRITE;
	if (stat(st->path, &sb)) {
		if (errno != ENOENT)
			return sq_note(st, KERR_IO, "%s", strerror(errno));
		rc = create_whole(st);
		if (rc || stat(st->path, &sb))
			return rc ? rc : sq_note(st, KERR_IO, "%s", strerror(errno));
	}
	if (S_ISREG(sb.st_mode) && sb.st_size == 0)
		return sq_note(st, KERR_INVALID,
			       "the file is empty (0 bytes), not a kctl database: a new database "
			       "is created only where no file exists.  If it was truncated, "
			       "restore it from a copy; to start afresh, remove it");
	return 0;
}

/*
 * path as an SQLite URI with query: "file:" and path, its characters other
 * than letters, digits, "/-._~" percent-encoded ("?", "#" and "%" would
 * otherwise end or change it).  Returns a new string.
 */
static char *file_uri(const char *path, const char *query)
{
	size_t len = strlen(path), at = 5;
	char *uri = xmalloc(5 + 3 * len + 1 + strlen(query) + 1);

	memcpy(uri, "file:", 5);
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if (isalnum(*p) || strchr("/-._~", *p))
			uri[at++] = (char)*p;
		else
			at += (size_t)snprintf(uri + at, 4, "%%%02X", *p);
	}
	uri[at++] = '?';
	memcpy(uri + at, query, strlen(query) + 1);
	return uri;
}

/*
 * The read-only open of store_open_read: where a writer has the file open
 * (its -wal file exists), through SQLite's read-only WAL access; where none
 * has, as immutable, which needs no -shm file and so no write to the folder.
 * A file of an older schema is refused: migrating it means writing it.
 */
static int open_readonly(struct store *st)
{
	char *wal = xasprintf("%s-wal", st->path);
	char *uri = file_uri(st->path, access(wal, F_OK) ? "immutable=1" : "mode=ro");
	int64_t version = 0;
	int rc = 0, got;

	if (sqlite3_open_v2(uri, &st->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) !=
	    SQLITE_OK)
		rc = st->db ? sq_note_db(st) : sq_note(st, KERR_IO, "out of memory");
	free(uri);
	free(wal);
	if (!rc)
		sqlite3_extended_result_codes(st->db, 1);
	if (!rc)
		rc = check_whole(st);
	if (!rc && (got = sq_query_int(st, &version, "PRAGMA user_version", "")) < 0)
		rc = got;
	if (!rc)
		rc = version_refused(st, version);
	if (!rc && version != STORE_VERSION)
		rc = sq_note(st, KERR_INVALID,
			     "it cannot be written by this user, and its schema (version %lld) "
			     "is older than this kctl's (%d): opening it once where it can be "
			     "written upgrades it (or copy it to a folder of yours and use "
			     "--state COPY)",
			     (long long)version, STORE_VERSION);
	return rc;
}

int store_open_read(const char *path, struct store **out, char *msg, size_t n)
{
	struct store *st;

	if (!*path || !write_denied(path))
		return store_open(path, out, msg, n);
	st = xcalloc(1, sizeof(*st));
	st->path = xstrdup(path);
	*out = NULL;
	return opened(st, open_readonly(st), out, msg, n, " read-only");
}

int store_open(const char *path, struct store **out, char *msg, size_t n)
{
	struct store *st = xcalloc(1, sizeof(*st));
	int rc = 0, flags = 0;

	*out = NULL;
	st->path = xstrdup(path);
	/* SQLite would open "" as a private temporary database, gone at exit */
	rc = *path ? open_flags(st, &flags) : sq_note(st, KERR_IO, "the path is empty");
	if (!rc && sqlite3_open_v2(path, &st->db, flags, NULL) != SQLITE_OK)
		rc = st->db ? sq_note_db(st) : sq_note(st, KERR_IO, "out of memory");
	if (!rc)
		rc = check_whole(st);
	if (!rc)
		rc = configure(st);
	if (!rc)
		rc = migrate(st);
	return opened(st, rc, out, msg, n, "");
}

void store_close(struct store *st)
{
	if (!st)
		return;
	sqlite3_close(st->db);
	free(st->path);
	free(st);
}

int store_begin(struct store *st, char *msg, size_t n)
{
	int rc = sq_db_exec(st, "BEGIN IMMEDIATE");

	return rc ? sq_fail(st, rc, msg, n, "beginning a transaction in '%s'", st->path) : 0;
}

int store_commit(struct store *st, char *msg, size_t n)
{
	int rc;

	if (st->read_failed)
		return kerr_set(msg, n, KERR_IO,
				"not committing to '%s': a read from it failed: %s", st->path,
				st->read_err);
	rc = sq_db_exec(st, "COMMIT");

	return rc ? sq_fail(st, rc, msg, n, "committing to '%s'", st->path) : 0;
}

int store_check(struct store *st, char *msg, size_t n)
{
	if (!st->read_failed)
		return 0;
	return kerr_set(msg, n, KERR_IO, "reading the state database '%s': %s", st->path,
			st->read_err);
}

void store_rollback(struct store *st)
{
	if (!sqlite3_get_autocommit(st->db))
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
}
