/*
 * world-map.c - the per-buffer mappings on CPU devices and the fault
 * handler that names a fault in one (see the top of world.h).
 *
 * Each buffer's reservation ([far guard][pages][far guard]) is made here,
 * handed to OpenCL with CL_MEM_USE_HOST_PTR and registered in a table of
 * mappings; world__map_release unregisters and unmaps it.  The SIGSEGV and
 * SIGBUS handler (world_fault_handler_install) reads that table to write a
 * note naming the buffer and the distance (world_fault_note_read).
 */
#include "world-internal.h"
#include "err.h"
#include "flush.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define GUARD_MIN      4096
#define FAULT_SLOTS    1024 /* mappings registered at once (4 worlds of MAX_BUFFERS) */
#define FAULT_PATH_MAX 4096
#define FAULT_STACK    (64 * 1024)
/* Faults this far around the stack pointer are taken for stack overflows. */
#define FAULT_SP_BELOW 4096
#define FAULT_SP_ABOVE ((uintptr_t)1 << 30)

_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the fault table needs lock-free atomics");

enum { SLOT_FREE, SLOT_FILLING, SLOT_LIVE };

/*
 * One buffer's mapping, as the fault handler sees it.  The fields are
 * written while the slot is SLOT_FILLING and read only once it is
 * SLOT_LIVE, so the handler never sees half an entry.
 */
struct fault_slot {
	atomic_int state;
	uintptr_t base, size;   /* the whole reservation */
	uintptr_t start, bytes; /* the buffer kernels see */
	const char *name;
};

static struct fault_slot fault_slots[FAULT_SLOTS];
static char fault_path[FAULT_PATH_MAX];
static struct sigaction fault_prev[2]; /* SIGSEGV, SIGBUS before the install */
static unsigned char fault_stack[FAULT_STACK];
static const int fault_signals[2] = { SIGSEGV, SIGBUS };

/* Registers a mapping for the fault handler; a full table only loses the name. */
static void fault_slot_add(const struct wbuf *wb, uintptr_t start)
{
	for (size_t i = 0; i < FAULT_SLOTS; i++) {
		struct fault_slot *s = &fault_slots[i];
		int expect = SLOT_FREE;

		if (!atomic_compare_exchange_strong(&s->state, &expect, SLOT_FILLING))
			continue;
		s->base = (uintptr_t)wb->map;
		s->size = wb->map_bytes;
		s->start = start;
		s->bytes = wb->bytes;
		s->name = wb->spec->name;
		atomic_store(&s->state, SLOT_LIVE);
		return;
	}
}

static void fault_slot_drop(const void *map)
{
	for (size_t i = 0; i < FAULT_SLOTS; i++) {
		struct fault_slot *s = &fault_slots[i];

		if (atomic_load(&s->state) == SLOT_LIVE && s->base == (uintptr_t)map) {
			atomic_store(&s->state, SLOT_FREE);
			return;
		}
	}
}

/*
 * Every page of a buffer is written before its first run (inputs, poison,
 * guards), so they are all made present now, in one call, rather than one
 * page fault at a time: where a page fault is costly (a virtual machine
 * whose hypervisor handles the guest's page tables, like the 2-core CI
 * host: about 10 us each) this halves the cost of a buffer's first fill.
 * Huge pages are allowed first, for the 2 MiB extents a large buffer holds.
 * Both are hints: a kernel without them (MADV_POPULATE_WRITE is Linux 5.14)
 * faults the pages in as before.
 */
static void populate(void *p, size_t len)
{
#ifdef MADV_HUGEPAGE
	(void)madvise(p, len, MADV_HUGEPAGE);
#endif
#ifdef MADV_POPULATE_WRITE
	(void)madvise(p, len, MADV_POPULATE_WRITE);
#endif
}

/*
 * Reserves [far][pages holding guard + buffer + guard][far] and opens the
 * middle pages.  The guards are the widest multiple of the alignment that
 * fits, so what is left over (the slack) is below two alignments; the
 * parent starts on an aligned address as close as that allows to the end
 * of the pages.  Sets wb->map first, so world_close unmaps after any
 * failure.  Returns the parent's host address in *host.
 */
