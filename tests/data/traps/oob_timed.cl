// Behaves in the checks, then writes past the end of y once timed: the
// damage must be blamed on this kernel alone.
global int launches;

__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);

	if (i == 0)
		atomic_inc(&launches);
	if (i < n)
		y[i] = 2.0f * x[i] + 1.0f;
	if (i == 0 && launches > 30)
		y[n + 2] = 0.0f;
}
