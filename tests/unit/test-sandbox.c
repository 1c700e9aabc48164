/*
 * test-sandbox.c - the worker sandbox, probed from the inside.
 *
 * Each scenario forks: the child enters the sandbox, tries what a hostile
 * kernel would try and sends the outcomes back as one JSON document
 * through a pipe; the parent, never sandboxed, asserts.  Children end with
 * _exit() so LeakSanitizer (which needs ptrace) never runs inside.  The
 * PoCL scenarios run a kernel with inline assembly that makes system calls
 * itself, the real threat.  Exit 77 when there is no OpenCL platform.
 */
#include "test.h"

#include "err.h"
#include "sandbox.h"

#include <CL/cl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LINKER    "/usr/bin/ld"
#define MAX_FILE  4096
#define POCL_FILE (256ULL << 20) /* PoCL's objects and kernel libraries */
#define OUT_LIMIT (1 << 20)

static struct {
	char root[64];    /* /tmp/sbx-XXXXXX */
	char priv[128];   /* root/private: the worker's directory */
	char secret[128]; /* root/ref/answer.bin: what a kernel must not read */
	struct sockaddr_in listen_addr;
	int listen_fd;
	int client_fd; /* in a child: a TCP socket made before the sandbox */
} fx = { .listen_fd = -1, .client_fd = -1 };

static int pocl_skipped;

/* ---- plumbing --------------------------------------------------------- */

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void write_all(int fd, const char *s)
{
	size_t len = strlen(s);

	while (len) {
		ssize_t put = write(fd, s, len);

		if (put <= 0)
			_exit(3);
		s += put;
		len -= (size_t)put;
	}
}

static char *read_all(int fd)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	ssize_t got;

	while (buf && (got = read(fd, buf + len, cap - len - 1)) > 0) {
		len += (size_t)got;
		if (len + 1 == cap && cap < OUT_LIMIT)
			buf = realloc(buf, cap *= 2);
	}
	if (buf)
		buf[len] = '\0';
	return buf;
}

/* Runs fn in a child that sends back a JSON object; NULL when the child
   failed (the reason is printed). */
static json_t *in_child(void (*fn)(json_t *out))
{
	int fds[2], status = 0;
	json_t *doc = NULL;
	char *text;
	pid_t pid;

	if (pipe(fds))
		return NULL;
	pid = fork();
	if (pid == 0) {
		json_t *out = json_object();
		char *s;

		close(fds[0]);
		alarm(300);
		fn(out);
		s = json_dumps(out, JSON_COMPACT);
		write_all(fds[1], s ? s : "{}");
		_exit(0);
	}
	close(fds[1]);
	text = read_all(fds[0]);
	close(fds[0]);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fprintf(stderr, "child ended with status 0x%x\n", status);
	else if (!(doc = json_loads(text ? text : "", 0, NULL)))
		fprintf(stderr, "child sent no document: %.200s\n", text ? text : "");
	free(text);
	return doc;
}

static json_int_t get_int(json_t *doc, const char *key)
{
	return json_integer_value(json_object_get(doc, key));
}

static struct sandbox_cfg base_cfg(void)
{
	struct sandbox_cfg cfg = {
		.private_dir = fx.priv,
		.linker = LINKER,
		.max_file_bytes = MAX_FILE,
		.cpu_seconds = 120,
	};
	return cfg;
}

/* Enters the sandbox; records rc, msg and the report in out. */
static int enter(const struct sandbox_cfg *cfg, json_t *out, const char *key)
{
	char msg[512] = "", name[64];
	json_t *rep = NULL;
	int rc = sandbox_enter(cfg, &rep, msg, sizeof(msg));

	snprintf(name, sizeof(name), "%s_rc", key);
	json_object_set_new(out, name, json_integer(rc));
	snprintf(name, sizeof(name), "%s_msg", key);
	json_object_set_new(out, name, json_string(msg));
	snprintf(name, sizeof(name), "%s_report", key);
	json_object_set_new(out, name, rep);
	return rc;
}

