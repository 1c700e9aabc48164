/*
 * host_ref.c - the matmul example's reference on the host (see host_ref.h).
 */
#include "host_ref.h"

#include <stddef.h>

void matmul_host(int M, int N, int K, const float *A, const float *B, float *C)
{
	for (int i = 0; i < M; i++) {
		for (int j = 0; j < N; j++) {
			double sum = 0.0;

			for (int k = 0; k < K; k++)
				sum += (double)A[(size_t)i * K + k] * (double)B[(size_t)k * N + j];
			C[(size_t)i * N + j] = (float)sum;
		}
	}
}
