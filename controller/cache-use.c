/*
 * cache-use.c - the result cache in a round (cache-use.h): the key of a
 * variant from what kctl sends evalpod, the results a round takes from the
 * cache before it is packed, and those it gives to the cache once they are
 * collected.  Uses the batch (pack.h), the store, the session's recorded
 * state and the cache's file (cache.h).
 */
#include "session.h"
#include "cache.h"
#include "cache-use.h"
#include "backend.h"
#include "pack.h"
#include "s3.h"
#include "err.h"
#include "fileio.h"
#include "jsonx.h"
#include "log.h"
#include "xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* An entry in the shared store is at most this big. */
#define CACHE_S3_MAX (64u << 20)

/* What evalpod reports of a device that decides a result (docs/kctl.md). */
static const char *const fingerprint_keys[] = {
	"platform", "platform_version", "name", "vendor", "driver", "version",
};

static json_t *fingerprint(const json_t *dev)
{
	json_t *f = json_object();

	for (size_t i = 0; i < sizeof(fingerprint_keys) / sizeof(*fingerprint_keys); i++) {
		json_t *v = json_object_get(dev, fingerprint_keys[i]);

		json_object_set_new(f, fingerprint_keys[i],
				    json_is_string(v) ? json_copy(v) : json_null());
	}
	return f;
}

/* Every device of every platform `evalpod devices` listed, fingerprinted. */
static json_t *device_fingerprints(const struct session *s)
{
	json_t *out = json_array(), *plat, *dev;
	size_t i, j;

	json_array_foreach (s->evalpod_devices, i, plat)
		json_array_foreach (json_object_get(plat, "devices"), j, dev)
			json_array_append_new(out, fingerprint(dev));
	return out;
}

/*
 * On Kubernetes the devices are the cluster's nodes': the fingerprint is
 * the device of the session's first recorded result that names one, and
 * evalpod is the image its Jobs run ("image REF").  So round 0 there is
 * always evaluated.
 */
static void kube_fingerprint(struct session *s)
{
	json_t *vars, *v;
	size_t i;

	if (s->evalpod_devices || !s->backend || strcmp(s->backend->name, "kubernetes") ||
	    !s->spec.kube.image)
		return;
	vars = store_variants_brief(s->st, s->id, -1);
	json_array_foreach (vars, i, v) {
		json_t *res =
			json_is_null(json_object_get(v, "status"))
				? NULL
				: store_result_get(s->st, s->id,
						   json_string_value(json_object_get(v, "id")));
		json_t *dev = json_object_get(res, "device");

		if (json_is_object(dev)) {
			s->evalpod_devices = json_pack("[{s:[O]}]", "devices", dev);
			s->evalpod_version = xasprintf("image %s", s->spec.kube.image);
		}
		json_decref(res);
		if (s->evalpod_devices)
			break;
	}
	json_decref(vars);
}

/* 1 when the cache is on for s (opened here the first time), else 0. */
static int cache_on(struct session *s)
{
	char msg[1024] = "", *path;

	if (s->cache)
		return 1;
	if (!s->no_cache && s->spec.cache_enabled)
		kube_fingerprint(s);
	if (s->no_cache || !s->spec.cache_enabled || !s->evalpod_version ||
	    !json_array_size(s->evalpod_devices))
		return 0;
	path = cache_default_path();
	if (cache_open(path, &s->cache, msg, sizeof(msg)))
		log_warn("the result cache is off for this run: %s", msg);
	free(path);
	return s->cache != NULL;
}

json_t *cache_use_problem(struct session *s, int round)
{
	static const char *const drop[] = { "batch_id", "baseline", "variants", "limits",
					    "outputs" };
	json_t *none = json_array(), *b = round_batch_json(s, round, none, "cache");

	for (size_t i = 0; i < sizeof(drop) / sizeof(*drop); i++)
		json_object_del(b, drop[i]);
	json_decref(none);
	return b;
}

json_t *cache_use_inputs(struct session *s, const json_t *problem, const json_t *v)
{
	const json_t *opts = json_object_get(v, "options");

	if (!s->evalpod_version || !json_array_size(s->evalpod_devices) ||
	    !json_is_string(json_object_get(v, "source")))
		return NULL;
	return json_pack("{s:s, s:o, s:s, s:O, s:{s:O, s:o}}", "format", CACHE_KEY_FORMAT, "device",
			 device_fingerprints(s), "evalpod", s->evalpod_version, "batch", problem,
			 "program", "source", json_object_get(v, "source"), "build_options",
			 json_is_string(opts) ? json_copy((json_t *)opts) : json_string(""));
}

