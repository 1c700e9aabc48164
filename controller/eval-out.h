/*
 * eval-out.h - what kctl eval (cmd-eval.c) found, and the forms it takes:
 * the table on a terminal, the JSON document (-o json, eval.json), the
 * Markdown summary (summary.md, $GITHUB_STEP_SUMMARY), GitHub's workflow
 * commands for annotations, and $GITHUB_OUTPUT's figures.  See
 * docs/kctl.md, "kctl eval".
 */
#ifndef KCTL_EVAL_OUT_H
#define KCTL_EVAL_OUT_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

struct sbuf;

/* The verdicts, in the order they win: any infrastructure failure, then a
 * failed kernel, then a regression. */
enum eval_verdict { EVAL_PASS, EVAL_REGRESSION, EVAL_INCORRECT, EVAL_INFRA };

/* Exit statuses of kctl eval (its own: 2 is a regression here, not a usage error). */
enum {
	EVAL_EXIT_PASS = 0,
	EVAL_EXIT_INCORRECT = 1,
	EVAL_EXIT_REGRESSION = 2,
	EVAL_EXIT_INFRA = 3,
	EVAL_EXIT_USAGE = 64,
};

/* kctl eval --passes: at most this many evalpod runs. */
#define EVAL_MAX_PASSES 10

/* A kernel against the baseline in one evalpod run (kctl eval --passes). */
struct eval_pass {
	double median, lo, hi; /* paired speedup and its 95% interval; NAN when none */
	size_t pairs;
};

/* One kernel file and what became of it. */
struct eval_kernel {
	const char *file;   /* as given on the command line */
	const char *id;     /* its program ("baseline" when it is the baseline's source) */
	json_t *res;        /* its result document (owned), NULL when there is none */
	const char *status; /* the result's, or "missing" */
	double speedup;     /* over the baseline (paired median); NAN when not timed */
	double lo, hi;      /* its 95% interval; NAN when too few pairs */
	size_t pairs;
	double allowed;   /* the slowdown allowed: the threshold or the noise, the larger */
	int regression;   /* slower than the baseline by more than allowed */
	int same_as_base; /* the baseline's very source and options */
	/* With several passes: each run's comparison, and what they say together
	 * by a confirmation's rule: "faster", "slower", "equal" (within 1% in
	 * every run) or "not separated"; NULL with one pass. */
	struct eval_pass pass[EVAL_MAX_PASSES];
	const char *across;
};

/* Two kernels, both ok in every run (kctl eval --passes, two kernels or
 * more): the speed of k[b] over k[a] (k[a]'s time over k[b]'s), run by run,
 * and what the runs say together, as eval_kernel's across. */
struct eval_pair {
	size_t a, b;
	struct eval_pass pass[EVAL_MAX_PASSES];
	const char *across;
};

struct eval_report {
	const char *spec;          /* the spec's path as given */
	const char *session;       /* the session that ran it */
	const char *results;       /* the folder of the result documents and artifacts */
	const char *baseline;      /* the baseline's file, NULL for the spec's template */
	const char *template_path; /* the spec's template */
	json_t *base_res;          /* the baseline's result (owned), NULL when none */
	struct eval_kernel *k;
	size_t nk;
	double threshold;       /* --threshold, as a fraction */
	int npass;              /* evalpod runs (--passes); the speedups pool them all */
	struct eval_pair *pair; /* with several runs: every two kernels (owned) */
	size_t npair;
	enum eval_verdict verdict;
};

/* The verdict's word ("pass", "incorrect", "regression", "infra_error") and exit status. */
const char *eval_verdict_name(enum eval_verdict v);
int eval_exit_status(enum eval_verdict v);

/* The verdict in a sentence ("pass: every kernel is correct and ..."), appended to b. */
void eval_verdict_text(struct sbuf *b, const struct eval_report *r);

/* The table of the kernels and the verdict, for a terminal. */
void eval_print_table(FILE *f, const struct eval_report *r);

/* The JSON document (schema "kctl.eval", version 1; a new object). */
json_t *eval_json(const struct eval_report *r);

/* The Markdown summary, appended to b. */
void eval_markdown(struct sbuf *b, const struct eval_report *r);

/*
 * GitHub workflow commands: an ::error per compile error with its file,
 * line and column (at most EVAL_MAX_ANNOTATIONS per kernel), one for a
 * kernel that failed otherwise, one for a regression.
 */
#define EVAL_MAX_ANNOTATIONS 10
void eval_annotations(FILE *f, const struct eval_report *r);

/* Appends the figures to the $GITHUB_OUTPUT file at path as NAME<<DELIMITER
 * blocks.  Returns 0 or a KERR_* code with msg. */
int eval_github_output(const char *path, const struct eval_report *r, const char *summary_path,
		       char *msg, size_t n);

/* For workflow commands: s escaped as a message (prop = 0) or a property
 * value (prop = 1), appended to b. */
void eval_gh_escape(struct sbuf *b, const char *s, int prop);

#endif
