/*
 * store-internal.h - what the files of the store share.  The layers, each
 * using only those below it:
 *   store.c          the schema, its migrations, open/close, transactions
 *   store-session.c  sessions, their settings, rounds
 *   store-variant.c  variants, results, lineages
 *   store-llm.c      learnings and the model's exchanges
 *   store-sql.c      the sq_* helpers below, used by all of the above
 *
 * Helpers that talk to SQLite record the reason of a failure in st->err
 * and return the project's code; exported functions add what they were
 * doing with sq_fail().  Statements take their parameters from a format
 * string, one letter each (see sq_prepare_va in store-sql.c).
 */
#ifndef KCTL_STORE_INTERNAL_H
#define KCTL_STORE_INTERNAL_H

#include <jansson.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdint.h>

#include "store.h"

/* Largest JSON text (a result document, a params object) stored or read back. */
#define STORE_DOC_MAX (64u << 20)

/* SQL expression for the current time, ISO-8601 UTC with milliseconds. */
#define NOW "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"

struct store {
	sqlite3 *db;
	char *path;
	char err[1024]; /* the reason of the last failure, see sq_note_db() */
	/* The first read that failed on this connection, kept until it closes:
	 * getters return NULL both for "absent" and for a failure, so this is
	 * what tells them apart (store_check) and what store_commit refuses on. */
	int read_failed;
	char read_err[512];
};

/* Rewrites columns that SQLite cannot type for us; returns 0 or -1. */
typedef int (*row_fix)(json_t *row);

int sq_note_db(struct store *st);
int sq_note_read(struct store *st);
int sq_note(struct store *st, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int sq_fail(struct store *st, int code, char *msg, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
int sq_prepare_va(struct store *st, sqlite3_stmt **out, const char *sql, const char *fmt,
		  va_list ap);
int sq_prepare(struct store *st, sqlite3_stmt **out, const char *sql, const char *fmt, ...);
int sq_step_write(struct store *st, sqlite3_stmt *s, const char *absent, int64_t *row);
int sq_db_write(struct store *st, const char *absent, const char *sql, const char *fmt, ...);
int sq_query_int(struct store *st, int64_t *out, const char *sql, const char *fmt, ...);
json_t *sq_query_rows(struct store *st, row_fix fix, const char *sql, const char *fmt, ...);
json_t *sq_query_one(struct store *st, row_fix fix, const char *sql, const char *fmt, ...);
json_t *sq_doc_parse(const char *text);
int sq_doc_dump(struct store *st, const json_t *v, char **out);
int sq_db_exec(struct store *st, const char *sql);

#endif
