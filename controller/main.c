/*
 * kctl - optimizes OpenCL kernels: proposes variants, has evalpod measure
 * them, ranks them, keeps lineages and learnings, and iterates.
 */
#include "cmds.h"
#include "fileio.h"
#include "kctl-version.h" /* made at build time: cmake/version.cmake */
#include "log.h"
#include "session.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;  /* one line for `kctl help` */
	const char *usage; /* what `kctl COMMAND --help` prints */
};

static int cmd_version(int argc, char **argv);

static const struct command commands[] = {
	{ "start", cmd_start, "start a session",
	  "kctl start SPEC [--rounds N] [--seed N] [--step] [--no-progress] [--no-cache] "
	  "[--state FILE] [-v]\n\n"
	  "--seed N seeds the proposer's choices instead of the spec's proposer.seed\n"
	  "(repeats of one spec with other seeds are independent searches).\n"
	  "--no-cache neither reads nor writes the result cache (kctl cache)." },
	{ "resume", cmd_resume, "go on with a stopped, killed or finished session",
	  "kctl resume SESSION [--set limits.KEY=VALUE]... [--rounds N] [--step] "
	  "[--no-progress] [--no-cache] [--state FILE] [-v]\n\n"
	  "--rounds N lets a session that ended on its round budget go on to N rounds.\n"
	  "--no-cache neither reads nor writes the result cache (kctl cache)." },
	{ "confirm", cmd_confirm, "re-time a session's top candidates side by side",
	  "kctl confirm SESSION [--passes N] [--candidates K] [--state FILE] [-v]" },
	{ "eval", cmd_eval, "evaluate kernel files against a baseline, for CI",
	  "kctl eval SPEC [--kernel FILE]... [--baseline FILE] [--backend local|kubernetes]\n"
	  "                 [--threshold PCT] [--passes N] [-o text|json] [--out DIR] "
	  "[--no-cache]\n"
	  "                 [--state FILE] [-v]\n\n"
	  "--passes N times the programs in N evalpod runs, one after the other (1 to 10,\n"
	  "default 1), and pools their ratios.\n\n"
	  "Exit status: 0 every kernel correct and none slower than the baseline beyond the\n"
	  "threshold (default 5%) or the measured noise; 1 a kernel failed its checks; 2 a\n"
	  "regression; 3 the evaluation itself failed; 64 a usage error." },
	{ "status", cmd_status, "sessions and their best kernels",
	  "kctl status [SESSION] [-o text|json] [--state FILE]\n"
	  "       kctl status SESSION --watch [--interval SECONDS] [--state FILE]\n"
	  "       kctl status --cluster [--namespace NS | --all-namespaces] [--kubeconfig FILE]\n"
	  "                   [--context NAME] [-o text|json]\n\n"
	  "--watch redraws the session's rounds (a bar, evaluated and failed counts, the\n"
	  "ETA) and its incumbent every --interval seconds (default 1) until it is no\n"
	  "longer running, then prints its status; plain lines when stdout is no terminal.\n"
	  "--cluster lists kctl's sessions in the cluster (every user's) from the API server:\n"
	  "Jobs active/succeeded/failed/suspended, queue and Kueue state." },
	{ "show", cmd_show, "a session's variants, or one variant",
	  "kctl show SESSION [VARIANT] [-o text|json] [--state FILE]" },
	{ "report", cmd_report, "a session's report: an HTML page with plots, Markdown or JSON",
	  "kctl report SESSION [-o html|md|json] [--out FILE] [--state FILE]\n\n"
	  "The page is the report.html kctl writes into the session folder after every\n"
	  "round: one self-contained file, no script, nothing fetched." },
	{ "export", cmd_export,
	  "the best parameters per device, dtype and shape: JSON or a C header",
	  "kctl export SESSION... [--format json|c] [--out FILE] [--state FILE]\n"
	  "       kctl export --merge FILE.json... [--format json|c] [--out FILE]\n\n"
	  "A table of the sessions' winners (schema kctl.tuned), or of tables merged: for\n"
	  "the same kernel, device, dtype and bucket the lower median time wins.  --format c\n"
	  "writes a C header with kctl_tuned_lookup(): exact bucket, else the nearest\n"
	  "bucket of the device and dtype, else the template's defaults (docs/kctl.md)." },
	{ "brief", cmd_brief, "a variant's profile brief, as the model sees it",
	  "kctl brief SESSION [VARIANT] [--code] [-o text|json] [--state FILE]" },
	{ "cancel", cmd_cancel, "stop a session for good",
	  "kctl cancel SESSION [--force] [--state FILE]\n\n"
	  "On Kubernetes the Jobs are deleted first; --force cancels even when that fails." },
	{ "delete", cmd_delete, "remove a session's records and its output folder",
	  "kctl delete SESSION [--force] [--state FILE]\n\n"
	  "A running session, or a Kubernetes one that is paused (its Jobs may run), is\n"
	  "refused; --force deletes it when no kctl drives it any more." },
	{ "render", cmd_render, "the Kubernetes Job a round would submit",
	  "kctl render SPEC [-o yaml|json] [--shards N] [--server-version MAJOR.MINOR]\n\n"
	  "Contacts no cluster: --server-version is the API server's to render for (default:\n"
	  "one with every Job feature kctl uses), --shards the number of shards (default 2)." },
	{ "simulate", cmd_simulate, "replay the search against a recorded space",
	  "kctl simulate DATASET [--strategy S,...] [--budgets N,...] [--seeds N] [--batch N]\n"
	  "                      [--spec FILE] [--no-starts] [--noise] [--trace] [-o text|json]\n\n"
	  "Strategies: tune (the default), random, evolve.  --spec overrides the dataset's\n"
	  "spec; --no-starts leaves out the spec's tunables.starts; --noise measures each\n"
	  "recorded speedup with its recorded noise; --trace writes every evaluation to\n"
	  "stderr." },
	{ "cache", cmd_cache, "the result cache: its size, pruning, clearing",
	  "kctl cache stats|prune|clear [--older-than DAYS] [-o text|json]\n\n"
	  "The cache is $KCTL_CACHE_DIR/cache.db, else $XDG_CACHE_HOME/kctl/cache.db, else\n"
	  "~/.cache/kctl/cache.db.  prune removes the entries older than DAYS (default 30),\n"
	  "clear every entry." },
	{ "version", cmd_version, "print kctl's version", "kctl version" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static int cmd_version(int argc, char **argv)
{
	if (argc > 1) {
		fprintf(stderr, "version: unexpected argument '%s'\nusage: kctl version\n",
			argv[1]);
		return KCTL_EXIT_USAGE;
	}
	printf("kctl %s\n", KCTL_VERSION);
	return 0;
}

static int usage(FILE *f)
{
	fputs("usage: kctl COMMAND [ARGS]\n       kctl COMMAND --help\n       kctl --version\n\n"
	      "commands:\n",
	      f);
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
	fputs("\nSESSION may be any unique prefix of a session id.  The state database is\n"
	      "--state FILE, else $KCTL_STATE_DIR/kctl.db, else $XDG_STATE_HOME/kctl/kctl.db,\n"
	      "else ~/.local/state/kctl/kctl.db.  See docs/kctl.md.\n",
	      f);
	return f == stdout ? 0 : 2;
}

/*
 * Whether the command line asks for help: -h or --help anywhere before a
 * "--" (an option's value that happens to read "--help" is taken as a
 * request for help too, as git does).
 */
static int wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return 1;
	return 0;
}

/*
 * rc, after what is left in stdout is written: a command whose output was
 * lost (a full disk behind "> FILE", a closed file) fails saying so, even
 * where the command itself succeeded, as cat and git do (exit 1 where rc
 * was 0).  A reader that went away (EPIPE, with SIGPIPE ignored by our
 * parent) ends kctl as SIGPIPE would have, quietly.
 */
static int stdout_done(int rc)
{
	int failed = ferror(stdout), err = 0;

	if (fflush(stdout)) {
		failed = 1;
		err = errno;
	}
	if (!failed)
		return rc;
	if (err == EPIPE) {
		signal(SIGPIPE, SIG_DFL);
		raise(SIGPIPE);
	}
	if (err)
		log_error("writing to standard output failed: %s", strerror(err));
	else if (!rc) /* a command that failed on it said so itself */
		log_error("writing to standard output failed: what was written is incomplete");
	return rc ? rc : KCTL_EXIT_FAIL;
}

static int run_command(int argc, char **argv)
{
	if (argc < 2)
		return usage(stderr);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help"))
		return usage(stdout);
	if (!strcmp(argv[1], "--version"))
		return cmd_version(argc - 1, argv + 1);
	for (size_t i = 0; i < NCOMMANDS; i++) {
		if (strcmp(argv[1], commands[i].name))
			continue;
		if (wants_help(argc - 1, argv + 1)) {
			printf("usage: %s\n\n%s.\n", commands[i].usage, commands[i].help);
			return 0;
		}
		return commands[i].fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "kctl: '%s' is not a command\n", argv[1]);
	return usage(stderr);
}

int main(int argc, char **argv)
{
	stdfds_sanitize();
	log_set_prog("kctl");
	log_level_current = LOG_INFO;
	return stdout_done(run_command(argc, argv));
}
