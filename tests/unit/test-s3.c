/*
 * test-s3.c - common/s3.c against a real store that verifies signatures
 * (OpenStack Swift with s3api on loopback) and, for injected failures, the
 * same store behind tests/peers/fault_proxy.py.
 *
 * Run through tests/unit/run-s3-test.sh, which starts both and exports
 * S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY, S3_REGION and FAULT_PROXY.
 * Without S3_ENDPOINT the test skips (exit 77).
 */
#include "err.h"
#include "http.h"
#include "log.h"
#include "s3.h"
#include "sigv4.h"
#include "test.h"
#include "xalloc.h"
#include "arraysize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *endpoint, *proxy;
static char bucket_url[128], bucket_name[64];

static struct s3 *open_store(const char *ep, const char *secret)
{
	struct s3_opts o = { .endpoint = ep, .backoff_ms = 20, .max_attempts = 5 };
	struct s3 *s = NULL;
	char msg[512];

	if (secret)
		setenv("AWS_SECRET_ACCESS_KEY", secret, 1);
	if (s3_open(&s, bucket_url, &o, msg, sizeof(msg)))
		fprintf(stderr, "s3_open: %s\n", msg);
	setenv("AWS_SECRET_ACCESS_KEY", getenv("S3_SECRET_KEY"), 1);
	return s;
}

/* GETs the fault proxy's counter name. */
static long proxy_counter(const char *name)
{
	struct http_response r;
	char url[256], msg[256], *p;
	long v = -1;

	snprintf(url, sizeof(url), "%s/__fault__", proxy);
	if (!http_request("GET", url, NULL, 0, NULL, &r, msg, sizeof(msg)) && r.body) {
		char key[64];

		snprintf(key, sizeof(key), "\"%s\": ", name);
		if ((p = strstr(r.body, key)))
			v = strtol(p + strlen(key), NULL, 10);
	}
	http_response_release(&r);
	return v;
}

static void proxy_plan(const char *json)
{
	struct http_response r;
	char url[256], msg[256];

	snprintf(url, sizeof(url), "%s/__fault__", proxy);
	http_request("DELETE", url, NULL, 0, NULL, &r, msg, sizeof(msg));
	http_response_release(&r);
	if (json) {
		CHECK(http_request("POST", url, json, strlen(json), NULL, &r, msg, sizeof(msg)) ==
		      0);
		http_response_release(&r);
	}
}

TEST(round_trip)
{
	struct s3 *s = open_store(endpoint, NULL);
	struct s3_object info;
	struct s3_list l;
	char msg[512], *data = NULL, *key;
	size_t len = 0;

	CHECK(s != NULL);
	if (!s)
		return;
	key = s3_key(s, "rt/hello.json");
	CHECK_STR(key, "pfx/rt/hello.json");
	CHECK(s3_put(s, key, "{\"a\":1}", 7, "application/json", msg, sizeof(msg)) == 0);
	CHECK(s3_get(s, key, 1 << 20, &data, &len, msg, sizeof(msg)) == 0);
	CHECK(len == 7 && data && !memcmp(data, "{\"a\":1}", 7));
	free(data);
	CHECK(s3_head(s, key, &info, msg, sizeof(msg)) == 0);
	CHECK(info.size == 7);
	CHECK(info.etag[0] != '\0');
	CHECK(s3_list(s, "pfx/rt/", 0, &l, msg, sizeof(msg)) == 0);
	CHECK(l.n == 1 && !strcmp(l.obj[0].key, key) && l.obj[0].size == 7);
	s3_list_release(&l);
	CHECK(s3_delete(s, key, msg, sizeof(msg)) == 0);
	CHECK(s3_head(s, key, &info, msg, sizeof(msg)) == KERR_NOTFOUND);
	CHECK(s3_get(s, key, 1 << 20, &data, &len, msg, sizeof(msg)) == KERR_NOTFOUND);
	CHECK_CONTAINS(msg, "404 NoSuchKey");
	CHECK(s3_delete(s, key, msg, sizeof(msg)) == 0); /* gone already: still fine */
	free(key);
	s3_free(s);
}

