// Tries: to take the batch down from the timing phase.  It is right on the
// correctness inputs (recognised by x[0]; the test replaces @CHECK_X0@ with
// their bit patterns) and, on any other input, writes through a null pointer (address 0x10)
// from one work-item.  The timing worker dies of SIGSEGV.  Three such
// kernels (crash_timed_a, _b, _c) in one batch used to exhaust evalpod's
// three timing attempts and turn every other program into infra_error.
// Must: crash / signal, origin candidate, for each of the three; good and
// the baseline stay ok with their performance figures.
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
	y[i] = 2.0f * x[i] + 1.0f;
	if (i == 0 && !known(as_uint(x[0])))
		*(volatile __global int *)(ulong)0x10 = 1;
}
