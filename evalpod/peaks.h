/*
 * peaks.h - the device's own ceilings, measured by evalpod.
 *
 * Two micro-kernels: a streaming triad (a = b + s*c on float4, arrays well
 * past the last-level cache) for memory bandwidth, and independent chains
 * of fma for arithmetic throughput, in several vector widths and numbers of
 * chains so that one fits the device's registers; each is the best of
 * several runs, and the FMA peak the best of its forms.  An empty kernel gives the launch overhead.  The figures are cached
 * per device (platform, device, driver) in CACHE_DIR/peaks-KEY.json so a
 * batch pays for them once per machine.
 */
#ifndef EVALPOD_PEAKS_H
#define EVALPOD_PEAKS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "clrt.h"
#include "prog.h"

/* 2: the FMA peak is the best of several forms (1 had only float16 x 8) */
#define PEAKS_VERSION 2

struct peaks {
	double gflops;       /* fp32 FMA throughput, GFLOP/s */
	double gbs;          /* streaming bandwidth, GB/s (1e9 bytes) */
	double launch_us;    /* median event span of an empty kernel */
	double fresh_gflops; /* what this batch measured (gflops/gbs may be */
	double fresh_gbs;    /* higher: the best the cache has seen) */
	int cached;          /* 1 when a cached figure was combined in */
};

/*
 * Measures the peaks now, allocating at most budget bytes on the device (0:
 * no bound but the device's; the timing worker passes a quarter of
 * its limits.memory_mb).  Returns 0 or KERR_OPENCL/KERR_NOMEM with msg.
 */
int peaks_measure(struct clrt *rt, struct peaks *pk, uint64_t budget, char *msg, size_t n);

/*
 * Measures the peaks now and combines them with the cached ones: each
 * ceiling is the higher of the two (a busy machine measures low), and the
 * cache is raised when the fresh figure is higher (cache_dir NULL: no
 * cache).  When measuring fails the cached figures are used if any.
 */
int peaks_get(struct clrt *rt, const char *cache_dir, struct peaks *pk, uint64_t budget, char *msg,
	      size_t n);

/* Stores figures in the cache (only positive ones; a failure is logged). */
void peaks_save(const struct devinfo *info, const char *cache_dir, const struct peaks *pk);

/*
 * A cache file is rewritten whenever the peaks are measured (its mtime is
 * when they were last measured); figures older than this are not used
 * alone: the next batch measures again.  A cache begun on a busy machine
 * holds low ceilings, and only fresh measurements can raise them.
 */
#define PEAKS_RECHECK_S 600

/*
 * Copies every device's cached figures (CACHE_DIR/peaks-KEY.json) measured
 * within PEAKS_RECHECK_S from cache_dir into dir (created), for a worker
 * that may read dir but not the cache.  What is older or cannot be copied
 * is left out: the worker then measures.
 */
void peaks_copy_cache(const char *cache_dir, const char *dir);

/*
 * The cache directory when none is given: $EVALPOD_CACHE_DIR, else
 * $XDG_CACHE_HOME/evalpod, else $HOME/.cache/evalpod; NULL when none is
 * set (no cache).  The result is buf or NULL.
 */
const char *peaks_cache_dir(char *buf, size_t n);

/* Reads cached figures only; returns 0 when present. */
int peaks_read_cache(const struct devinfo *info, const char *cache_dir, struct peaks *pk);

json_t *peaks_json(const struct peaks *pk);

/*
 * The FMA peak sampled beside other programs (measurement.peak_probe: the
 * timing worker takes one run of it in every round, so that a program's
 * fraction of the peak is a ratio of runs made side by side, not of its
 * runs over a peak measured minutes before, or the best ever seen, on a
 * machine whose speed moves).  The form is the fastest of the forms the
 * peak is measured with, chosen when the probe is opened.
 */
struct fma_probe {
	struct prog pg;
	cl_kernel k;
	cl_mem out;
	size_t global;
	double gflop; /* per run */
	int width, chains;
};

/* Builds the FMA forms and keeps the fastest.  Returns 0 or KERR_* with msg. */
int fma_probe_open(struct clrt *rt, struct fma_probe *fp, char *msg, size_t n);

/* One run of the probe: its GFLOP/s by the run's profiling event. */
int fma_probe_run(struct clrt *rt, struct fma_probe *fp, double *gflops, char *msg, size_t n);

void fma_probe_close(struct fma_probe *fp);

#endif
