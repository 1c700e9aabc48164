// The baseline: the plain, correct kernel (the reference's own code), so that
// every variant has a vs_base.  Must be ok with performance figures.
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);

	if (i < n)
		y[i] = 2.0f * x[i] + 1.0f;
}