TEST(wrong_secret_refused_and_not_retried)
{
	struct s3 *s;
	char msg[512], *data = NULL;
	size_t len;

	proxy_plan(NULL);
	s = open_store(proxy, "not-the-secret");
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK(s3_put(s, "pfx/denied", "x", 1, NULL, msg, sizeof(msg)) == KERR_HTTP);
	CHECK_CONTAINS(msg, "403 SignatureDoesNotMatch");
	CHECK(strstr(msg, "not-the-secret") == NULL);
	CHECK(proxy_counter("forwarded") == 1); /* a signature error is final */
	CHECK(s3_get(s, "pfx/denied", 100, &data, &len, msg, sizeof(msg)) == KERR_HTTP);
	CHECK_CONTAINS(msg, "SignatureDoesNotMatch");
	s3_free(s);
}

/* A presigned URL works once for its method and key, and for nothing else. */
TEST(presigned_urls)
{
	struct s3 *s = open_store(endpoint, NULL);
	struct http_response r;
	char msg[512], *put, *get, *tampered, *other;
	time_t now = time(NULL);
	const char body[] = "uploaded by a pod";

	if (!s)
		return;
	put = s3_presign(s, "PUT", "pfx/pre/result.json", 300, now, msg, sizeof(msg));
	get = s3_presign(s, "GET", "pfx/pre/result.json", 300, now, msg, sizeof(msg));
	CHECK(put && get);
	if (!put || !get)
		goto out;
	CHECK(strstr(put, getenv("S3_SECRET_KEY")) == NULL);
	CHECK(http_request("PUT", put, body, strlen(body), NULL, &r, msg, sizeof(msg)) == 0);
	http_response_release(&r);
	CHECK(http_request("GET", get, NULL, 0, NULL, &r, msg, sizeof(msg)) == 0);
	CHECK(r.body_len == strlen(body) && !memcmp(r.body, body, r.body_len));
	http_response_release(&r);

	/* a GET URL does not allow a PUT */
	CHECK(http_request("PUT", get, "x", 1, NULL, &r, msg, sizeof(msg)) == KERR_HTTP);
	CHECK(r.status == 403);
	http_response_release(&r);
	/* one changed character of the signature */
	tampered = strdup(get);
	tampered[strlen(tampered) - 1] = tampered[strlen(tampered) - 1] == '0' ? '1' : '0';
	CHECK(http_request("GET", tampered, NULL, 0, NULL, &r, msg, sizeof(msg)) == KERR_HTTP);
	CHECK(r.status == 403 && r.body && strstr(r.body, "SignatureDoesNotMatch"));
	http_response_release(&r);
	free(tampered);
	/* the same signature for another key */
	other = strdup(get);
	memcpy(strstr(other, "result.json"), "resulT", 6);
	CHECK(http_request("GET", other, NULL, 0, NULL, &r, msg, sizeof(msg)) == KERR_HTTP);
	CHECK(r.status == 403);
	http_response_release(&r);
	free(other);
out:
	free(put);
	free(get);
	s3_free(s);
}

TEST(expired_presigned_url)
{
	struct s3 *s = open_store(endpoint, NULL);
	struct http_response r;
	char msg[512], *get, *put;
	time_t past = time(NULL) - 600; /* signed ten minutes ago for one minute */

	if (!s)
		return;
	CHECK(s3_put(s, "pfx/exp/obj", "x", 1, NULL, msg, sizeof(msg)) == 0);
	get = s3_presign(s, "GET", "pfx/exp/obj", 60, past, msg, sizeof(msg));
	put = s3_presign(s, "PUT", "pfx/exp/obj", 60, past, msg, sizeof(msg));
	CHECK(get && put);
	if (get) {
		CHECK(http_request("GET", get, NULL, 0, NULL, &r, msg, sizeof(msg)) == KERR_HTTP);
		CHECK(r.status == 403 && r.body && strstr(r.body, "AccessDenied") &&
		      strstr(r.body, "expired"));
		http_response_release(&r);
	}
	if (put) {
		CHECK(http_request("PUT", put, "y", 1, NULL, &r, msg, sizeof(msg)) == KERR_HTTP);
		CHECK(r.status == 403);
		http_response_release(&r);
	}
	CHECK(s3_presign(s, "GET", "pfx/exp/obj", SIGV4_MAX_EXPIRES + 1, past, msg, sizeof(msg)) ==
	      NULL);
	free(get);
	free(put);
	s3_free(s);
}

