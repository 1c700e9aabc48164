/*
 * timing-internal.h - what the parts of the timing worker share:
 * timing.c (opening the timer, building, warming up and sampling the
 * programs in rounds), timing-stop.c (when a program's sampling is done)
 * and timing-report.c (time.json, traces, the device peaks).  Not for use
 * outside them; worker.h declares worker_time().
 */
#ifndef EVALPOD_TIMING_INTERNAL_H
#define EVALPOD_TIMING_INTERNAL_H

#include "batch.h"
#include "clrt.h"
#include "judge.h"
#include "peaks.h"
#include "prog.h"
#include "worker.h"
#include "world.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/*
 * How the timing worker's limits.memory_mb is shared out: the peaks'
 * micro-kernels may allocate a quarter of it (first_peaks) and the cache
 * flush an eighth (setup_flush); the rest holds the programs and PoCL,
 * about 270 MiB resident under ASan.
 */
#define WORKER_MEM(t)      ((uint64_t)(t)->b.limits.memory_mb << 20)
#define PEAKS_MEM_SHARE(t) (WORKER_MEM(t) / 4)
#define FLUSH_MEM_SHARE(t) (WORKER_MEM(t) / 8)

struct tprog {
	char *id;
	uint32_t line; /* in ids.txt: the judge's name for it */
	const struct source_spec *src;
	struct prog pg;
	struct plan plan;
	int active; /* still sampling */
	int failed; /* excluded; status/fault in doc */
	int reps;
	double cal_ms; /* fastest warm-up run: what its repetitions are set from */
	double *samples, *host;
	size_t *round_of;
	size_t nsamples;
	size_t runs; /* timed or warm-up runs so far: picks the next input set */
	double total_ms;
	double median, fastest; /* of samples[0..nsamples), kept by add_sample */
	double ci_lo, ci_hi;    /* the 95% interval of that median (stats_median_ci), too */
	double first_launch_ms, rebuild_ms;
	const char *stopped_by; /* the stopping rule that ended its sampling */
	json_t *doc;            /* this program's entry in time.json */
	json_t *trace;          /* trace events */
};

struct timer {
	const char *work;
	char *dir;              /* the worker's own directory */
	const uint64_t *tseeds; /* this run's timing seeds, from the parent */
	struct judge_client jc;
	json_t *sandbox;
	struct batch b;
	size_t shape; /* the timed shape this pass times (b.timed_shape: the primary) */
	struct clrt rt;
	struct world w;
	struct tprog *progs;
	size_t nprogs;
	cl_mem flush_buf, flush_out; /* what the flush reads; where it never writes */
	cl_kernel flush_k;
	size_t flush_items;       /* its work-items, FLUSH_GRAIN bytes each */
	int flush_from_binary;    /* the flush was built from the reference worker's binary */
	int flush_by_lines;       /* the lines flush instead (world_flush_lines): no kernel */
	size_t flush_lines_bytes; /* what it evicts: the world's buffers and guards */
	uint64_t nflushes;        /* flushes done: one before each sample and warm-up */
	cl_ulong t0;              /* device time origin of the trace */
	int lost;                 /* a failed launch left the context unusable */
	void **seen;              /* per output buffer: its place in the judge's memory */
	void **sets[WORKER_TIMING_SETS]; /* per set, per buffer: initial contents */
	unsigned cur_set;                /* the set on the device now */
	unsigned sample_set;             /* the set the last sample ran on */
	uint64_t rng;
	struct fma_probe probe; /* measurement.peak_probe: open when probe.k is set */
	double *probe_gf;       /* per round: the probe's GFLOP/s, 0 where it failed */
	size_t nprobe;
	char msg[2048];
};

/*
 * An audit sample's inputs (audit_sample): run r uploads fresh[r], new
 * inputs generated for it, except run vrun, which uploads audit set vset
 * (vrun < 0: none).
 */
