/*
 * fuzz-util.c - the harnesses' scratch folder (see fuzz.h).
 */
#include "fuzz.h"
#include "xalloc.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *dir;

static void fuzz_dir_remove(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char *p;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		p = xasprintf("%s/%s", dir, e->d_name);
		unlink(p);
		free(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
	free(dir);
	dir = NULL;
}

const char *fuzz_dir(void)
{
	const char *tmp = getenv("TMPDIR");

	if (dir)
		return dir;
	dir = xasprintf("%s/kctl-fuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("fuzz: mkdtemp");
		abort();
	}
	atexit(fuzz_dir_remove);
	return dir;
}

char *fuzz_write(const char *name, const void *data, size_t len)
{
	char *path = xasprintf("%s/%s", fuzz_dir(), name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	const char *p = data;

	while (fd >= 0 && len) {
		ssize_t put = write(fd, p, len);

		if (put <= 0)
			break;
		p += put;
		len -= (size_t)put;
	}
	if (fd < 0 || len || close(fd)) {
		perror(path);
		abort();
	}
	return path;
}
