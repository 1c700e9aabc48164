// chunk_gla: simple gated linear attention, forward and backward, chunked.
//
// Layouts: q, k, dq, dk are [B,T,H,K]; v, dout, o, dv are [B,T,H,V];
// g_gamma is [H] (log decay g < 0 per head); scale = K^-0.5.  K and V are
// multiples of the vector widths (the spec's constraints say so) and of 16
// (gla_chunk transposes 16 x 16 blocks; the spec's semantics say so).
//
// The sequence of one (b, h) is cut into NT = ceil(T / CHUNK) chunks; chunk n
// holds positions t0 = n*CHUNK .. t1-1, t1 = min(t0 + CHUNK, T), L = t1 - t0.
//
// States (kernel gla_state, one work-group per state walking the chunks in
// order, parallel over its tiles; or, SPAR=1, one per chunk and state, each
// chunk's own part, which kernel gla_scan then folds over the chunks):
//   h_n  = sum_{s < t0} exp(g (t0-1-s)) k_s v_s^T      (K x V; h_0 = 0)
//   h_{n+1} = exp(g CHUNK) h_n + sum_{s in n} exp(g (t1-1-s)) k_s v_s^T
//   dh_n = sum_{t >= t1} exp(g (t-t1)) q_t dout_t^T     (K x V; dh_{NT-1} = 0)
//   dh_{n-1} = exp(g L) dh_n + sum_{t in n} exp(g (t-t0)) q_t dout_t^T
// Both go to scratch, one K x V matrix per chunk: hs[b,h,n,:,:], dhs[b,h,n,:,:].
//
// Chunk n (kernel gla_chunk, one work-group per CPW chunks), with the decayed,
// causally masked intra-chunk scores (local positions 0 <= s <= t < L)
//   A[t][s]  = exp(g (t-s)) q_t . k_s,    dA[t][s] = exp(g (t-s)) dout_t . v_s:
//   o_t  = scale * (exp(g (t-t0+1)) h_n^T q_t     + sum_{s<=t} A[t][s] v_s)
//   dq_t = scale * (exp(g (t-t0+1)) h_n dout_t    + sum_{s<=t} dA[t][s] k_s)
//   dk_s = scale * (exp(g (t1-s)) dh_n v_s        + sum_{t>=s} dA[t][s] q_t)
//   dv_s = scale * (exp(g (t1-s)) dh_n^T k_s      + sum_{t>=s} A[t][s] dout_t)
// The work-group copies the chunk's q, k, v, dout (rows past the end of the
// sequence as zeros), k^T, v^T, h_n^T and dh_n^T (transposed 16 x 16 at a
// time in registers) into local memory, forms A and dA there, then computes
// the outputs.  Every product is the same register
// tile: TR rows by VW columns (a float vector per row) per work-item.

// EVOLVE-BLOCK-START
#ifndef CHUNK
#define CHUNK 64        // chunk length (positions per chunk)
#endif
#ifndef SVW
#define SVW 16          // gla_state: state columns per work-item (a float vector)
#endif
#ifndef SKT
#define SKT 16          // gla_state: state rows per work-item
#endif
#ifndef VW
#define VW 16           // gla_chunk: tile columns per work-item (a float vector)
#endif
#ifndef TR
#define TR 16           // gla_chunk: tile rows per work-item
#endif
#ifndef WG
#define WG 2            // gla_chunk: work-group size (small runs best on PoCL's CPU device)
#endif
#ifndef GLA_LDS
#define GLA_LDS 0       // gla_chunk: staging in local memory (1) or in global scratch (0)
#endif
#ifndef SPAR
#define SPAR 0          // gla_state: 1 one work-group per chunk, then gla_scan
#endif
#ifndef SST
#define SST 0           // gla_state: 1 one work-item per state, every tile of it per chunk
#endif
#ifndef UNR
#define UNR 1           // gla_chunk: unroll factor of the tiles' inner loop
#endif
#ifndef NTS
#define NTS 1           // gla_chunk: outputs stored past the caches, where the compiler can
#endif
#ifndef SPF
#define SPF 32          // gla_state: positions read ahead, where the compiler can prefetch
#endif
#ifndef CPW
#define CPW 1           // gla_chunk: chunks per work-group, one after another
#endif
#ifndef CPF
#define CPF 8           // gla_chunk: positions read ahead while staging, where the compiler can prefetch
#endif
#ifndef __has_builtin
#define __has_builtin(x) 0
#endif
// __builtin_prefetch on a CPU target only: NVIDIA's compiler refuses it on a
// __global pointer ("changes address space of pointer"), and a GPU's memory
// system is not helped by it.  PoCL's CPU device defines its host's macros.
#if SPF > 0 && __has_builtin(__builtin_prefetch) && \
	(defined(__x86_64__) || defined(__i386__) || defined(__aarch64__))
