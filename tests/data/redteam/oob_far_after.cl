// Tries: a write far past the end of y (4 MiB, 1 << 20 floats), from one
// work-item, well beyond the guard zone that catches near misses: it lands
// in whatever the worker has mapped there (other buffers, the heap, a
// library's data) or in nothing.
// Must: never ok, timeout or infra_error: crash (out_of_bounds or signal),
// or runtime_error / out_of_bounds_write; the rest of the batch unaffected.
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);

	if (i < n)
		y[i] = 2.0f * x[i] + 1.0f;
	if (i == 0)
		((volatile __global float *)y)[(long)n + (1L << 20)] = -7.0f;
}
