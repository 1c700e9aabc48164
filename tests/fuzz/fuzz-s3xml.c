/*
 * fuzz-s3xml.c - what kctl reads from an S3 store's answers (common/s3.c):
 * a ListObjectsV2 page (its <Contents> entries, IsTruncated and the
 * continuation token, as s3_list takes them) and an error document (Code
 * and Message, as s3_failure takes them), on any bytes.
 */
#include "fuzz.h"
#include "s3-internal.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const tags[] = { "IsTruncated", "NextContinuationToken", "Code",
					    "Message" };
	const char *p = (const char *)data, *end = p + size;
	struct s3_list list = { NULL, 0 };

	s3__list_page(p, size, &list, 1000);
	s3_list_release(&list);
	for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
		const char *after = NULL;
		char *text = s3__xml_text(p, end, tags[i], &after);

		free(text);
	}
	return 0;
}
