/*
 * rank.c - what a round's results mean: the incumbent, the lineages, the
 * learnings and the navigator's decision, recorded in one transaction.
 *
 * Speedups compared within a round are the ratios evalpod measured side by
 * side in one process: a candidate replaces the incumbent (which every
 * round re-times as the batch's baseline) only when its speedup over it
 * exceeds 1 + margin, margin being the larger of 1% and the spreads
 * measured on both.  Lineage bests from different rounds are compared on
 * their speedup over the reference, which each round measures side by side
 * as well (beside the reference, or beside the incumbent whose own speedup
 * over it an earlier round measured: evalpod's anchors), with the same
 * margin.  Ties never replace.  What is recorded as a success needs more:
 * side-by-side intervals (update_incumbent, lineage_shown).
 *
 * With several shape buckets (bucket.h) every speedup ranked here is the
 * geometric mean of the per-bucket speedups, each measured side by side.
 *
 * The incumbent is kept as lineage 0 in the store ("the incumbent's line");
 * lineages 1.. are the search lineages of the spec's batch.top_k.
 */
#include "session.h"
#include "services.h"
#include "round.h"
#include "winner.h"
#include "bucket.h"
#include "pairs.h"
#include "propose.h"
#include "err.h"
#include "fileio.h"
#include "jsonx.h"
#include "log.h"
#include "sbuf.h"
#include "xalloc.h"

#include <math.h>
#include <string.h>
#include <time.h>

#define INCUMBENT_LINE 0
#define MIN_MARGIN     0.01

static double num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

static double perf_num(json_t *result, const char *key)
{
	return num(json_object_get(result, "performance"), key);
}

double rank_margin(json_t *a, json_t *b)
{
	double m = MIN_MARGIN, ca = perf_num(a, "robust_cv"), cb = perf_num(b, "robust_cv");

	if (isfinite(ca) && ca > m)
		m = ca;
	if (isfinite(cb) && cb > m)
		m = cb;
	return m;
}

static int is_ok(json_t *v)
{
	const char *st = json_string_value(json_object_get(v, "status"));

	return st && !strcmp(st, "ok") && isfinite(num(v, "speedup_ref"));
}

/*
 * Variants looked up by id during one ranking, fetched from the store on
 * first use: ranking touches the round's variants and the few lineage
 * bests, never the whole history.
 */
struct vcache {
	struct session *s;
	json_t *map;
};

/* The variant id (with its figures), borrowed from the cache; NULL if none. */
static json_t *vc_get(struct vcache *vc, const char *id)
{
	json_t *v;

	if (!id)
		return NULL;
	v = json_object_get(vc->map, id);
	if (!v && (v = store_variant_get(vc->s->st, vc->s->id, id))) {
		bucket_rank_row(vc->s, v);
		json_object_set_new(vc->map, id, v);
	}
	return v;
}

/* "TM=8 VN=16" from the parameters, else the rationale, else the id. */
static void describe(json_t *v, struct sbuf *b)
{
	json_t *params = json_object_get(v, "params"), *val;
	const char *key, *why = json_string_value(json_object_get(v, "rationale"));

	if (json_is_object(params) && json_object_size(params)) {
		json_object_foreach (params, key, val)
			sbuf_addf(b, "%s%s=%lld", b->len ? " " : "", key,
				  (long long)json_integer_value(val));
		return;
	}
	sbuf_adds(b, why ? why : json_string_value(json_object_get(v, "id")));
}

/* A failure's signature: what makes two failures "the same pattern". */
static char *signature(const char *status, json_t *fault)
{
	const char *kind = json_string_value(json_object_get(fault, "kind"));
	const char *m = json_string_value(json_object_get(fault, "message"));
	struct sbuf b = SBUF_INIT;

	sbuf_addf(&b, "%s: ", status);
	if (!strcmp(status, "compile_error") && m) {
		const char *e = strstr(m, "error:");

		/* "error: program.cl:3:26: expected ';'" -> "expected ';'" */
		m = e ? e + 6 : m;
		while (*m == ' ')
			m++;
		if (!strncmp(m, "program.cl:", 11)) {
			m += 11;
			while ((*m >= '0' && *m <= '9') || *m == ':')
				m++;
			while (*m == ' ')
				m++;
		}
		sbuf_add(&b, m, strcspn(m, "\n"));
	} else {
		sbuf_adds(&b, kind ? kind : "unknown");
	}
	return sbuf_detach(&b, NULL);
}

