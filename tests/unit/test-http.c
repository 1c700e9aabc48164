/*
 * test-http.c - common/http.c against tests/peers/http_peer.py.
 *
 * Run through tests/unit/run-http-test.sh, which starts an HTTP and an HTTPS
 * peer and exports HTTP_PEER, HTTPS_PEER and HTTPS_CA.  Without them the
 * test skips (exit 77).
 */
#include "err.h"
#include "http.h"
#include "log.h"
#include "test.h"
#include "arraysize.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char *http_peer, *https_peer, *https_ca;

/* Fast retries: the tests count attempts, they do not wait for them. */
static const struct http_opts fast = {
	.backoff_ms = 10,
	.timeout_ms = 10000,
	.connect_timeout_ms = 2000,
};

static char *url_of(const char *base, const char *path)
{
	static char buf[4][512];
	static int next;
	char *u = buf[next++ % 4];

	snprintf(u, sizeof(buf[0]), "%s%s", base, path);
	return u;
}

static long elapsed_ms(const struct timespec *since)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - since->tv_sec) * 1000 + (now.tv_nsec - since->tv_nsec) / 1000000;
}

TEST(put_get_round_trip)
{
	struct http_response resp;
	char msg[512];
	unsigned char data[1000];
	int rc;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 7); /* NULs and high bytes included */
	rc = http_request("PUT", url_of(http_peer, "/rt/obj?X-Amz-Expires=60"), data, sizeof(data),
			  &fast, &resp, msg, sizeof(msg));
	CHECK(rc == 0);
	CHECK(resp.status == 200);
	CHECK(resp.attempts == 1);
	http_response_release(&resp);

	rc = http_request("GET", url_of(http_peer, "/rt/obj"), NULL, 0, &fast, &resp, msg,
			  sizeof(msg));
	CHECK(rc == 0);
	CHECK(resp.status == 200);
	CHECK(resp.body_len == sizeof(data));
	CHECK(resp.body && !memcmp(resp.body, data, sizeof(data)));
	CHECK(resp.body && resp.body[resp.body_len] == '\0');
	http_response_release(&resp);
}

/*
 * A path goes out as given, dot segments included: a signed (SigV4) path
 * that libcurl rewrote would not match its signature.  The peer stores by
 * the path it received, so what was stored tells what was sent.
 */
TEST(path_sent_as_is)
{
	struct http_response resp;
	char msg[512];
	int rc;

	rc = http_request("PUT", url_of(http_peer, "/asis/a/./b/../k"), "dots", 4, &fast, &resp,
			  msg, sizeof(msg));
	CHECK(rc == 0 && resp.status == 200);
	http_response_release(&resp);
	rc = http_request("GET", url_of(http_peer, "/asis/a/k"), NULL, 0, &fast, &resp, msg,
			  sizeof(msg));
	CHECK(rc == KERR_HTTP && resp.status == 404);
	http_response_release(&resp);
	rc = http_request("GET", url_of(http_peer, "/asis/a/./b/../k"), NULL, 0, &fast, &resp, msg,
			  sizeof(msg));
	CHECK(rc == 0 && resp.status == 200);
	CHECK(resp.body && resp.body_len == 4 && !memcmp(resp.body, "dots", 4));
	http_response_release(&resp);
}

TEST(put_sends_content_length)
{
	struct http_response resp;
	char msg[512];
	int rc;

	rc = http_request("PUT", url_of(http_peer, "/echo-headers"), "hello", 5, &fast, &resp, msg,
			  sizeof(msg));
	CHECK(rc == 0);
	CHECK_CONTAINS(resp.body, "Content-Length: 5\n");
	http_response_release(&resp);

	rc = http_request("PUT", url_of(http_peer, "/echo-headers"), NULL, 0, &fast, &resp, msg,
			  sizeof(msg));
	CHECK(rc == 0);
	CHECK_CONTAINS(resp.body, "Content-Length: 0\n");
	http_response_release(&resp);
}

