/*
 * store.c - the session state in SQLite; see store.h for the contract.
 *
 * Every statement is prepared with bound parameters and finalized before
 * its function returns.  The only SQL built with snprintf is the PRAGMA
 * that writes user_version: PRAGMAs take no parameters, and the value is
 * the compile-time STORE_VERSION, never input.
 *
 * Errors: a helper that talks to SQLite records the reason in st->err
 * (sqlite3_errmsg, or our own text) and returns the project code; the
 * exported function then adds what it was doing, so messages read
 *   recording variant 'r01-v002': UNIQUE constraint failed: variants.session, variants.hash
 */
#include "store.h"
#include "store-internal.h"
#include "err.h"
#include "jsonx.h"
#include "xalloc.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

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
};

_Static_assert(sizeof(migrations) / sizeof(migrations[0]) == STORE_VERSION + 1,
	       "one migration per schema version");

static const char *const session_states[] = { "running",   "paused", "done",
					      "cancelled", "failed", NULL };

static const char *const round_state_names[] = {
	[ROUND_PROPOSED] = "proposed",   [ROUND_PACKED] = "packed", [ROUND_RUNNING] = "running",
	[ROUND_COLLECTED] = "collected", [ROUND_DONE] = "done",
};

/* --- errors ------------------------------------------------------------ */

/* Records the connection's last error; returns KERR_INVALID for a violated
 * constraint (the caller's data is wrong), KERR_IO for anything else. */
int sq_note_db(struct store *st)
{
	int code = sqlite3_extended_errcode(st->db) & 0xff;

	strlcpy(st->err, sqlite3_errmsg(st->db), sizeof(st->err));
	return code == SQLITE_CONSTRAINT ? KERR_INVALID : KERR_IO;
}

static int remember_read(struct store *st);

/*
 * A read failed: records the reason as sq_note_db does and keeps the first
 * such reason for store_check and store_commit.  Returns KERR_IO.
 */
int sq_note_read(struct store *st)
{
	sq_note_db(st);
	return remember_read(st);
}

/* Keeps the reason just noted as the first failed read; returns KERR_IO. */
static int remember_read(struct store *st)
{
	if (!st->read_failed) {
		st->read_failed = 1;
		strlcpy(st->read_err, st->err, sizeof(st->read_err));
	}
	return KERR_IO;
}

/* A row was read but one of its columns cannot be given back (its JSON). */
static void note_bad_row(struct store *st, sqlite3_stmt *s)
{
	sq_note(st, KERR_IO, "a stored JSON value cannot be read back (%.200s)",
		sqlite3_sql(s) ? sqlite3_sql(s) : "?");
	remember_read(st);
}

/* Records our own reason for a failure and returns code. */
int sq_note(struct store *st, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st->err, sizeof(st->err), fmt, ap);
	va_end(ap);
	return code;
}

/* Formats "<what>: <recorded reason>" into msg and returns code. */
int sq_fail(struct store *st, int code, char *msg, size_t n, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return kerr_set(msg, n, code, "%s: %s", what, st->err);
}

/* --- statements -------------------------------------------------------- */

/*
 * Prepares sql and binds parameters 1.. from fmt, one letter each:
 *   t  const char *      text, NULL binds NULL
 *   i  int
 *   I  int64_t
 *   n  const int64_t *   NULL binds NULL
 *   D  const double *    NULL or not finite binds NULL
 * Returns 0 with *out to finalize, or a code with the reason noted and
 * *out NULL.
 */
