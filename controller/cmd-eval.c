/*
 * kctl eval SPEC [--kernel FILE]... [--baseline FILE] [--backend local|kubernetes]
 *                [--threshold PCT] [--passes N] [-o text|json] [--out DIR] [--no-cache]
 *                [--state FILE] [-v]
 *
 * One evaluation without a search: the kernel files and a baseline timed
 * side by side in one batch on the spec's backend (a session of one round,
 * loop.h's session_eval), or in N batches, each its own evalpod process
 * (--passes), then a verdict a CI check can act on.  The forms it is
 * reported in are eval-out.c's; docs/kctl.md, "kctl eval", is the manual.
 */
#include "cmds.h"
#include "eval-out.h"
#include "err.h"
#include "fileio.h"
#include "jsonx.h"
#include "log.h"
#include "sbuf.h"
#include "session.h"
#include "loop.h"
#include "pairs.h"
#include "xalloc.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EVAL_MAX_KERNELS 32
#define EVAL_SOURCE_MAX  (4u << 20) /* a kernel file larger than this is refused */

static const char usage[] =
	"usage: kctl eval SPEC [--kernel FILE]... [--baseline FILE] [--backend local|kubernetes]\n"
	"                 [--threshold PCT] [--passes N] [-o text|json] [--out DIR] [--no-cache]\n"
	"                 [--state FILE] [-v]\n";

struct eval_opts {
	const char *kernels[EVAL_MAX_KERNELS];
	int nk;
	const char *baseline, *out, *state;
	int backend; /* -1: the spec's, else an enum spec_backend */
	double threshold;
	int passes; /* --passes: evalpod runs, 1 to EVAL_MAX_PASSES */
	int json;
	int no_cache; /* --no-cache: its results are not put in the result cache */
};