#define GLA_PREFETCH 1
#else
#define GLA_PREFETCH 0
#endif
#if CHUNK % 16 != 0
#error "CHUNK must be a multiple of 16 (gla_chunk transposes 16 x 16 blocks)"
#endif
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define floatS CAT(float, SVW)
#define vloadS CAT(vload, SVW)
#define vstoreS CAT(vstore, SVW)
#define floatV CAT(float, VW)
#define vloadV CAT(vload, VW)
#define vstoreV CAT(vstore, VW)

// Element i of position t of sequence (b, h), rows of width D.
static size_t gla_at(int b, int t, int h, int i, int T, int H, int D)
{
	return (((size_t)b * T + t) * H + h) * D + i;
}

// SST = 1 (gla_state below): the chunk staged in xs, ys folded into the
// R x SVW tile of the state at rows kr.., columns cv.. (from the slot before
// the chunk times its decay, or from zero with SPAR), stored to the slot
// after it.
#if SPAR
#define GLA_SST_FROM(R, in) _Pragma("unroll") for (int i_ = 0; i_ < (R); i_++) acc_[i_] = (floatS)(0.0f)
#else
#define GLA_SST_FROM(R, in)                                                             \
	_Pragma("unroll") for (int i_ = 0; i_ < (R); i_++) acc_[i_] = vloadS(0, (in) + i_ * V) * wdec[len]
#endif
#define GLA_SST_TILE(R, kr, cv)                                                         \
	{                                                                              \
		__global float *out_ = sb + slot * kv + (size_t)(kr) * V + (cv);      \
		__global const float *in_ = sb + n * kv + (size_t)(kr) * V + (cv);    \
		floatS acc_[R];                                                        \
                                                                                       \
		(void)in_;                                                             \
		GLA_SST_FROM(R, in_);                                                  \
		for (int m_ = 0; m_ < len; m_++) {                                     \
			floatS yw_ = vloadS(0, ys + m_ * V + (cv));                    \
                                                                                       \
			_Pragma("unroll") for (int i_ = 0; i_ < (R); i_++)             \
				acc_[i_] = fma((floatS)(xs[m_ * K + (kr) + i_]), yw_, acc_[i_]); \
		}                                                                      \
		_Pragma("unroll") for (int i_ = 0; i_ < (R); i_++)                     \
			vstoreS(acc_[i_], 0, out_ + i_ * V);                           \
	}

// gla_state with SST = 1, for the one work-item of a work-group: x, y are
// the sequence's rows (ldx, ldy floats apart), sb its state's slot 0, lws
// room for CHUNK * (K + V) floats.  Each chunk's rows are staged in xs (x)
// and ys (y times its weight, in the order of the walk), then folded into
// every SKT x SVW tile of the state in turn; rows of K that no whole tile
// covers are folded 2 at a time (K is even).
#if SST
// Asks for every line of position p's rows of x and y (GLA_PREFETCH).
#define GLA_ASK_ROW(p)                                                                  \
	{                                                                              \
		for (int i_ = 0; i_ < K; i_ += 16)                                     \
			__builtin_prefetch(x + (size_t)(p) * ldx + i_, 0, 3);          \
		for (int j_ = 0; j_ < V; j_ += 16)                                     \
			__builtin_prefetch(y + (size_t)(p) * ldy + j_, 0, 3);          \
	}

