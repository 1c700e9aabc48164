/*
 * world.h - the buffers, scalars and launch plans of one problem at one
 * shape on the device, and the checks made on them.
 *
 * Every buffer is a sub-buffer of a larger allocation with guard bytes on
 * both sides.  The guards are filled with a known byte before each run and
 * checked after it, so a write just outside a buffer is caught even when it
 * does not fault.
 *
 * On a CPU device (PoCL) a kernel runs in this process, and a write beyond
 * the guards would land in the process's own heap.  There each buffer lives
 * in its own mapping instead, handed to OpenCL with CL_MEM_USE_HOST_PTR:
 *
 *   [far guard][slack][guard][buffer][guard][slack][far guard]
 *    PROT_NONE  <------- read/write, whole pages ------> PROT_NONE
 *
 * The far guards are WORLD_FAR_GUARD bytes of address space each, reserved
 * without access (they cost no memory), so a write up to that far outside a
 * buffer faults at once.  The guards next to the buffer are at least 4096
 * bytes (or the device's base alignment) and grow to fill the pages; the
 * slack left beyond them is below two base alignments before the buffer
 * and below one after it.  Each mapping is registered in a table that the
 * fault handler (world_fault_handler_install) reads, so a fault in a far
 * guard can be named.  On other devices the allocations stay in device
 * memory, which a kernel cannot use to corrupt the host, with guards of at
 * least 64 KiB.
 *
 * Output buffers are poisoned with one of two quiet-NaN
 * bit patterns (POISON_A, POISON_B) before each run, so an element the
 * kernel never wrote is recognised by its bits; using a different pattern on
 * the second run also exposes stale or uninitialised reads.
 */
#ifndef EVALPOD_WORLD_H
#define EVALPOD_WORLD_H

#include <CL/cl.h>
#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "clrt.h"
#include "expr.h"

enum poison { POISON_A = 0, POISON_B = 1 };

/* Address space reserved on each side of a buffer's mapping (CPU devices). */
#define WORLD_FAR_GUARD ((size_t)256 << 20)

struct wbuf {
	const struct buf_spec *spec;
	size_t count, esize, bytes;
	size_t guard;        /* guard bytes before and after */
	cl_mem parent;       /* guard + bytes + guard */
	cl_mem mem;          /* the sub-buffer kernels see */
	void *init;          /* initial contents (inputs, inout, scratch), host copy */
	void *map;           /* the whole reservation on a CPU device, else NULL */
	unsigned char *host; /* the parent's memory there (guard + bytes + guard), else NULL */
	size_t map_bytes;    /* its length */
};

union scalar_val {
	int32_t i;
	uint32_t u;
	int64_t l;
	uint64_t ul;
	float f;
	double d;
};

struct world {
	struct clrt *rt;
	const struct batch *b;
	size_t shape;
	struct wbuf *bufs; /* one per batch buffer, same order */
	union scalar_val *scal;
	enum poison poisoned; /* pattern used by the last world_fill */
};

/*
 * Evaluates counts and scalar values for shape and allocates the buffers.
 * Returns 0; KERR_INVALID when an expression does not evaluate (the
 * problem's fault, msg names the buffer/scalar); KERR_NOMEM when the
 * device or the host cannot allocate (infrastructure).  Release with
 * world_close, also after a failure.
 */
int world_open(struct world *w, struct clrt *rt, const struct batch *b, size_t shape, char *msg,
	       size_t n);

/*
 * Waits for the queue when buffers live in host mappings, releases the
 * OpenCL objects, then unregisters and unmaps the mappings.  Kernels bound
 * to w's buffers (plan_release) go first.
 */
void world_close(struct world *w);

