// The template of the synthetic report sessions (tests/cli/report_data.py):
// C = A * B, row-major fp32, TM rows of C per work-item.  Small on purpose,
// as every variant of a 10,000-variant session stores its whole source.
// EVOLVE-BLOCK-START main
#ifndef TM
#define TM 1            // rows of C per work-item
#endif
#ifndef WX
#define WX 8            // work-group size along N
#endif
#ifndef WY
#define WY 1            // work-group size along M
#endif
#ifndef KU
#define KU 1            // K unroll
#endif
__kernel __attribute__((reqd_work_group_size(WX, WY, 1)))
void mm(__global const float *restrict A, __global const float *restrict B,
	__global float *restrict C, int M, int N, int K)
{
	const int j = get_global_id(0), i0 = get_global_id(1) * TM;
	float acc[TM];

	for (int r = 0; r < TM; r++)
		acc[r] = 0.0f;
	if (j >= N)
		return;
#pragma unroll KU
	for (int k = 0; k < K; k++) {
		const float b = B[k * N + j];

		for (int r = 0; r < TM; r++)
			if (i0 + r < M)
				acc[r] = fma(A[(i0 + r) * K + k], b, acc[r]);
	}
	for (int r = 0; r < TM; r++)
		if (i0 + r < M)
			C[(i0 + r) * N + j] = acc[r];
}
// EVOLVE-BLOCK-END
