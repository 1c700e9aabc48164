// gmm_fp8_blockwise: grouped matmul with FP8 E4M3 inputs and float scales
// per 128 x 128 block (the semantics, storage and group bounds are those of
// reference.cl, whose E4M3-SHARED section is repeated here byte for byte).
//
// The kernel tiles out into BM x BN blocks (BM = WY*TM rows, BN = WX*VN
// columns), one work-group each. For every group whose rows meet the block's
// rows, it walks K in steps of TK: the work-group decodes the lhs and rhs
// tiles once into local memory, scales applied, and each work-item then
// accumulates TM rows by VN columns in float-vector registers. Rows of the
// block that belong to another group are computed and not stored, so a block
// that straddles a group boundary is computed once per group it meets.
//
// The tunables are #ifndef-guarded (the spec renders them as -D options) and
// the launch geometry in gmm_fp8_blockwise.yaml reads the same names.

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

// EVOLVE-BLOCK-START
#ifndef TM
#define TM 4            // rows of out per work-item
#endif
#ifndef VN
#define VN 8            // columns of out per work-item (a float vector: 1, 2, 4, 8, 16)
#endif
#ifndef WX
#define WX 8            // work-group size along N
#endif
#ifndef WY
#define WY 4            // work-group size along M
#endif
#ifndef TK
#define TK 16           // K step of the local-memory tiles
#endif
#ifndef KU
#define KU 1            // unroll factor of the k loop over a tile (1: not unrolled)
#endif
#define BM (WY * TM)    // rows of out per work-group
#define BN (WX * VN)    // columns of out per work-group
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define STR_(x) #x
#define PRAGMA(x) _Pragma(STR_(x))
#if VN == 1
#define floatV float
#define LOADV(p) (*(p))
#define STOREV(x, p) (*(p) = (x))
#else
#define floatV CAT(float, VN)
#define LOADV(p) CAT(vload, VN)(0, p)
#define STOREV(x, p) CAT(vstore, VN)(x, 0, p)
#endif

__kernel __attribute__((reqd_work_group_size(WX, WY, 1)))
void gmm(__global const uint *lhs, __global const float *lhs_scale, __global const uint *rhs,
	 __global const float *rhs_scale, __global const int *group_sizes, __global float *out,
	 int M, int K, int N, int G)
{
	__local float As[BM][TK];
	__local float Bs[TK][BN];
	const int tx = get_local_id(0), ty = get_local_id(1);
	const int lid = ty * WX + tx;
	const int r0 = get_group_id(1) * BM, c0 = get_group_id(0) * BN;
	const int KB = (K + 127) / 128, NB = (N + 127) / 128;
	int g = 0, start = 0, end = G == 1 ? M : min(max(group_sizes[0], 0), M);

	// The first group that owns a row of this block: the first that ends
	// past r0 (it is not empty, since it starts at or before r0).
	while (g < G - 1 && end <= r0) {
		g++;
		start = end;
		end = g == G - 1 ? M : min(start + max(group_sizes[g], 0), M);
	}
	// Every work-item walks the same groups, so the barriers below are met
	// by the whole work-group. (PoCL 3.1 miscompiled an earlier form that
	// skipped groups with `continue` ahead of the barriers, at WX == 1: keep
	// the skipping outside the loop that holds barriers.)
	for (;;) {
		int lo = max(start, r0), hi = min(end, r0 + BM);
		floatV acc[TM];

		for (int i = 0; i < TM; i++)
			acc[i] = (floatV)(0.0f);
		for (int k0 = 0; k0 < K; k0 += TK) {
			barrier(CLK_LOCAL_MEM_FENCE);
			for (int e = lid; e < BM * TK; e += WX * WY) {
				int i = e / TK, kk = e % TK, m = r0 + i, k = k0 + kk;

				As[i][kk] = m < M && k < K ?
					fp8_load(lhs, (size_t)m * K + k) *
						lhs_scale[(m / 128) * KB + k / 128] :
					0.0f;
			}
			for (int e = lid; e < TK * BN; e += WX * WY) {
				int kk = e / BN, j = e % BN, n = c0 + j, k = k0 + kk;

				Bs[kk][j] = n < N && k < K ?
					fp8_load(rhs, ((size_t)g * K + k) * N + n) *
						rhs_scale[((size_t)g * KB + k / 128) * NB + n / 128] :
					0.0f;
			}
			barrier(CLK_LOCAL_MEM_FENCE);
			PRAGMA(unroll KU)
			for (int kk = 0; kk < TK; kk++) {
				floatV b = LOADV(&Bs[kk][tx * VN]);

				for (int i = 0; i < TM; i++)
					acc[i] = fma((floatV)(As[ty * TM + i][kk]), b, acc[i]);
			}
		}
		for (int i = 0; i < TM; i++) {
			int m = r0 + ty * TM + i, n = c0 + tx * VN;
			float v[VN];

			if (m < lo || m >= hi || n >= N)
				continue;
			if (n + VN <= N) {
				STOREV(acc[i], out + (size_t)m * N + n);
				continue;
			}
			STOREV(acc[i], v);
			for (int j = 0; n + j < N; j++)
				out[(size_t)m * N + n + j] = v[j];
		}
		if (end >= min(r0 + BM, M) || g == G - 1)
			break;
		// The next group that is not empty.
		do {
			g++;
			start = end;
			end = g == G - 1 ? M : min(start + max(group_sizes[g], 0), M);
		} while (end == start && g < G - 1);
	}
}
// EVOLVE-BLOCK-END
