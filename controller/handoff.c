/*
 * handoff.c - batches and results through object storage; the contract is
 * in handoff.h.
 */
#include "handoff.h"
#include "err.h"
#include "fileio.h"
#include "jsonx.h"
#include "log.h"
#include "s3.h"
#include "session.h"
#include "services.h"
#include "xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HANDOFF_RESULT_MAX   ((size_t)256 << 20)
#define HANDOFF_MAX_KEYS     200000
#define HANDOFF_MAX_ATTEMPTS 3 /* evalpod's timing stage runs at most this often */

/* Artifacts evalpod may write per program, besides one .ll and .s per kernel. */
static const char *const handoff_fixed_artifacts[] = { "trace.json", "program.ptx" };

int handoff_open(struct session *s, char *msg, size_t n)
{
	struct s3_opts o = { .endpoint = s->spec.s3.endpoint,
			     .region = s->spec.s3.region,
			     .profile = s->spec.s3.profile,
			     .addressing = (enum s3_addressing)s->spec.s3.addressing,
			     .ca_file = s->spec.s3.ca_file,
			     .interrupted = round_interrupted };
	char why[4096];
	int rc = s3_open(&s->s3, s->spec.storage, &o, why, sizeof(why));

	if (rc)
		return kerr_set(msg, n, rc, "%s: evaluator.storage: %s", s->spec.path, why);
	return 0;
}

/* "PREFIX/SESSION/rNNN/" (malloc'd). */
static char *handoff_round_prefix(const struct session *s, int round)
{
	char *rel = xasprintf("%s/r%03d/", s->id, round), *key = s3_key(s->s3, rel);

	free(rel);
	return key;
}

static double handoff_limit(const json_t *batch, const char *key, double def)
{
	const json_t *v = json_object_get(json_object_get(batch, "limits"), key);

	return json_is_number(v) ? json_number_value(v) : def;
}

/* The batch's timed shapes: each has its own timing phase (1 when none is marked). */
static double timed_shapes(const json_t *batch)
{
	const json_t *sh;
	size_t i, n = 0;

	json_array_foreach (json_object_get(batch, "shapes"), i, sh)
		n += json_is_true(json_object_get(sh, "timed"));
	return n ? (double)n : 1.0;
}

long handoff_worst_case(const json_t *batch)
{
	/* evalpod's defaults, docs/evalbatch.md#limits */
	double per_prog = handoff_limit(batch, "compile_timeout_s", 120) +
			  handoff_limit(batch, "run_timeout_s", 120);
	double progs = 2.0 + (double)json_array_size(json_object_get(batch, "variants"));
	double t = per_prog * progs + HANDOFF_MAX_ATTEMPTS *
					      handoff_limit(batch, "time_timeout_s", 900) *
					      timed_shapes(batch);

	return t > 604800 ? 604800 : (long)t;
}

long handoff_deadline(const struct session *s, const json_t *batch)
{
	if (s->spec.backend != BACKEND_KUBERNETES)
		return handoff_worst_case(batch);
	if (s->spec.kube.active_deadline_s > 0)
		return s->spec.kube.active_deadline_s;
	return handoff_worst_case(batch) + HANDOFF_POD_START_S;
}

long handoff_expiry(const struct session *s, const json_t *batch)
{
	long t = handoff_deadline(s, batch) +
		 (s->spec.s3.url_margin_s > 0 ? s->spec.s3.url_margin_s : 900);

	return t > 604800 ? 604800 : t;
}

/* Presigns a PUT for "PREFIX/.../BATCH_ID/rel" into obj[name]. */
static int handoff_put_url(struct session *s, const char *base, const char *rel, long expires,
			   time_t now, json_t *obj, const char *name, char *msg, size_t n)
{
	char *key = xasprintf("%s%s", base, rel);
	char *url = s3_presign(s->s3, "PUT", key, expires, now, msg, n);

	free(key);
	if (!url)
		return KERR_INVALID;
	json_object_set_new(obj, name, json_string(url));
	explicit_bzero(url, strlen(url));
	free(url);
	return 0;
}

