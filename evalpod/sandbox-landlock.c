/*
 * sandbox-landlock.c - the Landlock layer of the sandbox: the filesystem
 * rules (system libraries, OpenCL ICD files, topology in /sys, /proc/self,
 * GPU device nodes, private_dir, the linker and tools with their ELF
 * interpreters), TCP bind/connect (ABI 4) and scoping (ABI 6), applied to
 * the calling process (to all threads with TSYNC, ABI 8).  See sandbox.h
 * for what the layer allows; sandbox.c calls it from sandbox_enter.
 */
#include "sandbox-internal.h"
#include "err.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/landlock.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The system header may predate these (Debian 12 ships ABI 2). */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#endif
#ifndef LANDLOCK_ACCESS_NET_CONNECT_TCP
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif
#ifndef LANDLOCK_RESTRICT_SELF_TSYNC
#define LANDLOCK_RESTRICT_SELF_TSYNC (1U << 3)
#endif

/* Our own copy of the ruleset attribute: the kernel takes its size. */
struct sbx_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

#define LL_READ  (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define LL_WRITE (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE)
/* Rights that make sense on a file; the kernel refuses others there. */
#define LL_FILE_RIGHTS                                                                             \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |                              \
	 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |                              \
	 LANDLOCK_ACCESS_FS_IOCTL_DEV)
/* private_dir gets everything but executing, device nodes (root could mknod
   a disk there and read it raw) and device ioctls. */
#define LL_PRIVATE_DENY                                                                            \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_MAKE_CHAR |                               \
	 LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_IOCTL_DEV)

/* The first ABI that knows each filesystem right. */
static const struct {
	int abi;
	uint64_t rights;
} ll_fs_abi[] = {
	{ .abi = 1, .rights = (1ULL << 13) - 1 },
	{ .abi = 2, .rights = LANDLOCK_ACCESS_FS_REFER },
	{ .abi = 3, .rights = LANDLOCK_ACCESS_FS_TRUNCATE },
	{ .abi = 5, .rights = LANDLOCK_ACCESS_FS_IOCTL_DEV },
};

enum ll_kind { LL_RO, LL_DEV, LL_GPU };

static const uint64_t ll_kind_rights[] = {
	[LL_RO] = LL_READ,
	[LL_DEV] = LANDLOCK_ACCESS_FS_READ_FILE | LL_WRITE,
	[LL_GPU] = LL_READ | LL_WRITE | LANDLOCK_ACCESS_FS_IOCTL_DEV,
};

/* What the ICD loader, PoCL (with hwloc and LLVM), the linker and GPU
   drivers read; missing paths are skipped.  /dev/nvidia* is globbed. */
static const struct {
	const char *path;
	enum ll_kind kind;
} ll_rules[] = {
	{ "/usr", LL_RO },
	{ "/lib", LL_RO },
	{ "/lib32", LL_RO },
	{ "/lib64", LL_RO },
	{ "/libx32", LL_RO },
	{ "/bin", LL_RO },
	{ "/sbin", LL_RO },
	{ "/opt", LL_RO },
	{ "/etc/ld.so.cache", LL_RO },
	{ "/etc/ld.so.conf", LL_RO },
	{ "/etc/ld.so.conf.d", LL_RO },
	{ "/etc/OpenCL", LL_RO },
	{ "/etc/alternatives", LL_RO },
	{ "/etc/localtime", LL_RO },
	{ "/proc/cpuinfo", LL_RO },
	{ "/proc/meminfo", LL_RO },
	{ "/proc/stat", LL_RO },
	{ "/proc/driver/nvidia", LL_RO },
	{ "/sys/devices", LL_RO },
	{ "/sys/bus/pci", LL_RO },
	{ "/sys/class/drm", LL_RO },
	{ "/sys/module/nvidia", LL_RO },
	/* hwloc sizes the CPU device from the cgroup's cpuset */
	{ "/sys/fs/cgroup", LL_RO },
	{ "/sys/kernel/mm/hugepages", LL_RO },
	{ "/dev/null", LL_DEV },
	{ "/dev/zero", LL_DEV },
	{ "/dev/urandom", LL_DEV },
	{ "/dev/random", LL_DEV },
	{ "/dev/dri", LL_GPU },
	{ "/dev/kfd", LL_GPU },
};

struct ll_state {
	int ruleset;
	uint64_t handled;
	unsigned rules, skipped;
	json_t *exec; /* array of the executable paths */
};

