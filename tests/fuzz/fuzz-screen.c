/*
 * fuzz-screen.c - evalpod's screen of candidate kernels (evalpod/screen*.c),
 * the first reader of the most hostile input there is: a source a model
 * or a proposer command wrote, and its build options.  screen_source reads
 * the text as clang's preprocessor would (trigraphs, splices, comments,
 * literals, directives) and screen_options checks the options against the
 * allowlist; both on any bytes, and the options as every build uses them
 * (screen_build_options).
 *
 * Input: the source, then optionally a NUL and the build options (up to the
 * next NUL).
 */
#include "fuzz.h"
#include "screen.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *src = (const char *)data;
	const char *nul = memchr(src, '\0', size);
	size_t len = nul ? (size_t)(nul - src) : size;
	char msg[512], *opts = NULL, *built;

	if (screen_source(src, len, msg, sizeof(msg)) && !memchr(msg, '\0', sizeof(msg)))
		abort();
	screen_source(src, len, NULL, 0);
	if (nul) {
		const char *o = nul + 1;
		const char *end = memchr(o, '\0', size - len - 1);
		size_t olen = end ? (size_t)(end - o) : size - len - 1;

		opts = malloc(olen + 1);
		if (!opts)
			abort();
		memcpy(opts, o, olen);
		opts[olen] = '\0';
	}
	if (!screen_options(opts, msg, sizeof(msg))) {
		built = screen_build_options(opts);
		free(built);
	}
	free(opts);
	return 0;
}