static int landlock_abi(void)
{
	return (int)syscall(SYS_landlock_create_ruleset, NULL, 0, 1U);
}

/* ---- probes: each returns 0 on success or the errno of the failure ----- */

static int open_errno(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC, 0600);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static int p_read_secret(void)
{
	return open_errno(fx.secret, O_RDONLY);
}

static int p_read_hostname(void)
{
	return open_errno("/etc/hostname", O_RDONLY);
}

static int p_read_passwd(void)
{
	return open_errno("/etc/passwd", O_RDONLY);
}

static int p_list_root(void)
{
	DIR *d = opendir("/root");

	if (!d)
		return errno;
	closedir(d);
	return 0;
}

static int p_private_rw(void)
{
	char path[192], back[8] = "";
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/probe.txt", fx.priv);
	fd = open(path, O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno;
	if (write(fd, "hello", 5) != 5 || pread(fd, back, 5, 0) != 5)
		rc = errno ? errno : EIO;
	close(fd);
	return rc ? rc : strcmp(back, "hello") ? EIO : 0;
}

static int p_create_outside(void)
{
	char path[192];

	snprintf(path, sizeof(path), "%s/escaped.txt", fx.root);
	return open_errno(path, O_CREAT | O_WRONLY);
}

static int p_socket(int domain, int type)
{
	int fd = socket(domain, type, 0);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static int p_socket_inet(void)
{
	return p_socket(AF_INET, SOCK_STREAM);
}

static int p_socket_unix(void)
{
	return p_socket(AF_UNIX, SOCK_STREAM);
}

static int p_connect(void)
{
	return connect(fx.client_fd, (struct sockaddr *)&fx.listen_addr, sizeof(fx.listen_addr))
		       ? errno
		       : 0;
}

static int p_kill_parent(void)
{
	return kill(getppid(), 0) ? errno : 0;
}

static int p_kill_self(void)
{
	return kill(getpid(), 0) ? errno : 0;
}

/* A child forked inside the sandbox shares its Landlock domain, so only
   seccomp's own-pid rule stands between the two. */
static int p_kill_child(void)
{
	int fds[2], status, rc;
	pid_t pid;
	char c;

	if (pipe(fds))
		return errno;
	pid = fork();
	if (pid == 0) {
		/* the sandbox may not let the parent kill it: it ends on EOF */
		close(fds[1]);
		_exit(read(fds[0], &c, 1) < 0);
	}
	close(fds[0]);
	rc = pid < 0 ? errno : kill(pid, 0) ? errno : 0;
	close(fds[1]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	return rc;
}

static int p_dumpable(void)
{
	return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0 ? 0 : EINVAL;
}

static int p_no_new_privs(void)
{
	return prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1 ? 0 : EINVAL;
}

/* PTRACE_SEIZE goes through the same permission check as PTRACE_ATTACH
   but does not stop the parent should the sandbox let it through. */
static int p_ptrace_parent(void)
{
	if (ptrace(PTRACE_SEIZE, getppid(), NULL, NULL))
		return errno;
	ptrace(PTRACE_DETACH, getppid(), NULL, NULL);
	return 0;
}

static int p_parent_environ(void)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)getppid());
	return open_errno(path, O_RDONLY);
}

static int p_proc_status(void)
{
	char buf[64];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ssize_t got;

	if (fd < 0)
		return errno;
	got = read(fd, buf, sizeof(buf));
	close(fd);
	return got > 0 ? 0 : EIO;
}

static int p_unshare(void)
{
	return unshare(CLONE_NEWNET) ? errno : 0;
}

static int exec_errno(const char *path, char *const argv[])
{
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (null >= 0) {
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
	}
	execv(path, argv);
	return errno;
}

static int p_exec_sh(void)
{
	char *const argv[] = { "sh", "-c", "exit 0", NULL };

	return exec_errno("/bin/sh", argv);
}

static int p_exec_linker(void)
{
	char *const argv[] = { "ld", "--version", NULL };

	return exec_errno(LINKER, argv);
}