static int learn_failure(struct session *s, json_t *v, int round, char *msg, size_t n)
{
	const char *st = json_string_value(json_object_get(v, "status"));
	const char *id = json_string_value(json_object_get(v, "id"));
	json_t *res, *fault;
	struct sbuf text = SBUF_INIT, what = SBUF_INIT;
	char *key;
	int rc;

	if (!st || !strcmp(st, "ok") || !strcmp(st, "infra_error"))
		return 0;
	res = store_result_get(s->st, s->id, id);
	fault = json_object_get(res, "fault");
	key = signature(st, fault);
	describe(v, &what);
	sbuf_addf(&text, "%s (first seen in %s: %s)", key, id, what.buf);
	if (json_string_value(json_object_get(fault, "message")) && strcmp(st, "compile_error"))
		sbuf_addf(&text, " - %.160s", json_string_value(json_object_get(fault, "message")));
	rc = store_learning_add(s->st, s->id, 'F', key, st, text.buf, round, msg, n);
	free(key);
	sbuf_release(&text);
	sbuf_release(&what);
	json_decref(res);
	return rc < 0 ? rc : 0;
}

static const char *bottleneck(struct session *s, const char *id)
{
	static char buf[32];
	json_t *res = store_result_get(s->st, s->id, id);
	const char *b =
		json_string_value(json_object_get(json_object_get(res, "roofline"), "bottleneck"));

	strlcpy(buf, b ? b : "?", sizeof(buf));
	json_decref(res);
	return buf;
}

/* Records a success: better moved past old, evidence saying by how much. */
static int learn_success(struct session *s, json_t *better, json_t *old, const char *what,
			 const char *evidence, int round, char *msg, size_t n)
{
	const char *id = json_string_value(json_object_get(better, "id"));
	const char *oid = old ? json_string_value(json_object_get(old, "id")) : "the reference";
	struct sbuf text = SBUF_INIT, desc = SBUF_INIT;
	char b0[32];
	int rc;

	describe(better, &desc);
	strlcpy(b0, old ? bottleneck(s, oid) : "?", sizeof(b0));
	sbuf_addf(&text, "%s %s %s: %s; %s; bottleneck %s -> %s", id, what, oid, desc.buf, evidence,
		  b0, bottleneck(s, id));
	{
		char *key = xasprintf("%s %s", id, what);

		rc = store_learning_add(s->st, s->id, 'S', key, what, text.buf, round, msg, n);
		free(key);
	}
	sbuf_release(&text);
	sbuf_release(&desc);
	return rc < 0 ? rc : 0;
}

/* The speedup of b over a from their per-round pairs (one process's). */
static struct pair_verdict speedup_over(json_t *a, json_t *b)
{
	struct pairs p = { 0 };
	struct pair_verdict v;

	pairs_add(&p, a, b);
	v = pairs_verdict(&p);
	pairs_release(&p);
	return v;
}

/*
 * The incumbent after round r: the round's fastest candidate against the
 * re-timed incumbent, if it beats it by more than the margin.  With no
 * incumbent yet, the fastest candidate against the reference.
 */