/* Keys with spaces, '+', ':', '=', '&', '%', '~', unicode: put, get, list, presign. */
TEST(awkward_keys)
{
	static const char *const keys[] = {
		"pfx/odd/a b+c:d=e&f",     "pfx/odd/Ünï-cødé ✓.txt", "pfx/odd/~!*'()$,;@[]",
		"pfx/odd/100%25 literal%", "pfx/odd/two  spaces ",   "pfx/odd/q?hash#x",
	};
	struct s3 *s = open_store(endpoint, NULL);
	struct s3_list l;
	char msg[512];

	if (!s)
		return;
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		char *data = NULL, *url;
		size_t len = 0;
		struct http_response r;

		CHECK(s3_put(s, keys[i], keys[i], strlen(keys[i]), "text/plain", msg,
			     sizeof(msg)) == 0);
		CHECK(s3_get(s, keys[i], 4096, &data, &len, msg, sizeof(msg)) == 0);
		CHECK(data && len == strlen(keys[i]) && !memcmp(data, keys[i], len));
		free(data);
		url = s3_presign(s, "GET", keys[i], 60, time(NULL), msg, sizeof(msg));
		CHECK(url && http_request("GET", url, NULL, 0, NULL, &r, msg, sizeof(msg)) == 0);
		if (url)
			CHECK(r.body_len == strlen(keys[i]));
		http_response_release(&r);
		free(url);
	}
	CHECK(s3_list(s, "pfx/odd/", 0, &l, msg, sizeof(msg)) == 0);
	CHECK(l.n == ARRAY_SIZE(keys));
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		int found = 0;

		for (size_t j = 0; j < l.n; j++)
			found |= !strcmp(l.obj[j].key, keys[i]);
		if (!found)
			fprintf(stderr, "key not listed back: '%s'\n", keys[i]);
		CHECK(found);
	}
	s3_list_release(&l);
	s3_free(s);
}

TEST(list_pages)
{
	struct s3_opts o = { .endpoint = NULL, .list_page = 3 };
	struct s3 *s = NULL;
	struct s3_list l;
	char msg[512], key[64];

	o.endpoint = endpoint;
	CHECK(s3_open(&s, bucket_url, &o, msg, sizeof(msg)) == 0);
	if (!s)
		return;
	for (int i = 0; i < 10; i++) {
		snprintf(key, sizeof(key), "pfx/page/k%02d", i);
		CHECK(s3_put(s, key, "p", 1, NULL, msg, sizeof(msg)) == 0);
	}
	CHECK(s3_list(s, "pfx/page/", 0, &l, msg, sizeof(msg)) == 0);
	CHECK(l.n == 10);
	for (size_t i = 0; i < l.n; i++) {
		snprintf(key, sizeof(key), "pfx/page/k%02zu", i);
		CHECK_STR(l.obj[i].key, key);
	}
	s3_list_release(&l);
	CHECK(s3_list(s, "pfx/page/", 7, &l, msg, sizeof(msg)) == KERR_LIMIT);
	CHECK(s3_list(s, "pfx/none/", 0, &l, msg, sizeof(msg)) == 0 && l.n == 0);
	s3_list_release(&l);
	s3_free(s);
}

