/*
 * kctl simulate DATASET [--strategy S,...] [--budgets N,...] [--seeds N]
 *                       [--batch N] [--spec FILE] [--no-starts] [-o text|json]
 *
 * Replays the search against a recorded space (tests/data/space/, format
 * "kctl-space/1"): the space is the dataset's points, and evaluating a
 * point looks up its recorded status and speedup.  Each run is a session
 * in miniature: round 0 is the template's own point, then rounds of up to
 * --batch proposals from the same tuner code a real session runs, until
 * the largest budget is spent.  Prints, per strategy and budget, the
 * median and the worst over the seeds of the best speedup found within the
 * budget divided by the best recorded one.  --no-starts leaves out the
 * spec's tunables.starts: the search alone, from the template.
 */
#include "cmds.h"
#include "err.h"
#include "jsonx.h"
#include "log.h"
#include "propose.h"
#include "sbuf.h"
#include "splitmix.h"
#include "session.h"
#include "xalloc.h"

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A recorded space is a few hundred points; refuse anything absurd. */
#define SIM_MAX_BYTES      (64L << 20)
#define SIM_MAX_BUDGETS    16
#define SIM_MAX_STRATEGIES 8
/* The lineages a session keeps: the parents are the best few. */
#define SIM_PARENTS 3

static const char simulate_usage[] =
	"usage: kctl simulate DATASET [--strategy S,...] [--budgets N,...] [--seeds N]\n"
	"                     [--batch N] [--spec FILE] [--no-starts] [--noise] [--trace]\n"
	"                     [-o text|json]\n";

struct dataset {
	json_t *doc;
	json_t *points; /* borrowed from doc */
	json_t *params; /* a new array of the points' params */
	json_t *index;  /* point key -> the point (borrowed) */
	size_t nok;
	double best;
};

struct opts {
	const char *spec;
	int json; /* -o json */
	const char *strategies[SIM_MAX_STRATEGIES];
	size_t nstrategies;
	long budgets[SIM_MAX_BUDGETS];
	size_t nbudgets;
	long seeds, batch;
	int noise;           /* --noise: measurements drawn around the recorded speedups */
	int no_starts;       /* --no-starts: the spec's tunables.starts left out */
	const char *tracing; /* --trace: the strategy being replayed; NULL: quiet */
};

/* "TM=4,VN=8,..." in the spec's order: how a point is looked up. */
static char *point_key(const struct spec *s, json_t *params)
{
	struct sbuf sb = SBUF_INIT;

	for (size_t j = 0; j < s->ntunables; j++)
		sbuf_addf(&sb, "%s=%" JSON_INTEGER_FORMAT ",", s->tunables[j].name,
			  json_integer_value(json_object_get(params, s->tunables[j].name)));
	return sbuf_detach(&sb, NULL);
}

/* Checks points[i]'s status and speedup and indexes it. */
static int dataset_point(struct dataset *ds, const struct spec *s, json_t *pt, size_t i, char *msg,
			 size_t n)
{
	json_t *params = json_object_get(pt, "params"), *sp = json_object_get(pt, "speedup");
	const char *status = json_string_value(json_object_get(pt, "status"));
	char *key;

	if (!json_is_object(params))
		return kerr_set(msg, n, KERR_INVALID, "points[%zu].params: not an object", i);
	if (!status)
		return kerr_set(msg, n, KERR_INVALID, "points[%zu].status: not a string", i);
	if (!strcmp(status, "ok")) {
		if (!json_is_number(sp) || !(json_number_value(sp) > 0))
			return kerr_set(msg, n, KERR_INVALID,
					"points[%zu].speedup: not a positive number for an ok "
					"point",
					i);
		ds->nok++;
		if (json_number_value(sp) > ds->best)
			ds->best = json_number_value(sp);
	}
	json_array_append(ds->params, params);
	key = point_key(s, params);
	json_object_set(ds->index, key, pt);
	free(key);
	return 0;
}

/* A dataset that does not load, as jx_load_error says it. */
static int dataset_error(char *msg, size_t n, const char *path, const json_error_t *e)
{
	char *where = xasprintf("dataset '%s'", path);
	int rc = jx_load_error(msg, n, where, e);

	free(where);
	return rc;
}

