/*
 * test-llmcmd.c - llmcmd_run with sh scripts for commands: the prompt in,
 * the answer out, failures named, timeouts that leave nothing behind, the
 * environment allowlist.  Timeouts are generous and times are checked from
 * below only: the machine may be busy.
 */
#include "err.h"
#include "llm.h"
#include "sbuf.h"
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/test-llmcmd.XXXXXX";

/* Runs sh -c script with the prompt; the label is "proposer command 'test'". */
static int run_sh(const char *script, const char *prompt, long timeout_ms,
		  const char *const *pass_env, struct llmcmd_out *o, char *msg, size_t n)
{
	const char *argv[] = { "sh", "-c", script, "sh", "{context}", NULL };
	struct llmcmd_conf c = {
		.argv = argv,
		.label = "proposer command 'test'",
		.timeout_ms = timeout_ms ? timeout_ms : 120000,
		.pass_env = pass_env,
	};

	return llmcmd_run(&c, prompt, "/tmp/ctx file.md", o, msg, n);
}

TEST(echo)
{
	static const char prompt[] = "line 1\n\"quoted\" \\ back\xce\xbb\nno newline at the end";
	struct llmcmd_out o;
	char msg[1024] = "";

	CHECK(run_sh("cat", prompt, 0, NULL, &o, msg, sizeof(msg)) == 0);
	CHECK_STR(o.out, prompt);
	CHECK(o.len == strlen(prompt));
	CHECK_STR(o.err, "");
	CHECK(o.status == 0);
	CHECK(o.ms > 0);
	llmcmd_out_release(&o);
}

/* More than a pipe holds, both ways at once: no deadlock. */
TEST(echo_large)
{
	struct sbuf big = SBUF_INIT;
	struct llmcmd_out o;
	char msg[1024] = "";

	for (int i = 0; i < 40000; i++)
		sbuf_addf(&big, "prompt line %d\n", i);
	CHECK(run_sh("cat; echo noise >&2", big.buf, 0, NULL, &o, msg, sizeof(msg)) == 0);
	CHECK(o.len == big.len && !memcmp(o.out, big.buf, big.len));
	CHECK_STR(o.err, "noise\n");
	llmcmd_out_release(&o);
	sbuf_release(&big);
}

TEST(exit_status)
{
	struct llmcmd_out o;
	char msg[1024] = "";
	int rc = run_sh("cat >/dev/null; echo 'first line' >&2; echo 'bad thing happened' >&2; "
			"exit 3",
			"x", 0, NULL, &o, msg, sizeof(msg));

	CHECK(rc == KERR_CHILD);
	CHECK(o.status == 3);
	CHECK_CONTAINS(msg, "proposer command 'test': exited with status 3; stderr: ");
	CHECK_CONTAINS(msg, "bad thing happened");
	CHECK(!strchr(msg, '\n'));
	CHECK_CONTAINS(o.err, "first line\nbad thing happened\n");
	llmcmd_out_release(&o);
}

TEST(stderr_tail)
{
	struct llmcmd_out o;
	char msg[8192] = "";
	int rc = run_sh("i=0; while [ $i -lt 2000 ]; do echo \"noise $i\" >&2; i=$((i+1)); done; "
			"echo THE-END >&2; exit 1",
			"", 0, NULL, &o, msg, sizeof(msg));

	CHECK(rc == KERR_CHILD);
	CHECK(strlen(o.err) <= 4096);
	CHECK(strlen(o.err) > 4000);
	CHECK_CONTAINS(o.err, "THE-END\n");
	CHECK(!strstr(o.err, "noise 1\n"));
	CHECK_CONTAINS(msg, "THE-END");
	llmcmd_out_release(&o);
}

TEST(signal)
{
	struct llmcmd_out o;
	char msg[1024] = "";

	CHECK(run_sh("kill -9 $$", "", 0, NULL, &o, msg, sizeof(msg)) == KERR_CHILD);
	CHECK(o.status == -1);
	CHECK_CONTAINS(msg, "proposer command 'test': killed by signal 9");
	llmcmd_out_release(&o);
}

/* Nonzero while pid names a process that is not a zombie. */
static int alive(pid_t pid)
{
	char path[64], buf[512];
	FILE *f;
	char *p;
	int live = 0;

	if (kill(pid, 0) && errno == ESRCH)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		live = p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
	fclose(f);
	return live;
}

