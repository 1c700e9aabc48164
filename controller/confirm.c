/*
 * confirm.c - before a session ends (and on `kctl confirm`), the top
 * candidates are re-timed together, interleaved, in one evalpod process,
 * until the winner is settled within the measured noise or the passes are
 * spent.
 *
 * A confirmation is a run of rounds of mode "confirm" (passes 1, 2, ...).
 * Each pass is a whole evalpod batch: every candidate is built and checked
 * again (fresh timing inputs), then timed in rounds with the others; the
 * first program is the batch's baseline.  After each pass the per-round
 * ratios of all passes so far are pooled (pairs.h) and each pair of
 * candidates that passed gets a median speedup with its 95% interval.
 *
 * The incumbent keeps its place unless a candidate is faster by more than
 * 1% with 95% confidence (the interval's lower end above 1.01).  The
 * ordering is settled when the winner is so faster than every other
 * candidate, or equal to it within 1% (the whole interval inside
 * 1/1.01..1.01).  While it is not, and passes are left, the
 * next pass re-times the winner and the candidates it is not separated
 * from, with twice the samples, twice the sampling time and samples twice
 * as long.  Nothing is recorded as a success that the interval does not
 * show.
 */
#include "session.h"
#include "services.h"
#include "round.h"
#include "winner.h"
#include "bucket.h"
#include "pairs.h"
#include "err.h"
#include "jsonx.h"
#include "log.h"
#include "sbuf.h"
#include "xalloc.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define TIE PAIRS_MIN_GAIN

