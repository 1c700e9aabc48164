/*
 * test-flush.c - the lines flush (flush_lines in evalpod/flush.c): it keeps
 * what memory holds (it writes dirty lines back before evicting them), and
 * it touches no line outside the range it is given, so a range that ends
 * just before a page without access is flushed without a fault, as the
 * world's buffers are (their far guards have no access).  What it evicts is
 * measured by build/bench/flush_probe, not here.
 */
#include "flush.h"
#include "test.h"

#include <stdint.h>
#include <sys/mman.h>

TEST(keeps_contents)
{
	size_t n = (size_t)1 << 20;
	unsigned char *p =
		mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t bad = 0;

	CHECK(p != MAP_FAILED);
	if (p == MAP_FAILED)
		return;
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 131 + 7);
	/* Dirty lines, an unaligned start and an odd length. */
	CHECK(flush_lines(p + 3, n - 10) == 0);
	CHECK(flush_lines(p, 0) == 0);
	for (size_t i = 0; i < n; i++)
		bad += p[i] != (unsigned char)(i * 131 + 7);
	CHECK(bad == 0);
	munmap(p, n);
}

TEST(stays_inside_its_range)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *p = mmap(NULL, 3 * (size_t)page, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(p != MAP_FAILED);
	if (p == MAP_FAILED)
		return;
	/* [no access][read/write][no access]: a line outside would fault. */
	CHECK(mprotect(p, (size_t)page, PROT_NONE) == 0);
	CHECK(mprotect(p + 2 * page, (size_t)page, PROT_NONE) == 0);
	p[page] = 1;
	p[2 * page - 1] = 2;
	CHECK(flush_lines(p + page, (size_t)page) == 0);
	CHECK(flush_lines(p + page + 100, (size_t)page - 100) == 0);
	CHECK(flush_lines(p + 2 * page - 1, 1) == 0);
	CHECK(p[page] == 1 && p[2 * page - 1] == 2);
	munmap(p, 3 * (size_t)page);
}

int main(void)
{
	RUN(keeps_contents);
	RUN(stays_inside_its_range);
	return test_summary();
}
