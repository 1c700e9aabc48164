#include "sandbox.h"
#include "err.h"
#include "xalloc.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- environment ------------------------------------------------------ */

static const struct {
	const char *name;
	int prefix; /* 1: any variable whose name starts with name */
} env_allow[] = {
	{ .name = "PATH" },
	{ .name = "LANG" },
	{ .name = "TZ" },
	{ .name = "LD_LIBRARY_PATH" },
	{ .name = "ASAN_OPTIONS" },
	{ .name = "UBSAN_OPTIONS" },
	{ .name = "LSAN_OPTIONS" },
	{ .name = "MSAN_OPTIONS" },
	{ .name = "LC_", .prefix = 1 },
	{ .name = "POCL_", .prefix = 1 },
	{ .name = "OCL_ICD_", .prefix = 1 },
	{ .name = "OPENCL_", .prefix = 1 },
	{ .name = "CUDA_", .prefix = 1 },
	{ .name = "NVIDIA_", .prefix = 1 },
	{ .name = "__GL_", .prefix = 1 },
	{ .name = "GPU_", .prefix = 1 },
	{ .name = "HSA_", .prefix = 1 },
	{ .name = "ROC", .prefix = 1 },
	{ .name = "AMD_", .prefix = 1 },
	{ .name = "HIP_", .prefix = 1 },
};

/* Vendors put API keys under their own prefix (NVIDIA_API_KEY): these
   words drop a variable that a prefix would let through. */
static const char *const env_secret_words[] = { "KEY", "TOKEN", "SECRET", "PASSWORD",
						"CREDENTIAL" };

static size_t name_len(const char *var)
{
	const char *eq = strchr(var, '=');

	return eq ? (size_t)(eq - var) : 0;
}

static int env_allowed(const char *var)
{
	size_t len = name_len(var);
	char name[256];

	if (len == 0 || len >= sizeof(name))
		return 0;
	memcpy(name, var, len);
	name[len] = '\0';
	for (size_t i = 0; i < sizeof(env_secret_words) / sizeof(env_secret_words[0]); i++)
		if (strstr(name, env_secret_words[i]))
			return 0;
	for (size_t i = 0; i < sizeof(env_allow) / sizeof(env_allow[0]); i++) {
		size_t al = strlen(env_allow[i].name);

		if (env_allow[i].prefix ? len >= al && !memcmp(name, env_allow[i].name, al)
					: !strcmp(name, env_allow[i].name))
			return 1;
	}
	return 0;
}

/* 1 when extra holds a variable named like var. */
static int env_overridden(const char *var, const char *const *extra)
{
	size_t len = name_len(var);

	for (size_t i = 0; extra && extra[i]; i++)
		if (name_len(extra[i]) == len && !memcmp(extra[i], var, len))
			return 1;
	return 0;
}

char **sandbox_worker_env(char *const *env, const char *const *extra)
{
	size_t cap = 1, n = 0;
	char **out;

	for (size_t i = 0; env && env[i]; i++)
		cap++;
	for (size_t i = 0; extra && extra[i]; i++)
		cap++;
	out = xcalloc(cap, sizeof(*out));
	for (size_t i = 0; env && env[i]; i++)
		if (env_allowed(env[i]) && !env_overridden(env[i], extra))
			out[n++] = xstrdup(env[i]);
	for (size_t i = 0; extra && extra[i]; i++)
		out[n++] = xstrdup(extra[i]);
	out[n] = NULL;
	return out;
}

void sandbox_env_free(char **env)
{
	for (size_t i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
}

/* ---- small helpers ---------------------------------------------------- */

/* Threads of this process, from /proc/self/task; 0 when unreadable. */
static int count_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int count = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			count++;
	closedir(d);
	return count;
}

static void set_unavailable(json_t *layer, int err)
{
	char buf[160];

	snprintf(buf, sizeof(buf), "unavailable: %s", strerror(err));
	json_object_set_new(layer, "status", json_string(buf));
}

/* ---- rlimits ---------------------------------------------------------- */

/* Lowers resource to want (soft) and hard, never above the current ones. */
static int limit_lower(int resource, rlim_t want, rlim_t hard, const char *name, char *msg,
		       size_t n)
{
	struct rlimit rl;

	if (getrlimit(resource, &rl))
		return kerr_set(msg, n, KERR_IO, "getrlimit %s: %s", name, strerror(errno));
	if (hard < rl.rlim_max)
		rl.rlim_max = hard;
	if (want < rl.rlim_cur)
		rl.rlim_cur = want;
	if (rl.rlim_cur > rl.rlim_max)
		rl.rlim_cur = rl.rlim_max;
	if (setrlimit(resource, &rl))
		return kerr_set(msg, n, KERR_IO, "setrlimit %s: %s", name, strerror(errno));
	return 0;
}

static int apply_rlimits(const struct sandbox_cfg *cfg, json_t *rep, char *msg, size_t n)
{
	json_t *lim = json_object();
	int rc;

	json_object_set_new(rep, "rlimits", lim);
	rc = limit_lower(RLIMIT_CORE, 0, 0, "core", msg, n);
	if (!rc)
		rc = limit_lower(RLIMIT_NOFILE, 4096, 4096, "nofile", msg, n);
	if (!rc && cfg->max_file_bytes) {
		rlim_t b = (rlim_t)cfg->max_file_bytes;

		rc = limit_lower(RLIMIT_FSIZE, b, b, "fsize", msg, n);
		json_object_set_new(lim, "fsize", json_integer((json_int_t)b));
	}
	if (!rc && cfg->cpu_seconds > 0) {
		rlim_t s = (rlim_t)ceil(cfg->cpu_seconds);

		rc = limit_lower(RLIMIT_CPU, s, s + 5, "cpu", msg, n);
		json_object_set_new(lim, "cpu", json_integer((json_int_t)s));
	}
	json_object_set_new(lim, "core", json_integer(0));
	json_object_set_new(lim, "nofile_max", json_integer(4096));
	json_object_set_new(lim, "status", json_string(rc ? "failed" : "applied"));
	return rc;
}