static int update_incumbent(struct session *s, int round, json_t *rv, struct sbuf *note, char *msg,
			    size_t n)
{
	json_t *inc = session_incumbent(s), *best = NULL, *v;
	double best_ratio = 0;
	size_t i;
	int rc = 0;

	json_array_foreach (rv, i, v) {
		double r = inc ? num(v, "speedup_base") : num(v, "speedup_ref");

		if (is_ok(v) && isfinite(r) && r > best_ratio) {
			best_ratio = r;
			best = v;
		}
	}
	if (best && inc) {
		const char *bid = json_string_value(json_object_get(best, "id"));
		const char *iid = json_string_value(json_object_get(inc, "id"));
		json_t *cres = session_round_result(s, round, bid),
		       *ires = session_round_result(s, round, iid);
		double m = rank_margin(cres, ires);

		if (best_ratio > 1 + m) {
			/* a success only where the side-by-side interval shows it */
			struct pair_verdict pv = speedup_over(ires, cres);
			struct sbuf ev = SBUF_INIT, iv = SBUF_INIT;

			pairs_describe(&iv, pv);
			sbuf_addf(&ev, "faster side by side in round %d by %s", round, iv.buf);
			sbuf_addf(note, "%s beats the incumbent %s by %.1f%% (margin %.1f%%)", bid,
				  iid, (best_ratio - 1) * 100, m * 100);
			if (pairs_faster_alone(pv)) {
				sbuf_adds(note, ". ");
				rc = learn_success(s, best, inc, "replaced the incumbent", ev.buf,
						   round, msg, n);
			} else {
				sbuf_addf(note,
					  ", but not beyond what one process can be off by (%s; "
					  "%.0f%% allowed): not a success. ",
					  iv.buf, PAIRS_PROCESS_BIAS * 100);
			}
			sbuf_release(&ev);
			sbuf_release(&iv);
		} else {
			sbuf_addf(note,
				  "no candidate beats the incumbent %s by more than the "
				  "margin (best %s at %.3fx, margin %.1f%%). ",
				  iid, bid, best_ratio, m * 100);
			best = NULL;
		}
		json_decref(cres);
		json_decref(ires);
	} else if (best) {
		sbuf_addf(note, "%s is the first incumbent (%.2fx vs reference). ",
			  json_string_value(json_object_get(best, "id")), best_ratio);
	}
	if (!rc && best)
		rc = store_lineage_put(s->st, s->id, INCUMBENT_LINE,
				       json_string_value(json_object_get(best, "id")), 0, 1, round,
				       msg, n);
	json_decref(inc);
	return rc;
}

/* "1.12x (95% CI 1.05-1.20, 8 pairs)" or "1.12x (3 pairs: too few for an interval)" */
static void describe_over(struct sbuf *b, struct pair_verdict v)
{
	sbuf_addf(b, "%.2fx", v.median);
	if (isfinite(v.lo))
		sbuf_addf(b, " (95%% CI %.2f-%.2f, %zu pairs)", v.lo, v.hi, v.n);
	else
		sbuf_addf(b, " (%zu pairs: too few for an interval)", v.n);
}

/*
 * Whether a measurement shows that child (this round; cres its result) is
 * faster than old (the lineage's best, from an earlier round; ores its
 * result), with what it shows in ev.
 * Their speedups over the reference came from different processes, through
 * a reference or an anchor unlike either kernel, from however few samples
 * the round took: on a loaded machine two equally fast variants measured
 * 0.67x and 3.20x that way.  So only side-by-side figures count, both
 * against base, the program this round timed as its baseline:
 *   - old is base: one comparison in one process, which shows a gain only
 *     when its 95% interval lies above 1 + PAIRS_PROCESS_BIAS (as a new
 *     incumbent's);
 *   - old was timed beside base in its own round: two comparisons in two
 *     processes, each of which can be off by PAIRS_PROCESS_BIAS, so the
 *     child's interval over base must lie above old's by both allowances;
 *   - otherwise nothing compares them side by side, and nothing is shown.
 * Fewer than 6 pairs give no interval and show nothing.
 */
static int lineage_shown(struct session *s, int round, const char *base, json_t *old, json_t *cres,
			 json_t *ores, struct sbuf *ev)
{
	const char *oid = json_string_value(json_object_get(old, "id"));
	int oround = (int)json_integer_value(json_object_get(old, "round"));
	json_t *xr = base ? session_round_result(s, round, base) : NULL, *xo = NULL;
	double allow = 1 + PAIRS_PROCESS_BIAS;
	struct pair_verdict vc = speedup_over(xr, cres), vo;
	int shown = 0;

	if (!xr) {
		sbuf_adds(ev, "not timed beside this round's incumbent");
	} else if (!strcmp(oid, base)) {
		shown = pairs_faster_alone(vc);
		sbuf_addf(ev, "side by side in round %d: ", round);
		pairs_describe(ev, vc);
	} else if (!(xo = session_round_result(s, oround, base))) {
		sbuf_addf(ev, "%s was not timed beside %s in round %d", oid, base, oround);
	} else {
		vo = speedup_over(xo, ores);
		shown = vc.lo == vc.lo && vo.hi == vo.hi && vc.lo > vo.hi * allow * allow;
		sbuf_addf(ev, "over %s, each timed beside it: ", base);
		describe_over(ev, vo);
		sbuf_addf(ev, " in round %d, ", oround);
		describe_over(ev, vc);
		sbuf_addf(ev, " in round %d", round);
	}
	json_decref(xr);
	json_decref(xo);
	return shown;
}

