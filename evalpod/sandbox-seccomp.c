/*
 * sandbox-seccomp.c - the seccomp-BPF layer of the sandbox: the deny lists
 * of stage 1 (sandbox_enter: sockets, namespaces, mounts, ptrace, bpf,
 * clocks, identity changes, signals to other processes, ...) and stage 2
 * (sandbox_lock_spawn: execve, fork, process-creating clone), compiled to
 * one self-contained BPF block per rule and installed with TSYNC on every
 * thread.  See sandbox.h for the lists' intent; sandbox.c calls in here.
 */
#include "sandbox-internal.h"
#include "err.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define SBX_AUDIT_ARCH AUDIT_ARCH_X86_64
#define SBX_ARCH_NAME  "x86_64"
#elif defined(__aarch64__)
#define SBX_AUDIT_ARCH AUDIT_ARCH_AARCH64
#define SBX_ARCH_NAME  "aarch64"
#endif

#ifdef SBX_AUDIT_ARCH

enum sc_action {
	SC_EPERM,       /* always EPERM */
	SC_ENOSYS,      /* always ENOSYS */
	SC_SELF_ONLY,   /* EPERM unless the low 32 bits of arg0 are our pid */
	SC_THREAD_ONLY, /* EPERM unless arg0 has CLONE_THREAD */
};

struct sc_rule {
	int nr;
	enum sc_action action;
};

/* Stage 1.  Network sockets are refused at creation (sendto and recv on
   inherited descriptors stay harmless); memfd_secret and mbind stay
   allowed because drivers use them. */
static const struct sc_rule sc_enter[] = {
	{ __NR_socket, SC_EPERM },
	{ __NR_socketpair, SC_EPERM },
	{ __NR_connect, SC_EPERM },
	{ __NR_bind, SC_EPERM },
	{ __NR_listen, SC_EPERM },
	{ __NR_accept, SC_EPERM },
	{ __NR_accept4, SC_EPERM },
	{ __NR_unshare, SC_EPERM },
	{ __NR_setns, SC_EPERM },
	{ __NR_mount, SC_EPERM },
	{ __NR_umount2, SC_EPERM },
	{ __NR_pivot_root, SC_EPERM },
	{ __NR_chroot, SC_EPERM },
	{ __NR_ptrace, SC_EPERM },
	{ __NR_process_vm_readv, SC_EPERM },
	{ __NR_process_vm_writev, SC_EPERM },
	{ __NR_kcmp, SC_EPERM },
	{ __NR_pidfd_open, SC_EPERM },
	{ __NR_pidfd_getfd, SC_EPERM },
	{ __NR_pidfd_send_signal, SC_EPERM },
	{ __NR_bpf, SC_EPERM },
	{ __NR_perf_event_open, SC_EPERM },
	{ __NR_userfaultfd, SC_EPERM },
	{ __NR_io_uring_setup, SC_EPERM },
	{ __NR_io_uring_enter, SC_EPERM },
	{ __NR_io_uring_register, SC_EPERM },
	{ __NR_keyctl, SC_EPERM },
	{ __NR_add_key, SC_EPERM },
	{ __NR_request_key, SC_EPERM },
	{ __NR_init_module, SC_EPERM },
	{ __NR_finit_module, SC_EPERM },
	{ __NR_delete_module, SC_EPERM },
	{ __NR_kexec_load, SC_EPERM },
	{ __NR_kexec_file_load, SC_EPERM },
	{ __NR_reboot, SC_EPERM },
	{ __NR_swapon, SC_EPERM },
	{ __NR_swapoff, SC_EPERM },
	{ __NR_acct, SC_EPERM },
	{ __NR_quotactl, SC_EPERM },
	{ __NR_syslog, SC_EPERM },
	{ __NR_settimeofday, SC_EPERM },
	{ __NR_clock_settime, SC_EPERM },
	{ __NR_clock_adjtime, SC_EPERM },
	{ __NR_adjtimex, SC_EPERM },
#ifdef __NR_iopl
	{ __NR_iopl, SC_EPERM },
#endif
#ifdef __NR_ioperm
	{ __NR_ioperm, SC_EPERM },
#endif
	{ __NR_name_to_handle_at, SC_EPERM },
	{ __NR_open_by_handle_at, SC_EPERM },
	{ __NR_setuid, SC_EPERM },
	{ __NR_setgid, SC_EPERM },
	{ __NR_setreuid, SC_EPERM },
	{ __NR_setregid, SC_EPERM },
	{ __NR_setresuid, SC_EPERM },
	{ __NR_setresgid, SC_EPERM },
	{ __NR_setfsuid, SC_EPERM },
	{ __NR_setfsgid, SC_EPERM },
	{ __NR_setgroups, SC_EPERM },
	{ __NR_capset, SC_EPERM },
	{ __NR_personality, SC_EPERM },
	{ __NR_vhangup, SC_EPERM },
	{ __NR_lookup_dcookie, SC_EPERM },
	{ __NR_fanotify_init, SC_EPERM },
	{ __NR_move_mount, SC_EPERM },
	{ __NR_open_tree, SC_EPERM },
	{ __NR_fsopen, SC_EPERM },
	{ __NR_fsconfig, SC_EPERM },
	{ __NR_fsmount, SC_EPERM },
	{ __NR_fspick, SC_EPERM },
	{ __NR_mount_setattr, SC_EPERM },
	{ __NR_process_madvise, SC_EPERM },
	{ __NR_migrate_pages, SC_EPERM },
	{ __NR_move_pages, SC_EPERM },
	/* signals: abort() and raise() still work, nothing reaches other processes */
	{ __NR_kill, SC_SELF_ONLY },
	{ __NR_tkill, SC_SELF_ONLY },
	{ __NR_tgkill, SC_SELF_ONLY },
	{ __NR_rt_sigqueueinfo, SC_SELF_ONLY },
	{ __NR_rt_tgsigqueueinfo, SC_SELF_ONLY },
	{ __NR_clone3, SC_ENOSYS },
};