TEST(extra_headers_sent)
{
	static const char *const headers[] = { "X-Kctl-Test: hello", "Accept: text/plain", NULL };
	struct http_opts opts = fast;
	struct http_response resp;
	char msg[512];
	int rc;

	opts.headers = headers;
	rc = http_request("GET", url_of(http_peer, "/echo-headers"), NULL, 0, &opts, &resp, msg,
			  sizeof(msg));
	CHECK(rc == 0);
	CHECK_CONTAINS(resp.body, "X-Kctl-Test: hello\n");
	CHECK_CONTAINS(resp.body, "Accept: text/plain\n");
	http_response_release(&resp);
}

TEST(post_delete_head)
{
	struct http_response resp;
	char msg[512];
	int rc;

	rc = http_request("POST", url_of(http_peer, "/post"), "{\"a\":1}", 7, NULL, &resp, msg,
			  sizeof(msg));
	CHECK(rc == 0);
	CHECK(resp.body_len == 7);
	CHECK_STR(resp.body, "{\"a\":1}");
	http_response_release(&resp);

	rc = http_request("PUT", url_of(http_peer, "/del/x"), "abc", 3, NULL, &resp, msg,
			  sizeof(msg));
	CHECK(rc == 0);
	http_response_release(&resp);
	rc = http_request("HEAD", url_of(http_peer, "/del/x"), NULL, 0, NULL, &resp, msg,
			  sizeof(msg));
	CHECK(rc == 0);
	CHECK(resp.status == 200);
	CHECK(resp.body_len == 0);
	http_response_release(&resp);
	rc = http_request("DELETE", url_of(http_peer, "/del/x"), NULL, 0, NULL, &resp, msg,
			  sizeof(msg));
	CHECK(rc == 0);
	CHECK(resp.status == 204);
	http_response_release(&resp);
	rc = http_request("GET", url_of(http_peer, "/del/x"), NULL, 0, NULL, &resp, msg,
			  sizeof(msg));
	CHECK(rc == KERR_HTTP);
	CHECK(resp.status == 404);
	http_response_release(&resp);
}

TEST(retry_503_then_success)
{
	struct http_response resp;
	char msg[512];
	int rc;

	rc = http_request("PUT", url_of(http_peer, "/fail503/2/retried"), "payload", 7, &fast,
			  &resp, msg, sizeof(msg));
	CHECK(rc == 0);
	CHECK(resp.status == 200);
	CHECK(resp.attempts == 3);
	http_response_release(&resp);

	/* the body went out again on the third attempt, whole */
	rc = http_request("GET", url_of(http_peer, "/retried"), NULL, 0, &fast, &resp, msg,
			  sizeof(msg));
	CHECK(rc == 0);
	CHECK_STR(resp.body, "payload");
	http_response_release(&resp);
}

TEST(retry_503_exhausted)
{
	struct http_opts opts = fast;
	struct http_response resp;
	char msg[512];
	int rc;

	opts.max_attempts = 3;
	rc = http_request("GET", url_of(http_peer, "/fail503/9/x"), NULL, 0, &opts, &resp, msg,
			  sizeof(msg));
	CHECK(rc == KERR_HTTP);
	CHECK(resp.status == 503);
	CHECK(resp.attempts == 3);
	CHECK_CONTAINS(msg, "HTTP 503 (after 3 attempts): <Error><Code>SlowDown</Code>");
	http_response_release(&resp);
}

static int stop_calls;

/* The caller's interrupt flag: raised after the first check (a signal came). */
static int stop_after_first(void)
{
	return ++stop_calls > 1;
}

TEST(retry_stops_when_asked)
{
	struct http_opts opts = fast;
	struct http_response resp;
	char msg[512];
	int rc;

	opts.max_attempts = 9;
	opts.stop = stop_after_first;
	stop_calls = 0;
	rc = http_request("GET", url_of(http_peer, "/fail503/9/stopped"), NULL, 0, &opts, &resp,
			  msg, sizeof(msg));
	CHECK(rc == KERR_HTTP);
	CHECK(resp.status == 503);
	CHECK(resp.attempts == 1); /* the wait after it saw the flag: no second attempt */
	CHECK_CONTAINS(msg, "HTTP 503");
	http_response_release(&resp);
}