static void gla_state_tiles(__global const float *x, __global const float *y, size_t ldx,
                            size_t ldy, __global float *sb, __local const float *wdec,
                            __local float *lws, int rev, int NT, int T, int K, int V)
{
	size_t kv = (size_t)K * V;
	__local float *xs = lws, *ys = lws + CHUNK * K;
#if SPAR
	int gn = get_group_id(1), n0 = rev ? NT - 1 - gn : gn, n1 = n0 + 1; // chunk gn

	if (gn == (rev ? 0 : NT - 1)) { // nothing to fold: zero the slot that starts the scan
		for (size_t e = 0; e < kv; e += SVW)
			vstoreS((floatS)(0.0f), 0, sb + (rev ? NT - 1 : 0) * kv + e);
		return;
	}
#else
	int n0 = 0, n1 = NT - 1; // the last chunk of the walk folds into nothing

	for (size_t e = 0; e < kv; e += SVW) // the state before the first chunk
		vstoreS((floatS)(0.0f), 0, sb + (rev ? NT - 1 : 0) * kv + e);
#endif
	for (int step = n0; step < n1; step++) {
		int n = rev ? NT - 1 - step : step, slot = rev ? n - 1 : n + 1;
		int t0 = n * CHUNK, len = min(CHUNK, T - t0), kr = 0;

		// Step m of the walk has weight exp(g (len-1-m)) both ways.  The
		// rows are read in memory order (the hardware's prefetchers follow
		// ascending streams best), each line SPF positions ahead asked for.
		for (int r = 0; r < len; r++) {
			int p = t0 + r, m = rev ? len - 1 - r : r;
			float w = wdec[len - 1 - m];

#if GLA_PREFETCH
			if (p + SPF < T)
				GLA_ASK_ROW(p + SPF);
#endif
			for (int i = 0; i < K; i += SVW)
				vstoreS(vloadS(0, x + (size_t)p * ldx + i), 0, xs + m * K + i);
			for (int j = 0; j < V; j += SVW)
				vstoreS(vloadS(0, y + (size_t)p * ldy + j) * w, 0, ys + m * V + j);
		}
		for (; kr + SKT <= K; kr += SKT) {
#if GLA_PREFETCH
			// The next chunk's rows, about SKT * CHUNK / K of them per
			// row of tiles, asked for while this chunk is folded, so that
			// its staging finds them in the caches.
			if (step + 1 < n1) {
				int pn = (rev ? t0 - CHUNK : t0 + CHUNK) + kr * CHUNK / K;

				for (int r = 0; r <= SKT * CHUNK / K && pn + r < T; r++)
					GLA_ASK_ROW(pn + r);
			}
#endif
			for (int cv = 0; cv < V; cv += SVW)
				GLA_SST_TILE(SKT, kr, cv);
		}
		for (; kr < K; kr += 2)
			for (int cv = 0; cv < V; cv += SVW)
				GLA_SST_TILE(2, kr, cv);
	}
}
#endif

