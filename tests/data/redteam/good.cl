// The honest control: correct, written differently from the reference.  It
// must stay ok, with performance figures, whatever the other variants of the
// batch do (crash, blow up memory, hang the compiler).
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);

	if (i < n)
		y[i] = fma(x[i], 2.0f, 1.0f);
}
