// The reference: one work-item per element of C, a plain dot product over K.
// C = A * B, row-major fp32: A is M x K, B is K x N, C is M x N.
__kernel void matmul_ref(__global const float *A, __global const float *B, __global float *C,
                         int M, int N, int K)
{
	int col = get_global_id(0), row = get_global_id(1);
	float sum = 0.0f;

	if (col >= N || row >= M)
		return;
	for (int k = 0; k < K; k++)
		sum += A[(size_t)row * K + k] * B[(size_t)k * N + col];
	C[(size_t)row * N + col] = sum;
}