/* The artifact URLs of program id: the fixed names and one .ll/.s per kernel. */
static int handoff_artifacts(struct session *s, const char *base, const char *id,
			     const json_t *batch, long exp, time_t now, json_t *arts, char *msg,
			     size_t n)
{
	json_t *mine = json_object(),
	       *launch = json_object_get(json_object_get(batch, "problem"), "launch"), *l;
	size_t i;
	int rc = 0;

	for (i = 0; i < sizeof(handoff_fixed_artifacts) / sizeof(*handoff_fixed_artifacts) && !rc;
	     i++) {
		char *rel = xasprintf("artifacts/%s/%s", id, handoff_fixed_artifacts[i]);

		rc = handoff_put_url(s, base, rel, exp, now, mine, handoff_fixed_artifacts[i], msg,
				     n);
		free(rel);
	}
	json_array_foreach (launch, i, l) {
		const char *k = json_string_value(json_object_get(l, "kernel"));
		static const char *const ext[] = { "ll", "s" };

		for (size_t e = 0; k && e < 2 && !rc; e++) {
			char *name = xasprintf("%s.%s", k, ext[e]);
			char *rel = xasprintf("artifacts/%s/%s", id, name);

			if (!json_object_get(mine, name))
				rc = handoff_put_url(s, base, rel, exp, now, mine, name, msg, n);
			free(rel);
			free(name);
		}
	}
	json_object_set_new(arts, id, mine);
	return rc;
}

/* Ids of the programs of batch: the reference, the baseline, the variants. */
static json_t *handoff_program_ids(const json_t *batch)
{
	json_t *ids = json_array(), *v;
	const json_t *base = json_object_get(batch, "baseline");
	size_t i;

	json_array_append_new(ids, json_string("reference"));
	if (base)
		json_array_append(ids, json_object_get(base, "id"));
	json_array_foreach (json_object_get(batch, "variants"), i, v)
		json_array_append(ids, json_object_get(v, "id"));
	return ids;
}

int handoff_publish(struct session *s, int round, json_t *batch, char **url, char *msg, size_t n)
{
	const char *bid = json_string_value(json_object_get(batch, "batch_id"));
	char *rp = handoff_round_prefix(s, round), *base = xasprintf("%s%s/", rp, bid);
	char *key = xasprintf("%sbatch.json", base), *text = NULL, *rel;
	json_t *out = json_object(), *results = json_object(), *arts = json_object();
	json_t *ids = handoff_program_ids(batch), *id;
	long exp = handoff_expiry(s, batch);
	time_t now = time(NULL);
	size_t i;
	int rc = handoff_put_url(s, base, "summary.json", exp, now, out, "summary", msg, n);

	*url = NULL;
	json_array_foreach (ids, i, id) {
		const char *p = json_string_value(id);

		if (rc)
			break;
		if (strcmp(p, "reference")) {
			rel = xasprintf("results/%s.json", p);
			rc = handoff_put_url(s, base, rel, exp, now, results, p, msg, n);
			free(rel);
		}
		if (!rc)
			rc = handoff_artifacts(s, base, p, batch, exp, now, arts, msg, n);
	}
	json_object_set_new(out, "results", results);
	json_object_set_new(out, "artifacts", arts);
	json_object_set_new(batch, "outputs", out);
	if (!rc) {
		text = jx_dump(batch);
		rc = s3_put(s->s3, key, text, strlen(text), "application/json", msg, n);
	}
	if (!rc && !(*url = s3_presign(s->s3, "GET", key, exp, now, msg, n)))
		rc = KERR_INVALID;
	/* the document now holds bearer URLs: take them out of memory we keep */
	json_object_del(batch, "outputs");
	if (text) {
		explicit_bzero(text, strlen(text));
		free(text);
	}
	json_decref(ids);
	free(key);
	free(base);
	free(rp);
	return rc;
}

/* --- fetch --------------------------------------------------------------- */

/*
 * A store's key made fit for a log line (malloc'd): control bytes, which a
 * hostile store could use to rewrite the operator's terminal, become '?'.
 */
static char *handoff_shown_key(const char *key)
{
	char *shown = xstrdup(key);

	for (char *p = shown; *p; p++)
		if ((unsigned char)*p < ' ' || *p == 0x7f)
			*p = '?';
	return shown;
}

/* Writes the object key to path unless path exists (or overwrite); creates its folder. */
static int handoff_copy(struct session *s, const char *key, const char *path, int overwrite,
			char *msg, size_t n)
{
	char *data = NULL, *dir = xstrdup(path), *slash = strrchr(dir, '/');
	size_t len = 0;
	int rc = 0;

	if (!overwrite && access(path, F_OK) == 0)
		goto out;
	if (slash)
		*slash = '\0';
	rc = dir_make(dir, msg, n);
	if (!rc)
		rc = s3_get(s->s3, key, HANDOFF_RESULT_MAX, &data, &len, msg, n);
	if (!rc && !len && !overwrite) {
		/* no document: the variant stays without a result (evaluated again) */
		char *shown = handoff_shown_key(key);

		log_warn("store: result object '%s' is empty (0 bytes); not taken", shown);
		free(shown);
		goto out;
	}
	if (!rc)
		rc = file_write_atomic(path, data, len, msg, n);
out:
	free(data);
	free(dir);
	return rc;
}

