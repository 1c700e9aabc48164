// Each work-group also scribbles over the first element of the next
// group's range; whether the owner overwrites it depends on which thread
// gets there first.
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);

	if (i < n)
		y[i] = 2.0f * x[i] + 1.0f;
	if (get_local_id(0) == 0 && i + 64 < n)
		y[i + 64] = -1.0f;
}
