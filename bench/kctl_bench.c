/*
 * kctl_bench - figures for kctl's own cost, without evalpod.
 *
 *   kctl_bench fill DB SPEC N      a session of N synthetic evaluated variants
 *                                  (rounds of 1000) with results in DB
 *   kctl_bench rank DB SPEC        times ranking the last round of that session
 *   kctl_bench model DB SPEC       one model round's propose step (the spec's
 *                                  proposer), less the exchanges' own time
 *   kctl_bench round DB SPEC       one more round's controller work: propose,
 *                                  record, fake results, rank, learnings, report;
 *                                  prints its time and the process's peak RSS
 *
 * Synthetic results carry what ranking reads (status, speedups, robust CV,
 * roofline), with about one failure in eight.  This is a benchmark, not a
 * test: it prints figures.
 */
#include "err.h"
#include "fileio.h"
#include "jsonx.h"
#include "loop.h"
#include "propose.h"
#include "round.h"
#include "session.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define PER_ROUND 1000

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static json_t *fake_result(uint64_t *rng, const char *id)
{
	uint64_t r = (*rng = *rng * 6364136223846793005ull + 1442695040888963407ull) >> 33;
	double sp = 1.0 + (double)(r % 4000) / 100.0;

	if (r % 8 == 0)
		return json_pack(
			"{s:s, s:s, s:{s:s, s:s, s:s}}", "id", id, "status",
			r % 16 == 0 ? "compile_error" : "incorrect", "fault", "origin", "candidate",
			"kind", r % 16 == 0 ? "compile_error" : "wrong_values", "message",
			r % 16 == 0 ? "error: program.cl:3:1: expected ';'" : "'C' differs");
	return json_pack("{s:s, s:s, s:{s:f, s:f, s:{s:f}, s:{s:f}}, s:{s:f, s:f, s:s}}", "id", id,
			 "status", "ok", "performance", "median_ms", 10.0 / sp, "robust_cv", 0.02,
			 "speedup_vs_reference", "ratio_of_medians", sp, "speedup_vs_baseline",
			 "ratio_of_medians", sp / 20.0, "roofline", "gflops", sp * 3, "gbs", sp / 4,
			 "bottleneck", "compute");
}

static int open_session(struct session *s, struct store **st, const char *db, const char *spec,
			char *msg, size_t n)
{
	int rc;

	memset(s, 0, sizeof(*s));
	if ((rc = store_open(db, st, msg, n)) || (rc = spec_load(&s->spec, spec, msg, n)))
		return rc;
	s->st = *st;
	if ((rc = blocks_find(s->spec.template_src, s->spec.marker_start, s->spec.marker_end,
			      &s->blocks, msg, n)) ||
	    (rc = proposer_open(s->prop = xcalloc(1, sizeof(*s->prop)), &s->spec, msg, n)))
		return rc;
	s->id = xstrdup("bench");
	s->dir = xasprintf("%s.out", db);
	s->rng = 1;
	s->spec.max_rounds = 1000000;
	s->spec.max_evaluations = 100000000;
	return dir_make(s->dir, msg, n);
}

static int add_round(struct session *s, int round, size_t count, uint64_t *rng, char *msg, size_t n)
{
	int rc = store_begin(s->st, msg, n);

	if (!rc)
		rc = store_round_create(s->st, s->id, round, "exploit", msg, n);
	for (size_t k = 0; k < count && !rc; k++) {
		char *id = session_variant_id(round, k), hash[65], opts[128];
		json_t *params = json_object(), *v, *res;
		static const char *const names[] = { "A", "B", "C", "D", "E" };

		opts[0] = '\0';
		for (int p = 0; p < 5; p++) {
			int val = 1 + (int)((*rng = *rng * 6364136223846793005ull + 1) >> 60) % 10;

			json_object_set_new(params, names[p], json_integer(val));
			snprintf(opts + strlen(opts), sizeof(opts) - strlen(opts), " -D%s=%d",
				 names[p], val);
		}
		snprintf(opts + strlen(opts), sizeof(opts) - strlen(opts), " -DID=%d%05zu", round,
			 k);
		variant_hash(s->spec.template_src, opts, hash);
		v = json_pack("{s:s, s:s, s:i, s:s, s:i, s:s, s:s, s:o, s:s}", "id", id, "hash",
			      hash, "round", round, "parent", "r00-start", "lineage", -1, "source",
			      s->spec.template_src, "options", opts, "params", params, "rationale",
			      "synthetic");
		rc = store_variant_add(s->st, s->id, v, msg, n);
		res = fake_result(rng, id);
		if (!rc)
			rc = store_result_add(s->st, s->id, id, res, msg, n);
		json_decref(res);
		json_decref(v);
		free(id);
	}
	if (!rc)
		rc = store_round_set_state(s->st, s->id, round, ROUND_COLLECTED, msg, n);
	if (rc)
		store_rollback(s->st);
	else
		rc = store_commit(s->st, msg, n);
	return rc;
}