/* Runs probe in a forked child (for probes that exec); its exit code is
   the result. */
static int in_grandchild(int (*probe)(void))
{
	int status = 0;
	pid_t pid = fork();

	if (pid < 0)
		return errno;
	if (pid == 0)
		_exit(probe());
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int p_exec_sh_forked(void)
{
	return in_grandchild(p_exec_sh);
}

static int p_exec_linker_forked(void)
{
	return in_grandchild(p_exec_linker);
}

static int p_nothing(void)
{
	return 0;
}

static int p_fork(void)
{
	return in_grandchild(p_nothing);
}

static int p_fsize(void)
{
	static char block[MAX_FILE];
	char path[192];
	int fd, rc = 0;

	signal(SIGXFSZ, SIG_IGN);
	snprintf(path, sizeof(path), "%s/big.bin", fx.priv);
	fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno;
	if (write(fd, block, sizeof(block)) != (ssize_t)sizeof(block))
		rc = EIO;
	else if (write(fd, block, 1) < 0)
		rc = errno;
	close(fd);
	return rc;
}

static void *thread_main(void *arg)
{
	return arg;
}

static int p_thread(void)
{
	pthread_t t;
	int rc = pthread_create(&t, NULL, thread_main, NULL);

	if (!rc)
		pthread_join(t, NULL);
	return rc;
}

struct probe {
	const char *name;
	int (*fn)(void);
	int want; /* 0: must work; else the errno it must fail with */
};

/* After sandbox_enter, before the spawn lock. */
static const struct probe probes_enter[] = {
	{ "read the secret file", p_read_secret, EACCES },
	{ "read /etc/hostname", p_read_hostname, EACCES },
	{ "read /etc/passwd", p_read_passwd, EACCES },
	{ "list /root", p_list_root, EACCES },
	{ "write and read in private_dir", p_private_rw, 0 },
	{ "create a file outside", p_create_outside, EACCES },
	{ "socket(AF_INET)", p_socket_inet, EPERM },
	{ "socket(AF_UNIX)", p_socket_unix, EPERM },
	{ "connect to 127.0.0.1", p_connect, EPERM },
	{ "kill(parent, 0)", p_kill_parent, EPERM },
	{ "kill(self, 0)", p_kill_self, 0 },
	{ "kill(own child, 0)", p_kill_child, EPERM },
	{ "not dumpable", p_dumpable, 0 },
	{ "no_new_privs", p_no_new_privs, 0 },
	{ "ptrace the parent", p_ptrace_parent, EPERM },
	{ "read /proc/PARENT/environ", p_parent_environ, EACCES },
	{ "read /proc/self/status", p_proc_status, 0 },
	{ "unshare(CLONE_NEWNET)", p_unshare, EPERM },
	{ "exec /bin/sh", p_exec_sh_forked, EACCES },
	{ "exec the linker", p_exec_linker_forked, 0 },
	{ "fork", p_fork, 0 },
	{ "write past RLIMIT_FSIZE", p_fsize, EFBIG },
};

/* After sandbox_lock_spawn.  A direct exec that worked would replace the
   child and lose its report, which the parent also catches. */
static const struct probe probes_locked[] = {
	{ "fork after the lock", p_fork, EPERM },
	{ "exec /bin/sh after the lock", p_exec_sh, EPERM },
	{ "exec the linker after the lock", p_exec_linker, EPERM },
	{ "pthread_create after the lock", p_thread, 0 },
	{ "read the secret file after the lock", p_read_secret, EACCES },
};

static void run_probes(json_t *out, const char *key, const struct probe *p, size_t count)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < count; i++)
		json_array_append_new(arr, json_integer(p[i].fn()));
	json_object_set_new(out, key, arr);
}