// Global size [V/SVW, K/SKT * (SPAR ? NT : 1), 2*B*H], local [V/SVW, K/SKT,
// 1]: work-group z < B*H carries the forward state h, the rest the backward
// dh; each work-item holds SKT rows by SVW columns of it in registers and
// reads the positions' rows straight from global memory (each row is read
// by the work-group's few work-items, from the caches).  The first reader
// of a row takes it from memory: on PoCL's CPU device the work-items run
// one after another, each a stream of 64-byte pieces a row apart, so each
// asks for its pieces SPF positions ahead (__builtin_prefetch, where the
// compiler has it; a no-op elsewhere).  The weights wdec[m] = exp(g m) are
// computed once per work-group.
// SPAR = 0: one work-group per state walks every chunk in order, folding
// chunk n in as sum_s w_s k_s v_s^T with w_s = exp(g (t1-1-s)) (forward) or
// sum_t w_t q_t dout_t^T with w_t = exp(g (t-t0)) (backward), and stores
// the state before each chunk.  gla_scan does nothing.
// SPAR = 1: one work-group per chunk n and state, all independent, each
// computing only chunk n's own contribution:
//   forward,  n < NT-1: hs[n+1]  = sum_{s in n} exp(g (t1-1-s)) k_s v_s^T
//   backward, n > 0:    dhs[n-1] = sum_{t in n} exp(g (t-t0)) q_t dout_t^T
// while the chunk with nothing to give (the last forward, the first
// backward) zeroes the slot that starts the recurrence (hs[0], dhs[NT-1]);
// gla_scan then folds the slots into the states.  More parallel work, one
// more pass over the states.
//
// SST = 1: the work-group is one work-item, which stages each chunk's rows
// in local memory (xs: x, ys: y times its weight, in the order of the walk;
// CHUNK * (K + V) floats, the argument lws) and then folds the chunk into
// every SKT x SVW tile of the state in turn, reading the tile of the state
// before the chunk back from scratch.  On PoCL's CPU device a work-group's
// work-items run one after another, each through the whole sequence, so
// with SST = 0 every work-item reads its pieces of every row from memory
// (rows H*K floats apart, which also crowd a few sets of the L1 cache);
// here a chunk's rows are read from memory once per state and every tile
// after the first reads them from the L1 or L2 cache.
__kernel void gla_state(__global const float *q, __global const float *k,
                        __global const float *v, __global const float *g_gamma,
                        __global const float *dout, __global float *hs, __global float *dhs,
                        int B, int T, int H, int K, int V, __local float *lws)
{
	__local float wdec[CHUNK + 1];
	int cv = get_local_id(0) * SVW, kr = get_local_id(1) * SKT;
	int nwi = get_local_size(0) * get_local_size(1);
	int lid = get_local_id(1) * get_local_size(0) + get_local_id(0);
	int z = get_group_id(2), bh = z % (B * H), rev = z / (B * H), b = bh / H, h = bh % H;
	int NT = (T + CHUNK - 1) / CHUNK;
	float g = g_gamma[h];
	size_t ldx = (size_t)H * K, ldy = (size_t)H * V; // from one position to the next
	__global const float *x = (rev ? q : k) + gla_at(b, 0, h, 0, T, H, K);
	__global const float *y = (rev ? dout : v) + gla_at(b, 0, h, 0, T, H, V);

	for (int m = lid; m <= CHUNK; m += nwi)
		wdec[m] = exp(g * m);
	barrier(CLK_LOCAL_MEM_FENCE);
#if SST
	(void)cv, (void)kr;
	gla_state_tiles(x, y, ldx, ldy, (rev ? dhs : hs) + (size_t)bh * NT * K * V, wdec, lws, rev,
	                NT, T, K, V);
#else
	(void)lws;
	__global float *st = (rev ? dhs : hs) + (size_t)bh * NT * K * V + (size_t)kr * V + cv;
	floatS acc[SKT];
#if SPAR
	int gn = get_group_id(1), n0 = rev ? NT - 1 - gn : gn, n1 = n0 + 1; // chunk gn
	int idle = gn == (rev ? 0 : NT - 1); // zeroes the first slot instead
#else
	int n0 = 0, n1 = NT, idle = 0;
#endif

	_Pragma("unroll") for (int i = 0; i < SKT; i++)
		acc[i] = (floatS)(0.0f);
	for (int step = n0; step < n1 && !idle; step++) {
		int n = rev ? NT - 1 - step : step;
		int t0 = n * CHUNK, len = min(CHUNK, T - t0);
#if SPAR
		int slot = rev ? n - 1 : n + 1;
#else
		int slot = n;

		if (step == NT - 1)
			break; // the last chunk's state is stored; nothing is folded
		_Pragma("unroll") for (int i = 0; i < SKT; i++)
			vstoreS(acc[i], 0, st + ((size_t)n * K + i) * V);
		_Pragma("unroll") for (int i = 0; i < SKT; i++)
			acc[i] *= wdec[len];
		slot = rev ? n - 1 : n + 1;
#endif
		// Positions in the order of the walk (forward up, backward down),
		// so that the hardware's stream prefetchers and the explicit ones
		// below run ahead of it; step m has weight exp(g (len-1-m)) both
		// ways.
		for (int m = 0; m < len; m++) {
			int p = rev ? t0 + len - 1 - m : t0 + m;
			floatS yw;
#if GLA_PREFETCH
			int pf = rev ? max(p - SPF, 0) : min(p + SPF, T - 1);

			__builtin_prefetch(y + (size_t)pf * ldy + cv, 0, 3);
			__builtin_prefetch(x + (size_t)pf * ldx + kr, 0, 3);
#endif
			yw = vloadS(0, y + (size_t)p * ldy + cv) * wdec[len - 1 - m];

			_Pragma("unroll") for (int i = 0; i < SKT; i++)
				acc[i] = fma((floatS)(x[(size_t)p * ldx + kr + i]), yw, acc[i]);
		}
#if SPAR
		_Pragma("unroll") for (int i = 0; i < SKT; i++)
			vstoreS(acc[i], 0, st + ((size_t)slot * K + i) * V);
#else
		(void)slot;
#endif
	}
#if SPAR
	if (idle)
		_Pragma("unroll") for (int i = 0; i < SKT; i++)
			vstoreS(acc[i], 0, st + ((size_t)(rev ? NT - 1 : 0) * K + i) * V);
#else
	_Pragma("unroll") for (int i = 0; i < SKT; i++)
		vstoreS(acc[i], 0, st + ((size_t)(rev ? 0 : NT - 1) * K + i) * V);
#endif
#endif // SST
}