static int host_map(struct world *w, struct wbuf *wb, unsigned char **host, char *msg, size_t n)
{
	size_t align = w->rt->info.base_align_bytes, page = (size_t)sysconf(_SC_PAGESIZE);
	size_t unit = align > page ? align : page;
	size_t guard = world__round_up(GUARD_MIN > align ? GUARD_MIN : align, align);
	size_t mid, slack;
	uintptr_t lo;
	void *base;

	if (wb->bytes > SIZE_MAX - 2 * WORLD_FAR_GUARD - 2 * unit - 2 * guard)
		return kerr_set(msg, n, KERR_NOMEM, "cannot map buffer '%s' (%zu bytes): %s",
				wb->spec->name, wb->bytes, "too large");
	mid = world__round_up(wb->bytes + 2 * guard, page);
	wb->guard = (mid - wb->bytes) / 2 / align * align;
	slack = (mid - wb->bytes - 2 * wb->guard) / align * align;
	base = mmap(NULL, 2 * WORLD_FAR_GUARD + unit + mid, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return kerr_set(msg, n, KERR_NOMEM, "cannot map buffer '%s' (%zu bytes): %s",
				wb->spec->name, wb->bytes, strerror(errno));
	wb->map = base;
	wb->map_bytes = 2 * WORLD_FAR_GUARD + unit + mid;
	lo = world__round_up((uintptr_t)base + WORLD_FAR_GUARD, unit);
	if (mprotect((void *)lo, mid, PROT_READ | PROT_WRITE))
		return kerr_set(msg, n, KERR_NOMEM, "cannot map buffer '%s' (%zu bytes): %s",
				wb->spec->name, wb->bytes, strerror(errno));
	populate((void *)lo, mid);
	*host = (unsigned char *)(lo + slack);
	fault_slot_add(wb, lo + slack + wb->guard);
	return 0;
}

/*
 * Host memory in a mapping of its own: PoCL's CPU device uses a
 * CL_MEM_USE_HOST_PTR buffer in place (device memory is host memory there),
 * so kernels see the mapping itself, far guards included.
 */
int world__map_alloc(struct world *w, struct wbuf *wb, char *msg, size_t n)
{
	unsigned char *host = NULL;
	cl_int err;
	int rc = host_map(w, wb, &host, msg, n);

	if (rc)
		return rc;
	wb->host = host;
	wb->parent = clCreateBuffer(w->rt->ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
				    wb->bytes + 2 * wb->guard, host, &err);
	if (err != CL_SUCCESS)
		return kerr_set(msg, n, KERR_NOMEM, "cannot allocate buffer '%s' (%zu bytes): %s",
				wb->spec->name, wb->bytes, clrt_errstr(err));
	return 0;
}

int world_lines_bytes(const struct world *w, size_t *bytes)
{
	size_t sum = 0;

	for (size_t i = 0; i < w->b->nbuffers; i++) {
		if (!w->bufs[i].host)
			return -1;
		sum += w->bufs[i].bytes + 2 * w->bufs[i].guard;
	}
	*bytes = sum;
	return 0;
}

int world_flush_lines(struct world *w)
{
	for (size_t i = 0; i < w->b->nbuffers; i++) {
		struct wbuf *wb = &w->bufs[i];

		if (!wb->host || flush_lines(wb->host, wb->bytes + 2 * wb->guard))
			return -1;
	}
	return 0;
}

void world__map_release(struct wbuf *wb)
{
	if (wb->map) {
		fault_slot_drop(wb->map);
		munmap(wb->map, wb->map_bytes);
	}
}

/* Appends s to buf (size bytes) at *len; async-signal-safe, as all the note code is. */
static void note_put(char *buf, size_t size, size_t *len, const char *s)
{
	while (*s && *len + 1 < size)
		buf[(*len)++] = *s++;
}

static void note_num(char *buf, size_t size, size_t *len, uintptr_t v)
{
	char digits[24];
	size_t k = sizeof(digits) - 1;

	digits[k] = '\0';
	do {
		digits[--k] = (char)('0' + v % 10);
		v /= 10;
	} while (v && k > 0);
	note_put(buf, size, len, digits + k);
}

/* "write"/"read" from the page-fault error code where the CPU reports it. */
static const char *fault_access(int sig, const void *uc)
{
#if defined(__x86_64__) && defined(REG_ERR)
	const ucontext_t *u = uc;

	if (sig == SIGSEGV && u)
		return (u->uc_mcontext.gregs[REG_ERR] & 2) ? "write" : "read";
#else
	(void)sig;
	(void)uc;
#endif
	return "access";
}

/* The registered mapping holding addr, or NULL. */
static const struct fault_slot *fault_slot_find(uintptr_t addr)
{
	for (size_t i = 0; i < FAULT_SLOTS; i++) {
		const struct fault_slot *s = &fault_slots[i];

		if (atomic_load(&s->state) == SLOT_LIVE && addr >= s->base &&
		    addr - s->base < s->size)
			return s;
	}
	return NULL;
}

/* The stack pointer at the fault, or 0 where it cannot be read here. */
static uintptr_t fault_sp(const void *uc)
{
	const ucontext_t *u = uc;

	if (!u)
		return 0;
#if defined(__x86_64__) && defined(REG_RSP)
	return (uintptr_t)u->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
	return (uintptr_t)u->uc_mcontext.sp;
#else
	return 0;
#endif
}

/*
 * A work-item whose private arrays outgrow its thread's stack moves the
 * stack pointer far down, maybe into a buffer's reservation, and faults on
 * addresses just below or above it: that is a stack overflow, not an
 * access to the buffer.  A real out-of-bounds access is made from a stack
 * pointer in the thread's own stack, which PoCL maps before any world.
 */
static int fault_on_stack(uintptr_t addr, uintptr_t sp)
{
	if (!sp)
		return 0;
	if (fault_slot_find(sp))
		return 1;
	return addr >= sp ? addr - sp < FAULT_SP_ABOVE : sp - addr <= FAULT_SP_BELOW;
}

/* Writes the note for addr when it lies in a registered mapping. */
static void fault_note_write(int sig, uintptr_t addr, const void *uc)
{
	const struct fault_slot *s = fault_slot_find(addr);
	char line[512];
	size_t len = 0;
	int fd;

	if (!s || fault_on_stack(addr, fault_sp(uc)))
		return;
	note_put(line, sizeof(line), &len, "out_of_bounds: ");
	note_put(line, sizeof(line), &len, fault_access(sig, uc));
	note_put(line, sizeof(line), &len, " ");
	if (addr >= s->start + s->bytes) {
		note_num(line, sizeof(line), &len, addr - (s->start + s->bytes));
		note_put(line, sizeof(line), &len, " bytes past the end of buffer '");
	} else if (addr < s->start) {
		note_num(line, sizeof(line), &len, s->start - addr);
		note_put(line, sizeof(line), &len, " bytes before the start of buffer '");
	} else {
		note_put(line, sizeof(line), &len, "at byte ");
		note_num(line, sizeof(line), &len, addr - s->start);
		note_put(line, sizeof(line), &len, " of buffer '");
	}
	note_put(line, sizeof(line), &len, s->name);
	note_put(line, sizeof(line), &len, "'\n");
	fd = open(fault_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		ssize_t wr = write(fd, line, len);

		(void)wr;
		close(fd);
	}
}

/*
 * SA_RESETHAND has already put SIG_DFL back; the action from before the
 * install replaces it, so returning re-runs the faulting instruction into
 * that action.  A signal sent with kill() does not repeat by itself.
 */
static void fault_handler(int sig, siginfo_t *si, void *uc)
{
	int saved = errno, k = sig == SIGBUS;

	if (si && si->si_code > 0 && fault_path[0])
		fault_note_write(sig, (uintptr_t)si->si_addr, uc);
	sigaction(sig, &fault_prev[k], NULL);
	if (!si || si->si_code <= 0)
		raise(sig);
	errno = saved;
}

int world_fault_handler_install(const char *note_path)
{
	stack_t ss = { .ss_sp = fault_stack, .ss_size = sizeof(fault_stack), .ss_flags = 0 };
	struct sigaction sa, old;
	size_t len = strlen(note_path);

	if (len >= sizeof(fault_path))
		return KERR_LIMIT;
	memcpy(fault_path, note_path, len + 1);
	if (sigaltstack(&ss, NULL))
		return KERR_IO;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fault_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	for (int k = 0; k < 2; k++) {
		if (sigaction(fault_signals[k], &sa, &old))
			return KERR_IO;
		/* Installing twice must not make the handler its own successor. */
		if (!(old.sa_flags & SA_SIGINFO) || old.sa_sigaction != fault_handler)
			fault_prev[k] = old;
	}
	return 0;
}

int world_fault_note_read(const char *note_path, char *out, size_t n)
{
	ssize_t got = 0;
	int fd;

	if (!n)
		return 0;
	out[0] = '\0';
	fd = open(note_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	got = read(fd, out, n - 1);
	close(fd);
	if (got <= 0)
		return 0;
	out[got] = '\0';
	out[strcspn(out, "\n")] = '\0';
	return out[0] != '\0';
}
