// The second kernel shifts the wrong way.
__kernel void scale(__global const float *x, __global float *t, __local float *tile, int n)
{
	int i = get_global_id(0), l = get_local_id(0);

	tile[l] = i < n ? x[i] : 0.0f;
	barrier(CLK_LOCAL_MEM_FENCE);
	if (i < n)
		t[i] = 2.0f * tile[l];
}

__kernel void shift(__global const float *t, __global float *y, int n)
{
	int i = get_global_id(0);

	if (i < n)
		y[i] = t[i] - 1.0f;
}