TEST(timeout_kills_the_group)
{
	char script[1024], pidfile[300];
	struct llmcmd_out o;
	char msg[1024] = "";
	pid_t pids[3] = { 0 };
	int npid = 0, rc;
	FILE *f;

	snprintf(pidfile, sizeof(pidfile), "%s/pids", tmpdir);
	snprintf(script, sizeof(script),
		 "sleep 300 & echo $! > '%s'; sh -c 'sleep 300 & echo $! >> \"$0\"; wait' '%s' & "
		 "echo $$ >> '%s'; wait",
		 pidfile, pidfile, pidfile);
	rc = run_sh(script, "", 2500, NULL, &o, msg, sizeof(msg));
	CHECK(rc == KERR_TIMEOUT);
	CHECK(o.status == -1);
	CHECK(o.ms >= 2400);
	CHECK_CONTAINS(msg, "proposer command 'test': timed out after 2.5 s");
	f = fopen(pidfile, "r");
	while (f && npid < 3 && fscanf(f, "%d", &pids[npid]) == 1)
		npid++;
	if (f)
		fclose(f);
	CHECK(npid == 3);
	for (int i = 0; i < npid; i++) {
		/* the orphans are init's to reap: give it time */
		for (int tries = 0; tries < 200 && alive(pids[i]); tries++)
			nanosleep(&(struct timespec){ .tv_nsec = 50000000 }, NULL);
		CHECK(!alive(pids[i]));
	}
	llmcmd_out_release(&o);
}

/* A command that never reads its stdin does not take kctl down with SIGPIPE. */
TEST(unread_prompt)
{
	struct sbuf big = SBUF_INIT;
	struct llmcmd_out o;
	sigset_t mask, pending;
	char msg[1024] = "";

	for (int i = 0; i < 4 << 20; i += 64)
		sbuf_adds(&big,
			  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n");
	CHECK(run_sh("exec 0<&-; echo done", big.buf, 0, NULL, &o, msg, sizeof(msg)) == 0);
	CHECK_STR(o.out, "done\n");
	llmcmd_out_release(&o);
	CHECK(run_sh("echo done", big.buf, 0, NULL, &o, msg, sizeof(msg)) == 0);
	CHECK_STR(o.out, "done\n");
	sigprocmask(SIG_BLOCK, NULL, &mask);
	CHECK(!sigismember(&mask, SIGPIPE));
	sigpending(&pending);
	CHECK(!sigismember(&pending, SIGPIPE));
	llmcmd_out_release(&o);
	sbuf_release(&big);
}

TEST(missing_binary)
{
	const char *argv[] = { "kctl-no-such-command-here", "-p", NULL };
	const char *path_argv[] = { "/nonexistent/dir/cmd", NULL };
	struct llmcmd_conf c = { .argv = argv, .label = "proposer command 'missing'" };
	struct llmcmd_out o;
	char msg[1024] = "";

	CHECK(llmcmd_run(&c, "x", NULL, &o, msg, sizeof(msg)) == KERR_NOTFOUND);
	CHECK_CONTAINS(msg, "proposer command 'missing': cannot run 'kctl-no-such-command-here': "
			    "No such file or directory");
	llmcmd_out_release(&o);
	c.argv = path_argv;
	CHECK(llmcmd_run(&c, "x", NULL, &o, msg, sizeof(msg)) == KERR_NOTFOUND);
	CHECK_CONTAINS(msg, "cannot run '/nonexistent/dir/cmd'");
	llmcmd_out_release(&o);
}

TEST(not_executable)
{
	char path[300];
	const char *argv[] = { path, NULL };
	struct llmcmd_conf c = { .argv = argv, .label = "proposer command 'noexec'" };
	struct llmcmd_out o;
	char msg[1024] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/noexec.sh", tmpdir);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs("#!/bin/sh\necho hi\n", f);
		fclose(f);
	}
	CHECK(llmcmd_run(&c, "x", NULL, &o, msg, sizeof(msg)) == KERR_NOTFOUND);
	CHECK_CONTAINS(msg, "Permission denied");
	llmcmd_out_release(&o);
}

TEST(context)
{
	struct llmcmd_out o;
	char msg[1024] = "";

	CHECK(run_sh("printf '%s|%s' \"$1\" \"$KCTL_CONTEXT\"", "", 0, NULL, &o, msg,
		     sizeof(msg)) == 0);
	CHECK_STR(o.out, "/tmp/ctx file.md|/tmp/ctx file.md");
	llmcmd_out_release(&o);
}

