// gmm_fp8_blockwise: grouped matmul with FP8 E4M3 inputs and float scales
// per 128 x 128 block (the semantics, storage and group bounds are those of
// reference.cl, whose E4M3-SHARED section is repeated here byte for byte).
//
// Two steps (the launch plan in gmm_fp8_blockwise.yaml):
//  1. gmm_decode, once for lhs and once for rhs, decodes every FP8 element
//     exactly once, 16 at a time with vector arithmetic, applies its block
//     scale and writes float scratch arrays (lhs_f: M x K, rhs_f: G x K x N).
//     Decoding inside the matmul's tiles instead would decode each rhs
//     element once per row block that reads it (tens of times), and on a
//     CPU the decode, not the traffic, is what costs.
//  2. gmm multiplies the float arrays, row by row with its group's rhs,
//     register-blocked as examples/matmul/matmul.cl is: each work-item holds
//     TM rows by TN float vectors of VN columns of out.
// Tunables choose how lhs reaches step 2: decoded rows (the default),
// decoded K-major panels of TM rows (APACK=1: one contiguous stream per
// work-item), or not through global memory at all (ALOCAL=1: gmm_decode
// does nothing and each work-group of gmm decodes its own TM rows into local
// memory, 128 columns at a time, sharing them among its WX work-items; the
// decoded lhs is 4 bytes an element, so this saves writing and re-reading
// four times the FP8 data), or by each work-item of gmm for itself (FUSE=1:
// a work-item owns TM rows and every column, decodes its rows once into
// private memory, which stays in L1, and walks every column panel with
// them; no barriers, and the decoded lhs never reaches global memory).
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
#define TM 8            // rows of out per work-item
#endif
#ifndef VN
#define VN 16           // float vector width along N: 1, 2, 4, 8 or 16
#endif
#ifndef TN
#define TN 1            // vectors per work-item along N: TN*VN columns
#endif
#ifndef WX
#define WX 8            // work-group size along N
#endif
#ifndef WY
#define WY 1            // work-group size along M
#endif
#ifndef KU
#define KU 1            // K steps per unrolled loop iteration
#endif
#ifndef APACK
#define APACK 0         // 1: lhs decoded into K-major panels of TM rows
#endif
#ifndef ALOCAL
#define ALOCAL 0        // 1: gmm decodes lhs itself, per work-group, into local memory
#endif
#ifndef FUSE
#define FUSE 0          // 1: each work-item of gmm decodes its own rows of lhs, for every column
#endif
#ifndef KBF
#define KBF 512         // FUSE=1: columns of lhs a work-item holds decoded at a time
#endif
#if FUSE && (ALOCAL || APACK || KBF % 128 != 0)
#error "FUSE=1 needs ALOCAL=0, APACK=0 and KBF a multiple of 128"
#endif
#if ALOCAL && (APACK || WY != 1)
#error "ALOCAL=1 needs APACK=0 and WY=1 (one row block per work-group)"
#endif
#define CN (TN * VN)    // columns of out per work-item
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#if VN == 1
#define floatV float
#define LOADV(p) (*(p))
#define STOREV(x, p) (*(p) = (x))
#else
#define floatV CAT(float, VN)
#define LOADV(p) CAT(vload, VN)(0, (p))
#define STOREV(x, p) CAT(vstore, VN)((x), 0, (p))
#endif

// e4m3_decode(e4m3_sanitize(code)) on 16 codes at once, bit for bit: the
// same formulas as the scalar pair above, as vector selects, so that the
// decode costs a few vector instructions per 16 elements.
float16 e4m3_decode16(uint16 code)
{
	uint16 mag = code & 0x7Fu;
	float16 normal = as_float16((mag << 20) + (120u << 23));
	float16 subnormal = convert_float16(mag) * 0x1p-9f;
	uint16 bits = as_uint16(select(normal, subnormal, mag < 8u)) | ((code & 0x80u) << 24);

	return as_float16(select(bits, (uint16)(0u), mag == 0x7Fu)); // NaN code: +0
}

