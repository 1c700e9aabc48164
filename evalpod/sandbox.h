/*
 * sandbox.h - confining the worker processes that run candidate kernels.
 *
 * On PoCL the candidate's kernel is native code running inside the worker,
 * on PoCL's own threads, so a hostile kernel (inline assembly) can make any
 * system call the worker could.  This module takes away what such code
 * could use to read the reference answers, reach the network, touch other
 * processes or leave a mark on the host.  It is a stack of independent
 * layers; each one that the kernel or container offers is applied, a layer
 * that is not offered is recorded as unavailable in the report:
 *
 *   environment  sandbox_worker_env: the worker inherits only the variables
 *                of an allowlist (locale, PATH, OpenCL / GPU driver and
 *                sanitizer settings).  Cloud credentials, batch URLs,
 *                Kubernetes service variables and HOME never reach it.
 *   rlimits      no core files; RLIMIT_FSIZE and RLIMIT_CPU from the
 *                config; RLIMIT_NOFILE capped at 4096.  Limits are only
 *                ever lowered.  RLIMIT_AS is left alone on purpose: ASan and
 *                GPU drivers reserve huge address ranges (the parent watches
 *                RSS instead).  RLIMIT_CPU counts all threads together.
 *   prctl        no_new_privs (setuid binaries do not elevate; required by
 *                Landlock and seccomp) and not dumpable (no core, no
 *                ptrace or /proc/PID/mem access from other same-uid
 *                processes).
 *   namespaces   best effort: new network and IPC namespaces (no network
 *                interface but a down loopback; no shared SysV IPC).  As
 *                non-root a user namespace is created first, mapping the
 *                current ids.  A container that forbids it is recorded.
 *   Landlock     the filesystem: read-only system libraries, OpenCL ICD
 *                files, CPU / PCI / GPU topology in /sys and the process's
 *                own /proc/PID; read-write private_dir; read-write with
 *                ioctl GPU device nodes; execute only the linker (and its
 *                ELF interpreter).  Everything else, e.g. the reference
 *                answers, /etc/passwd, /root, other processes' /proc
 *                entries, is refused with EACCES.  Where the ABI has them:
 *                all TCP bind/connect refused (ABI 4), abstract unix
 *                sockets and signals to processes outside the sandbox
 *                refused (ABI 6).  Landlock does not cover stat(),
 *                readlink() or access(): file existence stays visible.
 *   seccomp      a deny list (GPU drivers need ioctl, mmap and friends, so
 *                an allow list would break them): creating sockets,
 *                namespaces, mounts, ptrace and cross-process memory
 *                access, bpf, perf, io_uring, keyrings, modules, reboot,
 *                clocks, identity changes and the like fail with EPERM.
 *                kill and its relatives only reach this process (the pid
 *                at sandbox_enter), not even its own children.  clone3
 *                fails with ENOSYS (its flags are behind a pointer; glibc
 *                then falls back to clone).  System calls of a foreign ABI
 *                (i386 int 0x80, x32) fail with ENOSYS.  The filter is
 *                installed with TSYNC, so every thread gets it.
 *   spawn lock   sandbox_lock_spawn: no execve, fork or process-creating
 *                clone from then on; threads stay allowed.
 *
 * Order of calls in a worker (established on PoCL 3.1, Linux 6.18):
 *
 *   1. sandbox_enter, while the process is still single-threaded, i.e.
 *      BEFORE the first OpenCL call.  PoCL's pthread device starts its
 *      worker threads inside clGetDeviceIDs; the kernels run on those
 *      threads and the linker is spawned from them.  Landlock below ABI 8
 *      (no LANDLOCK_RESTRICT_SELF_TSYNC) and unshare() change only the
 *      calling thread and the threads and children it creates later, so a
 *      sandbox entered after the device is open leaves the threads that
 *      run the candidate's code with the whole filesystem.  sandbox_enter
 *      therefore refuses (KERR_INVALID) to run in a multi-threaded process
 *      unless Landlock can synchronise all threads (ABI >= 8) or the
 *      caller sets allow_running_threads.  The rules above are enough for
 *      the ICD loader and PoCL to initialise afterwards.
 *   2. Open the device (POCL_CACHE_DIR and TMPDIR inside private_dir), build
 *      the programs and launch every kernel once with each local size it
 *      will use: PoCL compiles and links (fork + exec of ld) the work-group
 *      function at the first launch of each kernel and local size.
 *   3. sandbox_lock_spawn.
 *
 * A worker built with ASan must end with _exit() (or run with
 * LSAN_OPTIONS=detect_leaks=0): LeakSanitizer's exit-time check needs
 * ptrace, which the sandbox refuses, and then reports a fatal error.
 *
 * Files: sandbox.c holds the entry points, the environment allowlist, the
 * rlimits, prctl and namespace layers; sandbox-landlock.c the Landlock
 * layer; sandbox-seccomp.c the seccomp layer; sandbox-internal.h is what
 * they share.
 */