static int lineage_max(json_t *lins)
{
	int m = 0;
	size_t i;
	json_t *l;

	json_array_foreach (lins, i, l)
		if (json_integer_value(json_object_get(l, "lineage")) > m)
			m = (int)json_integer_value(json_object_get(l, "lineage"));
	return m;
}

static int cmp_speedup(const void *a, const void *b)
{
	double x = num(*(json_t *const *)a, "speedup_ref"),
	       y = num(*(json_t *const *)b, "speedup_ref");

	return (x < y) - (x > y);
}

/* Founds lineages from the top-K ok variants so far. */
static int found_lineages(struct session *s, int round, char *msg, size_t n)
{
	json_t *all = store_variants_brief(s->st, s->id, -1);
	size_t i, nok = 0;
	json_t **ok = xcalloc(json_array_size(all) + 1, sizeof(*ok)), *v;
	int rc = 0;

	bucket_rank_rows(s, all);
	json_array_foreach (all, i, v)
		if (is_ok(v))
			ok[nok++] = v;
	qsort(ok, nok, sizeof(*ok), cmp_speedup);
	for (i = 0; i < nok && i < (size_t)s->spec.top_k && !rc; i++) {
		const char *id = json_string_value(json_object_get(ok[i], "id"));

		rc = store_lineage_put(s->st, s->id, (int)i + 1, id, 0, 1, round, msg, n);
		if (!rc)
			rc = store_variant_set_lineage(s->st, s->id, id, (int)i + 1, msg, n);
	}
	free(ok);
	json_decref(all);
	return rc;
}

/*
 * Advances lineage l by round r's best child in it, or counts stagnation.
 * base is the program the round timed as its baseline (NULL if none).
 */
static int step_lineage(struct session *s, int round, const char *base, json_t *l, json_t *rv,
			struct vcache *vc, struct sbuf *note, char *msg, size_t n)
{
	int num_l = (int)json_integer_value(json_object_get(l, "lineage"));
	int stag = (int)json_integer_value(json_object_get(l, "stagnation"));
	const char *best_id = json_string_value(json_object_get(l, "best"));
	json_t *best = vc_get(vc, best_id), *child = NULL, *v;
	size_t i;

	json_array_foreach (rv, i, v)
		if (is_ok(v) && json_integer_value(json_object_get(v, "lineage")) == num_l &&
		    (!child || num(v, "speedup_ref") > num(child, "speedup_ref")))
			child = v;
	if (child && best) {
		const char *cid = json_string_value(json_object_get(child, "id"));
		json_t *cres = store_result_get(s->st, s->id, cid);
		json_t *bres = store_result_get(s->st, s->id, best_id);
		double m = rank_margin(cres, bres), c = num(child, "speedup_ref");
		double b = num(best, "speedup_ref");

		if (c > b * (1 + m)) {
			/* The lineage moves on its speedups over the reference; a
			 * success needs what lineage_shown asks for. */
			struct sbuf ev = SBUF_INIT;
			int rc = store_lineage_put(s->st, s->id, num_l, cid, 0, 1, round, msg, n);
			int shown;

			sbuf_addf(&ev,
				  "%.2fx -> %.2fx vs reference, measured in rounds %lld and %d; ",
				  b, c,
				  (long long)json_integer_value(json_object_get(best, "round")),
				  round);
			shown = lineage_shown(s, round, base, best, cres, bres, &ev);
			json_decref(cres);
			json_decref(bres);
			sbuf_addf(note, "lineage %d: %s improves on %s (%s)%s. ", num_l, cid,
				  best_id, ev.buf,
				  shown ? "" : ": not shown side by side, not a success");
			if (!rc && shown)
				rc = learn_success(s, child, best, "improved lineage of", ev.buf,
						   round, msg, n);
			sbuf_release(&ev);
			return rc;
		}
		json_decref(cres);
		json_decref(bres);
	}
	return store_lineage_put(s->st, s->id, num_l, best_id, stag + 1, 1, round, msg, n);
}