/* Stage 2 (sandbox_lock_spawn). */
static const struct sc_rule sc_lock[] = {
	{ __NR_execve, SC_EPERM },      { __NR_execveat, SC_EPERM },
#ifdef __NR_fork
	{ __NR_fork, SC_EPERM },
#endif
#ifdef __NR_vfork
	{ __NR_vfork, SC_EPERM },
#endif
	{ __NR_clone, SC_THREAD_ONLY },
};

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SC_ARG0_LO offsetof(struct seccomp_data, args[0])
#else
#define SC_ARG0_LO (offsetof(struct seccomp_data, args[0]) + 4)
#endif

#define SC_RET(v)     ((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, (v)))
#define SC_LD(off)    ((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off)))
#define SC_EPERM_RET  SC_RET(SECCOMP_RET_ERRNO | EPERM)
#define SC_ENOSYS_RET SC_RET(SECCOMP_RET_ERRNO | ENOSYS)
#define SC_ALLOW      SC_RET(SECCOMP_RET_ALLOW)

struct sc_prog {
	struct sock_filter f[512];
	unsigned short len;
};

static void sc_put(struct sc_prog *p, struct sock_filter insn)
{
	if (p->len < sizeof(p->f) / sizeof(p->f[0]))
		p->f[p->len] = insn;
	p->len++;
}

static void sc_jump(struct sc_prog *p, unsigned short code, uint32_t k, uint8_t jt, uint8_t jf)
{
	sc_put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | code | BPF_K, k, jt, jf));
}

/* One self-contained block per rule: compare the number, skip the block
   when it differs.  Each block ends in a return, so no jump crosses
   another block and the program needs no label fixing. */
static void sc_rule_block(struct sc_prog *p, const struct sc_rule *r, uint32_t pid)
{
	switch (r->action) {
	case SC_EPERM:
	case SC_ENOSYS:
		sc_jump(p, BPF_JEQ, (uint32_t)r->nr, 0, 1);
		sc_put(p, r->action == SC_EPERM ? SC_EPERM_RET : SC_ENOSYS_RET);
		break;
	case SC_SELF_ONLY:
	case SC_THREAD_ONLY:
		sc_jump(p, BPF_JEQ, (uint32_t)r->nr, 0, 4);
		sc_put(p, SC_LD(SC_ARG0_LO));
		if (r->action == SC_SELF_ONLY)
			sc_jump(p, BPF_JEQ, pid, 0, 1);
		else
			sc_jump(p, BPF_JSET, CLONE_THREAD, 0, 1);
		sc_put(p, SC_ALLOW);
		sc_put(p, SC_EPERM_RET);
		break;
	}
}

/* Builds the filter for rules: a foreign ABI gets ENOSYS for everything
   (a filter keyed on our numbers would not mean anything there). */