/*
 * Whether round of s takes part: a search round, and (with eval) kctl
 * eval's round too.  Never a confirmation: it re-times side by side.
 */
static int round_uses_cache(struct session *s, int round, int eval)
{
	json_t *row = store_round_get(s->st, s->id, round);
	const char *mode = json_string_value(json_object_get(row, "mode"));
	int ok = row && !json_is_object(json_object_get(row, "confirm")) && mode &&
		 strcmp(mode, "confirm") && (eval || strcmp(mode, SESSION_EVAL_MODE));

	json_decref(row);
	return ok;
}

static double fig(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

/*
 * The speedup over this round's baseline of a result measured elsewhere:
 * as measured when it was timed against the same program as the incumbent
 * is now; else the ratio of its speedup over the reference to the
 * incumbent's (both measured against the same reference source on the same
 * device); none when there is no incumbent or no ratio.
 */
static void rebase(json_t *res, const json_t *origin, const json_t *inc)
{
	json_t *perf = json_object_get(res, "performance");
	const char *was = json_string_value(json_object_get(origin, "baseline"));
	const char *now = json_string_value(json_object_get(inc, "hash"));
	double mine = fig(json_object_get(perf, "speedup_vs_reference"), "ratio_of_medians");
	double theirs = fig(inc, "speedup_ref");

	if (!json_is_object(perf) || (was && now && !strcmp(was, now)))
		return;
	json_object_del(perf, "speedup_vs_baseline");
	json_object_del(perf, "baseline_median_ms");
	if (inc && isfinite(mine) && isfinite(theirs) && mine > 0 && theirs > 0)
		json_object_set_new(
			perf, "speedup_vs_baseline",
			json_pack("{s:f, s:s}", "ratio_of_medians", mine / theirs, "derived",
				  "speedup_vs_reference over the incumbent's: taken from the "
				  "result cache"));
}

/*
 * The cached result as program v's: its id and lineage fields, its
 * speedup over this round's baseline (a candidate: rebase), the mark.
 */
static json_t *hit_document(const json_t *entry, const json_t *v, const json_t *inc, int candidate)
{
	json_t *res = json_deep_copy(json_object_get(entry, "result"));
	const json_t *origin = json_object_get(entry, "origin");
	time_t t = (time_t)fig(entry, "created");
	struct tm tm;
	char when[32];

	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_object_set(res, "id", json_object_get(v, "id"));
	if (candidate) {
		json_object_set(res, "parent", json_object_get(v, "parent"));
		json_object_set(res, "rationale", json_object_get(v, "rationale"));
		rebase(res, origin, inc);
	}
	json_object_set_new(res, "cache",
			    json_pack("{s:O, s:O?, s:O?, s:O?, s:s}", "key",
				      json_object_get(entry, "key"), "session",
				      json_object_get(origin, "session"), "batch",
				      json_object_get(origin, "batch"), "variant",
				      json_object_get(origin, "variant"), "stored", when));
	return res;
}

/* 1 when dir/results/ID.json exists. */
static int has_result(const char *dir, const char *id)
{
	char *path = xasprintf("%s/results/%s.json", dir, id);
	int there = access(path, F_OK) == 0;

	free(path);
	return there;
}

/* Writes doc as dir/results/ID.json; 1 when written. */
static int write_hit(const char *dir, const char *id, json_t *doc)
{
	char *text = jx_dump(doc), *path = xasprintf("%s/results/%s.json", dir, id), msg[1024];
	int rc = file_write_atomic(path, text, strlen(text), msg, sizeof(msg));

	if (rc)
		log_warn("variant '%s': the cached result not written: %s", id, msg);
	free(path);
	free(text);
	return rc == 0;
}

/* The object key of key's entry in the session's store: PREFIX/cache/KEY.json (malloc'd). */
static char *s3_entry_key(struct session *s, const char *key)
{
	char *rel = xasprintf("cache/%s.json", key), *k = s3_key(s->s3, rel);

	free(rel);
	return k;
}

static int shared(const struct session *s)
{
	return s->spec.cache_s3 && s->s3;
}

/*
 * A local miss: key's entry from the session's object store, checked as
 * the file's are, then kept in the local cache.  A new reference or NULL.
 */
static json_t *lookup_s3(struct session *s, const char *key, const char *id)
{
	char *okey = s3_entry_key(s, key), *data = NULL, msg[1024] = "";
	json_t *doc = NULL, *entry = NULL;
	const char *why;
	size_t len = 0;
	int rc = s3_get(s->s3, okey, CACHE_S3_MAX, &data, &len, msg, sizeof(msg));

	if (rc && rc != KERR_NOTFOUND)
		log_warn("variant '%s': the shared result cache: %s", id, msg);
	if (!rc && !(doc = json_loads(data, 0, NULL)))
		log_warn("cache: entry %s in 's3://%s/%s' does not parse; ignored: the variant is "
			 "evaluated again and the entry replaced",
			 key, s3_bucket(s->s3), okey);
	if (doc && (why = cache_entry_fault(doc, key)))
		log_warn("cache: entry %s in 's3://%s/%s' fails its check (%s); ignored: the "
			 "variant is evaluated again and the entry replaced",
			 key, s3_bucket(s->s3), okey, why);
	else if (doc && s->spec.cache_max_age_days > 0 &&
		 json_number_value(json_object_get(doc, "created")) <
			 (double)time(NULL) - s->spec.cache_max_age_days * 86400)
		log_debug("cache: entry %s in the store has expired", key);
	else if (doc)
		entry = json_incref(doc);
	if (entry &&
	    cache_put(s->cache, key, json_object_get(doc, "inputs"), json_object_get(doc, "result"),
		      json_object_get(doc, "origin"), msg, sizeof(msg)))
		log_warn("variant '%s': %s", id, msg);
	json_decref(doc);
	free(data);
	free(okey);
	return entry;
}

/* Looks key up, locally and then in the shared store: the entry (a new reference) or NULL. */
static json_t *lookup(struct session *s, const char *key, const char *id)
{
	json_t *entry = NULL;
	char msg[1024] = "";
	int rc = cache_get(s->cache, key, s->spec.cache_max_age_days, &entry, msg, sizeof(msg));

	if (rc < 0)
		log_warn("variant '%s': %s", id, msg);
	if (rc != 1 && shared(s))
		return lookup_s3(s, key, id);
	return rc == 1 ? entry : NULL;
}

/* Stores an entry locally and, when the spec shares the cache, in the store; 0 when stored locally. */
static int store_entry(struct session *s, const char *key, const json_t *inputs, const json_t *res,
		       const json_t *origin, const char *id)
{
	char msg[1024] = "";
	int rc = cache_put(s->cache, key, inputs, res, origin, msg, sizeof(msg));

	if (rc)
		log_warn("variant '%s': %s", id, msg);
	if (shared(s)) {
		json_t *doc = cache_entry_doc(key, inputs, res, origin, (double)time(NULL));
		char *text = jx_dump(doc), *okey = s3_entry_key(s, key);

		if (s3_put(s->s3, okey, text, strlen(text), "application/json", msg, sizeof(msg)))
			log_warn("variant '%s': not shared through the store: %s", id, msg);
		free(okey);
		free(text);
		json_decref(doc);
	}
	return rc;
}

/*
 * The inputs of the baseline's measurement in a batch whose candidates had
 * the keys given (an array): the incumbent's own inputs, and those keys
 * sorted as "baseline_for".  A new object, or NULL.
 */
static json_t *baseline_inputs(struct session *s, const json_t *problem, const json_t *inc,
			       const json_t *keys)
{
	json_t *inputs = cache_use_inputs(s, problem, inc), *sorted = json_array();
	size_t n = json_array_size(keys);
	const char **v = xcalloc(n + 1, sizeof(*v));

	for (size_t i = 0; i < n; i++)
		v[i] = json_string_value(json_array_get(keys, i));
	for (size_t i = 1; i < n; i++) /* insertion sort: a round has few variants */
		for (size_t j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
			const char *t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	for (size_t i = 0; i < n; i++)
		json_array_append_new(sorted, json_string(v[i]));
	free(v);
	if (inputs)
		json_object_set(inputs, "baseline_for", sorted);
	json_decref(sorted);
	return inputs;
}

/*
 * Every candidate of the round came from one batch of the cache, timed
 * against the program that is the incumbent now: that batch's measurement
 * of it becomes this round's baseline too, so that the round is ranked on
 * what was measured side by side, exactly as it was then.
 */
static void fill_baseline(struct session *s, const json_t *problem, const json_t *inc, json_t *keys,
			  const char *batch, const char *dir)
{
	const char *id = json_string_value(json_object_get(inc, "id")), *origin;
	json_t *entry, *doc, *inputs;
	char key[65];

	if (!inc || !batch || has_result(dir, id) ||
	    !(inputs = baseline_inputs(s, problem, inc, keys)))
		return;
	cache_key(inputs, key);
	json_decref(inputs);
	if (!(entry = lookup(s, key, id)))
		return;
	origin = json_string_value(json_object_get(json_object_get(entry, "origin"), "batch"));
	if (origin && !strcmp(origin, batch)) {
		doc = hit_document(entry, inc, inc, 0);
		write_hit(dir, id, doc);
		json_decref(doc);
	}
	json_decref(entry);
}

struct fill {
	json_t *keys; /* the keys of the round's candidates that hit */
	char *batch;  /* the batch the first came from (malloc'd), or NULL */
	int mixed;    /* they came from more than one */
};

/* Looks v up and writes its hit; 1 on a hit. */
static int fill_one(struct session *s, const json_t *problem, const json_t *v, const json_t *inc,
		    const char *dir, struct fill *f)
{
	const char *id = json_string_value(json_object_get(v, "id")), *batch;
	json_t *inputs = cache_use_inputs(s, problem, v), *entry, *doc;
	char key[65];
	int ok;

	if (!inputs)
		return 0;
	cache_key(inputs, key);
	json_decref(inputs);
	if (!(entry = lookup(s, key, id)))
		return 0;
	doc = hit_document(entry, v, inc, 1);
	ok = write_hit(dir, id, doc);
	batch = json_string_value(json_object_get(json_object_get(entry, "origin"), "batch"));
	if (ok) {
		json_array_append_new(f->keys, json_string(key));
		if (!f->batch && batch && !f->mixed)
			f->batch = xstrdup(batch);
		else if (!batch || !f->batch || strcmp(f->batch, batch))
			f->mixed = 1;
		log_debug("variant '%s': result %s from the cache", id, key);
	}
	json_decref(doc);
	json_decref(entry);
	return ok;
}

int cache_use_fill(struct session *s, int round, const char *dir)
{
	json_t *vars, *problem, *inc, *v;
	struct fill f = { 0 };
	size_t i, asked = 0;
	int hits = 0;

	if (!cache_on(s) || !round_uses_cache(s, round, 0))
		return 0;
	f.keys = json_array();
	vars = store_variants(s->st, s->id, round);
	problem = cache_use_problem(s, round);
	inc = round > 0 ? session_incumbent(s) : NULL;
	json_array_foreach (vars, i, v) {
		if (!json_is_null(json_object_get(v, "status")) ||
		    has_result(dir, json_string_value(json_object_get(v, "id"))))
			continue;
		asked++;
		hits += fill_one(s, problem, v, inc, dir, &f);
	}
	if (asked)
		log_info("round %d: %d of %zu variants from the result cache", round, hits, asked);
	if (asked && (size_t)hits == json_array_size(vars) && !f.mixed)
		fill_baseline(s, problem, inc, f.keys, f.batch, dir);
	free(f.batch);
	json_decref(f.keys);
	json_decref(inc);
	json_decref(problem);
	json_decref(vars);
	return hits;
}

/* --- record ------------------------------------------------------------- */

/* A test hook that changes what evalpod measures: its results are not kept. */
static const char *test_hook(void)
{
	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, "EVALPOD_TEST_", 13))
			return *e;
	return NULL;
}

