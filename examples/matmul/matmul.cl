// C = A * B for row-major fp32 matrices: A is M x K, B is K x N, C is M x N.
//
// Every work-item computes a TM x (TN*VN) block of C: TM rows, TN float
// vectors of VN columns each, held in registers (acc[TM][TN]).  A work-group
// is WX x WY work-items, so it covers a tile of BM = WY*TM rows by
// BN = WX*TN*VN columns.  K is walked KU steps at a time (unrolled).
//
// The plan runs three kernels: pack_a, pack_b, then matmul.
//
//   PACK = 1            pack_a copies A into row panels of TM rows, K-major
//                       (Ap[(panel*K + k)*TM + i]), pack_b copies B into
//                       column panels of CN = TN*VN columns, K-major
//                       (Bp[(panel*K + k)*CN + j]), both zero-padded past the
//                       matrix edges; matmul then reads one contiguous stream
//                       of each per work-item, with no edge cases in the K
//                       loop.  This is what CPUs want: B's rows are N floats
//                       apart, which on a 4 KiB-aligned N maps every k of a
//                       column to one cache set.
//   PACK = 2            B only: pack_b copies B into column panels as above,
//                       pack_a does nothing, and matmul reads the TM rows of
//                       A in place (a broadcast from each row per K step).
//                       pack_a's transpose costs about as much as the gain
//                       from reading one stream of A instead of TM.
//   PACK = 0            the pack kernels do nothing (one work-item each) and
//                       matmul reads A and B in place, as follows:
//   LOCAL = 0, KB = 0   every work-item reads A and B straight from global
//                       memory and runs the whole K loop on its own;
//   LOCAL = 0, KB > 0   the same, but the work-group walks K in blocks of KB
//                       in lock-step (a barrier per block), so the B rows and
//                       A columns of a block are shared through the caches
//                       (with PACK > 0, the panels' blocks);
//   LOCAL = 1           (PACK = 0 only) the work-group stages a BM x KB tile
//                       of A and a KB x BN tile of B in local memory per
//                       block of K (zero-padded past the matrix edges), then
//                       computes from local memory: what GPUs want.
//
// Edges: M, N and K need not be multiples of anything.  Rows past M are
// clamped on load (or zero in Ap) and never stored; a vector of B or C that
// crosses N is loaded and stored element by element (or zero in Bp); K tails
// run one step at a time (or are zero-padded in local memory).
//
// The launch plan (examples/matmul.yaml) reads TM, TN, VN, WX, WY and PACK
// from the build options or the #defines below:
//   pack_a: global = PACK == 1 ? [round_up(ceil_div(K, 16), 8), round_up(ceil_div(M, TM), 8)]
//                                : [1, 1]
//           local  = PACK == 1 ? [8, 8] : [1, 1]
//   pack_b: global = PACK ? [round_up(ceil_div(N, VN), 64), round_up(K, 16)] : [1, 1]
//           local  = PACK ? [64, 16] : [1, 1]
//           (the pack kernels' local sizes are the same at every shape)
//   matmul: global = [round_up(ceil_div(N, TN*VN), WX), round_up(ceil_div(M, TM), WY)]
//           local  = [WX, WY]
// Ap holds round_up(M, 48) * K floats and Bp round_up(N, 64) * K: enough for
// every TM that divides 48 and every CN that divides 64.

// EVOLVE-BLOCK-START
#ifndef TM
#define TM 1            // rows of C per work-item
#endif
#ifndef VN
#define VN 4            // float vector width along N: 1, 2, 4, 8 or 16
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
#ifndef KB
#define KB 0            // K block depth; 0: no blocking (needs > 0 when LOCAL)
#endif
#ifndef LOCAL
#define LOCAL 0         // 1: stage A and B tiles in local memory
#endif
#ifndef PACK
#define PACK 0          // 1: read A and B from packed panels; 2: B only
#endif

#define CN (TN * VN)    // columns per work-item
#define BM (WY * TM)    // rows per work-group tile
#define BN (WX * CN)    // columns per work-group tile

#if LOCAL && KB <= 0
#error "LOCAL=1 needs a K block depth KB > 0"
#endif
#if KB > 0 && KB % KU != 0
#error "KB must be a multiple of KU"
#endif
#if PACK && LOCAL
#error "PACK>0 reads packed panels; LOCAL=1 stages tiles of A and B in place"
#endif
#if PACK < 0 || PACK > 2
#error "PACK must be 0, 1 or 2"
#endif
#if PACK && (48 % TM != 0 || 64 % CN != 0)
#error "PACK>0 needs TM dividing 48 and TN*VN dividing 64 (the panels' buffers)"
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#if VN == 1
#define floatV float
#define LOADV(p) (*(p))
#define STOREV(v, p) (*(p) = (v))
#else
#define floatV CAT(float, VN)
#define LOADV(p) CAT(vload, VN)(0, (p))
#define STOREV(v, p) CAT(vstore, VN)((v), 0, (p))
#endif

