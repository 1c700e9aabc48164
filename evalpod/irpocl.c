/*
 * irpocl.c - fetches a kernel's compiled code from PoCL's kernel cache (see
 * irpocl.h): finds the kernel's newest build in the cache tree, then prints
 * its parallel.bc as text with the LLVM library PoCL has loaded into this
 * process (small bitcode; else llvm-dis) and disassembles its .so with
 * objdump.  The tools run in children (spawned, with no shell) under a
 * time limit and an output limit.
 */
#include "irpocl.h"
#include "err.h"
#include "sbuf.h"
#include "xalloc.h"
#include "arraysize.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <spawn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define IRPOCL_TOOL_SECONDS 30     /* limit on one llvm-dis or objdump run */
#define IRPOCL_MAX_DIRENTS  100000 /* directory entries looked at in a cache */
#define IRPOCL_STDERR_KEEP  256    /* bytes of a tool's stderr kept for msg */
#define IRPOCL_MAX_NAME     255    /* longest kernel name accepted */

/* ---- LLVM in this process -------------------------------------------- */

/*
 * PoCL links LLVM's shared library, so a process that has used PoCL has
 * the library llvm-dis would load already mapped, and its C API prints a
 * module exactly as llvm-dis does.  That saves llvm-dis's start (loading
 * and relocating the library: 25 to 70 ms a run on a busy CI host,
 * against 10 to 20 ms to parse and print a matmul kernel there).  Only a library already loaded is
 * used (RTLD_NOLOAD): loading one would cost what llvm-dis costs, and it
 * might not be the LLVM that wrote the bitcode.
 */
struct llvm_c {
	void *(*context_create)(void);
	int (*buffer_from_file)(const char *path, void **buf, char **err);
	int (*parse)(void *ctx, void *buf, void **mod);
	char *(*print)(void *mod);
	void (*dispose_message)(char *msg);
	void (*dispose_module)(void *mod);
	void (*dispose_buffer)(void *buf);
	void (*dispose_context)(void *ctx);
	void (*set_diagnostic_handler)(void *ctx, void (*handler)(void *info, void *opaque),
				       void *opaque);
};

/* dl_iterate_phdr's callback: the path of a loaded libLLVM* into *(char **)data. */
static int find_llvm(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *slash = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;

	if (slash && !strncmp(slash + 1, "libLLVM", 7)) {
		*(char **)data = xstrdup(info->dlpi_name);
		return 1;
	}
	return 0;
}

static int llvm_sym(void *lib, const char *name, void *fn, size_t size)
{
	void *p = dlsym(lib, name);

	if (!p || size != sizeof(p))
		return -1;
	memcpy(fn, &p, size);
	return 0;
}

#define LLVM_SYM(lib, name, field) llvm_sym(lib, name, &(field), sizeof(field))

/* The C API of the LLVM library this process has loaded, or NULL. */
static const struct llvm_c *loaded_llvm(void)
{
	static struct llvm_c api;
	static int looked;
	char *path = NULL;
	void *lib;

	if (looked)
		return api.print ? &api : NULL;
	looked = 1;
	dl_iterate_phdr(find_llvm, &path);
	lib = path ? dlopen(path, RTLD_LAZY | RTLD_NOLOAD) : NULL;
	free(path);
	if (!lib || LLVM_SYM(lib, "LLVMContextCreate", api.context_create) ||
	    LLVM_SYM(lib, "LLVMCreateMemoryBufferWithContentsOfFile", api.buffer_from_file) ||
	    LLVM_SYM(lib, "LLVMParseBitcodeInContext2", api.parse) ||
	    LLVM_SYM(lib, "LLVMPrintModuleToString", api.print) ||
	    LLVM_SYM(lib, "LLVMDisposeMessage", api.dispose_message) ||
	    LLVM_SYM(lib, "LLVMDisposeModule", api.dispose_module) ||
	    LLVM_SYM(lib, "LLVMDisposeMemoryBuffer", api.dispose_buffer) ||
	    LLVM_SYM(lib, "LLVMContextDispose", api.dispose_context) ||
	    LLVM_SYM(lib, "LLVMContextSetDiagnosticHandler", api.set_diagnostic_handler)) {
		memset(&api, 0, sizeof(api));
		return NULL;
	}
	return &api; /* lib stays open: PoCL holds it for the process's life anyway */
}

