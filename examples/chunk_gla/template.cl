// chunk_gla: simple gated linear attention, forward and backward, chunked.
//
// Layouts: q, k, dq, dk are [B,T,H,K]; v, dout, o, dv are [B,T,H,V];
// g_gamma is [H] (log decay g < 0 per head); scale = K^-0.5.  K and V are
// multiples of the vector widths (the spec's constraints say so).
//
// The sequence of one (b, h) is cut into NT = ceil(T / CHUNK) chunks; chunk n
// holds positions t0 = n*CHUNK .. t1-1, t1 = min(t0 + CHUNK, T), L = t1 - t0.
//
// States (kernel gla_state, sequential over chunks, parallel over state tiles):
//   h_n  = sum_{s < t0} exp(g (t0-1-s)) k_s v_s^T      (K x V; h_0 = 0)
//   h_{n+1} = exp(g CHUNK) h_n + sum_{s in n} exp(g (t1-1-s)) k_s v_s^T
//   dh_n = sum_{t >= t1} exp(g (t-t1)) q_t dout_t^T     (K x V; dh_{NT-1} = 0)
//   dh_{n-1} = exp(g L) dh_n + sum_{t in n} exp(g (t-t0)) q_t dout_t^T
// Both go to scratch, one K x V matrix per chunk: hs[b,h,n,:,:], dhs[b,h,n,:,:].
//
// Chunk n (kernel gla_chunk, one work-group per chunk), with the decayed,
// causally masked intra-chunk scores (local positions 0 <= s <= t < L)
//   A[t][s]  = exp(g (t-s)) q_t . k_s,    dA[t][s] = exp(g (t-s)) dout_t . v_s:
//   o_t  = scale * (exp(g (t-t0+1)) h_n^T q_t     + sum_{s<=t} A[t][s] v_s)
//   dq_t = scale * (exp(g (t-t0+1)) h_n dout_t    + sum_{s<=t} dA[t][s] k_s)
//   dk_s = scale * (exp(g (t1-s)) dh_n v_s        + sum_{t>=s} dA[t][s] q_t)
//   dv_s = scale * (exp(g (t1-s)) dh_n^T k_s      + sum_{t>=s} A[t][s] dout_t)
// The work-group keeps A, dA, h_n^T and dh_n^T in local memory; each work-item
// computes tiles of TR rows by VW columns of the outputs.

// EVOLVE-BLOCK-START
#ifndef CHUNK
#define CHUNK 32        // chunk length (positions per chunk)
#endif
#ifndef SVW
#define SVW 4           // gla_state: state columns per work-item (a float vector)
#endif
#ifndef SKT
#define SKT 4           // gla_state: state rows per work-item
#endif
#ifndef VW
#define VW 4            // gla_chunk: output columns per work-item (a float vector)
#endif
#ifndef TR
#define TR 2            // gla_chunk: output rows per work-item
#endif
#ifndef WG
#define WG 64           // gla_chunk: work-group size
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

// Global size [V/SVW, K/SKT, 2*B*H]: z < B*H runs h forward, the rest dh backward.
__kernel void gla_state(__global const float *q, __global const float *k,
                        __global const float *v, __global const float *g_gamma,
                        __global const float *dout, __global float *hs, __global float *dhs,
                        int B, int T, int H, int K, int V)
{
	int cv = get_global_id(0) * SVW, kr = get_global_id(1) * SKT, z = get_global_id(2);

	if (cv >= V || kr >= K || z >= 2 * B * H)
		return;
	int bh = z % (B * H), rev = z / (B * H), b = bh / H, h = bh % H;
	int NT = (T + CHUNK - 1) / CHUNK;
	float g = g_gamma[h];
	__global float *st = (rev ? dhs : hs) + (size_t)bh * NT * K * V;
	floatS acc[SKT];

	for (int i = 0; i < SKT; i++)
		acc[i] = (floatS)(0.0f);
	if (!rev) {
		for (int n = 0;; n++) {
			for (int i = 0; i < SKT; i++)
				vstoreS(acc[i], 0, st + ((size_t)n * K + kr + i) * V + cv);
			if (n + 1 >= NT)
				break;
			int t0 = n * CHUNK, t1 = t0 + CHUNK;
			float dc = exp(g * CHUNK);

			for (int i = 0; i < SKT; i++)
				acc[i] *= dc;
			for (int s = t0; s < t1; s++) {
				floatS vs = vloadS(0, v + gla_at(b, s, h, cv, T, H, V)) *
				            exp(g * (t1 - 1 - s));

				for (int i = 0; i < SKT; i++)
					acc[i] = fma((floatS)(k[gla_at(b, s, h, kr + i, T, H, K)]), vs,
					             acc[i]);
			}
		}
	} else {
		for (int n = NT - 1;; n--) {
			for (int i = 0; i < SKT; i++)
				vstoreS(acc[i], 0, st + ((size_t)n * K + kr + i) * V + cv);
			if (n == 0)
				break;
			int t0 = n * CHUNK, t1 = min(t0 + CHUNK, T);
			float dc = exp(g * (t1 - t0));

			for (int i = 0; i < SKT; i++)
				acc[i] *= dc;
			for (int t = t0; t < t1; t++) {
				floatS ds = vloadS(0, dout + gla_at(b, t, h, cv, T, H, V)) *
				            exp(g * (t - t0));

				for (int i = 0; i < SKT; i++)
					acc[i] = fma((floatS)(q[gla_at(b, t, h, kr + i, T, H, K)]), ds,
					             acc[i]);
			}
		}
	}
}

