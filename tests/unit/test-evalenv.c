/*
 * test-evalenv.c - the environment kctl gives evalpod (evalrun_env): what
 * passes, what never does, and how the extra variables replace kctl's.
 */
#include "evalrun.h"
#include "test.h"
#include "arraysize.h"

#include <stdlib.h>
#include <string.h>

/* Nonzero when envp holds exactly the entry e. */
static int has(char **envp, const char *e)
{
	for (size_t i = 0; envp && envp[i]; i++)
		if (!strcmp(envp[i], e))
			return 1;
	return 0;
}

TEST(allowlist)
{
	static const struct {
		const char *entry;
		int passes;
	} cases[] = {
		{ "PATH=/usr/bin", 1 },
		{ "HOME=/home/u", 1 },
		{ "LANG=C.UTF-8", 1 },
		{ "LC_ALL=C", 1 },
		{ "TMPDIR=/tmp/x", 1 },
		{ "XDG_CACHE_HOME=/c", 1 },
		{ "POCL_DEVICES=cpu", 1 },
		{ "OCL_ICD_VENDORS=/etc/OpenCL/vendors", 1 },
		{ "CUDA_VISIBLE_DEVICES=0", 1 },
		{ "EVALPOD_TEST_NOISE=3:0.5", 1 },
		{ "ASAN_OPTIONS=detect_leaks=1", 1 },
		{ "CURL_CA_BUNDLE=/ca.pem", 1 },
		{ "https_proxy=http://proxy:3128", 1 },
		{ "AWS_ACCESS_KEY_ID=AKIA", 0 },
		{ "AWS_SECRET_ACCESS_KEY=s", 0 },
		{ "AWS_SESSION_TOKEN=t", 0 },
		{ "AWS_PROFILE=p", 0 },
		{ "KCTL_STATE_DIR=/s", 0 },
		{ "KCTL_EVALPOD=/e", 0 },
		{ "KUBECONFIG=/k", 0 },
		{ "OPENAI_API_KEY=k", 0 },
		{ "GITHUB_TOKEN=t", 0 },
		{ "NVIDIA_API_KEY=k", 0 },
		{ "EVALPOD_TOKEN=t", 0 },
		{ "POCL_secret_dir=x", 0 },
		{ "ROCM_PASSWORD=x", 0 },
		{ "GPU_CREDENTIALS=x", 0 },
		{ "HIP_AUTH=x", 0 },
		{ "PATHX=/usr/bin", 0 },
		{ "NOEQUALS", 0 },
		{ "=x", 0 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *env[] = { (char *)cases[i].entry, NULL };
		char **out = evalrun_env(env, NULL);

		CHECK(has(out, cases[i].entry) == cases[i].passes);
		if (has(out, cases[i].entry) != cases[i].passes)
			fprintf(stderr, "'%s': want %s\n", cases[i].entry,
				cases[i].passes ? "passed" : "dropped");
		evalrun_env_free(out);
	}
}

TEST(extra_replaces)
{
	char *env[] = { "PATH=/bin", "CURL_CA_BUNDLE=/old.pem", "AWS_SECRET_ACCESS_KEY=s", NULL };
	const char *extra[] = { "EVALPOD_BATCH_URL=https://h/b?X-Amz-Signature=x",
				"CURL_CA_BUNDLE=/new.pem", NULL };
	char **out = evalrun_env(env, extra);
	size_t n = 0;

	while (out[n])
		n++;
	CHECK(n == 3);
	CHECK(has(out, "PATH=/bin"));
	CHECK(has(out, "CURL_CA_BUNDLE=/new.pem"));
	CHECK(!has(out, "CURL_CA_BUNDLE=/old.pem"));
	CHECK(has(out, "EVALPOD_BATCH_URL=https://h/b?X-Amz-Signature=x"));
	evalrun_env_free(out);
	evalrun_env_free(NULL);
}

int main(void)
{
	RUN(allowlist);
	RUN(extra_replaces);
	return test_summary();
}