TEST(retry_after_honoured)
{
	struct http_response resp;
	struct timespec start;
	char msg[512];
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &start);
	rc = http_request("GET", url_of(http_peer, "/retry-after/big?n=10"), NULL, 0, &fast, &resp,
			  msg, sizeof(msg));
	CHECK(rc == 0);
	CHECK(resp.status == 200);
	CHECK(resp.attempts == 2);
	CHECK_STR(resp.body, "0123456789");
	/* backoff alone would have waited 10 ms at most */
	CHECK(elapsed_ms(&start) >= 950);
	http_response_release(&resp);
}

TEST(not_found_keeps_body)
{
	struct http_response resp;
	char msg[512];
	int rc;

	rc = http_request("GET", url_of(http_peer, "/no/such/key"), NULL, 0, &fast, &resp, msg,
			  sizeof(msg));
	CHECK(rc == KERR_HTTP);
	CHECK(resp.status == 404);
	CHECK(resp.attempts == 1);
	CHECK_CONTAINS(resp.body, "<Code>NoSuchKey</Code>");
	CHECK_CONTAINS(resp.body, "</Error>");
	CHECK_CONTAINS(msg, "GET http://127.0.0.1:");
	CHECK_CONTAINS(msg, "/no/such/key: HTTP 404: <Error><Code>NoSuchKey</Code>");
	http_response_release(&resp);
}

TEST(status_table)
{
	static const struct {
		const char *path;
		int rc;
		long status;
		int attempts;
	} cases[] = {
		{ "/status/200", 0, 200, 1 },
		{ "/status/301", 0, 301, 1 }, /* redirects are not followed */
		{ "/status/400", KERR_HTTP, 400, 1 },
		{ "/status/403", KERR_HTTP, 403, 1 },
		{ "/status/429", KERR_HTTP, 429, 2 },
		{ "/status/500", KERR_HTTP, 500, 2 },
		{ "/status/501", KERR_HTTP, 501, 2 },
		{ "/status/504", KERR_HTTP, 504, 2 },
	};
	struct http_opts opts = fast;

	opts.max_attempts = 2;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct http_response resp;
		char msg[512];
		char want[32];
		int rc;

		rc = http_request("GET", url_of(http_peer, cases[i].path), NULL, 0, &opts, &resp,
				  msg, sizeof(msg));
		CHECK(rc == cases[i].rc);
		CHECK(resp.status == cases[i].status);
		CHECK(resp.attempts == cases[i].attempts);
		if (cases[i].rc) {
			snprintf(want, sizeof(want), "HTTP %ld", cases[i].status);
			CHECK_CONTAINS(msg, want);
			CHECK_CONTAINS(msg, "<Error><Code>");
		}
		http_response_release(&resp);
	}
}

TEST(max_body_table)
{
	static const struct {
		const char *path;
		size_t max_body;
		int rc;
	} cases[] = {
		{ "/big?n=1000", 1000, 0 },
		{ "/big?n=1001", 1000, KERR_LIMIT }, /* refused on Content-Length */
		{ "/big?n=1000&chunked=1", 1000, 0 },
		{ "/big?n=1001&chunked=1", 1000, KERR_LIMIT }, /* refused while reading */
		{ "/big?n=100000&chunked=1", 1000, KERR_LIMIT },
		{ "/status/500", 50, KERR_LIMIT }, /* error bodies too, no retry */
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct http_opts opts = fast;
		struct http_response resp;
		char msg[512];
		int rc;

		opts.max_body = cases[i].max_body;
		rc = http_request("GET", url_of(http_peer, cases[i].path), NULL, 0, &opts, &resp,
				  msg, sizeof(msg));
		CHECK(rc == cases[i].rc);
		CHECK(resp.attempts == 1);
		if (!rc)
			CHECK(resp.body_len == cases[i].max_body);
		else
			CHECK_CONTAINS(msg, "exceeds");
		CHECK(resp.body_len <= cases[i].max_body);
		http_response_release(&resp);
	}
}

TEST(head_not_bound_by_content_length)
{
	struct http_opts opts = fast;
	struct http_response resp;
	char msg[512];
	int rc;

	opts.max_body = 100;
	rc = http_request("HEAD", url_of(http_peer, "/big?n=5000"), NULL, 0, &opts, &resp, msg,
			  sizeof(msg));
	CHECK(rc == 0);
	CHECK(resp.status == 200);
	CHECK(resp.body_len == 0);
	http_response_release(&resp);
}

