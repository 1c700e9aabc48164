/*
 * host_ref.h - the matmul example's reference on the host.
 *
 * C = A * B for row-major fp32 matrices: A is M x K, B is K x N, C is M x N.
 * Each element is accumulated in double precision and rounded to float once,
 * so it is the exact product to within one float rounding (for K up to about
 * 2^29 with inputs of modest range), whatever order a kernel sums in.
 */
#ifndef KCTL_EXAMPLE_MATMUL_HOST_REF_H
#define KCTL_EXAMPLE_MATMUL_HOST_REF_H

/* M, N, K >= 0; A holds M*K floats, B K*N, C M*N (written). */
void matmul_host(int M, int N, int K, const float *A, const float *B, float *C);

#endif
