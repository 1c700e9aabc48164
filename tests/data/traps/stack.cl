// A private array far larger than a PoCL work-group thread's stack.
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);
	volatile float big[4 << 20];

	big[(i * 7919) & ((4 << 20) - 1)] = x[i];
	if (i < n)
		y[i] = 2.0f * big[(i * 7919) & ((4 << 20) - 1)] + 1.0f;
}
