// Tries: an #include spelled with the digraph %: (which the preprocessor
// reads as #), to get past a screen that looks for "#include".  The lines
// of /etc/passwd end up quoted in the compiler's error messages.
// Must: compile_error / refused by the screen; no line of /etc/passwd (for
// instance "root:") may appear in the results or evalpod's output.
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);

%:include "/etc/passwd"
	if (i < n)
		y[i] = 2.0f * x[i] + 1.0f;
}
