/*
 * test-pocladopt.c - handing a compiled program from a check worker's PoCL
 * cache to the timing worker's (pocladopt.h): what is copied, what is
 * refused, and the check after the build.
 */
#include "fileio.h"
#include "pocladopt.h"
#include "xalloc.h"

#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG "LF/OJMFNBJKNBLAFCHNIHDGKIEAHPOEFAMBBIMNN"
#define REF  "NP/EMJOCAAJEBHHAEGJCDFBKGEDHJBDNIFOJGELO"

static char root[] = "/tmp/test-pocladopt-XXXXXX";

static void put(const char *dir, const char *rel, const char *text)
{
	char *path = xasprintf("%s/%s", dir, rel), *slash = strrchr(path, '/'), msg[512];

	*slash = '\0';
	CHECK(!dir_make(path, msg, sizeof(msg)));
	*slash = '/';
	CHECK(!file_write_atomic(path, text, strlen(text), msg, sizeof(msg)));
	free(path);
}

static int exists(const char *dir, const char *rel)
{
	char *path = xasprintf("%s/%s", dir, rel);
	int ok = !access(path, F_OK);

	free(path);
	return ok;
}

static char *read_back(const char *dir, const char *rel)
{
	char *path = xasprintf("%s/%s", dir, rel), *text = NULL, msg[512];

	if (file_read(path, 1 << 20, &text, NULL, msg, sizeof(msg)))
		text = NULL;
	free(path);
	return text;
}

/* A fresh pair of caches: a check worker's holding one program, and the timing worker's. */
static void caches(const char *name, char **from, char **to)
{
	char msg[512];

	*from = xasprintf("%s/%s/check", root, name);
	*to = xasprintf("%s/%s/time", root, name);
	CHECK(!dir_make(*from, msg, sizeof(msg)));
	CHECK(!dir_make(*to, msg, sizeof(msg)));
	put(*from, PROG "/program.bc", "bitcode");
	put(*from, PROG "/matmul/4-1-1-goffs0-smallgrid/matmul.so", "machine code");
	put(*from, PROG "/matmul/4-1-1-goffs0-smallgrid/parallel.bc", "wg function");
	put(*from, PROG "/pack_a/0-0-0/pack_a.so", "generic");
	put(*from, PROG "/last_accessed", "");
	put(*from, "tempfile_abc.cl", "PoCL's temporary");
}

TEST(copies_the_program_and_its_kernels)
{
	char *from, *to, *adopted = NULL, *text, msg[512];

	caches("copy", &from, &to);
	CHECK(!pocladopt_copy(from, to, 1 << 20, &adopted, msg, sizeof(msg)));
	CHECK_STR(adopted, PROG);
	CHECK_STR(text = read_back(to, PROG "/program.bc"), "bitcode");
	free(text);
	CHECK_STR(text = read_back(to, PROG "/matmul/4-1-1-goffs0-smallgrid/matmul.so"),
		  "machine code");
	free(text);
	CHECK(exists(to, PROG "/pack_a/0-0-0/pack_a.so"));
	/* Only what PoCL needs to skip the compile: no IR, no temporaries. */
	CHECK(!exists(to, PROG "/matmul/4-1-1-goffs0-smallgrid/parallel.bc"));
	CHECK(!exists(to, "tempfile_abc.cl"));
	free(adopted);
	free(from);
	free(to);
}

TEST(refuses_what_is_not_one_pocl_program)
{
	char *from, *to, *adopted = NULL, msg[512];

	/* Two programs: which is this candidate's cannot be told. */
	caches("two", &from, &to);
	put(from, REF "/program.bc", "another");
	CHECK(pocladopt_copy(from, to, 1 << 20, &adopted, msg, sizeof(msg)));
	CHECK(!adopted);
	CHECK_CONTAINS(msg, "exactly one PoCL program (2)");
	CHECK(!exists(to, PROG));
	free(from);
	free(to);

	/* A name that is not PoCL's among the buckets' entries. */
	caches("odd", &from, &to);
	put(from, "LF/not-a-hash/program.bc", "x");
	CHECK(pocladopt_copy(from, to, 1 << 20, &adopted, msg, sizeof(msg)));
	CHECK_CONTAINS(msg, "not PoCL's");
	free(from);
	free(to);

	/* A kernel directory whose name would climb out. */
	caches("climb", &from, &to);
	put(from, PROG "/a b/1-1-1/a b.so", "x");
	CHECK(pocladopt_copy(from, to, 1 << 20, &adopted, msg, sizeof(msg)));
	CHECK_CONTAINS(msg, "is not a PoCL kernel");
	CHECK(!exists(to, PROG)); /* nothing half-copied is left */
	free(from);
	free(to);
}

