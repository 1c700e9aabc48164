/*
 * host_ref.h - a host reference for the chunk_gla example, in double.
 *
 * Simple gated linear attention (one log decay g_gamma[h] < 0 per head),
 * forward and backward, computed straight from the definitions with double
 * accumulation (O(T^2) per sequence: for the small shapes of the tests).
 * Layouts are those of examples/chunk_gla.yaml: q, k are [B,T,H,K] and
 * v, dout, o, dv are [B,T,H,V], row-major; dq, dk are [B,T,H,K].
 */
#ifndef KCTL_GLA_HOST_REF_H
#define KCTL_GLA_HOST_REF_H

/*
 * Writes o, dq, dk and dv (rounded to float) for the given inputs, with
 * scale = K^-0.5.  Returns 0, or -1 when a size is not positive or memory
 * runs out (the outputs are then untouched).
 */
int gla_host_ref(int B, int T, int H, int K, int V, const float *q, const float *k, const float *v,
		 const float *g_gamma, const float *dout, float *o, float *dq, float *dk,
		 float *dv);

#endif