/*
 * Bitcode up to 1/IRPOCL_HERE_RATIO of the text limit is printed in this
 * process: PoCL wrote it with this very library moments ago, and its text
 * is some 10 to 20 times its size, so the print is short and its text
 * within reach of the limit.  Larger bitcode goes to llvm-dis, a child
 * that the time and output limits stop.  (A print in a fork of this
 * process, as before, cost 35 ms per matmul kernel against 8 here, and
 * a fork of a process with PoCL's threads may only make async-signal-safe
 * calls, which LLVM's are not: docs/benchmarks.md.)
 */
#define IRPOCL_HERE_RATIO 32

/* Output cut at the size limit ends at its last whole line. */
static void cut_to_line(struct sbuf *b)
{
	const char *nl = b->len ? memrchr(b->buf, '\n', b->len) : NULL;

	b->len = nl ? (size_t)(nl - b->buf) + 1 : 0;
	if (b->buf)
		b->buf[b->len] = '\0';
}

/*
 * LLVM's diagnostics on the print's context: without a handler, LLVM
 * reports an error (bitcode it cannot read) by printing it and calling
 * exit(1), which would end the worker.  Dropped: the parse then fails
 * and says so itself, and a warning must not fail the print.
 */
static void llvm_diagnostic(void *info, void *opaque)
{
	(void)info;
	(void)opaque;
}

/* Prints bc as text into *text (at most max bytes, cut at a line end). */
static int llvm_print_here(const struct llvm_c *api, const char *bc, size_t max, char **text,
			   size_t *len, char *why, size_t n)
{
	void *ctx = api->context_create(), *buf = NULL, *mod = NULL;
	char *err = NULL, *out = NULL;
	struct sbuf b = SBUF_INIT;
	int rc = KERR_CHILD;
	size_t l;

	if (!ctx)
		return kerr_set(why, n, KERR_NOMEM, "libLLVM (in process): no context");
	api->set_diagnostic_handler(ctx, llvm_diagnostic, NULL);
	if (api->buffer_from_file(bc, &buf, &err)) {
		kerr_set(why, n, KERR_CHILD, "libLLVM (in process): %s",
			 err ? err : "cannot read the bitcode");
		goto out;
	}
	if (api->parse(ctx, buf, &mod) || !mod) {
		kerr_set(why, n, KERR_CHILD,
			 "libLLVM (in process): not LLVM bitcode this LLVM can read");
		goto out;
	}
	if (!(out = api->print(mod))) {
		kerr_set(why, n, KERR_CHILD, "libLLVM (in process): the print failed");
		goto out;
	}
	l = strlen(out);
	sbuf_add(&b, out, l < max ? l : max);
	if (l > max)
		cut_to_line(&b);
	*text = sbuf_detach(&b, len);
	rc = 0;
out:
	if (err)
		api->dispose_message(err);
	if (out)
		api->dispose_message(out);
	if (mod)
		api->dispose_module(mod);
	if (buf)
		api->dispose_buffer(buf);
	api->dispose_context(ctx);
	return rc;
}

/* ---- running a disassembler ------------------------------------------ */

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Parent side of one tool run: its two pipes and what came out of them. */
struct tool_io {
	int fd[2]; /* stdout, stderr; -1 once at EOF */
	struct sbuf *out;
	size_t max;
	char err[IRPOCL_STDERR_KEEP];
	size_t err_len;
	int truncated;      /* out reached max; the rest was not read */
	int read_errno;     /* errno of a failed read or poll */
	long long deadline; /* now_ms() value */
};