/*
 * Whether res says something about the kernel that another evaluation
 * would say again: ok, or the kernel's own compile error, wrong answer or
 * runtime error.  Never infra_error, a timeout or crash (the machine's
 * load and the limits, which the key leaves out, decide those) or
 * invalid (caught against the measured peaks and timed samples).
 */
static int cacheable(const json_t *res)
{
	static const char *const kinds[] = { "ok", "compile_error", "incorrect", "runtime_error" };
	const char *st = json_string_value(json_object_get(res, "status"));
	const char *origin =
		json_string_value(json_object_get(json_object_get(res, "fault"), "origin"));

	if (!st || (origin && strcmp(origin, "candidate")))
		return 0;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(*kinds); i++)
		if (!strcmp(st, kinds[i]))
			return 1;
	return 0;
}

/* Why res is not what kctl sent for v in round of s, or NULL. */
static const char *mismatch(struct session *s, int round, const json_t *res, const json_t *v,
			    const json_t *fps)
{
	const char *bid = json_string_value(json_object_get(res, "batch_id"));
	char *want = xasprintf("%s-r%03d", s->id, round);
	const json_t *dev = json_object_get(res, "device"), *f;
	int ours = bid && !strncmp(bid, want, strlen(want)) &&
		   (!bid[strlen(want)] || bid[strlen(want)] == '-');
	size_t i;

	free(want);
	if (!json_equal(json_object_get(res, "id"), json_object_get(v, "id")))
		return "its id is not the variant's";
	if (!ours)
		return "its batch id is not one kctl sent";
	if (json_is_object(dev)) {
		json_t *fp = fingerprint(dev);
		int known = 0;

		json_array_foreach (fps, i, f)
			known |= json_equal(f, fp);
		json_decref(fp);
		if (!known)
			return "its device is not one evalpod listed";
	} else if (!strcmp(json_string_value(json_object_get(res, "status")), "ok")) {
		return "it names no device";
	}
	return NULL;
}

