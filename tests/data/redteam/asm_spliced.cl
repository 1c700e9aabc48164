// Tries: to hide inline assembly from a screen that reads lines one at a
// time: a backslash-newline (line splicing, translation phase 2) joins
// "__as" and "m__" into the keyword __asm__ before the tokens are formed.
// The output is right only when the assembly ran.
// Must: compile_error / refused (the screen splices lines as the compiler
// does).
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);
	int r = 0;

	__as\
m__ volatile("movl $7, %0" : "=r"(r));
	if (i < n)
		y[i] = r == 7 ? 2.0f * x[i] + 1.0f : 0.0f;
}
