/*
 * fuzz-batch.c - evalpod's EvalBatch reader (evalpod/batch*.c) on any bytes;
 * on a document it accepts, the lookups it offers run too.
 */
#include "batch.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct batch b;
	char msg[1024];

	if (!batch_parse(&b, (const char *)data, size, msg, sizeof(msg))) {
		for (size_t i = 0; i < b.nvariants; i++) {
			batch_variant(&b, b.variants[i].id);
			batch_output_url(&b, b.variants[i].id);
		}
	}
	batch_release(&b);
	return 0;
}
