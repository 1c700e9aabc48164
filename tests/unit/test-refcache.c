#include "batch.h"
#include "err.h"
#include "fileio.h"
#include "refcache.h"
#include "worker.h"
#include "xalloc.h"

#include "test.h"
#include "arraysize.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* y = 2x + 1 over n floats; two shapes, the first timed; seeds 1, 2, 3. */
static const char doc_fmt[] =
	"{\"schema\": \"evalpod.batch\", \"version\": 1, \"batch_id\": \"t\","
	" \"problem\": {\"name\": \"affine\","
	"  \"buffers\": [{\"name\": \"x\", \"type\": \"float\", \"count\": \"n\"},"
	"               {\"name\": \"y\", \"type\": \"float\", \"count\": \"n\", \"role\": "
	"\"output\"}],"
	"  \"scalars\": [{\"name\": \"n\", \"type\": \"int\", \"value\": \"n\"}],"
	"  \"launch\": [{\"kernel\": \"affine\", \"args\": [\"x\", \"y\", \"n\"], \"global\": "
	"[\"n\"]}]},"
	" \"shapes\": [{\"name\": \"a\", \"values\": {\"n\": 64}}, {\"name\": \"b\", \"values\": "
	"{\"n\": 10}}],"
	" \"reference\": {\"source\": \"%s\"},"
	" \"correctness\": {\"seeds\": [1, 2, 3]}}";

static char exe[4096];
static char root[] = "/tmp/test-refcache-XXXXXX";

static void load(struct batch *b, const char *source)
{
	char *text = xasprintf(doc_fmt, source), msg[1024];

	memset(b, 0, sizeof(*b));
	if (batch_parse(b, text, strlen(text), msg, sizeof(msg)))
		fprintf(stderr, "batch: %s\n", msg);
	free(text);
}

/* Writes the outputs a reference worker would leave in refdir: bytes derived from (s, seed). */
static void fake_outputs(const struct batch *b, const uint64_t *tseeds, const char *refdir)
{
	char msg[512], *ref = xasprintf("%s/ref", refdir);

	dir_make(ref, msg, sizeof(msg));
	free(ref);
	for (size_t s = 0; s < b->nshapes; s++) {
		size_t n = s == 0 ? 64 : 10;
		size_t nseeds = b->correct.nseeds + (s == 0 ? WORKER_TIMING_SETS : 0);

		for (size_t k = 0; k < nseeds; k++) {
			uint64_t seed = k < b->correct.nseeds ? b->correct.seeds[k]
							      : tseeds[k - b->correct.nseeds];
			float *y = xcalloc(n, sizeof(*y));
			char *path = worker_ref_path(refdir, s, seed, 1);

			for (size_t i = 0; i < n; i++)
				y[i] = (float)(s * 1000 + seed % 997) + (float)i * 0.5f;
			file_write_atomic(path, y, n * sizeof(*y), msg, sizeof(msg));
			free(path);
			free(y);
		}
	}
}

static int same_file(const char *a, const char *b)
{
	char *ta = NULL, *tb = NULL, msg[256];
	size_t la = 0, lb = 0;
	int same = !file_read(a, 1 << 20, &ta, &la, msg, sizeof(msg)) &&
		   !file_read(b, 1 << 20, &tb, &lb, msg, sizeof(msg)) && la == lb &&
		   !memcmp(ta, tb, la);

	free(ta);
	free(tb);
	return same;
}

/* The nth (by name) cache entry whose header has bytes_line: "bytes 256" is shape 0's outputs. */
static char *entry_of_size(const char *dir, const char *bytes_line, int nth)
{
	char *cmd =
		xasprintf("grep -l -a '^%s$' %s/*.bin | sort | sed -n %dp", bytes_line, dir, nth);
	FILE *p = popen(cmd, "r");
	char line[4096] = "";

	free(cmd);
	if (!p)
		return NULL;
	if (!fgets(line, sizeof(line), p))
		line[0] = '\0';
	pclose(p);
	line[strcspn(line, "\n")] = '\0';
	return line[0] ? xstrdup(line) : NULL;
}

static void flip_last(const char *path)
{
	FILE *f = fopen(path, "r+b");
	int c;

	fseek(f, -1, SEEK_END);
	c = fgetc(f);
	fseek(f, -1, SEEK_END);
	fputc(c ^ 0x40, f);
	fclose(f);
}

static void cut_short(const char *path)
{
	struct stat st;

	stat(path, &st);
	truncate(path, st.st_size - 4);
}

static void add_byte(const char *path)
{
	FILE *f = fopen(path, "ab");

	fputc('x', f);
	fclose(f);
}

static void bad_magic(const char *path)
{
	FILE *f = fopen(path, "r+b");

	fputc('E', f);
	fclose(f);
}

static void foreign(const char *path)
{
	char *dir = xstrdup(path), *other, *cmd;

	dir[strrchr(dir, '/') - dir] = '\0';
	other = entry_of_size(dir, "bytes 256", 2);
	cmd = xasprintf("cp %s %s", other ? other : "/nonexistent", path);
	CHECK(system(cmd) == 0);
	free(dir);
	free(cmd);
	free(other);
}

