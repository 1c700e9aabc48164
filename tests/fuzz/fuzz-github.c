/*
 * fuzz-github.c - what controller/github*.c reads from a server or a
 * caller without control over it: a Link header (github__link_next), the
 * quote of an error body (github__quote, with a token to scrub) and an
 * issue body made to fit GitHub's limit (github_body_fit, at a small limit
 * too, so cuts happen).  Byte 0 picks the limit; the rest is the text.
 */
#include "fuzz.h"
#include "github-internal.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct github *gh;
	char *text, *got, quote[GITHUB_QUOTE_MAX + 16], msg[256];

	if (!gh) {
		struct github_opts o = { .repo = "o/r", .token = "ghp_fuzz0123456789" };

		if (github_new(&o, &gh, msg, sizeof(msg)))
			abort();
	}
	if (!size)
		return 0;
	text = xmalloc(size);
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	free(github__link_next(text));
	github__quote(gh, (const char *)data + 1, size - 1, quote, sizeof(quote));
	if (strlen(quote) > GITHUB_QUOTE_MAX + 3 || strstr(quote, "ghp_fuzz0123456789"))
		abort();
	got = github_body_fit("<!-- kctl-session: f -->", (const char *)data + 1, size - 1,
			      (size_t)data[0] + 1);
	free(got);
	got = github_body_fit(NULL, (const char *)data + 1, size - 1, 0);
	free(got);
	free(text);
	return 0;
}
