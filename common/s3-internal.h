/*
 * s3-internal.h - the XML readers of s3.c, for tests and fuzz harnesses
 * only (tests/fuzz/fuzz-s3xml.c): a store's answers are untrusted input,
 * so these are fed arbitrary bytes there.  Not part of the module's
 * contract; names carry a double underscore, as kubeconfig-internal.h's.
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

#endif
