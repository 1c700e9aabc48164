// Correct, written differently from the reference.
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);

	if (i < n)
		y[i] = fma(x[i], 2.0f, 1.0f);
}
