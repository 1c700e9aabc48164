/*
 * kctl start SPEC [--rounds N] [--seed N] [--step] [--no-progress] [--no-cache] [--state FILE]
 *            [-v]
 * kctl resume SESSION [--set limits.KEY=VALUE]... [--rounds N] [--step] [--no-progress]
 *             [--no-cache] [--state FILE] [-v]
 */
#include "cmds.h"
#include "err.h"
#include "fileio.h"
#include "log.h"
#include "sbuf.h"
#include "session.h"
#include "loop.h"
#include "xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SETS 16

struct run_opts {
	const char *state;
	int rounds, step;
	int no_progress; /* --no-progress: no live line even on a terminal */
	int no_cache;    /* --no-cache: the result cache is neither read nor written */
	int has_seed;    /* start --seed N: the proposer's seed */
	uint64_t seed;
	const char *set[MAX_SETS]; /* resume --set KEY=VALUE */
	int nset;
};

/* --seed N: 0 to 2^63 - 1, as the spec's proposer.seed. */
static int parse_seed(const char *arg, uint64_t *seed)
{
	char *end = NULL;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (!isdigit((unsigned char)arg[0]) || !end || *end || errno || v > INT64_MAX) {
		log_error("--seed wants a whole number from 0 to %lld, not '%s'",
			  (long long)INT64_MAX, arg);
		return -1;
	}
	*seed = v;
	return 0;
}

