// Tries: to hide inline assembly from a screen that looks for the word
// "__asm__" by building the keyword out of two halves with token pasting.
// A pasted identifier is looked up as a keyword again, so the compiler sees
// __asm__.  The output is right only when the assembly ran.
// Must: compile_error (kind refused by the screen, or compile_error from a
// compiler that forbids assembly); never ok.
#define CAT(a, b) a##b

__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);
	int r = 0;

	CAT(__as, m__) volatile("movl $7, %0" : "=r"(r));
	if (i < n)
		y[i] = r == 7 ? 2.0f * x[i] + 1.0f : 0.0f;
}
