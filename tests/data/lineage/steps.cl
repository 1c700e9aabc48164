// y = 2x + 1 after (4 << S) + (4 << T) dependent steps per element that
// change nothing (their result is only compared with a bound it never
// reaches): a step down in the larger of S and T about halves the kernel's
// time, a margin no machine's noise can hide.
// EVOLVE-BLOCK-START
#ifndef S
#define S 7
#endif
#ifndef T
#define T 7
#endif
__kernel void steps(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);
	float a;

	if (i >= n)
		return;
	a = x[i];
	for (int k = 0; k < (4 << S) + (4 << T); k++)
		a = fma(a, 0.999f, 0.0005f);
	y[i] = fma(x[i], 2.0f, 1.0f) + (a > 1e30f ? 1.0f : 0.0f);
}
// EVOLVE-BLOCK-END
