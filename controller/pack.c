/*
 * pack.c - what a round hands to evalpod, on either backend: the programs
 * still without a final result, the EvalBatch for them, the infrastructure
 * failures set aside before a retry, and (object storage) the results the
 * evalpods uploaded; and the batch file of an attempt (round_pack).  The
 * round's steps (round.c) and the backends (backend-local.c, kround.c)
 * build on it; it uses the store, object storage (handoff.h) and the
 * session's services.
 */
#include "session.h"
#include "pack.h"
#include "services.h"
#include "bucket.h"
#include "err.h"
#include "jsonx.h"
#include "handoff.h"
#include "fileio.h"
#include "log.h"
#include "xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum { RESULT_NONE, RESULT_FINAL, RESULT_RETRY };

/* How many times id's evaluation failed for the infrastructure's reasons. */
static int infra_attempts(const char *dir, const char *id)
{
	char *pat = xasprintf("%s/results/%s.infra-", dir, id);
	char *base = strrchr(pat, '/') + 1;
	char *rdir = xasprintf("%s/results", dir);
	DIR *d = opendir(rdir);
	struct dirent *de;
	int count = 0;

	while (d && (de = readdir(d)))
		count += !strncmp(de->d_name, base, strlen(base));
	if (d)
		closedir(d);
	free(rdir);
	free(pat);
	return count;
}

/*
 * Whether id has a result: none yet, a final one (the kernel's outcome), or
 * one that only says the infrastructure failed, which is evaluated again
 * (by this kctl or a resumed one) until EVALPOD_ATTEMPTS such failures.
 */
static int result_state(const char *dir, const char *id)
{
	char *path = xasprintf("%s/results/%s.json", dir, id), *text = NULL, m[128];
	json_t *res = NULL;
	int state = RESULT_NONE;

	if (!file_read(path, 256u << 20, &text, NULL, m, sizeof(m)) &&
	    (res = json_loads(text, 0, NULL))) {
		const char *st = json_string_value(json_object_get(res, "status"));

		state = st && !strcmp(st, "infra_error") &&
					infra_attempts(dir, id) + 1 < EVALPOD_ATTEMPTS
				? RESULT_RETRY
				: RESULT_FINAL;
	}
	json_decref(res);
	free(text);
	free(path);
	return state;
}

static json_t *program_json(json_t *v)
{
	return json_pack("{s:O, s:O, s:O, s:O?, s:O?}", "id", json_object_get(v, "id"), "source",
			 json_object_get(v, "source"), "build_options",
			 json_object_get(v, "options"), "parent", json_object_get(v, "parent"),
			 "rationale", json_object_get(v, "rationale"));
}

static double limit_num(const json_t *limits, const char *key, double def)
{
	const json_t *v = json_object_get(limits, key);

	return json_is_number(v) ? json_number_value(v) : def;
}

/*
 * Seconds the reference's check worker took, estimated from the newest
 * summary of rounds round..0 that timed it: its build, then one run of its
 * plan per shape, seed and determinism pass plus evalpod's EVALPOD_TIMING_SEEDS
 * timing seeds at every timed shape, each as long as its median at the (primary) timed shape
 * (the largest, in practice).  0 when no summary has it.
 */
/* Input sets the reference worker answers at a timed shape: 3 rotating, 2 audit (evalpod.md). */
#define EVALPOD_TIMING_SEEDS 5.0

static double reference_check_estimate_s(struct session *s, int round)
{
	const json_t *seeds = json_object_get(s->spec.correctness, "seeds");
	size_t nseeds = json_is_array(seeds) ? json_array_size(seeds) : 3;
	double runs = 2.0 * (double)nseeds * (double)json_array_size(s->spec.shapes) +
		      EVALPOD_TIMING_SEEDS * (double)bucket_count(&s->spec);

	for (int r = round; r >= 0; r--) {
		char *dir = session_round_dir(s, r);
		char *path = xasprintf("%s/results/summary.json", dir);
		json_t *sum = json_load_file(path, 0, NULL),
		       *ref = json_object_get(sum, "reference");
		const json_t *med = json_object_get(
			json_object_get(json_object_get(ref, "performance"), "stats"), "median");
		double build = limit_num(json_object_get(ref, "compile"), "build_ms", 0), est = 0;

		if (json_is_number(med) && json_number_value(med) > 0)
			est = (build + runs * json_number_value(med)) / 1000;
		json_decref(sum);
		free(path);
		free(dir);
		if (est > 0)
			return est;
	}
	return 0;
}

json_t *session_batch_limits(struct session *s, int round)
{
	json_t *lim = s->spec.limits ? json_deep_copy(s->spec.limits) : json_object();
	/* evalpod's defaults, docs/evalbatch.md#limits */
	double compile = limit_num(lim, "compile_timeout_s", 120);
	double run = limit_num(lim, "run_timeout_s", 120);
	double timing = limit_num(lim, "time_timeout_s", 900);
	double want = REF_DEADLINE_FACTOR * reference_check_estimate_s(s, round);

	if (s->deadline_s > want)
		want = s->deadline_s;
	if (want > compile + run) {
		double ratio = want / (compile + run);

		run = want - compile > 86400 ? 86400 : want - compile;
		timing = timing * ratio > 604800 ? 604800 : timing * ratio;
		json_object_set_new(lim, "run_timeout_s", json_real(run));
		json_object_set_new(lim, "time_timeout_s", json_real(timing));
	}
	return lim;
}