/* Reads what fd i has; returns 0, or -1 with errno on a read error. */
static int tool_read(struct tool_io *io, int i)
{
	char chunk[65536];
	ssize_t got = read(io->fd[i], chunk, sizeof(chunk));

	if (got < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -1;
	if (got == 0) {
		close(io->fd[i]);
		io->fd[i] = -1;
	} else if (i == 1) {
		size_t keep = sizeof(io->err) - 1 - io->err_len;

		keep = (size_t)got < keep ? (size_t)got : keep;
		memcpy(io->err + io->err_len, chunk, keep);
		io->err_len += keep;
		io->err[io->err_len] = '\0';
	} else {
		size_t room = io->max - io->out->len;

		if ((size_t)got > room) {
			got = (ssize_t)room;
			io->truncated = 1;
		}
		sbuf_add(io->out, chunk, (size_t)got);
	}
	return 0;
}

/*
 * Reads the tool's output until both pipes close, the output reaches its
 * limit or the deadline passes.  Returns 0, KERR_TIMEOUT or KERR_IO.
 */
static int tool_pump(struct tool_io *io)
{
	while ((io->fd[0] >= 0 || io->fd[1] >= 0) && !io->truncated) {
		struct pollfd pfd[2];
		long long left = io->deadline - now_ms();
		int i, r;

		if (left <= 0)
			return KERR_TIMEOUT;
		for (i = 0; i < 2; i++) {
			pfd[i].fd = io->fd[i];
			pfd[i].events = POLLIN;
			pfd[i].revents = 0;
		}
		r = poll(pfd, 2, left > 1000 ? 1000 : (int)left);
		if (r < 0 && errno != EINTR) {
			io->read_errno = errno;
			return KERR_IO;
		}
		for (i = 0; r > 0 && i < 2; i++) {
			if (pfd[i].revents && io->fd[i] >= 0 && tool_read(io, i)) {
				io->read_errno = errno;
				return KERR_IO;
			}
		}
	}
	return 0;
}

static void tool_kill(pid_t pid)
{
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL); /* in case it has not made its group yet */
}

/*
 * Waits for pid until the deadline, then kills it.  Returns 0 with
 * *status set, or -1 when it had to be killed for running too long.
 * Called once the tool's pipes have closed, when it is already exiting:
 * the first naps are short (0.1 ms, doubling to 10 ms), as a fixed 10 ms
 * nap cost every tool run about 10 ms (six runs for a three-kernel
 * program's stage 5).
 */
static int tool_wait(pid_t pid, long long deadline, int *status)
{
	long nap_ns = 100 * 1000;

	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR) {
			*status = 0;
			return 0; /* reaped by someone else: nothing to wait for */
		}
		if (now_ms() >= deadline) {
			tool_kill(pid);
			while (waitpid(pid, status, 0) < 0 && errno == EINTR)
				;
			return -1;
		}
		nanosleep(&(struct timespec){ 0, nap_ns }, NULL);
		if (nap_ns < 10 * 1000 * 1000)
			nap_ns *= 2;
	}
}

/* The first line of a tool's stderr, for a message. */
static const char *tool_first_line(char *err)
{
	char *nl = strchr(err, '\n');

	if (nl)
		*nl = '\0';
	return err[0] ? err : "(no message)";
}

