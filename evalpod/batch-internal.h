/*
 * batch-internal.h - what the three parts of the EvalBatch parser share:
 * batch.c (the document: its stages, shapes, programs, measurement,
 * correctness, limits, device, outputs, release and lookups), batch-problem.c
 * (the problem section: buffers, scalars and launch plans) and batch-read.c
 * (the typed readers both are built from).  Not for use outside them;
 * batch.h is the public interface.
 *
 * Every reader takes the JSON path of the object it reads (path) and, on
 * failure, writes "PATH.KEY: reason" into msg (n bytes) and returns a
 * negative KERR_* code; 0 on success.
 */
#ifndef EVALPOD_BATCH_INTERNAL_H
#define EVALPOD_BATCH_INTERNAL_H

#include "batch.h"
#include "arraysize.h"

#include <jansson.h>
#include <stddef.h>

#define PATH_LEN 512 /* ids and names are at most 128 bytes, so paths fit */

/* get_str flags: JX_REQUIRED, and null accepted as "absent". */
#define GS_NULLABLE 2

/* ---- batch-read.c: names and ids ---- */

enum name_kind { NK_ANY, NK_TEXT, NK_IDENT, NK_ID };

/* Checks s (found at path) against the rule of kind k. */
int check_name(const char *s, enum name_kind k, const char *path, char *msg, size_t n);

/* ---- batch-read.c: typed getters ---- */

/*
 * Formats a JSON path into p (PATH_LEN bytes).  Keys come from the document
 * and may be long; a path cut short only shortens the message.
 */
void path_fmt(char *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Reads string key into *out (a copy the caller frees, replacing any earlier
 * one) and checks it against kind.  flags: JX_REQUIRED and/or GS_NULLABLE.
 * *out is left alone when absent or null.
 */
int get_str(json_t *obj, const char *path, const char *key, int flags, enum name_kind kind,
	    char **out, char *msg, size_t n);

/* Fails unless v (an array entry at path) is an object. */
int need_object(json_t *v, const char *path, char *msg, size_t n);

/* Reads key as one of names[0..nr) into *out (its index); *out is kept when absent. */
int get_enum(json_t *obj, const char *path, const char *key, int required, const char *const *names,
	     size_t nr, int *out, char *msg, size_t n);

/* Reads key as an array of lo..hi entries; *out is NULL when optional and absent. */
int get_arr(json_t *obj, const char *path, const char *key, int required, size_t lo, size_t hi,
	    json_t **out, char *msg, size_t n);

/*
 * v (at path) is an integer expression: a string that expr_check accepts,
 * or a JSON integer kept as its decimal text.  *out is a copy the caller frees.
 */
int expr_value(json_t *v, const char *path, int allow_negative, char **out, char *msg, size_t n);

/* Reads key as an expression (see expr_value); *out is left alone when absent. */
int get_expr(json_t *obj, const char *path, const char *key, int required, int allow_negative,
	     char **out, char *msg, size_t n);

/* ---- batch-read.c: tables of plain numeric fields ---- */

enum field_kind { FK_INT, FK_I64, FK_U64, FK_SIZE, FK_NUM, FK_BOOL };

struct field {
	const char *key;
	enum field_kind kind;
	size_t off;    /* in the struct being filled */
	double lo, hi; /* inclusive; integers for the integer kinds */
};

/* Checks obj's keys against fields plus extra (NULL-terminated, may be NULL). */
int fields_known(json_t *obj, const char *path, const struct field *f, size_t nf,
		 const char *const *extra, char *msg, size_t n);

/* Reads the optional fields of obj into base; absent keys keep their defaults. */
int fields_read(json_t *obj, const char *path, const struct field *f, size_t nf, void *base,
		char *msg, size_t n);

/* ---- batch-problem.c ---- */

/*
 * Reads $.problem into b: name, semantics, buffers, scalars, the launch plan
 * and the reference's (b->ref_launch aliases b->launch unless the document
 * gives reference_launch), flops and bytes.  What it allocated before a
 * failure is freed by batch_release().
 */
int parse_problem(struct batch *b, json_t *root, char *msg, size_t n);

#endif
