/*
 * test-kpod.c - controller/kpod.c: what a pod's status says, read the way
 * the kube-apiserver writes it (a Failed pod's containerStatuses).
 */
#include "kpod.h"
#include "test.h"
#include "arraysize.h"

#include <jansson.h>

static const struct {
	const char *pod; /* JSON */
	int want;
} exit_cases[] = {
	/* evalpod said the reference was slow */
	{ "{\"status\": {\"phase\": \"Failed\", \"containerStatuses\": [{\"name\": \"evalpod\","
	  " \"state\": {\"terminated\": {\"exitCode\": 4, \"reason\": \"Error\"}}}]}}",
	  4 },
	/* the evalpod container's status, not a sidecar's listed first */
	{ "{\"status\": {\"phase\": \"Failed\", \"containerStatuses\": ["
	  "{\"name\": \"proxy\", \"state\": {\"terminated\": {\"exitCode\": 137}}},"
	  "{\"name\": \"evalpod\", \"state\": {\"terminated\": {\"exitCode\": 1}}}]}}",
	  1 },
	/* no container named evalpod: the first that terminated */
	{ "{\"status\": {\"phase\": \"Failed\", \"containerStatuses\": ["
	  "{\"name\": \"main\", \"state\": {\"waiting\": {}}},"
	  "{\"name\": \"other\", \"state\": {\"terminated\": {\"exitCode\": 3}}}]}}",
	  3 },
	/* a pod that has not failed has no exit status to go by */
	{ "{\"status\": {\"phase\": \"Succeeded\", \"containerStatuses\": [{\"name\": \"evalpod\","
	  " \"state\": {\"terminated\": {\"exitCode\": 0}}}]}}",
	  -1 },
	{ "{\"status\": {\"phase\": \"Running\"}}", -1 },
	/* what a broken or hostile answer may hold */
	{ "{\"status\": {\"phase\": \"Failed\", \"containerStatuses\": [{\"name\": \"evalpod\","
	  " \"state\": {\"terminated\": {\"exitCode\": \"4\"}}}]}}",
	  -1 },
	{ "{\"status\": {\"phase\": \"Failed\", \"containerStatuses\": [{\"name\": \"evalpod\","
	  " \"state\": {\"terminated\": {\"exitCode\": 99999}}}]}}",
	  -1 },
	{ "{\"status\": {\"phase\": \"Failed\", \"containerStatuses\": [{\"name\": \"evalpod\","
	  " \"state\": {\"terminated\": {\"exitCode\": -4}}}]}}",
	  -1 },
	{ "{\"status\": {\"phase\": \"Failed\", \"containerStatuses\": 7}}", -1 },
	{ "{}", -1 },
};

TEST(exit_status)
{
	for (size_t i = 0; i < ARRAY_SIZE(exit_cases); i++) {
		json_t *pod = json_loads(exit_cases[i].pod, 0, NULL);
		int got;

		CHECK(pod != NULL);
		got = kpod_exit_status(pod);
		if (got != exit_cases[i].want)
			fprintf(stderr, "case %zu: got %d, want %d\n", i, got, exit_cases[i].want);
		CHECK(got == exit_cases[i].want);
		json_decref(pod);
	}
}

int main(void)
{
	RUN(exit_status);
	return test_summary();
}
