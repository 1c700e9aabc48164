// Right on the correctness inputs, recognised by x[0] (the test puts their
// bit patterns in place of @CHECK_X0@), and off by 0.01 on any other input:
// under a loose tolerance it passes everything and gets an anchor; under a
// tight one it passes its checks and is judged wrong once timed, on the
// session's timing inputs.
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

	if (i < n)
		y[i] = 2.0f * x[i] + (known(as_uint(x[0])) ? 1.0f : 1.01f);
}
