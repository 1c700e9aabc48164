/*
 * pairs.h - is one kernel faster than another, and how sure is that?
 *
 * evalpod times the programs of a batch in rounds, each program at most one
 * sample per round, in an order that changes from round to round.  Two
 * programs' samples from the same round saw the same machine, so their
 * ratio cancels load that comes and goes more slowly than a round.  A
 * comparison gathers those per-round ratios (from one or several evalpod
 * processes, never pairing samples of different processes) and gives their
 * median with a distribution-free 95% confidence interval: the interval of
 * order statistics the sign test gives, which assumes nothing about the
 * shape of the noise.
 */
#ifndef KCTL_PAIRS_H
#define KCTL_PAIRS_H

#include <jansson.h>
#include <stddef.h>

/* Ratios a/b of per-round times of two programs: above 1, b is faster. */
struct pairs {
	double *ratio;
	size_t n, cap;
};

/* What the pairs say about "b is faster than a" (speedup of b over a). */
struct pair_verdict {
	size_t n;      /* pairs */
	double median; /* of the ratios; NAN without pairs */
	double lo, hi; /* 95% interval of the median; NAN when n < 6 (too few to say) */
};

/*
 * Adds the per-round ratios of two evalpod result documents (performance.
 * samples_ms and .rounds): time of a / time of b, for each round that holds
 * a sample of both.  Nothing is added when the two were not timed in the
 * same evalpod process (batch_id differs) or either lacks samples.
 * Returns how many were added.
 */
size_t pairs_add(struct pairs *p, json_t *a, json_t *b);
/* Adds one ratio. */
void pairs_add_ratio(struct pairs *p, double r);
void pairs_release(struct pairs *p);

/* The median of the ratios and its 95% interval (p is reordered). */
struct pair_verdict pairs_verdict(struct pairs *p);

/*
 * The 95% interval of a median from n sorted values by order statistics:
 * [x[k], x[n-1-k]] with the largest k whose two-sided sign-test level is at
 * most 5%.  Returns k, or -1 when n is too small for any interval (n < 6).
 */
long pairs_ci_index(size_t n);

/* "+8.1% (95% CI +3.0% to +12.4%, 60 paired samples)": v as a speed difference. */
struct sbuf;
void pairs_describe(struct sbuf *b, struct pair_verdict v);

/* Differences within 1% are not improvements: kernels that close are equally fast. */
#define PAIRS_MIN_GAIN 0.01

/*
 * One evalpod process can time a program several percent off the others
 * it times: on PoCL, identical kernels timed with the same repetitions in
 * one process came out 5 to 11% apart with narrow intervals, and apart the
 * other way in another process (the cause is not pinned down; where each
 * program's code lands is the likely one).  Paired ratios cannot cancel
 * that, so a
 * comparison from one process proves a gain only beyond this allowance;
 * below it, only the agreement of several processes does (confirm.c).
 */
#define PAIRS_PROCESS_BIAS 0.15

/* Whether v shows a speedup of more than PAIRS_MIN_GAIN with 95% confidence. */
static inline int pairs_faster(struct pair_verdict v)
{
	return v.lo == v.lo && v.lo > 1 + PAIRS_MIN_GAIN; /* NAN fails */
}

/* Whether v shows, with 95% confidence, that the two are within PAIRS_MIN_GAIN. */
static inline int pairs_equal(struct pair_verdict v)
{
	return v.lo == v.lo && v.lo >= 1 / (1 + PAIRS_MIN_GAIN) && v.hi <= 1 + PAIRS_MIN_GAIN;
}

/* Whether v, measured in one process, shows a gain beyond that process's own bias. */
static inline int pairs_faster_alone(struct pair_verdict v)
{
	return v.lo == v.lo && v.lo > 1 + PAIRS_PROCESS_BIAS;
}

/* The 97.5% quantile of Student's t with df degrees of freedom (df >= 1). */
double pairs_t975(int df);

/*
 * Whether n verdicts of the same comparison, one per evalpod process (a
 * confirmation's passes), show its speedup for sure: at least two passes,
 * each faster on its own (pairs_faster), and either the t-interval
 * of their log medians above 1 + PAIRS_MIN_GAIN, or every pass beyond a
 * process's own bias (pairs_faster_alone).  The t-interval is what settles
 * a gain of a few percent, which one process can fake; with two passes it
 * is wide (t = 12.7), and passes that each show +60% and +250% would fail
 * it although no process bias explains either.
 */
int pairs_faster_across(const struct pair_verdict *v, int n);

#endif
