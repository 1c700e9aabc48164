/*
 * fake_evalpod.c - stands in for evalpod in bench/kube.sh, where a thousand
 * pods must finish without a thousand OpenCL runs: it reads its batch from
 * the presigned URL in the environment (as evalpod does), and uploads
 * through the batch's presigned PUTs a "compile_error" result for every
 * variant (a final result, so kctl records it and moves on) and a summary.
 */
#include "http.h"
#include "jsonx.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int put(const char *url, json_t *doc)
{
	char *text = json_dumps(doc, JSON_COMPACT), msg[512];
	struct http_response r;
	int rc = http_request("PUT", url, text, strlen(text), NULL, &r, msg, sizeof(msg));

	if (rc)
		fprintf(stderr, "fake_evalpod: %s\n", msg);
	http_response_release(&r);
	free(text);
	return rc;
}

int main(void)
{
	const char *url = getenv("EVALPOD_BATCH_URL"), *idx = getenv("JOB_COMPLETION_INDEX");
	char name[64], msg[512];
	struct http_response r;
	json_t *b, *v, *outs;
	size_t i;
	int failed = 0;

	if (!url && idx) {
		snprintf(name, sizeof(name), "EVALPOD_BATCH_URL_%s", idx);
		url = getenv(name);
	}
	if (!url || http_request("GET", url, NULL, 0, NULL, &r, msg, sizeof(msg))) {
		fprintf(stderr, "fake_evalpod: no batch: %s\n", url ? msg : "no URL");
		return 3;
	}
	b = json_loadb(r.body, r.body_len, 0, NULL);
	http_response_release(&r);
	outs = json_object_get(b, "outputs");
	json_array_foreach (json_object_get(b, "variants"), i, v) {
		const char *id = json_string_value(json_object_get(v, "id"));
		const char *put_url =
			json_string_value(json_object_get(json_object_get(outs, "results"), id));
		json_t *res = json_pack("{s:s, s:i, s:s, s:O, s:s, s:{s:s, s:s, s:s}}", "schema",
					"evalpod.result", "version", 1, "id", id, "batch_id",
					json_object_get(b, "batch_id"), "status", "compile_error",
					"fault", "origin", "candidate", "kind", "compile",
					"message", "bench/fake_evalpod compiles nothing");

		failed |= !put_url || put(put_url, res);
		json_decref(res);
	}
	if (json_string_value(json_object_get(outs, "summary"))) {
		json_t *sum = json_pack("{s:s, s:O}", "schema", "evalpod.summary", "batch_id",
					json_object_get(b, "batch_id"));

		failed |= put(json_string_value(json_object_get(outs, "summary")), sum);
		json_decref(sum);
	}
	json_decref(b);
	return failed ? 3 : 0;
}
