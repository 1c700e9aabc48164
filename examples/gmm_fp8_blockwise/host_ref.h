/*
 * host_ref.h - the host reference of gmm_fp8_blockwise, in C from the
 * definitions (see reference.cl for the semantics and the storage).
 *
 *   out[m, n] = sum_k decode(lhs[m, k]) * lhs_scale[m/128, k/128]
 *                   * decode(rhs[g, k, n]) * rhs_scale[g, k/128, n/128]
 *
 * with g the group that owns row m. FP8 arrays are byte arrays packed
 * little-endian four bytes to a uint32_t; scales are one float per
 * 128 x 128 block (block counts rounded up). Sums are taken in double.
 */
#ifndef GMM_FP8_HOST_REF_H
#define GMM_FP8_HOST_REF_H

#include <stddef.h>
#include <stdint.h>

/* The value of FP8 E4M3 code (0..255) from the format's definition:
 * (-1)^S 2^(E-7) (1 + M/8) for E > 0, (-1)^S 2^-6 (M/8) for E == 0, NaN for
 * 0x7F and 0xFF. Every value is exact in a float. */
double e4m3_ref_decode(unsigned code);

/* The input convention of the problem: a NaN code reads as code 0 (+0). */
unsigned e4m3_ref_sanitize(unsigned code);

/* Byte i of a byte array packed little-endian four to a uint32_t. */
unsigned fp8_ref_byte(const uint32_t *p, size_t i);

/* start[0..G]: the first row of each group, start[G] == M. Groups own rows
 * in order, group_sizes[g] rows each (negative as 0), clamped at M; the last
 * group also owns every row left. */
void gmm_fp8_ref_bounds(const int32_t *group_sizes, int G, int M, int *start);

/* out[M*N] from lhs (M*K bytes), lhs_scale (ceil(M/128) * ceil(K/128)),
 * rhs (G*K*N bytes), rhs_scale (G * ceil(K/128) * ceil(N/128)) and
 * group_sizes[G], accumulating in double and rounding once to float. */
void gmm_fp8_host_ref(const uint32_t *lhs, const float *lhs_scale, const uint32_t *rhs,
		      const float *rhs_scale, const int32_t *group_sizes, float *out, int M, int K,
		      int N, int G);

#endif
