/*
 * noise.c - the timing-noise test mode (see noise.h).
 */
#include "noise.h"
#include "err.h"
#include "splitmix.h"
#include "stats.h"
#include "xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Domains of the two draws, so that a round factor never equals a jitter. */
enum { NOISE_ROUND = 'R', NOISE_JITTER = 'J' };

static uint64_t fold(uint64_t h, uint64_t v)
{
	return splitmix_mix(h ^ splitmix_mix(v + SPLITMIX_GOLDEN));
}

/* FNV-1a of s, then its length: "ab","c" and "a","bc" hash apart. */
static uint64_t fold_str(uint64_t h, const char *s)
{
	uint64_t f = 0xcbf29ce484222325ull;
	size_t len = 0;

	for (; s && s[len]; len++)
		f = (f ^ (unsigned char)s[len]) * 0x100000001b3ull;
	return fold(fold(h, f), len);
}

/* Uniform in [0, 1) from the 53 high bits of h. */
static double unit(uint64_t h)
{
	return (double)(h >> 11) * 0x1.0p-53;
}

static uint64_t start(const struct noise *nz, int domain, const char *batch_id)
{
	return fold_str(fold(splitmix_mix((uint64_t)nz->seed), (uint64_t)domain), batch_id);
}

double noise_round(const struct noise *nz, const char *batch_id, uint64_t round)
{
	if (!nz->on)
		return 1;
	return 1 + nz->amplitude * unit(fold(start(nz, NOISE_ROUND, batch_id), round));
}

double noise_jitter(const struct noise *nz, const char *batch_id, const char *id, uint64_t round,
		    uint64_t sample)
{
	uint64_t h;

	if (!nz->on)
		return 1;
	h = fold(fold(fold_str(start(nz, NOISE_JITTER, batch_id), id), round), sample);
	return 1 + nz->amplitude / 2 * unit(h);
}

double noise_factor(const struct noise *nz, const char *batch_id, const char *id, uint64_t round,
		    uint64_t sample)
{
	return noise_round(nz, batch_id, round) * noise_jitter(nz, batch_id, id, round, sample);
}

static int bad(const char *text, const char *why, char *msg, size_t n)
{
	return kerr_set(msg, n, KERR_INVALID,
			"invalid %s '%.64s': %s (want SEED:AMPLITUDE, an integer and a number "
			"from 0 to %g, e.g. 7:0.3)",
			NOISE_ENV, text, why, NOISE_MAX_AMPLITUDE);
}

int noise_parse(struct noise *nz, const char *text, char *msg, size_t n)
{
	const char *colon = strchr(text, ':'), *digits = text + (text[0] == '-'), *num;
	char *end = NULL;
	long long seed;
	double amp;

	memset(nz, 0, sizeof(*nz));
	if (strlen(text) >= sizeof(nz->text))
		return bad(text, "too long", msg, n);
	if (!colon)
		return bad(text, "no ':'", msg, n);
	/* strtoll and strtod skip blanks and take signs: only digits may start each part. */
	if (!isdigit((unsigned char)*digits))
		return bad(text, "SEED is not an integer", msg, n);
	errno = 0;
	seed = strtoll(text, &end, 10);
	if (end != colon || errno)
		return bad(text, "SEED is not a 64-bit integer", msg, n);
	num = colon + 1 + (colon[1] == '-');
	if (!isdigit((unsigned char)*num) && *num != '.')
		return bad(text, "AMPLITUDE is not a number", msg, n);
	amp = strtod(colon + 1, &end);
	if (*end)
		return bad(text, "AMPLITUDE is not a number", msg, n);
	if (!(amp >= 0 && amp <= NOISE_MAX_AMPLITUDE))
		return bad(text, "AMPLITUDE is out of range", msg, n);
	nz->on = 1;
	nz->seed = seed;
	nz->amplitude = amp;
	memcpy(nz->text, text, strlen(text) + 1);
	return 0;
}

int noise_from_env(struct noise *nz, char *msg, size_t n)
{
	const char *v = getenv(NOISE_ENV);

	memset(nz, 0, sizeof(*nz));
	if (!v || !*v)
		return 0;
	return noise_parse(nz, v, msg, n);
}

/* The numbers of a, each multiplied by f[i] in place; a copy of them, to free. */
static double *scale(json_t *a, const double *f)
{
	size_t n = json_array_size(a);
	double *x = xcalloc(n + 1, sizeof(*x));

	for (size_t i = 0; i < n; i++) {
		x[i] = json_number_value(json_array_get(a, i)) * f[i];
		json_array_set_new(a, i, json_real(x[i]));
	}
	return x;
}

static void perturb_entry(const struct noise *nz, const char *batch_id, const char *id, json_t *e)
{
	json_t *ev = json_object_get(e, "samples_ms"), *host = json_object_get(e, "host_ms");
	json_t *rounds = json_object_get(e, "rounds"),
	       *reps = json_object_get(e, "reps_per_sample");
	size_t n = json_array_size(ev), nh = json_array_size(host), most = n > nh ? n : nh;
	double *f = xcalloc(most + 1, sizeof(*f)), *x, *h;
	struct stats st, hs;

	for (size_t i = 0; i < most; i++)
		f[i] = noise_factor(nz, batch_id, id,
				    (uint64_t)json_integer_value(json_array_get(rounds, i)), i);
	x = scale(ev, f);
	h = scale(host, f);
	if (json_is_array(ev)) {
		stats_compute(x, n, &st);
		json_object_set_new(e, "stats", stats_json(&st));
		/* Σ sample × R, as the worker counts it (docs/result.md) */
		if (json_is_integer(reps))
			json_object_set_new(e, "timed_ms",
					    json_real(st.sum * (double)json_integer_value(reps)));
	}
	if (json_is_array(host)) {
		stats_compute(h, nh, &hs);
		json_object_set_new(e, "host_stats", stats_json(&hs));
	}
	free(h);
	free(x);
	free(f);
}

void noise_apply(const struct noise *nz, const char *batch_id, json_t *tdoc)
{
	json_t *progs = json_object_get(tdoc, "programs"), *e;
	const char *id;

	if (!nz->on)
		return;
	json_object_foreach (progs, id, e)
		if (json_is_object(e))
			perturb_entry(nz, batch_id, id, e);
}

json_t *noise_warning(const struct noise *nz)
{
	char line[160];

	snprintf(line, sizeof(line), "timings perturbed by %s=%s (test mode)", NOISE_ENV, nz->text);
	return json_string(line);
}

json_t *noise_json(const struct noise *nz)
{
	return json_pack("{s:I, s:f}", "seed", (json_int_t)nz->seed, "amplitude", nz->amplitude);
}