/*
 * Maps one key under a batch ("results/ID.json", "artifacts/ID/NAME",
 * "summary.json") to its local path under results_dir, or NULL to skip.
 * Names come from the store, so they are checked to be plain ids.
 */
static char *handoff_local_path(const char *results_dir, const char *rel)
{
	const char *id = NULL, *name = NULL, *slash;
	size_t idlen = 0;

	if (!strcmp(rel, "summary.json"))
		return xasprintf("%s/summary.json", results_dir);
	if (!strncmp(rel, "results/", 8)) {
		id = rel + 8;
		idlen = strlen(id);
		if (idlen <= 5 || strcmp(id + idlen - 5, ".json"))
			return NULL;
	} else if (!strncmp(rel, "artifacts/", 10) && (slash = strchr(rel + 10, '/'))) {
		id = rel + 10;
		idlen = (size_t)(slash - id);
		name = slash + 1;
	}
	if (!id || !idlen || id[0] == '.' || memchr(id, '/', idlen) ||
	    (name && (!*name || name[0] == '.' || strchr(name, '/'))))
		return NULL;
	if (name)
		return xasprintf("%s/%.*s/%s", results_dir, (int)idlen, id, name);
	return xasprintf("%s/%s", results_dir, id);
}

/*
 * The batch id of key, the path segment right after the round's prefix rp
 * ("rp" "BATCH_ID/..."), malloc'd; *rest points past its '/'.  Keys come
 * from the store: one that does not start with rp, or whose batch id is
 * not a plain name, is no result of this round and yields NULL.
 */
static char *handoff_batch_of(const char *rp, const char *key, const char **rest)
{
	size_t plen = strlen(rp), blen;
	const char *b, *slash;

	*rest = NULL;
	if (strncmp(key, rp, plen))
		return NULL; /* shorter than rp, or elsewhere */
	b = key + plen;
	slash = strchr(b, '/');
	if (!slash)
		return NULL;
	blen = (size_t)(slash - b);
	if (!blen || b[0] == '.' || blen > 255)
		return NULL;
	*rest = slash + 1;
	return xstrndup(b, blen);
}

int handoff_fetch(struct session *s, int round, const char *results_dir, char *msg, size_t n)
{
	char *rp = handoff_round_prefix(s, round);
	struct s3_list l = { 0 };
	json_t *batches = json_object(), *done;
	const char *bid;
	int rc = dir_make(results_dir, msg, n);

	if (!rc)
		rc = s3_list(s->s3, rp, HANDOFF_MAX_KEYS, &l, msg, n);
	/* newest attempt first: its result wins over an older one of the same id */
	for (size_t i = l.n; i-- > 0 && !rc;) {
		const char *rest;
		char *b = handoff_batch_of(rp, l.obj[i].key, &rest), *mark, *local;

		if (!b) {
			char *shown = handoff_shown_key(l.obj[i].key);

			log_warn("store: ignoring key '%s': not under this round's prefix "
				 "'%s' as BATCH_ID/...",
				 shown, rp);
			free(shown);
			continue;
		}
		mark = xasprintf("%s/.fetched-%s", results_dir, b);
		local = access(mark, F_OK) == 0 ? NULL : handoff_local_path(results_dir, rest);
		if (local) {
			int summary = !strcmp(local + strlen(local) - 13, "/summary.json");

			rc = handoff_copy(s, l.obj[i].key, local, summary, msg, n);
			/* drained once evalpod has finished it: its summary is listed */
			if (summary)
				json_object_set_new(batches, b, json_true());
		}
		free(local);
		free(mark);
		free(b);
	}
	json_object_foreach (batches, bid, done) {
		char *mark = xasprintf("%s/.fetched-%s", results_dir, bid);

		if (!rc)
			rc = file_write_atomic(mark, "", 0, msg, n);
		free(mark);
	}
	if (rc == KERR_NOTFOUND)
		rc = 0; /* an object gone between list and get: nothing to fetch */
	s3_list_release(&l);
	json_decref(batches);
	free(rp);
	return rc;
}
