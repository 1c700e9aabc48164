/*
 * fma_tile.c - what one core of an x86 host with AVX2 and FMA does with a
 * matmul micro-kernel when memory is out of the way (prints figures; not a
 * test).
 *
 *   fma_tile [REPEATS]
 *
 * Three loops, each timed REPEATS times (default 3), best of 5 runs each:
 *   fma     12 independent chains of 8-wide FMAs on registers only: the
 *           core's FMA peak for one thread;
 *   6x16    the register tile of the matmul example's AVX2 start point
 *           (TM=6, VN=16): per step of K, two vectors of B and six
 *           broadcasts of A feed 12 FMAs, with A and B (6 KiB and 16 KiB)
 *           in L1;
 *   4x24    four broadcasts and three vectors of B feed 12 FMAs (A and B
 *           4 KiB and 24 KiB).
 * Each line prints GFLOP/s and the fraction of the fma loop.  When a real
 * matmul (OpenBLAS's, or the example's on PoCL) runs well below the 6x16
 * figure, the loop is not what holds it back: the caches and memory are.
 * Built only where the compiler targets x86 (bench/CMakeLists.txt).
 */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define STEPS  256 /* K steps per pass: A 6*256 floats, B 256*24 floats */
#define PASSES 20000

static float tile_a[6 * STEPS] __attribute__((aligned(64)));
static float tile_b[24 * STEPS] __attribute__((aligned(64)));
static volatile float sink;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * The loops spell their 12 accumulators out (C0..C11): written as an array
 * with inner loops, -O2 keeps them in memory and measures the stores.
 */
#define ACC_DECL __m256 C0, C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, C11
#define ACC_ZERO C0 = C1 = C2 = C3 = C4 = C5 = C6 = C7 = C8 = C9 = C10 = C11 = _mm256_setzero_ps()
#define ACC_KEEP                                                                                   \
	keep(_mm256_add_ps(                                                                        \
		_mm256_add_ps(_mm256_add_ps(_mm256_add_ps(C0, C1), _mm256_add_ps(C2, C3)),         \
			      _mm256_add_ps(_mm256_add_ps(C4, C5), _mm256_add_ps(C6, C7))),        \
		_mm256_add_ps(_mm256_add_ps(C8, C9), _mm256_add_ps(C10, C11))))
#define FMA(c, a, b) c = _mm256_fmadd_ps((a), (b), c)

/* Stores the sum of the accumulators in sink, so that none of the work is dead. */
__attribute__((target("avx2,fma"))) static void keep(__m256 s)
{
	float out[8];

	_mm256_storeu_ps(out, s);
	sink = out[0] + out[7];
}

__attribute__((target("avx2,fma"), noinline)) static void loop_fma(int passes)
{
	__m256 x = _mm256_set1_ps(1.0001f), y = _mm256_set1_ps(0.9999f);
	ACC_DECL;

	/* distinct starts, or the compiler merges chains that compute alike */
	C0 = _mm256_set1_ps(0), C1 = _mm256_set1_ps(1), C2 = _mm256_set1_ps(2);
	C3 = _mm256_set1_ps(3), C4 = _mm256_set1_ps(4), C5 = _mm256_set1_ps(5);
	C6 = _mm256_set1_ps(6), C7 = _mm256_set1_ps(7), C8 = _mm256_set1_ps(8);
	C9 = _mm256_set1_ps(9), C10 = _mm256_set1_ps(10), C11 = _mm256_set1_ps(11);
	for (int p = 0; p < passes; p++) {
		for (int k = 0; k < STEPS; k++) {
			/* opaque to the compiler, so that no chain folds into another */
			__asm__ volatile("" : "+x"(x), "+x"(y));
			FMA(C0, x, x), FMA(C1, x, y), FMA(C2, y, x), FMA(C3, y, y);
			FMA(C4, x, x), FMA(C5, x, y), FMA(C6, y, x), FMA(C7, y, y);
			FMA(C8, x, x), FMA(C9, x, y), FMA(C10, y, x), FMA(C11, y, y);
		}
	}
	ACC_KEEP;
}

__attribute__((target("avx2,fma"), noinline)) static void loop_6x16(int passes)
{
	ACC_DECL;

	ACC_ZERO;
	for (int p = 0; p < passes; p++) {
		const float *a = tile_a, *b = tile_b;

		for (int k = 0; k < STEPS; k++, a += 6, b += 16) {
			__m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8), x;

			x = _mm256_broadcast_ss(a), FMA(C0, x, b0), FMA(C1, x, b1);
			x = _mm256_broadcast_ss(a + 1), FMA(C2, x, b0), FMA(C3, x, b1);
			x = _mm256_broadcast_ss(a + 2), FMA(C4, x, b0), FMA(C5, x, b1);
			x = _mm256_broadcast_ss(a + 3), FMA(C6, x, b0), FMA(C7, x, b1);
			x = _mm256_broadcast_ss(a + 4), FMA(C8, x, b0), FMA(C9, x, b1);
			x = _mm256_broadcast_ss(a + 5), FMA(C10, x, b0), FMA(C11, x, b1);
		}
	}
	ACC_KEEP;
}

__attribute__((target("avx2,fma"), noinline)) static void loop_4x24(int passes)
{
	ACC_DECL;

	ACC_ZERO;
	for (int p = 0; p < passes; p++) {
		const float *a = tile_a, *b = tile_b;

		for (int k = 0; k < STEPS; k++, a += 4, b += 24) {
			__m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
			__m256 b2 = _mm256_load_ps(b + 16), x;

			x = _mm256_broadcast_ss(a), FMA(C0, x, b0), FMA(C1, x, b1), FMA(C2, x, b2);
			x = _mm256_broadcast_ss(a + 1), FMA(C3, x, b0), FMA(C4, x, b1),
			FMA(C5, x, b2);
			x = _mm256_broadcast_ss(a + 2), FMA(C6, x, b0), FMA(C7, x, b1),
			FMA(C8, x, b2);
			x = _mm256_broadcast_ss(a + 3), FMA(C9, x, b0), FMA(C10, x, b1),
			FMA(C11, x, b2);
		}
	}
	ACC_KEEP;
}

/* GFLOP/s of the best of 5 runs of fn: 12 FMAs of 8 lanes per step. */
static double best_gflops(void (*fn)(int))
{
	double best = 1e30;

	for (int r = 0; r < 5; r++) {
		double t = now_s();

		fn(PASSES);
		t = now_s() - t;
		if (t < best)
			best = t;
	}
	return 12.0 * 8 * 2 * STEPS * (double)PASSES / best / 1e9;
}

int main(int argc, char **argv)
{
	int repeats = argc > 1 ? atoi(argv[1]) : 3;

	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
		fprintf(stderr, "fma_tile: this CPU has no AVX2 and FMA\n");
		return 77;
	}
	for (int i = 0; i < 6 * STEPS; i++)
		tile_a[i] = (float)(i % 7) * 0.01f;
	for (int i = 0; i < 24 * STEPS; i++)
		tile_b[i] = (float)(i % 5) * 0.01f;
	for (int r = 0; r < (repeats > 0 ? repeats : 1); r++) {
		double peak = best_gflops(loop_fma);
		double t616 = best_gflops(loop_6x16), t424 = best_gflops(loop_4x24);

		printf("fma %.1f GFLOP/s   6x16 %.1f (%.2f)   4x24 %.1f (%.2f)\n", peak, t616,
		       t616 / peak, t424, t424 / peak);
	}
	return 0;
}
