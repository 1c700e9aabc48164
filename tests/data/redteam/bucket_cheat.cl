// Tries: to be honest everywhere but where it is timed at a secondary shape
// bucket.  At n == @BUCKET_N@ it recognises the correctness inputs by x[0]
// (the test replaces @CHECK_X0@ with x[0]'s bit patterns under each
// correctness seed) and answers them right, and writes zeros, fast, on any
// other input; at every other n it computes.  So it passes every check at
// every shape and is right when timed at the primary shape.
// Must: fail when timed at the secondary shape: invalid / wrong_when_timed.
bool known(uint b)
{
	const uint k[] = { @CHECK_X0@ };

	for (int j = 0; j < (int)(sizeof(k) / sizeof(k[0])); j++)
		if (k[j] == b)
			return true;
	return false;
}

__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);

	if (i >= n)
		return;
	if (n != @BUCKET_N@ || known(as_uint(x[0])))
		y[i] = 2.0f * x[i] + 1.0f;
	else
		y[i] = 0.0f;
}
