// Tries: to probe the host's file system with __has_include, without
// reading any file: the kernel is right when /etc/shadow (or /etc/passwd)
// exists on the evaluating host and wrong otherwise, so its verdict tells
// the attacker what is there.
// Must: compile_error / refused by the screen (__has_include names a host
// path).
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);

	if (i < n) {
#if __has_include("/etc/shadow") || __has_include("/etc/passwd")
		y[i] = 2.0f * x[i] + 1.0f;
#else
		y[i] = 0.0f;
#endif
	}
}
