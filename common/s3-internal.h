/*
 * s3-internal.h - the XML readers of s3.c, for tests and fuzz harnesses
 * only (tests/fuzz/fuzz-s3xml.c): a store's answers are untrusted input,
 * so these are fed arbitrary bytes there; and the listing's stop rule, so
 * that tests/unit/test-s3list.c can drive it to its limits without 100,000
 * requests.  Not part of the module's contract; names carry a double
 * underscore, as kubeconfig-internal.h's.
 */
#ifndef KCTL_S3_INTERNAL_H
#define KCTL_S3_INTERNAL_H

#include "s3.h"

#include <stddef.h>

/*
 * Appends the <Contents> entries of one ListObjectsV2 page (xml, len bytes,
 * not NUL-terminated) to out while out->n < max; returns how many it added.
 * Release out with s3_list_release.
 */
size_t s3__list_page(const char *xml, size_t len, struct s3_list *out, size_t max);

/*
 * The decoded text of the first <tag>...</tag> in [p, end), malloc'd
 * (caller frees), or NULL; *after (if given) points past the closing tag.
 */
char *s3__xml_text(const char *p, const char *end, const char *tag, const char **after);

#define S3__LIST_PAGES_MAX 100000 /* pages of one listing, whatever they hold */
#define S3__LIST_EMPTY_MAX 3      /* truncated pages in a row without a key */

/*
 * Whether s3_list must stop before asking for the page after token (the
 * continuation token of the page just read; prev the one before it, NULL
 * for the first page): pages read so far, empty of them truncated without
 * a key in a row, interrupted when a signal asked to stop.  Returns 0 to go
 * on, else the error with msg naming bucket and what ("?prefix=P"): an
 * interruption (KERR_CHILD), the same token twice or S3__LIST_EMPTY_MAX
 * empty pages (KERR_PARSE), S3__LIST_PAGES_MAX pages (KERR_LIMIT).
 */
int s3__list_stuck(const char *bucket, const char *what, const char *prev, const char *token,
		   int pages, int empty, int interrupted, char *msg, size_t n);

#endif