// Columns c .. c+15 of row r of matrix z of an FP8 array of NG stacked R x C
// row-major matrices (as gmm_decode_at below), when they are whole and
// start on a uint: sets ok to 1 and v to their decoded values, scaled by
// their 128 x 128 block's scale, with one vload4 (a run of 16 that starts on
// a multiple of 16 never crosses a scale block); else sets ok to 0.  A
// macro, so that the decode kernels have it in place: as a call,
// gmm_decode_at (its edge path, with gathers, is too big to inline) cost
// them a third of their time.
#define DECODE16_WHOLE(ok, v, src, scale, R, C, r, c, z)                                \
	do {                                                                           \
		const size_t i_ = ((size_t)(z) * (R) + (r)) * (C) + (c);               \
		ok = (c) + 16 <= (C) && (i_ & 3) == 0;                                 \
		if (ok)                                                                \
			v = e4m3_decode16(convert_uint16(                              \
				    as_uchar16(vload4(0, (src) + (i_ >> 2))))) *        \
			    (scale)[((size_t)(z) * (((R) + 127) / 128) + (r) / 128) *  \
					    (((C) + 127) / 128) +                      \
				    (c) / 128];                                        \
	} while (0)

// Columns c .. c+15 of row r of matrix z of an FP8 array of NG stacked R x C
// row-major matrices, decoded and scaled by its 128 x 128 block scales
// (scale is [NG][ceil(R/128)][ceil(C/128)]), zero past C.  Each value is
// exactly the reference's fp8_load(src, i) * scale.
float16 gmm_decode_at(__global const uint *src, __global const float *scale, int R, int C,
		      int r, int c, int z)
{
	int CB = (C + 127) / 128, RB = (R + 127) / 128;
	size_t i = ((size_t)z * R + r) * C + c;
	__global const float *srow = scale + ((size_t)z * RB + r / 128) * CB;
	float16 v;
	float t[16];
	int ok;

	DECODE16_WHOLE(ok, v, src, scale, R, C, r, c, z);
	if (ok)
		return v;
	for (int e = 0; e < 16; e++)
		t[e] = c + e < C ? fp8_load(src, i + e) * srow[(c + e) / 128] : 0.0f;
	return vload16(0, t);
}

#if APACK && 48 % TM != 0
#error "APACK=1 needs TM dividing 48 (lhs_f holds round_up(M, 48) rows)"
#endif

// Kernel 1 (lhs): decode an FP8 array of NG stacked R x C row-major
// matrices into float dst.  Each element is decoded exactly once here,
// instead of once per tile that reads it, so the products below are the
// reference's own.
// APACK=0: dst has the same layout; global [ceil_div(C, 16), R, NG], 16
// consecutive columns per work-item.
// APACK=1 (NG = 1): dst is K-major panels of TM rows, zero past R:
// dst[(p*C + c)*TM + i] = src[p*TM + i][c], so that gmm reads the rows of
// its block as one contiguous stream; global [ceil_div(C, 16),
// ceil_div(R, TM), 1], the TM rows of 16 columns per work-item, which are
// TM*16 consecutive floats of dst.
__kernel void gmm_decode(__global const uint *src, __global const float *scale,
			 __global float *dst, int R, int C)
{
	int c = get_global_id(0) * 16, r = get_global_id(1), z = get_global_id(2);

#if ALOCAL || FUSE
	return; // gmm decodes lhs itself
#endif
#if APACK
	float pt[16 * TM], et[16];
	__global float *d = dst + ((size_t)r * C + c) * TM;

	if (c >= C || r * TM >= R)
		return;
	_Pragma("unroll") for (int i = 0; i < TM; i++) {
		float16 v = r * TM + i < R ? gmm_decode_at(src, scale, R, C, r * TM + i, c, 0)
					   : (float16)(0.0f);

		vstore16(v, 0, et);
		_Pragma("unroll") for (int e = 0; e < 16; e++)
			pt[e * TM + i] = et[e];
	}
	if (c + 16 <= C) {
		_Pragma("unroll") for (int e = 0; e < TM; e++)
			vstore16(vload16(e, pt), e, d);
	} else {
		for (int e = 0; e < (C - c) * TM; e++)
			d[e] = pt[e];
	}
	(void)z;
#else
	if (c >= C || r >= R)
		return;
	size_t i = ((size_t)z * R + r) * C + c;
	float16 v;
	float t[16];
	int ok;

	DECODE16_WHOLE(ok, v, src, scale, R, C, r, c, z);
	if (!ok)
		v = gmm_decode_at(src, scale, R, C, r, c, z);
	if (c + 16 <= C) {
		vstore16(v, 0, dst + i);
	} else {
		vstore16(v, 0, t);
		for (int e = 0; c + e < C; e++)
			dst[i + e] = t[e];
	}
#endif
}

#if 64 % CN != 0
#error "TN*VN must divide 64 (rhs_f holds round_up(N, 64) columns per row)"
#endif

