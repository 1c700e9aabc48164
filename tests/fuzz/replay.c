/*
 * replay.c - runs a fuzz harness over saved inputs, without libFuzzer.
 *
 *   replay-NAME PATH...
 *
 * Each PATH is an input file or a folder of them (its entries in name
 * order, dot files skipped).  Every input goes through
 * LLVMFuzzerTestOneInput once; a crash, or under ASan a leak, fails the
 * run as it would fail the fuzzer.  Exits 0 when every input ran, 1 when
 * one could not be read or none was found, 2 on usage.
 */
#include "err.h"
#include "fileio.h"
#include "fuzz.h"
#include "xalloc.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define REPLAY_MAX_BYTES (16u << 20)

static int replay_file(const char *path)
{
	char msg[512], *data = NULL;
	size_t len = 0;
	int rc = file_read(path, REPLAY_MAX_BYTES, &data, &len, msg, sizeof(msg));

	if (rc) {
		fprintf(stderr, "replay: %s\n", msg);
		return -1;
	}
	fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
	LLVMFuzzerTestOneInput((const uint8_t *)data, len);
	free(data);
	return 0;
}

static int replay_name_cmp(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int replay_skip_dot(const struct dirent *e)
{
	return e->d_name[0] != '.';
}

/* Returns how many inputs ran, or -1 when one could not be read. */
static long replay_path(const char *path)
{
	struct dirent **list = NULL;
	struct stat st;
	long ran = 0;
	int nr;

	if (stat(path, &st)) {
		perror(path);
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return replay_file(path) ? -1 : 1;
	nr = scandir(path, &list, replay_skip_dot, replay_name_cmp);
	if (nr < 0) {
		perror(path);
		return -1;
	}
	for (int i = 0; i < nr; i++) {
		char *p = xasprintf("%s/%s", path, list[i]->d_name);

		if (ran >= 0)
			ran = replay_file(p) ? -1 : ran + 1;
		free(p);
		free(list[i]);
	}
	free(list);
	return ran;
}

int main(int argc, char **argv)
{
	long total = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s INPUT-OR-FOLDER...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		long ran = replay_path(argv[i]);

		if (ran < 0)
			return 1;
		total += ran;
	}
	if (!total) {
		fprintf(stderr, "replay: no inputs found\n");
		return 1;
	}
	fprintf(stderr, "replay: %ld inputs, all done\n", total);
	return 0;
}