TEST(https_with_ca)
{
	struct http_opts opts = fast;
	struct http_response resp;
	char msg[512];
	int rc;

	opts.ca_file = https_ca;
	rc = http_request("PUT", url_of(https_peer, "/tls/obj"), "secure", 6, &opts, &resp, msg,
			  sizeof(msg));
	CHECK(rc == 0);
	CHECK(resp.status == 200);
	http_response_release(&resp);
	rc = http_request("GET", url_of(https_peer, "/tls/obj"), NULL, 0, &opts, &resp, msg,
			  sizeof(msg));
	CHECK(rc == 0);
	CHECK_STR(resp.body, "secure");
	http_response_release(&resp);
}

TEST(https_ca_from_environment)
{
	struct http_response resp;
	char msg[512];
	int rc;

	setenv("CURL_CA_BUNDLE", https_ca, 1);
	rc = http_request("GET", url_of(https_peer, "/big?n=3"), NULL, 0, &fast, &resp, msg,
			  sizeof(msg));
	unsetenv("CURL_CA_BUNDLE");
	CHECK(rc == 0);
	CHECK_STR(resp.body, "012");
	http_response_release(&resp);
}

TEST(https_system_store_rejects)
{
	struct http_response resp;
	char msg[512];
	int rc;

	unsetenv("CURL_CA_BUNDLE");
	unsetenv("SSL_CERT_FILE");
	rc = http_request("GET", url_of(https_peer, "/big?n=3"), NULL, 0, &fast, &resp, msg,
			  sizeof(msg));
	CHECK(rc == KERR_HTTP);
	CHECK(resp.status == 0);
	CHECK(resp.attempts == 1); /* a bad certificate is not transient */
	CHECK_CONTAINS(msg, "certificate");
	http_response_release(&resp);
}

/* The peer's URL with its host replaced by 127.0.0.1 (the certificate names both). */
static const char *by_ip(const char *path)
{
	static char u[512];
	const char *port = strrchr(https_peer, ':');

	snprintf(u, sizeof(u), "https://127.0.0.1%s%s", port, path);
	return u;
}

/* kubeconfig's tls-server-name: the certificate is checked for that name. */
TEST(tls_server_name)
{
	struct http_opts opts = fast;
	struct http_response resp;
	char msg[512];

	opts.ca_file = https_ca;
	opts.tls_server_name = "localhost";
	CHECK(http_request("GET", by_ip("/big?n=2"), NULL, 0, &opts, &resp, msg, sizeof(msg)) == 0);
	CHECK_STR(resp.body, "01");
	http_response_release(&resp);
	opts.tls_server_name = "not-in-the-certificate.example";
	CHECK(http_request("GET", by_ip("/big?n=2"), NULL, 0, &opts, &resp, msg, sizeof(msg)) ==
	      KERR_HTTP);
	CHECK(resp.status == 0 && resp.attempts == 1);
	http_response_release(&resp);
}

/* certificate-authority-data: the CA as PEM text; another CA fails. */
TEST(ca_as_pem_text)
{
	struct http_opts opts = fast;
	struct http_response resp;
	char msg[512], *pem = NULL;
	size_t len = 0;
	FILE *f = fopen(https_ca, "r");

	CHECK(f != NULL);
	if (!f)
		return;
	pem = calloc(1, 65536);
	len = fread(pem, 1, 65535, f);
	fclose(f);
	CHECK(len > 100);
	opts.ca_pem = pem;
	CHECK(http_request("GET", url_of(https_peer, "/big?n=1"), NULL, 0, &opts, &resp, msg,
			   sizeof(msg)) == 0);
	http_response_release(&resp);
	/* one changed byte inside the base64 body: no longer that CA */
	pem[len / 2] = pem[len / 2] == 'A' ? 'B' : 'A';
	CHECK(http_request("GET", url_of(https_peer, "/big?n=1"), NULL, 0, &opts, &resp, msg,
			   sizeof(msg)) == KERR_HTTP);
	http_response_release(&resp);
	free(pem);
}

