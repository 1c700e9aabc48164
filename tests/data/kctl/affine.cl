// y = 2x + 1, U elements per work-item, LS work-items per group.
// EVOLVE-BLOCK-START
#ifndef LS
#define LS 64
#endif
#ifndef U
#define U 1
#endif
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int base = get_global_id(0) * U;

	for (int j = 0; j < U; j++)
		if (base + j < n)
			y[base + j] = fma(x[base + j], 2.0f, 1.0f);
}
// EVOLVE-BLOCK-END
