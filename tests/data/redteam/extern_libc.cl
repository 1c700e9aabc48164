// Tries: to call the C library of the process that runs the kernel.  PoCL
// turns a kernel into a shared object loaded into the worker, so an
// undefined function may be bound to libc's exit() when it is loaded.  If the
// call ever runs, the worker ends (exit status 0) in the middle of a check,
// and y[0] is left unwritten, so the output is wrong too.
// Must: never ok: compile_error (refused, or the build fails on the unknown
// function), or crash.
void exit(int status);

__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);

	if (i == 0)
		exit(0);
	else if (i < n)
		y[i] = 2.0f * x[i] + 1.0f;
}