static void check_probes(json_t *doc, const char *key, const struct probe *p, size_t count)
{
	json_t *arr = json_object_get(doc, key);

	CHECK(json_array_size(arr) == count);
	for (size_t i = 0; i < count && i < json_array_size(arr); i++) {
		int got = (int)json_integer_value(json_array_get(arr, i));

		if (got != p[i].want)
			fprintf(stderr, "probe '%s': got %s, want %s\n", p[i].name,
				got ? strerror(got) : "success",
				p[i].want ? strerror(p[i].want) : "success");
		CHECK(got == p[i].want);
	}
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- scenarios -------------------------------------------------------- */

TEST(worker_env)
{
	char *const env[] = {
		"AWS_SECRET_ACCESS_KEY=abc",
		"EVALPOD_BATCH_URL_0=https://x/y?sig=1",
		/* the parent's test hook: workers time as they always do */
		"EVALPOD_TEST_NOISE=7:0.3",
		"HOME=/root",
		"POCL_CACHE_DIR=/old",
		"PATH=/usr/bin:/bin",
		"KUBERNETES_SERVICE_HOST=10.0.0.1",
		"ASAN_OPTIONS=handle_segv=0",
		"CURL_CA_BUNDLE=/etc/ca.pem",
		"NVIDIA_API_KEY=nvapi-123",
		"NVIDIA_VISIBLE_DEVICES=all",
		"LC_ALL=C",
		"GITHUB_TOKEN=ghp_1",
		"LD_PRELOAD=/tmp/evil.so",
		"PATHEXT=.x",
		"TMPDIR=/tmp",
		"no-equals-sign",
		NULL,
	};
	const char *const extra[] = { "POCL_CACHE_DIR=/priv/pocl", "TMPDIR=/priv", NULL };
	const char *const want[] = {
		"PATH=/usr/bin:/bin", "ASAN_OPTIONS=handle_segv=0", "NVIDIA_VISIBLE_DEVICES=all",
		"LC_ALL=C",           "POCL_CACHE_DIR=/priv/pocl",  "TMPDIR=/priv",
	};
	char **got = sandbox_worker_env(env, extra);
	size_t n = 0;

	while (got[n])
		n++;
	CHECK(n == COUNT(want));
	for (size_t i = 0; i < n && i < COUNT(want); i++)
		CHECK_STR(got[i], want[i]);
	sandbox_env_free(got);
	got = sandbox_worker_env(NULL, NULL);
	CHECK(got && !got[0]);
	sandbox_env_free(got);
	sandbox_env_free(NULL);
}

static void child_enter(json_t *out)
{
	struct sandbox_cfg cfg = base_cfg();
	char msg[256] = "";

	fx.client_fd = socket(AF_INET, SOCK_STREAM, 0);
	if (enter(&cfg, out, "enter"))
		return;
	run_probes(out, "enter_probes", probes_enter, COUNT(probes_enter));
	json_object_set_new(out, "lock_rc",
			    json_integer(sandbox_lock_spawn(json_object_get(out, "enter_report"),
							    msg, sizeof(msg))));
	json_object_set_new(out, "lock_msg", json_string(msg));
	run_probes(out, "locked_probes", probes_locked, COUNT(probes_locked));
}

TEST(enter_confines)
{
	json_t *doc = in_child(child_enter);

	CHECK(doc);
	if (!doc)
		return;
	if (get_int(doc, "enter_rc"))
		fprintf(stderr, "sandbox_enter: %s\n",
			json_string_value(json_object_get(doc, "enter_msg")));
	CHECK(get_int(doc, "enter_rc") == 0);
	check_probes(doc, "enter_probes", probes_enter, COUNT(probes_enter));
	CHECK(get_int(doc, "lock_rc") == 0);
	check_probes(doc, "locked_probes", probes_locked, COUNT(probes_locked));
	json_decref(doc);
}

static void net_ns(json_t *out, const char *key)
{
	char link[64] = "";

	if (readlink("/proc/self/ns/net", link, sizeof(link) - 1) < 0)
		link[0] = '\0';
	json_object_set_new(out, key, json_string(link));
}

static void child_report(json_t *out)
{
	struct sandbox_cfg cfg = base_cfg();

	net_ns(out, "netns_before");
	if (!enter(&cfg, out, "enter"))
		json_object_set_new(out, "lock_rc",
				    json_integer(sandbox_lock_spawn(
					    json_object_get(out, "enter_report"), NULL, 0)));
	net_ns(out, "netns_after");
}

static const char *layer_status(json_t *rep, const char *layer)
{
	return json_string_value(json_object_get(json_object_get(rep, layer), "status"));
}

/* Namespaces are best effort (a container may forbid them): the report
   must say which, and be right about it. */
static void check_namespaces(json_t *doc, const char *status)
{
	const char *before = json_string_value(json_object_get(doc, "netns_before"));
	const char *after = json_string_value(json_object_get(doc, "netns_after"));

	CHECK(status && before && after && *before && *after);
	if (!status || !before || !after)
		return;
	if (!strcmp(status, "applied"))
		CHECK(strcmp(before, after) != 0);
	else
		CHECK(!strncmp(status, "unavailable: ", 13) && !strcmp(before, after));
	printf("namespaces: %s\n", status);
}

TEST(report_layers)
{
	json_t *doc = in_child(child_report), *rep, *ll, *sc;

	CHECK(doc);
	if (!doc)
		return;
	rep = json_object_get(doc, "enter_report");
	ll = json_object_get(rep, "landlock");
	sc = json_object_get(rep, "seccomp");
	CHECK(get_int(doc, "enter_rc") == 0 && get_int(doc, "lock_rc") == 0);
	CHECK_STR(layer_status(rep, "rlimits"), "applied");
	check_namespaces(doc, layer_status(rep, "namespaces"));
	CHECK_STR(layer_status(rep, "landlock"), "applied");
	CHECK_STR(layer_status(rep, "seccomp"), "applied");
	CHECK(json_is_true(json_object_get(rep, "no_new_privs")));
	CHECK(json_is_false(json_object_get(rep, "dumpable")));
	CHECK(get_int(ll, "abi") == landlock_abi() && get_int(ll, "abi") >= 1);
	CHECK(get_int(ll, "rules") >= 10);
	CHECK(json_array_size(json_object_get(ll, "exec")) == 2); /* ld and its ld.so */
	CHECK(get_int(sc, "denied") >= 60);
	CHECK_STR(json_string_value(json_object_get(sc, "spawn")), "none");
	printf("landlock ABI %d; report: ", (int)get_int(ll, "abi"));
	json_dumpf(rep, stdout, JSON_COMPACT);
	printf("\n");
	json_decref(doc);
}

/* A thread blocked on a pipe; told to, it opens the secret file. */
struct opener {
	int cmd[2], res[2];
	pthread_t tid;
};

static void *opener_main(void *arg)
{
	struct opener *o = arg;
	char c;
	int err;

	if (read(o->cmd[0], &c, 1) != 1)
		return NULL;
	err = open_errno(fx.secret, O_RDONLY);
	if (write(o->res[1], &err, sizeof(err)) != (ssize_t)sizeof(err))
		return NULL;
	return NULL;
}

static void child_threads(json_t *out)
{
	struct sandbox_cfg cfg = base_cfg();
	struct opener o;
	int err = -1;

	if (pipe(o.cmd) || pipe(o.res) || pthread_create(&o.tid, NULL, opener_main, &o))
		_exit(4);
	enter(&cfg, out, "strict");
	cfg.allow_running_threads = 1;
	if (enter(&cfg, out, "late"))
		return;
	json_object_set_new(out, "main_secret", json_integer(p_read_secret()));
	if (write(o.cmd[1], "x", 1) != 1 || read(o.res[0], &err, sizeof(err)) != sizeof(err))
		err = -1;
	json_object_set_new(out, "thread_secret", json_integer(err));
}

/* Why sandbox_enter refuses a multi-threaded process: a thread that was
   running before Landlock (ABI < 8) keeps the whole filesystem. */
TEST(running_threads)
{
	json_t *doc = in_child(child_threads);
	int abi = landlock_abi();

	CHECK(doc);
	if (!doc)
		return;
	CHECK(get_int(doc, "strict_rc") == KERR_INVALID);
	CHECK_CONTAINS(json_string_value(json_object_get(doc, "strict_msg")), "threads");
	CHECK(get_int(doc, "late_rc") == 0);
	CHECK(get_int(doc, "main_secret") == EACCES);
	CHECK(get_int(doc, "thread_secret") == (abi >= 8 ? EACCES : 0));
	CHECK(json_is_boolean(json_object_get(
		json_object_get(json_object_get(doc, "late_report"), "landlock"), "all_threads")));
	json_decref(doc);
}

/* ---- PoCL ------------------------------------------------------------- */

/* scale: the work a real candidate does.  evil: what a hostile one does,
   system calls by inline assembly, results in out[]. */
static const char *kernel_src =
	"__kernel void scale(__global const int *in, __global int *out)\n"
	"{\n"
	"	size_t i = get_global_id(0);\n"
	"	out[i] = in[i] * 3 + (int)i;\n"
	"}\n"
#ifdef __x86_64__
	"__kernel void evil(__global long *out, __global const char *path)\n"
	"{\n"
	"	long r;\n"
	"	if (get_global_id(0) != 0)\n"
	"		return;\n"
	"	__asm__ volatile(\"syscall\" : \"=a\"(r) : \"a\"(2L), \"D\"(path), \"S\"(0L)\n"
	"			 : \"rcx\", \"r11\", \"memory\");\n"
	"	out[0] = r;\n"
	"	__asm__ volatile(\"syscall\" : \"=a\"(r) : \"a\"(41L), \"D\"(2L), \"S\"(1L), "
	"\"d\"(0L)\n"
	"			 : \"rcx\", \"r11\", \"memory\");\n"
	"	out[1] = r;\n"
	"}\n"
#endif
	;

struct cl {
	cl_device_id dev;
	cl_context ctx;
	cl_command_queue q;
	cl_program prog;
};

/* 0, 1 when there is no platform, -1 on another failure (in out). */
static int cl_open(struct cl *cl, json_t *out)
{
	cl_platform_id plat;
	cl_uint np = 0;
	cl_int err;

	if (clGetPlatformIDs(1, &plat, &np) != CL_SUCCESS || np == 0)
		return 1;
	err = clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &cl->dev, NULL);
	if (!err)
		cl->ctx = clCreateContext(NULL, 1, &cl->dev, NULL, NULL, &err);
	if (!err)
		cl->q = clCreateCommandQueueWithProperties(cl->ctx, cl->dev, NULL, &err);
	if (!err)
		cl->prog = clCreateProgramWithSource(cl->ctx, 1, &kernel_src, NULL, &err);
	json_object_set_new(out, "cl_err", json_integer(err));
	return err ? -1 : 0;
}

