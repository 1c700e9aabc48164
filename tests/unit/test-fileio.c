/*
 * test-fileio.c - common/fileio.c: every buffer file_read returns is
 * NUL-terminated, empty files included (callers treat it as a C string);
 * file_mark follows no link; dir_make refuses a path that is a file.
 *
 * Registered with MALLOC_PERTURB_ set, so that a buffer fresh from malloc
 * holds non-zero bytes and a missing terminator shows; ASan fills new
 * blocks likewise.
 */
#include "err.h"
#include "fileio.h"
#include "test.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/test-fileio.XXXXXX";

static const char *at(const char *name)
{
	static char bufs[4][512];
	static int next;
	char *b = bufs[next++ % 4];

	snprintf(b, sizeof(bufs[0]), "%s/%s", dir, name);
	return b;
}

static void write_bytes(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (f) {
		if (len)
			fwrite(data, 1, len, f);
		fclose(f);
	}
}

typedef int (*read_fn)(const char *, size_t, char **, size_t *, char *, size_t);

TEST(terminated_whatever_the_size)
{
	static const struct {
		const char *data;
		size_t len;
	} cases[] = {
		{ "", 0 },
		{ "x", 1 },
		{ "token\n", 6 },
		{ "a\0b", 3 },
	};
	static const read_fn readers[] = { file_read, file_read_untrusted };
	char msg[256];

	for (size_t r = 0; r < sizeof(readers) / sizeof(readers[0]); r++) {
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			char *out = NULL;
			size_t len = 99;

			write_bytes(at("f"), cases[i].data, cases[i].len);
			CHECK(readers[r](at("f"), 1024, &out, &len, msg, sizeof(msg)) == 0);
			CHECK(out != NULL);
			CHECK(len == cases[i].len);
			CHECK(out && out[len] == '\0');
			CHECK(out && !memcmp(out, cases[i].data, cases[i].len));
			free(out);
			unlink(at("f"));
		}
	}
}

TEST(empty_file_is_an_empty_string)
{
	char *out = NULL, msg[256];

	write_bytes(at("empty"), "", 0);
	/* len may be NULL: the terminator is all a caller has */
	CHECK(file_read(at("empty"), 16, &out, NULL, msg, sizeof(msg)) == 0);
	CHECK_STR(out, "");
	free(out);
	unlink(at("empty"));
}

TEST(limits_and_missing_files_name_the_path)
{
	char *out = (char *)1, msg[256];
	size_t len = 7;

	write_bytes(at("big"), "0123456789", 10);
	CHECK(file_read(at("big"), 9, &out, &len, msg, sizeof(msg)) == KERR_LIMIT);
	CHECK(out == NULL && len == 0);
	CHECK_CONTAINS(msg, at("big"));
	unlink(at("big"));
	CHECK(file_read(at("none"), 9, &out, &len, msg, sizeof(msg)) == KERR_IO);
	CHECK(out == NULL);
	CHECK_CONTAINS(msg, at("none"));
}

/*
 * file_mark makes an empty file, takes one already there as made, and
 * follows no link planted at the path: the link's target keeps its bytes.
 */
TEST(mark_follows_no_link)
{
	char *out = NULL, msg[256];
	struct stat st;

	CHECK(file_mark(at("mark"), msg, sizeof(msg)) == 0);
	CHECK(stat(at("mark"), &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0);
	CHECK(file_mark(at("mark"), msg, sizeof(msg)) == 0);
	write_bytes(at("target"), "keep", 4);
	CHECK(symlink(at("target"), at("link")) == 0);
	CHECK(file_mark(at("link"), msg, sizeof(msg)) == 0);
	CHECK(file_read(at("target"), 16, &out, NULL, msg, sizeof(msg)) == 0);
	CHECK_STR(out, "keep");
	free(out);
	CHECK(file_mark(at("none/mark"), msg, sizeof(msg)) == KERR_IO);
	CHECK_CONTAINS(msg, at("none/mark"));
	unlink(at("mark"));
	unlink(at("link"));
	unlink(at("target"));
}

/*
 * dir_make makes every missing folder of a path, takes folders already
 * there (and a link to one) as made, and refuses a path that is a file,
 * and an empty one.
 */
TEST(dir_make_refuses_a_file)
{
	char msg[256] = "";
	struct stat st;

	CHECK(dir_make(at("a/b/c"), msg, sizeof(msg)) == 0);
	CHECK(stat(at("a/b/c"), &st) == 0 && S_ISDIR(st.st_mode));
	CHECK(dir_make(at("a/b"), msg, sizeof(msg)) == 0);
	CHECK(symlink(at("a/b"), at("tob")) == 0);
	CHECK(dir_make(at("tob"), msg, sizeof(msg)) == 0);
	write_bytes(at("a/file"), "x", 1);
	CHECK(dir_make(at("a/file"), msg, sizeof(msg)) == KERR_IO);
	CHECK_CONTAINS(msg, at("a/file"));
	CHECK_CONTAINS(msg, "not a directory");
	CHECK(dir_make(at("a/file/sub"), msg, sizeof(msg)) == KERR_IO);
	CHECK_CONTAINS(msg, at("a/file"));
	CHECK(dir_make("", msg, sizeof(msg)) == KERR_IO); /* read past it before */
	CHECK_CONTAINS(msg, "the path is empty");
	unlink(at("tob"));
	unlink(at("a/file"));
	rmdir(at("a/b/c"));
	rmdir(at("a/b"));
	rmdir(at("a"));
}

/*
 * stdfds_sanitize puts /dev/null on a closed 1 (and only there), so the
 * next file opened does not become the program's standard output.
 */
TEST(closed_stdout_is_not_reused)
{
	int saved = dup(STDOUT_FILENO), fd, low;
	struct stat st, null;

	CHECK(saved > 2 && stat("/dev/null", &null) == 0);
	fflush(stdout);
	close(STDOUT_FILENO);
	stdfds_sanitize();
	CHECK(fstat(STDOUT_FILENO, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == null.st_rdev);
	fd = open(at("after"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd > 2);
	if (fd >= 0)
		close(fd);
	unlink(at("after"));
	/* with 0, 1 and 2 open it leaves nothing open: the lowest free one stays free */
	fd = open("/dev/null", O_RDONLY);
	if (fd >= 0)
		close(fd);
	stdfds_sanitize();
	low = open("/dev/null", O_RDONLY);
	CHECK(fd > 2 && low == fd);
	if (low >= 0)
		close(low);
	dup2(saved, STDOUT_FILENO);
	close(saved);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(terminated_whatever_the_size);
	RUN(empty_file_is_an_empty_string);
	RUN(limits_and_missing_files_name_the_path);
	RUN(mark_follows_no_link);
	RUN(dir_make_refuses_a_file);
	RUN(closed_stdout_is_not_reused);
	rmdir(dir);
	return test_summary();
}