static int dataset_load(struct dataset *ds, const struct spec *s, const char *path, char *msg,
			size_t n)
{
	json_error_t jerr;
	struct stat st;
	json_t *pt;
	size_t i;

	if (stat(path, &st))
		return kerr_set(msg, n, KERR_IO, "dataset '%s': cannot read it", path);
	if (st.st_size > SIM_MAX_BYTES)
		return kerr_set(msg, n, KERR_LIMIT, "dataset '%s': larger than %ld bytes", path,
				SIM_MAX_BYTES);
	if (!(ds->doc = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr)))
		return dataset_error(msg, n, path, &jerr);
	ds->points = json_object_get(ds->doc, "points");
	if (!json_is_array(ds->points) || !json_array_size(ds->points))
		return kerr_set(msg, n, KERR_INVALID,
				"dataset '%s': \"points\" is not a "
				"non-empty array",
				path);
	ds->params = json_array();
	ds->index = json_object();
	json_array_foreach (ds->points, i, pt) {
		int rc = dataset_point(ds, s, pt, i, msg, n);

		if (rc)
			return rc;
	}
	if (!ds->nok)
		return kerr_set(msg, n, KERR_INVALID, "dataset '%s': no point has status ok", path);
	return 0;
}

static void dataset_release(struct dataset *ds)
{
	json_decref(ds->doc);
	json_decref(ds->params);
	json_decref(ds->index);
}

/* One replayed session. */
/* Measurement noise without a recorded cv: a typical spread on a quiet machine. */
#define SIM_DEFAULT_CV 0.05

struct sim {
	const struct spec *s;
	const struct blocks *bl;
	struct dataset *ds;
	struct cand *h;
	size_t n;
	uint64_t rng;
	const char *strategy; /* --trace: its name; NULL: quiet */
	uint64_t seed;
	uint64_t noise; /* --noise: its own random state, so the tuner's is untouched */
	double *truth;  /* the recorded speedup of each variant (NAN unless ok) */
};

/* A standard normal draw (Box-Muller). */
static double noise_normal(uint64_t *s)
{
	double u = ((double)(splitmix_next(s) >> 11) + 0.5) / 9007199254740992.0;
	double v = (double)(splitmix_next(s) >> 11) / 9007199254740992.0;

	return sqrt(-2 * log(u)) * cos(2 * 3.14159265358979323846 * v);
}

/* What one evaluation measures of a point recorded as ok with speedup sp. */
static double measure(struct sim *sm, json_t *pt, double sp)
{
	json_t *cv = json_object_get(pt, "cv");
	double c = json_is_number(cv) && json_number_value(cv) >= 0 ? json_number_value(cv)
								    : SIM_DEFAULT_CV;

	return sm->noise ? sp * exp(c * noise_normal(&sm->noise)) : sp;
}

/* Evaluates params: appends it to the history with the recorded outcome. */
static int sim_eval(struct sim *sm, json_t *params, const char *source, const char *options,
		    int round, const char *origin, char *msg, size_t n)
{
	char *key = point_key(sm->s, params), hash[65];
	json_t *pt = json_object_get(sm->ds->index, key);
	struct cand *c;

	free(key);
	if (!pt)
		return kerr_set(msg, n, KERR_NOTFOUND,
				"round %d: proposed a point the dataset does not hold", round);
	sm->h = xreallocarray(sm->h, sm->n + 1, sizeof(*sm->h));
	sm->truth = xreallocarray(sm->truth, sm->n + 1, sizeof(*sm->truth));
	c = &sm->h[sm->n];
	memset(c, 0, sizeof(*c));
	variant_hash(source, options, hash);
	c->id = xasprintf("r%02d-v%03zu", round, sm->n);
	c->hash = xstrdup(hash);
	c->params = json_incref(params);
	c->status = json_string_value(json_object_get(pt, "status"));
	c->fault_kind = json_string_value(json_object_get(pt, "fault")); /* NULL when absent */
	sm->truth[sm->n] =
		strcmp(c->status, "ok") ? NAN : json_number_value(json_object_get(pt, "speedup"));
	c->speedup = isnan(sm->truth[sm->n]) ? NAN : measure(sm, pt, sm->truth[sm->n]);
	c->lineage = -1;
	c->round = round;
	c->origin = origin;
	sm->n++;
	return 0;
}

static void sim_release(struct sim *sm)
{
	for (size_t i = 0; i < sm->n; i++) {
		free((char *)sm->h[i].id);
		free((char *)sm->h[i].hash);
		json_decref(sm->h[i].params);
	}
	free(sm->h);
	free(sm->truth);
}

/* The best few measured variants, best first: a session's lineages' bests. */
static size_t sim_parents(const struct sim *sm, const struct cand **par)
{
	size_t np = 0;

	for (size_t i = 0; i < sm->n; i++) {
		const struct cand *c = &sm->h[i];
		size_t at;

		if (isnan(c->speedup))
			continue;
		for (at = np; at > 0 && par[at - 1]->speedup < c->speedup; at--)
			;
		if (at >= SIM_PARENTS)
			continue;
		np += np < SIM_PARENTS;
		memmove(par + at + 1, par + at, (np - 1 - at) * sizeof(*par));
		par[at] = c;
	}
	return np;
}