int sq_prepare_va(struct store *st, sqlite3_stmt **out, const char *sql, const char *fmt,
		  va_list ap)
{
	sqlite3_stmt *s = NULL;
	int rc = SQLITE_OK, code = 0;

	*out = NULL;
	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
		return sq_note_db(st);
	for (int i = 0; fmt[i] && rc == SQLITE_OK; i++) {
		const char *t;
		const int64_t *pn;
		const double *pd;

		switch (fmt[i]) {
		case 't':
			t = va_arg(ap, const char *);
			rc = t ? sqlite3_bind_text(s, i + 1, t, -1, SQLITE_TRANSIENT)
			       : sqlite3_bind_null(s, i + 1);
			break;
		case 'i': rc = sqlite3_bind_int(s, i + 1, va_arg(ap, int)); break;
		case 'I': rc = sqlite3_bind_int64(s, i + 1, va_arg(ap, int64_t)); break;
		case 'n':
			pn = va_arg(ap, const int64_t *);
			rc = pn ? sqlite3_bind_int64(s, i + 1, *pn) : sqlite3_bind_null(s, i + 1);
			break;
		case 'D':
			pd = va_arg(ap, const double *);
			rc = pd && isfinite(*pd) ? sqlite3_bind_double(s, i + 1, *pd)
						 : sqlite3_bind_null(s, i + 1);
			break;
		default: rc = SQLITE_MISUSE; break;
		}
	}
	if (rc != SQLITE_OK) {
		code = rc == SQLITE_MISUSE ? sq_note(st, KERR_IO, "internal: bad parameter format")
					   : sq_note_db(st);
		sqlite3_finalize(s);
		return code;
	}
	*out = s;
	return 0;
}

int sq_prepare(struct store *st, sqlite3_stmt **out, const char *sql, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = sq_prepare_va(st, out, sql, fmt, ap);
	va_end(ap);
	return rc;
}

/*
 * Steps a writing statement to its end.  Writes belong to the caller's
 * transaction, so one outside any is refused.  When absent is not NULL a
 * statement that changed no row fails with KERR_NOTFOUND and that reason.
 * When row is not NULL, the first column of the row the statement returns
 * (its RETURNING clause) is stored there.  Returns 0 or a code with the reason noted.
 */
int sq_step_write(struct store *st, sqlite3_stmt *s, const char *absent, int64_t *row)
{
	int rc;

	if (sqlite3_get_autocommit(st->db))
		return sq_note(st, KERR_INVALID,
			       "no transaction is open (writes go between store_begin and "
			       "store_commit)");
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		if (row)
			*row = sqlite3_column_int64(s, 0);
	if (rc != SQLITE_DONE)
		return sq_note_db(st);
	if (absent && sqlite3_changes(st->db) == 0)
		return sq_note(st, KERR_NOTFOUND, "%s", absent);
	return 0;
}

/* Prepares, binds, steps and finalizes one writing statement; see step_write. */
int sq_db_write(struct store *st, const char *absent, const char *sql, const char *fmt, ...)
{
	sqlite3_stmt *s = NULL;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = sq_prepare_va(st, &s, sql, fmt, ap);
	va_end(ap);
	if (!rc)
		rc = sq_step_write(st, s, absent, NULL);
	sqlite3_finalize(s);
	return rc;
}

/*
 * Runs a query whose first column is an integer.  Returns 1 with *out set
 * when there is a row, 0 when there is none, a negative code on failure.
 */
int sq_query_int(struct store *st, int64_t *out, const char *sql, const char *fmt, ...)
{
	sqlite3_stmt *s = NULL;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = sq_prepare_va(st, &s, sql, fmt, ap);
	va_end(ap);
	if (rc)
		return remember_read(st);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*out = sqlite3_column_int64(s, 0);
		rc = 1;
	} else if (rc == SQLITE_DONE) {
		rc = 0;
	} else {
		rc = sq_note_read(st);
	}
	sqlite3_finalize(s);
	return rc;
}

/* --- rows as JSON ------------------------------------------------------ */

/* A row's column as a new JSON value; NULL for text that is not UTF-8 or a blob. */
static json_t *sq_column_json(sqlite3_stmt *s, int i)
{
	const char *text;
	double d;

	switch (sqlite3_column_type(s, i)) {
	case SQLITE_INTEGER: return json_integer(sqlite3_column_int64(s, i));
	case SQLITE_FLOAT:
		d = sqlite3_column_double(s, i);
		return isfinite(d) ? json_real(d) : json_null();
	case SQLITE_TEXT:
		/* text first, then its length, as sqlite3_column_bytes() asks */
		text = (const char *)sqlite3_column_text(s, i);
		return json_stringn(text, (size_t)sqlite3_column_bytes(s, i));
	case SQLITE_NULL: return json_null();
	default: return NULL;
	}
}