/* What the round's candidates left for its baseline's entry. */
struct record {
	json_t *keys; /* the keys of the candidates stored */
	char *batch;  /* the batch they were all measured in, or NULL */
	int partial;  /* some candidate was not stored, or came from another batch */
};

/* Stores v's result in round's folder when it may be; 1 when stored. */
static int record_one(struct session *s, int round, const json_t *problem, const json_t *v,
		      const json_t *fps, const char *baseline, struct record *r)
{
	const char *id = json_string_value(json_object_get(v, "id")), *why, *bid;
	json_t *res = session_round_result(s, round, id), *inputs = NULL, *origin;
	char key[65];
	int rc;

	if (!res || json_object_get(res, "cache") || !cacheable(res)) {
		r->partial = 1;
		json_decref(res);
		return 0;
	}
	if ((why = mismatch(s, round, res, v, fps))) {
		log_warn("variant '%s': its result is not put in the result cache: %s", id, why);
		r->partial = 1;
		json_decref(res);
		return 0;
	}
	if (!(inputs = cache_use_inputs(s, problem, v))) {
		r->partial = 1;
		json_decref(res);
		return 0;
	}
	cache_key(inputs, key);
	bid = json_string_value(json_object_get(res, "batch_id"));
	origin = json_pack("{s:s, s:i, s:O, s:s, s:s?}", "session", s->id, "round", round,
			   "variant", json_object_get(v, "id"), "batch", bid, "baseline", baseline);
	rc = store_entry(s, key, inputs, res, origin, id);
	if (rc) {
		r->partial = 1;
	} else {
		json_array_append_new(r->keys, json_string(key));
		if (!r->batch)
			r->batch = xstrdup(bid);
		else if (strcmp(r->batch, bid))
			r->partial = 1;
	}
	json_decref(origin);
	json_decref(inputs);
	json_decref(res);
	return rc == 0;
}

