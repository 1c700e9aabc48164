/*
 * kubeconfig-exec.c - exec credential plugins (client.authentication.k8s.io
 * v1 and v1beta1): running one and reading the ExecCredential it prints.
 * The contract is kubeconfig_refresh in kubeconfig.h; kubeconfig.c reads
 * the plugin's settings and calls kubeconfig__exec.
 *
 * The plugin gets kctl's environment plus its own env and
 * KUBERNETES_EXEC_INFO, no stdin, and its own process group, so that a
 * timeout kills whatever it started too.  Its stdout holds credentials:
 * it is bounded, and wiped before being freed, as is the parsed JSON.
 *
 * May use: kubeconfig-secret.c (through kubeconfig-internal.h), err, sbuf,
 * xalloc, Jansson; never kubeconfig.c, which calls in here.
 */
#include "err.h"
#include "kubeconfig-internal.h"
#include "sbuf.h"
#include "xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KC_MAX_EXEC_OUT (1u << 20) /* an exec plugin's stdout */
#define KC_STDERR_QUOTE 300        /* bytes of a failed plugin's stderr in messages */

extern char **environ;

long kubeconfig_exec_timeout_ms = 30000;

/* ---- exec plugin: running it ---- */

/* What one run of the plugin left. */
struct kc_run {
	pid_t pid;
	int out, err; /* our ends of its stdout and stderr, -1 when closed */
	struct sbuf so;
	char se[KC_STDERR_QUOTE + 1]; /* the start of its stderr */
	size_t se_len;
	int status; /* from waitpid */
};

static long kc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The environment: kctl's, less the names the plugin's env sets, plus those and the info. */
static char **kc_exec_envp(const struct kubeconfig *kc, char *info)
{
	size_t ne = 0, nx = 0, k = 0;
	char **envp;

	while (environ && environ[ne])
		ne++;
	while (kc->exec_env[nx])
		nx++;
	envp = xcalloc(ne + nx + 2, sizeof(*envp));
	for (size_t i = 0; i < ne; i++) {
		const char *eq = strchr(environ[i], '=');
		size_t len = eq ? (size_t)(eq - environ[i]) + 1 : strlen(environ[i]);
		int over = !strncmp(environ[i], info, len);

		for (size_t j = 0; j < nx && !over; j++)
			over = !strncmp(environ[i], kc->exec_env[j], len);
		if (!over)
			envp[k++] = environ[i];
	}
	for (size_t j = 0; j < nx; j++)
		envp[k++] = kc->exec_env[j];
	envp[k] = info;
	return envp;
}

/*
 * Starts argv with envp in its own process group (so that a timeout kills
 * its children too), stdin /dev/null, stdout and stderr to the pipes'
 * write ends, the signal mask cleared and SIGPIPE default.  Returns 0 or
 * an errno.
 */
static int kc_spawn_proc(char **argv, char **envp, int out, int err, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, def;
	int rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out, 1);
	posix_spawn_file_actions_adddup2(&fa, err, 2);
	posix_spawnattr_init(&at);
	sigemptyset(&none);
	sigemptyset(&def);
	sigaddset(&def, SIGPIPE);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &def);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
					      POSIX_SPAWN_SETSIGDEF);
	rc = posix_spawnp(pid, argv[0], &fa, &at, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	return rc;
}

/* Starts the plugin with its args and environment; r gets its pid and pipes. */
static int kc_spawn(const struct kubeconfig *kc, struct kc_run *r, char *msg, size_t n)
{
	char *info = xasprintf("KUBERNETES_EXEC_INFO={\"apiVersion\":\"%s\",\"kind\":"
			       "\"ExecCredential\",\"spec\":{\"interactive\":false}}",
			       kc->exec_api_version);
	char **envp = kc_exec_envp(kc, info), **argv;
	int po[2] = { -1, -1 }, pe[2] = { -1, -1 }, err, nargs = 0;

	while (kc->exec_args[nargs])
		nargs++;
	argv = xcalloc((size_t)nargs + 2, sizeof(*argv));
	argv[0] = kc->exec_command;
	memcpy(argv + 1, kc->exec_args, (size_t)nargs * sizeof(*argv));
	if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC)) {
		err = errno;
		goto out;
	}
	err = kc_spawn_proc(argv, envp, po[1], pe[1], &r->pid);
