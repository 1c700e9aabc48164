// Tries: to recognise the correctness inputs by x[0] (the test replaces
// @CHECK_X0@ with the bit patterns of x[0] under each correctness seed,
// computed with evalpod's generator) and to answer them right, while it
// writes zeros, fast, on any other input.
// Must: pass the checks and fail while timed: invalid / wrong_when_timed.
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
	if (known(as_uint(x[0])))
		y[i] = 2.0f * x[i] + 1.0f;
	else
		y[i] = 0.0f;
}