static int cl_build(struct cl *cl, json_t *out)
{
	cl_int err = clBuildProgram(cl->prog, 1, &cl->dev, "", NULL, NULL);
	char log[4096] = "";

	if (err)
		clGetProgramBuildInfo(cl->prog, cl->dev, CL_PROGRAM_BUILD_LOG, sizeof(log) - 1, log,
				      NULL);
	json_object_set_new(out, "build_err", json_integer(err));
	json_object_set_new(out, "build_log", json_string(log));
	return err;
}

/* Runs scale with an explicit local size; 1 when every result is right. */
static int cl_scale(struct cl *cl)
{
	enum { N = 256 };
	int in[N], res[N], ok = 1;
	size_t global = N, local = 16;
	cl_int err;
	cl_kernel k = clCreateKernel(cl->prog, "scale", &err);
	cl_mem a = clCreateBuffer(cl->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(in), in,
				  &err);
	cl_mem b = clCreateBuffer(cl->ctx, CL_MEM_WRITE_ONLY, sizeof(res), NULL, &err);

	for (int i = 0; i < N; i++)
		in[i] = i * 7 - 100;
	clEnqueueWriteBuffer(cl->q, a, CL_TRUE, 0, sizeof(in), in, 0, NULL, NULL);
	clSetKernelArg(k, 0, sizeof(a), &a);
	clSetKernelArg(k, 1, sizeof(b), &b);
	err = clEnqueueNDRangeKernel(cl->q, k, 1, NULL, &global, &local, 0, NULL, NULL);
	if (!err)
		err = clEnqueueReadBuffer(cl->q, b, CL_TRUE, 0, sizeof(res), res, 0, NULL, NULL);
	for (int i = 0; i < N; i++)
		ok &= res[i] == in[i] * 3 + i;
	clReleaseMemObject(a);
	clReleaseMemObject(b);
	clReleaseKernel(k);
	return !err && ok;
}

