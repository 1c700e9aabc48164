/*
 * fuzz-kpod.c - what kctl reads from a Kubernetes API server's Pod and Job
 * objects (controller/kpod.c) to say what is wrong with an evaluation:
 * the shard a Pod runs (kpod_shard), its diagnosis (kpod_diagnose), the
 * exit status of its evalpod container (kpod_exit_status), and RFC 3339
 * times (kpod_time), on any bytes: a Pod or Job document, as the server's
 * JSON.  Also the same document read as a Job (kround_created).
 */
#include "fuzz.h"
#include "kpod.h"
#include "kround-internal.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *pod = json_loadb((const char *)data, size, 0, NULL);
	char why[256], text[64];
	size_t n = size < sizeof(text) - 1 ? size : sizeof(text) - 1;
	int stuck = 0;

	memcpy(text, data, n);
	text[n] = '\0';
	kpod_time(text);
	if (json_is_object(pod)) {
		kpod_shard(pod);
		kpod_diagnose(pod, why, sizeof(why), &stuck);
		if (!memchr(why, '\0', sizeof(why)))
			abort();
		kpod_diagnose(pod, why, 8, &stuck); /* a short buffer is cut, never overrun */
		kpod_exit_status(pod);
		kround_created(pod);
	}
	json_decref(pod);
	return 0;
}
