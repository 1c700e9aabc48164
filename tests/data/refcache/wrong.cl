// Wrong at one element in 257: must be wrong_values, with or without the cache.
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);

	if (i < n)
		y[i] = 2.0f * x[i] + (i % 257 == 100 ? 1.5f : 1.0f);
}
