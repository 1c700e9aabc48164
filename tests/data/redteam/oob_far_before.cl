// Tries: a write 1 MiB (1 << 18 floats) before the start of y, from one
// work-item: far beyond the guard zone in front of the buffer.
// Must: never ok, timeout or infra_error: crash (out_of_bounds or signal),
// or runtime_error / out_of_bounds_write; the rest of the batch unaffected.
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);

	if (i < n)
		y[i] = 2.0f * x[i] + 1.0f;
	if (i == 0)
		((volatile __global float *)y)[-(1L << 18)] = -7.0f;
}
