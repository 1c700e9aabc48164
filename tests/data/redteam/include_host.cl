// Tries: to read a file of the evaluating host through the preprocessor.
// The contents of /etc/hostname become tokens of the kernel; the compiler's
// error ("use of undeclared identifier ...", with the source line quoted)
// carries them into the build log, and so into the result document.
// Must: compile_error / refused by the screen (an #include), before any
// compiler opens the file; and the host name must appear nowhere in the
// results, artifacts, summary or evalpod's own output.
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);
	float h = 0.0f;

	h =
#include "/etc/hostname"
	;
	if (i < n)
		y[i] = 2.0f * x[i] + 1.0f + h;
}