/* The current row as a new object keyed by the column names, or NULL. */
static json_t *sq_row_json(sqlite3_stmt *s, row_fix fix)
{
	json_t *row = json_object();
	int ncol = sqlite3_column_count(s);

	for (int i = 0; i < ncol; i++) {
		json_t *v = sq_column_json(s, i);

		if (!v || json_object_set_new(row, sqlite3_column_name(s, i), v)) {
			json_decref(row);
			return NULL;
		}
	}
	if (fix && fix(row)) {
		json_decref(row);
		return NULL;
	}
	return row;
}

static json_t *sq_query_rows_va(struct store *st, row_fix fix, const char *sql, const char *fmt,
				va_list ap)
{
	sqlite3_stmt *s = NULL;
	json_t *rows = NULL, *row;
	int rc;

	if (sq_prepare_va(st, &s, sql, fmt, ap)) {
		remember_read(st);
		return NULL;
	}
	rows = json_array();
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		row = sq_row_json(s, fix);
		if (!row)
			break;
		json_array_append_new(rows, row);
	}
	if (rc != SQLITE_DONE) {
		if (rc != SQLITE_ROW)
			sq_note_read(st);
		else
			note_bad_row(st, s);
		json_decref(rows);
		rows = NULL;
	}
	sqlite3_finalize(s);
	return rows;
}

/* Every row of a query as a new JSON array of objects; NULL on failure. */
json_t *sq_query_rows(struct store *st, row_fix fix, const char *sql, const char *fmt, ...)
{
	va_list ap;
	json_t *rows;

	va_start(ap, fmt);
	rows = sq_query_rows_va(st, fix, sql, fmt, ap);
	va_end(ap);
	return rows;
}

/* The first row of a query as a new object; NULL when none or on failure. */
json_t *sq_query_one(struct store *st, row_fix fix, const char *sql, const char *fmt, ...)
{
	va_list ap;
	json_t *rows, *row;

	va_start(ap, fmt);
	rows = sq_query_rows_va(st, fix, sql, fmt, ap);
	va_end(ap);
	row = json_incref(json_array_get(rows, 0));
	json_decref(rows);
	return row;
}

/* Parses JSON text read back from the store; NULL when unreadable or too large. */
json_t *sq_doc_parse(const char *text)
{
	size_t len = text ? strlen(text) : 0;

	if (!text || len > STORE_DOC_MAX)
		return NULL;
	return json_loadb(text, len, JSON_DECODE_ANY, NULL);
}

/* Dumps v for storing (compact, sorted keys) into *out, malloc'd.  Fails,
 * noted, when v cannot be serialised or is larger than STORE_DOC_MAX. */
int sq_doc_dump(struct store *st, const json_t *v, char **out)
{
	char *text = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);

	*out = NULL;
	if (!text)
		return sq_note(st, KERR_INVALID, "cannot serialise the JSON value");
	if (strlen(text) > STORE_DOC_MAX) {
		free(text);
		return sq_note(st, KERR_LIMIT, "the JSON text is larger than the limit of %u bytes",
			       STORE_DOC_MAX);
	}
	*out = text;
	return 0;
}

/* --- open, close, transactions ----------------------------------------- */