// The first n elements of a vector at p (n may be < 1 or >= VN), zeros after.
inline floatV load_part(__global const float *p, int n)
{
#if VN == 1
	return n > 0 ? p[0] : 0.0f;
#else
	float t[VN];

	for (int e = 0; e < VN; e++)
		t[e] = e < n ? p[e] : 0.0f;
	return LOADV(t);
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

// Ap[(p*K + k)*TM + i] = A[p*TM + i][k], zero for rows past M.
__kernel void pack_a(__global const float *restrict A, __global float *restrict Ap, int M,
		     int K)
{
#if PACK == 1
	/* A work-item copies 16 steps of K of one panel's TM rows: it reads 16
	 * contiguous floats of each row and writes one contiguous run of
	 * 16 * TM floats, K-major.  Rows past M in the last panel are zero. */
	const int k0 = get_global_id(0) * 16, p = get_global_id(1);
	__global const float *a = A + (size_t)p * TM * K + k0;
	__global float *o = Ap + ((size_t)p * K + k0) * TM;

	if (k0 >= K || p * TM >= M)
		return;
	if (k0 + 16 <= K && p * TM + TM <= M) {
		_Pragma("unroll") for (int kk = 0; kk < 16; kk++)
			_Pragma("unroll") for (int i = 0; i < TM; i++)
				o[kk * TM + i] = a[(size_t)i * K + kk];
	} else {
		const int n = min(16, K - k0);

		for (int kk = 0; kk < n; kk++)
			for (int i = 0; i < TM; i++)
				o[kk * TM + i] = p * TM + i < M ? a[(size_t)i * K + kk] : 0.0f;
	}
#endif
}

__kernel void pack_b(__global const float *restrict B, __global float *restrict Bp, int N,
		     int K)
{
#if PACK
	const int c = get_global_id(0) * VN, k = get_global_id(1);
	__global const float *b = B + (size_t)k * N + c;

	if (k < K && c < N) {
		const floatV v = c + VN <= N ? LOADV(b) : load_part(b, N - c);

		STOREV(v, Bp + ((size_t)(c / CN) * K + k) * CN + c % CN);
	}
#endif
}

// One K step from packed panels: bp points at this work-item's column
// panel, and ap at its row panel (PACK = 1) or arow[] at its rows of A in
// place (PACK = 2).
#if PACK == 2
#define A_AT(i, k) (arow[i][k])
#else
#define A_AT(i, k) (ap[(size_t)(k) * TM + (i)])
#endif

#define STEP_PACKED(kk)                                                                \
	do {                                                                           \
		const int k_ = (kk);                                                   \
		floatV b_[TN];                                                         \
		_Pragma("unroll") for (int t = 0; t < TN; t++)                         \
			b_[t] = LOADV(bp + (size_t)k_ * CN + t * VN);                  \
		_Pragma("unroll") for (int i = 0; i < TM; i++) {                       \
			const floatV a_ = (floatV)(A_AT(i, k_));                      \
			_Pragma("unroll") for (int t = 0; t < TN; t++)                 \
				acc[i][t] = fma(a_, b_[t], acc[i][t]);                 \
		}                                                                      \
	} while (0)

// K steps k0 .. k1-1 from packed panels, KU at a time.
#define RANGE_PACKED(k0, k1)                                                           \
	do {                                                                           \
		int k = (k0);                                                          \
		const int kend_ = (k1);                                                \
		for (; k + KU <= kend_; k += KU) {                                     \
			_Pragma("unroll") for (int u = 0; u < KU; u++)                 \
				STEP_PACKED(k + u);                                    \
		}                                                                      \
		for (; k < kend_; k++)                                                 \
			STEP_PACKED(k);                                                \
	} while (0)

// One K step from global memory: b[] is row kk of B at this work-item's
// columns, whole vectors (FULL) or element by element at the N edge.
#define STEP_GLOBAL(kk, FULL)                                                          \
	do {                                                                           \
		const int k_ = (kk);                                                   \
		__global const float *brow_ = B + (size_t)k_ * N + col;                \
		floatV b_[TN];                                                         \
		_Pragma("unroll") for (int t = 0; t < TN; t++)                         \
			b_[t] = (FULL) ? LOADV(brow_ + t * VN)                         \
				       : load_part(brow_ + t * VN, N - col - t * VN);  \
		_Pragma("unroll") for (int i = 0; i < TM; i++) {                       \
			const floatV a_ = (floatV)(arow[i][k_]);                       \
			_Pragma("unroll") for (int t = 0; t < TN; t++)                 \
				acc[i][t] = fma(a_, b_[t], acc[i][t]);                 \
		}                                                                      \
	} while (0)

// K steps k0 .. k1-1 from global memory, KU at a time.
#define RANGE_GLOBAL(k0, k1, FULL)                                                     \
	do {                                                                           \
		int k = (k0);                                                          \
		const int kend_ = (k1);                                                \
		for (; k + KU <= kend_; k += KU) {                                     \
			_Pragma("unroll") for (int u = 0; u < KU; u++)                 \
				STEP_GLOBAL(k + u, FULL);                              \
		}                                                                      \
		for (; k < kend_; k++)                                                 \
			STEP_GLOBAL(k, FULL);                                          \
	} while (0)

__kernel __attribute__((reqd_work_group_size(WX, WY, 1)))
void matmul(__global const float *restrict A, __global const float *restrict B,
	    __global const float *restrict Ap, __global const float *restrict Bp,
	    __global float *restrict C, int M, int N, int K)
{
	const int col = get_global_id(0) * CN;  // first column of this work-item
	const int row = get_global_id(1) * TM;  // first row of this work-item
	floatV acc[TM][TN];

	// No early return: with KB > 0 or LOCAL every work-item must reach the
	// barriers, so work-items past the edges compute on clamped rows and
	// zero-padded columns and store nothing.
	_Pragma("unroll") for (int i = 0; i < TM; i++)
		_Pragma("unroll") for (int t = 0; t < TN; t++)
			acc[i][t] = (floatV)(0.0f);

#if PACK
	// Work-items past the last panel (the global size is rounded up to the
	// work-group) read the last one and store nothing.
	const int npb = (N + CN - 1) / CN;
	__global const float *bp = Bp + (size_t)min((int)get_global_id(0), npb - 1) * K * CN;
#if PACK == 2
	__global const float *arow[TM];

	_Pragma("unroll") for (int i = 0; i < TM; i++)
		arow[i] = A + (size_t)min(row + i, M - 1) * K;
	(void)Ap;
#else
	const int npa = (M + TM - 1) / TM;
	__global const float *ap = Ap + (size_t)min((int)get_global_id(1), npa - 1) * K * TM;

	(void)A;
#endif
	(void)B;
#if KB > 0
	for (int k0 = 0; k0 < K; k0 += KB) {
		RANGE_PACKED(k0, min(k0 + KB, K));
		barrier(CLK_LOCAL_MEM_FENCE);
	}
#else
	RANGE_PACKED(0, K);
#endif
#elif !LOCAL
	(void)Ap;
	(void)Bp;
	__global const float *arow[TM];
	const int full = col + CN <= N;

	_Pragma("unroll") for (int i = 0; i < TM; i++)
		arow[i] = A + (size_t)min(row + i, M - 1) * K;
#if KB > 0
	for (int k0 = 0; k0 < K; k0 += KB) {
		const int k1 = min(k0 + KB, K);

		if (full)
			RANGE_GLOBAL(k0, k1, 1);
		else
			RANGE_GLOBAL(k0, k1, 0);
		barrier(CLK_LOCAL_MEM_FENCE);
	}
#else
	if (full)
		RANGE_GLOBAL(0, K, 1);
	else
		RANGE_GLOBAL(0, K, 0);
#endif
#else
	(void)Ap;
	(void)Bp;
	__local float As[BM * KB];  // As[r * KB + kk]: rows of the A tile
	__local float Bs[KB * BN];  // Bs[kk * BN + c]: rows of the B tile
	const int lx = get_local_id(0), ly = get_local_id(1);
	const int lid = ly * WX + lx;
	const int row0 = get_group_id(1) * BM, col0 = get_group_id(0) * BN;

	for (int k0 = 0; k0 < K; k0 += KB) {
		for (int idx = lid; idx < BM * KB; idx += WX * WY) {
			const int r = row0 + idx / KB, k = k0 + idx % KB;

			As[idx] = r < M && k < K ? A[(size_t)r * K + k] : 0.0f;
		}
		for (int idx = lid; idx < KB * (BN / VN); idx += WX * WY) {
			const int kk = idx / (BN / VN), c = idx % (BN / VN) * VN;
			const int k = k0 + kk;
			floatV v = (floatV)(0.0f);

			if (k < K)
				v = col0 + c + VN <= N ? LOADV(B + (size_t)k * N + col0 + c)
						       : load_part(B + (size_t)k * N + col0 + c,
								   N - col0 - c);
			STOREV(v, Bs + kk * BN + c);
		}
		barrier(CLK_LOCAL_MEM_FENCE);
		for (int kk = 0; kk < KB; kk += KU) {
			_Pragma("unroll") for (int u = 0; u < KU; u++) {
				floatV b_[TN];

				_Pragma("unroll") for (int t = 0; t < TN; t++)
					b_[t] = LOADV(Bs + (kk + u) * BN + lx * CN + t * VN);
				_Pragma("unroll") for (int i = 0; i < TM; i++) {
					const floatV a_ = (floatV)(As[(ly * TM + i) * KB + kk + u]);

					_Pragma("unroll") for (int t = 0; t < TN; t++)
						acc[i][t] = fma(a_, b_[t], acc[i][t]);
				}
			}
		}
		barrier(CLK_LOCAL_MEM_FENCE);
	}
#endif

	_Pragma("unroll") for (int i = 0; i < TM; i++) {
		if (row + i < M) {
			__global float *crow = C + (size_t)(row + i) * N;

			_Pragma("unroll") for (int t = 0; t < TN; t++) {
				const int c = col + t * VN;

				if (c + VN <= N)
					STOREV(acc[i][t], crow + c);
				else if (c < N)
					store_part(acc[i][t], crow + c, N - c);
			}
		}
	}
}
// EVOLVE-BLOCK-END
