#include "worker.h"
#include "err.h"
#include "fileio.h"
#include "judge.h"
#include "log.h"
#include "pool.h"
#include "sandbox.h"
#include "sbuf.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static int seed_taken(const struct batch *b, const uint64_t *seeds, unsigned k, uint64_t s)
{
	for (size_t i = 0; i < b->correct.nseeds; i++)
		if (b->correct.seeds[i] == s)
			return 1;
	for (unsigned i = 0; i < k; i++)
		if (seeds[i] == s)
			return 1;
	return 0;
}

void worker_draw_seeds(const struct batch *b, uint64_t *seeds)
{
	for (unsigned k = 0; k < WORKER_TIMING_SETS; k++) {
		uint64_t s;

		do {
			/* getrandom of 8 bytes from the ready pool never fails short */
			if (getrandom(&s, sizeof(s), 0) != (ssize_t)sizeof(s))
				arc4random_buf(&s, sizeof(s));
			s &= (1ull << 53) - 1; /* exact in every JSON reader, doubles included */
		} while (seed_taken(b, seeds, k, s));
		seeds[k] = s;
	}
}

char *worker_seeds_text(const uint64_t *seeds)
{
	struct sbuf t = SBUF_INIT;

	for (unsigned k = 0; k < WORKER_TIMING_SETS; k++)
		sbuf_addf(&t, "%s%" PRIu64, k ? "," : "", seeds[k]);
	return sbuf_detach(&t, NULL);
}

int worker_parse_seeds(const char *text, uint64_t *seeds)
{
	const char *p = text;

	for (unsigned k = 0; k < WORKER_TIMING_SETS; k++) {
		char *end = NULL;

		errno = 0;
		seeds[k] = strtoull(p, &end, 10);
		if (errno || end == p || *end != (k + 1 < WORKER_TIMING_SETS ? ',' : '\0'))
			return -1;
		p = end + 1;
	}
	return 0;
}

char *worker_dir(const char *work, const char *name)
{
	return xasprintf("%s/w/%s", work, name);
}

char *worker_prog_dir(const char *work, const char *id)
{
	return xasprintf("%s/w/p-%s", work, id);
}

int worker_judge_open(struct judge_client *jc, char *msg, size_t n)
{
	struct stat st;

	jc->fd = POOL_CTL_FD;
	jc->shm = NULL;
	if (fstat(POOL_SHM_FD, &st) || st.st_size <= 0)
		return kerr_set(msg, n, KERR_IO, "no channel to the judge (fd %d): %s", POOL_SHM_FD,
				strerror(errno));
	jc->len = (size_t)st.st_size;
	jc->shm = mmap(NULL, jc->len, PROT_READ | PROT_WRITE, MAP_SHARED, POOL_SHM_FD, 0);
	if (jc->shm == MAP_FAILED) {
		jc->shm = NULL;
		return kerr_set(msg, n, KERR_IO, "cannot map the judge's memory: %s",
				strerror(errno));
	}
	return 0;
}

void worker_judge_close(struct judge_client *jc)
{
	if (jc->shm)
		munmap(jc->shm, jc->len);
	jc->shm = NULL;
}

int worker_judge_ask(struct judge_client *jc, const struct judge_req *q, struct judge_rep *rep,
		     char *msg, size_t n)
{
	ssize_t got;

	if (send(jc->fd, q, sizeof(*q), MSG_NOSIGNAL) != (ssize_t)sizeof(*q))
		return kerr_set(msg, n, KERR_IO, "cannot reach the judge: %s", strerror(errno));
	do
		got = recv(jc->fd, rep, sizeof(*rep), 0);
	while (got < 0 && errno == EINTR);
	if (got != (ssize_t)sizeof(*rep) || rep->magic != JUDGE_MAGIC)
		return kerr_set(msg, n, KERR_IO, "no verdict from the judge");
	rep->message[sizeof(rep->message) - 1] = '\0';
	return 0;
}

/* The absolute path of program name found on PATH, or NULL (malloc'd). */
static char *on_path(const char *name)
{
	const char *path = getenv("PATH");
	char *copy = xstrdup(path && *path ? path : "/usr/bin:/bin"), *save = NULL, *found = NULL;

	for (char *d = strtok_r(copy, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
		char *p = xasprintf("%s/%s", d, name);

		if (*d == '/' && !access(p, X_OK))
			found = p;
		else
			free(p);
	}
	free(copy);
	return found;
}

int worker_confine(const char *dir, const char *const *reads, double cpu_s, json_t **report,
		   char *msg, size_t n)
{
	/* Stage 5 runs these on PoCL's cache (irpocl.c), as execvp finds them. */
	static const char *const names[] = { "llvm-dis-15", "llvm-dis", "objdump" };
	char *tools[4] = { NULL };
	struct sandbox_cfg cfg;
	size_t nt = 0;
	int rc;

	for (size_t i = 0; i < 3; i++)
		if ((tools[nt] = on_path(names[i])))
			nt++;
	memset(&cfg, 0, sizeof(cfg));
	cfg.tools = (const char *const *)tools;
	cfg.private_dir = dir;
	cfg.read_paths = reads;
	cfg.linker = access("/usr/bin/ld", X_OK) ? NULL : "/usr/bin/ld";
	cfg.max_file_bytes = 1ull << 30;
	cfg.cpu_seconds = cpu_s;
	rc = sandbox_enter(&cfg, report, msg, n);
	for (size_t i = 0; i < nt; i++)
		free(tools[i]);
	return rc;
}

int worker_lock_spawn(const struct clrt *rt, json_t *report, char *msg, size_t n)
{
	/* PoCL links every kernel with the linker at its first launch. */
	if (clrt_is_pocl(&rt->info))
		return 0;
	return sandbox_lock_spawn(report, msg, n);
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

/* Writes text into DIR/NAME in place (progress files are read as they are written). */
static void progress_write(const char *dir, const char *name, const char *text)
{
	char *path = xasprintf("%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || write(fd, text, strlen(text)) < 0)
		log_debug("cannot record progress in '%s'", path);
	if (fd >= 0)
		close(fd);
	free(path);
}

void worker_progress(const char *dir, const char *stage)
{
	progress_write(dir, "progress", stage);
}

void worker_progress_at(const char *dir, const char *stage, const char *detail)
{
	if (detail) {
		progress_write(dir, "progress.detail", detail);
	} else {
		char *path = xasprintf("%s/progress.detail", dir);

		unlink(path);
		free(path);
	}
	worker_progress(dir, stage);
}

char *worker_ref_path(const char *dir, size_t shape, uint64_t seed, size_t buf)
{
	return xasprintf("%s/ref/%zu-%llu-%zu.bin", dir, shape, (unsigned long long)seed, buf);
}