static int tool_status(struct tool_io *io, const char *tool, int status, char *msg, size_t n)
{
	if (io->truncated)
		return 0; /* we stopped it once we had enough */
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status))
		return kerr_set(msg, n, KERR_CHILD, "'%s' exited with status %d: %s", tool,
				WEXITSTATUS(status), tool_first_line(io->err));
	return kerr_set(msg, n, KERR_CHILD, "'%s' was killed by signal %d", tool,
			WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static void close_pair(int fd[2])
{
	for (int i = 0; i < 2; i++) {
		if (fd[i] >= 0)
			close(fd[i]);
		fd[i] = -1;
	}
}

/*
 * A tool starts through posix_spawnp (a vfork on Linux): a fork would copy
 * the page tables of a process that holds PoCL, LLVM and the program's
 * buffers, about 15 ms per objdump in a check worker.  Stdin /dev/null,
 * its own process group (what a timeout kills), SIGPIPE at its default.
 * Returns 0, or the error number of the failed start (glibc has then
 * reaped the child).
 */
static int tool_spawn(char *const *argv, int in, int out, int err, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t def;
	int rc;

	if ((rc = posix_spawn_file_actions_init(&fa)))
		return rc;
	if ((rc = posix_spawnattr_init(&attr))) {
		posix_spawn_file_actions_destroy(&fa);
		return rc;
	}
	sigemptyset(&def);
	sigaddset(&def, SIGPIPE);
	if (!(rc = posix_spawn_file_actions_adddup2(&fa, in, STDIN_FILENO)) &&
	    !(rc = posix_spawn_file_actions_adddup2(&fa, out, STDOUT_FILENO)) &&
	    !(rc = posix_spawn_file_actions_adddup2(&fa, err, STDERR_FILENO)) &&
	    !(rc = posix_spawnattr_setpgroup(&attr, 0)) &&
	    !(rc = posix_spawnattr_setsigdefault(&attr, &def)) &&
	    !(rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF)))
		rc = posix_spawnp(pid, argv[0], &fa, &attr, argv, environ);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	return rc;
}

/*
 * Starts argv with stdin from /dev/null and its stdout and stderr into
 * io->fd.  Returns 0 with *pid set, KERR_NOTFOUND when argv[0] is not on
 * PATH, KERR_CHILD when it cannot be executed, or KERR_IO.
 */
static int tool_start(char *const *argv, struct tool_io *io, pid_t *pid, char *msg, size_t n)
{
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 };
	int null_fd, rc = 0, child_errno = 0;

	null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null_fd < 0 || pipe2(outp, O_CLOEXEC) || pipe2(errp, O_CLOEXEC)) {
		rc = kerr_set(msg, n, KERR_IO, "cannot set up pipes for '%s': %s", argv[0],
			      strerror(errno));
		goto out;
	}
	child_errno = tool_spawn(argv, null_fd, outp[1], errp[1], pid);
	if (child_errno) {
		*pid = -1;
		rc = child_errno == ENOENT
			     ? kerr_set(msg, n, KERR_NOTFOUND, "'%s' is not on PATH", argv[0])
			     : kerr_set(msg, n, KERR_CHILD, "cannot run '%s': %s", argv[0],
					strerror(child_errno));
		goto out;
	}
	io->fd[0] = outp[0];
	io->fd[1] = errp[0];
	outp[0] = errp[0] = -1;
out:
	if (null_fd >= 0)
		close(null_fd);
	close_pair(outp);
	close_pair(errp);
	return rc;
}

/*
 * Runs argv (no shell, PATH searched; argv[0] names the tool in messages) with
 * stdin from /dev/null and returns its stdout in *out (malloc'd,
 * NUL-terminated, caller frees), at most max bytes; output cut there ends
 * at its last whole line.  Returns 0, KERR_NOTFOUND (not on PATH),
 * KERR_CHILD (failed), KERR_TIMEOUT (IRPOCL_TOOL_SECONDS) or KERR_IO.
 */
