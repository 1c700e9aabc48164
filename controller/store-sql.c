/*
 * store-sql.c - the helpers every file of the store talks to SQLite
 * through: recording why something failed (st->err, the first failed read),
 * preparing statements with bound parameters from a format string, reading
 * rows back as JSON, and the size-limited JSON text of stored documents.
 * Declared, with their contract, in store-internal.h.
 *
 * May use: store-internal.h (struct store), err, SQLite, Jansson; nothing
 * else of the store, so that every other store file sits above this one.
 *
 * Every statement is prepared with bound parameters.  Errors: a helper
 * records the reason in st->err (sqlite3_errmsg, or our own text) and
 * returns the project code; the exported function then adds what it was
 * doing with sq_fail(), so messages read
 *   recording variant 'r01-v002': UNIQUE constraint failed: variants.session, variants.hash
 */
#include "store-internal.h"
#include "err.h"

#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Runs one parameterless statement (PRAGMA, BEGIN...); returns 0 or a code. */
int sq_db_exec(struct store *st, const char *sql)
{
	return sqlite3_exec(st->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : sq_note_db(st);
}
