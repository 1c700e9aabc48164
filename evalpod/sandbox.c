/*
 * sandbox.c - the public entry points of the sandbox (sandbox_enter,
 * sandbox_lock_spawn), the worker's environment allowlist and the
 * rlimits, prctl and namespace layers.  The Landlock layer lives in
 * sandbox-landlock.c, the seccomp-BPF layer in sandbox-seccomp.c; they
 * share sandbox-internal.h.
 */
#include "sandbox-internal.h"
#include "envlist.h"
#include "err.h"
#include "xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
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

char **sandbox_worker_env(char *const *env, const char *const *extra)
{
	return envlist_build(env, env_allowed, extra);
}

void sandbox_env_free(char **env)
{
	envlist_free(env);
}

/* ---- threads ---------------------------------------------------------- */

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
			sandbox__set_unavailable(ns, err == EPERM ? errno : err);
			return;
		}
		user = 1;
		if (map_ids(uid, gid)) {
			sandbox__set_unavailable(ns, errno);
			json_object_set_new(ns, "user", json_true());
			return;
		}
	}
	json_object_set_new(ns, "status", json_string("applied"));
	json_object_set_new(ns, "net", json_true());
	json_object_set_new(ns, "ipc", json_true());
	json_object_set_new(ns, "user", json_boolean(user));
}

int sandbox_lock_spawn(json_t *report, char *msg, size_t n)
{
	json_t *tmp = json_object();
	json_t *sj = report ? json_object_get(report, "seccomp") : NULL;
	int rc;

	if (!sj)
		sj = tmp;
	rc = sandbox__seccomp_lock_spawn(sj, msg, n);
	json_decref(tmp);
	return rc;
}

/* ---- entry ------------------------------------------------------------ */

static int check_threads(const struct sandbox_cfg *cfg, int threads, json_t *rep, char *msg,
			 size_t n)
{
	int abi = sandbox__landlock_abi();

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
		rc = sandbox__apply_landlock(cfg, threads, rep, msg, n);
	if (!rc)
		rc = sandbox__apply_seccomp(rep, msg, n);
out:
	if (report)
		*report = rep;
	else
		json_decref(rep);
	return rc;
}
