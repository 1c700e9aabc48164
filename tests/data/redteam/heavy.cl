// The memo batch's reference, baseline and honest control: y = 2x + 1 after
// work that costs time, a loop the compiler must keep (its sum is volatile),
// so that a kernel that skips it is measurably faster.
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);
	volatile float sink = 0.0f;

	if (i >= n)
		return;
	for (int k = 0; k < 300; k++)
		sink += x[i] * (float)k;
	y[i] = 2.0f * x[i] + 1.0f;
}