// Global size [SPAR ? K*V/16 : 1, 2*B*H]: with SPAR = 1, the recurrences
// over the slots gla_state wrote, 16 elements of one state per work-item, in
// place:
//   h_n  = exp(g CHUNK) h_{n-1} + hs[n]        (n = 1 .. NT-1)
//   dh_n = exp(g L_{n+1}) dh_{n+1} + dhs[n]    (n = NT-2 .. 0)
// with L_{n+1} the length of chunk n+1 (shorter only for the last chunk).
// With SPAR = 0 gla_state has done it all and this does nothing.
__kernel void gla_scan(__global const float *g_gamma, __global float *hs, __global float *dhs,
                       int B, int T, int H, int K, int V)
{
#if SPAR
	int e = get_global_id(0) * 16, z = get_global_id(1);
	int bh = z % (B * H), rev = z / (B * H), h = bh % H;
	int NT = (T + CHUNK - 1) / CHUNK;
	float g = g_gamma[h];
	__global float *st = (rev ? dhs : hs) + (size_t)bh * NT * K * V + e;
	size_t kv = (size_t)K * V;

	if (!rev) {
		float d = exp(g * CHUNK);
		float16 cur = vload16(0, st);

		for (int n = 1; n < NT; n++) {
			cur = fma(cur, (float16)(d), vload16(0, st + n * kv));
			vstore16(cur, 0, st + n * kv);
		}
	} else {
		float16 cur = vload16(0, st + (NT - 1) * kv);

		for (int n = NT - 2; n >= 0; n--) {
			float d = exp(g * min(CHUNK, T - (n + 1) * CHUNK));

			cur = fma(cur, (float16)(d), vload16(0, st + n * kv));
			vstore16(cur, 0, st + n * kv);
		}
	}
#else
	(void)g_gamma, (void)hs, (void)dhs, (void)B, (void)T, (void)H, (void)K, (void)V;
#endif
}

// One stage of gla_t16: rows i and i+s (bit s of i clear) swap their
// off-diagonal s x s blocks, r[i][l] <-> r[i+s][l-s] for the lanes l with
// bit s set.
#define GLA_TSTAGE(r, s, lo, hi)                                                       \
	_Pragma("unroll") for (int i_ = 0; i_ < 16; i_++) if (!(i_ & (s))) {           \
		float16 a_ = r[i_], b_ = r[i_ + (s)];                                  \
		r[i_] = shuffle2(a_, b_, (uint16)lo);                                  \
		r[i_ + (s)] = shuffle2(a_, b_, (uint16)hi);                            \
	}

// Transposes the 16 x 16 block r (r[i] is row i) in registers: after the
// four stages element (i, l) is at (l, i), every bit where i and l differ
// having been swapped once.
static void gla_t16(float16 *r)
{
	GLA_TSTAGE(r, 8, (0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23),
		   (8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31))
	GLA_TSTAGE(r, 4, (0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27),
		   (4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31))
	GLA_TSTAGE(r, 2, (0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29),
		   (2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31))
	GLA_TSTAGE(r, 1, (0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30),
		   (1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31))
}

// acc[r] += X[r*xr + p*xc] * Y[p*ly .. p*ly + VW-1] for r < TR: one step of a tile.
#define TILE_STEP(acc, X, xr, xc, Y, ly, p)                                            \
	{                                                                              \
		floatV y_ = vloadV(0, (Y) + (p) * (ly));                               \
		_Pragma("unroll") for (int r_ = 0; r_ < TR; r_++)                      \
			acc[r_] = fma((floatV)((X)[r_ * (xr) + (p) * (xc)]), y_, acc[r_]); \
	}

// The steps p0 <= p < p1, UNR at a time, then the rest one by one.
#define TILE_FMA(acc, X, xr, xc, Y, ly, p0, p1)                                        \
	{                                                                              \
		int p_ = (p0), pe_ = (p1);                                             \
		for (; p_ + UNR <= pe_; p_ += UNR)                                     \
			_Pragma("unroll") for (int u_ = 0; u_ < UNR; u_++)             \
				TILE_STEP(acc, X, xr, xc, Y, ly, p_ + u_)              \
		for (; p_ < pe_; p_++)                                                 \
			TILE_STEP(acc, X, xr, xc, Y, ly, p_)                           \
	}