// Global size [WG, NT, B*H], local [WG, 1, 1]: one work-group per chunk.
// lhT and ldhT are K*V floats of local memory each.
__kernel void gla_chunk(__global const float *q, __global const float *k,
                        __global const float *v, __global const float *g_gamma,
                        __global const float *dout, __global const float *hs,
                        __global const float *dhs, __global float *o, __global float *dq,
                        __global float *dk, __global float *dv, int B, int T, int H, int K,
                        int V, __local float *lhT, __local float *ldhT)
{
	__local float lA[CHUNK * CHUNK], ldA[CHUNK * CHUNK], dec[CHUNK + 1];
	int lid = get_local_id(0), n = get_group_id(1), bh = get_group_id(2);
	int b = bh / H, h = bh % H, NT = (T + CHUNK - 1) / CHUNK;
	int t0 = n * CHUNK, L = min(CHUNK, T - t0);
	float g = g_gamma[h], scale = 1.0f / sqrt((float)K);
	__global const float *hn = hs + ((size_t)bh * NT + n) * K * V;
	__global const float *dhn = dhs + ((size_t)bh * NT + n) * K * V;

	// Decay table and the transposed states.
	for (int i = lid; i <= CHUNK; i += WG)
		dec[i] = exp(g * i);
	for (int e = lid; e < K * V; e += WG) {
		int kk = e / V, j = e % V;

		lhT[j * K + kk] = hn[e];
		ldhT[j * K + kk] = dhn[e];
	}
	// Intra-chunk scores, zero above the diagonal and past the end of the sequence.
	for (int e = lid; e < CHUNK * CHUNK; e += WG) {
		int t = e / CHUNK, s = e % CHUNK;
		float p = 0.0f, d = 0.0f;

		if (s <= t && t < L) {
			for (int i = 0; i < K; i++)
				p = fma(q[gla_at(b, t0 + t, h, i, T, H, K)],
				        k[gla_at(b, t0 + s, h, i, T, H, K)], p);
			for (int j = 0; j < V; j++)
				d = fma(dout[gla_at(b, t0 + t, h, j, T, H, V)],
				        v[gla_at(b, t0 + s, h, j, T, H, V)], d);
			p *= dec[t - s];
			d *= dec[t - s];
		}
		lA[e] = p;
		ldA[e] = d;
	}
	barrier(CLK_LOCAL_MEM_FENCE);

	// Row tiles past the end of the sequence load row L-1 and store nothing.
	int nrt = CHUNK / TR;

	// o: rows t, columns of V.
	for (int task = lid; task < nrt * (V / VW); task += WG) {
		int r0 = (task % nrt) * TR, jc = (task / nrt) * VW;
		floatV acc[TR];

		if (r0 >= L)
			continue;
		for (int r = 0; r < TR; r++)
			acc[r] = (floatV)(0.0f);
		for (int i = 0; i < K; i++) {
			floatV hv = vloadV(0, hn + (size_t)i * V + jc);

			for (int r = 0; r < TR; r++)
				acc[r] = fma((floatV)(q[gla_at(b, t0 + min(r0 + r, L - 1), h, i, T, H,
				                                K)]),
				             hv, acc[r]);
		}
		for (int r = 0; r < TR; r++)
			acc[r] *= dec[min(r0 + r, L - 1) + 1];
		for (int s = 0; s < min(r0 + TR, L); s++) {
			floatV vv = vloadV(0, v + gla_at(b, t0 + s, h, jc, T, H, V));

			for (int r = 0; r < TR; r++)
				acc[r] = fma((floatV)(lA[(r0 + r) * CHUNK + s]), vv, acc[r]);
		}
		for (int r = 0; r < TR && r0 + r < L; r++)
			vstoreV(scale * acc[r], 0, o + gla_at(b, t0 + r0 + r, h, jc, T, H, V));
	}
	// dq: rows t, columns of K.
	for (int task = lid; task < nrt * (K / VW); task += WG) {
		int r0 = (task % nrt) * TR, kc = (task / nrt) * VW;
		floatV acc[TR];

		if (r0 >= L)
			continue;
		for (int r = 0; r < TR; r++)
			acc[r] = (floatV)(0.0f);
		for (int j = 0; j < V; j++) {
			floatV hv = vloadV(0, lhT + j * K + kc);

			for (int r = 0; r < TR; r++)
				acc[r] = fma((floatV)(dout[gla_at(b, t0 + min(r0 + r, L - 1), h, j, T,
				                                   H, V)]),
				             hv, acc[r]);
		}
		for (int r = 0; r < TR; r++)
			acc[r] *= dec[min(r0 + r, L - 1) + 1];
		for (int s = 0; s < min(r0 + TR, L); s++) {
			floatV kv = vloadV(0, k + gla_at(b, t0 + s, h, kc, T, H, K));

			for (int r = 0; r < TR; r++)
				acc[r] = fma((floatV)(ldA[(r0 + r) * CHUNK + s]), kv, acc[r]);
		}
		for (int r = 0; r < TR && r0 + r < L; r++)
			vstoreV(scale * acc[r], 0, dq + gla_at(b, t0 + r0 + r, h, kc, T, H, K));
	}
	// dk: rows s, columns of K.
	for (int task = lid; task < nrt * (K / VW); task += WG) {
		int r0 = (task % nrt) * TR, kc = (task / nrt) * VW;
		floatV acc[TR];

		if (r0 >= L)
			continue;
		for (int r = 0; r < TR; r++)
			acc[r] = (floatV)(0.0f);
		for (int j = 0; j < V; j++) {
			floatV dhv = vloadV(0, ldhT + j * K + kc);

			for (int r = 0; r < TR; r++)
				acc[r] = fma((floatV)(v[gla_at(b, t0 + min(r0 + r, L - 1), h, j, T, H,
				                                V)]),
				             dhv, acc[r]);
		}
		for (int r = 0; r < TR; r++)
			acc[r] *= dec[L - min(r0 + r, L - 1)];
		for (int t = r0; t < L; t++) {
			floatV qv = vloadV(0, q + gla_at(b, t0 + t, h, kc, T, H, K));

			for (int r = 0; r < TR; r++)
				acc[r] = fma((floatV)(ldA[t * CHUNK + r0 + r]), qv, acc[r]);
		}
		for (int r = 0; r < TR && r0 + r < L; r++)
			vstoreV(scale * acc[r], 0, dk + gla_at(b, t0 + r0 + r, h, kc, T, H, K));
	}
	// dv: rows s, columns of V.
	for (int task = lid; task < nrt * (V / VW); task += WG) {
		int r0 = (task % nrt) * TR, jc = (task / nrt) * VW;
		floatV acc[TR];

		if (r0 >= L)
			continue;
		for (int r = 0; r < TR; r++)
			acc[r] = (floatV)(0.0f);
		for (int i = 0; i < K; i++) {
			floatV dhv = vloadV(0, dhn + (size_t)i * V + jc);

			for (int r = 0; r < TR; r++)
				acc[r] = fma((floatV)(k[gla_at(b, t0 + min(r0 + r, L - 1), h, i, T, H,
				                                K)]),
				             dhv, acc[r]);
		}
		for (int r = 0; r < TR; r++)
			acc[r] *= dec[L - min(r0 + r, L - 1)];
		for (int t = r0; t < L; t++) {
			floatV dov = vloadV(0, dout + gla_at(b, t0 + t, h, jc, T, H, V));

			for (int r = 0; r < TR; r++)
				acc[r] = fma((floatV)(lA[t * CHUNK + r0 + r]), dov, acc[r]);
		}
		for (int r = 0; r < TR && r0 + r < L; r++)
			vstoreV(scale * acc[r], 0, dv + gla_at(b, t0 + r0 + r, h, jc, T, H, V));
	}
}
// EVOLVE-BLOCK-END
