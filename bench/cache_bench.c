/*
 * cache_bench.c - the result cache's cost at fleet scale (bench/fleet.sh).
 *
 *   cache_bench CACHE_DB N RESULT.json [BATCH.json]
 *
 * Stores N entries in CACHE_DB (created), each keyed as kctl keys a variant
 * (cache-use.h: the device fingerprint, evalpod's version, the batch's
 * problem part from BATCH.json when given, a program whose source differs
 * per entry) and holding RESULT.json as its result, then looks every key up
 * once in a fresh connection, in a shuffled order.  Prints one line of
 * JSON: {entries, put_s, lookup_mean_ms, lookup_p50_ms, lookup_p99_ms,
 * lookup_max_ms, hits, bytes}.  Not a test: it prints figures.
 */
#include "cache.h"
#include "fileio.h"
#include "xalloc.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static json_t *inputs_for(const json_t *problem, long i)
{
	char src[256];

	snprintf(src, sizeof(src),
		 "// EVOLVE-BLOCK-START main\n__kernel void k(__global float *y) { y[%ld] = "
		 "%ld; }\n// EVOLVE-BLOCK-END\n",
		 i % 97, i);
	return json_pack("{s:s, s:[{s:s, s:s, s:s, s:s, s:s, s:s}], s:s, s:O, s:{s:s, s:s}}",
			 "format", CACHE_KEY_FORMAT, "device", "platform",
			 "Portable Computing Language", "platform_version", "OpenCL 3.0 PoCL 3.1",
			 "name", "cpu", "vendor", "AuthenticAMD", "driver", "3.1+debian", "version",
			 "OpenCL 3.0", "evalpod", "evalpod 0.1.0", "batch", problem, "program",
			 "source", src, "build_options", "-DLS=64");
}

int main(int argc, char **argv)
{
	struct cache *c = NULL;
	json_t *result, *problem, *origin, *e = NULL;
	char msg[1024], key[65];
	long n;
	double t0, put_s, *ms, sum = 0;
	long *order, hits = 0;
	json_t *st = NULL;

	if (argc < 4 || (n = strtol(argv[2], NULL, 10)) < 1) {
		fprintf(stderr, "usage: cache_bench CACHE_DB N RESULT.json [BATCH.json]\n");
		return 2;
	}
	result = json_load_file(argv[3], 0, NULL);
	problem = argc > 4 ? json_load_file(argv[4], 0, NULL) : json_object();
	if (!json_is_object(result) || !json_is_object(problem)) {
		fprintf(stderr, "cache_bench: cannot read '%s' or the batch\n", argv[3]);
		return 1;
	}
	json_object_del(problem, "variants");
	json_object_del(problem, "baseline");
	if (cache_open(argv[1], &c, msg, sizeof(msg))) {
		fprintf(stderr, "cache_bench: %s\n", msg);
		return 1;
	}
	origin = json_pack("{s:s, s:s}", "session", "bench", "batch", "bench-r001");
	t0 = now_ms();
	for (long i = 0; i < n; i++) {
		json_t *in = inputs_for(problem, i);

		cache_key(in, key);
		if (cache_put(c, key, in, result, origin, msg, sizeof(msg))) {
			fprintf(stderr, "cache_bench: %s\n", msg);
			return 1;
		}
		json_decref(in);
	}
	put_s = (now_ms() - t0) / 1e3;
	cache_close(c);
	if (cache_open(argv[1], &c, msg, sizeof(msg))) {
		fprintf(stderr, "cache_bench: %s\n", msg);
		return 1;
	}
	ms = xcalloc((size_t)n, sizeof(*ms));
	order = xcalloc((size_t)n, sizeof(*order));
	for (long i = 0; i < n; i++)
		order[i] = i;
	srand(1);
	for (long i = n - 1; i > 0; i--) {
		long j = rand() % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (long i = 0; i < n; i++) {
		/* what kctl does per variant: its inputs, its key, the lookup */
		double a = now_ms();
		json_t *in = inputs_for(problem, order[i]);

		cache_key(in, key);
		hits += cache_get(c, key, 30, &e, msg, sizeof(msg)) == 1;
		json_decref(e);
		e = NULL;
		json_decref(in);
		ms[i] = now_ms() - a;
		sum += ms[i];
	}
	qsort(ms, (size_t)n, sizeof(*ms), cmp_double);
	cache_stats(c, &st, msg, sizeof(msg));
	printf("{\"entries\": %ld, \"put_s\": %.3f, \"lookup_mean_ms\": %.4f, \"lookup_p50_ms\": "
	       "%.4f, \"lookup_p99_ms\": %.4f, \"lookup_max_ms\": %.4f, \"hits\": %ld, "
	       "\"bytes\": %lld}\n",
	       n, put_s, sum / (double)n, ms[n / 2], ms[(long)((double)n * 0.99)], ms[n - 1], hits,
	       (long long)json_integer_value(json_object_get(st, "bytes")));
	json_decref(st);
	free(ms);
	free(order);
	json_decref(origin);
	json_decref(problem);
	json_decref(result);
	cache_close(c);
	return hits == n ? 0 : 1;
}