static int fill(struct session *s, long total, char *msg, size_t n)
{
	uint64_t rng = 42;
	json_t *start;
	int stop = 0, rc;
	double t0 = now_s(), rank_s = 0;

	rc = store_begin(s->st, msg, n);
	if (!rc)
		rc = store_session_create(s->st, s->id, s->spec.path, "-", s->dir, msg, n);
	if (!rc)
		rc = store_round_create(s->st, s->id, 0, "baseline", msg, n);
	start = json_pack("{s:s, s:s, s:i, s:i, s:s, s:s}", "id", "r00-start", "hash", "start",
			  "round", 0, "lineage", -1, "source", s->spec.template_src, "options", "");
	if (!rc)
		rc = store_variant_add(s->st, s->id, start, msg, n);
	json_decref(start);
	start = fake_result(&rng, "r00-start");
	json_object_set_new(start, "status", json_string("ok"));
	if (!rc)
		rc = store_result_add(s->st, s->id, "r00-start", start, msg, n);
	json_decref(start);
	if (!rc)
		rc = store_round_set_state(s->st, s->id, 0, ROUND_COLLECTED, msg, n);
	rc = rc ? (store_rollback(s->st), rc) : store_commit(s->st, msg, n);
	if (!rc)
		rc = round_rank(s, 0, &stop, msg, n);
	for (int r = 1; !rc && (long)r * PER_ROUND <= total; r++) {
		double t1;

		rc = add_round(s, r, PER_ROUND, &rng, msg, n);
		t1 = now_s();
		if (!rc && (long)(r + 1) * PER_ROUND <= total)
			rc = round_rank(s, r, &stop, msg, n); /* the last round stays unranked */
		rank_s += now_s() - t1;
	}
	printf("filled %ld synthetic results in %.1f s (ranking %d rounds on the way: %.2f s)\n",
	       total, now_s() - t0, (int)(total / PER_ROUND) - 1, rank_s);
	return rc;
}

static long peak_rss_kib(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static int rank_last(struct session *s, char *msg, size_t n)
{
	int last = store_round_last(s->st, s->id), stop = 0, rc;
	double t0 = now_s();

	rc = round_rank(s, last, &stop, msg, n);
	printf("ranking round %d (%d variants) of a session with %d results: %.3f s, peak RSS "
	       "%.1f MiB\n",
	       last, PER_ROUND, store_result_count(s->st, s->id), now_s() - t0,
	       (double)peak_rss_kib() / 1024);
	return rc;
}

/* One more round of controller work with results faked instead of evalpod. */
static int one_round(struct session *s, char *msg, size_t n)
{
	int round = store_round_last(s->st, s->id) + 1, stop = 0, rc;
	double t0 = now_s(), t_prop, t_rank;
	json_t *vars, *v;
	uint64_t rng = 7;
	size_t i;

	s->spec.variants_per_round = 16;
	rc = round_propose(s, round, "exploit", msg, n);
	t_prop = now_s() - t0;
	vars = rc ? NULL : store_variants(s->st, s->id, round);
	if (!rc && !(rc = store_begin(s->st, msg, n))) {
		json_array_foreach (vars, i, v) {
			json_t *res =
				fake_result(&rng, json_string_value(json_object_get(v, "id")));

			if (!rc)
				rc = store_result_add(s->st, s->id,
						      json_string_value(json_object_get(v, "id")),
						      res, msg, n);
			json_decref(res);
		}
		if (!rc)
			rc = store_round_set_state(s->st, s->id, round, ROUND_COLLECTED, msg, n);
		rc = rc ? (store_rollback(s->st), rc) : store_commit(s->st, msg, n);
	}
	t_rank = now_s();
	if (!rc)
		rc = round_rank(s, round, &stop, msg, n);
	if (!rc)
		rc = learnings_write(s, msg, n);
	if (!rc)
		rc = report_write(s, msg, n);
	t_rank = now_s() - t_rank;
	printf("one round of 16 proposals over %d variants: %.3f s (propose %.3f s, rank + "
	       "learnings + report %.3f s), peak RSS %.1f MiB\n",
	       store_result_count(s->st, s->id), now_s() - t0, t_prop, t_rank,
	       (double)peak_rss_kib() / 1024);
	json_decref(vars);
	return rc;
}

/*
 * One model round's controller work: round_propose with the spec's model
 * proposer (a command that answers at once), less the time the exchanges
 * themselves took (llm_calls.ms): building the context and the prompt,
 * parsing and applying the answers, recording them.
 */
static int model_round(struct session *s, char *msg, size_t n)
{
	int round = store_round_last(s->st, s->id) + 1, rc;
	double t0 = now_s(), wall, model_ms = 0;
	json_t *calls, *c, *vars;
	size_t i;

	s->spec.variants_per_round = 4;
	rc = round_propose(s, round, "explore", msg, n);
	wall = now_s() - t0;
	calls = store_llm_calls(s->st, s->id, round);
	json_array_foreach (calls, i, c)
		model_ms += json_number_value(json_object_get(c, "ms"));
	vars = store_variants_brief(s->st, s->id, round);
	printf("model round over %d variants: %.1f ms in all, %.1f ms in %zu exchange(s), "
	       "%.1f ms kctl's own; %zu variants admitted\n",
	       store_result_count(s->st, s->id), wall * 1e3, model_ms, json_array_size(calls),
	       wall * 1e3 - model_ms, json_array_size(vars));
	json_decref(vars);
	json_decref(calls);
	return rc;
}

int main(int argc, char **argv)
{
	struct session s;
	struct store *st = NULL;
	char msg[2048] = "";
	int rc;

	if (argc < 4) {
		fputs("usage: kctl_bench fill|rank|round|model DB SPEC [N]\n", stderr);
		return 2;
	}
	rc = open_session(&s, &st, argv[2], argv[3], msg, sizeof(msg));
	if (!rc && !strcmp(argv[1], "fill"))
		rc = fill(&s, argc > 4 ? strtol(argv[4], NULL, 10) : 100000, msg, sizeof(msg));
	else if (!rc && !strcmp(argv[1], "rank"))
		rc = rank_last(&s, msg, sizeof(msg));
	else if (!rc && !strcmp(argv[1], "round"))
		rc = one_round(&s, msg, sizeof(msg));
	else if (!rc && !strcmp(argv[1], "model"))
		rc = model_round(&s, msg, sizeof(msg));
	if (rc)
		fprintf(stderr, "kctl_bench: %s\n", msg);
	session_release(&s);
	store_close(st);
	return rc ? 1 : 0;
}
