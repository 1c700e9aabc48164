// Built with -cl-std=CL2.0 (variant global_cache), and with
// "-cl-std=CL2.0 -cl-std=CL1.2" (variant global_cache_twostd: PoCL honours
// the first -cl-std, so a screen that reads only the last one is fooled).
// Tries: to keep state between launches in a program-scope global array: a
// memo of y keyed by the bits of x, element by element, so a repeated input
// is answered from the cache instead of being computed (in a real problem
// the computation is skipped; here the point is the state that survives a
// launch).  It is always right, so only a rule against program-scope state
// can stop it.
// Must: compile_error / program_scope_state (the variables found after the
// build), or compile_error / refused (the screen refuses OpenCL C 2.0).
global float cache[65536];
global uint cache_key[65536];
global uint cache_full[65536];

__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);

	if (i >= n)
		return;
	if (i < 65536 && cache_full[i] && cache_key[i] == as_uint(x[i])) {
		y[i] = cache[i];
		return;
	}
	y[i] = 2.0f * x[i] + 1.0f;
	if (i < 65536) {
		cache[i] = y[i];
		cache_key[i] = as_uint(x[i]);
		cache_full[i] = 1;
	}
}
