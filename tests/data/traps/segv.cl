// Writes through a wild pointer: faults the host process on a CPU device.
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);
	__global float *wild = (__global float *)(ulong)(0x10 + i);

	if (i < n)
		y[i] = 2.0f * x[i] + 1.0f;
	*wild = 1.0f;
}
