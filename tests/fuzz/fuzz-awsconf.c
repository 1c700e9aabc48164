/*
 * fuzz-awsconf.c - the AWS shared config and credentials files
 * (common/awsconf.c).  The input's first byte picks the profile asked for;
 * the rest, up to the first NUL, is the config file and what follows the
 * NUL the credentials file (absent when there is no NUL).
 */
#include "awsconf.h"
#include "fuzz.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

static void fuzz_awsconf_env(void)
{
	static const char *const unset[] = { "AWS_ACCESS_KEY_ID",   "AWS_SECRET_ACCESS_KEY",
					     "AWS_SESSION_TOKEN",   "AWS_PROFILE",
					     "AWS_DEFAULT_PROFILE", "AWS_REGION",
					     "AWS_DEFAULT_REGION",  "AWS_ENDPOINT_URL",
					     "AWS_ENDPOINT_URL_S3" };

	for (size_t i = 0; i < sizeof(unset) / sizeof(unset[0]); i++)
		unsetenv(unset[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const profiles[] = { NULL, "default", "ci", "dev" };
	struct awsconf c;
	const char *body = (const char *)data + 1, *nul;
	char *conf, *cred, msg[1024];

	if (!size)
		return 0;
	fuzz_awsconf_env();
	nul = memchr(body, '\0', size - 1);
	conf = fuzz_write("config", body, nul ? (size_t)(nul - body) : size - 1);
	if (nul) {
		cred = fuzz_write("credentials", nul + 1, size - 1 - (size_t)(nul + 1 - body));
	} else {
		cred = xstrdup("/nonexistent/kctl-fuzz/credentials");
	}
	setenv("AWS_CONFIG_FILE", conf, 1);
	setenv("AWS_SHARED_CREDENTIALS_FILE", cred, 1);
	memset(&c, 0, sizeof(c));
	awsconf_load(&c, profiles[data[0] % 4], msg, sizeof(msg));
	awsconf_release(&c);
	free(conf);
	free(cred);
	return 0;
}
