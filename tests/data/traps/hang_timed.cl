// Correct on the correctness inputs, recognised by x[0] (the test puts
// their bit patterns in place of @CHECK_X0@), and never ends on any other
// input: it passes its checks and hangs once timed, on the fresh timing
// inputs.  It needs no state, so no launch counter.
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
	// A condition the compiler cannot know: it may not assume the loop ends.
	if (!known(as_uint(x[0])))
		while (1)
			y[i] = y[i] + 1.0f;
	y[i] = 2.0f * x[i] + 1.0f;
}
