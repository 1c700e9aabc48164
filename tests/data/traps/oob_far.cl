// Correct output, plus one write 4 MiB past the end of y: beyond any guard
// zone, so it must fault (or be caught) rather than land in the heap.
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);

	if (i < n)
		y[i] = 2.0f * x[i] + 1.0f;
	if (i == n - 1)
		y[i + (1 << 20)] = 0.0f;
}
