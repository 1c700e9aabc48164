// Tries: the same read of a host file as include_host.cl, of a file that the
// test creates with a random, unmistakable token in it (@SECRET_PATH@ is
// replaced by the test with its absolute path).
// Must: compile_error / refused; the token appears nowhere in the outputs.
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);
	float h = 0.0f;

	h =
#include "@SECRET_PATH@"
	;
	if (i < n)
		y[i] = 2.0f * x[i] + 1.0f + h;
}