int sandbox__landlock_abi(void)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

	return abi < 0 ? -errno : (int)abi;
}

/* Adds a rule for the object fd refers to; rights are masked to what the
   ABI handles and, for a non-directory, to file rights. */
static int ll_add_fd(struct ll_state *ll, int fd, uint64_t rights, const char *path, char *msg,
		     size_t n)
{
	struct landlock_path_beneath_attr pb = { 0 };
	struct stat st;

	if (fstat(fd, &st))
		return kerr_set(msg, n, KERR_IO, "landlock: stat '%s': %s", path, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		rights &= LL_FILE_RIGHTS;
	pb.allowed_access = rights & ll->handled;
	pb.parent_fd = fd;
	if (!pb.allowed_access)
		return 0;
	if (syscall(SYS_landlock_add_rule, ll->ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0))
		return kerr_set(msg, n, KERR_IO, "landlock: rule for '%s': %s", path,
				strerror(errno));
	ll->rules++;
	return 0;
}

/* Adds a rule for path; a path that does not exist is skipped, unless
   required. */
static int ll_add(struct ll_state *ll, const char *path, uint64_t rights, int required, char *msg,
		  size_t n)
{
	int fd = open(path, O_PATH | O_CLOEXEC);
	int rc;

	if (fd < 0) {
		if (!required && (errno == ENOENT || errno == ENOTDIR || errno == EACCES)) {
			ll->skipped++;
			return 0;
		}
		return kerr_set(msg, n, KERR_NOTFOUND, "landlock: open '%s': %s", path,
				strerror(errno));
	}
	rc = ll_add_fd(ll, fd, rights, path, msg, n);
	close(fd);
	return rc;
}

/* /dev/nvidia0, /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-caps, ... */
static int ll_add_nvidia(struct ll_state *ll, char *msg, size_t n)
{
	DIR *d = opendir("/dev");
	struct dirent *e;
	int rc = 0;

	if (!d)
		return 0;
	while (!rc && (e = readdir(d))) {
		char path[300];

		if (strncmp(e->d_name, "nvidia", 6))
			continue;
		snprintf(path, sizeof(path), "/dev/%s", e->d_name);
		rc = ll_add(ll, path, ll_kind_rights[LL_GPU], 0, msg, n);
	}
	closedir(d);
	return rc;
}

/* The ELF interpreter of path into out; 1 when it has none. */
static int elf_interp(const char *path, char *out, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf64_Ehdr eh;
	int rc = 1;

	if (fd < 0)
		return -1;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64)
		goto out;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		size_t len;

		if (pread(fd, &ph, sizeof(ph),
			  (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) !=
		    (ssize_t)sizeof(ph))
			break;
		if (ph.p_type != PT_INTERP)
			continue;
		len = ph.p_filesz < n ? (size_t)ph.p_filesz : n - 1;
		if (pread(fd, out, len, (off_t)ph.p_offset) != (ssize_t)len)
			break;
		out[len] = '\0';
		rc = 0;
		break;
	}
out:
	close(fd);
	return rc;
}

/* Execute (and read) on one file, resolved, recorded in ll->exec. */
static int ll_add_exec(struct ll_state *ll, const char *path, char *msg, size_t n)
{
	char real[PATH_MAX];

	if (!realpath(path, real))
		return kerr_set(msg, n, KERR_NOTFOUND, "landlock: linker '%s': %s", path,
				strerror(errno));
	json_array_append_new(ll->exec, json_string(real));
	return ll_add(ll, real, LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE, 1, msg,
		      n);
}

/* The kernel checks EXECUTE on the ELF interpreter too, so the linker's
   ld.so is executable as well.  That lets "ld.so PROGRAM" run any readable
   program, but only inside this same sandbox, and only until
   sandbox_lock_spawn. */
static int ll_add_linker(struct ll_state *ll, const char *linker, char *msg, size_t n)
{
	char interp[PATH_MAX];
	int rc = ll_add_exec(ll, linker, msg, n);

	if (!rc && elf_interp(linker, interp, sizeof(interp)) == 0)
		rc = ll_add_exec(ll, interp, msg, n);
	return rc;
}

/* The fd of /proc/self stays open for the life of the process: a rule
   holds the inode, but procfs makes a new inode for /proc/PID whenever its
   dentry is dropped, so the dentry has to be pinned for the rule to keep
   matching. */