static int64_t mint(json_t *m, const char *key, int64_t dflt)
{
	json_t *v = json_object_get(m, key);

	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

static double mnum(json_t *m, const char *key, double dflt)
{
	json_t *v = json_object_get(m, key);

	return json_is_number(v) ? json_number_value(v) : dflt;
}

static int64_t imax(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

static int64_t imin(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

json_t *confirm_measurement(const struct spec *sp, int pass, int round)
{
	json_t *m = sp->measurement ? json_deep_copy(sp->measurement) : json_object();
	int64_t f = (int64_t)1 << (pass > 1 ? (pass < 8 ? pass - 1 : 7) : 0);
	int64_t min_samples = imin(1000, imax(mint(m, "min_samples", 10), 20) * f);
	double min_time = fmin(600000, fmax(mnum(m, "min_time_ms", 100), 200) * (double)f);
	double sample_min = fmin(1000, fmax(mnum(m, "sample_min_ms", 1), 1) * (double)f);

	json_object_set_new(m, "warmup", json_integer(imax(mint(m, "warmup", 2), 2)));
	json_object_set_new(m, "min_samples", json_integer(min_samples));
	json_object_set_new(
		m, "max_samples",
		json_integer(imin(1000000, imax(mint(m, "max_samples", 200), min_samples))));
	json_object_set_new(m, "min_time_ms", json_real(min_time));
	json_object_set_new(
		m, "max_time_ms",
		json_real(fmin(3600000, fmax(mnum(m, "max_time_ms", 10000), min_time))));
	json_object_set_new(m, "sample_min_ms", json_real(sample_min));
	/* Every pass takes all its samples: the pairs are what it is for. */
	json_object_set_new(m, "precision", json_real(0));
	json_object_set_new(m, "outclass", json_real(0));
	/* a fresh interleaving order for every pass */
	json_object_set_new(m, "order_seed",
			    json_integer(mint(m, "order_seed", 1) % 1000000000 + round));
	return m;
}

static int by_speedup(const void *a, const void *b)
{
	json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	double sx = json_number_value(json_object_get(x, "speedup_ref"));
	double sy = json_number_value(json_object_get(y, "speedup_ref"));

	return (sx < sy) - (sx > sy);
}

/* The incumbent, then the fastest other ok variants by their own rounds' figures. */
static json_t *choose_candidates(struct session *s, int want)
{
	json_t *all = store_variants_brief(s->st, s->id, -1), *inc = session_incumbent(s), *v;
	json_t *ids = json_array(), **ok = xcalloc(json_array_size(all) + 1, sizeof(*ok));
	const char *iid = json_string_value(json_object_get(inc, "id"));
	size_t i, nok = 0;

	json_array_foreach (all, i, v) {
		const char *st = json_string_value(json_object_get(v, "status"));

		if (st && !strcmp(st, "ok") && json_is_number(json_object_get(v, "speedup_ref")) &&
		    (!iid || strcmp(iid, json_string_value(json_object_get(v, "id")))))
			ok[nok++] = v;
	}
	qsort(ok, nok, sizeof(*ok), by_speedup);
	if (iid)
		json_array_append_new(ids, json_string(iid));
	for (i = 0; i < nok && json_array_size(ids) < (size_t)want; i++)
		json_array_append(ids, json_object_get(ok[i], "id"));
	free(ok);
	json_decref(inc);
	json_decref(all);
	return ids;
}

int confirm_propose(struct session *s, int round, const char *why, char *msg, size_t n)
{
	json_t *prev = round > 0 ? store_round_get(s->st, s->id, round - 1) : NULL;
	json_t *pconf = json_object_get(prev, "confirm"), *conf, *programs;
	const char *pdec = json_string_value(json_object_get(prev, "decision"));
	int pass = 1, passes = s->spec.confirm_passes > 0 ? s->spec.confirm_passes : 1, rc;
	const char *then = why ? "stop" : pdec && strcmp(pdec, "confirm") ? pdec : "stop";

	if (json_is_object(pconf) && pdec && !strcmp(pdec, "confirm")) {
		/* the next pass of the confirmation under way */
		pass = (int)mint(pconf, "pass", 1) + 1;
		passes = (int)mint(pconf, "passes", passes);
		then = json_string_value(json_object_get(pconf, "then"));
		programs = json_deep_copy(json_object_get(pconf, "next"));
		why = json_string_value(json_object_get(pconf, "why"));
	} else {
		programs = NULL;
	}
	if (!json_is_array(programs) || !json_array_size(programs)) {
		json_decref(programs);
		/* Several shape buckets: the duels below compare the primary's samples
		 * alone, so only the winner on the objective goes through (re-checked,
		 * re-timed at every bucket); no other candidate can take its place. */
		programs = choose_candidates(
			s, bucket_count(&s->spec) > 1 ? 1 : s->spec.confirm_candidates);
	}
	conf = json_pack("{s:i, s:i, s:o, s:o, s:s, s:s?}", "pass", pass, "passes", passes,
			 "programs", programs, "measurement",
			 confirm_measurement(&s->spec, pass, round), "then", then ? then : "stop",
			 "why", why);
	json_decref(prev);
	if ((rc = store_begin(s->st, msg, n))) {
		json_decref(conf);
		return rc;
	}
	rc = store_round_create(s->st, s->id, round, "confirm", msg, n);
	if (!rc)
		rc = store_round_set_confirm(s->st, s->id, round, conf, msg, n);
	json_decref(conf);
	return round_step_end(s, round, ROUND_PROPOSED, "proposed", rc, msg, n);
}

/* --- the verdict ----------------------------------------------------------- */

/* What the passes say of candidate a against candidate b. */
struct duel {
	struct pair_verdict pooled; /* a over b from every pass that timed both */
	int faster;                 /* a is faster than b by more than 1%, for sure */
	int each_faster;            /* two passes or more, each showing a faster on its own */
	int equal;                  /* a and b are within 1% of each other, for sure */
};

struct rival {
	const char *id;
	json_t *res;      /* this pass's result, NULL when none */
	int ok;           /* passed this pass's checks and was timed */
	json_t **history; /* results of the earlier passes, by pass (NULL where absent) */
};

struct confirmation {
	struct session *s;
	int round, pass, npass;
	int *rounds; /* the rounds of passes 1..pass */
	struct rival *c;
	size_t nc;
	struct duel *duels; /* nc x nc, by judge_all */
};

/*
 * One process can be off by more than 1% (pairs.h), so "for sure" takes two
 * passes or more that each show it on their own: faster, as
 * pairs_faster_across() says; equal, each pass's interval within 1%.
 */
static struct duel duel_of(struct confirmation *cf, size_t a, size_t b)
{
	struct pairs all = { 0 };
	struct pair_verdict *each = xcalloc((size_t)cf->npass + 1, sizeof(*each));
	struct duel d = { .equal = 1, .each_faster = 1 };
	int timed = 0;

	for (int k = 0; k < cf->npass; k++) {
		json_t *ra = cf->c[a].history[k], *rb = cf->c[b].history[k];
		struct pairs p = { 0 };
		struct pair_verdict v;

		if (!ra || !rb)
			continue;
		pairs_add(&p, rb, ra); /* time of b / time of a */
		v = pairs_verdict(&p);
		for (size_t i = 0; i < p.n; i++)
			pairs_add_ratio(&all, p.ratio[i]);
		pairs_release(&p);
		if (!v.n)
			continue;
		each[timed++] = v;
		d.equal &= pairs_equal(v);
		d.each_faster &= pairs_faster(v);
	}
	d.pooled = pairs_verdict(&all);
	pairs_release(&all);
	d.equal &= timed >= 2;
	d.each_faster &= timed >= 2;
	d.faster = pairs_faster_across(each, timed);
	free(each);
	return d;
}

/* Every ordered pair of candidates that passed, judged once. */
static void judge_all(struct confirmation *cf)
{
	cf->duels = xcalloc(cf->nc * cf->nc + 1, sizeof(*cf->duels));
	for (size_t a = 0; a < cf->nc; a++)
		for (size_t b = 0; b < cf->nc; b++)
			if (a != b && cf->c[a].ok && cf->c[b].ok)
				cf->duels[a * cf->nc + b] = duel_of(cf, a, b);
}

static const struct duel *duel(const struct confirmation *cf, size_t a, size_t b)
{
	return &cf->duels[a * cf->nc + b];
}

static void load(struct confirmation *cf, json_t *programs)
{
	struct session *s = cf->s;
	size_t i;
	json_t *id;

	cf->nc = json_array_size(programs);
	cf->c = xcalloc(cf->nc + 1, sizeof(*cf->c));
	json_array_foreach (programs, i, id) {
		struct rival *c = &cf->c[i];
		const char *st;

		c->id = json_string_value(id);
		c->history = xcalloc((size_t)cf->npass + 1, sizeof(*c->history));
		/* the last pass is this round: its result is kept whole, for its fault */
		c->res = session_round_result(s, cf->round, c->id);
		for (int k = 0; k < cf->npass; k++) {
			json_t *r = k == cf->npass - 1
					    ? json_incref(c->res)
					    : session_round_result(s, cf->rounds[k], c->id);

			st = json_string_value(json_object_get(r, "status"));
			if (r && (!st || strcmp(st, "ok") ||
				  !json_is_object(json_object_get(r, "performance")))) {
				json_decref(r);
				r = NULL;
			}
			c->history[k] = r;
		}
		c->ok = cf->c[i].history[cf->npass - 1] != NULL;
	}
}

static void release(struct confirmation *cf)
{
	for (size_t i = 0; i < cf->nc; i++) {
		for (int k = 0; k < cf->npass; k++)
			json_decref(cf->c[i].history[k]);
		free(cf->c[i].history);
		json_decref(cf->c[i].res);
	}
	free(cf->c);
	free(cf->rounds);
	free(cf->duels);
}

/* The rounds of this confirmation, pass 1 first. */
static int find_passes(struct confirmation *cf, json_t *conf)
{
	cf->pass = (int)mint(conf, "pass", 1);
	cf->npass = 0;
	cf->rounds = xcalloc((size_t)cf->pass + 1, sizeof(int));
	for (int r = cf->round, want = cf->pass; r >= 0 && want >= 1; r--, want--) {
		json_t *row = store_round_get(cf->s->st, cf->s->id, r);
		json_t *c = json_object_get(row, "confirm");
		int ok = json_is_object(c) && mint(c, "pass", 0) == want;

		json_decref(row);
		if (!ok)
			break;
		cf->rounds[want - 1] = r;
		cf->npass++;
	}
	if (cf->npass != cf->pass) {
		/* passes out of order: pool only this one */
		cf->rounds[0] = cf->round;
		cf->npass = 1;
	}
	return 0;
}

static double cv_of(json_t *res)
{
	json_t *v = json_object_get(json_object_get(res, "performance"), "robust_cv");

	return json_is_number(v) ? json_number_value(v) : NAN;
}

int confirm_rank(struct session *s, int round, int *stop, char *msg, size_t n)
{
	json_t *row = store_round_get(s->st, s->id, round), *conf = json_object_get(row, "confirm");
	json_t *inc = session_incumbent(s), *next = json_array(), *cands = json_array();
	struct confirmation cf = { .s = s, .round = round };
	struct sbuf verdict = SBUF_INIT, note = SBUF_INIT;
	const char *iid = json_string_value(json_object_get(inc, "id"));
	const char *then = json_string_value(json_object_get(conf, "then"));
	size_t w = SIZE_MAX, lead = SIZE_MAX, nok = 0, unsettled = 0, runner = SIZE_MAX;
	int passes = (int)mint(conf, "passes", 1), rc, settled, more, runner_open = 0;
	double cv_lo = INFINITY, cv_hi = 0;

	find_passes(&cf, conf);
	load(&cf, json_object_get(conf, "programs"));
	judge_all(&cf);

	/* who failed the re-check */
	for (size_t i = 0; i < cf.nc; i++) {
		json_t *f = json_object_get(cf.c[i].res, "fault");
		double cv = cv_of(cf.c[i].res);

		if (cf.c[i].ok) {
			nok++;
			cv_lo = fmin(cv_lo, isfinite(cv) ? cv : cv_lo);
			cv_hi = fmax(cv_hi, isfinite(cv) ? cv : cv_hi);
			continue;
		}
		sbuf_addf(&note, "%s failed its re-check: %s%s%s%s. ", cf.c[i].id,
			  json_string_value(json_object_get(cf.c[i].res, "status"))
				  ? json_string_value(json_object_get(cf.c[i].res, "status"))
				  : "no result",
			  json_string_value(json_object_get(f, "kind")) ? "/" : "",
			  json_string_value(json_object_get(f, "kind"))
				  ? json_string_value(json_object_get(f, "kind"))
				  : "",
			  json_string_value(json_object_get(f, "message")) ? " - " : "");
		if (json_string_value(json_object_get(f, "message")))
			sbuf_addf(&note, "%.200s. ",
				  json_string_value(json_object_get(f, "message")));
	}
	/* the leader: most pairwise wins by median, then the larger product of medians */
	{
		int best_wins = -1;
		double best_score = -INFINITY;

		for (size_t a = 0; a < cf.nc; a++) {
			int wins = 0;
			double score = 0;

			if (!cf.c[a].ok)
				continue;
			for (size_t b = 0; b < cf.nc; b++) {
				struct pair_verdict v;

				if (b == a || !cf.c[b].ok)
					continue;
				v = duel(&cf, a, b)->pooled;
				wins += v.median > 1;
				score += isfinite(v.median) ? log(v.median) : 0;
			}
			if (wins > best_wins || (wins == best_wins && score > best_score)) {
				best_wins = wins;
				best_score = score;
				lead = a;
			}
		}
	}
	/* the winner: the incumbent keeps its place unless beaten for sure */
	for (size_t i = 0; i < cf.nc; i++)
		if (cf.c[i].ok && iid && !strcmp(cf.c[i].id, iid))
			w = i;
	if (w != SIZE_MAX) {
		double best = 0;
		size_t beat = SIZE_MAX;

		for (size_t i = 0; i < cf.nc; i++) {
			struct pair_verdict v;

			if (i == w || !cf.c[i].ok || !duel(&cf, i, w)->faster)
				continue;
			if (i == lead) {
				beat = i;
				break;
			}
			v = duel(&cf, i, w)->pooled;
			if (v.median > best) {
				best = v.median;
				beat = i;
			}
		}
		if (beat != SIZE_MAX)
			w = beat;
	} else {
		w = lead;
	}
	settled = w != SIZE_MAX;
	if (w != SIZE_MAX) {
		json_array_append_new(next, json_string(cf.c[w].id));
		for (size_t i = 0; i < cf.nc; i++) {
			struct pair_verdict v;
			const char *how;

			if (i == w || !cf.c[i].ok)
				continue;
			v = duel(&cf, w, i)->pooled;
			how = duel(&cf, w, i)->faster  ? "slower"
			      : duel(&cf, w, i)->equal ? "equal"
						       : "unsettled";
			if (!strcmp(how, "unsettled")) {
				unsettled++;
				json_array_append_new(next, json_string(cf.c[i].id));
			}
			/* the runner-up: the closest of those not separated, else of all */
			if (runner == SIZE_MAX || (!strcmp(how, "unsettled") && !runner_open) ||
			    ((!strcmp(how, "unsettled") || !runner_open) &&
			     v.median < duel(&cf, w, runner)->pooled.median)) {
				runner = i;
				runner_open = !strcmp(how, "unsettled");
			}
			json_array_append_new(
				cands, json_pack("{s:s, s:s, s:f, s:o, s:i}", "variant", cf.c[i].id,
						 "verdict", how, "winner_speedup",
						 isfinite(v.median) ? v.median : 0.0, "ci",
						 isfinite(v.lo) ? json_pack("[f, f]", v.lo, v.hi)
								: json_null(),
						 "pairs", (int)v.n));
		}
		settled = !unsettled;
	}
	more = !settled && cf.pass < passes && w != SIZE_MAX;

	/* the words every output shows */
	if (w == SIZE_MAX) {
		sbuf_addf(&verdict,
			  "not confirmed: no candidate passed its re-check in pass %d of the "
			  "confirmation",
			  cf.pass);
	} else if (nok == 1) {
		sbuf_addf(&verdict,
			  "confirmed: %s passed its re-check and was re-timed (%.1f%% robust CV); "
			  "no other candidate passed",
			  cf.c[w].id, cv_of(cf.c[w].res) * 100);
	} else {
		struct pair_verdict rv = duel(&cf, w, runner)->pooled;

		sbuf_addf(&verdict, "%s: %s ", settled ? "confirmed" : "not settled", cf.c[w].id);
		if (settled && duel(&cf, w, runner)->faster) {
			sbuf_addf(&verdict,
				  "is faster side by side than every other candidate, "
				  "than the closest, %s, by ",
				  cf.c[runner].id);
			pairs_describe(&verdict, rv);
		} else if (settled) {
			sbuf_addf(&verdict,
				  "and %s run equally fast within %.0f%%: ", cf.c[runner].id,
				  TIE * 100);
			pairs_describe(&verdict, rv);
		} else {
			/* Why not: one pass, where one process can be off by more than
			 * it shows (pairs.h); passes that each show it by amounts too
			 * far apart; passes that do not each show it, while the pooled
			 * interval can still exclude 1. */
			const char *pre = "could not be separated from",
				   *post = "within the noise, not every pass showing a difference "
					   "on its own; all passes' pairs together: ";

			if (cf.npass < 2) {
				pre = "was compared with";
				post = "in one evalpod run only, which a second must confirm: ";
			} else if (duel(&cf, w, runner)->each_faster) {
				pre = "was faster than";
				post = "in every pass on its own, but by amounts the passes do not "
				       "agree on closely enough to settle it; all passes' pairs "
				       "together: ";
			}
			sbuf_addf(&verdict, "%s %s %s", pre, cf.c[runner].id, post);
			pairs_describe(&verdict, rv);
		}
		sbuf_addf(&verdict, "; %zu candidates, %d pass%s, robust CV %.1f%% to %.1f%%", nok,
			  cf.pass, cf.pass == 1 ? "" : "es", cv_lo * 100, cv_hi * 100);
		if (!settled)
			sbuf_addf(&verdict,
				  more ? "; re-timing with more and longer samples"
				       : "; best.cl holds %s, the incumbent unless a "
					 "candidate was faster for sure",
				  cf.c[w].id);
	}
	sbuf_addf(&note, "confirmation pass %d of %d: %s.", cf.pass, passes, verdict.buf);

	rc = store_begin(s->st, msg, n);
	if (!rc && w != SIZE_MAX && (!iid || strcmp(cf.c[w].id, iid))) {
		/* a new winner: a success only when the interval shows it */
		size_t old = SIZE_MAX;

		for (size_t i = 0; i < cf.nc; i++)
			if (iid && !strcmp(cf.c[i].id, iid) && cf.c[i].ok)
				old = i;
		rc = store_lineage_put(s->st, s->id, 0, cf.c[w].id, 0, 1, round, msg, n);
		if (!rc && old != SIZE_MAX) {
			struct pair_verdict v = duel(&cf, w, old)->pooled;
			struct sbuf t = SBUF_INIT;
			char *key =
				xasprintf("%s replaced the incumbent (confirmation)", cf.c[w].id);

			sbuf_addf(&t,
				  "%s replaced the incumbent %s in the confirmation (round %d): "
				  "faster side by side by ",
				  cf.c[w].id, iid, round);
			pairs_describe(&t, v);
			rc = store_learning_add(s->st, s->id, 'S', key, "replaced the incumbent",
						t.buf, round, msg, n);
			rc = rc < 0 ? rc : 0;
			free(key);
			sbuf_release(&t);
		}
	}
	if (!rc && w != SIZE_MAX) {
		json_t *v = store_variant_get(s->st, s->id, cf.c[w].id), *extra;
		struct pair_verdict rv = runner != SIZE_MAX
						 ? duel(&cf, w, runner)->pooled
						 : (struct pair_verdict){ 0, NAN, NAN, NAN };

		extra = json_pack("{s:b, s:b, s:s, s:i, s:o, s:o}", "confirmed", settled, "settled",
				  settled, "verdict", verdict.buf, "passes", cf.pass, "candidates",
				  json_incref(cands), "runner_up",
				  runner == SIZE_MAX
					  ? json_null()
					  : json_pack("{s:s, s:f, s:o, s:i}", "variant",
						      cf.c[runner].id, "winner_speedup",
						      isfinite(rv.median) ? rv.median : 0.0, "ci",
						      isfinite(rv.lo)
							      ? json_pack("[f, f]", rv.lo, rv.hi)
							      : json_null(),
						      "pairs", (int)rv.n));
		rc = winner_record(s, round, v, cf.c[w].res, extra, msg, n);
		json_decref(extra);
		json_decref(v);
	}
	if (!rc && more) {
		json_t *c2 = json_deep_copy(conf);

		json_object_set(c2, "next", next);
		rc = store_round_set_confirm(s->st, s->id, round, c2, msg, n);
		json_decref(c2);
	}
	if (!rc)
		rc = store_round_set_decision(s->st, s->id, round,
					      more   ? "confirm"
					      : then ? then
						     : "stop",
					      note.buf, msg, n);
	/* Said at -v only: the round's progress line ([confirm P/N]) has it. */
	if (!rc)
		log_debug("round %d: %s", round, note.buf);
	rc = round_step_end(s, round, ROUND_DONE, "ranked", rc, msg, n);
	*stop = !more && (!then || !strcmp(then, "stop"));
	release(&cf);
	sbuf_release(&verdict);
	sbuf_release(&note);
	json_decref(cands);
	json_decref(next);
	json_decref(inc);
	json_decref(row);
	return rc;
}