/* --trace: the latest evaluation on one line. */
static void sim_trace(const struct sim *sm, const char *why)
{
	const struct cand *c = &sm->h[sm->n - 1];

	if (isnan(c->speedup))
		fprintf(stderr, "%s seed %" PRIu64 " %s %s: %s\n", sm->strategy, sm->seed, c->id,
			c->status, why);
	else
		fprintf(stderr, "%s seed %" PRIu64 " %s %s %.4gx (recorded %.4gx): %s\n",
			sm->strategy, sm->seed, c->id, c->status, c->speedup, sm->truth[sm->n - 1],
			why);
}

/* One round: asks the tuner and evaluates what it proposes; *got says how many. */
static int sim_round(struct sim *sm, struct proposer *p, int round, size_t want, size_t left,
		     size_t *got, char *msg, size_t n)
{
	const struct cand *par[SIM_PARENTS];
	struct propose_ctx ctx = { .spec = sm->s,
				   .blocks = sm->bl,
				   .round = round,
				   .mode = NAV_EXPLOIT,
				   .want = want,
				   .budget_left = left,
				   .last = left <= want,
				   .rng = &sm->rng };
	struct proposal *props = NULL;
	int rc;

	ctx.history = sm->h;
	ctx.nhistory = sm->n;
	ctx.parents = par;
	ctx.nparents = sim_parents(sm, par);
	*got = 0;
	rc = p->propose(p, &ctx, &props, got, msg, n);
	for (size_t i = 0; !rc && i < *got; i++) {
		rc = sim_eval(sm, props[i].params, props[i].source, props[i].options, round, "tune",
			      msg, n);
		if (!rc && sm->strategy)
			sim_trace(sm, props[i].rationale);
	}
	proposals_free(props, *got);
	return rc;
}

/*
 * Replays one session of up to budget evaluations from seed; best[i] is
 * the best speedup among the first i + 1 evaluations (0 before any ok).
 */
