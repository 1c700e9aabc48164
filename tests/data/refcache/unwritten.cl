// Leaves the last element unwritten: must be unwritten_output, with or without the cache.
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);

	if (i < n - 1)
		y[i] = 2.0f * x[i] + 1.0f;
}
