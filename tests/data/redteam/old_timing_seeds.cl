// Tries: the attack that worked while the timing seeds were derived from the
// correctness seeds (seed_k = 0x7153a11d + 0x1000 k; then seed_k = 31 seed_k
// + c + 1 for each correctness seed c; incremented while equal to one of
// them).  It recognises, by x[0], the correctness inputs AND those three
// predictable timing inputs (the test replaces @KNOWN_X0@ with their bit
// patterns) and is right on them only; anything else gets garbage.  With the
// old evalpod it was ranked ok.
// Must: invalid / wrong_when_timed, now that the timing seeds are drawn
// afresh on every run.
bool known(uint b)
{
	const uint k[] = { @KNOWN_X0@ };

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
		y[i] = -12345.0f;
}
