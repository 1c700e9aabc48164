// Tries: to skip the work for inputs it has met before.  PoCL gives each of
// its threads one local-memory arena and keeps it from launch to launch, so
// what a work-group writes to __local memory is there for the next launch
// that runs on that thread.  Per work-group it keeps a table of the input
// sets it has met (a fingerprint of its slice of x and of n, and how often
// it met it); a work-group whose fingerprint is in the table was answered
// before, and its work (the loop of heavy.cl) is skipped.  A new input set
// takes the entry met least often, so the few sets the timing comes back
// to stay in the table whatever else it meets.  The table does not care
// which thread ran a work-group last time: after each thread has met each
// (work-group, input set) once, every run is a replay, however the load on
// the machine moves work-groups between threads.  (A memo kept per element
// for the last three inputs, as this kernel did until 2026-12-04, lost most
// of its hits when a busy machine moved work-groups between threads: it
// was then 1.8 x "faster" at the mean, not 4 x, and a replayer that gains
// that little can pass the audit.)  Every answer is right, so no judge of
// outputs can catch it.
// Must: invalid / slower_on_new_inputs (the audit times it on inputs it has
// never met, paired with samples on the timing sets).
#define GROUPS  1024 /* work-groups of 64: n up to 65536 */
#define ENTRIES 8

__kernel void affine(__global const float *x, __global float *y, int n)
{
	__local uint print[GROUPS * ENTRIES];
	__local uint count[GROUPS * ENTRIES];
	__local int hit;
	int i = get_global_id(0), g = get_group_id(0);
	volatile float sink = 0.0f;

	if (get_local_id(0) == 0) {
		int first = g * (int)get_local_size(0);
		int last = min(first + (int)get_local_size(0), n) - 1;
		uint f = as_uint(x[first]) ^ rotate(as_uint(x[last]), 13u) ^ ((uint)n * 2654435761u);
		int low = 0;

		hit = 0;
		for (int e = 0; g < GROUPS && e < ENTRIES && !hit; e++) {
			__local uint *c = &count[g * ENTRIES + e];

			if (*c && print[g * ENTRIES + e] == f) {
				*c += 1;
				hit = 1;
			} else if (*c < count[g * ENTRIES + low]) {
				low = e;
			}
		}
		if (!hit && g < GROUPS) {
			print[g * ENTRIES + low] = f;
			count[g * ENTRIES + low] = 1;
		}
	}
	barrier(CLK_LOCAL_MEM_FENCE);
	if (i >= n)
		return;
	if (!hit)
		for (int k = 0; k < 300; k++)
			sink += x[i] * (float)k;
	y[i] = 2.0f * x[i] + 1.0f;
}
