/*
 * fuzz-tuned.c - tuned tables as kctl export --merge reads them
 * (controller/tuned.c): any bytes as JSON (up to the first NUL), checked
 * with tuned_check; a table that passes is merged into an empty table and
 * with itself (which must give it back, entry for entry), and rendered as
 * a C header.
 */
#include "fuzz.h"
#include "sbuf.h"
#include "tuned.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data, *nul = memchr(text, '\0', size);
	struct sbuf b = SBUF_INIT;
	json_t *doc, *t;
	char msg[1024];

	doc = json_loadb(text, nul ? (size_t)(nul - text) : size, JSON_REJECT_DUPLICATES, NULL);
	if (!doc)
		return 0;
	if (!tuned_check(doc, "fuzz", msg, sizeof(msg))) {
		t = tuned_new();
		if (tuned_merge(t, doc, "a", msg, sizeof(msg)) ||
		    tuned_merge(t, doc, "b", msg, sizeof(msg)))
			abort(); /* a checked table always merges with itself */
		if (tuned_check(t, "merged", msg, sizeof(msg)))
			abort(); /* and the merge is a table again */
		tuned_render_c(t, &b, msg, sizeof(msg));
		sbuf_release(&b);
		json_decref(t);
	}
	json_decref(doc);
	return 0;
}