/* Runs evil; records what its open(secret) and socket() returned. */
static void cl_evil(struct cl *cl, json_t *out)
{
#ifdef __x86_64__
	long res[2] = { 1, 1 };
	char path[256] = "";
	size_t global = 4, local = 4;
	cl_int err;
	cl_kernel k = clCreateKernel(cl->prog, "evil", &err);
	cl_mem r = clCreateBuffer(cl->ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(res),
				  res, &err);
	cl_mem p;

	snprintf(path, sizeof(path), "%s", fx.secret);
	p = clCreateBuffer(cl->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(path), path,
			   &err);
	clSetKernelArg(k, 0, sizeof(r), &r);
	clSetKernelArg(k, 1, sizeof(p), &p);
	err = clEnqueueNDRangeKernel(cl->q, k, 1, NULL, &global, &local, 0, NULL, NULL);
	if (!err)
		err = clEnqueueReadBuffer(cl->q, r, CL_TRUE, 0, sizeof(res), res, 0, NULL, NULL);
	json_object_set_new(out, "evil_err", json_integer(err));
	json_object_set_new(out, "evil_open", json_integer(res[0]));
	json_object_set_new(out, "evil_socket", json_integer(res[1]));
#endif
}

static void set_pocl_cache(void)
{
	char dir[192];

	snprintf(dir, sizeof(dir), "%s/pocl", fx.priv);
	mkdir(dir, 0700);
	setenv("POCL_CACHE_DIR", dir, 1);
}

