#include "worker.h"
#include "err.h"
#include "fileio.h"
#include "log.h"
#include "xalloc.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

uint64_t worker_timing_seed(const struct batch *b, unsigned k)
{
	uint64_t s = 0x7153a11dull + 0x1000 * (uint64_t)k;

	for (size_t i = 0; i < b->correct.nseeds; i++)
		s = s * 31 + b->correct.seeds[i] + 1;
	for (;;) {
		int used = 0;

		for (size_t i = 0; i < b->correct.nseeds; i++)
			used |= b->correct.seeds[i] == s;
		if (!used)
			return s;
		s++;
	}
}

int worker_load(struct batch *b, const char *work, char *msg, size_t n)
{
	char *path = xasprintf("%s/batch.json", work), *text = NULL;
	size_t len = 0;
	int rc;

	memset(b, 0, sizeof(*b));
	rc = file_read(path, BATCH_MAX_BYTES, &text, &len, msg, n);
	if (!rc)
		rc = batch_parse(b, text, len, msg, n);
	free(text);
	free(path);
	return rc;
}

void worker_progress(const char *work, const char *id, const char *stage)
{
	char *path = xasprintf("%s/progress/%s", work, id);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd >= 0) {
		if (write(fd, stage, strlen(stage)) < 0)
			log_debug("cannot record progress in '%s'", path);
		close(fd);
	}
	free(path);
}

char *worker_ref_path(const char *work, size_t shape, uint64_t seed, size_t buf)
{
	return xasprintf("%s/ref/%zu-%llu-%zu.bin", work, shape, (unsigned long long)seed, buf);
}

int cmd_worker(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "reference"))
		return worker_reference(argv[2]);
	if (argc >= 4 && !strcmp(argv[1], "check"))
		return worker_check(argv[2], argv[3]);
	if (argc >= 3 && !strcmp(argv[1], "time"))
		return worker_time(argv[2]);
	log_error("usage: evalpod __worker reference|check|time WORK [ID] (internal)");
	return 2;
}
