/*
 * fuzz-render.c - the manifest renderer (controller/render.c): any bytes
 * as a template, rendered with values of every kind under the names
 * manifests/eval-job.yaml uses (and a few more), then written back as
 * YAML as kctl writes the Jobs it creates.
 */
#include "fuzz.h"
#include "render.h"
#include "sbuf.h"

#include <jansson.h>
#include <stdlib.h>

static const char fuzz_render_vars[] =
	"{\"job_name\": \"kctl-s1-r1-a0\", \"namespace\": \"ns\", \"session\": \"s1\","
	" \"session_label\": \"s1\", \"round\": 1, \"attempt\": 0, \"shard\": \"0\","
	" \"image\": \"evalpod:1\", \"image_pull_policy\": \"IfNotPresent\","
	" \"completions\": 2, \"parallelism\": 2, \"backoff_limit\": 1,"
	" \"backoff_limit_per_index\": null, \"completion_mode\": \"Indexed\","
	" \"active_deadline_s\": 3600, \"ttl_s\": 600, \"suspend\": false,"
	" \"gpu_resource\": \"nvidia.com/gpu\", \"gpus\": 1, \"queue\": null,"
	" \"priority_class\": \"high\", \"service_account\": \"kctl\","
	" \"node_selector\": {\"gpu\": \"h100\", \"zone\": \"a:b\"},"
	" \"tolerations\": [{\"key\": \"k\", \"operator\": \"Exists\"}],"
	" \"env\": [{\"name\": \"A\", \"value\": \"x\\ny: ${z}\"}],"
	" \"pod_failure_policy\": {\"rules\": []}, \"x\": \"$${x}\", \"n\": -1.5e300}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static json_t *vars;
	json_t *out = NULL;
	char msg[1024];

	if (!vars && !(vars = json_loads(fuzz_render_vars, 0, NULL)))
		abort();
	if (!render_template("fuzz.yaml", (const char *)data, size, vars, &out, msg, sizeof(msg))) {
		struct sbuf b = SBUF_INIT;

		render_yaml(&b, out);
		sbuf_release(&b);
	}
	json_decref(out);
	return 0;
}