/*
 * Every candidate of the round was measured in one batch and stored: the
 * baseline's measurement in that batch is stored too, under the key of the
 * incumbent's program and those candidates (fill_baseline).
 */
static void record_baseline(struct session *s, int round, const json_t *problem, const json_t *inc,
			    const struct record *r)
{
	const char *id = json_string_value(json_object_get(inc, "id"));
	json_t *res = id ? session_round_result(s, round, id) : NULL, *origin, *inputs;
	const char *bid = json_string_value(json_object_get(res, "batch_id"));
	const char *st = json_string_value(json_object_get(res, "status"));
	char key[65];

	if (!res || r->partial || !r->batch || json_object_get(res, "cache") || !bid ||
	    strcmp(bid, r->batch) || !st || strcmp(st, "ok") ||
	    !(inputs = baseline_inputs(s, problem, inc, r->keys))) {
		json_decref(res);
		return;
	}
	cache_key(inputs, key);
	origin = json_pack("{s:s, s:i, s:s, s:s, s:s}", "session", s->id, "round", round, "variant",
			   id, "batch", bid, "role", "baseline");
	store_entry(s, key, inputs, res, origin, id);
	json_decref(origin);
	json_decref(inputs);
	json_decref(res);
}

int cache_use_record(struct session *s, int round)
{
	json_t *vars, *problem, *fps, *inc, *v;
	const char *hook = test_hook();
	struct record r = { 0 };
	size_t i;
	int stored = 0;

	if (!cache_on(s) || !round_uses_cache(s, round, 1))
		return 0;
	if (hook) {
		log_debug("round %d: not put in the result cache: %s is set", round, hook);
		return 0;
	}
	r.keys = json_array();
	vars = store_variants(s->st, s->id, round);
	problem = cache_use_problem(s, round);
	fps = device_fingerprints(s);
	inc = round > 0 ? session_incumbent(s) : NULL;
	json_array_foreach (vars, i, v)
		stored += record_one(s, round, problem, v, fps,
				     json_string_value(json_object_get(inc, "hash")), &r);
	if (inc)
		record_baseline(s, round, problem, inc, &r);
	if (stored)
		log_debug("round %d: %d results put in the result cache", round, stored);
	free(r.batch);
	json_decref(r.keys);
	json_decref(inc);
	json_decref(fps);
	json_decref(problem);
	json_decref(vars);
	return stored;
}
