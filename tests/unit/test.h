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

static inline int test_summary(void)
{
	printf("%d passed, %d failed\n", test_passed, test_failed);
	return test_failed ? 1 : 0;
}

#endif