/* A 48 MiB artifact streamed from a file, checked back by its hash. */
TEST(large_upload)
{
	struct s3 *s = open_store(endpoint, NULL);
	char path[] = "/tmp/test-s3-large.XXXXXX", msg[512], want[65], got[65], *data = NULL;
	struct s3_object info;
	size_t len = 0, size = (size_t)48 << 20;
	unsigned long long fsize = 0;
	int fd = mkstemp(path);
	char *buf = malloc(1 << 20);

	if (!s || fd < 0 || !buf)
		goto out;
	for (size_t off = 0; off < size; off += 1 << 20) {
		for (size_t i = 0; i < (1 << 20); i++)
			buf[i] = (char)((off >> 20) * 31 + i * 7);
		CHECK(write(fd, buf, 1 << 20) == 1 << 20);
	}
	close(fd);
	fd = -1;
	CHECK(sigv4_sha256_file(path, want, &fsize, msg, sizeof(msg)) == 0 && fsize == size);
	CHECK(s3_put_file(s, "pfx/big/artifact.bin", path, "application/octet-stream", msg,
			  sizeof(msg)) == 0);
	CHECK(s3_head(s, "pfx/big/artifact.bin", &info, msg, sizeof(msg)) == 0);
	CHECK(info.size == size);
	CHECK(s3_get(s, "pfx/big/artifact.bin", size, &data, &len, msg, sizeof(msg)) == 0);
	CHECK(len == size);
	if (data) {
		sigv4_sha256_hex(data, len, got);
		CHECK_STR(got, want);
	}
	free(data);
	data = NULL;
	CHECK(s3_get(s, "pfx/big/artifact.bin", size - 1, &data, &len, msg, sizeof(msg)) ==
	      KERR_LIMIT);
	CHECK(data == NULL);
	CHECK(s3_delete(s, "pfx/big/artifact.bin", msg, sizeof(msg)) == 0);
out:
	free(data);
	free(buf);
	if (fd >= 0)
		close(fd);
	unlink(path);
	s3_free(s);
}

/* 5xx, SlowDown, resets: retried and the request goes through in the end. */
TEST(retries_on_injected_failures)
{
	static const struct {
		const char *plan;
		long faults;
	} cases[] = {
		{ "{\"plan\": [\"503\", \"500\", \"pass\"]}", 2 },
		{ "{\"plan\": [\"slowdown:retry-after=1\", \"pass\"]}", 1 },
		{ "{\"plan\": [\"reset\", \"close\", \"pass\"]}", 2 },
		{ "{\"plan\": [\"429\", \"502\", \"504\", \"pass\"]}", 3 },
	};
	struct s3 *s = open_store(proxy, NULL);
	char msg[512], *data = NULL;
	size_t len = 0;

	if (!s)
		return;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		proxy_plan(cases[i].plan);
		CHECK(s3_put(s, "pfx/retry/obj", "retried", 7, NULL, msg, sizeof(msg)) == 0);
		CHECK(proxy_counter("faults") == cases[i].faults);
		CHECK(proxy_counter("forwarded") == 1);
	}
	proxy_plan("{\"plan\": [\"503\", \"pass\"]}");
	CHECK(s3_get(s, "pfx/retry/obj", 100, &data, &len, msg, sizeof(msg)) == 0);
	CHECK(len == 7 && data && !memcmp(data, "retried", 7));
	free(data);
	/* a store that keeps failing: the store's code is in the message */
	proxy_plan("{\"plan\": [\"503\", \"503\", \"503\", \"503\", \"503\"]}");
	CHECK(s3_put(s, "pfx/retry/obj", "z", 1, NULL, msg, sizeof(msg)) == KERR_HTTP);
	CHECK_CONTAINS(msg, "503 ServiceUnavailable");
	CHECK_CONTAINS(msg, "after retries");
	CHECK(proxy_counter("forwarded") == 0);
	proxy_plan(NULL);
	s3_free(s);
}