static int ll_add_proc_self(struct ll_state *ll, char *msg, size_t n)
{
	static int proc_self_fd = -1;

	if (proc_self_fd < 0)
		proc_self_fd = open("/proc/self", O_PATH | O_CLOEXEC);
	if (proc_self_fd < 0)
		return kerr_set(msg, n, KERR_IO, "landlock: open /proc/self: %s", strerror(errno));
	return ll_add_fd(ll, proc_self_fd, LL_READ, "/proc/self", msg, n);
}

static int ll_add_all(struct ll_state *ll, const struct sandbox_cfg *cfg, char *msg, size_t n)
{
	int rc = 0;

	for (size_t i = 0; !rc && i < sizeof(ll_rules) / sizeof(ll_rules[0]); i++)
		rc = ll_add(ll, ll_rules[i].path, ll_kind_rights[ll_rules[i].kind], 0, msg, n);
	for (size_t i = 0; !rc && cfg->read_paths && cfg->read_paths[i]; i++)
		rc = ll_add(ll, cfg->read_paths[i], LL_READ, 0, msg, n);
	if (!rc)
		rc = ll_add_nvidia(ll, msg, n);
	if (!rc)
		rc = ll_add_proc_self(ll, msg, n);
	if (!rc)
		rc = ll_add(ll, cfg->private_dir, ~LL_PRIVATE_DENY, 1, msg, n);
	if (!rc && cfg->linker)
		rc = ll_add_linker(ll, cfg->linker, msg, n);
	for (size_t i = 0; !rc && cfg->tools && cfg->tools[i]; i++)
		if (!access(cfg->tools[i], X_OK))
			rc = ll_add_linker(ll, cfg->tools[i], msg, n);
	return rc;
}

/* Creates the ruleset for abi: every right the ABI knows is handled. */
static int ll_create(struct ll_state *ll, int abi, json_t *lj, char *msg, size_t n)
{
	struct sbx_ruleset_attr attr = { 0 };
	size_t size = sizeof(attr.handled_access_fs);

	for (size_t i = 0; i < sizeof(ll_fs_abi) / sizeof(ll_fs_abi[0]); i++)
		if (abi >= ll_fs_abi[i].abi)
			attr.handled_access_fs |= ll_fs_abi[i].rights;
	if (abi >= 4) {
		attr.handled_access_net =
			LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
		size = offsetof(struct sbx_ruleset_attr, scoped);
	}
	if (abi >= 6) {
		attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
		size = sizeof(attr);
	}
	ll->handled = attr.handled_access_fs;
	ll->ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (ll->ruleset < 0)
		return kerr_set(msg, n, KERR_IO, "landlock: create ruleset: %s", strerror(errno));
	json_object_set_new(lj, "tcp_denied", json_boolean(abi >= 4));
	json_object_set_new(lj, "scoped", json_boolean(abi >= 6));
	return 0;
}

int sandbox__apply_landlock(const struct sandbox_cfg *cfg, int threads, json_t *rep, char *msg,
			    size_t n)
{
	struct ll_state ll = { .ruleset = -1, .exec = json_array() };
	json_t *lj = json_object();
	int abi = sandbox__landlock_abi(), rc;
	unsigned flags = 0;

	json_object_set_new(rep, "landlock", lj);
	json_object_set_new(lj, "exec", ll.exec);
	if (abi < 0) {
		sandbox__set_unavailable(lj, -abi);
		return 0;
	}
	json_object_set_new(lj, "abi", json_integer(abi));
	if (abi >= 8 && threads > 1)
		flags |= LANDLOCK_RESTRICT_SELF_TSYNC;
	rc = ll_create(&ll, abi, lj, msg, n);
	if (!rc)
		rc = ll_add_all(&ll, cfg, msg, n);
	if (!rc && syscall(SYS_landlock_restrict_self, ll.ruleset, flags))
		rc = kerr_set(msg, n, KERR_IO, "landlock: restrict self: %s", strerror(errno));
	if (ll.ruleset >= 0)
		close(ll.ruleset);
	json_object_set_new(lj, "rules", json_integer(ll.rules));
	json_object_set_new(lj, "skipped", json_integer(ll.skipped));
	json_object_set_new(lj, "all_threads", json_boolean(threads <= 1 || flags));
	json_object_set_new(lj, "status", json_string(rc ? "failed" : "applied"));
	return rc;
}