out:
	for (int i = 0; i < 2; i++) {
		if (i == 1 || err) {
			if (po[i] >= 0)
				close(po[i]);
			if (pe[i] >= 0)
				close(pe[i]);
		}
	}
	r->out = err ? -1 : po[0];
	r->err = err ? -1 : pe[0];
	free(argv);
	free(envp);
	free(info);
	if (!err)
		return 0;
	r->pid = 0;
	return kerr_set(msg, n, err == ENOENT ? KERR_NOTFOUND : KERR_IO,
			"exec plugin '%s' cannot be run: %s%s%s", kc->exec_command, strerror(err),
			kc->exec_install_hint ? "; " : "",
			kc->exec_install_hint ? kc->exec_install_hint : "");
}

/* Reads what is ready on fd into r; 0 at EOF (fd closed), 1 for more, <0 over the limit. */
static int kc_drain(struct kc_run *r, int *fd)
{
	char buf[16384];
	ssize_t got = read(*fd, buf, sizeof(buf));

	if (got < 0 && (errno == EINTR || errno == EAGAIN))
		return 1;
	if (got <= 0) {
		close(*fd);
		*fd = -1;
		return 0;
	}
	if (fd == &r->err) {
		size_t room = KC_STDERR_QUOTE - r->se_len;
		size_t take = (size_t)got < room ? (size_t)got : room;

		memcpy(r->se + r->se_len, buf, take);
		r->se_len += take;
	} else if (r->so.len + (size_t)got > KC_MAX_EXEC_OUT) {
		explicit_bzero(buf, sizeof(buf));
		return -1;
	} else {
		sbuf_add(&r->so, buf, (size_t)got);
	}
	explicit_bzero(buf, (size_t)got);
	return 1;
}

/* Collects the output until both pipes close and the plugin exits, or the deadline. */
static int kc_collect(const struct kubeconfig *kc, struct kc_run *r, char *msg, size_t n)
{
	long deadline = kc_now_ms() + kubeconfig_exec_timeout_ms;
	pid_t done = 0;

	while (r->out >= 0 || r->err >= 0 || done <= 0) {
		struct pollfd p[2] = { { r->out, POLLIN, 0 }, { r->err, POLLIN, 0 } };
		long left = deadline - kc_now_ms();

		if (left <= 0)
			return kerr_set(msg, n, KERR_TIMEOUT,
					"exec plugin '%s' did not finish within %ld ms; killed it",
					kc->exec_command, kubeconfig_exec_timeout_ms);
		if (r->out < 0 && r->err < 0) {
			done = waitpid(r->pid, &r->status, WNOHANG);
			if (done < 0 && errno != EINTR)
				return kerr_set(msg, n, KERR_IO, "exec plugin '%s': waitpid: %s",
						kc->exec_command, strerror(errno));
			if (done <= 0)
				poll(NULL, 0, left < 10 ? (int)left : 10);
			continue;
		}
		if (poll(p, 2, (int)(left < 1000 ? left : 1000)) < 0 && errno != EINTR)
			return kerr_set(msg, n, KERR_IO, "exec plugin '%s': poll: %s",
					kc->exec_command, strerror(errno));
		if (r->out >= 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    kc_drain(r, &r->out) < 0)
			return kerr_set(msg, n, KERR_LIMIT,
					"exec plugin '%s' wrote more than %u bytes; killed it",
					kc->exec_command, KC_MAX_EXEC_OUT);
		if (r->err >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR)))
			kc_drain(r, &r->err);
	}
	r->pid = 0;
	return 0;
}

/* Kills a plugin still running (its whole group), reaps it, closes the pipes. */
static void kc_run_release(struct kc_run *r)
{
	if (r->pid > 0) {
		kill(-r->pid, SIGKILL);
		kill(r->pid, SIGKILL);
		while (waitpid(r->pid, &r->status, 0) < 0 && errno == EINTR)
			;
	}
	if (r->out >= 0)
		close(r->out);
	if (r->err >= 0)
		close(r->err);
	if (r->so.buf)
		explicit_bzero(r->so.buf, r->so.alloc);
	sbuf_release(&r->so);
}

