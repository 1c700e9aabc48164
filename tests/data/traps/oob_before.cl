// Correct output, plus one write 1 MiB before the start of y: beyond any
// guard zone, so it must fault (or be caught) rather than land in the heap.
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);

	if (i < n)
		y[i] = 2.0f * x[i] + 1.0f;
	if (i == 0)
		y[-(1 << 18)] = 0.0f;
}
