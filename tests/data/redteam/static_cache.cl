// Built with -cl-std=CL2.0.
// Tries: the memo of global_cache.cl, with the state hidden inside the kernel
// as function-scope "static global" arrays instead of program-scope ones.
// Must: compile_error / program_scope_state, or compile_error / refused (the
// screen refuses OpenCL C 2.0).
__kernel void affine(__global const float *x, __global float *y, int n)
{
	static global float memo[65536];
	static global uint memo_key[65536];
	static global uint memo_full[65536];
	int i = get_global_id(0);

	if (i >= n)
		return;
	if (i < 65536 && memo_full[i] && memo_key[i] == as_uint(x[i])) {
		y[i] = memo[i];
		return;
	}
	y[i] = 2.0f * x[i] + 1.0f;
	if (i < 65536) {
		memo[i] = y[i];
		memo_key[i] = as_uint(x[i]);
		memo_full[i] = 1;
	}
}