/* insecure_skip_verify is the caller's explicit choice (a kubeconfig's). */
TEST(insecure_only_when_asked)
{
	struct http_opts opts = fast;
	struct http_response resp;
	char msg[512];

	unsetenv("CURL_CA_BUNDLE");
	unsetenv("SSL_CERT_FILE");
	opts.insecure_skip_verify = 1;
	CHECK(http_request("GET", url_of(https_peer, "/big?n=1"), NULL, 0, &opts, &resp, msg,
			   sizeof(msg)) == 0);
	http_response_release(&resp);
	opts.insecure_skip_verify = 0;
	CHECK(http_request("GET", url_of(https_peer, "/big?n=1"), NULL, 0, &opts, &resp, msg,
			   sizeof(msg)) == KERR_HTTP);
	http_response_release(&resp);
}

TEST(msg_never_holds_query)
{
	static const char *const paths[] = {
		"/status/403?X-Amz-Signature=secret&X-Amz-Expires=60",
		"/fail503/9/q?X-Amz-Signature=secret",
		"/no/such?X-Amz-Credential=AKIA%2F20240101&X-Amz-Signature=secret",
	};
	struct http_opts opts = fast;

	opts.max_attempts = 2;
	for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
		struct http_response resp;
		char msg[1024];
		int rc;

		rc = http_request("GET", url_of(http_peer, paths[i]), NULL, 0, &opts, &resp, msg,
				  sizeof(msg));
		CHECK(rc == KERR_HTTP);
		CHECK_CONTAINS(msg, "?<redacted>");
		CHECK(!strstr(msg, "X-Amz-Signature=secret"));
		CHECK(!strstr(msg, "secret"));
		/* the peer echoes the target; the kept body is not altered */
		CHECK_CONTAINS(resp.body, "secret");
		http_response_release(&resp);
	}
}

/* Retries log a warning; it must name the URL redacted. */
TEST(log_never_holds_query)
{
	struct http_response resp;
	char msg[512];
	char logged[4096] = "";
	struct test_stderr cap;
	int rc, capturing = test_stderr_begin(&cap);

	CHECK(capturing);
	if (!capturing)
		return;
	rc = http_request("GET", url_of(http_peer, "/fail503/1/logged?X-Amz-Signature=secret"),
			  NULL, 0, &fast, &resp, msg, sizeof(msg));
	test_stderr_end(&cap, logged, sizeof(logged));

	CHECK(rc == KERR_HTTP); /* key /logged was never stored */
	CHECK(resp.attempts == 2);
	CHECK_CONTAINS(logged, "HTTP 503; retrying in ");
	CHECK_CONTAINS(logged, "/fail503/1/logged?<redacted>");
	CHECK(!strstr(logged, "secret"));
	http_response_release(&resp);
}

TEST(redact_url_table)
{
	static const struct {
		const char *url;
		const char *want;
	} cases[] = {
		{ "http://h/k", "http://h/k" },
		{ "https://h:9000/b/k?X-Amz-Signature=s&a=b", "https://h:9000/b/k?<redacted>" },
		{ "https://h/k?", "https://h/k?<redacted>" },
		{ "https://h?q=1", "https://h?<redacted>" },
		{ "https://h/k#frag", "https://h/k#<redacted>" },
		{ "https://h/k?a=1#f", "https://h/k?<redacted>" },
		{ "https://user:pw@h/k?a", "https://<redacted>@h/k?<redacted>" },
		{ "http://u@h", "http://<redacted>@h" },
		{ "http://h/p@q", "http://h/p@q" }, /* an @ in the path is no userinfo */
		{ "h/k?sig=1", "h/k?<redacted>" },
		{ "", "" },
	};
	char out[128];
	char small[12];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		http_redact_url(cases[i].url, out, sizeof(out));
		CHECK_STR(out, cases[i].want);
	}
	/* truncation keeps the prefix and never reaches the query */
	http_redact_url("http://host/key?sig=secret", small, sizeof(small));
	CHECK_STR(small, "http://host");
	http_redact_url("http://host/key?sig=secret", out, 0); /* writes nothing */
}

