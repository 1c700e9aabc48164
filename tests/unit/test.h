/*
 * test.h - the minimal unit-test harness used by tests/unit.
 *
 *   TEST(name) { CHECK(x == 1); CHECK_STR(got, "want"); }
 *   int main(void) { RUN(name); return test_summary(); }
 *
 * A failed check prints file:line and the expression and marks the test
 * failed; the test goes on so one run shows every failure.  test_summary
 * prints "N passed, N failed" and returns the exit status for ctest.
 */
#ifndef KCTL_TEST_H
#define KCTL_TEST_H

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int test_failed_checks, test_passed, test_failed;

#define TEST(name) static void test_##name(void)

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			test_failed_checks++;                                                      \
		}                                                                                  \
	} while (0)

#define CHECK_STR(got, want)                                                                       \
	do {                                                                                       \
		const char *g_ = (got), *w_ = (want);                                              \
		if (!g_ || strcmp(g_, w_)) {                                                       \
			fprintf(stderr, "%s:%d: got \"%s\", want \"%s\"\n", __FILE__, __LINE__,    \
				g_ ? g_ : "(null)", w_);                                           \
			test_failed_checks++;                                                      \
		}                                                                                  \
	} while (0)

#define CHECK_CONTAINS(hay, needle)                                                                \
	do {                                                                                       \
		const char *h_ = (hay), *n_ = (needle);                                            \
		if (!h_ || !strstr(h_, n_)) {                                                      \
			fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__,       \
				__LINE__, h_ ? h_ : "(null)", n_);                                 \
			test_failed_checks++;                                                      \
		}                                                                                  \
	} while (0)

#define RUN(name)                                                                                  \
	do {                                                                                       \
		int before_ = test_failed_checks;                                                  \
		test_##name();                                                                     \
		if (test_failed_checks == before_) {                                               \
			test_passed++;                                                             \
		} else {                                                                           \
			test_failed++;                                                             \
			fprintf(stderr, "FAIL %s\n", #name);                                       \
		}                                                                                  \
	} while (0)

/*
 * Catching what code under test writes to stderr (fd 2):
 *
 *   struct test_stderr cap;
 *   if (test_stderr_begin(&cap)) { code(); test_stderr_end(&cap, buf, sizeof(buf)); }
 *
 * begin returns 0, having changed nothing, when it cannot; end restores
 * fd 2 and leaves what was written, cut to size - 1 bytes, in buf.
 */
struct test_stderr {
	FILE *tmp;
	int saved;
};

static inline int test_stderr_begin(struct test_stderr *c)
{
	c->tmp = tmpfile();
	c->saved = c->tmp ? dup(2) : -1;
	if (!c->tmp || c->saved < 0) {
		if (c->tmp)
			fclose(c->tmp);
		return 0;
	}
	fflush(stderr);
	dup2(fileno(c->tmp), 2);
	return 1;
}

static inline void test_stderr_end(struct test_stderr *c, char *buf, size_t size)
{
	size_t got;

	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	rewind(c->tmp);
	got = fread(buf, 1, size - 1, c->tmp);
	buf[got] = '\0';
	fclose(c->tmp);
}

static inline int test_summary(void)
{
	printf("%d passed, %d failed\n", test_passed, test_failed);
	return test_failed ? 1 : 0;
}

#endif