static int apply_prctl(json_t *rep, char *msg, size_t n)
{
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
		return kerr_set(msg, n, KERR_IO, "prctl PR_SET_DUMPABLE: %s", strerror(errno));
	json_object_set_new(rep, "dumpable", json_false());
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return kerr_set(msg, n, KERR_IO, "prctl PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
	json_object_set_new(rep, "no_new_privs", json_true());
	return 0;
}

/* ---- namespaces ------------------------------------------------------- */

static int write_proc(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t len = (ssize_t)strlen(text), put;

	if (fd < 0)
		return -1;
	put = write(fd, text, (size_t)len);
	close(fd);
	return put == len ? 0 : -1;
}

/* Maps the current ids into the new user namespace, so files keep their owners. */
static int map_ids(uid_t uid, gid_t gid)
{
	char line[64];

	snprintf(line, sizeof(line), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	if (write_proc("/proc/self/uid_map", line))
		return -1;
	if (write_proc("/proc/self/setgroups", "deny") && errno != ENOENT)
		return -1;
	snprintf(line, sizeof(line), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	return write_proc("/proc/self/gid_map", line);
}

/* Best effort: a failure is recorded, never returned. */
static void apply_namespaces(json_t *rep)
{
	json_t *ns = json_object();
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int user = 0;

	json_object_set_new(rep, "namespaces", ns);
	if (unshare(CLONE_NEWNET | CLONE_NEWIPC)) {
		int err = errno;

		/* Without CAP_SYS_ADMIN a user namespace grants it, inside. */
		if (err != EPERM || unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWIPC)) {
			set_unavailable(ns, err == EPERM ? errno : err);
			return;
		}
		user = 1;
		if (map_ids(uid, gid)) {
			set_unavailable(ns, errno);
			json_object_set_new(ns, "user", json_true());
			return;
		}
	}
	json_object_set_new(ns, "status", json_string("applied"));
	json_object_set_new(ns, "net", json_true());
	json_object_set_new(ns, "ipc", json_true());
	json_object_set_new(ns, "user", json_boolean(user));
}

/* ---- Landlock --------------------------------------------------------- */

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

static int ll_abi(void)
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

static int apply_landlock(const struct sandbox_cfg *cfg, int threads, json_t *rep, char *msg,
			  size_t n)
{
	struct ll_state ll = { .ruleset = -1, .exec = json_array() };
	json_t *lj = json_object();
	int abi = ll_abi(), rc;
	unsigned flags = 0;

	json_object_set_new(rep, "landlock", lj);
	json_object_set_new(lj, "exec", ll.exec);
	if (abi < 0) {
		set_unavailable(lj, -abi);
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

/* ---- seccomp ---------------------------------------------------------- */

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
	set_unavailable(sj, errno);
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

static int apply_seccomp(json_t *rep, char *msg, size_t n)
{
	json_t *sj = json_object();

	json_object_set_new(rep, "seccomp", sj);
	return sc_available(sj) ? sc_enter_stage(sj, msg, n) : 0;
}

int sandbox_lock_spawn(json_t *report, char *msg, size_t n)
{
	json_t *tmp = json_object();
	json_t *sj = report ? json_object_get(report, "seccomp") : NULL;
	int rc = 0;

	if (!sj)
		sj = tmp;
	if (sc_available(sj))
		rc = sc_lock_stage(sj, msg, n);
	json_decref(tmp);
	return rc;
}

/* ---- entry ------------------------------------------------------------ */

static int check_threads(const struct sandbox_cfg *cfg, int threads, json_t *rep, char *msg,
			 size_t n)
{
	int abi = ll_abi();

	json_object_set_new(rep, "threads", json_integer(threads));
	if (threads <= 1 || cfg->allow_running_threads || abi < 0 || abi >= 8)
		return 0;
	return kerr_set(msg, n, KERR_INVALID,
			"sandbox: %d threads already running and Landlock ABI %d cannot confine "
			"them; call sandbox_enter before opening the OpenCL device",
			threads, abi);
}

int sandbox_enter(const struct sandbox_cfg *cfg, json_t **report, char *msg, size_t n)
{
	json_t *rep = json_object();
	int threads = count_threads(), rc;

	if (!cfg || !cfg->private_dir) {
		rc = kerr_set(msg, n, KERR_INVALID, "sandbox: no private directory");
		goto out;
	}
	rc = check_threads(cfg, threads, rep, msg, n);
	if (rc)
		goto out;
	if (setenv("TMPDIR", cfg->private_dir, 1)) {
		rc = kerr_set(msg, n, KERR_IO, "sandbox: setenv TMPDIR: %s", strerror(errno));
		goto out;
	}
	/* Namespaces first: the uid map is written through /proc before
	   Landlock and dumpable 0 would stand in the way. */
	apply_namespaces(rep);
	rc = apply_rlimits(cfg, rep, msg, n);
	if (!rc)
		rc = apply_prctl(rep, msg, n);
	if (!rc)
		rc = apply_landlock(cfg, threads, rep, msg, n);
	if (!rc)
		rc = apply_seccomp(rep, msg, n);
out:
	if (report)
		*report = rep;
	else
		json_decref(rep);
	return rc;
}
