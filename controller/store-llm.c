/*
 * store-llm.c - what a session learned and what it asked: the learnings
 * ([Fnnn], [Snnn], [Mnnn]) and every exchange with the proposer model.
 * See store.h for the contract, store-internal.h for the helpers.
 */
#include "store.h"
#include "store-internal.h"
#include "err.h"
#include "jsonx.h"
#include "xalloc.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* --- learnings --------------------------------------------------------- */

/*
 * One statement: a new key takes the kind's next number (numbers are never
 * reused: nothing deletes learnings), a known key keeps its number.
 */
static int learning_upsert(struct store *st, const char *session, const char *kind, const char *key,
			   const char *group, const char *text, int round, int64_t *number)
{
	sqlite3_stmt *s = NULL;
	int rc = sq_prepare(
		st, &s,
		"INSERT INTO learnings (session, kind, number, key, grp, text, count, round)"
		" SELECT ?1, ?2, COALESCE(MAX(number), 0) + 1, ?3, ?4, ?5, 1, ?6"
		" FROM learnings WHERE session = ?1 AND kind = ?2"
		" ON CONFLICT (session, kind, key) DO UPDATE SET count = count + 1"
		" RETURNING number",
		"tttttI", session, kind, key, group, text, (int64_t)round);

	if (!rc)
		rc = sq_step_write(st, s, NULL, number);
	sqlite3_finalize(s);
	return rc;
}

int store_learning_add(struct store *st, const char *session, char kind, const char *key,
		       const char *group, const char *text, int round, char *msg, size_t n)
{
	char kind_text[2] = { kind, '\0' };
	int64_t number = 0;
	int rc = 0;

	if (kind != 'F' && kind != 'S' && kind != 'M')
		rc = sq_note(st, KERR_INVALID, "unknown kind '%c' (expected 'F', 'S' or 'M')",
			     kind);
	else if (!key || !*key)
		rc = sq_note(st, KERR_INVALID, "empty key");
	else if (!text)
		rc = sq_note(st, KERR_INVALID, "no text");
	if (!rc)
		rc = learning_upsert(st, session, kind_text, key, group, text, round, &number);
	if (!rc && (number < 1 || number > INT_MAX))
		rc = sq_note(st, KERR_RANGE, "learning number %lld out of range",
			     (long long)number);
	if (rc)
		return sq_fail(st, rc, msg, n, "recording learning '%s' of session '%s'",
			       key ? key : "(null)", session);
	return (int)number;
}

json_t *store_learnings(struct store *st, const char *session)
{
	return sq_query_rows(st, NULL,
			     "SELECT kind AS kind, number AS number, key AS key, grp AS \"group\","
			     " text AS text, count AS count, round AS round"
			     " FROM learnings WHERE session = ?1 ORDER BY kind, number",
			     "t", session);
}

/* --- the model's exchanges -------------------------------------------------- */

static const char *jtext(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* An integer member as a bindable pointer (NULL for absent or null). */
static const int64_t *jint(json_t *o, const char *key, int64_t *slot)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_integer(v))
		return NULL;
	*slot = json_integer_value(v);
	return slot;
}

static const double *jreal(json_t *o, const char *key, double *slot)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_number(v))
		return NULL;
	*slot = json_number_value(v);
	return slot;
}

int store_llm_call_put(struct store *st, const char *session, json_t *c, char *msg, size_t n)
{
	int64_t in = 0, out = 0, att = 0;
	double cost = 0, ms = 0;
	json_t *meta = json_object_get(c, "meta");
	int round = (int)json_integer_value(json_object_get(c, "round"));
	int seq = (int)json_integer_value(json_object_get(c, "seq"));
	char *meta_text = NULL;
	int rc = 0;

	if (!json_is_integer(json_object_get(c, "round")) ||
	    !json_is_integer(json_object_get(c, "seq")) || !jtext(c, "purpose") ||
	    !jtext(c, "asked") || !jtext(c, "prompt_sha") || !jtext(c, "prompt") ||
	    !jtext(c, "status"))
		rc = sq_note(st, KERR_PARSE,
			     "an exchange needs round, seq, purpose, asked, prompt_sha, prompt "
			     "and status");
	if (!rc && meta && !json_is_null(meta))
		rc = sq_doc_dump(st, meta, &meta_text);
	if (!rc)
		rc = sq_db_write(
			st, NULL,
			"INSERT OR REPLACE INTO llm_calls (session, round, seq, purpose, asked,"
			" prompt_sha, prompt, answer, status, error, input_tokens, output_tokens,"
			" cost, ms, attempts, meta, created) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7,"
			" ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, " NOW ")",
			"tiitttttttnnDDnt", session, round, seq, jtext(c, "purpose"),
			jtext(c, "asked"), jtext(c, "prompt_sha"), jtext(c, "prompt"),
			jtext(c, "answer"), jtext(c, "status"), jtext(c, "error"),
			jint(c, "input_tokens", &in), jint(c, "output_tokens", &out),
			jreal(c, "cost", &cost), jreal(c, "ms", &ms), jint(c, "attempts", &att),
			meta_text);
	free(meta_text);
	return rc ? sq_fail(st, rc, msg, n, "recording exchange %d of round %d of session '%s'",
			    seq, round, session)
		  : 0;
}

