/*
 * evalpod - puts OpenCL kernel variants through compile, correctness,
 * performance, trace and IR analysis on one device.  See docs/evalpod.md.
 */
#include "fileio.h"
#include "kctl-version.h" /* made at build time: cmake/version.cmake */
#include "log.h"
#include "run.h"
#include "worker.h"

#include <stdio.h>
#include <string.h>

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;  /* one line for `evalpod help`; NULL: internal */
	const char *usage; /* what `evalpod COMMAND --help` prints */
};

static int cmd_version(int argc, char **argv);

static const struct command commands[] = {
	{ "run", cmd_run, "evaluate an EvalBatch", NULL },
	{ "devices", cmd_devices, "list OpenCL devices and their measured peaks",
	  "usage: evalpod devices [-o json] [--measure]\n" },
	{ "version", cmd_version, "print evalpod's version", "usage: evalpod version\n" },
	{ "__worker", cmd_worker, NULL, NULL },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static int cmd_version(int argc, char **argv)
{
	if (argc > 1) {
		fprintf(stderr, "version: unexpected argument '%s'\nusage: evalpod version\n",
			argv[1]);
		return 2;
	}
	printf("evalpod %s\n", KCTL_VERSION);
	return 0;
}

static int usage(FILE *f)
{
	fputs("usage: evalpod COMMAND [ARGS]\n       evalpod COMMAND --help\n"
	      "       evalpod --version\n\ncommands:\n",
	      f);
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (commands[i].help)
			fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
	return f == stdout ? 0 : 2;
}

/* -h or --help anywhere before a "--" asks for the command's usage. */
static int wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	stdfds_sanitize();
	log_set_prog("evalpod");
	if (argc < 2)
		return usage(stderr);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help"))
		return usage(stdout);
	if (!strcmp(argv[1], "--version"))
		return cmd_version(argc - 1, argv + 1);
	for (size_t i = 0; i < NCOMMANDS; i++) {
		if (strcmp(argv[1], commands[i].name))
			continue;
		if (commands[i].help && wants_help(argc - 1, argv + 1)) {
			fputs(commands[i].usage ? commands[i].usage : run_usage, stdout);
			return 0;
		}
		return commands[i].fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "evalpod: '%s' is not a command\n", argv[1]);
	return usage(stderr);
}
