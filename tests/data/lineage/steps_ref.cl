// The reference: the template's slowest point, written plainly.
__kernel void steps_ref(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);
	float a;

	if (i >= n)
		return;
	a = x[i];
	for (int k = 0; k < 1024; k++)
		a = fma(a, 0.999f, 0.0005f);
	y[i] = 2.0f * x[i] + 1.0f + (a > 1e30f ? 1.0f : 0.0f);
}