// Kernel 1b (rhs): the same decode, written as K-major panels of CN columns
// per group, zero past N: dst[((g*NP + p)*R + r)*CN + j] = rhs[g][r][p*CN + j]
// with NP = ceil(C/CN) panels.  gmm then streams one contiguous panel per
// work-item instead of rows N floats apart.
// Global [ceil_div(round_up(C, CN), 16), R, NG].
__kernel void gmm_decode_panels(__global const uint *src, __global const float *scale,
				__global float *dst, int R, int C)
{
	int c = get_global_id(0) * 16, r = get_global_id(1), z = get_global_id(2);
	const int np = (C + CN - 1) / CN;

	if (c >= np * CN || r >= R)
		return;
	__global float *d = dst + (size_t)z * np * CN * R;
	float16 v;
	int ok;

	DECODE16_WHOLE(ok, v, src, scale, R, C, r, c, z);
	if (!ok)
		v = gmm_decode_at(src, scale, R, C, r, c, z);

#if CN >= 16
	vstore16(v, 0, d + ((size_t)(c / CN) * R + r) * CN + c % CN);
#else
	float t[16];

	vstore16(v, 0, t);
	for (int e = 0; e < 16 && c + e < np * CN; e += CN)
		for (int j = 0; j < CN; j++)
			d[((size_t)((c + e) / CN) * R + r) * CN + j] = t[e + j];
#endif
}

// Stores the first n elements of v at p (0 < n < VN).
inline void store_part(floatV v, __global float *p, int n)
{
#if VN == 1
	if (n > 0)
		p[0] = v;
#else
	float t[VN];

	STOREV(v, t);
	for (int e = 0; e < VN; e++)
		if (e < n)
			p[e] = t[e];
#endif
}

// One K step: acc[i][t] += A[row i][k] * B[k][this work-item's columns],
// B's from this work-item's panel bp (zero past N).
#define STEP(kk)                                                                       \
	do {                                                                           \
		const int k_ = (kk);                                                   \
		floatV b_[TN];                                                         \
		_Pragma("unroll") for (int t = 0; t < TN; t++)                         \
			b_[t] = LOADV(bp + (size_t)k_ * CN + t * VN);                  \
		_Pragma("unroll") for (int i = 0; i < TM; i++) {                       \
			const floatV a_ = (floatV)(AT(i, k_));                         \
			_Pragma("unroll") for (int t = 0; t < TN; t++)                 \
				acc[i][t] = fma(a_, b_[t], acc[i][t]);                 \
		}                                                                      \
	} while (0)

// Element k of row i of the work-item's block of A (the column's address
// once per step, the rows at constant offsets from it).
#if FUSE
#define AT(i, k) (la + (k))[(i) * KBF]
#elif ALOCAL
#define AT(i, k) (la + ((k) - k0))[(i) * KBL]
#elif APACK
#define AT(i, k) (ap + (size_t)(k) * TM)[i]
#else
#define AT(i, k) arow[i][k]
#endif

// K steps k0 .. k1-1, KU at a time.
#define RANGE_(k0, k1)                                                                 \
	do {                                                                           \
		int k = (k0);                                                          \
		const int ke_ = (k1);                                                  \
		for (; k + KU <= ke_; k += KU) {                                       \
			_Pragma("unroll") for (int u = 0; u < KU; u++)                 \
				STEP(k + u);                                           \
		}                                                                      \
		for (; k < ke_; k++)                                                   \
			STEP(k);                                                       \
	} while (0)

#if ALOCAL
// Every K step: per block of KBL columns, the work-group decodes its TM rows
// of lhs into la (16 columns per work-item at a time, scaled as
// gmm_decode does), then every work-item runs the block's steps from it.
// The barriers are uniform: every work-item of the group has the same rows.
#define KBL 128
#define RANGE()                                                                        \
	do {                                                                           \
		for (int k0 = 0; k0 < K; k0 += KBL) {                                  \
			barrier(CLK_LOCAL_MEM_FENCE);                                  \
			for (int c_ = lx * 16; c_ < TM * KBL; c_ += WX * 16) {         \
				const int i_ = c_ / KBL, kc_ = k0 + c_ % KBL;          \
				if (kc_ < K)                                           \
					vstore16(row + i_ < M ? gmm_decode_at(         \
							lhs, lhs_scale, M, K,  \
							row + i_, kc_, 0)      \
							      : (float16)(0.0f),       \
						 0, la + c_);                          \
			}                                                              \
			barrier(CLK_LOCAL_MEM_FENCE);                                  \
			RANGE_(k0, min(k0 + KBL, K));                                  \
		}                                                                      \
	} while (0)