int store_llm_call_set_meta(struct store *st, const char *session, int round, int seq, json_t *meta,
			    char *msg, size_t n)
{
	char *text = NULL;
	int rc = sq_doc_dump(st, meta, &text);

	if (!rc)
		rc = sq_db_write(st, "no such exchange",
				 "UPDATE llm_calls SET meta = ?4 WHERE session = ?1 AND round = ?2"
				 " AND seq = ?3",
				 "tiit", session, round, seq, text);
	free(text);
	return rc ? sq_fail(st, rc, msg, n, "recording what exchange %d of round %d came to", seq,
			    round)
		  : 0;
}

static int call_fix(json_t *row)
{
	json_t *text = json_object_get(row, "meta"), *doc;

	if (!json_is_string(text))
		return 0;
	doc = sq_doc_parse(json_string_value(text));
	return doc ? json_object_set_new(row, "meta", doc) : -1;
}

#define CALL_COLUMNS                                                                               \
	"round AS round, seq AS seq, purpose AS purpose, asked AS asked,"                          \
	" prompt_sha AS prompt_sha, status AS status, error AS error,"                             \
	" input_tokens AS input_tokens, output_tokens AS output_tokens, cost AS cost, ms AS ms,"   \
	" attempts AS attempts, meta AS meta, created AS created"

json_t *store_llm_call_get(struct store *st, const char *session, int round, int seq)
{
	return sq_query_one(st, call_fix,
			    "SELECT " CALL_COLUMNS ", prompt AS prompt, answer AS answer"
			    " FROM llm_calls WHERE session = ?1 AND round = ?2 AND seq = ?3",
			    "tii", session, round, seq);
}

json_t *store_llm_calls(struct store *st, const char *session, int round)
{
	return sq_query_rows(st, call_fix,
			     "SELECT " CALL_COLUMNS " FROM llm_calls WHERE session = ?1"
			     " AND (?2 < 0 OR round = ?2) ORDER BY round, seq",
			     "ti", session, round);
}

json_t *store_llm_totals(struct store *st, const char *session)
{
	json_t *t = sq_query_one(
		st, NULL,
		"SELECT COUNT(*) AS calls, COALESCE(SUM(status = 'error'), 0) AS errors,"
		" COALESCE(SUM(input_tokens), 0) AS input_tokens,"
		" COALESCE(SUM(output_tokens), 0) AS output_tokens,"
		" COALESCE(SUM(cost), 0.0) AS cost, COALESCE(SUM(ms), 0.0) AS ms"
		" FROM llm_calls WHERE session = ?1",
		"t", session);
	json_t *rows, *outcomes = json_object(), *r;
	size_t i;

	if (!t) {
		json_decref(outcomes);
		return NULL;
	}
	rows = sq_query_rows(st, NULL,
			     "SELECT o.key AS key, SUM(o.value) AS count FROM llm_calls c,"
			     " json_each(c.meta, '$.outcomes') o WHERE c.session = ?1"
			     " AND c.meta IS NOT NULL GROUP BY o.key ORDER BY o.key",
			     "t", session);
	json_array_foreach (rows, i, r)
		json_object_set(outcomes, json_string_value(json_object_get(r, "key")),
				json_object_get(r, "count"));
	json_decref(rows);
	json_object_set_new(t, "outcomes", outcomes);
	return t;
}
