/*
 * evalpod - puts OpenCL kernel variants through compile, correctness,
 * performance, trace and IR analysis on one device.  See docs/evalpod.md.
 */
#include "log.h"
#include "run.h"
#include "worker.h"

#include <stdio.h>
#include <string.h>

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

static const struct command commands[] = {
	{ "run", cmd_run, "evaluate an EvalBatch: evalpod run BATCH --out DIR" },
	{ "devices", cmd_devices, "list OpenCL devices and their measured peaks" },
	{ "__worker", cmd_worker, NULL },
};

static int usage(FILE *f)
{
	fputs("usage: evalpod COMMAND [ARGS]\n\ncommands:\n", f);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (commands[i].help)
			fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
	return f == stdout ? 0 : 2;
}

int main(int argc, char **argv)
{
	log_set_prog("evalpod");
	if (argc < 2)
		return usage(stderr);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help"))
		return usage(stdout);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "evalpod: '%s' is not a command\n", argv[1]);
	return usage(stderr);
}