/* A new lineage for the best explore-born variant that earns one. */
static int adopt_explorer(struct session *s, int round, json_t *rv, struct vcache *vc, json_t *lins,
			  char *msg, size_t n)
{
	json_t *cand = NULL, *v;
	double worst = INFINITY;
	size_t i, active = 0;
	int l;

	json_array_foreach (rv, i, v)
		if (is_ok(v) && json_integer_value(json_object_get(v, "lineage")) < 0 &&
		    (!cand || num(v, "speedup_ref") > num(cand, "speedup_ref")))
			cand = v;
	if (!cand)
		return 0;
	json_array_foreach (lins, i, v) {
		json_t *best;

		if (json_integer_value(json_object_get(v, "lineage")) == INCUMBENT_LINE ||
		    !json_is_true(json_object_get(v, "active")))
			continue;
		active++;
		best = vc_get(vc, json_string_value(json_object_get(v, "best")));
		if (best && num(best, "speedup_ref") < worst)
			worst = num(best, "speedup_ref");
	}
	if (active >= (size_t)s->spec.max_active_lineages && num(cand, "speedup_ref") <= worst)
		return 0;
	l = lineage_max(lins) + 1;
	{
		const char *id = json_string_value(json_object_get(cand, "id"));
		int rc = store_lineage_put(s->st, s->id, l, id, 0, 1, round, msg, n);

		return rc ? rc : store_variant_set_lineage(s->st, s->id, id, l, msg, n);
	}
}

struct lrank {
	json_t *row;
	double speedup;
};

static int cmp_prune(const void *a, const void *b)
{
	const struct lrank *x = a, *y = b;
	json_int_t sx = json_integer_value(json_object_get(x->row, "stagnation"));
	json_int_t sy = json_integer_value(json_object_get(y->row, "stagnation"));

	if (sx != sy)
		return sx < sy ? 1 : -1;                              /* most stagnant first */
	return (x->speedup > y->speedup) - (x->speedup < y->speedup); /* then slowest */
}

/* Deactivates lineages beyond max_active_lineages: most stagnant, then slowest. */
static int prune(struct session *s, int round, struct vcache *vc, struct sbuf *note, char *msg,
		 size_t n)
{
	json_t *lins = store_lineages(s->st, s->id), *l;
	struct lrank *act = xcalloc(json_array_size(lins) + 1, sizeof(*act));
	size_t i, na = 0;
	int rc = 0;

	json_array_foreach (lins, i, l) {
		if (json_integer_value(json_object_get(l, "lineage")) == INCUMBENT_LINE ||
		    !json_is_true(json_object_get(l, "active")))
			continue;
		act[na].row = l;
		act[na++].speedup = num(vc_get(vc, json_string_value(json_object_get(l, "best"))),
					"speedup_ref");
	}
	qsort(act, na, sizeof(*act), cmp_prune);
	for (i = 0; na > (size_t)s->spec.max_active_lineages &&
		    i < na - s->spec.max_active_lineages && !rc;
	     i++) {
		json_t *r = act[i].row;

		sbuf_addf(note, "lineage %lld pruned (stagnant %lld rounds). ",
			  (long long)json_integer_value(json_object_get(r, "lineage")),
			  (long long)json_integer_value(json_object_get(r, "stagnation")));
		rc = store_lineage_put(s->st, s->id,
				       (int)json_integer_value(json_object_get(r, "lineage")),
				       json_string_value(json_object_get(r, "best")),
				       (int)json_integer_value(json_object_get(r, "stagnation")), 0,
				       round, msg, n);
	}
	free(act);
	json_decref(lins);
	return rc;
}

static double minutes_since(const char *iso)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	if (!iso || !strptime(iso, "%Y-%m-%dT%H:%M:%S", &tm))
		return 0;
	return difftime(time(NULL), timegm(&tm)) / 60.0;
}

/*
 * The navigator: what follows round r, and why.  A tuner session whose
 * lineages have all stagnated gets one "finish" round before it stops: the
 * tuner spends it as its last search round (the model's best predictions
 * and the incumbent's twin, round.c), which a session cut short by
 * stagnation would otherwise never run.
 */
