// Tries: x86-64 inline assembly that makes a system call (getpid, 39) from
// the kernel: a way out of OpenCL into the worker process and the kernel.
// The output is right only when the system call ran and returned a pid, so a
// result of ok proves that the escape worked.
// Must: be refused by the static screen before any compiler sees it:
// compile_error / refused, naming the line and "inline assembly".
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);
	long r;

	__asm__ volatile("syscall" : "=a"(r) : "a"(39L) : "rcx", "r11", "memory");
	if (i < n)
		y[i] = r > 0 ? 2.0f * x[i] + 1.0f : 0.0f;
}
