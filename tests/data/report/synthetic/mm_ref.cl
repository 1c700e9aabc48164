// The reference of the synthetic report sessions: one element of C per work-item.
__kernel void mm_ref(__global const float *A, __global const float *B, __global float *C, int M,
		     int N, int K)
{
	const int j = get_global_id(0), i = get_global_id(1);
	float s = 0.0f;

	for (int k = 0; k < K; k++)
		s += A[i * K + k] * B[k * N + j];
	C[i * N + j] = s;
}