/*
 * Installs, for the whole process, a handler for SIGSEGV and SIGBUS that
 * names a fault in a buffer's reservation (see the top of this file).  When
 * the faulting address lies in the mapping of a buffer of a world open in
 * this process, the handler writes one line to note_path (created or
 * truncated), e.g.
 *   out_of_bounds: write 4194300 bytes past the end of buffer 'y'
 *   out_of_bounds: read 1048576 bytes before the start of buffer 'x'
 * ("past the end" counts from the first byte after the buffer, so y[n] is 0
 * bytes past it; "before the start" from the start, so y[-1] is 4 bytes
 * before it; the access is "access" where read and write cannot be told
 * apart).  Other faults leave the file alone, and so does a fault within
 * 1 GiB above or 4 KiB below the faulting thread's stack pointer, or one
 * taken while the stack pointer itself lies in a reservation: a work-item
 * whose private arrays outgrow its stack moves the stack pointer that far,
 * and such a stack overflow is not an access to a buffer.  Either way the handler then
 * puts back the action that was there before the install and returns, so
 * the faulting instruction faults again and the process dies of the real
 * signal (or a sanitizer's handler sees it).  A signal sent by kill() is
 * raised again the same way.  The handler runs on an alternate stack for
 * the calling thread; other threads (PoCL's) use their own stacks.
 * Installing again only changes the path.  note_path is copied.  Returns 0;
 * KERR_LIMIT for a path longer than 4095 bytes; KERR_IO when sigaltstack or
 * sigaction fails.
 */
int world_fault_handler_install(const char *note_path);

/*
 * Reads the note a fault handler left at note_path into out (size n,
 * NUL-terminated, without the trailing newline).  Returns 1 when the file
 * exists and holds at least one byte, else 0 (out is then "").
 */
int world_fault_note_read(const char *note_path, char *out, size_t n);

/*
 * Generates fresh inputs for seed (deterministic: same seed, same bytes on
 * any machine), uploads them, zeroes scratch, poisons outputs with p and
 * paints the guards.  Blocks until done.  Returns 0 or KERR_OPENCL.
 */
int world_fill(struct world *w, uint64_t seed, enum poison p, char *msg, size_t n);

/*
 * world_fill without generating: uploads the inputs the host copies hold
 * (those of the last world_fill or world_generate), zeroes scratch,
 * poisons outputs with p and paints the guards.  For a second run on the
 * same seed.  Blocks until done.  Returns 0 or KERR_OPENCL.
 */
int world_refill(struct world *w, enum poison p, char *msg, size_t n);

/*
 * Generates the initial contents for seed into the host copies only (no
 * upload), as world_fill does.  Then world_restore_inputs uploads them.
 */
void world_generate(struct world *w, uint64_t seed);

/*
 * The count elements buffer `index` of a batch (spec) holds before a run
 * on seed: its init drawn with splitmix64, or zeros for a scratch buffer
 * (docs/evalpod.md, fresh inputs).  What world_generate writes.
 */
void world_gen(const struct buf_spec *spec, uint64_t seed, size_t index, void *out, size_t count);

/* Repaints every guard (after damage was found); blocks.  Returns 0 or KERR_OPENCL. */
int world_paint_guards(struct world *w, char *msg, size_t n);

/* Re-poisons the outputs only (no inputs touched); does not block. */
int world_poison(struct world *w, enum poison p, char *msg, size_t n);

/* Re-uploads the initial contents of inputs/inout/scratch; blocks. */
int world_restore_inputs(struct world *w, char *msg, size_t n);

/*
 * Reads buffer i into a new malloc'd block of w->bufs[i].bytes (*out,
 * caller frees).  Returns 0 or KERR_OPENCL.
 */
int world_read(struct world *w, size_t i, void **out, char *msg, size_t n);

/*
 * What world_flush_lines evicts: sets *bytes to every buffer's size with its
 * guards and returns 0, or returns -1 where a buffer is not this process's
 * memory (a device that allocates its own), which the lines flush cannot
 * reach.  Nothing is flushed.
 */
int world_lines_bytes(const struct world *w, size_t *bytes);

/*
 * On a CPU device, evicts every buffer's memory, guards included, from the
 * processor's caches with flush_lines (flush.h): the timed kernel's data
 * then comes from memory, as after the read flush.  Returns 0, or -1 where
 * the buffers are not this process's memory or the processor has no such
 * instruction.
 */
