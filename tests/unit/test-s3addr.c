/*
 * test-s3addr.c - how common/s3.c addresses a store, offline: the URLs it
 * presigns for AWS (virtual-hosted), for a custom endpoint (path style),
 * with a session token, and what it refuses.
 */
#include "err.h"
#include "s3.h"
#include "test.h"
#include "arraysize.h"

#include <stdlib.h>
#include <string.h>

#define NOW ((time_t)1369353600)

static void env_reset(void)
{
	setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", 1);
	unsetenv("AWS_SESSION_TOKEN");
	unsetenv("AWS_REGION");
	unsetenv("AWS_DEFAULT_REGION");
	unsetenv("AWS_ENDPOINT_URL");
	unsetenv("AWS_ENDPOINT_URL_S3");
	unsetenv("AWS_PROFILE");
	setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/c", 1);
	setenv("AWS_CONFIG_FILE", "/nonexistent/c", 1);
}

TEST(addressing)
{
	static const struct {
		const char *url, *endpoint, *region;
		enum s3_addressing a;
		const char *key, *want_prefix;
	} cases[] = {
		/* AWS, virtual-hosted: the bucket in the host name */
		{ "s3://examplebucket", NULL, "us-east-1", S3_ADDR_VIRTUAL, "test.txt",
		  "https://examplebucket.s3.us-east-1.amazonaws.com/test.txt?" },
		{ "s3://examplebucket/p", NULL, "eu-west-1", S3_ADDR_AUTO, "p/a b",
		  "https://examplebucket.s3.eu-west-1.amazonaws.com/p/a%20b?" },
		{ "s3://dotted.bucket", NULL, "us-east-1", S3_ADDR_AUTO, "k",
		  "https://s3.us-east-1.amazonaws.com/dotted.bucket/k?" },
		{ "s3://bkt", "http://127.0.0.1:9000", "us-east-1", S3_ADDR_AUTO, "dir/k+1",
		  "http://127.0.0.1:9000/bkt/dir/k%2B1?" },
		{ "s3://bkt", "https://minio.local:443", "us-east-1", S3_ADDR_AUTO, "k",
		  "https://minio.local/bkt/k?" },
		{ "s3://bkt", "https://r2.example", "auto", S3_ADDR_VIRTUAL, "k",
		  "https://bkt.r2.example/k?" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct s3_opts o = { .endpoint = cases[i].endpoint,
				     .region = cases[i].region,
				     .addressing = cases[i].a };
		struct s3 *s = NULL;
		char msg[512], *url;

		env_reset();
		CHECK(s3_open(&s, cases[i].url, &o, msg, sizeof(msg)) == 0);
		if (!s)
			continue;
		url = s3_presign(s, "GET", cases[i].key, 86400, NOW, msg, sizeof(msg));
		CHECK(url && !strncmp(url, cases[i].want_prefix, strlen(cases[i].want_prefix)));
		if (url && strncmp(url, cases[i].want_prefix, strlen(cases[i].want_prefix)))
			fprintf(stderr, "case %zu: %s\n", i, url);
		if (i == 0) /* the host differs from the example's, so the signature does too */
			CHECK_CONTAINS(url, "&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&");
		free(url);
		s3_free(s);
	}
}

TEST(token_and_region_from_environment)
{
	struct s3 *s = NULL;
	char msg[512], *url;

	env_reset();
	setenv("AWS_SESSION_TOKEN", "tok/en+1", 1);
	setenv("AWS_DEFAULT_REGION", "ap-south-1", 1);
	setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1", 1);
	CHECK(s3_open(&s, "s3://bkt/pre/", NULL, msg, sizeof(msg)) == 0);
	if (!s)
		return;
	url = s3_presign(s, "PUT", "pre/x", 60, NOW, msg, sizeof(msg));
	CHECK_CONTAINS(url, "http://127.0.0.1:1/bkt/pre/x?");
	CHECK_CONTAINS(url, "%2Fap-south-1%2Fs3%2Faws4_request");
	CHECK_CONTAINS(url, "&X-Amz-Security-Token=tok%2Fen%2B1&");
	CHECK(strstr(url, "wJalrXUtnFEMI") == NULL);
	free(url);
	CHECK(s3_presign(s, "GET", "", 60, NOW, msg, sizeof(msg)) == NULL);
	s3_free(s);
}

TEST(refusals)
{
	struct s3_opts o = { .addressing = S3_ADDR_VIRTUAL, .region = "us-east-1" };
	struct s3 *s = NULL;
	char msg[512];

	env_reset();
	CHECK(s3_open(&s, "s3://dotted.bucket", &o, msg, sizeof(msg)) == KERR_INVALID);
	CHECK_CONTAINS(msg, "certificate");
	unsetenv("AWS_ACCESS_KEY_ID");
	CHECK(s3_open(&s, "s3://bkt", NULL, msg, sizeof(msg)) == KERR_NOTFOUND);
	CHECK_CONTAINS(msg, "no AWS credentials");
	CHECK(s == NULL);
}

/* The default endpoint follows the region's partition. */
TEST(partition_endpoints)
{
	static const struct {
		const char *region, *want_prefix;
	} cases[] = {
		{ "cn-north-1", "https://bkt.s3.cn-north-1.amazonaws.com.cn/k?" },
		{ "cn-northwest-1", "https://bkt.s3.cn-northwest-1.amazonaws.com.cn/k?" },
		{ "us-gov-west-1", "https://bkt.s3.us-gov-west-1.amazonaws.com/k?" },
		{ "us-iso-east-1", "https://bkt.s3.us-iso-east-1.c2s.ic.gov/k?" },
		{ "us-isob-east-1", "https://bkt.s3.us-isob-east-1.sc2s.sgov.gov/k?" },
		{ "eu-isoe-west-1", "https://bkt.s3.eu-isoe-west-1.cloud.adc-e.uk/k?" },
		{ "us-isof-south-1", "https://bkt.s3.us-isof-south-1.csp.hci.ic.gov/k?" },
		{ "eu-central-1", "https://bkt.s3.eu-central-1.amazonaws.com/k?" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct s3_opts o = { .region = cases[i].region };
		struct s3 *s = NULL;
		char msg[512], *url = NULL;

		env_reset();
		CHECK(s3_open(&s, "s3://bkt", &o, msg, sizeof(msg)) == 0);
		if (s)
			url = s3_presign(s, "GET", "k", 60, NOW, msg, sizeof(msg));
		CHECK(url && !strncmp(url, cases[i].want_prefix, strlen(cases[i].want_prefix)));
		if (url && strncmp(url, cases[i].want_prefix, strlen(cases[i].want_prefix)))
			fprintf(stderr, "region %s: %s\n", cases[i].region, url);
		free(url);
		s3_free(s);
	}
}

/* Keys whose path a client or store would rewrite are refused, naming the key. */
TEST(dot_segments)
{
	static const struct {
		const char *key, *want; /* want: NULL for a key that is fine */
	} cases[] = {
		{ "runs/x/batch.json", NULL },
		{ "a.b/.c/d..e/...", NULL },
		{ ".hidden/..x", NULL },
		{ "runs/./x", "has a '.' segment" },
		{ "runs/../x", "has a '..' segment" },
		{ ".", "has a '.' segment" },
		{ "..", "has a '..' segment" },
		{ "x/..", "has a '..' segment" },
		{ "./x", "has a '.' segment" },
		{ "a//b", "has an empty segment" },
		{ "/a", "starts with '/'" },
		{ "a/", "ends with '/'" },
		{ "", "is empty" },
	};
	struct s3_opts o = { .endpoint = "http://127.0.0.1:1", .region = "us-east-1" };
	struct s3 *s = NULL;
	char msg[512];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *got = s3_key_fault(cases[i].key);

		if (cases[i].want)
			CHECK_CONTAINS(got, cases[i].want);
		else
			CHECK(got == NULL);
		if ((got == NULL) != (cases[i].want == NULL))
			fprintf(stderr, "key '%s': %s\n", cases[i].key, got ? got : "(fine)");
	}

	env_reset();
	CHECK(s3_open(&s, "s3://bkt/runs/./x", &o, msg, sizeof(msg)) == KERR_INVALID);
	CHECK_CONTAINS(msg, "the prefix 'runs/./x' has a '.' segment");
	CHECK(s == NULL);
	CHECK(s3_open(&s, "s3://bkt/runs/../x/", &o, msg, sizeof(msg)) == KERR_INVALID);
	CHECK_CONTAINS(msg, "'..' segment");
	CHECK(s3_open(&s, "s3://bkt/runs/x/", &o, msg, sizeof(msg)) == 0);
	if (!s)
		return;
	CHECK(s3_presign(s, "PUT", "runs/x/./a.json", 60, NOW, msg, sizeof(msg)) == NULL);
	CHECK_CONTAINS(msg, "S3 key 'runs/x/./a.json' has a '.' segment");
	/* Refused before any request: the endpoint (port 1) is never contacted. */
	CHECK(s3_put(s, "runs/x/../a.json", "{}", 2, NULL, msg, sizeof(msg)) == KERR_INVALID);
	CHECK_CONTAINS(msg, "S3 key 'runs/x/../a.json' has a '..' segment");
	CHECK_CONTAINS(msg, "would not match its signature");
	s3_free(s);
}

int main(void)
{
	RUN(addressing);
	RUN(token_and_region_from_environment);
	RUN(refusals);
	RUN(partition_endpoints);
	RUN(dot_segments);
	return test_summary();
}