TEST(refuses_links_limits_and_occupied_places)
{
	char *from, *to, *adopted = NULL, *link, *target, msg[512];

	/* A symbolic link in place of a kernel's code (it could point anywhere). */
	caches("link", &from, &to);
	link = xasprintf("%s/%s/matmul/4-1-1-goffs0-smallgrid/matmul.so", from, PROG);
	target = xasprintf("%s/secret", root);
	put(root, "secret", "not for the timing worker");
	CHECK(!unlink(link));
	CHECK(!symlink(target, link));
	CHECK(pocladopt_copy(from, to, 1 << 20, &adopted, msg, sizeof(msg)));
	CHECK_CONTAINS(msg, "matmul.so");
	CHECK(!exists(to, PROG));
	free(link);
	free(target);
	free(from);
	free(to);

	/* Past the byte limit. */
	caches("big", &from, &to);
	CHECK(pocladopt_copy(from, to, 10, &adopted, msg, sizeof(msg)));
	CHECK_CONTAINS(msg, "limit");
	CHECK(!exists(to, PROG));
	free(from);
	free(to);

	/* Its place is taken (by the reference's program, say): never overwritten. */
	caches("taken", &from, &to);
	put(to, PROG "/program.bc", "the reference's");
	CHECK(pocladopt_copy(from, to, 1 << 20, &adopted, msg, sizeof(msg)));
	CHECK_CONTAINS(msg, "in the cache already");
	CHECK_STR(target = read_back(to, PROG "/program.bc"), "the reference's");
	free(target);
	free(from);
	free(to);
}

TEST(verify_removes_a_program_that_is_not_the_source)
{
	char *from, *to, *adopted = NULL, msg[512];
	struct pocl_progs before;

	caches("verify", &from, &to);
	put(to, REF "/program.bc", "the reference");
	pocladopt_list(to, &before);
	CHECK(before.nr == 1);
	CHECK(!pocladopt_copy(from, to, 1 << 20, &adopted, msg, sizeof(msg)));

	/* The build used the adopted directory: nothing new appeared. */
	CHECK(!pocladopt_verify(to, &before, adopted, msg, sizeof(msg)));
	CHECK(exists(to, PROG "/program.bc"));

	/* The build made a directory of its own: the adopted one was not this source's. */
	put(to, "QQ/ABCDEFGHIJKLMNOP/program.bc", "the real one");
	CHECK(pocladopt_verify(to, &before, adopted, msg, sizeof(msg)));
	CHECK_CONTAINS(msg, "not the one its source builds");
	CHECK(!exists(to, PROG));
	CHECK(exists(to, REF "/program.bc"));
	pocladopt_release(&before);
	free(adopted);
	free(from);
	free(to);
}

TEST(take_lists_first_and_adopts_only_what_is_there)
{
	char *from, *to, *absent, *adopted, why[512];
	struct pocl_progs before;

	caches("take", &from, &to);
	put(to, REF "/program.bc", "the reference");
	absent = xasprintf("%s/take/nothing-here", root);
	/* No directory to adopt from (the front end has not got there): no reason given. */
	CHECK(!pocladopt_take(absent, to, &before, why, sizeof(why)));
	CHECK_STR(why, "");
	CHECK(before.nr == 1);
	pocladopt_release(&before);
	adopted = pocladopt_take(from, to, &before, why, sizeof(why));
	CHECK_STR(adopted, PROG);
	CHECK(before.nr == 1 && !strcmp(before.names[0], REF)); /* listed before the copy */
	CHECK(exists(to, PROG "/program.bc"));
	pocladopt_release(&before);
	free(adopted);
	/* A second time the place is taken: refused, and the reason says so. */
	CHECK(!pocladopt_take(from, to, &before, why, sizeof(why)));
	CHECK_CONTAINS(why, "in the cache already");
	pocladopt_release(&before);
	free(absent);
	free(from);
	free(to);
}