int world_flush_lines(struct world *w);

/*
 * Checks every guard.  Returns 0, or KERR_INVALID with msg like
 * "wrote outside buffer 'C': 64 bytes after its end were changed (first at
 * +0)".
 */
int world_check_guards(struct world *w, char *msg, size_t n);

/* Checks that every input buffer still holds its initial contents. */
int world_check_inputs(struct world *w, char *msg, size_t n);

/* One resolved launch step. */
struct pstep {
	cl_kernel kernel;
	const char *name;
	size_t index; /* its place in the problem's launch list, for messages */
	cl_uint dims;
	size_t global[3], local[3];
	int has_local;
};

struct plan {
	struct pstep *steps;
	size_t nsteps;
};

/*
 * Creates the kernels of launch from prog, sets their arguments from w and
 * resolves the geometry with vars (shape values plus the program's
 * #defines).  A step whose global size is 0 in some dimension is checked
 * (its kernel and arguments) and then left out of the plan: it does not run
 * for these values (OpenCL 2.1's rule for an empty range), so the driver
 * never compiles it for them.  Returns 0; KERR_INVALID for a geometry
 * expression that does not evaluate, a global size below 0, a local size
 * below 1, or a plan left with no step, KERR_OPENCL for a missing kernel or
 * an argument the kernel rejects (msg names launch step and argument).
 * p->steps[i].index is step i's place in launch.
 */
int plan_bind(struct plan *p, struct world *w, cl_program prog, const struct launch_spec *launch,
	      size_t nlaunch, const struct expr_vars *vars, char *msg, size_t n);
void plan_release(struct plan *p);

/*
 * Enqueues every step once.  When events is not NULL it receives one event
 * per step (caller releases them).  Returns CL_SUCCESS or the OpenCL error
 * with msg naming the step.
 */
cl_int plan_enqueue(struct plan *p, cl_command_queue q, cl_event *events, char *msg, size_t n);

/*
 * Enqueues every step with its work-groups in reverse order: the range of
 * dimension 0 is cut into chunks of whole work-groups, launched last chunk
 * first with the matching global offset, so a kernel that relies on
 * work-group g running before g + 1 (a race between work-groups that one
 * device's schedule happens to hide) computes something else.  ev, when
 * not NULL, receives the last command's event.  Only for a plan that
 * plan_reorder_ok() accepts and whose kernels do not ask for their group
 * ids, group counts or global size, which chunking would change (check.c
 * looks at the source).
 */
cl_int plan_enqueue_reversed(struct plan *p, cl_command_queue q, cl_event *ev);

/* Whether every step has an explicit local size that divides its range (and there is one). */
int plan_reorder_ok(const struct plan *p);

/* Element-wise comparison of one buffer against its reference. */
struct cmp_stats {
	size_t count;
	size_t mismatches; /* elements outside atol + rtol * |ref| */
	size_t unwritten;  /* elements still holding the poison pattern */
	size_t first_unwritten;
	size_t nonfinite; /* NaN/Inf where the reference is finite */
	double max_abs, mean_abs, rel_l2;
	size_t worst; /* index of the largest violation (or error) */
	double worst_got, worst_ref;
};

/*
 * Compares got with ref (both wb->count elements of wb's type).  When
 * poison_check is set, elements whose bits equal pattern p count as
 * unwritten (and as mismatches).
 */
void world_compare(const struct wbuf *wb, const void *got, const void *ref, double atol,
		   double rtol, int poison_check, enum poison p, struct cmp_stats *s);

/*
 * A quick look for a judge that needs only the verdict: how many elements
 * world_compare might count as mismatched or unwritten (same arguments).
 * 0 means it would find none; otherwise world_compare says which are.
 * Several times faster than world_compare on floats.
 */
size_t world_suspects(const struct wbuf *wb, const void *got, const void *ref, double atol,
		      double rtol, int poison_check, enum poison p);

/* Number of elements whose bits differ between a and b; *first gets the first. */
size_t world_bitdiff(const struct wbuf *wb, const void *a, const void *b, size_t *first);

#endif