static int parse(int argc, char **argv, struct eval_opts *o)
{
	static const struct option opts[] = {
		{ "kernel", required_argument, NULL, 'k' },
		{ "baseline", required_argument, NULL, 'b' },
		{ "backend", required_argument, NULL, 'B' },
		{ "threshold", required_argument, NULL, 't' },
		{ "passes", required_argument, NULL, 'p' },
		{ "out", required_argument, NULL, 'O' },
		{ "output", required_argument, NULL, 'o' },
		{ "state", required_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "no-cache", no_argument, NULL, 'C' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->backend = -1;
	o->threshold = 0.05;
	o->passes = 1;
	o->out = "kctl-eval";
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:v", opts, NULL)) != -1) {
		char *end = NULL;

		switch (c) {
		case 'k':
			if (o->nk == EVAL_MAX_KERNELS) {
				log_error("--kernel: at most %d kernels at once", EVAL_MAX_KERNELS);
				return -1;
			}
			o->kernels[o->nk++] = optarg;
			break;
		case 'b': o->baseline = optarg; break;
		case 'B':
			if (!strcmp(optarg, "local")) {
				o->backend = BACKEND_LOCAL;
			} else if (!strcmp(optarg, "kubernetes")) {
				o->backend = BACKEND_KUBERNETES;
			} else {
				log_error("--backend is local or kubernetes, not '%s'", optarg);
				return -1;
			}
			break;
		case 't':
			o->threshold = strtod(optarg, &end);
			if (end && *end == '%')
				end++;
			if (end == optarg || !end || *end || !(o->threshold >= 0) ||
			    o->threshold >= 100) {
				log_error("--threshold wants a percentage from 0 to 99, not '%s'",
					  optarg);
				return -1;
			}
			o->threshold /= 100;
			break;
		case 'p': {
			long v = strtol(optarg, &end, 10);

			if (end == optarg || *end || v < 1 || v > EVAL_MAX_PASSES) {
				log_error("--passes wants a whole number from 1 to %d, not '%s'",
					  EVAL_MAX_PASSES, optarg);
				return -1;
			}
			o->passes = (int)v;
			break;
		}
		case 'o':
			if (cmd_output_format(optarg, &o->json)) {
				fputs(usage, stderr);
				return -1;
			}
			break;
		case 'O': o->out = optarg; break;
		case 'S': o->state = optarg; break;
		case 'v': log_level_current = LOG_DEBUG; break;
		case 'C': o->no_cache = 1; break;
		default: fputs(usage, stderr); return -1;
		}
	}
	if (optind != argc - 1 || !*o->out) {
		fputs(usage, stderr);
		return -1;
	}
	return 0;
}

/* The text of a kernel file: at most EVAL_SOURCE_MAX bytes, not empty, no NUL byte. */
static char *read_source(const char *path)
{
	char *text = NULL, msg[1024];
	size_t len = 0;

	if (file_read(path, EVAL_SOURCE_MAX, &text, &len, msg, sizeof(msg))) {
		log_error("%s", msg);
		return NULL;
	}
	if (!len || strlen(text) != len) {
		log_error("kernel file '%s' is %s", path,
			  !len ? "empty" : "not text (it holds a NUL byte)");
		free(text);
		return NULL;
	}
	return text;
}

/* --- the verdict ---------------------------------------------------------------- */

static json_t *load_result(const char *results, const char *id)
{
	char *path = xasprintf("%s/%s.json", results, id);
	json_t *res = json_load_file(path, 0, NULL);

	if (res && !json_is_object(res)) {
		json_decref(res);
		res = NULL;
	}
	free(path);
	return res;
}

static double perf_num(json_t *res, const char *key)
{
	json_t *v = json_object_get(json_object_get(res, "performance"), key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

static int is_ok(json_t *res)
{
	const char *st = json_string_value(json_object_get(res, "status"));

	return st && !strcmp(st, "ok");
}

/*
 * What the passes' comparisons say together, by the rule of a session's
 * confirmation (pairs.h): "faster" or "slower" by more than 1% for sure,
 * "equal" within 1% in every pass, else "not separated".
 */
static const char *across(const struct pair_verdict *v, int n)
{
	struct pair_verdict inv[EVAL_MAX_PASSES];
	int equal = 1;

	for (int p = 0; p < n; p++) {
		inv[p] = (struct pair_verdict){ v[p].n, 1 / v[p].median, 1 / v[p].hi, 1 / v[p].lo };
		equal &= pairs_equal(v[p]);
	}
	if (pairs_faster_across(v, n))
		return "faster";
	if (pairs_faster_across(inv, n))
		return "slower";
	return equal ? "equal" : "not separated";
}

/*
 * Kernel k against the baseline, both ok in every pass (base and res by
 * pass).  The speedup and its interval pool every pass's per-round ratios;
 * the noise allowed is the larger of the interval's half-width and half
 * the spread of the passes' own medians, since one evalpod process can be
 * off by more than its interval shows (pairs.h).
 */
static void compare(struct eval_kernel *k, json_t *const *base, json_t *const *res, int npass,
		    double threshold)
{
	struct pairs all = { 0 };
	struct pair_verdict v, pv[EVAL_MAX_PASSES];
	double noise, least = INFINITY, most = -INFINITY;

	k->allowed = threshold;
	if (k->same_as_base) {
		k->speedup = 1;
		return;
	}
	for (int p = 0; p < npass; p++) {
		struct pairs one = { 0 };

		pairs_add(&one, base[p], res[p]);
		for (size_t i = 0; i < one.n; i++)
			pairs_add_ratio(&all, one.ratio[i]);
		pv[p] = pairs_verdict(&one);
		pairs_release(&one);
		k->pass[p] = (struct eval_pass){ pv[p].median, pv[p].lo, pv[p].hi, pv[p].n };
		if (pv[p].n) {
			least = fmin(least, pv[p].median);
			most = fmax(most, pv[p].median);
		}
	}
	v = pairs_verdict(&all);
	pairs_release(&all);
	if (v.n) {
		k->speedup = v.median;
		k->lo = v.lo;
		k->hi = v.hi;
		k->pairs = v.n;
	} else { /* timed in different evalpod runs (a retry): their medians */
		k->speedup = perf_num(base[0], "median_ms") / perf_num(res[0], "median_ms");
	}
	if (!isnan(k->lo)) {
		noise = (k->hi - k->lo) / 2;
	} else {
		double a = perf_num(base[0], "robust_cv"), b = perf_num(res[0], "robust_cv");

		noise = fmax(isnan(a) ? 0 : a, isnan(b) ? 0 : b);
	}
	if (npass > 1 && most >= least)
		noise = fmax(noise, (most - least) / 2);
	k->allowed = fmax(threshold, noise);
	k->regression = !isnan(k->speedup) && k->speedup < 1 - k->allowed;
	if (npass > 1)
		k->across = across(pv, npass);
}

/* Whether the program's result is ok in each of npass runs. */
static int ok_in_every_run(json_t *const *res, int npass)
{
	for (int p = 0; p < npass; p++)
		if (!res[p] || !is_ok(res[p]))
			return 0;
	return 1;
}

/*
 * With several runs: every two kernels that are ok in every run and are
 * not one program (the same source given twice), judged against each other
 * as compare() judges a kernel against the baseline, run by run and across
 * the runs.  So a confirmation's rule can say which of several candidates
 * is faster (bench/retime.py), not only how each stands to the baseline.
 */
static void judge_pairs(struct eval_report *r, json_t *(*res)[EVAL_MAX_PASSES])
{
	if (r->npass < 2 || r->nk < 2)
		return;
	r->pair = xcalloc(r->nk * (r->nk - 1) / 2, sizeof(*r->pair));
	for (size_t a = 0; a < r->nk; a++) {
		for (size_t b = a + 1; b < r->nk; b++) {
			struct eval_pair *q = &r->pair[r->npair];
			struct pair_verdict pv[EVAL_MAX_PASSES];

			if (!strcmp(r->k[a].id, r->k[b].id) || !ok_in_every_run(res[a], r->npass) ||
			    !ok_in_every_run(res[b], r->npass))
				continue;
			q->a = a;
			q->b = b;
			for (int p = 0; p < r->npass; p++) {
				struct pairs one = { 0 };

				pairs_add(&one, res[a][p], res[b][p]);
				pv[p] = pairs_verdict(&one);
				pairs_release(&one);
				q->pass[p] = (struct eval_pass){ pv[p].median, pv[p].lo, pv[p].hi,
								 pv[p].n };
			}
			q->across = across(pv, r->npass);
			r->npair++;
		}
	}
}

/*
 * The result to report of a program timed in npass runs: the first that
 * failed (or has none), else the middle run by its median time (of an even
 * count, the faster of the two middle ones), so that its figures are no
 * run's outlier.
 */
static json_t *reported(json_t *const *res, int npass)
{
	double ms[EVAL_MAX_PASSES];
	int order[EVAL_MAX_PASSES];

	for (int p = 0; p < npass; p++)
		if (!res[p] || !is_ok(res[p]))
			return res[p];
	for (int p = 0; p < npass; p++) {
		int i = p;

		/* Insertion by median time; a run without one sorts last. */
		ms[p] = perf_num(res[p], "median_ms");
		for (; i > 0 && (isnan(ms[order[i - 1]]) || ms[order[i - 1]] > ms[p]); i--)
			order[i] = order[i - 1];
		order[i] = p;
	}
	return res[order[(npass - 1) / 2]];
}

/* Judges the kernels; base and res are the result documents by pass (the
 * baseline's, and each kernel's in the order of r->k). */
static void judge(struct eval_report *r, json_t *const *base, json_t *(*res)[EVAL_MAX_PASSES])
{
	const char *bst = json_string_value(json_object_get(r->base_res, "status"));
	int infra = !bst || !strcmp(bst, "infra_error"), failed = 0, slower = 0;

	for (size_t i = 0; i < r->nk; i++) {
		struct eval_kernel *k = &r->k[i];
		const char *st = json_string_value(json_object_get(k->res, "status"));

		k->status = st ? st : "missing";
		k->speedup = k->lo = k->hi = k->allowed = NAN;
		if (!st || !strcmp(st, "infra_error"))
			infra = 1;
		else if (strcmp(st, "ok"))
			failed = 1;
		else if (is_ok(r->base_res))
			compare(k, base, res[i], r->npass, r->threshold);
		slower |= k->regression;
	}
	judge_pairs(r, res);
	r->verdict = infra    ? EVAL_INFRA
		     : failed ? EVAL_INCORRECT
		     : slower ? EVAL_REGRESSION
			      : EVAL_PASS;
}

/* --- the outputs ----------------------------------------------------------------- */

/* summary.md and eval.json in the --out folder, and GitHub's files when set. */
static int write_outputs(const struct eval_report *r, const char *out, json_t *doc)
{
	struct sbuf md = SBUF_INIT;
	char *summary = xasprintf("%s/summary.md", out), *jpath = xasprintf("%s/eval.json", out);
	char *text = jx_dump(doc), msg[1024];
	const char *step = getenv("GITHUB_STEP_SUMMARY"), *ghout = getenv("GITHUB_OUTPUT");
	int rc;

	eval_markdown(&md, r);
	rc = file_write_atomic(summary, md.buf, md.len, msg, sizeof(msg));
	if (!rc)
		rc = file_write_atomic(jpath, text, strlen(text), msg, sizeof(msg));
	if (!rc && step && *step) {
		FILE *f = fopen(step, "a");

		if (!f || fwrite(md.buf, 1, md.len, f) != md.len || fputs("\n", f) < 0)
			rc = kerr_set(msg, sizeof(msg), KERR_IO,
				      "cannot append to $GITHUB_STEP_SUMMARY '%s'", step);
		if (f && fclose(f) && !rc)
			rc = kerr_set(msg, sizeof(msg), KERR_IO,
				      "cannot append to $GITHUB_STEP_SUMMARY '%s'", step);
	}
	if (!rc && ghout && *ghout)
		rc = eval_github_output(ghout, r, summary, msg, sizeof(msg));
	if (rc)
		log_error("%s", msg);
	sbuf_release(&md);
	free(text);
	free(jpath);
	free(summary);
	return rc;
}

/* --- the command ----------------------------------------------------------------- */

struct eval_run {
	struct eval_opts o;
	char *base_src;
	char *src[EVAL_MAX_KERNELS];
	struct eval_program progs[EVAL_MAX_KERNELS + 1];
	char *ids[EVAL_MAX_KERNELS + 1];
	size_t nprogs;
	struct eval_kernel k[EVAL_MAX_KERNELS];
	/* the result documents, by pass: the baseline's and each kernel's */
	json_t *base_res[EVAL_MAX_PASSES];
	json_t *res[EVAL_MAX_KERNELS][EVAL_MAX_PASSES];
};

/* The programs: the baseline, then each distinct kernel source once. */
static void plan(struct eval_run *e, struct session *s)
{
	const char *opts = s->spec.build_options;
	int nk = e->o.nk ? e->o.nk : 1;

	e->ids[0] = xstrdup("baseline");
	e->progs[0] =
		(struct eval_program){ e->ids[0], e->base_src ? e->base_src : s->spec.template_src,
				       opts,
				       e->o.baseline ? e->o.baseline : s->spec.template_path };
	e->nprogs = 1;
	for (int i = 0; i < nk; i++) {
		const char *src = e->o.nk ? e->src[i] : s->spec.template_src;
		size_t j;

		e->k[i].file = e->o.nk ? e->o.kernels[i] : s->spec.template_path;
		for (j = 0; j < e->nprogs && strcmp(e->progs[j].source, src); j++)
			;
		if (j == e->nprogs) {
			e->ids[j] = xasprintf("kernel-%d", i + 1);
			e->progs[j] = (struct eval_program){ e->ids[j], src, opts, e->k[i].file };
			e->nprogs++;
		}
		e->k[i].id = e->ids[j];
		e->k[i].same_as_base = j == 0;
	}
}

static void run_release(struct eval_run *e)
{
	free(e->base_src);
	for (int i = 0; i < EVAL_MAX_KERNELS; i++)
		free(e->src[i]);
	for (size_t i = 0; i < e->nprogs; i++)
		free(e->ids[i]);
	for (int p = 0; p < EVAL_MAX_PASSES; p++) {
		json_decref(e->base_res[p]);
		for (int i = 0; i < EVAL_MAX_KERNELS; i++)
			json_decref(e->res[i][p]);
	}
}

/* Evaluates and reports; the session is open.  Returns kctl eval's exit status. */
static int evaluate(struct eval_run *e, struct session *s, const char *spec)
{
	struct eval_report r;
	char msg[4096] = "", *dir, *results;
	json_t *doc;
	int rc, nk = e->o.nk ? e->o.nk : 1;

	plan(e, s);
	rc = session_eval(s, e->progs, e->nprogs, e->o.passes, msg, sizeof(msg));
	if (rc) {
		log_error("session %s: %s", s->id, msg);
		return rc == 130 ? 130 : EVAL_EXIT_INFRA;
	}
	for (int p = 0; p < e->o.passes; p++) {
		char *pdir = session_round_dir(s, p), *pres = xasprintf("%s/results", pdir);

		e->base_res[p] = load_result(pres, "baseline");
		for (int i = 0; i < nk; i++)
			e->res[i][p] = load_result(pres, e->k[i].id);
		free(pres);
		free(pdir);
	}
	dir = session_round_dir(s, 0);
	results = xasprintf("%s/results", dir);
	memset(&r, 0, sizeof(r));
	r.spec = spec;
	r.session = s->id;
	r.results = results;
	r.baseline = e->o.baseline;
	r.template_path = s->spec.template_path;
	r.base_res = reported(e->base_res, e->o.passes);
	r.k = e->k;
	r.nk = (size_t)nk;
	r.threshold = e->o.threshold;
	r.npass = e->o.passes;
	for (int i = 0; i < nk; i++)
		e->k[i].res = reported(e->res[i], e->o.passes);
	judge(&r, e->base_res, e->res);
	{
		struct sbuf why = SBUF_INIT;

		eval_verdict_text(&why, &r);
		if (session_eval_end(s, why.buf, msg, sizeof(msg)))
			log_warn("session %s: %s", s->id, msg);
		sbuf_release(&why);
	}
	doc = eval_json(&r);
	rc = write_outputs(&r, e->o.out, doc) ? EVAL_EXIT_INFRA : eval_exit_status(r.verdict);
	json_object_set_new(doc, "exit_status", json_integer(rc));
	if (getenv("GITHUB_ACTIONS") && !strcmp(getenv("GITHUB_ACTIONS"), "true")) {
		eval_annotations(e->o.json ? stderr : stdout, &r);
		fflush(stderr);
	}
	if (e->o.json) {
		char *text = jx_dump(doc);

		printf("%s\n", text);
		free(text);
	} else {
		eval_print_table(stdout, &r);
	}
	json_decref(doc);
	free(r.pair);
	free(results);
	free(dir);
	return rc;
}

int cmd_eval(int argc, char **argv)
{
	struct eval_run *e = xcalloc(1, sizeof(*e));
	struct session s;
	struct store *st;
	char msg[4096] = "";
	int rc = 0;

	memset(&s, 0, sizeof(s));
	if (parse(argc, argv, &e->o)) {
		free(e);
		return EVAL_EXIT_USAGE;
	}
	if (access(argv[optind], R_OK)) {
		log_error("cannot read the spec '%s': %s", argv[optind], strerror(errno));
		free(e);
		return EVAL_EXIT_USAGE;
	}
	if (e->o.baseline && !(e->base_src = read_source(e->o.baseline)))
		rc = EVAL_EXIT_USAGE;
	for (int i = 0; i < e->o.nk && !rc; i++)
		if (!(e->src[i] = read_source(e->o.kernels[i])))
			rc = EVAL_EXIT_USAGE;
	if (!rc && dir_make(e->o.out, msg, sizeof(msg))) {
		log_error("--out: %s", msg);
		rc = EVAL_EXIT_USAGE;
	}
	if (!rc && !(st = cmd_open_store(e->o.state)))
		rc = EVAL_EXIT_INFRA;
	if (rc) {
		run_release(e);
		free(e);
		return rc;
	}
	s.output_root = e->o.out;
	s.backend_forced = e->o.backend >= 0;
	s.no_cache = e->o.no_cache;
	s.backend_kind = e->o.backend >= 0 ? (enum spec_backend)e->o.backend : BACKEND_LOCAL;
	rc = session_create(&s, st, argv[optind], msg, sizeof(msg));
	if (rc) {
		log_error("%s", msg);
		/* no device or no evalpod is the machine; anything else is the spec */
		rc = rc == KERR_NODEVICE || rc == KERR_NOTFOUND || rc == KERR_IO ? EVAL_EXIT_INFRA
										 : EVAL_EXIT_USAGE;
	} else {
		fprintf(stderr, "session %s: output in %s\n", s.id, s.dir);
		s.interactive = isatty(STDERR_FILENO);
		rc = evaluate(e, &s, argv[optind]);
	}
	if (store_check(st, msg, sizeof(msg))) {
		log_error("%s", msg);
		rc = EVAL_EXIT_INFRA;
	}
	session_release(&s);
	store_close(st);
	run_release(e);
	free(e);
	return rc;
}