static int tool_capture(char *const *argv, size_t max, char **out, size_t *len, char *msg, size_t n)
{
	struct sbuf b = SBUF_INIT;
	struct tool_io io = { .fd = { -1, -1 }, .out = &b, .max = max };
	pid_t pid = -1;
	int rc, status = 0;

	*out = NULL;
	*len = 0;
	rc = tool_start(argv, &io, &pid, msg, n);
	if (rc)
		goto out;
	io.deadline = now_ms() + IRPOCL_TOOL_SECONDS * 1000LL;
	rc = tool_pump(&io);
	if (rc || io.truncated)
		tool_kill(pid);
	if (tool_wait(pid, io.deadline, &status) || rc == KERR_TIMEOUT) {
		rc = kerr_set(msg, n, KERR_TIMEOUT, "'%s' ran longer than %d s", argv[0],
			      IRPOCL_TOOL_SECONDS);
		goto out;
	}
	if (rc) {
		rc = kerr_set(msg, n, rc, "cannot read the output of '%s': %s", argv[0],
			      strerror(io.read_errno));
		goto out;
	}
	rc = tool_status(&io, argv[0], status, msg, n);
	if (rc)
		goto out;
	if (io.truncated)
		cut_to_line(&b);
	*out = sbuf_detach(&b, len);
out:
	close_pair(io.fd);
	sbuf_release(&b);
	return rc;
}

/* ---- finding PoCL's artifacts ----------------------------------------- */

static int is_kind(const char *path, mode_t type, struct stat *st)
{
	struct stat local;

	if (!st)
		st = &local;
	return !lstat(path, st) && (st->st_mode & S_IFMT) == type;
}

/* The best geometry directory seen so far (see irpocl_collect in irpocl.h). */
struct irpocl_pick {
	char *dir;
	int generic; /* "0-0-0...": built for no particular local size */
	struct timespec mtime;
	long budget; /* directory entries still allowed to be looked at */
};

static int newer(struct timespec a, struct timespec b)
{
	return a.tv_sec != b.tv_sec ? a.tv_sec > b.tv_sec : a.tv_nsec > b.tv_nsec;
}

/* Calls fn(dir/name) for each entry of dir but "." and "..": -1 on budget. */
static int walk_dir(const char *dir, struct irpocl_pick *pick, const char *kernel,
		    void (*fn)(const char *path, const char *name, struct irpocl_pick *pick,
			       const char *kernel))
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int rc = 0;

	if (!d)
		return 0; /* vanished or unreadable: nothing of ours in it */
	while ((de = readdir(d))) {
		char *path;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (--pick->budget < 0) {
			rc = -1;
			break;
		}
		path = xasprintf("%s/%s", dir, de->d_name);
		fn(path, de->d_name, pick, kernel);
		free(path);
	}
	closedir(d);
	return rc;
}

static void consider_geometry(const char *path, const char *name, struct irpocl_pick *pick,
			      const char *kernel)
{
	struct stat st;
	char *bc = xasprintf("%s/parallel.bc", path);
	char *so = xasprintf("%s/%s.so", path, kernel);
	int generic = !strncmp(name, "0-0-0", 5);

	if (is_kind(path, S_IFDIR, &st) &&
	    (is_kind(bc, S_IFREG, NULL) || is_kind(so, S_IFREG, NULL)) &&
	    (!pick->dir || (pick->generic && !generic) ||
	     (pick->generic == generic && newer(st.st_mtim, pick->mtime)))) {
		free(pick->dir);
		pick->dir = xstrdup(path);
		pick->generic = generic;
		pick->mtime = st.st_mtim;
	}
	free(bc);
	free(so);
}

/* path: <cache>/<2 chars>/<hash>; its <kernel> directory holds geometries. */
static void consider_program(const char *path, const char *name, struct irpocl_pick *pick,
			     const char *kernel)
{
	char *kdir = xasprintf("%s/%s", path, kernel);

	if (is_kind(kdir, S_IFDIR, NULL))
		walk_dir(kdir, pick, kernel, consider_geometry);
	free(kdir);
}

static void consider_bucket(const char *path, const char *name, struct irpocl_pick *pick,
			    const char *kernel)
{
	if (is_kind(path, S_IFDIR, NULL))
		walk_dir(path, pick, kernel, consider_program);
}