/* The order that works: sandbox first, then the device. */
static void child_pocl(json_t *out)
{
	struct sandbox_cfg cfg = base_cfg();
	struct cl cl = { 0 };
	double t0;
	int rc;

	cfg.max_file_bytes = POCL_FILE;
	set_pocl_cache();
	t0 = now_ms();
	rc = enter(&cfg, out, "enter");
	json_object_set_new(out, "enter_ms", json_real(now_ms() - t0));
	if (rc)
		return;
	rc = cl_open(&cl, out);
	json_object_set_new(out, "skip", json_boolean(rc == 1));
	if (rc || cl_build(&cl, out))
		return;
	json_object_set_new(out, "scale_ok", json_boolean(cl_scale(&cl)));
	cl_evil(&cl, out);
	json_object_set_new(out, "lock_rc", json_integer(sandbox_lock_spawn(NULL, NULL, 0)));
	json_object_set_new(out, "scale_locked_ok", json_boolean(cl_scale(&cl)));
	json_object_set_new(out, "secret", json_integer(p_read_secret()));
}

static int pocl_ready(json_t *doc)
{
	if (json_is_true(json_object_get(doc, "skip"))) {
		pocl_skipped = 1;
		printf("skip: no OpenCL platform\n");
		return 0;
	}
	CHECK(get_int(doc, "cl_err") == 0);
	CHECK(get_int(doc, "build_err") == 0);
	if (get_int(doc, "build_err"))
		fprintf(stderr, "build log: %s\n",
			json_string_value(json_object_get(doc, "build_log")));
	return get_int(doc, "cl_err") == 0 && get_int(doc, "build_err") == 0;
}