#else
#define RANGE() RANGE_(0, K)
#endif

// The groups gmm walks (the bounds of group_start, one step at a time):
// group_first sets g, start and end (the group's index and its rows
// start .. end-1) to the first group that owns one of the rows from row on,
// the first that ends past row; group_next to the next group after g that
// is not empty (the last group when none).
inline void group_first(__global const int *group_sizes, int G, int M, int row, int *g,
			int *start, int *end)
{
	*g = 0;
	*start = 0;
	*end = G == 1 ? M : min(max(group_sizes[0], 0), M);
	while (*g < G - 1 && *end <= row) {
		++*g;
		*start = *end;
		*end = *g == G - 1 ? M : min(*start + max(group_sizes[*g], 0), M);
	}
}

inline void group_next(__global const int *group_sizes, int G, int M, int *g, int *start,
		       int *end)
{
	do {
		++*g;
		*start = *end;
		*end = *g == G - 1 ? M : min(*start + max(group_sizes[*g], 0), M);
	} while (*end == *start && *g < G - 1);
}

#if FUSE
// FUSE=1: columns k0 .. k0+kn-1 (kn <= KBF) of rows row .. row+TM-1 of lhs,
// decoded and scaled as gmm_decode does, into la (row i at la + i*KBF;
// rows past M are zero).  A whole run of 128 (one scale block) that starts
// on a uint is decoded with eight vload4s and one scale; the rest, at the
// matrix's edges, through gmm_decode_at.
inline void decode_rows(__global const uint *lhs, __global const float *lhs_scale, float *la,
			int M, int K, int row, int k0, int kn)
{
	for (int i = 0; i < TM; i++) {
		const int r = row + i;
		float *lr = la + i * KBF;

		for (int c0 = 0; c0 < kn; c0 += 128) {
			const size_t i0 = (size_t)r * K + k0 + c0;

			if (r < M && c0 + 128 <= kn && (i0 & 3) == 0) {
				__global const uint *src = lhs + (i0 >> 2); // 4-byte aligned only
				const float sc = lhs_scale[(size_t)(r / 128) * ((K + 127) / 128) +
							   (k0 + c0) / 128];

				_Pragma("unroll") for (int c = 0; c < 8; c++)
					vstore16(e4m3_decode16(convert_uint16(as_uchar16(vload4(c, src)))) *
							 sc,
						 c, lr + c0);
			} else {
				for (int c = c0; c < min(c0 + 128, kn); c += 16)
					vstore16(r < M ? gmm_decode_at(lhs, lhs_scale, M, K, r, k0 + c, 0)
						       : (float16)(0.0f),
						 0, lr + c);
			}
		}
	}
}

