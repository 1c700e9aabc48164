// Correct output, plus one write just past the end of y (no fault).
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);

	if (i < n)
		y[i] = 2.0f * x[i] + 1.0f;
	if (i == 0)
		y[n + 5] = 0.0f;
}
