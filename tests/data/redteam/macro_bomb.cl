// Tries: a compile-time bomb.  Each macro level doubles the tokens of the one
// below: B26 expands to 2^26 copies of "+ 1" (2^27 tokens), which the
// preprocessor must expand and the compiler parse, fold and keep in memory.
// Must: end as timeout / compile (at compile_timeout_s) or crash /
// memory_limit (at limits.memory_mb), blamed on the candidate; never hang the
// batch, never infra_error, never ok.
#define B0 + 1
#define B1 B0 B0
#define B2 B1 B1
#define B3 B2 B2
#define B4 B3 B3
#define B5 B4 B4
#define B6 B5 B5
#define B7 B6 B6
#define B8 B7 B7
#define B9 B8 B8
#define B10 B9 B9
#define B11 B10 B10
#define B12 B11 B11
#define B13 B12 B12
#define B14 B13 B13
#define B15 B14 B14
#define B16 B15 B15
#define B17 B16 B16
#define B18 B17 B17
#define B19 B18 B18
#define B20 B19 B19
#define B21 B20 B20
#define B22 B21 B21
#define B23 B22 B22
#define B24 B23 B23
#define B25 B24 B24
#define B26 B25 B25

__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);
	long k = 0 B26;

	if (i < n)
		y[i] = 2.0f * x[i] + 1.0f + (float)(k - (1L << 26));
}
