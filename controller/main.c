/*
 * kctl - optimizes OpenCL kernels: proposes variants, has evalpod measure
 * them, ranks them, keeps lineages and learnings, and iterates.
 */
#include "cmds.h"
#include "log.h"

#include <stdio.h>
#include <string.h>

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

static const struct command commands[] = {
	{ "start", cmd_start, "start a session: kctl start SPEC [--rounds N] [--step]" },
	{ "resume", cmd_resume, "go on with a stopped or killed session: kctl resume SESSION" },
	{ "confirm", cmd_confirm,
	  "re-time a session's top candidates side by side: kctl confirm SESSION [--passes N]" },
	{ "status", cmd_status,
	  "sessions and their best kernels: kctl status [SESSION] [-o json]" },
	{ "show", cmd_show, "a session's variants, or one variant: kctl show SESSION [VARIANT]" },
	{ "brief", cmd_brief,
	  "a variant's profile brief, as the model sees it: kctl brief SESSION [VARIANT] "
	  "[--code]" },
	{ "cancel", cmd_cancel, "stop a session for good: kctl cancel SESSION" },
	{ "render", cmd_render,
	  "the Kubernetes Job a round would submit: kctl render SPEC [-o yaml|json]" },
	{ "simulate", cmd_simulate,
	  "replay the search against a recorded space: kctl simulate DATASET [--strategy "
	  "S,...] [--budgets N,...] [--seeds N] [--batch N] [-o text|json]" },
};

static int usage(FILE *f)
{
	fputs("usage: kctl COMMAND [ARGS]\n\ncommands:\n", f);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
	fputs("\nThe state database is --state FILE, else $KCTL_STATE_DIR/kctl.db, else\n"
	      "$XDG_STATE_HOME/kctl/kctl.db, else ~/.local/state/kctl/kctl.db.  See "
	      "docs/kctl.md.\n",
	      f);
	return f == stdout ? 0 : 2;
}

int main(int argc, char **argv)
{
	log_set_prog("kctl");
	log_level_current = LOG_INFO;
	if (argc < 2)
		return usage(stderr);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help"))
		return usage(stdout);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "kctl: '%s' is not a command\n", argv[1]);
	return usage(stderr);
}
