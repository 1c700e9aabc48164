/*
 * tuned.c - tuned tables: a session's winner as a table entry, the
 * table's strict check, and the merge of tables (tuned.h).
 *
 * A session gives one entry: its winner (the record best.cl and kctl
 * status read, with its confirmed figures) on the device its result names,
 * at the spec's timed shape.  The spec is read again to learn the bucket's
 * values, the dtype and the template's defaults, and must hash as it did
 * when the session ran, so a table never pairs figures with another
 * spec's meaning.
 *
 * A session with several shape buckets (bucket.h) gives one entry per
 * bucket: each bucket's best.  Where that is the winner at the primary
 * bucket, the entry is the winner's, with its confirmed figures; any other
 * is the best's figures recorded at that bucket in its own round
 * (confirmed: false).
 */
#include "tuned.h"
#include "bucket.h"
#include "defines.h"
#include "err.h"
#include "jsonx.h"
#include "log.h"
#include "session.h"
#include "spec.h"
#include "store.h"
#include "winner.h"
#include "xalloc.h"

#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *tuned_new(void)
{
	return json_pack("{s:s, s:i, s:[]}", "schema", TUNED_SCHEMA, "version", TUNED_VERSION,
			 "kernels");
}

/* SHA-256 of text as 64 hex digits and a NUL. */
static void sha256_hex(const char *text, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	if (!EVP_Digest(text, strlen(text), md, &len, EVP_sha256(), NULL))
		abort();
	for (unsigned i = 0; i < len && i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* The spec's timed shape: the one marked timed, else the first. */
static json_t *timed_shape(const struct spec *sp, const char *name)
{
	json_t *sh, *first = json_array_get(sp->shapes, 0);
	size_t i;

	json_array_foreach (sp->shapes, i, sh) {
		const char *nm = json_string_value(json_object_get(sh, "name"));

		if (name ? nm && !strcmp(nm, name) : json_is_true(json_object_get(sh, "timed")))
			return sh;
	}
	return name ? NULL : first;
}

/* The dtype of the problem: the element type of its first output (or inout) buffer. */
static const char *problem_dtype(const struct spec *sp)
{
	json_t *b;
	size_t i;

	json_array_foreach (json_object_get(sp->problem, "buffers"), i, b) {
		const char *role = json_string_value(json_object_get(b, "role"));

		if (role && (!strcmp(role, "output") || !strcmp(role, "inout")))
			return json_string_value(json_object_get(b, "type"));
	}
	return NULL;
}

/*
 * The template's defaults: each tunable's value as the template defines it
 * under the spec's build options (its #define, or a -D of
 * kernel.build_options), else the tunable's first value.
 */
static json_t *template_defaults(const struct spec *sp)
{
	struct expr_vars vars = EXPR_VARS_INIT;
	json_t *params = json_object();

	defines_collect(sp->template_src, sp->build_options, &vars);
	for (size_t i = 0; i < sp->ntunables; i++) {
		int64_t v = sp->tunables[i].values[0];

		expr_vars_get(&vars, sp->tunables[i].name, &v);
		json_object_set_new(params, sp->tunables[i].name, json_integer(v));
	}
	expr_vars_release(&vars);
	return json_pack("{s:o, s:s}", "params", params, "build_options",
			 sp->build_options ? sp->build_options : "");
}

static json_t *str_or_empty(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return json_string(s ? s : "");
}

/* The device of a result: its fields and the key tables are matched on. */
static json_t *device_of(json_t *dev)
{
	json_t *d = json_object();
	const char *keys[] = { "name", "vendor", "driver", "platform" };
	char *key;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		json_object_set_new(d, keys[i], str_or_empty(dev, keys[i]));
	key = xasprintf("%s|%s|%s", json_string_value(json_object_get(d, "vendor")),
			json_string_value(json_object_get(d, "name")),
			json_string_value(json_object_get(d, "driver")));
	json_object_set_new(d, "key", json_string(key));
	free(key);
	return d;
}

static json_t *figures_of(json_t *w)
{
	json_t *f = json_object();
	const char *nums[] = { "median_ms", "gflops", "speedup_vs_reference", "speedup_vs_baseline",
			       "robust_cv" };

	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		json_t *v = json_object_get(w, nums[i]);

		jx_set_real(f, nums[i], json_is_number(v) ? json_number_value(v) : NAN);
	}
	json_object_set_new(f, "quality",
			    json_is_string(json_object_get(w, "quality"))
				    ? json_incref(json_object_get(w, "quality"))
				    : json_null());
	json_object_set_new(f, "confirmed",
			    json_boolean(json_is_true(json_object_get(w, "confirmed"))));
	return f;
}

/* The entry of winner w (measured on device dev) at shape sh, or NULL with msg. */
static json_t *entry_of(const struct spec *sp, const char *id, json_t *w, json_t *dev, json_t *sh,
			json_t *defaults, char *msg, size_t n)
{
	json_t *params = json_object_get(w, "params"), *prov, *e;
	char hash[65];

	session_spec_hash(sp, hash);
	prov = json_pack("{s:s, s:O, s:O, s:s}", "session", id, "variant",
			 json_object_get(w, "variant"), "round", json_object_get(w, "round"),
			 "spec_sha256", hash);
	/* the template itself (round 0) has no params: its defaults are its parameters */
	if (!json_is_object(params))
		params = json_object_get(defaults, "params");
	e = json_pack("{s:o, s:s, s:{s:O, s:O}, s:O, s:o, s:o, s:o}", "device", device_of(dev),
		      "dtype", problem_dtype(sp), "bucket", "name", json_object_get(sh, "name"),
		      "values", json_object_get(sh, "values"), "params", params, "build_options",
		      str_or_empty(w, "build_options"), "figures", figures_of(w), "provenance",
		      prov);
	if (!e)
		kerr_set(msg, n, KERR_INVALID, "session '%s': its winner's record is incomplete",
			 id);
	return e;
}

/* The shape keys of sh in the spec's order, as a new array. */
static json_t *shape_keys(json_t *sh)
{
	json_t *keys = json_array(), *v;
	const char *k;

	json_object_foreach (json_object_get(sh, "values"), k, v)
		json_array_append_new(keys, json_string(k));
	return keys;
}

/*
 * What entry_of reads, for the best of one bucket (a bucket_bests entry) of
 * session id: the winner w itself when it is that best at the primary
 * bucket (its confirmed figures), else the best's params and options and
 * its figures recorded at that bucket.  New reference.
 */
static json_t *bucket_record(struct store *st, const char *id, json_t *best, json_t *w)
{
	const char *vid = json_string_value(json_object_get(best, "variant"));
	const char *bucket = json_string_value(json_object_get(best, "bucket")), *opts;
	json_t *row, *res, *perf, *rec;

	if (vid && !strcmp(vid, json_string_value(json_object_get(w, "variant"))) && bucket &&
	    json_is_true(json_object_get(best, "primary")))
		return json_incref(w);
	row = store_variant_get(st, id, vid);
	res = store_result_get(st, id, vid);
	perf = json_object_get(json_object_get(res, "performance_by_shape"), bucket);
	opts = json_string_value(json_object_get(row, "options"));
	rec = json_pack("{s:s, s:O, s:O, s:s, s:s, s:b}", "variant", vid, "round",
			json_object_get(best, "round"), "params",
			json_object_get(row, "params") ? json_object_get(row, "params")
						       : json_null(),
			"build_options", opts ? opts : "", "shape", bucket, "confirmed", 0);
	if (!rec)
		rec = json_object();
	jx_set_real(rec, "median_ms",
		    json_number_value(json_object_get(perf, "median_ms")) > 0
			    ? json_number_value(json_object_get(perf, "median_ms"))
			    : NAN);
	json_object_set(rec, "gflops", json_object_get(perf, "gflops"));
	json_object_set(
		rec, "speedup_vs_reference",
		json_object_get(json_object_get(perf, "speedup_vs_reference"), "ratio_of_medians"));
	json_object_set(
		rec, "speedup_vs_baseline",
		json_object_get(json_object_get(perf, "speedup_vs_baseline"), "ratio_of_medians"));
	json_object_set(rec, "robust_cv", json_object_get(perf, "robust_cv"));
	json_object_set(rec, "quality", json_object_get(perf, "quality"));
	json_decref(res);
	json_decref(row);
	return rec;
}

/* The entries of a multi-bucket session: one per bucket, its best (into entries). */
static int bucket_entries(struct store *st, const struct spec *sp, const char *id, json_t *w,
			  json_t *dev, json_t *defaults, json_t *entries, char *msg, size_t n)
{
	json_t *bests = bucket_bests(st, id, NULL), *b;
	size_t i;
	int rc = 0;

	if (!bests)
		return kerr_set(msg, n, KERR_INVALID,
				"session '%s': no variant has figures at several buckets", id);
	json_array_foreach (bests, i, b) {
		const char *bucket = json_string_value(json_object_get(b, "bucket"));
		json_t *sh = timed_shape(sp, bucket), *rec, *e;

		if (!sh) {
			rc = kerr_set(msg, n, KERR_INVALID,
				      "session '%s': bucket '%s' is not a shape of the spec '%s'",
				      id, bucket, sp->path);
			break;
		}
		rec = bucket_record(st, id, b, w);
		e = entry_of(sp, id, rec, dev, sh, defaults, msg, n);
		json_decref(rec);
		if (!e) {
			rc = KERR_INVALID;
			break;
		}
		json_array_append_new(entries, e);
	}
	json_decref(bests);
	return rc;
}

/* The table of the session's winner w, on the spec sp already checked. */
static int table_of(struct store *st, const struct spec *sp, const char *id, json_t *w, json_t *dev,
		    json_t **out, char *msg, size_t n)
{
	const char *shape = json_string_value(json_object_get(w, "shape"));
	json_t *sh = timed_shape(sp, shape), *defaults, *e, *k;
	char th[65];

	if (!sh)
		return kerr_set(msg, n, KERR_INVALID,
				"session '%s': its winner was timed at shape '%s', which the spec "
				"'%s' no longer has",
				id, shape, sp->path);
	if (!problem_dtype(sp))
		return kerr_set(msg, n, KERR_INVALID, "session '%s': the spec has no output buffer",
				id);
	defaults = template_defaults(sp);
	if (bucket_count(sp) > 1) {
		e = json_array();
		if (bucket_entries(st, sp, id, w, dev, defaults, e, msg, n)) {
			json_decref(e);
			json_decref(defaults);
			return KERR_INVALID;
		}
	} else if (!(e = entry_of(sp, id, w, dev, sh, defaults, msg, n))) {
		json_decref(defaults);
		return KERR_INVALID;
	} else {
		e = json_pack("[o]", e);
	}
	sha256_hex(sp->template_src, th);
	k = json_pack("{s:s, s:s, s:o, s:o, s:o}", "kernel", sp->name, "template_sha256", th,
		      "shape_keys", shape_keys(sh), "defaults", defaults, "entries", e);
	*out = tuned_new();
	json_array_append_new(json_object_get(*out, "kernels"), k);
	return 0;
}

/* The winner of session id that a table can hold, in *w, or an error. */
static int winner_of(struct store *st, const char *id, json_t **w, json_t **dev, char *msg,
		     size_t n)
{
	json_t *res;
	double ms;

	if (!(*w = session_winner(st, id)))
		return kerr_set(msg, n, KERR_NOTFOUND,
				"session '%s' has no variant that passed its checks: nothing to "
				"export",
				id);
	ms = json_number_value(json_object_get(*w, "median_ms"));
	res = store_result_get(st, id, json_string_value(json_object_get(*w, "variant")));
	*dev = json_incref(json_object_get(res, "device"));
	json_decref(res);
	if (!json_is_object(*dev) || !json_is_string(json_object_get(*dev, "name")))
		return kerr_set(msg, n, KERR_INVALID,
				"session '%s': the result of its winner %s names no device", id,
				json_string_value(json_object_get(*w, "variant")));
	if (!json_is_number(json_object_get(*w, "median_ms")) || !(ms > 0))
		return kerr_set(msg, n, KERR_INVALID,
				"session '%s': its winner %s has no measured time", id,
				json_string_value(json_object_get(*w, "variant")));
	return 0;
}

int tuned_from_session(struct store *st, const char *id, json_t **out, char *msg, size_t n)
{
	json_t *row = store_session_get(st, id), *w = NULL, *dev = NULL;
	const char *path = json_string_value(json_object_get(row, "spec_path"));
	const char *want = json_string_value(json_object_get(row, "spec_hash"));
	struct spec sp;
	char hash[65], why[1024];
	int rc;

	memset(&sp, 0, sizeof(sp));
	*out = NULL;
	if (!row) {
		rc = kerr_set(msg, n, KERR_NOTFOUND, "no session '%s' (see 'kctl status')", id);
		goto out;
	}
	if ((rc = winner_of(st, id, &w, &dev, msg, n)))
		goto out;
	if ((rc = spec_load(&sp, path ? path : "", why, sizeof(why)))) {
		rc = kerr_set(msg, n, rc, "session '%s': its spec: %s", id, why);
		goto out;
	}
	session_spec_hash(&sp, hash);
	if (!want || strcmp(hash, want)) {
		rc = kerr_set(msg, n, KERR_INVALID,
			      "session '%s': its spec '%s' (or its template or reference) changed "
			      "since the session ran; its figures are not the spec's any more",
			      id, path);
		goto out;
	}
	rc = table_of(st, &sp, id, w, dev, out, msg, n);
out:
	spec_release(&sp);
	json_decref(dev);
	json_decref(w);
	json_decref(row);
	return rc;
}

/* ---- the check ---------------------------------------------------------- */

static int known(json_t *o, const char *path, const char *const *keys, char *msg, size_t n)
{
	if (!o)
		return kerr_set(msg, n, KERR_PARSE, "%s: missing (an object is required)", path);
	if (!json_is_object(o))
		return kerr_set(msg, n, KERR_PARSE, "%s: expected an object, got %s", path,
				jx_type_name(o));
	return jx_known_keys(o, path, keys, msg, n);
}

/* Every member of o (at path) is an integer; or, with strings set, a string. */
static int all_of(json_t *o, const char *path, int strings, char *msg, size_t n)
{
	const char *k;
	json_t *v;

	json_object_foreach (o, k, v)
		if (strings ? !json_is_string(v) : !json_is_integer(v))
			return kerr_set(msg, n, KERR_PARSE, "%s.%s: expected %s, got %s", path, k,
					strings ? "a string" : "an integer", jx_type_name(v));
	return 0;
}

static int check_figures(json_t *f, const char *path, char *msg, size_t n)
{
	static const char *const keys[] = {
		"median_ms",           "gflops",    "speedup_vs_reference",
		"speedup_vs_baseline", "robust_cv", "quality",
		"confirmed",           NULL
	};
	static const char *const nums[] = { "median_ms", "gflops", "speedup_vs_reference",
					    "speedup_vs_baseline", "robust_cv" };
	int rc = known(f, path, keys, msg, n);
	double ms = 0;

	for (size_t i = 0; !rc && i < sizeof(nums) / sizeof(nums[0]); i++) {
		json_t *v = json_object_get(f, nums[i]);

		if (!v || (!json_is_null(v) && !json_is_number(v)))
			rc = kerr_set(msg, n, KERR_PARSE,
				      "%s.%s: expected a number or null, got %s", path, nums[i],
				      jx_type_name(v));
	}
	if (!rc && !json_is_string(json_object_get(f, "quality")) &&
	    !json_is_null(json_object_get(f, "quality")))
		rc = kerr_set(msg, n, KERR_PARSE, "%s.quality: expected a string or null", path);
	if (!rc && !json_is_boolean(json_object_get(f, "confirmed")))
		rc = kerr_set(msg, n, KERR_PARSE, "%s.confirmed: expected a boolean", path);
	if (!rc && !(rc = jx_num(f, path, "median_ms", JX_REQUIRED, 0, INFINITY, &ms, msg, n)) &&
	    !(ms > 0))
		rc = kerr_set(msg, n, KERR_RANGE, "%s.median_ms: must be above 0", path);
	return rc;
}

static int check_entry(json_t *e, json_t *keys, const char *path, char *msg, size_t n)
{
	static const char *const ekeys[] = { "device",        "dtype",   "bucket",     "params",
					     "build_options", "figures", "provenance", NULL };
	static const char *const dkeys[] = { "key", "name", "vendor", "driver", "platform", NULL };
	static const char *const bkeys[] = { "name", "values", NULL };
	static const char *const pkeys[] = { "session", "variant", "round", "spec_sha256", NULL };
	json_t *d, *b, *v, *k;
	const char *s;
	char p[256];
	size_t i;
	int rc = known(e, path, ekeys, msg, n);

	if (!rc)
		rc = jx_obj(e, path, "device", JX_REQUIRED, &d, msg, n);
	snprintf(p, sizeof(p), "%s.device", path);
	if (!rc && !(rc = known(d, p, dkeys, msg, n)) && !(rc = all_of(d, p, 1, msg, n)))
		rc = jx_str(d, p, "key", JX_REQUIRED, &s, msg, n);
	if (!rc)
		rc = jx_str(e, path, "dtype", JX_REQUIRED, &s, msg, n);
	if (!rc)
		rc = jx_obj(e, path, "bucket", JX_REQUIRED, &b, msg, n);
	snprintf(p, sizeof(p), "%s.bucket", path);
	if (!rc && !(rc = known(b, p, bkeys, msg, n)) &&
	    !(rc = jx_str(b, p, "name", JX_REQUIRED, &s, msg, n)) &&
	    !(rc = jx_obj(b, p, "values", JX_REQUIRED, &v, msg, n))) {
		snprintf(p, sizeof(p), "%s.bucket.values", path);
		rc = all_of(v, p, 0, msg, n);
		json_array_foreach (keys, i, k)
			if (!rc && !json_object_get(v, json_string_value(k)))
				rc = kerr_set(msg, n, KERR_INVALID, "%s: has no '%s' (shape_keys)",
					      p, json_string_value(k));
		if (!rc && json_object_size(v) != json_array_size(keys))
			rc = kerr_set(msg, n, KERR_INVALID,
				      "%s: has keys that are not the kernel's shape_keys", p);
	}
	if (!rc && !(rc = jx_obj(e, path, "params", JX_REQUIRED, &v, msg, n))) {
		snprintf(p, sizeof(p), "%s.params", path);
		rc = all_of(v, p, 0, msg, n);
	}
	if (!rc)
		rc = jx_str(e, path, "build_options", JX_REQUIRED, &s, msg, n);
	snprintf(p, sizeof(p), "%s.figures", path);
	if (!rc)
		rc = check_figures(json_object_get(e, "figures"), p, msg, n);
	snprintf(p, sizeof(p), "%s.provenance", path);
	if (!rc && !(rc = known(json_object_get(e, "provenance"), p, pkeys, msg, n)))
		rc = jx_str(json_object_get(e, "provenance"), p, "session", JX_REQUIRED, &s, msg,
			    n);
	return rc;
}

/*
 * The slot of entry e: its device key, dtype and bucket values, as one
 * string two entries share exactly when they are for the same slot (the
 * values with sorted keys).  malloc'd.
 */
static char *slot_key(json_t *e)
{
	json_t *k = json_pack("[O, O, O]", json_object_get(json_object_get(e, "device"), "key"),
			      json_object_get(e, "dtype"),
			      json_object_get(json_object_get(e, "bucket"), "values"));
	char *s = k ? json_dumps(k, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

	json_decref(k);
	if (!s)
		abort(); /* out of memory: the checked entry has all three */
	return s;
}

static int check_kernel(json_t *k, const char *path, char *msg, size_t n)
{
	static const char *const kkeys[] = { "kernel",   "template_sha256", "shape_keys",
					     "defaults", "entries",         NULL };
	static const char *const dkeys[] = { "params", "build_options", NULL };
	json_t *keys, *defs, *entries, *v, *e, *seen = json_object();
	const char *s;
	char p[192];
	size_t i;
	int rc = known(k, path, kkeys, msg, n);

	if (!rc)
		rc = jx_str(k, path, "kernel", JX_REQUIRED, &s, msg, n);
	if (!rc)
		rc = jx_str(k, path, "template_sha256", JX_REQUIRED, &s, msg, n);
	if (!rc)
		rc = jx_arr(k, path, "shape_keys", JX_REQUIRED, &keys, msg, n);
	json_array_foreach (rc ? NULL : keys, i, v)
		if (!rc && !json_is_string(v))
			rc = kerr_set(msg, n, KERR_PARSE, "%s.shape_keys[%zu]: expected a string",
				      path, i);
	if (!rc)
		rc = jx_obj(k, path, "defaults", JX_REQUIRED, &defs, msg, n);
	snprintf(p, sizeof(p), "%s.defaults", path);
	if (!rc && !(rc = known(defs, p, dkeys, msg, n)) &&
	    !(rc = jx_str(defs, p, "build_options", JX_REQUIRED, &s, msg, n)) &&
	    !(rc = jx_obj(defs, p, "params", JX_REQUIRED, &v, msg, n))) {
		snprintf(p, sizeof(p), "%s.defaults.params", path);
		rc = all_of(v, p, 0, msg, n);
	}
	if (!rc && !(rc = jx_arr(k, path, "entries", JX_REQUIRED, &entries, msg, n)) &&
	    !json_array_size(entries))
		rc = kerr_set(msg, n, KERR_INVALID, "%s.entries: is empty", path);
	json_array_foreach (rc ? NULL : entries, i, e) {
		snprintf(p, sizeof(p), "%s.entries[%zu]", path, i);
		if (!rc)
			rc = check_entry(e, keys, p, msg, n);
		if (!rc) {
			char *slot = slot_key(e);
			json_t *was = json_object_get(seen, slot);

			if (was)
				rc = kerr_set(msg, n, KERR_INVALID,
					      "%s: the same device, dtype and bucket as "
					      "%s.entries[%lld]",
					      p, path, (long long)json_integer_value(was));
			json_object_set_new(seen, slot, json_integer((json_int_t)i));
			free(slot);
		}
	}
	json_decref(seen);
	return rc;
}

int tuned_check(json_t *doc, const char *where, char *msg, size_t n)
{
	static const char *const keys[] = { "schema", "version", "kernels", NULL };
	const char *schema = NULL;
	int64_t version = 0;
	json_t *kernels = NULL, *k;
	char p[64], why[1024];
	size_t i, j;
	int rc = known(doc, "$", keys, why, sizeof(why));

	if (!rc)
		rc = jx_str(doc, "$", "schema", JX_REQUIRED, &schema, why, sizeof(why));
	if (!rc)
		rc = jx_int(doc, "$", "version", JX_REQUIRED, 0, INT64_MAX, &version, why,
			    sizeof(why));
	if (!rc && (strcmp(schema, TUNED_SCHEMA) || version != TUNED_VERSION))
		rc = kerr_set(why, sizeof(why), KERR_INVALID,
			      "$: schema '%s' version %lld is not a table this kctl reads (%s "
			      "version %d)",
			      schema, (long long)version, TUNED_SCHEMA, TUNED_VERSION);
	if (!rc)
		rc = jx_arr(doc, "$", "kernels", JX_REQUIRED, &kernels, why, sizeof(why));
	json_array_foreach (rc ? NULL : kernels, i, k) {
		snprintf(p, sizeof(p), "$.kernels[%zu]", i);
		if (!rc)
			rc = check_kernel(k, p, why, sizeof(why));
		for (j = 0; !rc && j < i; j++)
			if (json_equal(json_object_get(json_array_get(kernels, j), "kernel"),
				       json_object_get(k, "kernel")))
				rc = kerr_set(why, sizeof(why), KERR_INVALID,
					      "%s.kernel: '%s' is also $.kernels[%zu]", p,
					      json_string_value(json_object_get(k, "kernel")), j);
	}
	return rc ? kerr_set(msg, n, rc, "%s: %s", where, why) : 0;
}

/* ---- the merge ---------------------------------------------------------- */

static double figure(json_t *e, const char *key)
{
	json_t *v = json_object_get(json_object_get(e, "figures"), key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Whether candidate c beats incumbent e (tuned.h, tuned_merge). */
static int beats(json_t *c, json_t *e)
{
	double mc = figure(c, "median_ms"), me = figure(e, "median_ms");
	double cc = figure(c, "robust_cv"), ce = figure(e, "robust_cv");

	if (mc != me)
		return mc < me;
	return isfinite(cc) && (!isfinite(ce) || cc < ce);
}

static const char *prov(json_t *e, const char *key)
{
	const char *s = json_string_value(json_object_get(json_object_get(e, "provenance"), key));

	return s ? s : "?";
}

/* Candidate c into entries, whose slots index maps to their positions. */
static void merge_entry(json_t *entries, json_t *index, json_t *c, const char *kernel)
{
	char *slot = slot_key(c);
	json_t *at = json_object_get(index, slot), *e;

	if (!at) {
		json_object_set_new(index, slot,
				    json_integer((json_int_t)json_array_size(entries)));
		json_array_append(entries, c);
	} else if (beats(c, e = json_array_get(entries, (size_t)json_integer_value(at)))) {
		log_info("%s on %s, %s, bucket %s: %s %s (%.4g ms) replaces %s %s (%.4g ms)",
			 kernel,
			 json_string_value(json_object_get(json_object_get(c, "device"), "key")),
			 json_string_value(json_object_get(c, "dtype")),
			 json_string_value(json_object_get(json_object_get(c, "bucket"), "name")),
			 prov(c, "session"), prov(c, "variant"), figure(c, "median_ms"),
			 prov(e, "session"), prov(e, "variant"), figure(e, "median_ms"));
		json_array_set(entries, (size_t)json_integer_value(at), c);
	}
	free(slot);
}

/* The slots of entries: slot key -> position. */
static json_t *index_of(json_t *entries)
{
	json_t *index = json_object(), *e;
	size_t i;

	json_array_foreach (entries, i, e) {
		char *slot = slot_key(e);

		json_object_set_new(index, slot, json_integer((json_int_t)i));
		free(slot);
	}
	return index;
}

/* Where kernel groups a (of dst) and b (of src) disagree, or NULL. */
static const char *kernel_clash(json_t *a, json_t *b)
{
	static const char *const keys[] = { "template_sha256", "shape_keys", "defaults" };

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!json_equal(json_object_get(a, keys[i]), json_object_get(b, keys[i])))
			return keys[i];
	return NULL;
}

static int entry_cmp(const void *pa, const void *pb)
{
	json_t *a = *(json_t *const *)pa, *b = *(json_t *const *)pb;
	const char *sa[] = {
		json_string_value(json_object_get(json_object_get(a, "device"), "key")),
		json_string_value(json_object_get(a, "dtype")),
		json_string_value(json_object_get(json_object_get(a, "bucket"), "name"))
	};
	const char *sb[] = {
		json_string_value(json_object_get(json_object_get(b, "device"), "key")),
		json_string_value(json_object_get(b, "dtype")),
		json_string_value(json_object_get(json_object_get(b, "bucket"), "name"))
	};

	for (int i = 0; i < 3; i++) {
		int c = strcmp(sa[i], sb[i]);

		if (c)
			return c;
	}
	return strcmp(prov(a, "session"), prov(b, "session"));
}

static int kernel_cmp(const void *pa, const void *pb)
{
	return strcmp(json_string_value(json_object_get(*(json_t *const *)pa, "kernel")),
		      json_string_value(json_object_get(*(json_t *const *)pb, "kernel")));
}

/* Sorts arr (of objects) in place by cmp. */
static void sort_array(json_t *arr, int (*cmp)(const void *, const void *))
{
	size_t nr = json_array_size(arr);
	json_t **v = xcalloc(nr ? nr : 1, sizeof(*v));

	for (size_t i = 0; i < nr; i++)
		v[i] = json_incref(json_array_get(arr, i));
	qsort(v, nr, sizeof(*v), cmp);
	json_array_clear(arr);
	for (size_t i = 0; i < nr; i++)
		json_array_append_new(arr, v[i]);
	free(v);
}

int tuned_merge(json_t *dst, json_t *src, const char *where, char *msg, size_t n)
{
	json_t *dk = json_object_get(dst, "kernels"), *k, *have, *e, *index;
	size_t i, j;

	json_array_foreach (json_object_get(src, "kernels"), i, k) {
		const char *name = json_string_value(json_object_get(k, "kernel")), *clash;

		have = NULL;
		json_array_foreach (dk, j, e)
			if (!strcmp(json_string_value(json_object_get(e, "kernel")), name))
				have = e;
		if (!have) {
			json_array_append_new(dk, json_deep_copy(k));
			continue;
		}
		if ((clash = kernel_clash(have, k)))
			return kerr_set(msg, n, KERR_INVALID,
					"%s: kernel '%s': its %s differs from that of the tables "
					"before it; tables of different kernels (or templates) are "
					"not merged: export them apart",
					where, name, clash);
		index = index_of(json_object_get(have, "entries"));
		json_array_foreach (json_object_get(k, "entries"), j, e)
			merge_entry(json_object_get(have, "entries"), index, e, name);
		json_decref(index);
	}
	json_array_foreach (dk, i, k)
		sort_array(json_object_get(k, "entries"), entry_cmp);
	sort_array(dk, kernel_cmp);
	return 0;
}