/* The start of the plugin's stderr for a message: one line, the current token cut out. */
static void kc_stderr_quote(const struct kubeconfig *kc, struct kc_run *r)
{
	char *hit;

	r->se[r->se_len] = '\0';
	for (size_t i = 0; i < r->se_len; i++)
		if ((unsigned char)r->se[i] < ' ' || r->se[i] == 0x7f)
			r->se[i] = ' ';
	kubeconfig__trim(r->se);
	while (kc->token && *kc->token && (hit = strstr(r->se, kc->token)))
		memset(hit, '*', strlen(kc->token));
}

/* ---- exec plugin: its ExecCredential ---- */

static int kc_digits(const char **p, int count, int *out)
{
	*out = 0;
	for (int i = 0; i < count; i++, (*p)++) {
		if (!isdigit((unsigned char)**p))
			return -1;
		*out = *out * 10 + (**p - '0');
	}
	return 0;
}

/* RFC 3339: 2026-11-22T15:04:05Z, .fraction, +hh:mm / -hh:mm offsets. */
static int kc_parse_time(const char *s, time_t *out)
{
	struct tm tm = { 0 };
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
	const char *p = s;

	if (kc_digits(&p, 4, &y) || *p++ != '-' || kc_digits(&p, 2, &mo) || *p++ != '-' ||
	    kc_digits(&p, 2, &d) || (*p != 'T' && *p != 't' && *p != ' ') || !*p++ ||
	    kc_digits(&p, 2, &h) || *p++ != ':' || kc_digits(&p, 2, &mi) || *p++ != ':' ||
	    kc_digits(&p, 2, &sec))
		return -1;
	if (*p == '.' && !isdigit((unsigned char)*++p))
		return -1;
	while (isdigit((unsigned char)*p))
		p++;
	if (*p == '+' || *p == '-') {
		sign = *p++ == '-' ? -1 : 1;
		if (kc_digits(&p, 2, &oh) || *p++ != ':' || kc_digits(&p, 2, &om) || oh > 23 ||
		    om > 59)
			return -1;
	} else if (*p != 'Z' && *p != 'z') {
		return -1;
	} else {
		p++;
	}
	if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
		return -1;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	*out = timegm(&tm) - (time_t)sign * (oh * 3600 + om * 60);
	return 0;
}

/* The credential a plugin printed. */
struct kc_cred {
	const char *token, *cert, *key; /* borrowed from the JSON */
	time_t expiry;
};

static int kc_cred_fail(const struct kubeconfig *kc, char *msg, size_t n, const char *why,
			const char *what)
{
	return kerr_set(msg, n, KERR_PARSE, "exec plugin '%s': %s%s", kc->exec_command, why,
			what ? what : "");
}

static int kc_cred_status(const struct kubeconfig *kc, json_t *st, struct kc_cred *c, char *msg,
			  size_t n)
{
	const char *exp;

	if (!json_is_object(st))
		return kc_cred_fail(kc, msg, n, "the ExecCredential has no status", NULL);
	c->token = json_string_value(json_object_get(st, "token"));
	c->cert = json_string_value(json_object_get(st, "clientCertificateData"));
	c->key = json_string_value(json_object_get(st, "clientKeyData"));
	exp = json_string_value(json_object_get(st, "expirationTimestamp"));
	if (c->token && !*c->token)
		c->token = NULL;
	if (c->cert && !*c->cert)
		c->cert = NULL;
	if (c->key && !*c->key)
		c->key = NULL;
	if (!c->cert != !c->key)
		return kc_cred_fail(kc, msg, n, "status has only one of ",
				    "clientCertificateData and clientKeyData");
	if (c->token && !kubeconfig__printable(c->token))
		return kc_cred_fail(kc, msg, n, "status.token holds control characters", NULL);
	if (!c->token && !c->cert)
		return kc_cred_fail(kc, msg, n, "status has neither a token nor ",
				    "clientCertificateData and clientKeyData");
	if (exp && *exp && kc_parse_time(exp, &c->expiry))
		return kc_cred_fail(kc, msg, n,
				    "status.expirationTimestamp is not RFC 3339: ", exp);
	return 0;
}