static const char *decide(struct session *s, int round, struct sbuf *why, int *stop)
{
	json_t *inc = session_incumbent(s), *lins = store_lineages(s->st, s->id), *l;
	json_t *row = store_session_get(s->st, s->id);
	json_t *rrow = store_round_get(s->st, s->id, round);
	const char *rmode = json_string_value(json_object_get(rrow, "mode"));
	int finishing = rmode && !strcmp(rmode, NAV_FINISH), sr = s->spec.stagnation_rounds;
	const char *srs = sr == 1 ? "" : "s";
	double best;
	int max_rounds = session_max_rounds(s);
	size_t i, evaluated = 0, active = 0, stagnant = 0, unimproved = 0, founded = 0;
	double minutes = minutes_since(json_string_value(json_object_get(row, "created")));
	const char *d = "exploit";
	char spent[256];

	bucket_rank_row(s, inc);
	best = inc ? num(inc, "speedup_ref") : NAN;
	evaluated = (size_t)store_result_count(s->st, s->id);
	json_array_foreach (lins, i, l) {
		json_int_t st = json_integer_value(json_object_get(l, "stagnation"));

		if (json_integer_value(json_object_get(l, "lineage")) == INCUMBENT_LINE ||
		    !json_is_true(json_object_get(l, "active")))
			continue;
		active++;
		stagnant += st >= sr;
		unimproved += st >= 1;
		founded += json_integer_value(json_object_get(l, "created_round")) == round;
	}
	*stop = 1;
	if (s->spec.target_speedup > 0 && best >= s->spec.target_speedup)
		sbuf_addf(why, "target reached: %.2fx >= %.2fx vs reference", best,
			  s->spec.target_speedup);
	else if (round >= max_rounds)
		sbuf_addf(why, "round budget spent (%d rounds)", max_rounds);
	else if ((int)evaluated >= s->spec.max_evaluations)
		sbuf_addf(why, "evaluation budget spent (%zu of %d)", evaluated,
			  s->spec.max_evaluations);
	else if (s->spec.max_minutes > 0 && minutes >= s->spec.max_minutes)
		sbuf_addf(why, "time budget spent (%.1f of %.1f minutes)", minutes,
			  s->spec.max_minutes);
	else if (model_budget_spent(s, spent, sizeof(spent)))
		sbuf_adds(why, spent);
	else if (finishing)
		sbuf_addf(why, "last round done (every lineage had been stagnant for %d round%s)",
			  sr, srs);
	else if (active && stagnant == active && s->spec.proposer != PROPOSER_TUNE)
		sbuf_addf(why, "every lineage stagnant for %d round%s", sr, srs);
	else
		*stop = 0;
	if (*stop) {
		d = "stop";
	} else if (active && stagnant == active) {
		d = NAV_FINISH;
		sbuf_addf(why,
			  "every lineage stagnant for %d round%s: one last round on what the "
			  "model predicts best",
			  sr, srs);
	} else if (!active || unimproved == active) {
		d = "explore";
		sbuf_addf(why, "%s: explore new directions",
			  active ? "no lineage improved last round" : "no lineage yet");
	} else if (founded == active) {
		sbuf_addf(why, "%zu lineages founded from the best so far: exploit them", active);
	} else {
		sbuf_addf(why, "%zu of %zu lineages improved last round: exploit them",
			  active - unimproved, active);
	}
	if (isfinite(best))
		sbuf_addf(why, " (best %.2fx vs reference after %zu evaluations)", best, evaluated);
	json_decref(rrow);
	json_decref(row);
	json_decref(lins);
	json_decref(inc);
	return d;
}

/*
 * The winner after search round r: the incumbent, with the figures of its
 * measurement in this round (as a candidate or as the baseline), else the
 * last ones recorded.  Not confirmed until a confirmation re-times it with
 * the other top candidates.
 */