#ifndef EVALPOD_SANDBOX_H
#define EVALPOD_SANDBOX_H

#include <jansson.h>
#include <stddef.h>

struct sandbox_cfg {
	/* The worker's own directory, read-write; must exist.  sandbox_enter
	   points TMPDIR here. */
	const char *private_dir;
	/* Extra read-only paths, NULL-terminated; may be NULL.  Missing ones
	   are skipped. */
	const char *const *read_paths;
	/* NULL, or the program PoCL runs to link kernels (e.g. "/usr/bin/ld"):
	   the only file (with its ELF interpreter) the worker may execute. */
	const char *linker;
	/* More programs the worker may execute (each with its ELF interpreter):
	   absolute paths, NULL-terminated, may be NULL; missing ones are
	   skipped.  The check worker runs the disassemblers of stage 5. */
	const char *const *tools;
	/* RLIMIT_FSIZE in bytes; 0 leaves it. */
	unsigned long long max_file_bytes;
	/* RLIMIT_CPU soft limit in seconds (rounded up); the hard limit is 5 s
	   more; 0 leaves it. */
	double cpu_seconds;
	/* 1: accept a process whose other threads Landlock and the namespaces
	   cannot reach (see above), e.g. a GPU worker whose kernels never run
	   on host threads.  The report then records how many threads were
	   left out. */
	int allow_running_threads;
};

/*
 * Confines the calling process for good.  Applies every layer it can (see
 * above); one that the kernel or container does not offer is recorded as
 * "unavailable: <reason>", not an error.  *report (if report is not NULL)
 * receives a new JSON object, also on failure, with one member per layer
 * ("rlimits", "no_new_privs", "dumpable", "namespaces", "landlock",
 * "seccomp") saying what applied, the Landlock ABI, rule and syscall
 * counts; the caller decrefs it.
 *
 * Returns 0, or a negative KERR_* with msg set when a layer that is
 * available failed to apply, or when other threads are running and could
 * not be confined (KERR_INVALID).  After a failure some layers may already
 * be in force and the worker must not run candidate code.
 */
int sandbox_enter(const struct sandbox_cfg *cfg, json_t **report, char *msg, size_t n);

/*
 * Second stage: from now on no thread of the process may execute a
 * program or create a process (execve, execveat, fork, vfork, clone
 * without CLONE_THREAD fail with EPERM); threads can still be created.
 * Call it once every kernel the worker will launch has been linked.
 * Records the result in report's "seccomp" member (report may be NULL).
 * Returns 0 (also when seccomp is unavailable, which is recorded) or a
 * negative KERR_* with msg.
 */
int sandbox_lock_spawn(json_t *report, char *msg, size_t n);

/*
 * A clean environment for a worker: a new NULL-terminated array holding
 * the "NAME=value" strings of env (may be NULL) whose names are on the
 * allowlist, in their order, followed by the strings of extra (may be NULL),
 * which replace inherited ones of the same name.  Names that look like
 * credentials (containing KEY, TOKEN, SECRET, PASSWORD, CREDENTIAL) are
 * dropped even under an allowed prefix such as NVIDIA_.  Never NULL (aborts
 * on exhaustion).  Release with sandbox_env_free.
 */
char **sandbox_worker_env(char *const *env, const char *const *extra);

/* Frees an array from sandbox_worker_env and its strings; NULL does nothing. */
void sandbox_env_free(char **env);

#endif
