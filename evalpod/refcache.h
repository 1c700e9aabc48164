/*
 * refcache.h - the reference's outputs kept across the batches of one
 * session (evalpod run --ref-cache DIR).
 *
 * The reference is the batch author's program: for a given problem, shape,
 * seed, device and evalpod, its outputs never change, yet every batch used
 * to recompute them (the naive reference is the slowest program of a
 * batch).  The cache keeps each output buffer of each (shape, seed) in
 * DIR/<key>.bin, where key is the SHA-256 of everything the output depends
 * on: evalpod's own executable, the machine (/etc/machine-id), the batch's
 * problem, reference and device selector, the shape's values, the seed and
 * the buffer.  An entry repeats its key, its length and the SHA-256 of its
 * bytes in a header; one whose header does not match (corrupted, truncated,
 * or another entry's bytes under this name) is removed and recomputed,
 * never used.
 *
 * The cache also holds the session's timing seeds (DIR/timing-seeds), drawn
 * once, so that the reference need not run again for them.  Only the parent
 * reads or writes DIR: it lies outside the work directory, so no worker's
 * sandbox reaches it.
 */
#ifndef EVALPOD_REFCACHE_H
#define EVALPOD_REFCACHE_H

#include "batch.h"
#include "worker.h"

#include <stddef.h>
#include <stdint.h>

struct refcache {
	char *dir;         /* the cache folder (owned) */
	char digest[65];   /* what every entry of this batch depends on, hex SHA-256 */
	unsigned rejected; /* entries found damaged or foreign by the last restore */
};

/*
 * Opens the cache in dir (created, mode 0700) for the parsed batch b; exe
 * is evalpod's executable.  Returns 0, or a KERR_ code with msg set ("what
 * failed 'path': reason").  Release with refcache_close (also after a
 * failure).
 */
int refcache_open(struct refcache *c, const char *dir, const char *exe, const struct batch *b,
		  char *msg, size_t n);
void refcache_close(struct refcache *c);

/*
 * The session's timing seeds: those in DIR/timing-seeds when it holds three
 * valid ones (none a correctness seed of b, all distinct), else freshly
 * drawn (worker_draw_seeds) and saved there.  A failure to save is logged;
 * the seeds are then this run's own.
 */
void refcache_seeds(struct refcache *c, const struct batch *b, uint64_t *seeds);

/*
 * Copies every reference output b needs (every shape and correctness seed,
 * and the timing seeds at every timed shape) from the cache into refdir under
 * worker_ref_path's names, with the reference's program binary as
 * refdir/bin.bin and the cache flush's as refdir/flush.bin (flush.h) when
 * cached.  Returns 1 when every output was there and
 * intact, 0 otherwise (the reference must run; c->rejected counts the
 * entries removed as damaged or foreign, each logged).
 */
int refcache_restore(struct refcache *c, const struct batch *b, const uint64_t *tseeds,
		     const char *refdir);

/*
 * Stores the outputs the reference worker left in refdir (same names), and
 * the two binaries, in the cache.  Call before judge_open unlinks them.  A failure
 * is logged and costs only the cache.
 */
void refcache_store(struct refcache *c, const struct batch *b, const uint64_t *tseeds,
		    const char *refdir);

/*
 * The reference's speed carried by a program of the session (an anchor):
 * at timed shape s, the reference's median over program p's, p as the
 * batch gives it (source and build options), with samples as the batch's
 * measurement makes them (flush, flush_bytes, sample_min_ms) and the
 * session's timing seeds tseeds.  links counts the
 * side-by-side measurements the figure is a product of: 0 when the
 * reference was timed beside p, k + 1 when p was timed beside a baseline
 * whose anchor had k links.  A batch whose baseline has an anchor with
 * fewer than REFCACHE_ANCHOR_LINKS links does not time the reference at
 * that shape: every speedup over the reference is then the speedup over
 * the baseline times the baseline's anchor, so no figure is more than
 * REFCACHE_ANCHOR_LINKS links from a timed reference (docs/evalpod.md).
 */
#define REFCACHE_ANCHOR_LINKS 2

struct ref_anchor {
	double ratio; /* the reference's median over the program's, > 0 */
	int links;    /* 0..REFCACHE_ANCHOR_LINKS */
};

/*
 * Program p's anchor at shape s: 0 with *a set, 1 when there is none (an
 * entry found damaged or foreign is logged, removed and counts as none).
 */
int refcache_anchor_get(struct refcache *c, const struct batch *b, const uint64_t *tseeds, size_t s,
			const struct source_spec *p, struct ref_anchor *a);

/*
 * Keeps *a as program p's anchor at shape s, unless an anchor with fewer
 * links is there already.  A failure is logged and costs only the cache.
 */
void refcache_anchor_put(struct refcache *c, const struct batch *b, const uint64_t *tseeds,
			 size_t s, const struct source_spec *p, const struct ref_anchor *a);

#endif
