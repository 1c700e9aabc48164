/*
 * noise.h - the timing-noise test mode: EVALPOD_TEST_NOISE=SEED:AMPLITUDE.
 *
 * A controller has to be tested against the timings of a busy machine, and
 * a busy machine does not come on request.  When the variable is set, the
 * parent of `evalpod run` multiplies every timed sample of every program
 * (samples_ms and host_ms alike) by
 *
 *     factor = (1 + A * u_round) * (1 + A/2 * u_sample)
 *
 * before any statistic, speedup, roofline or gate is computed from it.  A
 * is AMPLITUDE (0 to 10); u_round and u_sample are uniform in [0, 1):
 *
 *   - u_round is drawn from (SEED, batch_id, round): one per timing round,
 *     common to every program sampled in it, like load that comes and goes
 *     (the per-round paired ratios cancel it, the ratio of medians does not);
 *   - u_sample is drawn from (SEED, batch_id, program id, round, sample
 *     index): each sample's own jitter.
 *
 * The same SEED and batch give the same factors, another batch_id others.
 * Every factor is at least 1: the noise only slows samples down, as load
 * does, so no gate that rejects a program for looking too fast (above_peak)
 * can fire because of it.
 *
 * Only the parent reads the variable; workers never see it (it is not in
 * the worker environment's allowlist) and time as they always do.
 */
#ifndef EVALPOD_NOISE_H
#define EVALPOD_NOISE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define NOISE_ENV           "EVALPOD_TEST_NOISE"
#define NOISE_MAX_AMPLITUDE 10.0

struct noise {
	int on;
	long long seed;
	double amplitude;
	char text[64]; /* the value as given, for the warnings */
};

/*
 * Parses "SEED:AMPLITUDE": SEED a decimal integer (64-bit, optionally
 * negative), AMPLITUDE a decimal number from 0 to NOISE_MAX_AMPLITUDE.
 * Returns 0 with nz on, or KERR_INVALID with nz off and msg naming the
 * variable, the value and what is wrong.
 */
int noise_parse(struct noise *nz, const char *text, char *msg, size_t n);

/*
 * Reads NOISE_ENV: 0 with nz off when it is unset or empty, 0 with nz on
 * when it is valid, KERR_INVALID (see noise_parse) otherwise.
 */
int noise_from_env(struct noise *nz, char *msg, size_t n);

/* The round factor 1 + A * u_round, in [1, 1 + A); 1 when nz is off. */
double noise_round(const struct noise *nz, const char *batch_id, uint64_t round);

/* The jitter 1 + A/2 * u_sample, in [1, 1 + A/2); 1 when nz is off. */
double noise_jitter(const struct noise *nz, const char *batch_id, const char *id, uint64_t round,
		    uint64_t sample);

/* Their product: what sample `sample` of program id, taken in round `round`, is multiplied by. */
double noise_factor(const struct noise *nz, const char *batch_id, const char *id, uint64_t round,
		    uint64_t sample);

/*
 * Perturbs every program's entry in time.json (tdoc's "programs", keyed by
 * id): samples_ms and host_ms are multiplied by noise_factor() (the round
 * of a sample is its "rounds" entry, its index its position), and stats,
 * host_stats and timed_ms (sum of samples times reps_per_sample) are
 * computed again from them.  Nothing else changes.  Does nothing when nz
 * is off.
 */
void noise_apply(const struct noise *nz, const char *batch_id, json_t *tdoc);

/* New JSON string: "timings perturbed by EVALPOD_TEST_NOISE=TEXT (test mode)". */
json_t *noise_warning(const struct noise *nz);

/* New JSON object {"seed", "amplitude"} for summary.json's test_noise. */
json_t *noise_json(const struct noise *nz);

#endif
