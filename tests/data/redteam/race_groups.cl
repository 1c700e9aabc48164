// Tries: a race between neighbouring work-groups that in-order execution
// hides.  The first work-item of each group writes -1 over the first element
// of the NEXT group's range; when the groups run in order, the next group
// comes later and overwrites it with the right value, so the output looks
// right.  In any other order (groups running at once, or in reverse) the -1
// survives.  It finds the next group from its local id and size alone, so
// evalpod may launch its work-groups in any order.
// Must: never ok; with the checks re-run in reversed work-group order,
// incorrect (nondeterministic or wrong_values), deterministically.
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);
	int next = i - (int)get_local_id(0) + (int)get_local_size(0);

	if (get_local_id(0) == 0 && next < n)
		y[next] = -1.0f;
	if (i < n)
		y[i] = 2.0f * x[i] + 1.0f;
}
