// Right: must be ok, with or without the cache.
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);

	if (i < n)
		y[i] = x[i] + x[i] + 1.0f;
}