TEST(fresh_names_the_one_new_program)
{
	char *from, *to;
	struct pocl_progs before, now;
	size_t fresh = 99;

	caches("fresh", &from, &to);
	put(to, REF "/program.bc", "the reference");
	pocladopt_list(to, &before);
	pocladopt_list(to, &now);
	CHECK(!pocladopt_fresh(&before, &now, &fresh) && fresh == 0);
	pocladopt_release(&now);
	put(to, PROG "/program.bc", "built");
	pocladopt_list(to, &now);
	CHECK_STR(pocladopt_fresh(&before, &now, &fresh), PROG);
	CHECK(fresh == 1);
	pocladopt_release(&now);
	put(to, "QQ/ABCDEFGHIJKLMNOP/program.bc", "another");
	pocladopt_list(to, &now);
	CHECK(!pocladopt_fresh(&before, &now, &fresh) && fresh == 2);
	pocladopt_release(&now);
	pocladopt_release(&before);
	free(from);
	free(to);
}

/* The value pocladopt_read_ms takes for dir ms/v when ms/v.ms holds text. */
static double ms_of(const char *text)
{
	char *dir = xasprintf("%s/ms/v", root);
	double ms;

	put(root, "ms/v.ms", text);
	ms = pocladopt_read_ms(dir);
	free(dir);
	return ms;
}

TEST(read_ms_takes_a_plain_bounded_number_only)
{
	char *dir = xasprintf("%s/ms/v", root), *path = xasprintf("%s.ms", dir);
	char *other = xasprintf("%s/ms/other", root), *other_ms = xasprintf("%s.ms", other);
	char big[100];

	CHECK(ms_of("123.456\n") == 123.456);
	CHECK(ms_of("0") == 0);
	CHECK(ms_of("10000000") == 1e7);
	CHECK(ms_of("") == -1);
	CHECK(ms_of("abc") == -1);
	CHECK(ms_of("12 ms") == -1);
	CHECK(ms_of("12\n\n") == -1);
	CHECK(ms_of("-1") == -1);
	CHECK(ms_of("1e8") == -1);
	CHECK(ms_of("nan") == -1);
	CHECK(ms_of("inf") == -1);
	memset(big, '1', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK(ms_of(big) == -1); /* over 64 bytes */
	/* No file, a link to a good one, a second name of one. */
	CHECK(!unlink(path));
	CHECK(pocladopt_read_ms(dir) == -1);
	put(root, "ms/other.ms", "5\n");
	CHECK(!symlink(other_ms, path));
	CHECK(pocladopt_read_ms(dir) == -1);
	CHECK(!unlink(path));
	CHECK(!link(other_ms, path));
	CHECK(pocladopt_read_ms(dir) == -1);
	CHECK(pocladopt_read_ms(other) == -1);
	free(dir);
	free(path);
	free(other);
	free(other_ms);
}

TEST(write_ms_is_what_read_ms_takes_and_follows_no_link)
{
	char *dir = xasprintf("%s/ms/w", root), *path = xasprintf("%s.ms", dir);
	char *target = xasprintf("%s/ms/target", root), msg[512];

	put(root, "ms/.keep", "");
	CHECK(!pocladopt_write_ms(dir, 123.5, msg, sizeof(msg)));
	CHECK(pocladopt_read_ms(dir) == 123.5);
	CHECK(!pocladopt_write_ms(dir, 7, msg, sizeof(msg))); /* over an earlier one */
	CHECK(pocladopt_read_ms(dir) == 7);
	CHECK(!unlink(path));
	CHECK(!symlink(target, path));
	CHECK(pocladopt_write_ms(dir, 1, msg, sizeof(msg)) != 0);
	CHECK(strstr(msg, path) != NULL);
	CHECK(access(target, F_OK) != 0); /* nothing written through the link */
	free(dir);
	free(path);
	free(target);
}

int main(void)
{
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(copies_the_program_and_its_kernels);
	RUN(refuses_what_is_not_one_pocl_program);
	RUN(refuses_links_limits_and_occupied_places);
	RUN(verify_removes_a_program_that_is_not_the_source);
	RUN(take_lists_first_and_adopts_only_what_is_there);
	RUN(fresh_names_the_one_new_program);
	RUN(read_ms_takes_a_plain_bounded_number_only);
	RUN(write_ms_is_what_read_ms_takes_and_follows_no_link);
	dir_remove_tree(root);
	return test_summary();
}
