// Right answer, but scribbles over its read-only input.
__kernel void affine(__global float *x, __global float *y, int n)
{
	int i = get_global_id(0);

	if (i < n) {
		y[i] = 2.0f * x[i] + 1.0f;
		x[i] = 0.0f;
	}
}