static int sim_run(struct proposer *p, const struct spec *s, const struct blocks *bl,
		   struct dataset *ds, json_t *tmpl, uint64_t seed, const struct opts *o,
		   size_t budget, double *best, char *msg, size_t n)
{
	struct sim sm = { .s = s, .bl = bl, .ds = ds, .rng = seed };
	size_t got = 1;
	int rc;

	sm.noise = o->noise ? seed ^ 0x6e6f697365ull : 0; /* "noise" */
	sm.seed = seed;
	sm.strategy = o->tracing;
	rc = sim_eval(&sm, tmpl, s->template_src, s->build_options ? s->build_options : "", 0,
		      "start", msg, n);
	for (int round = 1; !rc && got && sm.n < budget; round++) {
		size_t left = budget - sm.n;

		rc = sim_round(&sm, p, round, left < (size_t)o->batch ? left : (size_t)o->batch,
			       left, &got, msg, n);
	}
	for (size_t i = 0; i < budget; i++) {
		double prev = i ? best[i - 1] : 0;
		double sp = i < sm.n && !isnan(sm.truth[i]) ? sm.truth[i] : 0;

		best[i] = sp > prev ? sp : prev;
	}
	sim_release(&sm);
	return rc;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* {"name", "budgets": [{"budget", "median", "worst", "fractions": [...]}]} */
static json_t *strategy_result(const struct opts *o, const double *frac)
{
	json_t *rows = json_array();
	double *sorted = xcalloc((size_t)o->seeds, sizeof(*sorted));

	for (size_t b = 0; b < o->nbudgets; b++) {
		const double *f = frac + b * (size_t)o->seeds;
		json_t *all = json_array();
		size_t ns = (size_t)o->seeds;

		for (size_t i = 0; i < ns; i++)
			json_array_append_new(all, json_real(f[i]));
		memcpy(sorted, f, ns * sizeof(*f));
		qsort(sorted, ns, sizeof(*sorted), cmp_double);
		json_array_append_new(rows, json_pack("{s:I, s:f, s:f, s:o}", "budget",
						      (json_int_t)o->budgets[b], "median",
						      (sorted[(ns - 1) / 2] + sorted[ns / 2]) / 2,
						      "worst", sorted[0], "fractions", all));
	}
	free(sorted);
	return rows;
}

/* Runs every seed of one strategy; returns its result or NULL with msg. */
static json_t *simulate_strategy(struct proposer *p, const struct spec *s, const struct blocks *bl,
				 struct dataset *ds, json_t *tmpl, const struct opts *o,
				 const char *name, char *msg, size_t n)
{
	struct opts oc = *o;
	size_t maxb = 0, ns = (size_t)o->seeds;
	double *best, *frac;
	json_t *res = NULL;
	int rc = tune_set_strategy(p, name, msg, n);

	for (size_t b = 0; b < o->nbudgets; b++)
		maxb = (size_t)o->budgets[b] > maxb ? (size_t)o->budgets[b] : maxb;
	best = xcalloc(maxb, sizeof(*best));
	frac = xcalloc(o->nbudgets * ns, sizeof(*frac));
	oc.tracing = o->tracing ? name : NULL;
	/*
	 * A session of its own for every budget: a session knows how many
	 * evaluations it has left (budget_left), and the tuner spends its
	 * last round differently from the others.
	 */
	for (size_t seed = 1; !rc && seed <= ns; seed++)
		for (size_t b = 0; !rc && b < o->nbudgets; b++) {
			size_t budget = (size_t)o->budgets[b];

			rc = sim_run(p, s, bl, ds, tmpl, seed, &oc, budget, best, msg, n);
			frac[b * ns + seed - 1] = rc ? 0 : best[budget - 1] / ds->best;
		}
	if (!rc)
		res = json_pack("{s:s, s:o}", "strategy", name, "budgets",
				strategy_result(o, frac));
	free(best);
	free(frac);
	return res;
}

static void print_text(const struct opts *o, const char *path, const struct dataset *ds,
		       json_t *results)
{
	json_t *r, *row;
	size_t i, b;

	printf("dataset %s: %zu points, %zu ok, best %.4gx\n", path, json_array_size(ds->points),
	       ds->nok, ds->best);
	printf("fraction of the best recorded speedup reached, median (worst) over %ld seeds, "
	       "batch %ld%s%s\n",
	       o->seeds, o->batch, o->noise ? ", measurements with noise" : "",
	       o->no_starts ? ", without the spec's starts" : "");
	printf("%-10s", "strategy");
	for (b = 0; b < o->nbudgets; b++)
		printf(" %14ld", o->budgets[b]);
	putchar('\n');
	json_array_foreach (results, i, r) {
		printf("%-10s", json_string_value(json_object_get(r, "strategy")));
		json_array_foreach (json_object_get(r, "budgets"), b, row)
			printf("    %.2f (%.2f)", json_number_value(json_object_get(row, "median")),
			       json_number_value(json_object_get(row, "worst")));
		putchar('\n');
	}
}

/* Splits a comma list into at most max parts (pointers into s). */
static size_t split(char *s, const char **parts, size_t max)
{
	size_t n = 0;

	for (char *save = NULL, *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (n == max)
			return max + 1;
		parts[n++] = t;
	}
	return n;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
	char *end = NULL;
	long v = strtol(s, &end, 10);

	if (!end || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int parse_budgets(char *s, struct opts *o)
{
	const char *parts[SIM_MAX_BUDGETS];
	size_t n = split(s, parts, SIM_MAX_BUDGETS);

	if (!n || n > SIM_MAX_BUDGETS)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (parse_long(parts[i], 1, 100000, &o->budgets[i]))
			return -1;
	o->nbudgets = n;
	return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lopts[] = {
		{ "strategy", required_argument, NULL, 'S' },
		{ "budgets", required_argument, NULL, 'b' },
		{ "seeds", required_argument, NULL, 'n' },
		{ "batch", required_argument, NULL, 'B' },
		{ "spec", required_argument, NULL, 's' },
		{ "output", required_argument, NULL, 'o' },
		{ "noise", no_argument, NULL, 'N' },
		{ "no-starts", no_argument, NULL, 'Z' },
		{ "trace", no_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:", lopts, NULL)) != -1) {
		int bad = 0;

		switch (c) {
		case 'S':
			o->nstrategies = split(optarg, o->strategies, SIM_MAX_STRATEGIES);
			bad = !o->nstrategies || o->nstrategies > SIM_MAX_STRATEGIES;
			break;
		case 'b': bad = parse_budgets(optarg, o); break;
		case 'n': bad = parse_long(optarg, 1, 100000, &o->seeds); break;
		case 'B': bad = parse_long(optarg, 1, 1024, &o->batch); break;
		case 's': o->spec = optarg; break;
		case 'o':
			if (cmd_output_format(optarg, &o->json))
				return -1;
			break;
		case 'N': o->noise = 1; break;
		case 'Z': o->no_starts = 1; break;
		case 'T': o->tracing = ""; break;
		default: return -1; /* getopt_long said which option */
		}
		if (bad) {
			log_error("simulate: bad value for --%s: '%s'",
				  c == 'S'   ? "strategy"
				  : c == 'b' ? "budgets"
				  : c == 'n' ? "seeds (1 to 100000)"
					     : "batch (1 to 1024)",
				  optarg ? optarg : "");
			return -1;
		}
	}
	return optind == argc - 1 ? 0 : -1;
}

/* --no-starts: the search alone, its first round without the spec's starts. */
static void spec_drop_starts(struct spec *s)
{
	free(s->starts);
	s->starts = NULL;
	s->nstarts = 0;
}

/* Loads the spec (--spec, else the dataset's "spec") and restricts a tuner to the points. */
static int simulate_setup(const struct opts *o, const char *path, struct spec *s, struct blocks *bl,
			  struct proposer *p, struct dataset *ds, char *msg, size_t n)
{
	json_t *doc;
	const char *spec = o->spec, *fmt;
	json_error_t jerr;
	int rc;

	if (!(doc = json_load_file(path, 0, &jerr)))
		return dataset_error(msg, n, path, &jerr);
	fmt = json_string_value(json_object_get(doc, "format"));
	if (!fmt || strcmp(fmt, "kctl-space/1")) {
		json_decref(doc);
		return kerr_set(msg, n, KERR_INVALID,
				"dataset '%s': \"format\" is not \"kctl-space/1\"", path);
	}
	if (!spec)
		spec = json_string_value(json_object_get(doc, "spec"));
	if (!spec)
		rc = kerr_set(msg, n, KERR_INVALID, "dataset '%s': no \"spec\" (give --spec)",
			      path);
	else if (!(rc = spec_load(s, spec, msg, n))) {
		if (o->no_starts)
			spec_drop_starts(s);
		if (!(rc = blocks_find(s->template_src, s->marker_start, s->marker_end, bl, msg,
				       n)) &&
		    !(rc = tune_open(p, s, msg, n)) && !(rc = dataset_load(ds, s, path, msg, n)))
			rc = tune_restrict(p, ds->params, msg, n);
	}
	json_decref(doc);
	return rc;
}

int cmd_simulate(int argc, char **argv)
{
	struct opts o = { .seeds = 20, .batch = 8 };
	char strategies[] = "tune,random,evolve", budgets[] = "12,24,48,96", msg[2048] = "";
	struct spec s = { 0 };
	struct blocks bl = { 0 };
	struct proposer p = { 0 };
	struct dataset ds = { 0 };
	json_t *results = json_array(), *tmpl = NULL;
	int rc, ret = KCTL_EXIT_FAIL;

	o.nstrategies = split(strategies, o.strategies, SIM_MAX_STRATEGIES);
	parse_budgets(budgets, &o);
	if (parse_opts(argc, argv, &o)) {
		fputs(simulate_usage, stderr);
		json_decref(results);
		return KCTL_EXIT_USAGE;
	}
	rc = simulate_setup(&o, argv[optind], &s, &bl, &p, &ds, msg, sizeof(msg));
	if (!rc && !(tmpl = tune_template_params(&p)))
		rc = kerr_set(msg, sizeof(msg), KERR_INVALID,
			      "the template has no point of its own to start from");
	for (size_t i = 0; !rc && i < o.nstrategies; i++) {
		json_t *r = simulate_strategy(&p, &s, &bl, &ds, tmpl, &o, o.strategies[i], msg,
					      sizeof(msg));

		if (!r)
			rc = -1;
		json_array_append_new(results, r);
	}
	if (rc) {
		log_error("simulate: %s", msg);
	} else if (o.json) {
		json_t *doc = json_pack(
			"{s:s, s:I, s:I, s:f, s:I, s:I, s:b, s:b, s:O}", "dataset", argv[optind],
			"points", (json_int_t)json_array_size(ds.points), "ok", (json_int_t)ds.nok,
			"best", ds.best, "seeds", (json_int_t)o.seeds, "batch", (json_int_t)o.batch,
			"noise", o.noise, "starts", !o.no_starts, "results", results);

		json_dumpf(doc, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(doc);
		ret = KCTL_EXIT_OK;
	} else {
		print_text(&o, argv[optind], &ds, results);
		ret = KCTL_EXIT_OK;
	}
	json_decref(tmpl);
	json_decref(results);
	dataset_release(&ds);
	if (p.release)
		proposer_close(&p);
	blocks_release(&bl);
	spec_release(&s);
	return ret;
}