double session_check_deadline(struct session *s, int round)
{
	json_t *lim = session_batch_limits(s, round);
	double t = limit_num(lim, "compile_timeout_s", 120) + limit_num(lim, "run_timeout_s", 120);

	json_decref(lim);
	return t;
}

json_t *round_batch_json(struct session *s, int round, json_t *todo, const char *batch_id)
{
	json_t *b = json_object(), *inc = NULL, *vars, *row = store_round_get(s->st, s->id, round);
	json_t *conf = json_object_get(row, "confirm");
	char *bid = xstrdup(batch_id);
	static const char *const optional[] = { "correctness", "measurement", "limits", "device" };
	json_t *parts[] = { s->spec.correctness, s->spec.measurement, s->spec.limits,
			    s->spec.device };

	/* A confirmation times its first program as the baseline, with its own
	 * measurement settings; a round from 1 on, the incumbent. */
	if (json_is_object(conf)) {
		inc = store_variant_get(
			s->st, s->id,
			json_string_value(json_array_get(json_object_get(conf, "programs"), 0)));
		if (json_is_object(json_object_get(conf, "measurement")))
			parts[1] = json_object_get(conf, "measurement");
	} else if (round > 0) {
		inc = session_incumbent(s);
	}

	json_object_set_new(b, "schema", json_string("evalpod.batch"));
	json_object_set_new(b, "version", json_integer(1));
	json_object_set_new(b, "batch_id", json_string(bid));
	json_object_set(b, "problem", s->spec.problem);
	json_object_set(b, "shapes", s->spec.shapes);
	json_object_set_new(b, "reference",
			    json_pack("{s:s, s:s}", "source", s->spec.reference_src,
				      "build_options", s->spec.build_options));
	if (inc) {
		json_t *base = program_json(inc);

		json_object_del(base, "rationale");
		json_object_set_new(b, "baseline", base);
	}
	vars = json_array();
	for (size_t i = 0; i < json_array_size(todo); i++) {
		json_t *p = program_json(json_array_get(todo, i));

		if (inc && !strcmp(json_string_value(json_object_get(p, "id")),
				   json_string_value(json_object_get(inc, "id"))))
			json_decref(p); /* already there as the baseline */
		else
			json_array_append_new(vars, p);
	}
	json_object_set_new(b, "variants", vars);
	for (size_t i = 0; i < 4; i++)
		if (parts[i])
			json_object_set(b, optional[i], parts[i]);
	json_object_set_new(b, "limits", session_batch_limits(s, round));
	json_decref(inc);
	json_decref(row);
	free(bid);
	return b;
}

/* Variants of the round without a final result (new reference): see result_state. */
json_t *round_pending(struct session *s, int round, const char *dir)
{
	json_t *all = round_programs(s, round), *todo = json_array(), *v;
	size_t i;

	json_array_foreach (all, i, v)
		if (result_state(dir, json_string_value(json_object_get(v, "id"))) != RESULT_FINAL)
			json_array_append(todo, v);
	json_decref(all);
	return todo;
}

/*
 * Results that say the infrastructure failed are not evidence about a
 * kernel: before a variant is evaluated again, its earlier result is set
 * aside (renamed ID.infra-N.json, kept for the record).
 */
void round_set_aside_infra(const char *dir, json_t *vars)
{
	size_t i;
	json_t *v;

	json_array_foreach (vars, i, v) {
		const char *id = json_string_value(json_object_get(v, "id"));
		char *path, *to;

		if (result_state(dir, id) != RESULT_RETRY)
			continue;
		path = xasprintf("%s/results/%s.json", dir, id);
		to = xasprintf("%s/results/%s.infra-%d.json", dir, id, infra_attempts(dir, id) + 1);
		if (rename(path, to))
			log_warn("cannot set aside '%s': %s", path, strerror(errno));
		free(to);
		free(path);
	}
}

/*
 * With object storage: brings into the round's results/ what evalpods
 * uploaded (a kctl that died before fetching left it there).
 */
int round_fetch(struct session *s, const char *dir, int round, char *msg, size_t n)
{
	char *res = xasprintf("%s/results", dir);
	int rc = s->s3 ? handoff_fetch(s, round, res, msg, n) : 0;

	free(res);
	return rc;
}

int round_pack(struct session *s, int round, char **batch_path, char *msg, size_t n)
{
	char *dir = session_round_dir(s, round), *text, *bid;
	json_t *todo = round_pending(s, round, dir), *b;
	int attempt = 0, rc;

	*batch_path = xasprintf("%s/batch.json", dir);
	while (access(*batch_path, F_OK) == 0) {
		free(*batch_path);
		*batch_path = xasprintf("%s/batch-%d.json", dir, ++attempt);
	}
	bid = attempt ? xasprintf("%s-r%03d-%d", s->id, round, attempt)
		      : xasprintf("%s-r%03d", s->id, round);
	b = round_batch_json(s, round, todo, bid);
	free(bid);
	text = jx_dump(b);
	rc = dir_make(dir, msg, n);
	if (!rc)
		rc = file_write_atomic(*batch_path, text, strlen(text), msg, n);
	if (!rc && (rc = store_begin(s->st, msg, n)) == 0) {
		json_t *r = store_round_get(s->st, s->id, round);

		if (json_integer_value(json_object_get(r, "state")) < ROUND_PACKED)
			rc = store_round_set_state(s->st, s->id, round, ROUND_PACKED, msg, n);
		json_decref(r);
		if (rc)
			store_rollback(s->st);
		else
			rc = store_commit(s->st, msg, n);
	}
	if (!rc)
		crash_point("packed", round);
	free(text);
	json_decref(b);
	json_decref(todo);
	free(dir);
	return rc;
}