TEST(pocl_inside)
{
	json_t *doc = in_child(child_pocl);

	CHECK(doc);
	if (!doc)
		return;
	CHECK(get_int(doc, "enter_rc") == 0);
	printf("sandbox_enter took %.1f ms\n", json_real_value(json_object_get(doc, "enter_ms")));
	if (pocl_ready(doc)) {
		CHECK(json_is_true(json_object_get(doc, "scale_ok")));
#ifdef __x86_64__
		CHECK(get_int(doc, "evil_err") == 0);
		CHECK(get_int(doc, "evil_open") == -EACCES);
		CHECK(get_int(doc, "evil_socket") == -EPERM);
#endif
		CHECK(get_int(doc, "lock_rc") == 0);
		CHECK(json_is_true(json_object_get(doc, "scale_locked_ok")));
		CHECK(get_int(doc, "secret") == EACCES);
	}
	json_decref(doc);
}

/* The order that does not work: the device first.  PoCL's threads, which
   run the kernels, exist by then. */
static void child_pocl_late(json_t *out)
{
	struct sandbox_cfg cfg = base_cfg();
	struct cl cl = { 0 };
	int rc;

	cfg.max_file_bytes = POCL_FILE;
	set_pocl_cache();
	rc = cl_open(&cl, out);
	json_object_set_new(out, "skip", json_boolean(rc == 1));
	if (rc || cl_build(&cl, out))
		return;
	enter(&cfg, out, "strict");
	cfg.allow_running_threads = 1;
	if (enter(&cfg, out, "late"))
		return;
	cl_evil(&cl, out);
}

TEST(pocl_late)
{
	json_t *doc = in_child(child_pocl_late);

	CHECK(doc);
	if (!doc)
		return;
	if (pocl_ready(doc)) {
		CHECK(get_int(doc, "strict_rc") == KERR_INVALID);
		CHECK(get_int(doc, "late_rc") == 0);
#ifdef __x86_64__
		/* seccomp reaches every thread; Landlock below ABI 8 does not */
		CHECK(get_int(doc, "evil_socket") == -EPERM);
		if (landlock_abi() >= 8)
			CHECK(get_int(doc, "evil_open") == -EACCES);
		else
			CHECK(get_int(doc, "evil_open") >= 0);
#endif
	}
	json_decref(doc);
}

/* ---- fixture ---------------------------------------------------------- */

static int setup(void)
{
	char ref[128];
	socklen_t len = sizeof(fx.listen_addr);
	int fd;

	snprintf(fx.root, sizeof(fx.root), "/tmp/sbx-XXXXXX");
	if (!mkdtemp(fx.root))
		return -1;
	snprintf(fx.priv, sizeof(fx.priv), "%s/private", fx.root);
	snprintf(ref, sizeof(ref), "%s/ref", fx.root);
	snprintf(fx.secret, sizeof(fx.secret), "%s/answer.bin", ref);
	if (mkdir(fx.priv, 0700) || mkdir(ref, 0700))
		return -1;
	fd = open(fx.secret, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, "42", 2) != 2)
		return -1;
	close(fd);
	fx.listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	fx.listen_addr.sin_family = AF_INET;
	fx.listen_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fx.listen_fd < 0 ||
	    bind(fx.listen_fd, (struct sockaddr *)&fx.listen_addr, sizeof(fx.listen_addr)) ||
	    listen(fx.listen_fd, 4) ||
	    getsockname(fx.listen_fd, (struct sockaddr *)&fx.listen_addr, &len))
		return -1;
	return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

int main(void)
{
	int rc;

	if (setup()) {
		perror("test-sandbox: setup");
		return 1;
	}
	RUN(worker_env);
	RUN(enter_confines);
	RUN(report_layers);
	RUN(running_threads);
	RUN(pocl_inside);
	RUN(pocl_late);
	close(fx.listen_fd);
	nftw(fx.root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	rc = test_summary();
	return rc ? rc : pocl_skipped ? 77 : 0;
}
