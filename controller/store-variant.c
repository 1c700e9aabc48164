/*
 * store-variant.c - the queries about variants, their results (the ranked
 * figures in columns, the whole document as JSON text) and lineages.  See
 * store.h for the contract.
 *
 * May use: store-internal.h (store-sql.c's helpers), err, jsonx, SQLite.
 */
#include "store.h"
#include "store-internal.h"
#include "err.h"
#include "jsonx.h"

#include <limits.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

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
				jx_type_name(v));
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
	json_t *cache_key = json_object_get(json_object_get(result, "cache"), "key");
	sqlite3_stmt *s = NULL;
	char *text = NULL;
	int rc;

	if (!json_is_object(result))
		return sq_note(st, KERR_PARSE, "$: expected an object, got %s",
			       jx_type_name(result));
	rc = sq_doc_dump(st, result, &text);
	if (rc)
		return rc;
	rc = sq_prepare(st, &s,
			"INSERT INTO results (session, variant, status, speedup_ref, speedup_base,"
			" median_ms, gflops, gbs, bottleneck, json, cache_key)"
			" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
			"tt", session, id);
	for (size_t i = 0; !rc && i < sizeof(figures) / sizeof(figures[0]); i++)
		rc = figure_bind(st, s, (int)i + 3, result, &figures[i]);
	if (!rc && sqlite3_bind_text(s, 10, text, -1, SQLITE_TRANSIENT) != SQLITE_OK)
		rc = sq_note_db(st);
	if (!rc && json_is_string(cache_key) &&
	    sqlite3_bind_text(s, 11, json_string_value(cache_key), -1, SQLITE_TRANSIENT) !=
		    SQLITE_OK)
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

int store_result_cached_count(struct store *st, const char *session)
{
	int64_t count = 0;
	int rc = sq_query_int(st, &count, "SELECT COUNT(cache_key) FROM results WHERE session = ?1",
			      "t", session);

	if (rc < 0)
		return rc;
	return count > INT_MAX ? KERR_RANGE : (int)count;
}

json_t *store_result_cached(struct store *st, const char *session)
{
	json_t *rows = sq_query_rows(st, NULL,
				     "SELECT variant AS variant, cache_key AS key FROM results"
				     " WHERE session = ?1 AND cache_key IS NOT NULL",
				     "t", session),
	       *out, *r;
	size_t i;

	if (!rows)
		return NULL;
	out = json_object();
	json_array_foreach (rows, i, r)
		json_object_set(out, json_string_value(json_object_get(r, "variant")),
				json_object_get(r, "key"));
	json_decref(rows);
	return out;
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
