// Never ends.
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);

	while (1)
		y[i] = y[i] + 1.0f;
}
