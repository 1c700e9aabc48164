// C = A * B for row-major fp32 matrices: A is M x K, B is K x N, C is M x N.
//
// Each work-item computes TM rows by VN columns of C, holding them in
// float-vector registers; a work-group is WX work-items along a row.
// The launch geometry in the problem spec reads TM, VN and WX from here,
// so a variant that changes them changes its own launch.

// EVOLVE-BLOCK-START
#ifndef TM
#define TM 4            // rows of C per work-item
#endif
#ifndef VN
#define VN 8            // columns of C per work-item (a float vector)
#endif
#ifndef WX
#define WX 8            // work-group size along N
#endif
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define floatV CAT(float, VN)
#define vloadV CAT(vload, VN)
#define vstoreV CAT(vstore, VN)

__kernel void matmul(__global const float *A, __global const float *B, __global float *C,
                     int M, int N, int K)
{
	int col = get_global_id(0) * VN;
	int row = get_global_id(1) * TM;
	floatV acc[TM];

	if (col >= N || row >= M)
		return;
	for (int i = 0; i < TM; i++)
		acc[i] = (floatV)(0.0f);
	for (int k = 0; k < K; k++) {
		floatV b = vloadV(0, B + (size_t)k * N + col);

		for (int i = 0; i < TM; i++)
			acc[i] = fma((floatV)(A[(size_t)(row + i) * K + k]), b, acc[i]);
	}
	for (int i = 0; i < TM; i++)
		vstoreV(acc[i], 0, C + (size_t)(row + i) * N + col);
}
// EVOLVE-BLOCK-END
