/*
 * test-s3list.c - the rule that ends an S3 listing (common/s3-internal.h,
 * s3__list_stuck), driven to its limits without a store: a listing of
 * 100,000 pages would take a real or loopback store hours.
 */
#include "err.h"
#include "s3-internal.h"
#include "test.h"
#include "arraysize.h"

#include <stdio.h>
#include <string.h>

static char msg[512];

/*
 * A store that sends page after page, each with a key and a fresh token,
 * as s3_list meets it: the rule lets it go on until S3__LIST_PAGES_MAX
 * pages and stops it there.  Returns the page count it stopped at.
 */
static int endless_listing(int *rc)
{
	char prev[32] = "", token[32];
	int pages = 0;

	*rc = 0;
	while (!*rc && pages < 2 * S3__LIST_PAGES_MAX) {
		pages++;
		snprintf(token, sizeof(token), "tok-%d", pages);
		*rc = s3__list_stuck("b", "?prefix=p/", *prev ? prev : NULL, token, pages, 0, 0,
				     msg, sizeof(msg));
		memcpy(prev, token, sizeof(prev));
	}
	return pages;
}

TEST(page_limit_reached_and_not_before)
{
	int rc, pages = endless_listing(&rc);

	CHECK(pages == S3__LIST_PAGES_MAX);
	CHECK(rc == KERR_LIMIT);
	CHECK_STR(msg, "S3 list: more than 100000 pages; target 'b/?prefix=p/'");
}

static const struct {
	const char *prev, *token;
	int pages, empty, interrupted;
	int rc;
	const char *says;
} cases[] = {
	{ NULL, "t1", 1, 0, 0, 0, NULL },
	{ "t1", "t2", 2, 1, 0, 0, NULL },
	{ "t1", "t2", S3__LIST_PAGES_MAX - 1, 0, 0, 0, NULL },
	{ "t1", "t2", S3__LIST_PAGES_MAX, 0, 0, KERR_LIMIT, "more than 100000 pages" },
	{ "t1", "t2", 3, S3__LIST_EMPTY_MAX - 1, 0, 0, NULL },
	{ "t1", "t2", 3, S3__LIST_EMPTY_MAX, 0, KERR_PARSE, "3 truncated pages in a row" },
	{ "t7", "t7", 8, 0, 0, KERR_PARSE, "the same continuation token twice" },
	/* a signal ends any listing, before the rest is looked at */
	{ "t1", "t2", 2, 0, 1, KERR_CHILD, "interrupted by a signal" },
	{ "t7", "t7", S3__LIST_PAGES_MAX, 9, 1, KERR_CHILD, "interrupted by a signal" },
	/* a repeated token is named before the page count */
	{ "t7", "t7", S3__LIST_PAGES_MAX, 0, 0, KERR_PARSE, "same continuation token" },
};

TEST(stop_rules)
{
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		int rc;

		msg[0] = '\0';
		rc = s3__list_stuck("bucket", "?prefix=runs/s/r001/", cases[i].prev, cases[i].token,
				    cases[i].pages, cases[i].empty, cases[i].interrupted, msg,
				    sizeof(msg));
		if (rc != cases[i].rc)
			fprintf(stderr, "case %zu: rc %d, want %d (%s)\n", i, rc, cases[i].rc, msg);
		CHECK(rc == cases[i].rc);
		if (cases[i].says) {
			CHECK_CONTAINS(msg, cases[i].says);
			CHECK_CONTAINS(msg, "target 'bucket/?prefix=runs/s/r001/'");
		}
	}
}

int main(void)
{
	RUN(page_limit_reached_and_not_before);
	RUN(stop_rules);
	return test_summary();
}
