// C = A * B, row-major fp32, A is M x K, B is K x N: one element of C per
// work-item, the naive way.  The model proposer's tests and benchmark start
// here: the tuner can only move the work-group (WX, WY); computing a block
// of C per work-item (RM rows, CW columns) takes a rewrite of the body.
// The launch plan reads RM and CW, so a rewrite that changes them changes
// its own launch.

// EVOLVE-BLOCK-START params
#define WX 8            // work-group size along N
#define WY 8            // work-group size along M
#define RM 1            // rows of C per work-item
#define CW 1            // columns of C per work-item
// EVOLVE-BLOCK-END

__kernel __attribute__((reqd_work_group_size(WX, WY, 1)))
void mm(__global const float *restrict A, __global const float *restrict B,
	__global float *restrict C, int M, int N, int K)
{
	// EVOLVE-BLOCK-START body
	const int j = get_global_id(0), i = get_global_id(1);
	float s = 0.0f;

	if (i >= M || j >= N)
		return;
	for (int k = 0; k < K; k++)
		s += A[i * K + k] * B[k * N + j];
	C[i * N + j] = s;
	// EVOLVE-BLOCK-END
}