static int valid_kernel_name(const char *kernel)
{
	return kernel && kernel[0] && strlen(kernel) <= IRPOCL_MAX_NAME && !strchr(kernel, '/') &&
	       strcmp(kernel, ".") && strcmp(kernel, "..");
}

/* Disassemblers for PoCL's bitcode, tried in order: PoCL 3.1 uses LLVM 15. */
static const char *const irpocl_disassemblers[] = { "llvm-dis-15", "llvm-dis" };

static int collect_ir(const char *bc, size_t bc_size, size_t max, char **text, size_t *len,
		      char *why, size_t n)
{
	const struct llvm_c *llvm = loaded_llvm();
	int rc = KERR_NOTFOUND;
	size_t i;

	why[0] = '\0';
	if (llvm && bc_size <= max / IRPOCL_HERE_RATIO) {
		rc = llvm_print_here(llvm, bc, max, text, len, why, n);
		if (!rc)
			return 0;
	}
	for (i = 0; i < ARRAY_SIZE(irpocl_disassemblers); i++) {
		char *argv[] = { (char *)irpocl_disassemblers[i], "-o", "-", (char *)bc, NULL };
		char one[256];

		if (why[0])
			strlcat(why, "; ", n);
		rc = tool_capture(argv, max, text, len, one, sizeof(one));
		if (!rc)
			break;
		strlcat(why, one, n);
	}
	return rc;
}

static int collect_asm(const char *so, size_t max, char **text, size_t *len, char *why, size_t n)
{
	char *argv[] = { "objdump", "-d", "--no-show-raw-insn", (char *)so, NULL };
	return tool_capture(argv, max, text, len, why, n);
}

int irpocl_collect(const char *cache_dir, const char *kernel, size_t max_bytes, char **ir_text,
		   size_t *ir_len, char **asm_text, size_t *asm_len, char *msg, size_t n)
{
	struct irpocl_pick pick = { .budget = IRPOCL_MAX_DIRENTS };
	char *bc = NULL, *so = NULL;
	char ir_why[512] = "no parallel.bc", asm_why[512] = "no .so";
	struct stat st;
	int rc = 0;

	*ir_text = *asm_text = NULL;
	*ir_len = *asm_len = 0;
	if (!valid_kernel_name(kernel) || !cache_dir || !max_bytes)
		return kerr_set(msg, n, KERR_INVALID,
				"bad arguments to collect kernel '%s' from '%s'",
				kernel ? kernel : "(null)", cache_dir ? cache_dir : "(null)");
	if (walk_dir(cache_dir, &pick, kernel, consider_bucket) || pick.budget < 0) {
		rc = kerr_set(msg, n, KERR_LIMIT, "more than %d entries under PoCL cache '%s'",
			      IRPOCL_MAX_DIRENTS, cache_dir);
		goto out;
	}
	if (!pick.dir) {
		rc = kerr_set(msg, n, KERR_NOTFOUND,
			      "no PoCL build of kernel '%s' under '%s' (looked for "
			      "*/*/%s/*/parallel.bc or %s.so)",
			      kernel, cache_dir, kernel, kernel);
		goto out;
	}
	bc = xasprintf("%s/parallel.bc", pick.dir);
	so = xasprintf("%s/%s.so", pick.dir, kernel);
	if (is_kind(bc, S_IFREG, &st))
		collect_ir(bc, (size_t)st.st_size, max_bytes, ir_text, ir_len, ir_why,
			   sizeof(ir_why));
	if (is_kind(so, S_IFREG, NULL))
		collect_asm(so, max_bytes, asm_text, asm_len, asm_why, sizeof(asm_why));
	if (!*ir_text && !*asm_text)
		rc = kerr_set(msg, n, KERR_NOTFOUND,
			      "no code for kernel '%s' in '%s': IR: %s; asm: %s", kernel, pick.dir,
			      ir_why, asm_why);
out:
	free(pick.dir);
	free(bc);
	free(so);
	return rc;
}