TEST(is_url_table)
{
	static const struct {
		const char *s;
		int want;
	} cases[] = {
		{ "http://h", 1 }, { "https://h/k", 1 }, { "HTTPS://h", 1 },
		{ "http:/h", 0 },  { "ftp://h", 0 },     { "/tmp/file", 0 },
		{ "", 0 },         { "https:", 0 },      { "httpx://h", 0 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		CHECK(!!http_is_url(cases[i].s) == cases[i].want);
}

/* Returns a loopback port nothing listens on (bound, then closed). */
static int closed_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int port = -1;

	if (fd < 0)
		return -1;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (!bind(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
	    !getsockname(fd, (struct sockaddr *)&sa, &len))
		port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

TEST(connection_refused_retried)
{
	struct http_opts opts = fast;
	struct http_response resp;
	char url[128];
	char msg[512];
	int port = closed_port();
	int rc;

	CHECK(port > 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/k?X-Amz-Signature=secret", port);
	opts.max_attempts = 3;
	rc = http_request("PUT", url, "x", 1, &opts, &resp, msg, sizeof(msg));
	CHECK(rc == KERR_HTTP);
	CHECK(resp.status == 0);
	CHECK(resp.attempts == 3);
	CHECK_CONTAINS(msg, "(after 3 attempts)");
	CHECK_CONTAINS(msg, "?<redacted>");
	CHECK(!strstr(msg, "secret"));
	http_response_release(&resp);
}

TEST(refused_before_sending)
{
	static const char *const crlf[] = { "X-A: 1\r\nX-Injected: 1", NULL };
	static const struct http_opts crlf_opts = { .headers = crlf };
	static const struct {
		const char *method;
		const char *url;
		const char *body;
		const struct http_opts *opts;
	} cases[] = {
		{ "GE T", "/k", NULL, NULL },      { "", "/k", NULL, NULL },
		{ "HEAD", "/k", "x", NULL },       { "GET", "/k", "x", NULL },
		{ "GET", "/k", NULL, &crlf_opts },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct http_response resp;
		char msg[512] = "";
		size_t len = cases[i].body ? strlen(cases[i].body) : 0;
		int rc;

		rc = http_request(cases[i].method, url_of(http_peer, cases[i].url), cases[i].body,
				  len, cases[i].opts, &resp, msg, sizeof(msg));
		CHECK(rc == KERR_HTTP);
		CHECK(resp.attempts == 0);
		CHECK(resp.status == 0);
		CHECK(msg[0] != '\0');
		http_response_release(&resp);
	}
}

TEST(other_schemes_refused)
{
	struct http_response resp;
	char msg[512];
	int rc;

	rc = http_request("GET", "file:///etc/passwd", NULL, 0, &fast, &resp, msg, sizeof(msg));
	CHECK(rc == KERR_HTTP);
	CHECK(resp.status == 0);
	CHECK(resp.body == NULL);
	http_response_release(&resp);
}

int main(void)
{
	http_peer = getenv("HTTP_PEER");
	https_peer = getenv("HTTPS_PEER");
	https_ca = getenv("HTTPS_CA");
	if (!http_peer || !https_peer || !https_ca) {
		printf("test-http: skipped: HTTP_PEER, HTTPS_PEER and HTTPS_CA must be set "
		       "(run it through tests/unit/run-http-test.sh)\n");
		return 77;
	}
	log_set_prog("test-http");

	RUN(put_get_round_trip);
	RUN(path_sent_as_is);
	RUN(put_sends_content_length);
	RUN(extra_headers_sent);
	RUN(post_delete_head);
	RUN(retry_503_then_success);
	RUN(retry_503_exhausted);
	RUN(retry_stops_when_asked);
	RUN(retry_after_honoured);
	RUN(not_found_keeps_body);
	RUN(status_table);
	RUN(max_body_table);
	RUN(head_not_bound_by_content_length);
	RUN(https_with_ca);
	RUN(https_ca_from_environment);
	RUN(https_system_store_rejects);
	RUN(msg_never_holds_query);
	RUN(log_never_holds_query);
	RUN(tls_server_name);
	RUN(ca_as_pem_text);
	RUN(insecure_only_when_asked);
	RUN(redact_url_table);
	RUN(is_url_table);
	RUN(connection_refused_retried);
	RUN(refused_before_sending);
	RUN(other_schemes_refused);
	return test_summary();
}
