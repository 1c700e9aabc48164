// The reference for gmm_fp8_blockwise: one work-item per element of out,
// decode then multiply, a plain dot product over K in float.
//
// out[m, n] = sum_k decode(lhs[m, k]) * lhs_scale[m/128, k/128]
//                 * decode(rhs[g, k, n]) * rhs_scale[g, k/128, n/128]
// where g is the group that owns row m (see group bounds below).
//
// Storage: the FP8 arrays are byte arrays, lhs[M*K] and rhs[G*K*N] in
// row-major order, packed little-endian four bytes to a uint (byte i is
// bits 8*(i%4)..8*(i%4)+7 of uint i/4). Scales are float, one per
// 128 x 128 block, blocks counted with ceil_div.
//
// The section between the E4M3-SHARED markers is identical, byte for byte,
// in the template; tests/unit/test-example-gmm_fp8.c checks that, and runs
// e4m3_decode from both programs on all 256 codes.

// E4M3-SHARED-BEGIN
// FP8 E4M3 (OCP E4M3FN), bits S.EEEE.MMM, exponent bias 7, no infinities:
//   E > 0:  (-1)^S * 2^(E-7) * (1 + M/8)
//   E == 0: (-1)^S * 2^-6 * (M/8)            (zero and subnormals)
//   S.1111.111 (0x7F, 0xFF) is NaN; the largest finite value is 448 (0x7E).
float e4m3_decode(uint code)
{
	uint mag = code & 0x7Fu;
	// E > 0: the float whose exponent field is E + 120 and whose mantissa is
	// M << 20 is exactly 2^(E-7) * (1 + M/8).
	float normal = as_float((mag << 20) + (120u << 23));
	// E == 0: M * 2^-9, a small integer times a power of two, exact.
	float subnormal = (float)mag * 0x1p-9f;
	float v = mag < 8u ? subnormal : normal;

	v = mag == 0x7Fu ? NAN : v;
	return as_float(as_uint(v) | ((code & 0x80u) << 24));
}

// The inputs model a quantizer's output, which never emits NaN, but
// evalpod's random uint inputs make every byte uniform over 0..255, so the
// two NaN codes turn up 2 times in 256: a NaN code reads as +0 (code 0x00).
uint e4m3_sanitize(uint code)
{
	return (code & 0x7Fu) == 0x7Fu ? 0u : code;
}

// Byte i of a byte array stored little-endian, four bytes to a uint.
uint fp8_byte(__global const uint *p, size_t i)
{
	return (p[i >> 2] >> (8u * (uint)(i & 3))) & 0xFFu;
}

// The value of FP8 element i of an input array (before its scale).
float fp8_load(__global const uint *p, size_t i)
{
	return e4m3_decode(e4m3_sanitize(fp8_byte(p, i)));
}

// Group bounds. Groups own rows in order: group g starts where group g-1
// ends (group 0 at row 0) and owns group_sizes[g] rows (a negative size
// counts as 0), clamped at M; the last group also owns every row left, so
// the G groups tile rows 0..M-1 exactly, whatever the sizes sum to.
// Returns the first row of group g, for 0 <= g <= G (group_start(G) is M).
int group_start(__global const int *group_sizes, int G, int M, int g)
{
	long s = 0;

	if (g >= G)
		return M;
	for (int h = 0; h < g; h++)
		s += max(group_sizes[h], 0);
	return (int)min(s, (long)M);
}
// E4M3-SHARED-END

__kernel void gmm_ref(__global const uint *lhs, __global const float *lhs_scale,
		      __global const uint *rhs, __global const float *rhs_scale,
		      __global const int *group_sizes, __global float *out, int M, int K, int N,
		      int G)
{
	int n = get_global_id(0), m = get_global_id(1);
	int KB = (K + 127) / 128, NB = (N + 127) / 128;
	int g = 0;
	float sum = 0.0f;

	if (n >= N || m >= M)
		return;
	// The group of row m: the last g whose start is at or before m.
	while (g + 1 < G && group_start(group_sizes, G, M, g + 1) <= m)
		g++;
	for (int k = 0; k < K; k++) {
		float a = fp8_load(lhs, (size_t)m * K + k) * lhs_scale[(m / 128) * KB + k / 128];
		float b = fp8_load(rhs, ((size_t)g * K + k) * N + n) *
			  rhs_scale[((size_t)g * KB + k / 128) * NB + n / 128];

		sum += a * b;
	}
	out[(size_t)m * N + n] = sum;
}
