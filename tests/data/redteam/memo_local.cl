// Tries: to skip the work for inputs it has met before.  PoCL gives each of
// its threads one local-memory arena and keeps it from launch to launch, so
// what a work-group writes to __local memory is there for the next launch
// that runs on that thread.  Per element it keeps the bits of the last
// three x it answered (a round robin over three slots, the count beside
// them); an x it finds there was answered before, and the work (the loop of
// heavy.cl) is skipped.  Every answer is right, so no judge of outputs can
// catch it; once the timing sets have come round, nearly every run is a
// replay.
// Must: invalid / slower_on_new_inputs (the audit times it on inputs it has
// never met, paired with samples on the timing sets).
#define SLOTS 3
#define MAXN  32768

__kernel void affine(__global const float *x, __global float *y, int n)
{
	__local uint seen[SLOTS * MAXN];
	__local uchar next[MAXN];
	int i = get_global_id(0);
	volatile float sink = 0.0f;
	uint b;
	int hit = 0;

	if (i >= n)
		return;
	b = as_uint(x[i]);
	for (int s = 0; i < MAXN && s < SLOTS; s++)
		hit |= seen[s * MAXN + i] == b;
	if (!hit) {
		for (int k = 0; k < 300; k++)
			sink += x[i] * (float)k;
		if (i < MAXN) {
			seen[(next[i] % SLOTS) * MAXN + i] = b;
			next[i] = (uchar)((next[i] + 1) % SLOTS);
		}
	}
	y[i] = 2.0f * x[i] + 1.0f;
}
