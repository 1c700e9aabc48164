// The reference for chunk_gla: simple gated linear attention, forward and
// backward, in its naive recurrent form, sequential over time.
//
// Layouts: q, k, dq, dk are [B,T,H,K]; v, dout, o, dv are [B,T,H,V];
// g_gamma is [H], the per-head log decay g < 0; scale = K^-0.5.
//
// Forward.  With the state S_t = sum_{s<=t} exp(g (t-s)) k_s v_s^T  (K x V),
//     S_t = exp(g) S_{t-1} + k_t v_t^T,   o_t = scale * S_t^T q_t.
// Backward, for L = sum_t o_t . dout_t (the exact derivatives):
//     dq_t = scale * sum_{s<=t} exp(g (t-s)) (dout_t . v_s) k_s = scale * S_t dout_t
//     dk_s = scale * sum_{t>=s} exp(g (t-s)) (dout_t . v_s) q_t = scale * R_s v_s
//     dv_s = scale * sum_{t>=s} exp(g (t-s)) (q_t . k_s) dout_t = scale * R_s^T k_s
// with the reverse state R_s = sum_{t>=s} exp(g (t-s)) q_t dout_t^T  (K x V),
//     R_s = exp(g) R_{s+1} + q_s dout_s^T.
//
// gla_ref_cols: one work-item per (v-column j, b*H+h) keeps column j of S,
// then of R, in registers: o[:, j] forward in time, then dv[:, j] backward.
// gla_ref_rows: one work-item per (k-row i, b*H+h) keeps row i of S, then of
// R: dq[:, i] forward in time, then dk[:, i] backward.
//
// A work-item holds at most REF_MAXD state entries; a larger K or V writes
// NaN, so the problem fails loudly instead of silently.

#define REF_MAXD 256

static size_t ref_at(int b, int t, int h, int i, int T, int H, int D)
{
	return (((size_t)b * T + t) * H + h) * D + i;
}

__kernel void gla_ref_cols(__global const float *q, __global const float *k,
                           __global const float *v, __global const float *g_gamma,
                           __global const float *dout, __global float *o, __global float *dv,
                           int B, int T, int H, int K, int V)
{
	int j = get_global_id(0), bh = get_global_id(1);
	float S[REF_MAXD];

	if (j >= V || bh >= B * H)
		return;
	int b = bh / H, h = bh % H;
	float scale = 1.0f / sqrt((float)K), a = exp(g_gamma[h]);

	if (K > REF_MAXD) {
		for (int t = 0; t < T; t++)
			o[ref_at(b, t, h, j, T, H, V)] = dv[ref_at(b, t, h, j, T, H, V)] = NAN;
		return;
	}
	for (int i = 0; i < K; i++)
		S[i] = 0.0f;
	for (int t = 0; t < T; t++) {
		float vt = v[ref_at(b, t, h, j, T, H, V)], acc = 0.0f;

		for (int i = 0; i < K; i++) {
			S[i] = a * S[i] + k[ref_at(b, t, h, i, T, H, K)] * vt;
			acc += q[ref_at(b, t, h, i, T, H, K)] * S[i];
		}
		o[ref_at(b, t, h, j, T, H, V)] = scale * acc;
	}
	for (int i = 0; i < K; i++)
		S[i] = 0.0f;
	for (int t = T - 1; t >= 0; t--) {
		float dt = dout[ref_at(b, t, h, j, T, H, V)], acc = 0.0f;

		for (int i = 0; i < K; i++) {
			S[i] = a * S[i] + q[ref_at(b, t, h, i, T, H, K)] * dt;
			acc += k[ref_at(b, t, h, i, T, H, K)] * S[i];
		}
		dv[ref_at(b, t, h, j, T, H, V)] = scale * acc;
	}
}

__kernel void gla_ref_rows(__global const float *q, __global const float *k,
                           __global const float *v, __global const float *g_gamma,
                           __global const float *dout, __global float *dq, __global float *dk,
                           int B, int T, int H, int K, int V)
{
	int i = get_global_id(0), bh = get_global_id(1);
	float S[REF_MAXD];

	if (i >= K || bh >= B * H)
		return;
	int b = bh / H, h = bh % H;
	float scale = 1.0f / sqrt((float)K), a = exp(g_gamma[h]);

	if (V > REF_MAXD) {
		for (int t = 0; t < T; t++)
			dq[ref_at(b, t, h, i, T, H, K)] = dk[ref_at(b, t, h, i, T, H, K)] = NAN;
		return;
	}
	for (int j = 0; j < V; j++)
		S[j] = 0.0f;
	for (int t = 0; t < T; t++) {
		float kt = k[ref_at(b, t, h, i, T, H, K)], acc = 0.0f;

		for (int j = 0; j < V; j++) {
			S[j] = a * S[j] + kt * v[ref_at(b, t, h, j, T, H, V)];
			acc += S[j] * dout[ref_at(b, t, h, j, T, H, V)];
		}
		dq[ref_at(b, t, h, i, T, H, K)] = scale * acc;
	}
	for (int j = 0; j < V; j++)
		S[j] = 0.0f;
	for (int t = T - 1; t >= 0; t--) {
		float qt = q[ref_at(b, t, h, i, T, H, K)], acc = 0.0f;

		for (int j = 0; j < V; j++) {
			S[j] = a * S[j] + qt * dout[ref_at(b, t, h, j, T, H, V)];
			acc += S[j] * v[ref_at(b, t, h, j, T, H, V)];
		}
		dk[ref_at(b, t, h, i, T, H, K)] = scale * acc;
	}
}
