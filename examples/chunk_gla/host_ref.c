/*
 * host_ref.c - chunk_gla's host reference: the definitions, in double.
 *
 * For one sequence (b, h), with g = g_gamma[h] and scale = K^-0.5:
 *
 *   o_t  = scale * sum_{s<=t} exp(g (t-s)) (q_t . k_s) v_s
 *
 * and, for L = sum_t o_t . dout_t,
 *
 *   dq_t = scale * sum_{s<=t} exp(g (t-s)) (dout_t . v_s) k_s
 *   dk_s = scale * sum_{t>=s} exp(g (t-s)) (dout_t . v_s) q_t
 *   dv_s = scale * sum_{t>=s} exp(g (t-s)) (q_t . k_s) dout_t
 *
 * The two scores P[t][s] = q_t . k_s and D[t][s] = dout_t . v_s are formed
 * once per pair s <= t; everything is accumulated in double and rounded to
 * float at the end.
 */
#include "host_ref.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

static size_t at(int b, int t, int h, int i, int T, int H, int D)
{
	return (((size_t)b * T + t) * H + h) * D + i;
}

int gla_host_ref(int B, int T, int H, int K, int V, const float *q, const float *k, const float *v,
		 const float *g_gamma, const float *dout, float *o, float *dq, float *dk, float *dv)
{
	double *ao, *aq, *ak, *av;
	double scale;

	if (B <= 0 || T <= 0 || H <= 0 || K <= 0 || V <= 0)
		return -1;
	ao = calloc((size_t)T * V, sizeof(*ao));
	aq = calloc((size_t)T * K, sizeof(*aq));
	ak = calloc((size_t)T * K, sizeof(*ak));
	av = calloc((size_t)T * V, sizeof(*av));
	if (!ao || !aq || !ak || !av) {
		free(ao);
		free(aq);
		free(ak);
		free(av);
		return -1;
	}
	scale = 1.0 / sqrt((double)K);
	for (int b = 0; b < B; b++) {
		for (int h = 0; h < H; h++) {
			double g = g_gamma[h];

			for (size_t i = 0; i < (size_t)T * V; i++)
				ao[i] = av[i] = 0;
			for (size_t i = 0; i < (size_t)T * K; i++)
				aq[i] = ak[i] = 0;
			for (int t = 0; t < T; t++) {
				for (int s = 0; s <= t; s++) {
					double w = scale * exp(g * (t - s)), p = 0, d = 0;

					for (int i = 0; i < K; i++)
						p += (double)q[at(b, t, h, i, T, H, K)] *
						     k[at(b, s, h, i, T, H, K)];
					for (int j = 0; j < V; j++)
						d += (double)dout[at(b, t, h, j, T, H, V)] *
						     v[at(b, s, h, j, T, H, V)];
					for (int j = 0; j < V; j++) {
						ao[(size_t)t * V + j] +=
							w * p * v[at(b, s, h, j, T, H, V)];
						av[(size_t)s * V + j] +=
							w * p * dout[at(b, t, h, j, T, H, V)];
					}
					for (int i = 0; i < K; i++) {
						aq[(size_t)t * K + i] +=
							w * d * k[at(b, s, h, i, T, H, K)];
						ak[(size_t)s * K + i] +=
							w * d * q[at(b, t, h, i, T, H, K)];
					}
				}
			}
			for (int t = 0; t < T; t++) {
				for (int j = 0; j < V; j++) {
					o[at(b, t, h, j, T, H, V)] = (float)ao[(size_t)t * V + j];
					dv[at(b, t, h, j, T, H, V)] = (float)av[(size_t)t * V + j];
				}
				for (int i = 0; i < K; i++) {
					dq[at(b, t, h, i, T, H, K)] = (float)aq[(size_t)t * K + i];
					dk[at(b, t, h, i, T, H, K)] = (float)ak[(size_t)t * K + i];
				}
			}
		}
	}
	free(ao);
	free(aq);
	free(ak);
	free(av);
	return 0;
}