/* Parses the plugin's stdout into *doc (the caller decrefs) and c. */
static int kc_cred_parse(const struct kubeconfig *kc, const struct sbuf *out, json_t **doc,
			 struct kc_cred *c, char *msg, size_t n)
{
	json_error_t je;
	const char *v, *k;

	/* json_error_t's text may quote the output near the error: it is not used */
	*doc = json_loadb(out->buf ? out->buf : "", out->len, JSON_REJECT_DUPLICATES, &je);
	if (!*doc)
		return kerr_set(msg, n, KERR_PARSE,
				"exec plugin '%s': its output is not JSON (line %d, column %d)",
				kc->exec_command, je.line, je.column);
	if (!json_is_object(*doc))
		return kc_cred_fail(kc, msg, n, "its output is not a JSON object", NULL);
	v = json_string_value(json_object_get(*doc, "apiVersion"));
	k = json_string_value(json_object_get(*doc, "kind"));
	if (!v || strcmp(v, kc->exec_api_version))
		return kerr_set(msg, n, KERR_PARSE,
				"exec plugin '%s' returned apiVersion '%.80s', expected '%s'",
				kc->exec_command, v ? v : "", kc->exec_api_version);
	if (!k || strcmp(k, "ExecCredential"))
		return kerr_set(msg, n, KERR_PARSE,
				"exec plugin '%s' returned kind '%.80s', expected 'ExecCredential'",
				kc->exec_command, k ? k : "");
	return kc_cred_status(kc, json_object_get(*doc, "status"), c, msg, n);
}

/* Wipes the strings of the plugin's JSON (the token and key) before freeing it. */
static void kc_json_wipe(json_t *v)
{
	const char *key;
	json_t *m;
	size_t i;

	if (json_is_string(v))
		explicit_bzero((char *)json_string_value(v), json_string_length(v));
	else if (json_is_object(v))
		json_object_foreach (v, key, m)
			kc_json_wipe(m);
	else if (json_is_array(v))
		json_array_foreach (v, i, m)
			kc_json_wipe(m);
}

/* Replaces *dst by a copy of src; an unchanged value keeps its pointer (http_opts borrow it). */
static void kc_take(char **dst, const char *src)
{
	if (*dst && src && !strcmp(*dst, src))
		return;
	kubeconfig__wipe(dst);
	*dst = src ? xstrdup(src) : NULL;
}

int kubeconfig__exec(struct kubeconfig *kc, char *msg, size_t n)
{
	struct kc_run r = { .out = -1, .err = -1, .so = SBUF_INIT };
	struct kc_cred c = { 0 };
	json_t *doc = NULL;
	int rc = kc_spawn(kc, &r, msg, n);

	if (!rc)
		rc = kc_collect(kc, &r, msg, n);
	if (!rc && (!WIFEXITED(r.status) || WEXITSTATUS(r.status))) {
		kc_stderr_quote(kc, &r);
		rc = kerr_set(msg, n, KERR_CHILD, "exec plugin '%s' %s %d; stderr: \"%s\"",
			      kc->exec_command,
			      WIFEXITED(r.status) ? "exited with" : "was killed by signal",
			      WIFEXITED(r.status) ? WEXITSTATUS(r.status) : WTERMSIG(r.status),
			      r.se);
	}
	if (!rc)
		rc = kc_cred_parse(kc, &r.so, &doc, &c, msg, n);
	if (rc && rc != KERR_CHILD && r.se_len && msg && n) {
		size_t used = strlen(msg);

		kc_stderr_quote(kc, &r);
		snprintf(msg + used, n - used, "; stderr: \"%s\"", r.se);
	}
	if (!rc) {
		kc_take(&kc->token, c.token);
		kc_take(&kc->client_cert_pem, c.cert);
		kc_take(&kc->client_key_pem, c.key);
		kc->token_expiry = c.expiry;
	}
	if (doc) {
		kc_json_wipe(doc);
		json_decref(doc);
	}
	kc_run_release(&r);
	return rc;
}
