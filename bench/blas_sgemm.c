/*
 * blas_sgemm.c - times OpenBLAS cblas_sgemm at M = N = K, the yardstick for
 * the matmul example (examples/matmul.yaml).
 *
 *   cc -std=c11 -O2 -D_GNU_SOURCE bench/blas_sgemm.c -o blas_sgemm -lopenblas
 *   ./blas_sgemm [N [RUNS]]        (N defaults to 1024, RUNS to 15, at least 10)
 *
 * C = A * B, row-major fp32, inputs uniform in [-1, 1) from a fixed LCG.
 * Two warm-up calls, then RUNS timed calls (CLOCK_MONOTONIC); prints one JSON
 * line with the median, the GFLOP/s it gives (2 N^3 / median), the threads
 * OpenBLAS uses and the core kernel set it runs with (OPENBLAS_CORETYPE, when
 * set in the environment, overrides the detected one).  Then RUNS more calls,
 * each after 64 MiB have been written and read back (cold_*): A, B and C
 * start in memory, not in the caches, as every sample of evalpod starts
 * after its 64 MiB cache flush; the two are the same comparison only then.
 */
#include <cblas.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

static long parse_arg(const char *s, const char *what, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "blas_sgemm: %s must be an integer in %ld..%ld, got '%s'\n", what,
			lo, hi, s);
		exit(2);
	}
	return v;
}

#define FLUSH_BYTES (64u << 20)

volatile unsigned flush_sink; /* keeps the read-back from being optimised away */

/* Writes and reads back FLUSH_BYTES, so that the caches hold that and not A, B, C. */
static void flush_caches(unsigned char *buf)
{
	unsigned sum = 0;

	for (size_t i = 0; i < FLUSH_BYTES; i += 64)
		buf[i] = (unsigned char)(buf[i] + 1);
	for (size_t i = 0; i < FLUSH_BYTES; i += 64)
		sum += buf[i];
	flush_sink = sum;
}

static double median_of(double *t, long runs)
{
	qsort(t, (size_t)runs, sizeof(*t), cmp_double);
	return runs % 2 ? t[runs / 2] : (t[runs / 2 - 1] + t[runs / 2]) / 2;
}

static void fill(float *x, size_t n, uint32_t *state)
{
	for (size_t i = 0; i < n; i++) {
		*state = *state * 1664525u + 1013904223u;
		x[i] = (float)(*state >> 8) / 8388608.0f - 1.0f;
	}
}

int main(int argc, char **argv)
{
	long n = 1024, runs = 15;
	uint32_t state = 12345;
	float *a, *b, *c;
	double *t, *tc, median, cold, cold_min;
	unsigned char *junk;
	size_t nn;

	if (argc > 3) {
		fprintf(stderr, "usage: blas_sgemm [N [RUNS]]\n");
		return 2;
	}
	if (argc > 1)
		n = parse_arg(argv[1], "N", 1, 16384);
	if (argc > 2)
		runs = parse_arg(argv[2], "RUNS", 10, 100000);
	nn = (size_t)n * (size_t)n;
	a = malloc(nn * sizeof(*a));
	b = malloc(nn * sizeof(*b));
	c = malloc(nn * sizeof(*c));
	t = malloc((size_t)runs * sizeof(*t));
	tc = malloc((size_t)runs * sizeof(*tc));
	junk = calloc(FLUSH_BYTES, 1);
	if (!a || !b || !c || !t || !tc || !junk) {
		fprintf(stderr, "blas_sgemm: out of memory\n");
		return 1;
	}
	fill(a, nn, &state);
	fill(b, nn, &state);
	for (int w = 0; w < 2; w++)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f,
			    a, (int)n, b, (int)n, 0.0f, c, (int)n);
	for (long r = 0; r < runs; r++) {
		double t0 = now_ms();

		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f,
			    a, (int)n, b, (int)n, 0.0f, c, (int)n);
		t[r] = now_ms() - t0;
	}
	for (long r = 0; r < runs; r++) {
		double t0;

		flush_caches(junk);
		t0 = now_ms();
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f,
			    a, (int)n, b, (int)n, 0.0f, c, (int)n);
		tc[r] = now_ms() - t0;
	}
	median = median_of(t, runs);
	cold = median_of(tc, runs);
	cold_min = tc[0];
	printf("{\"n\":%ld,\"runs\":%ld,\"gflops\":%.2f,\"median_ms\":%.3f,\"min_ms\":%.3f,"
	       "\"cold_gflops\":%.2f,\"cold_median_ms\":%.3f,\"cold_min_ms\":%.3f,"
	       "\"threads\":%d,\"corename\":\"%s\"}\n",
	       n, runs, 2.0 * (double)n * (double)n * (double)n / (median * 1e6), median, t[0],
	       2.0 * (double)n * (double)n * (double)n / (cold * 1e6), cold, cold_min,
	       openblas_get_num_threads(), openblas_get_corename());
	free(tc);
	free(junk);
	free(a);
	free(b);
	free(c);
	free(t);
	return 0;
}
