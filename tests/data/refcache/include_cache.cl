// Tries: to read the session's reference cache (its timing seeds, which give
// away the timing inputs) at compile time: @CACHE_PATH@ is replaced by the
// test with the path of the cache's timing-seeds file.
// Must: compile_error (refused by the screen, or the file out of the
// compiler's reach in the sandbox); the seeds appear nowhere in its result.
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);
	ulong seeds[3] = {
#include "@CACHE_PATH@"
	};

	if (i < n)
		y[i] = 2.0f * x[i] + 1.0f + (float)(seeds[0] & 1);
}