static int parse(int argc, char **argv, struct run_opts *o, const char *usage)
{
	static const struct option opts[] = {
		{ "rounds", required_argument, NULL, 'r' },
		{ "step", no_argument, NULL, 's' },
		{ "state", required_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "set", required_argument, NULL, 'x' },
		{ "no-progress", no_argument, NULL, 'P' },
		{ "no-cache", no_argument, NULL, 'C' },
		{ "seed", required_argument, NULL, 'e' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	optind = 1;
	while ((c = getopt_long(argc, argv, "v", opts, NULL)) != -1) {
		char *end = NULL;

		switch (c) {
		case 'r':
			o->rounds = (int)strtol(optarg, &end, 10);
			if (!end || *end || o->rounds < 1 || o->rounds > 100000) {
				log_error("--rounds wants a number from 1 to 100000, not '%s'",
					  optarg);
				return -1;
			}
			break;
		case 's': o->step = 1; break;
		case 'P': o->no_progress = 1; break;
		case 'C': o->no_cache = 1; break;
		case 'S': o->state = optarg; break;
		case 'v': log_level_current = LOG_DEBUG; break;
		case 'e':
			if (!strstr(usage, "--seed")) {
				fputs(usage, stderr);
				return -1;
			}
			if (parse_seed(optarg, &o->seed))
				return -1;
			o->has_seed = 1;
			break;
		case 'x':
			if (!strstr(usage, "--set")) {
				fputs(usage, stderr);
				return -1;
			}
			if (o->nset == MAX_SETS) {
				log_error("--set: at most %d at once", MAX_SETS);
				return -1;
			}
			o->set[o->nset++] = optarg;
			break;
		default: fputs(usage, stderr); return -1;
		}
	}
	if (optind != argc - 1) {
		fputs(usage, stderr);
		return -1;
	}
	return 0;
}

/* cmd_open_store and cmd_open_store_read: reading is 1 for the latter. */
static struct store *open_store(const char *state_path, int reading)
{
	char *path = session_state_path(state_path), *dir = xstrdup(path), *slash;
	struct store *st = NULL;
	char msg[2048];

	slash = strrchr(dir, '/');
	if (slash && slash != dir)
		*slash = '\0';
	if ((slash && dir_make(dir, msg, sizeof(msg))) ||
	    (reading ? store_open_read : store_open)(path, &st, msg, sizeof(msg))) {
		log_error("%s", msg);
		st = NULL;
	}
	free(dir);
	free(path);
	return st;
}

struct store *cmd_open_store(const char *state_path)
{
	return open_store(state_path, 0);
}

struct store *cmd_open_store_read(const char *state_path)
{
	return open_store(state_path, 1);
}

/* The exit status of a session that could not be opened; says why. */
static int open_failed(int rc, const char *msg)
{
	log_error("%s", msg);
	return rc == KERR_NODEVICE || rc == KERR_NOTFOUND ? KCTL_EXIT_INFRA : KCTL_EXIT_FAIL;
}

/* Characters a shell takes as they are; any other gets the word quoted. */
static int shell_plain(const char *word)
{
	if (!*word)
		return 0;
	for (; *word; word++)
		if (!isalnum((unsigned char)*word) && !strchr("/._-+=:,@%", *word))
			return 0;
	return 1;
}

/*
 * " --state FILE" when the database was named on the command line (quoted
 * for a POSIX shell where it needs it), else "": what a "go on with" hint
 * must repeat to reach the same session.  Returns a new string.
 */
static char *again_options(const char *state)
{
	struct sbuf b = SBUF_INIT;

	if (state && shell_plain(state)) {
		sbuf_addf(&b, " --state %s", state);
	} else if (state) {
		sbuf_adds(&b, " --state '");
		for (const char *p = state; *p; p++)
			if (*p == '\'')
				sbuf_adds(&b, "'\\''");
			else
				sbuf_addch(&b, *p);
		sbuf_adds(&b, "'");
	}
	return sbuf_detach(&b, NULL);
}

/* Says how a run of session s ended (rc, msg); cmd is the command that goes on. */
static int ended(struct session *s, int rc, const char *msg, const char *cmd)
{
	if (rc && rc != 130)
		log_error("session %s: %s", s->id, msg);
	else if (rc == 130)
		fprintf(stderr, "interrupted; go on with: kctl %s %s%s\n", cmd, s->id,
			s->again ? s->again : "");
	return rc;
}

/*
 * Whether the round's live line (progress.h) is drawn on stderr: a terminal
 * that can move its cursor, unless --no-progress.  Logs never interleave
 * with it: evalpod's relayed lines clear it first, and it is cleared before
 * the wait for evalpod ends and kctl logs again.
 */
static int live_line(const struct run_opts *o)
{
	const char *term = getenv("TERM");

	return !o->no_progress && isatty(STDERR_FILENO) && !(term && !strcmp(term, "dumb"));
}

static int drive(struct session *s, const struct run_opts *o)
{
	char msg[4096] = "";

	s->step = o->step; /* rounds_cap: given to open, which records it */
	s->interactive = live_line(o);
	return ended(s, session_run(s, msg, sizeof(msg)), msg, "resume");
}

/*
 * resume --set: every change recorded in one transaction, or none; the
 * session goes back to running (a failed or paused one included).
 */
static int apply_sets(struct session *s, const struct run_opts *o, char *msg, size_t n)
{
	int rc;

	if (!o->nset)
		return 0;
	if ((rc = store_begin(s->st, msg, n)))
		return rc;
	for (int i = 0; i < o->nset && !rc; i++)
		rc = session_set(s, o->set[i], msg, n);
	if (!rc)
		rc = store_session_set_state(s->st, s->id, "running", NULL, msg, n);
	if (rc) {
		store_rollback(s->st);
		return rc;
	}
	return store_commit(s->st, msg, n);
}

typedef int (*open_fn)(struct session *s, struct store *st, const char *arg, char *msg, size_t n);

/* start and resume differ only in how the session is opened. */
static int run_command(int argc, char **argv, const char *usage, open_fn open, int created)
{
	struct run_opts o;
	struct session s;
	struct store *st;
	char msg[4096] = "", *id = NULL, *again = NULL;
	int rc, opened = 1;

	if (parse(argc, argv, &o, usage))
		return KCTL_EXIT_USAGE;
	for (int i = 0; i < o.nset; i++) {
		if (session_set_check(o.set[i], msg, sizeof(msg))) {
			log_error("%s", msg);
			return KCTL_EXIT_USAGE;
		}
	}
	if (!(st = cmd_open_store(o.state)))
		return KCTL_EXIT_INFRA;
	memset(&s, 0, sizeof(s));
	if (!created && !(id = cmd_session_id(st, argv[optind]))) {
		rc = KCTL_EXIT_FAIL;
		if (store_check(st, msg, sizeof(msg))) {
			log_error("%s", msg);
			rc = KCTL_EXIT_INFRA;
		}
		store_close(st);
		return rc;
	}
	s.again = again = again_options(o.state);
	s.rounds_cap = o.rounds; /* reopen lets a larger one extend a done session */
	s.no_cache = o.no_cache;
	s.has_seed = o.has_seed;
	s.seed = o.seed;
	rc = open(&s, st, created ? argv[optind] : id, msg, sizeof(msg));
	if (!rc && (rc = apply_sets(&s, &o, msg, sizeof(msg)))) {
		log_error("session %s: %s", s.id, msg);
		rc = rc == KERR_INVALID || rc == KERR_RANGE ? KCTL_EXIT_USAGE : KCTL_EXIT_FAIL;
	} else if (rc) {
		opened = 0;
		rc = open_failed(rc, msg);
	} else {
		if (created) {
			fprintf(stderr, "session %s: output in %s\n", s.id, s.dir);
			printf("%s\n", s.id);
			fflush(stdout);
		}
		rc = drive(&s, &o);
	}
	/* whatever was decided after a failed read was not committed (store_commit) */
	if (store_check(st, msg, sizeof(msg))) {
		if (opened)
			log_error("%s; nothing read after that failure was recorded", msg);
		rc = KCTL_EXIT_INFRA;
	}
	session_release(&s);
	store_close(st);
	free(again);
	free(id);
	return rc;
}

int cmd_start(int argc, char **argv)
{
	return run_command(
		argc, argv,
		"usage: kctl start SPEC [--rounds N] [--seed N] [--step] [--no-progress] "
		"[--no-cache] [--state FILE] [-v]\n",
		session_create, 1);
}

int cmd_resume(int argc, char **argv)
{
	return run_command(argc, argv,
			   "usage: kctl resume SESSION [--set limits.KEY=VALUE]... [--rounds N] "
			   "[--step] [--no-progress] [--no-cache] [--state FILE] [-v]\n",
			   session_reopen, 0);
}

/* kctl confirm SESSION [--passes N] [--candidates K] [--state FILE] [-v] */
int cmd_confirm(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "passes", required_argument, NULL, 'p' },
		{ "candidates", required_argument, NULL, 'c' },
		{ "state", required_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	static const char usage[] = "usage: kctl confirm SESSION [--passes N] [--candidates K] "
				    "[--state FILE] [-v]\n";
	const char *state = NULL;
	long passes = 0, cands = 0;
	struct session s;
	struct store *st;
	char msg[4096] = "", *end, *id = NULL, *again = NULL;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "v", opts, NULL)) != -1) {
		if (c == 'p' || c == 'c') {
			long v = strtol(optarg, &end, 10);

			if (*end || end == optarg || v < (c == 'p' ? 1 : 2) ||
			    v > (c == 'p' ? 10 : 16)) {
				fprintf(stderr, "kctl confirm: --%s takes %s, not '%s'\n",
					c == 'p' ? "passes" : "candidates",
					c == 'p' ? "1 to 10" : "2 to 16", optarg);
				return KCTL_EXIT_USAGE;
			}
			*(c == 'p' ? &passes : &cands) = v;
		} else if (c == 'S') {
			state = optarg;
		} else if (c == 'v') {
			log_level_current = LOG_DEBUG;
		} else {
			fputs(usage, stderr);
			return KCTL_EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fputs(usage, stderr);
		return KCTL_EXIT_USAGE;
	}
	if (!(st = cmd_open_store(state)))
		return KCTL_EXIT_INFRA;
	if (!(id = cmd_session_id(st, argv[optind]))) {
		store_close(st);
		return KCTL_EXIT_FAIL;
	}
	memset(&s, 0, sizeof(s));
	s.again = again = again_options(state);
	rc = session_reopen_to_confirm(&s, st, id, msg, sizeof(msg));
	if (rc) {
		rc = open_failed(rc, msg);
	} else {
		if (passes)
			s.spec.confirm_passes = (int)passes;
		else if (s.spec.confirm_passes <= 0)
			s.spec.confirm_passes = 3;
		if (cands)
			s.spec.confirm_candidates = (int)cands;
		s.interactive = isatty(STDERR_FILENO);
		rc = ended(&s, session_confirm(&s, msg, sizeof(msg)), msg, "confirm");
	}
	session_release(&s);
	store_close(st);
	free(again);
	free(id);
	return rc;
}