struct audit_inputs {
	char **fresh;
	int vrun;
	unsigned vset;
};

/* The timer's random source (measurement.order_seed). */
uint64_t timing_rand(struct timer *t);

/* Marks p failed (no more sampling) with status, fault origin, kind and message. */
void timing_fail(struct tprog *p, const char *status, const char *origin, const char *kind,
		 const char *message);

/*
 * One sample of p: reps runs of its plan, each after a fresh upload of an
 * input set (the rotating timing sets, or audit's) and poisoned outputs, the
 * first after a cache flush; *ms the mean of the runs' device times, *host_ms
 * the host clock's.  The outputs of one run are captured for
 * timing_verify_outputs (with audit, only those of its run on the audit set).
 * record: add the sample to p's trace.  Returns 0, or -1 with p failed.
 */
int timing_sample(struct timer *t, struct tprog *p, int reps, double *ms, double *host_ms,
		  int record, const struct audit_inputs *audit);

/*
 * Has the parent's judge compare the captured outputs with the reference
 * for their input set (audit: an audit set, JUDGE_AUDIT); fails p when wrong.
 */
void timing_verify_outputs(struct timer *t, struct tprog *p, size_t sample, int audit);

/* Checks the guards and, with inputs, the read-only inputs; repairs and fails p on damage. */
void timing_verify_memory(struct timer *t, struct tprog *p, size_t sample, int inputs);

/*
 * After the rounds: audits the fastest programs on inputs new to them
 * (timing-audit.c); a program that fails is marked failed in its entry.
 */
void audit_programs(struct timer *t);

/* What the audit's verdict weighs (audit_verdict). */
struct audit_figures {
	double ratio;   /* mean on new inputs (less the floor) over mean on the timing sets */
	double fastest; /* fastest on new inputs (less the floor) over fastest on the timing sets */
	double rounds;  /* the same over the rounds' fastest sample; NAN when not taken */
};

/*
 * The audit's verdict on n pairs of samples, met[i] on the timing sets and
 * fresh[i] on new inputs, each mean without its slowest quarter (one of
 * three); rounds_fastest is the fastest sample of the program's rounds,
 * taken with as many runs a sample (NAN when there is none to compare).
 * The program passes (1) when the figures in *a are within their limits
 * (timing-audit.c has them).  n == 0 fails.
 */
int audit_verdict(const double *met, const double *fresh, size_t n, double rounds_fastest,
		  struct audit_figures *a);

/*
 * Whether p has been sampled enough: at max_samples or max_time_ms, or once
 * outclassed (its figure is then known less well, which no ranking
 * decision needs); else, past min_samples, once the timed time reaches
 * min_time_ms, once its median is shown slower than another program's
 * (outpaced: their 95% intervals apart), or once the median is known within
 * measurement.precision (stats_median_ci_rel): more samples of a kernel
 * whose median is already that certain tell the ranking nothing it acts
 * on.  Sets p->stopped_by.
 */
int timing_done(const struct timer *t, struct tprog *p);

/*
 * Finishes every program's entry and writes the worker's time document
 * (doc.json in t->dir: device, peaks, rounds, wall time, programs) and each
 * sampled program's trace.  Returns 0 or an error with t->msg.
 */
int write_time_doc(struct timer *t, const struct peaks *pk, size_t rounds, double wall);

/* The peaks before any program runs: the parent's cached ones, else measured now. */
int first_peaks(struct timer *t, struct peaks *pk);

/*
 * Whether a program's fastest sample went above a ceiling of pk; *need_gf and
 * *need_gb are what the ceilings must reach for every program to pass.
 */
int above_peaks(struct timer *t, const struct peaks *pk, double *need_gf, double *need_gb);

/* Measures the peaks again (bounded in time) and raises pk's ceilings. */
void confirm_peaks(struct timer *t, struct peaks *pk, double need_gf, double need_gb);

#endif