TEST(environment)
{
	static const char *const pass[] = { "SECRET_KEY", NULL };
	static const char script[] =
		"printf '%s,%s,%s,%s,%s' \"${SECRET_KEY-unset}\" "
		"\"${KCTL_OTHER-unset}\" \"${HOME-unset}\" \"${LC_ALL-unset}\" "
		"\"${PATH:+path}\"";
	struct llmcmd_out o;
	char msg[1024] = "";

	setenv("SECRET_KEY", "s3cr3t", 1);
	setenv("KCTL_OTHER", "other", 1);
	setenv("HOME", "/home/test", 1);
	setenv("LC_ALL", "C", 1);
	setenv("KCTL_CONTEXT", "/not/this/one", 1);
	CHECK(run_sh(script, "", 0, NULL, &o, msg, sizeof(msg)) == 0);
	CHECK_STR(o.out, "unset,unset,/home/test,C,path");
	llmcmd_out_release(&o);
	CHECK(run_sh(script, "", 0, pass, &o, msg, sizeof(msg)) == 0);
	CHECK_STR(o.out, "s3cr3t,unset,/home/test,C,path");
	llmcmd_out_release(&o);
	CHECK(run_sh("printf %s \"$KCTL_CONTEXT\"", "", 0, NULL, &o, msg, sizeof(msg)) == 0);
	CHECK_STR(o.out, "/tmp/ctx file.md");
	llmcmd_out_release(&o);
	unsetenv("SECRET_KEY");
	unsetenv("KCTL_OTHER");
	unsetenv("KCTL_CONTEXT");
}

/* Descriptors kctl holds open without close-on-exec do not reach the command. */
TEST(descriptors)
{
	struct llmcmd_out o;
	char msg[1024] = "", want[32];
	int fd = open("/dev/null", O_RDONLY);

	/* high enough not to be the descriptor the shell's glob reads the directory with */
	CHECK(fd > 2 && dup2(fd, 57) == 57);
	close(fd);
	fd = 57;
	snprintf(want, sizeof(want), "\n%d\n", fd);
	CHECK(run_sh("for f in /proc/$$/fd/*; do echo \"${f##*/}\"; done", "", 0, NULL, &o, msg,
		     sizeof(msg)) == 0);
	CHECK_CONTAINS(o.out, "0\n1\n2\n");
	CHECK(!strstr(o.out, want));
	llmcmd_out_release(&o);
	close(fd);
}

TEST(workdir_and_limit)
{
	const char *pwd_argv[] = { "pwd", NULL };
	const char *big_argv[] = { "head", "-c", "100000", "/dev/zero", NULL };
	struct llmcmd_conf c = { .argv = pwd_argv,
				 .label = "proposer command 'pwd'",
				 .workdir = tmpdir };
	struct llmcmd_out o;
	char msg[1024] = "", want[300];

	snprintf(want, sizeof(want), "%s\n", tmpdir);
	CHECK(llmcmd_run(&c, "", NULL, &o, msg, sizeof(msg)) == 0);
	CHECK_STR(o.out, want);
	llmcmd_out_release(&o);
	c.workdir = "/nonexistent/dir";
	CHECK(llmcmd_run(&c, "", NULL, &o, msg, sizeof(msg)) == KERR_NOTFOUND);
	CHECK_CONTAINS(msg, "cannot enter '/nonexistent/dir'");
	llmcmd_out_release(&o);
	c.workdir = NULL;
	c.argv = big_argv;
	c.max_output = 1000;
	CHECK(llmcmd_run(&c, "", NULL, &o, msg, sizeof(msg)) == KERR_LIMIT);
	CHECK_CONTAINS(msg, "proposer command 'pwd': its output exceeds 1000 bytes");
	llmcmd_out_release(&o);
}

static void remove_tmpdir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", tmpdir);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(echo);
	RUN(echo_large);
	RUN(exit_status);
	RUN(stderr_tail);
	RUN(signal);
	RUN(timeout_kills_the_group);
	RUN(unread_prompt);
	RUN(missing_binary);
	RUN(not_executable);
	RUN(context);
	RUN(environment);
	RUN(descriptors);
	RUN(workdir_and_limit);
	remove_tmpdir();
	return test_summary();
}