// Stores one row of an output tile.  With NTS = 1, where the compiler has
// the builtin, the store is non-temporal: the outputs are written once and
// never read again, so their lines need not be read into the caches first.
// The address is aligned to the vector: rows start at multiples of K or V,
// columns at multiples of VW, and both divide by VW.
#if NTS && __has_builtin(__builtin_nontemporal_store)
#define GLA_STORE(x, p) __builtin_nontemporal_store((x), (__global floatV *)(p))
#else
#define GLA_STORE(x, p) vstoreV((x), 0, (p))
#endif

#define TILE_ZERO(acc)                                                                  \
	_Pragma("unroll") for (int r_ = 0; r_ < TR; r_++)                              \
		acc[r_] = (floatV)(0.0f)

// One output of gla_chunk (out, rows of width D), in tiles of TR x VW:
// scale * (the state's part, X1 (rows of width W1) times Y1 (rows of width
// D), each row times its decay, plus the scores' part, S times Y2 (rows of
// width D)).  FWD: rows t, the decay exp(g (t-t0+1)), S read along its rows
// s <= t (o, dq); otherwise rows s, the decay exp(g (t1-s)), S read down its
// columns t >= s (dk, dv).
#define GLA_OUTPUT(out, D, X1, W1, Y1, S, Y2, FWD)                                      \
	for (int task = lid; task < nrt * ((D) / VW); task += WG) {                    \
		int r0 = (task % nrt) * TR, c = (task / nrt) * VW;                     \
		floatV acc[TR];                                                        \
                                                                                       \
		if (r0 >= L)                                                           \
			continue;                                                      \
		TILE_ZERO(acc);                                                        \
		TILE_FMA(acc, (X1) + r0 * (W1), W1, 1, (Y1) + c, D, 0, W1)             \
		_Pragma("unroll") for (int r = 0; r < TR; r++)                         \
			acc[r] *= (FWD) ? DEC(r0 + r + 1) : r0 + r < L ? DEC(L - r0 - r) : 0.0f; \
		if (FWD)                                                               \
			TILE_FMA(acc, (S) + r0 * CHUNK, CHUNK, 1, (Y2) + c, D, 0, min(r0 + TR, L)) \
		else                                                                   \
			TILE_FMA(acc, (S) + r0, 1, CHUNK, (Y2) + c, D, r0, L)          \
		_Pragma("unroll") for (int r = 0; r < TR; r++)                         \
			if (r0 + r < L)                                                \
				GLA_STORE(scale * acc[r], (out) + gla_at(b, t0 + r0 + r, h, c, T, H, D)); \
	}