/* Runs one parameterless statement (PRAGMA, BEGIN...); returns 0 or a code. */
int sq_db_exec(struct store *st, const char *sql)
{
	return sqlite3_exec(st->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : sq_note_db(st);
}

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

/* Inside the open transaction: applies the migrations above the file's version. */
static int migrate_locked(struct store *st)
{
	int64_t version = 0;
	char sql[64];
	int rc;

	rc = sq_query_int(st, &version, "PRAGMA user_version", "");
	if (rc < 0)
		return rc;
	if (version > STORE_VERSION)
		return sq_note(st, KERR_INVALID,
			       "schema version %lld is newer than this kctl's %d; use a newer kctl",
			       (long long)version, STORE_VERSION);
	if (version < 0)
		return sq_note(st, KERR_INVALID, "unknown schema version %lld", (long long)version);
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

/*
 * PRAGMA quick_check: a damaged file is refused before anything reads it as
 * if it were whole (a damaged page must never look like "no rows").
 */
static int check_whole(struct store *st)
{
	sqlite3_stmt *s = NULL;
	const char *line;
	int rc = sqlite3_busy_timeout(st->db, STORE_BUSY_MS) != SQLITE_OK
			 ? sq_note_db(st)
			 : sq_prepare(st, &s, "PRAGMA quick_check(5)", "");
	int step = rc ? SQLITE_ERROR : sqlite3_step(s), busy;

	if (!rc && step == SQLITE_ROW) {
		line = (const char *)sqlite3_column_text(s, 0);
		if (!line || strcmp(line, "ok"))
			rc = sq_note(st, KERR_IO, "%.200s", line ? line : "(no answer)");
	} else if (!rc) {
		rc = sq_note_db(st);
	}
	sqlite3_finalize(s);
	/* a lock held past the busy timeout is not damage: say what it is */
	busy = (sqlite3_errcode(st->db) & 0xff) == SQLITE_BUSY ||
	       (sqlite3_errcode(st->db) & 0xff) == SQLITE_LOCKED;
	if (rc && !busy) {
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
 * How to open path: a file that does not exist is created; an existing
 * empty one is refused (a truncated database is not a new one).
 */
static int open_flags(struct store *st, int *flags)
{
	struct stat sb;

	*flags = SQLITE_OPEN_READWRITE;
	if (stat(st->path, &sb)) {
		if (errno != ENOENT)
			return sq_note(st, KERR_IO, "%s", strerror(errno));
		*flags |= SQLITE_OPEN_CREATE;
		return 0;
	}
	if (S_ISREG(sb.st_mode) && sb.st_size == 0)
		return sq_note(st, KERR_INVALID,
			       "the file is empty (0 bytes), not a kctl database: a new database "
			       "is created only where no file exists.  If it was truncated, "
			       "restore it from a copy; to start afresh, remove it");
	return 0;
}

int store_open(const char *path, struct store **out, char *msg, size_t n)
{
	struct store *st = xcalloc(1, sizeof(*st));
	int rc = 0, flags = 0;

	*out = NULL;
	st->path = xstrdup(path);
	rc = open_flags(st, &flags);
	if (!rc && sqlite3_open_v2(path, &st->db, flags, NULL) != SQLITE_OK)
		rc = st->db ? sq_note_db(st) : sq_note(st, KERR_IO, "out of memory");
	if (!rc && !(flags & SQLITE_OPEN_CREATE))
		rc = check_whole(st);
	if (!rc)
		rc = configure(st);
	if (!rc)
		rc = migrate(st);
	if (rc) {
		sq_fail(st, rc, msg, n, "opening store '%s'", path);
		store_close(st);
		return rc;
	}
	*out = st;
	return 0;
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

/* --- variants ---------------------------------------------------------- */

/* An optional member that may also be null; *out stays NULL then. */
static int opt_member(json_t *v, const char *key, int want, json_t **out, char *msg, size_t n)
{
	json_t *m = json_object_get(v, key);
	static const char *const want_names[] = {
		[JSON_STRING] = "a string",
		[JSON_INTEGER] = "an integer",
		[JSON_OBJECT] = "an object",
		[JSON_ARRAY] = "an array",
	};

	*out = NULL;
	if (!m || json_is_null(m))
		return 0;
	if (json_typeof(m) != (json_type)want)
		return kerr_set(msg, n, KERR_PARSE, "$.%s: expected %s, got %s", key,
				want_names[want], jx_type_name(m));
	*out = m;
	return 0;
}

/* The checked members of a variant object, borrowed from it. */
struct variant_in {
	json_t *id, *hash, *round, *parent, *lineage, *source, *options, *params, *rationale;
	json_t *origin, *tunables;
};

static int variant_read(json_t *v, struct variant_in *in, char *msg, size_t n)
{
	const struct {
		const char *key;
		int type, required;
		json_t **out;
	} members[] = {
		{ "id", JSON_STRING, 1, &in->id },
		{ "hash", JSON_STRING, 1, &in->hash },
		{ "round", JSON_INTEGER, 1, &in->round },
		{ "parent", JSON_STRING, 0, &in->parent },
		{ "lineage", JSON_INTEGER, 0, &in->lineage },
		{ "source", JSON_STRING, 1, &in->source },
		{ "options", JSON_STRING, 0, &in->options },
		{ "params", JSON_OBJECT, 0, &in->params },
		{ "rationale", JSON_STRING, 0, &in->rationale },
		{ "origin", JSON_STRING, 0, &in->origin },
		{ "tunables", JSON_ARRAY, 0, &in->tunables },
	};
	const size_t nmembers = sizeof(members) / sizeof(members[0]);
	const char *key;
	json_t *m;
	int rc = 0;

	if (!json_is_object(v))
		return kerr_set(msg, n, KERR_PARSE, "$: expected an object, got %s",
				v ? jx_type_name(v) : "nothing");
	for (size_t i = 0; !rc && i < nmembers; i++) {
		rc = opt_member(v, members[i].key, members[i].type, members[i].out, msg, n);
		if (!rc && members[i].required && !*members[i].out)
			rc = kerr_set(msg, n, KERR_PARSE, "$.%s: required key is missing",
				      members[i].key);
	}
	json_object_foreach (v, key, m) {
		size_t i = 0;

		while (i < nmembers && strcmp(members[i].key, key))
			i++;
		if (!rc && i == nmembers)
			rc = kerr_set(msg, n, KERR_PARSE, "$.%s: unknown key", key);
	}
	if (!rc && (json_integer_value(in->round) < 0 || json_integer_value(in->round) > INT_MAX))
		rc = kerr_set(msg, n, KERR_RANGE, "$.round: %lld is out of range",
			      (long long)json_integer_value(in->round));
	return rc;
}

static int variant_insert(struct store *st, const char *session, const struct variant_in *in)
{
	int64_t lineage = json_integer_value(in->lineage);
	char *params = NULL, *tunables = NULL;
	int rc = 0;

	if (in->params && (rc = sq_doc_dump(st, in->params, &params)))
		return rc;
	if (in->tunables && (rc = sq_doc_dump(st, in->tunables, &tunables))) {
		free(params);
		return rc;
	}
	rc = sq_db_write(st, NULL,
			 "INSERT INTO variants (session, id, hash, round, parent, lineage, source,"
			 " options, params, rationale, origin, tunables, created)"
			 " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, " NOW ")",
			 "tttItntttttt", session, json_string_value(in->id),
			 json_string_value(in->hash), (int64_t)json_integer_value(in->round),
			 json_string_value(in->parent), in->lineage ? &lineage : NULL,
			 json_string_value(in->source),
			 in->options ? json_string_value(in->options) : "", params,
			 json_string_value(in->rationale), json_string_value(in->origin), tunables);
	free(params);
	free(tunables);
	return rc;
}

int store_variant_add(struct store *st, const char *session, json_t *v, char *msg, size_t n)
{
	struct variant_in in = { 0 };
	char why[512];
	int rc = variant_read(v, &in, why, sizeof(why));

	if (rc) {
		if (in.id)
			return kerr_set(msg, n, rc, "recording variant '%s': %s",
					json_string_value(in.id), why);
		return kerr_set(msg, n, rc, "recording a variant: %s", why);
	}
	rc = variant_insert(st, session, &in);
	return rc ? sq_fail(st, rc, msg, n, "recording variant '%s'", json_string_value(in.id)) : 0;
}

int store_variant_has_hash(struct store *st, const char *session, const char *hash)
{
	int64_t one = 0;

	return sq_query_int(st, &one, "SELECT 1 FROM variants WHERE session = ?1 AND hash = ?2",
			    "tt", session, hash);
}

/* params is stored as JSON text; callers get the object back. */
static int variant_fix(json_t *row)
{
	static const char *const docs[] = { "params", "tunables" };

	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		json_t *text = json_object_get(row, docs[i]), *doc;

		if (!json_is_string(text))
			continue;
		doc = sq_doc_parse(json_string_value(text));
		if (!doc || json_object_set_new(row, docs[i], doc))
			return -1;
	}
	return 0;
}

#define VARIANT_SELECT(source)                                                                     \
	"SELECT v.id AS id, v.hash AS hash, v.round AS round, v.parent AS parent,"                 \
	" v.lineage AS lineage, " source " AS source, v.options AS options, v.params AS params,"   \
	" v.rationale AS rationale, v.origin AS origin, v.tunables AS tunables,"                   \
	" v.created AS created, r.status AS status,"                                               \
	" r.speedup_ref AS speedup_ref, r.speedup_base AS speedup_base, r.median_ms AS median_ms," \
	" r.gflops AS gflops, r.gbs AS gbs, r.bottleneck AS bottleneck,"                           \
	" json_extract(r.json, '$.fault.kind') AS fault_kind,"                                     \
	" json_extract(r.json, '$.performance.robust_cv') AS robust_cv,"                           \
	" json_extract(r.json, '$.performance.quality') AS quality"                                \
	" FROM variants v LEFT JOIN results r ON r.session = v.session AND r.variant = v.id "
#define VARIANT_COLUMNS VARIANT_SELECT("v.source")
/* Sources only where there are no parameters to tell the variant by. */
#define VARIANT_BRIEF VARIANT_SELECT("CASE WHEN v.params IS NULL THEN v.source END")

json_t *store_variants(struct store *st, const char *session, int round)
{
	return sq_query_rows(st, variant_fix,
			     VARIANT_COLUMNS "WHERE v.session = ?1 AND (?2 < 0 OR v.round = ?2)"
					     " ORDER BY v.round, v.rowid",
			     "ti", session, round);
}

json_t *store_variants_brief(struct store *st, const char *session, int round)
{
	return sq_query_rows(st, variant_fix,
			     VARIANT_BRIEF "WHERE v.session = ?1 AND (?2 < 0 OR v.round = ?2)"
					   " ORDER BY v.round, v.rowid",
			     "ti", session, round);
}

json_t *store_variant_get(struct store *st, const char *session, const char *id)
{
	return sq_query_one(st, variant_fix, VARIANT_COLUMNS "WHERE v.session = ?1 AND v.id = ?2",
			    "tt", session, id);
}

int store_variant_set_lineage(struct store *st, const char *session, const char *id, int lineage,
			      char *msg, size_t n)
{
	int rc = sq_db_write(st, "no such variant",
			     "UPDATE variants SET lineage = ?3 WHERE session = ?1 AND id = ?2",
			     "tti", session, id, lineage);

	return rc ? sq_fail(st, rc, msg, n, "setting the lineage of variant '%s'", id) : 0;
}

/* --- results ----------------------------------------------------------- */

/* The ranked figures of a result document, in the order of the INSERT's ?3.. */
static const struct figure {
	const char *path; /* for messages */
	const char *keys[4];
	int text;
} figures[] = {
	{ "status", { "status" }, 1 },
	{ "performance.speedup_vs_reference.ratio_of_medians",
	  { "performance", "speedup_vs_reference", "ratio_of_medians" },
	  0 },
	{ "performance.speedup_vs_baseline.ratio_of_medians",
	  { "performance", "speedup_vs_baseline", "ratio_of_medians" },
	  0 },
	{ "performance.median_ms", { "performance", "median_ms" }, 0 },
	{ "roofline.gflops", { "roofline", "gflops" }, 0 },
	{ "roofline.gbs", { "roofline", "gbs" }, 0 },
	{ "roofline.bottleneck", { "roofline", "bottleneck" }, 1 },
};

/* Binds figure f of doc to parameter idx: NULL when it or a parent is absent or null. */
static int figure_bind(struct store *st, sqlite3_stmt *s, int idx, json_t *doc,
		       const struct figure *f)
{
	json_t *v = doc;
	int rc;

	for (size_t i = 0; f->keys[i] && v && !json_is_null(v); i++) {
		if (!json_is_object(v))
			return sq_note(st, KERR_PARSE,
				       "$.%s: expected an object on the way, got %s", f->path,
				       jx_type_name(v));
		v = json_object_get(v, f->keys[i]);
	}
	if (!v || json_is_null(v))
		rc = sqlite3_bind_null(s, idx);
	else if (f->text && json_is_string(v))
		rc = sqlite3_bind_text(s, idx, json_string_value(v), -1, SQLITE_TRANSIENT);
	else if (!f->text && json_is_number(v))
		rc = sqlite3_bind_double(s, idx, json_number_value(v));
	else
		return sq_note(st, KERR_PARSE, "$.%s: expected %s, got %s", f->path,
			       f->text ? "a string" : "a number", jx_type_name(v));
	return rc == SQLITE_OK ? 0 : sq_note_db(st);
}

static int result_insert(struct store *st, const char *session, const char *id, json_t *result)
{
	sqlite3_stmt *s = NULL;
	char *text = NULL;
	int rc;

	if (!json_is_object(result))
		return sq_note(st, KERR_PARSE, "$: expected an object, got %s",
			       result ? jx_type_name(result) : "nothing");
	rc = sq_doc_dump(st, result, &text);
	if (rc)
		return rc;
	rc = sq_prepare(st, &s,
			"INSERT INTO results (session, variant, status, speedup_ref, speedup_base,"
			" median_ms, gflops, gbs, bottleneck, json)"
			" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
			"tt", session, id);
	for (size_t i = 0; !rc && i < sizeof(figures) / sizeof(figures[0]); i++)
		rc = figure_bind(st, s, (int)i + 3, result, &figures[i]);
	if (!rc && sqlite3_bind_text(s, 10, text, -1, SQLITE_TRANSIENT) != SQLITE_OK)
		rc = sq_note_db(st);
	if (!rc)
		rc = sq_step_write(st, s, NULL, NULL);
	sqlite3_finalize(s);
	free(text);
	return rc;
}

int store_result_add(struct store *st, const char *session, const char *id, json_t *result,
		     char *msg, size_t n)
{
	int rc = result_insert(st, session, id, result);

	return rc ? sq_fail(st, rc, msg, n, "recording the result of variant '%s'", id) : 0;
}

static int result_fix(json_t *row)
{
	json_t *doc = sq_doc_parse(json_string_value(json_object_get(row, "json")));

	if (!doc)
		return -1;
	return json_object_set_new(row, "json", doc);
}

json_t *store_result_get(struct store *st, const char *session, const char *id)
{
	json_t *row =
		sq_query_one(st, result_fix,
			     "SELECT json AS json FROM results WHERE session = ?1 AND variant = ?2",
			     "tt", session, id);
	json_t *doc = json_incref(json_object_get(row, "json"));

	json_decref(row);
	return doc;
}

int store_result_count(struct store *st, const char *session)
{
	int64_t count = 0;
	int rc = sq_query_int(st, &count, "SELECT COUNT(*) FROM results WHERE session = ?1", "t",
			      session);

	if (rc < 0)
		return rc;
	return count > INT_MAX ? KERR_RANGE : (int)count;
}

/* --- lineages ---------------------------------------------------------- */

static int lineage_fix(json_t *row)
{
	json_t *active = json_object_get(row, "active");

	return json_object_set_new(row, "active", json_boolean(json_integer_value(active)));
}

json_t *store_lineages(struct store *st, const char *session)
{
	return sq_query_rows(st, lineage_fix,
			     "SELECT lineage AS lineage, best AS best, stagnation AS stagnation,"
			     " active AS active, created_round AS created_round FROM lineages"
			     " WHERE session = ?1 ORDER BY lineage",
			     "t", session);
}

int store_lineage_put(struct store *st, const char *session, int lineage, const char *best,
		      int stagnation, int active, int round, char *msg, size_t n)
{
	int rc = sq_db_write(st, NULL,
			     "INSERT INTO lineages (session, lineage, best, stagnation, active,"
			     " created_round) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
			     " ON CONFLICT (session, lineage) DO UPDATE SET best = excluded.best,"
			     " stagnation = excluded.stagnation, active = excluded.active",
			     "titiii", session, lineage, best, stagnation, active ? 1 : 0, round);

	return rc ? sq_fail(st, rc, msg, n, "recording lineage %d of session '%s'", lineage,
			    session)
		  : 0;
}
