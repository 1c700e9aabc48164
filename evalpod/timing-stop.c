/*
 * timing-stop.c - the timing worker's stopping rules: when a program has
 * been sampled enough (timing-internal.h, timing_done).
 */
#include "timing-internal.h"
#include "stats.h"

#include <math.h>
#include <string.h>

/* Samples a program has before the outclass rule may end its sampling. */
#define OUTCLASS_SAMPLES 3

/*
 * How far past outclass x the best median a program's fastest run must be,
 * in ms.  The noise of a run that short is absolute, not relative: on PoCL
 * one 4096-element kernel sampled at 1.2 and 5.5 us in one quiet batch, and
 * from 1.1 to 47 us under ASan on a loaded machine, so between two such
 * programs a ratio of 2 says nothing.
 */
#define OUTCLASS_FLOOR_MS 0.05

/*
 * The smallest median of the other programs with OUTCLASS_SAMPLES samples,
 * the reference left out: it is the unit speedups are given in, not a
 * contender, and a fast one (or a trivial one) would otherwise cut every
 * variant to OUTCLASS_SAMPLES samples in a batch that times it and not in
 * one whose baseline carries its speed.
 */
static double best_other_median(const struct timer *t, const struct tprog *p)
{
	double best = HUGE_VAL;

	for (size_t i = 0; i < t->nprogs; i++) {
		const struct tprog *q = &t->progs[i];

		if (q != p && !q->failed && q->nsamples >= OUTCLASS_SAMPLES &&
		    strcmp(q->id, "reference"))
			best = fmin(best, q->median);
	}
	return best;
}

/* The reference and the baseline: every speedup is measured against them. */
static int never_cut(const struct timer *t, const struct tprog *p)
{
	return !strcmp(p->id, "reference") || (t->b.baseline && !strcmp(p->id, t->b.baseline->id));
}

/*
 * Whether p cannot rank near the top of this batch: it has
 * OUTCLASS_SAMPLES samples, taken in as many rounds, and even its fastest
 * is slower than measurement.outclass times another program's median, by
 * more than OUTCLASS_FLOOR_MS.
 * The reference and the baseline are never outclassed: every speedup is
 * measured against them.
 */
static int outclassed(const struct timer *t, const struct tprog *p)
{
	if (t->b.measure.outclass <= 0 || p->nsamples < OUTCLASS_SAMPLES || never_cut(t, p))
		return 0;
	return p->fastest > t->b.measure.outclass * best_other_median(t, p) + OUTCLASS_FLOOR_MS;
}

/*
 * Whether p is shown slower than another program: it has min_samples
 * samples, and the 95% interval of its median (stats_median_ci) lies above
 * that of another program with 6 samples or more, the reference left out
 * as for outclassed(), by more than OUTCLASS_FLOOR_MS.  Two intervals
 * apart say p's median is the slower one whatever the samples' spread,
 * which the outclass ratio cannot: it waits for 2 x.  p then cannot win
 * the batch, and its median from min_samples samples is precise enough for
 * the search's model; its interval stays the one a success would need.
 * It is the rule the outclass knob turns off with the other: measurement
 * .outclass 0 (kctl confirm's passes) samples every program in full.
 */
static int outpaced(const struct timer *t, const struct tprog *p)
{
	double best = HUGE_VAL;

	if (t->b.measure.outclass <= 0 || (int)p->nsamples < t->b.measure.min_samples ||
	    never_cut(t, p))
		return 0;
	/* add_sample keeps the intervals; a program's has no upper end before 6 samples. */
	for (size_t i = 0; i < t->nprogs; i++) {
		const struct tprog *q = &t->progs[i];

		if (q != p && !q->failed && q->nsamples >= 6 && strcmp(q->id, "reference"))
			best = fmin(best, q->ci_hi);
	}
	return p->ci_lo > best + OUTCLASS_FLOOR_MS;
}

int timing_done(const struct timer *t, struct tprog *p)
{
	const struct measure_spec *m = &t->b.measure;

	if ((int)p->nsamples >= m->max_samples)
		p->stopped_by = "max_samples";
	else if (p->total_ms >= m->max_time_ms)
		p->stopped_by = "max_time_ms";
	else if (outclassed(t, p))
		p->stopped_by = "outclassed";
	else if ((int)p->nsamples < m->min_samples)
		return 0;
	else if (p->total_ms >= m->min_time_ms)
		p->stopped_by = "min_time_ms";
	else if (outpaced(t, p))
		p->stopped_by = "outpaced";
	else if (m->precision > 0 && stats_median_ci_rel(p->samples, p->nsamples) <= m->precision)
		p->stopped_by = "precision";
	else
		return 0;
	return 1;
}