/* The signed payload hash binds the body: a different body is refused. */
TEST(payload_integrity)
{
	struct sigv4_key k = { .access_key = getenv("S3_ACCESS_KEY"),
			       .secret_key = getenv("S3_SECRET_KEY"),
			       .region = getenv("S3_REGION") ? getenv("S3_REGION") : "us-east-1",
			       .service = "s3" };
	const char *host = endpoint + strlen("http://");
	char path[256], hash[65], msg[512], *url;
	struct sigv4_request r = { .method = "PUT", .host = host, .now = time(NULL) };
	struct sigv4_signed sig;
	struct http_response resp;
	struct http_opts o = { .max_attempts = 1 };

	snprintf(path, sizeof(path), "/%s/pfx/integrity", bucket_name);
	r.path = path;
	sigv4_sha256_hex("the body that was signed", 24, hash);
	r.payload_hash = hash;
	CHECK(sigv4_sign(&k, &r, &sig, msg, sizeof(msg)) == 0);
	url = xasprintf("%s%s", endpoint, sig.target);
	o.headers = (const char *const *)sig.headers;
	CHECK(http_request("PUT", url, "the body that was sent!!", 24, &o, &resp, msg,
			   sizeof(msg)) == KERR_HTTP);
	CHECK(resp.status == 400 && resp.body && strstr(resp.body, "BadDigest"));
	http_response_release(&resp);
	CHECK(http_request("PUT", url, "the body that was signed", 24, &o, &resp, msg,
			   sizeof(msg)) == 0);
	http_response_release(&resp);
	free(url);
	sigv4_signed_release(&sig);
}

TEST(open_errors)
{
	static const struct {
		const char *url;
		const char *endpoint;
		const char *want;
	} cases[] = {
		{ "gs://bucket", "http://h", "not an s3://" },
		{ "s3://B_ad", "http://h", "not a valid bucket name" },
		{ "s3://ok-bucket", "ftp://h", "not an http(s)://" },
		{ "s3://ok-bucket", "http://h/path", "no path" },
		{ "s3://ok-bucket//x", "http://h", "the prefix '/x' starts with '/'" },
		{ "s3://ok-bucket/a/./x", "http://h", "the prefix 'a/./x' has a '.' segment" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct s3_opts o = { .endpoint = cases[i].endpoint };
		struct s3 *s = (struct s3 *)1;
		char msg[512];

		CHECK(s3_open(&s, cases[i].url, &o, msg, sizeof(msg)) == KERR_INVALID);
		CHECK(s == NULL);
		CHECK_CONTAINS(msg, cases[i].want);
	}
}

int main(void)
{
	struct s3 *s;
	char msg[512];
	const char *bucket = getenv("S3_TEST_BUCKET");

	endpoint = getenv("S3_ENDPOINT");
	proxy = getenv("FAULT_PROXY");
	if (!endpoint || !proxy || !getenv("S3_ACCESS_KEY")) {
		fprintf(stderr, "S3_ENDPOINT or FAULT_PROXY not set: skipped\n");
		return 77;
	}
	log_set_level_name("error");
	setenv("AWS_ACCESS_KEY_ID", getenv("S3_ACCESS_KEY"), 1);
	setenv("AWS_SECRET_ACCESS_KEY", getenv("S3_SECRET_KEY"), 1);
	setenv("AWS_REGION", getenv("S3_REGION") ? getenv("S3_REGION") : "us-east-1", 1);
	setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent", 1);
	setenv("AWS_CONFIG_FILE", "/nonexistent", 1);
	snprintf(bucket_name, sizeof(bucket_name), "%s", bucket ? bucket : "kctl-test");
	snprintf(bucket_url, sizeof(bucket_url), "s3://%s/pfx/", bucket_name);
	s = open_store(endpoint, NULL);
	if (!s || s3_create_bucket(s, msg, sizeof(msg))) {
		fprintf(stderr, "cannot create the test bucket: %s\n", s ? msg : "no store");
		return 1;
	}
	s3_free(s);
	RUN(round_trip);
	RUN(wrong_secret_refused_and_not_retried);
	RUN(presigned_urls);
	RUN(expired_presigned_url);
	RUN(awkward_keys);
	RUN(list_pages);
	RUN(large_upload);
	RUN(retries_on_injected_failures);
	RUN(payload_integrity);
	RUN(open_errors);
	return test_summary();
}