static int record_winner(struct session *s, int round, struct sbuf *note, char *msg, size_t n)
{
	json_t *inc = session_incumbent(s), *res, *row, *prev, *extra;
	const char *id = json_string_value(json_object_get(inc, "id")), *st;
	char noise[64];
	int rc = 0;

	if (!inc)
		return 0;
	res = session_round_result(s, round, id);
	st = json_string_value(json_object_get(res, "status"));
	row = store_session_get(s->st, s->id);
	prev = json_object_get(row, "winner");
	if (res && st && strcmp(st, "ok")) {
		sbuf_addf(
			note, "the incumbent %s was re-timed as the baseline and ended %s (%s). ",
			id, st,
			json_string_value(json_object_get(json_object_get(res, "fault"), "kind")));
		json_decref(res);
		res = NULL;
	}
	if (!res && json_is_object(prev) &&
	    !strcmp(json_string_value(json_object_get(prev, "variant")), id)) {
		rc = 0; /* keep the figures it has */
	} else {
		int when = res ? round : (int)json_integer_value(json_object_get(inc, "round"));
		struct sbuf v = SBUF_INIT;

		if (!res)
			res = store_result_get(s->st, s->id, id);
		winner_noise(json_object_get(res, "performance"), noise, sizeof(noise));
		sbuf_addf(&v, "measured in round %d (%s); %s", when, noise,
			  s->spec.confirm_passes
				  ? "not confirmed yet: the top candidates are re-timed side by "
				    "side before the session ends"
				  : "not confirmed: session.confirm_passes is 0 (kctl confirm "
				    "re-times the top candidates side by side)");
		extra = json_pack("{s:s}", "verdict", v.buf);
		rc = winner_record(s, when, inc, res, extra, msg, n);
		json_decref(extra);
		sbuf_release(&v);
	}
	json_decref(res);
	json_decref(row);
	json_decref(inc);
	return rc;
}

static int rank_steps(struct session *s, int round, json_t *rv, struct vcache *vc,
		      struct sbuf *note, char *msg, size_t n)
{
	json_t *lins = store_lineages(s->st, s->id), *l, *v;
	/* the round's baseline: the incumbent until this ranking moves it */
	json_t *inc = round > 0 ? session_incumbent(s) : NULL;
	const char *iid = json_string_value(json_object_get(inc, "id"));
	char *base = iid ? xstrdup(iid) : NULL;
	size_t i;
	int rc = 0, have = 0;

	json_decref(inc);
	json_array_foreach (rv, i, v)
		if (!rc)
			rc = learn_failure(s, v, round, msg, n);
	if (!rc)
		rc = update_incumbent(s, round, rv, note, msg, n);
	json_array_foreach (lins, i, l)
		have |= json_integer_value(json_object_get(l, "lineage")) != INCUMBENT_LINE;
	if (!rc && !have && round >= 1) {
		rc = found_lineages(s, round, msg, n);
	} else if (!rc && have) {
		json_array_foreach (lins, i, l) {
			if (rc ||
			    json_integer_value(json_object_get(l, "lineage")) == INCUMBENT_LINE ||
			    !json_is_true(json_object_get(l, "active")))
				continue;
			rc = step_lineage(s, round, base, l, rv, vc, note, msg, n);
		}
		if (!rc)
			rc = adopt_explorer(s, round, rv, vc, lins, msg, n);
	}
	if (!rc)
		rc = prune(s, round, vc, note, msg, n);
	json_decref(lins);
	free(base);
	return rc;
}

int round_rank(struct session *s, int round, int *stop, char *msg, size_t n)
{
	json_t *rv = store_variants_brief(s->st, s->id, round);
	struct vcache vc = { s, json_object() };
	struct sbuf note = SBUF_INIT, why = SBUF_INIT;
	const char *decision;
	int rc = store_begin(s->st, msg, n);

	/* Several shape buckets: every ranked speedup is the objective across them. */
	bucket_rank_rows(s, rv);

	if (!rc)
		rc = rank_steps(s, round, rv, &vc, &note, msg, n);
	if (!rc)
		rc = record_winner(s, round, &note, msg, n);
	if (!rc) {
		decision = decide(s, round, &why, stop);
		sbuf_addf(&note, "%s", why.buf);
		rc = store_round_set_decision(s->st, s->id, round, decision, note.buf, msg, n);
	}
	if (!rc)
		log_info("round %d: %s", round, note.buf);
	rc = round_step_end(s, round, ROUND_DONE, "ranked", rc, msg, n);
	sbuf_release(&note);
	sbuf_release(&why);
	json_decref(rv);
	json_decref(vc.map);
	return rc;
}
