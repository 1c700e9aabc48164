/*
 * cache-use.h - the result cache in the loop (cache-use.c): which results
 * a round takes from the cache (before its batch is packed) and which it
 * gives to it (after its results are collected); docs/kctl.md, "The
 * result cache".  A step of the round (round.c) calls it; it uses the
 * batch (pack.h), the store and the cache's file (cache.h).
 *
 * The cache is on for a session when its spec's cache.enabled (the
 * default) is true, kctl was not given --no-cache, and the device is
 * known: on the local backend from `evalpod devices` and `evalpod version`
 * when the session opens; on Kubernetes from the session's first recorded
 * result and the spec's image (so round 0 there is always evaluated).
 * With the spec's cache.s3, each entry stored is also put in the session's
 * object store as PREFIX/cache/KEY.json, and a local miss tries there
 * (checked as the file's entries are, then kept locally).
 * Every failure of the cache is a warning: a session never fails for it.
 */
#ifndef KCTL_CACHE_USE_H
#define KCTL_CACHE_USE_H

#include <jansson.h>
#include <stddef.h>

struct session;

/*
 * The problem part of round r's batch that decides a result: the EvalBatch
 * pack.c writes (round_batch_json) without its batch id, baseline,
 * variants, limits and outputs.  A new object.
 */
json_t *cache_use_problem(struct session *s, int round);

/*
 * The inputs of variant v's key (a new object): {format, device (the
 * fingerprints of the devices evalpod lists: platform, platform_version,
 * name, vendor, driver, version), evalpod (its version), batch (above),
 * program {source, build_options}}; NULL when the session has no device
 * fingerprint or v no source.
 */
json_t *cache_use_inputs(struct session *s, const json_t *problem, const json_t *v);

/*
 * Before round r's batch is packed: every variant of the round without a
 * result in dir/results whose key the cache holds (not expired, its check
 * passed) gets the cached result there as ID.json, marked with "cache"
 * {key, session, batch, variant, stored}.  When every candidate came so
 * from one batch timed against the program that is the incumbent now, that
 * batch's measurement of the baseline is written as the incumbent's result
 * of the round too (nothing is left to evaluate: the round is ranked on
 * what was measured side by side then).  Search rounds only (not a
 * confirmation or kctl eval, which measure side by side).  Returns how
 * many variants it filled; never fails.
 */
int cache_use_fill(struct session *s, int round, const char *dir);

/*
 * After round r's results are committed: stores in the cache each result
 * of the round's folder that kctl packed and evalpod measured (not one taken from
 * the cache), whose id is the variant's and whose device is one of those
 * evalpod listed, when its status says something about the kernel (see
 * docs/kctl.md); and the baseline's measurement when every candidate was
 * stored from one batch.  kctl eval's round too, never a confirmation's,
 * and nothing while an EVALPOD_TEST_* hook is set.  Returns how many it stored; never
 * fails.
 */
int cache_use_record(struct session *s, int round);

#endif