static const struct {
	const char *name;
	void (*damage)(const char *path);
} damages[] = {
	{ "a flipped payload byte", flip_last }, { "a truncated payload", cut_short },
	{ "a byte too many", add_byte },         { "a wrong magic", bad_magic },
	{ "another entry's bytes", foreign },
};

TEST(store_restore_and_damage)
{
	struct batch b;
	struct refcache c;
	uint64_t tseeds[WORKER_TIMING_SETS] = { 11, 12, 13, 14, 15 };
	char msg[512], *cache = xasprintf("%s/cache", root), *src = xasprintf("%s/src", root);
	char *dst = xasprintf("%s/dst", root), *a = NULL, *bb = NULL;
	struct stat st;

	load(&b, "k");
	fake_outputs(&b, tseeds, src);
	CHECK(refcache_open(&c, cache, exe, &b, msg, sizeof(msg)) == 0);
	CHECK(stat(cache, &st) == 0 && (st.st_mode & 0777) == 0700);
	/* Nothing cached yet: a miss, not a rejection. */
	CHECK(refcache_restore(&c, &b, tseeds, dst) == 0);
	CHECK(c.rejected == 0);
	refcache_store(&c, &b, tseeds, src);
	dir_make(dst, msg, sizeof(msg));
	{
		char *ref = xasprintf("%s/ref", dst);

		dir_make(ref, msg, sizeof(msg));
		free(ref);
	}
	CHECK(refcache_restore(&c, &b, tseeds, dst) == 1);
	CHECK(c.rejected == 0);
	/* Every output restored byte for byte: shape 0 seeds 1-3 and 11-15; shape 1 seeds 1-3. */
	for (size_t s = 0; s < 2; s++) {
		uint64_t seeds[3 + WORKER_TIMING_SETS] = { 1, 2, 3, 11, 12, 13, 14, 15 };

		for (size_t k = 0; k < (s ? 3u : 3u + WORKER_TIMING_SETS); k++) {
			a = worker_ref_path(src, s, seeds[k], 1);
			bb = worker_ref_path(dst, s, seeds[k], 1);
			CHECK(same_file(a, bb));
			free(a);
			free(bb);
		}
	}
	for (size_t i = 0; i < ARRAY_SIZE(damages); i++) {
		char *victim = entry_of_size(cache, "bytes 256", 1);

		CHECK(victim != NULL);
		if (!victim)
			break;
		damages[i].damage(victim);
		if (refcache_restore(&c, &b, tseeds, dst) != 0 || c.rejected != 1)
			fprintf(stderr, "damage '%s' not detected\n", damages[i].name);
		CHECK(c.rejected == 1);
		CHECK(access(victim, F_OK) != 0); /* removed, never used */
		refcache_store(&c, &b, tseeds, src);
		CHECK(refcache_restore(&c, &b, tseeds, dst) == 1);
		free(victim);
	}
	refcache_close(&c);
	batch_release(&b);
	/* Another reference: other keys, a plain miss. */
	load(&b, "kk");
	CHECK(refcache_open(&c, cache, exe, &b, msg, sizeof(msg)) == 0);
	CHECK(refcache_restore(&c, &b, tseeds, dst) == 0);
	CHECK(c.rejected == 0);
	refcache_close(&c);
	batch_release(&b);
	free(cache);
	free(src);
	free(dst);
}

TEST(session_seeds)
{
	struct batch b;
	struct refcache c;
	uint64_t s1[WORKER_TIMING_SETS], s2[WORKER_TIMING_SETS];
	char msg[512], *cache = xasprintf("%s/seeds", root), *path;

	load(&b, "k");
	CHECK(refcache_open(&c, cache, exe, &b, msg, sizeof(msg)) == 0);
	refcache_seeds(&c, &b, s1);
	refcache_seeds(&c, &b, s2);
	CHECK(!memcmp(s1, s2, sizeof(s1)));
	for (int k = 0; k < WORKER_TIMING_SETS; k++)
		CHECK(s1[k] != 1 && s1[k] != 2 && s1[k] != 3);
	/* A file naming a correctness seed (or garbage) is replaced by fresh seeds. */
	path = xasprintf("%s/timing-seeds", cache);
	CHECK(file_write_atomic(path, "1,5,6,8,9", 9, msg, sizeof(msg)) == 0);
	refcache_seeds(&c, &b, s2);
	CHECK(s2[0] != 1 && memcmp(s1, s2, sizeof(s1)));
	CHECK(file_write_atomic(path, "7,7,8,9,10", 10, msg, sizeof(msg)) == 0);
	refcache_seeds(&c, &b, s2);
	CHECK(!(s2[0] == 7 && s2[1] == 7));
	CHECK(file_write_atomic(path, "x", 1, msg, sizeof(msg)) == 0);
	refcache_seeds(&c, &b, s2);
	CHECK(s2[0] != 1 && s2[0] != 2);
	free(path);
	refcache_close(&c);
	batch_release(&b);
	free(cache);
}

int main(void)
{
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0 || !mkdtemp(root))
		return 1;
	exe[n] = '\0';
	RUN(store_restore_and_damage);
	RUN(session_seeds);
	dir_remove_tree(root);
	return test_summary();
}