// Global size [WG, ceil_div(NT, CPW), B*H], local [WG, 1, 1]: a work-group
// computes CPW consecutive chunks of one sequence, one after another (where
// the compiler can prefetch, it asks for the next chunk's rows and states
// while it forms a chunk's scores, so that their staging finds them in the
// caches: on PoCL's CPU device, with one chunk per work-group, reading a
// chunk's rows from memory cost the work-item the time of that wait; asking
// for the states too made the plan 1.03-1.04 x faster, kctl eval side by
// side on the AVX-512 host, 2026-12-01).
// The chunk's staged inputs, their transposes and the transposed states are
// 3*CHUNK*(K+V) + 2*K*V floats: in local memory (lmem) with GLA_LDS=1, or in
// the work-group's own region of the global scratch buffer stage with
// GLA_LDS=0, where local memory is too small for them (128 KiB at CHUNK=64,
// K=V=64, against a GPU's 48 KiB; PoCL's CPU device has 1 MiB).
#if GLA_LDS
#define STAGED __local
#define STAGED_FENCE CLK_LOCAL_MEM_FENCE
#else
#define STAGED __global
#define STAGED_FENCE (CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
#endif
__kernel void gla_chunk(__global const float *q, __global const float *k,
                        __global const float *v, __global const float *g_gamma,
                        __global const float *dout, __global const float *hs,
                        __global const float *dhs, __global float *o, __global float *dq,
                        __global float *dk, __global float *dv, int B, int T, int H, int K,
                        int V, __global float *stage, __local float *lmem)
{
	// lA, ldA: the scores, [t][s].  rdec[u] = exp(g (CHUNK-u)) for u <= CHUNK and
	// 0 above, so rdec[CHUNK + s - t] is the masked decay of A[t][s].
	__local float lA[CHUNK * CHUNK], ldA[CHUNK * CHUNK], rdec[2 * CHUNK];
	int lid = get_local_id(0), bh = get_group_id(2);
	int b = bh / H, h = bh % H, NT = (T + CHUNK - 1) / CHUNK;
	int n0 = get_group_id(1) * CPW, n1 = min(n0 + CPW, NT);
	float g = g_gamma[h], scale = 1.0f / sqrt((float)K);

	(void)B; // in the signature for symmetry with gla_state
#define DEC(d) rdec[CHUNK - (d)] // exp(g d), 0 <= d <= CHUNK

	for (int i = lid; i < 2 * CHUNK; i += WG)
		rdec[i] = i <= CHUNK ? exp(g * (CHUNK - i)) : 0.0f;
	for (int n = n0; n < n1; n++) {
#if GLA_LDS
		STAGED float *lq = lmem;
		(void)stage;
#else
		STAGED float *lq = stage + ((size_t)bh * NT + n) * (3 * CHUNK * (K + V) + 2 * K * V);
		(void)lmem;
#endif
		STAGED float *lk = lq + CHUNK * K, *lkT = lk + CHUNK * K;              // [t][i], [i][s]
		STAGED float *lv = lkT + K * CHUNK, *ldo = lv + CHUNK * V, *lvT = ldo + CHUNK * V;
		STAGED float *lhT = lvT + V * CHUNK, *ldhT = lhT + V * K;              // [j][i]
		int t0 = n * CHUNK, L = min(CHUNK, T - t0);
		__global const float *hn = hs + ((size_t)bh * NT + n) * K * V;
		__global const float *dhn = dhs + ((size_t)bh * NT + n) * K * V;


		// 1. The chunk's inputs, their transposes, the transposed states, the decays.
#if GLA_PREFETCH
		// The first chunk's states are asked for before its rows are staged;
		// later chunks' were asked for while the chunk before formed its scores.
		if (n == n0)
			for (int e = lid * 16; e < K * V; e += WG * 16) {
				__builtin_prefetch(hn + e, 0, 3);
				__builtin_prefetch(dhn + e, 0, 3);
			}
#endif
		for (int t = lid; t < CHUNK; t += WG) {
			__global const float *qt = q + gla_at(b, t0 + t, h, 0, T, H, K);
			__global const float *kt = k + gla_at(b, t0 + t, h, 0, T, H, K);
			__global const float *vt = v + gla_at(b, t0 + t, h, 0, T, H, V);
			__global const float *dt = dout + gla_at(b, t0 + t, h, 0, T, H, V);

#if GLA_PREFETCH && CPF > 0
			// Each line of the four rows CPF positions ahead, asked for now: the
			// rows are H*K or H*V floats apart, a stride the hardware's
			// prefetchers pick up late within a chunk of 64.
			if (t + CPF < L) {
				for (int i = 0; i < K; i += 16) {
					__builtin_prefetch(qt + CPF * H * K + i, 0, 3);
					__builtin_prefetch(kt + CPF * H * K + i, 0, 3);
				}
				for (int j = 0; j < V; j += 16) {
					__builtin_prefetch(vt + CPF * H * V + j, 0, 3);
					__builtin_prefetch(dt + CPF * H * V + j, 0, 3);
				}
			}
#endif
			for (int i = 0; i < K; i += VW) {
				vstoreV(t < L ? vloadV(0, qt + i) : (floatV)(0.0f), 0, lq + t * K + i);
				vstoreV(t < L ? vloadV(0, kt + i) : (floatV)(0.0f), 0, lk + t * K + i);
			}
			for (int j = 0; j < V; j += VW) {
				vstoreV(t < L ? vloadV(0, vt + j) : (floatV)(0.0f), 0, lv + t * V + j);
				vstoreV(t < L ? vloadV(0, dt + j) : (floatV)(0.0f), 0, ldo + t * V + j);
			}
		}
		// The transposes, 16 x 16 blocks read from global memory, turned in
		// registers and stored as whole rows: k^T, v^T (the chunk's positions
		// as columns), h_n^T and dh_n^T.
		int ncb = CHUNK / 16, nkb = K / 16, nvb = V / 16;

		for (int task = lid; task < ncb * (nkb + nvb) + 2 * nkb * nvb; task += WG) {
			__global const float *src;
			STAGED float *dst;
			size_t lds;
			int ldd, nrow = 16;
			float16 r[16];

			if (task < ncb * (nkb + nvb)) { // rows: positions tb.., columns cb..
				int isv = task >= ncb * nkb, u = task - (isv ? ncb * nkb : 0);
				int tb = (u % ncb) * 16, cb = (u / ncb) * 16, D = isv ? V : K;

				src = (isv ? v : k) + gla_at(b, t0 + tb, h, cb, T, H, D);
				lds = (size_t)H * D;
				nrow = L - tb;
				dst = (isv ? lvT : lkT) + cb * CHUNK + tb;
				ldd = CHUNK;
			} else { // rows i of the state, columns j
				int u = task - ncb * (nkb + nvb), isd = u >= nkb * nvb;
				int ib = (u % nkb) * 16, jb = ((u / nkb) % nvb) * 16;

				src = (isd ? dhn : hn) + (size_t)ib * V + jb;
				lds = V;
				dst = (isd ? ldhT : lhT) + jb * K + ib;
				ldd = K;
			}
			_Pragma("unroll") for (int e = 0; e < 16; e++)
				r[e] = e < nrow ? vload16(0, src + e * lds) : (float16)(0.0f);
			gla_t16(r);
			_Pragma("unroll") for (int e = 0; e < 16; e++)
				vstore16(r[e], 0, dst + e * ldd);
		}
		barrier(STAGED_FENCE);

		// 2. A = (q k^T) and dA = (dout v^T), masked and decayed, in tiles of TR x VW.
		int nrt = CHUNK / TR, nct = CHUNK / VW;

		for (int task = lid; task < 2 * nrt * nct; task += WG) {
			int which = task / (nrt * nct), r0 = (task % nrt) * TR;
			int c0 = ((task / nrt) % nct) * VW;
			__local float *dst = which ? ldA : lA;
			floatV acc[TR];

#if GLA_PREFETCH
			// The next chunk's rows, spread over the tasks: row r of q and
			// k for r < CHUNK, of v and dout above.
			for (int r = task; n + 1 < n1 && r < 2 * CHUNK; r += 2 * nrt * nct) {
				int t = t0 + CHUNK + r % CHUNK, isv = r >= CHUNK, D = isv ? V : K;
				__global const float *p0 = (isv ? v : q) + gla_at(b, t, h, 0, T, H, D);
				__global const float *p1 = (isv ? dout : k) + gla_at(b, t, h, 0, T, H, D);

				for (int i = 0; t < T && i < D; i += 16) {
					__builtin_prefetch(p0 + i, 0, 3);
					__builtin_prefetch(p1 + i, 0, 3);
				}
			}
			// And the next chunk's states, h_{n+1} then dh_{n+1}, a
			// line of them a task at a time.
			for (int e = task * 16; n + 1 < n1 && e < 2 * K * V; e += 2 * nrt * nct * 16)
				__builtin_prefetch((e < K * V ? hn + e : dhn + (e - K * V)) + K * V, 0, 3);
#endif
			TILE_ZERO(acc);
			if (c0 < r0 + TR) { // not wholly above the diagonal
				if (which)
					TILE_FMA(acc, ldo + r0 * V, V, 1, lvT + c0, CHUNK, 0, V)
				else
					TILE_FMA(acc, lq + r0 * K, K, 1, lkT + c0, CHUNK, 0, K)
			}
			_Pragma("unroll") for (int r = 0; r < TR; r++)
				vstoreV(acc[r] * vloadV(0, rdec + CHUNK + c0 - (r0 + r)), 0,
				        dst + (r0 + r) * CHUNK + c0);
		}
		barrier(STAGED_FENCE);

		// 3. The outputs; row tiles wholly past the end of the sequence are skipped.
		GLA_OUTPUT(o, V, lq, K, hn, lA, lv, 1)    // o: rows t, columns j of V
		GLA_OUTPUT(dq, K, ldo, V, lhT, ldA, lk, 1) // dq: rows t, columns i of K
		GLA_OUTPUT(dk, K, lv, V, ldhT, ldA, lq, 0) // dk: rows s, columns i of K
		GLA_OUTPUT(dv, V, lk, K, dhn, lA, ldo, 0)  // dv: rows s, columns j of V
		barrier(STAGED_FENCE); // the next chunk's staging overwrites this one's
	}
#undef DEC
}
// EVOLVE-BLOCK-END