// Kernel 2, FUSE=1: every work-item owns TM rows of out and all N columns.
// For each chunk of KBF columns of lhs (one chunk when K <= KBF) it decodes
// its rows into la, private memory that stays in L1, then walks every
// column panel of rhs_f with them, register-blocked as below; each lhs
// element is decoded once, and the decoded lhs never goes through global
// memory (measured against FUSE=0 in docs/benchmarks.md).  With K > KBF a
// later chunk adds its products to out, which the first chunk stored.  A
// block whose rows straddle a group boundary is multiplied once per group it
// meets, as below, from rows decoded once per chunk.
// Global [1, round_up(ceil_div(M, TM), WY)], local [1, WY].
__kernel __attribute__((reqd_work_group_size(1, WY, 1)))
void gmm(__global const uint *restrict lhs, __global const float *restrict lhs_scale,
	 __global const float *restrict A, __global const float *restrict B,
	 __global const int *restrict group_sizes, __global float *restrict out, int M, int K,
	 int N, int G)
{
	const int row = get_global_id(1) * TM;
	const int np = (N + CN - 1) / CN;
	float la[TM * KBF];

	(void)A;
	if (row >= M)
		return;
	const int rend = min(row + TM, M);
	int g0, start0, end0;

	group_first(group_sizes, G, M, row, &g0, &start0, &end0);
	for (int k0 = 0; k0 < K; k0 += KBF) {
		const int kn = min(KBF, K - k0);
		int g = g0, start = start0, end = end0;

		decode_rows(lhs, lhs_scale, la, M, K, row, k0, kn);
		for (;;) { // every group the rows meet, with the same decoded rows
			const int lo = max(start, row), hi = min(end, rend);

			for (int p = 0; p < np; p++) {
				__global const float *bp = B + (((size_t)g * np + p) * K + k0) * CN;
				floatV acc[TM][TN];

				_Pragma("unroll") for (int i = 0; i < TM; i++)
					_Pragma("unroll") for (int t = 0; t < TN; t++)
						acc[i][t] = (floatV)(0.0f);
				RANGE_(0, kn);
				_Pragma("unroll") for (int i = 0; i < TM; i++) {
					if (row + i < lo || row + i >= hi)
						continue;
					__global float *orow = out + (size_t)(row + i) * N;

					_Pragma("unroll") for (int t = 0; t < TN; t++) {
						const int c = p * CN + t * VN;
						floatV v = acc[i][t];

						if (c + VN <= N) {
							if (k0 > 0)
								v += LOADV(orow + c);
							STOREV(v, orow + c);
						} else if (c < N) {
							float part[VN];

							STOREV(v, part);
							for (int e = 0; e < N - c; e++)
								orow[c + e] = k0 > 0 ? orow[c + e] + part[e]
										     : part[e];
						}
					}
				}
			}
			if (end >= rend || g == G - 1)
				break;
			group_next(group_sizes, G, M, &g, &start, &end);
		}
	}
}
#else
// Kernel 2: the grouped float matmul on the decoded, scaled inputs. Every
// work-item holds a TM x (TN*VN) block of out in float-vector registers
// (the register blocking that makes examples/matmul fast on PoCL: one B
// vector load feeds TM FMAs, A is broadcast), reading A's rows and B's
// panels (gmm_decode_panels) straight from global memory through the
// caches. There are no barriers, so each work-item walks only the groups its own rows meet: one, except for the
// few blocks that straddle a group boundary, which are computed once per
// group they meet and stored row by row where they belong.
// With ALOCAL=1 A (lhs_f) is not read: the work-group decodes its rows of
// lhs into local memory block by block, so the decoded lhs never goes
// through global memory, and work-items past N compute on the last panel
// and store nothing, as they must reach the barriers.
// Global [round_up(ceil_div(N, CN), WX), round_up(ceil_div(M, TM), WY)].
__kernel __attribute__((reqd_work_group_size(WX, WY, 1)))
void gmm(__global const uint *restrict lhs, __global const float *restrict lhs_scale,
	 __global const float *restrict A, __global const float *restrict B,
	 __global const int *restrict group_sizes, __global float *restrict out, int M, int K,
	 int N, int G)
{
	const int col = get_global_id(0) * CN, row = get_global_id(1) * TM;
	const int np = (N + CN - 1) / CN;
#if ALOCAL
	__local float la[TM * KBL];
	const int lx = get_local_id(0), pcol = min(col / CN, np - 1);

	(void)A;
	if (row >= M) // the same for the whole work-group
		return;
#else
	const int pcol = col / CN;

	(void)lhs;
	(void)lhs_scale;
	if (col >= N || row >= M)
		return;
#endif
	const int rend = min(row + TM, M);
	int g, start, end;
#if APACK
	__global const float *ap = A + (size_t)(row / TM) * TM * K; // row is a multiple of TM
#else
	__global const float *arow[TM];
#endif

	group_first(group_sizes, G, M, row, &g, &start, &end);
#if !APACK
	_Pragma("unroll") for (int i = 0; i < TM; i++)
		arow[i] = A + (size_t)min(row + i, M - 1) * K;
#endif
	for (;;) {
		__global const float *bp = B + ((size_t)g * np + pcol) * K * CN;
		const int lo = max(start, row), hi = min(end, rend);
		floatV acc[TM][TN];

		_Pragma("unroll") for (int i = 0; i < TM; i++)
			_Pragma("unroll") for (int t = 0; t < TN; t++)
				acc[i][t] = (floatV)(0.0f);
		RANGE();
		_Pragma("unroll") for (int i = 0; i < TM; i++) {
			if (row + i < lo || row + i >= hi)
				continue;
			__global float *orow = out + (size_t)(row + i) * N;

			_Pragma("unroll") for (int t = 0; t < TN; t++) {
				const int c = col + t * VN;

				if (c + VN <= N)
					STOREV(acc[i][t], orow + c);
				else if (c < N)
					store_part(acc[i][t], orow + c, N - c);
			}
		}
		if (end >= rend || g == G - 1)
			break;
		group_next(group_sizes, G, M, &g, &start, &end);
	}
}
#endif // FUSE
// EVOLVE-BLOCK-END
