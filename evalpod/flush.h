/*
 * flush.h - the program that flushes the device's caches before each timed
 * sample (timing.c), and its binary.
 *
 * On PoCL, building the flush from source was the one build in the timing
 * worker that no cache answered (the programs come from their check
 * workers' PoCL caches, the reference from its binary), so every batch paid
 * PoCL's parse of its kernel library for it: about 0.4 s.  The reference
 * worker runs only the batch's own reference, never candidate code, so a
 * binary of the flush made there (WORK/w/reference/flush.bin) is as trusted
 * as the reference's own; the reference cache keeps it for the session's
 * later batches (refcache.h).
 */
#ifndef EVALPOD_FLUSH_H
#define EVALPOD_FLUSH_H

#include <stddef.h>

#include "batch.h"
#include "prog.h"

/*
 * The kernel reads its buffer, it does not write it: (__global const uint4
 * *p, __global uint *out, uint v) over global work-items reads p[0 ..
 * FLUSH_READS x global) and writes out[0] only when what it read XORs to v.
 * A read leaves clean lines behind, where a write had the timed kernel
 * that follows write the flush's dirty lines back.  On the Xeon guest
 * (2026-12-06, build/bench/flush_probe, 21 rounds) reading 256 MiB took
 * 10.7 ms against 19.1 ms for writing it (128 MiB: 4.3 against 7.9 ms),
 * and a 4 MiB buffer uploaded just before read back after it no faster
 * (0.232 ms against 0.244, the fastest of 21; 0.163 ms with no flush).
 */
#define FLUSH_KERNEL "evalpod_flush"     /* (__global const uint4 *p, __global uint *out, uint v) */
#define FLUSH_READS  16                  /* uint4 each work-item reads */
#define FLUSH_GRAIN  (16u * FLUSH_READS) /* bytes per work-item: the buffer a multiple */
#define FLUSH_BINARY "flush.bin"         /* in the reference worker's directory */

/* The flush program's OpenCL C source (bench/flush_probe measures it too). */
extern const char flush_source[];

/*
 * The flush kernel in *k: from the binary at bin_path when there is one and
 * the device takes it with the kernel in it, else built from source.
 * *from_binary says which.  Returns 0 or an error (msg set).
 */
int flush_kernel(cl_kernel *k, struct clrt *rt, const char *bin_path, int *from_binary, char *msg,
		 size_t n);

/*
 * Builds the flush program from source and writes its binary to path (temp
 * + rename).  A failure is only logged: the timing worker then builds the
 * source itself.
 */
void flush_save_binary(struct clrt *rt, const char *path);

/*
 * The lines flush, for a device whose memory is this process's own (a CPU
 * device, where the world maps every buffer itself: world.h): writes back
 * and evicts every cache line of [p, p + n) from every level of the
 * processor's caches (CLFLUSHOPT, or CLFLUSH where the processor has no
 * CLFLUSHOPT, on x86-64; DC CIVAC on AArch64), then waits for it.  It does
 * what the read flush does to the timed kernel's own data, the only data
 * whose cache state decides its time, at a fraction of the cost (figures in
 * setup_flush, timing.c, and docs/evalpod.md).  Returns 0, or -1 where the
 * processor has no such instruction (nothing is done).
 */
int flush_lines(const void *p, size_t n);

/* Whether flush_lines works on this processor. */
int flush_can_lines(void);

/*
 * Whether a batch measured with m on a device of type device_type ("cpu",
 * "gpu": clrt.h) may flush by lines: the flush is on, flush_kind is auto,
 * flush_bytes is 0, the device is a CPU (whose buffers the world maps
 * itself) and the processor can.  The reference worker then makes no read
 * flush binary; the timing worker builds no flush kernel unless the
 * buffers are larger than the read flush would be (setup_flush, timing.c),
 * when the read flush runs instead.
 */
int flush_uses_lines(const struct measure_spec *m, const char *device_type);

#endif