static void sc_build(struct sc_prog *p, const struct sc_rule *rules, size_t count, uint32_t pid)
{
	p->len = 0;
	sc_put(p, SC_LD(offsetof(struct seccomp_data, arch)));
	sc_jump(p, BPF_JEQ, SBX_AUDIT_ARCH, 1, 0);
	sc_put(p, SC_ENOSYS_RET);
	sc_put(p, SC_LD(offsetof(struct seccomp_data, nr)));
#ifdef __x86_64__
	/* x32 system calls carry the x86_64 arch with bit 30 set in nr */
	sc_jump(p, BPF_JGE, 0x40000000u, 0, 1);
	sc_put(p, SC_ENOSYS_RET);
#endif
	for (size_t i = 0; i < count; i++)
		sc_rule_block(p, &rules[i], pid);
	sc_put(p, SC_ALLOW);
}

/* Installs rules on every thread; 0, -errno, or the tid of a thread that
   could not be synchronised. */
static long sc_install(const struct sc_rule *rules, size_t count)
{
	static struct sc_prog prog; /* ~4 KiB: kept off the stack */
	struct sock_fprog fp;
	long rc;

	sc_build(&prog, rules, count, (uint32_t)getpid());
	if (prog.len > sizeof(prog.f) / sizeof(prog.f[0]))
		return -E2BIG;
	fp.len = prog.len;
	fp.filter = prog.f;
	rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &fp);
	return rc < 0 ? -errno : rc;
}

static size_t sc_count(const struct sc_rule *rules, size_t count, enum sc_action action)
{
	size_t c = 0;

	for (size_t i = 0; i < count; i++)
		c += rules[i].action == action;
	return c;
}

#define SC_RULES(t) (t), (sizeof(t) / sizeof((t)[0]))

/* Installs one stage on every thread; 0 or KERR_IO with msg. */
static int sc_stage(const struct sc_rule *rules, size_t count, const char *what, char *msg,
		    size_t n)
{
	long rc = sc_install(rules, count);

	if (rc < 0)
		return kerr_set(msg, n, KERR_IO, "seccomp %s: %s", what, strerror((int)-rc));
	if (rc > 0)
		return kerr_set(msg, n, KERR_IO, "seccomp %s: thread %ld could not be synchronised",
				what, rc);
	return 0;
}

static int sc_enter_stage(json_t *sj, char *msg, size_t n)
{
	int rc = sc_stage(SC_RULES(sc_enter), "filter", msg, n);

	json_object_set_new(sj, "arch", json_string(SBX_ARCH_NAME));
	json_object_set_new(sj, "denied",
			    json_integer((json_int_t)sc_count(SC_RULES(sc_enter), SC_EPERM)));
	json_object_set_new(sj, "self_only",
			    json_integer((json_int_t)sc_count(SC_RULES(sc_enter), SC_SELF_ONLY)));
	json_object_set_new(sj, "spawn", json_string("linker-only"));
	json_object_set_new(sj, "status", json_string(rc ? "failed" : "applied"));
	return rc;
}

static int sc_lock_stage(json_t *sj, char *msg, size_t n)
{
	int rc = sc_stage(SC_RULES(sc_lock), "spawn lock", msg, n);

	json_object_set_new(sj, "spawn", json_string(rc ? "lock failed" : "none"));
	json_object_set_new(sj, "spawn_denied",
			    json_integer((json_int_t)(sizeof(sc_lock) / sizeof(sc_lock[0]))));
	return rc;
}

/* Filters need seccomp in the kernel: PR_GET_SECCOMP fails without it. */
static int sc_available(json_t *sj)
{
	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0)
		return 1;
	sandbox__set_unavailable(sj, errno);
	return 0;
}

#else /* !SBX_AUDIT_ARCH */

static int sc_available(json_t *sj)
{
	json_object_set_new(sj, "status", json_string("unavailable: architecture not supported"));
	return 0;
}

static int sc_enter_stage(json_t *sj, char *msg, size_t n)
{
	return 0;
}

static int sc_lock_stage(json_t *sj, char *msg, size_t n)
{
	return 0;
}

#endif /* SBX_AUDIT_ARCH */

int sandbox__apply_seccomp(json_t *rep, char *msg, size_t n)
{
	json_t *sj = json_object();

	json_object_set_new(rep, "seccomp", sj);
	return sc_available(sj) ? sc_enter_stage(sj, msg, n) : 0;
}

int sandbox__seccomp_lock_spawn(json_t *sj, char *msg, size_t n)
{
	return sc_available(sj) ? sc_lock_stage(sj, msg, n) : 0;
}
