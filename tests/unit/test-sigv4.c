/*
 * test-sigv4.c - common/sigv4.c against the worked examples AWS publishes
 * for S3 ("Examples: Signature Calculations in AWS Signature Version 4" for
 * header signing, and the presigned GET of "Authenticating Requests: Using
 * Query Parameters"), plus the encoding rules for awkward keys.
 */
#include "err.h"
#include "sbuf.h"
#include "sigv4.h"
#include "test.h"
#include "arraysize.h"

#include <stdlib.h>
#include <string.h>

/* The examples' credentials and instant: Fri, 24 May 2013 00:00:00 GMT. */
static const struct sigv4_key aws_key = {
	.access_key = "AKIAIOSFODNN7EXAMPLE",
	.secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
	.region = "us-east-1",
	.service = "s3",
};
#define AWS_NOW      ((time_t)1369353600)
#define AWS_HOST     "examplebucket.s3.amazonaws.com"
#define WELCOME_HASH "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"

static const struct sigv4_pair range_hdr[] = { { "Range", "bytes=0-9" } };
static const struct sigv4_pair put_hdrs[] = {
	{ "Date", "Fri, 24 May 2013 00:00:00 GMT" },
	{ "x-amz-storage-class", "REDUCED_REDUNDANCY" },
};
static const struct sigv4_pair lifecycle_q[] = { { "lifecycle", NULL } };
static const struct sigv4_pair list_q[] = { { "max-keys", "2" }, { "prefix", "J" } };

static const struct {
	const char *what;
	struct sigv4_request req;
	const char *signature;
	const char *target;
	const char *signed_headers;
} header_cases[] = {
	{ "GET object",
	  { .method = "GET",
	    .host = AWS_HOST,
	    .path = "/test.txt",
	    .headers = range_hdr,
	    .nheaders = 1,
	    .payload_hash = SIGV4_EMPTY_SHA256,
	    .now = AWS_NOW },
	  "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
	  "/test.txt",
	  "host;range;x-amz-content-sha256;x-amz-date" },
	{ "PUT object",
	  { .method = "PUT",
	    .host = AWS_HOST,
	    .path = "/test$file.text",
	    .headers = put_hdrs,
	    .nheaders = 2,
	    .payload_hash = WELCOME_HASH,
	    .now = AWS_NOW },
	  "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
	  "/test%24file.text",
	  "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class" },
	{ "GET bucket lifecycle",
	  { .method = "GET",
	    .host = AWS_HOST,
	    .path = "/",
	    .query = lifecycle_q,
	    .nquery = 1,
	    .payload_hash = SIGV4_EMPTY_SHA256,
	    .now = AWS_NOW },
	  "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543",
	  "/?lifecycle=",
	  "host;x-amz-content-sha256;x-amz-date" },
	{ "GET bucket (list objects)",
	  { .method = "GET",
	    .host = AWS_HOST,
	    .path = "/",
	    .query = list_q,
	    .nquery = 2,
	    .payload_hash = SIGV4_EMPTY_SHA256,
	    .now = AWS_NOW },
	  "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
	  "/?max-keys=2&prefix=J",
	  "host;x-amz-content-sha256;x-amz-date" },
};

TEST(aws_header_examples)
{
	for (size_t i = 0; i < ARRAY_SIZE(header_cases); i++) {
		struct sigv4_signed s;
		char msg[256], want[512];

		CHECK(sigv4_sign(&aws_key, &header_cases[i].req, &s, msg, sizeof(msg)) == 0);
		CHECK_STR(s.signature, header_cases[i].signature);
		CHECK_STR(s.target, header_cases[i].target);
		snprintf(want, sizeof(want),
			 "Authorization: AWS4-HMAC-SHA256 "
			 "Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
			 "SignedHeaders=%s, Signature=%s",
			 header_cases[i].signed_headers, header_cases[i].signature);
		CHECK_STR(s.headers[0], want);
		CHECK_STR(s.headers[1], "x-amz-date: 20130524T000000Z");
		CHECK(s.headers[3] == NULL); /* no session token, no token header */
		if (s.signature && strcmp(s.signature, header_cases[i].signature))
			fprintf(stderr, "case '%s' canonical request:\n%s\n", header_cases[i].what,
				s.canonical);
		sigv4_signed_release(&s);
	}
}

/* The documented canonical request of the GET object example, byte for byte. */
TEST(aws_canonical_request)
{
	struct sigv4_signed s;
	char msg[256];

	CHECK(sigv4_sign(&aws_key, &header_cases[0].req, &s, msg, sizeof(msg)) == 0);
	CHECK_STR(s.canonical, "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\n"
			       "range:bytes=0-9\n"
			       "x-amz-content-sha256:" SIGV4_EMPTY_SHA256 "\n"
			       "x-amz-date:20130524T000000Z\n\n"
			       "host;range;x-amz-content-sha256;x-amz-date\n" SIGV4_EMPTY_SHA256);
	CHECK_STR(s.string_to_sign,
		  "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
		  "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
	sigv4_signed_release(&s);
}

TEST(aws_presigned_get)
{
	struct sigv4_request r = {
		.method = "GET", .host = AWS_HOST, .path = "/test.txt", .now = AWS_NOW
	};
	struct sigv4_signed s;
	char msg[256];

	CHECK(sigv4_presign(&aws_key, &r, 86400, &s, msg, sizeof(msg)) == 0);
	CHECK_STR(s.signature, "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
	CHECK_STR(s.target, "/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
			    "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2F"
			    "aws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400"
			    "&X-Amz-SignedHeaders=host&X-Amz-Signature="
			    "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
	CHECK(s.headers && s.headers[0] == NULL);
	sigv4_signed_release(&s);
}

/* A session token is signed in both forms; changing it changes the signature. */
TEST(session_token)
{
	struct sigv4_key k = aws_key;
	struct sigv4_request r = {
		.method = "GET", .host = AWS_HOST, .path = "/test.txt", .now = AWS_NOW
	};
	struct sigv4_signed a, b, p;
	char msg[256];

	k.session_token = "FQoGZXIvYXdzE+token/with=chars";
	CHECK(sigv4_sign(&k, &r, &a, msg, sizeof(msg)) == 0);
	CHECK_CONTAINS(a.headers[0], "SignedHeaders=host;x-amz-content-sha256;x-amz-date;"
				     "x-amz-security-token,");
	CHECK_STR(a.headers[3], "x-amz-security-token: FQoGZXIvYXdzE+token/with=chars");
	k.session_token = "FQoGZXIvYXdzE+token/with=charz";
	CHECK(sigv4_sign(&k, &r, &b, msg, sizeof(msg)) == 0);
	CHECK(a.signature && b.signature && strcmp(a.signature, b.signature));
	CHECK(sigv4_presign(&k, &r, 60, &p, msg, sizeof(msg)) == 0);
	CHECK_CONTAINS(p.target, "&X-Amz-Security-Token=FQoGZXIvYXdzE%2Btoken%2Fwith%3Dcharz&");
	CHECK_CONTAINS(p.canonical, "X-Amz-Security-Token=FQoGZXIvYXdzE%2Btoken%2Fwith%3Dcharz");
	sigv4_signed_release(&a);
	sigv4_signed_release(&b);
	sigv4_signed_release(&p);
}

/* Keys with spaces, '+', ':', unicode, and a query that needs sorting. */
TEST(encoding)
{
	static const struct {
		const char *in;
		int keep_slash;
		const char *out;
	} cases[] = {
		{ "a b", 1, "a%20b" },
		{ "1+1=2", 1, "1%2B1%3D2" },
		{ "dir/file:v1", 1, "dir/file%3Av1" },
		{ "dir/file", 0, "dir%2Ffile" },
		{ "Ünï-cødé.txt", 1, "%C3%9Cn%C3%AF-c%C3%B8d%C3%A9.txt" },
		{ "A-Z_a.z~0", 1, "A-Z_a.z~0" },
		{ "%2F*!'()", 1, "%252F%2A%21%27%28%29" },
		{ "", 1, "" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct sbuf b = SBUF_INIT;

		sigv4_encode(&b, cases[i].in, strlen(cases[i].in), cases[i].keep_slash);
		sbuf_addch(&b, '\0');
		CHECK_STR(b.buf, cases[i].out);
		sbuf_release(&b);
	}
}

TEST(query_sorted_and_encoded)
{
	static const struct sigv4_pair q[] = {
		{ "prefix", "a b/c+" },
		{ "list-type", "2" },
		{ "continuation-token", "x=y" },
		{ "encoding-type", "url" },
	};
	struct sigv4_request r = { .method = "GET",
				   .host = "127.0.0.1:18080",
				   .path = "/bkt",
				   .query = q,
				   .nquery = 4,
				   .now = AWS_NOW };
	struct sigv4_signed s;
	char msg[256];

	CHECK(sigv4_sign(&aws_key, &r, &s, msg, sizeof(msg)) == 0);
	CHECK_STR(s.target, "/bkt?continuation-token=x%3Dy&encoding-type=url&list-type=2"
			    "&prefix=a%20b%2Fc%2B");
	CHECK_CONTAINS(s.canonical, "\nhost:127.0.0.1:18080\n");
	CHECK_CONTAINS(s.headers[2], "x-amz-content-sha256: UNSIGNED-PAYLOAD");
	sigv4_signed_release(&s);
}

TEST(header_values_canonicalised)
{
	static const struct sigv4_pair h[] = { { "X-Amz-Meta-Note", "  two   words\tand  " } };
	struct sigv4_request r = { .method = "PUT",
				   .host = AWS_HOST,
				   .path = "/k",
				   .headers = h,
				   .nheaders = 1,
				   .now = AWS_NOW };
	struct sigv4_signed s;
	char msg[256];

	CHECK(sigv4_sign(&aws_key, &r, &s, msg, sizeof(msg)) == 0);
	CHECK_CONTAINS(s.canonical, "\nx-amz-meta-note:two words and\n");
	sigv4_signed_release(&s);
}

TEST(refusals)
{
	static const struct sigv4_pair bad[] = { { "x-amz-meta-a", "v\r\nInjected: 1" } };
	struct sigv4_request r = {
		.method = "GET", .host = AWS_HOST, .path = "/k", .now = AWS_NOW
	};
	struct sigv4_key nokey = aws_key;
	struct sigv4_signed s;
	char msg[256];

	CHECK(sigv4_presign(&aws_key, &r, 0, &s, msg, sizeof(msg)) == KERR_RANGE);
	CHECK(sigv4_presign(&aws_key, &r, SIGV4_MAX_EXPIRES + 1, &s, msg, sizeof(msg)) ==
	      KERR_RANGE);
	CHECK(sigv4_presign(&aws_key, &r, SIGV4_MAX_EXPIRES, &s, msg, sizeof(msg)) == 0);
	sigv4_signed_release(&s);
	nokey.secret_key = "";
	CHECK(sigv4_sign(&nokey, &r, &s, msg, sizeof(msg)) == KERR_INVALID);
	r.headers = bad;
	r.nheaders = 1;
	CHECK(sigv4_sign(&aws_key, &r, &s, msg, sizeof(msg)) == KERR_INVALID);
	CHECK(s.target == NULL);
	r.nheaders = 0;
	r.path = "no-slash";
	CHECK(sigv4_sign(&aws_key, &r, &s, msg, sizeof(msg)) == KERR_INVALID);
}

TEST(sha256)
{
	char hex[65];

	sigv4_sha256_hex("", 0, hex);
	CHECK_STR(hex, SIGV4_EMPTY_SHA256);
	sigv4_sha256_hex("Welcome to Amazon S3.", 21, hex);
	CHECK_STR(hex, WELCOME_HASH);
}

int main(void)
{
	RUN(aws_header_examples);
	RUN(aws_canonical_request);
	RUN(aws_presigned_get);
	RUN(session_token);
	RUN(encoding);
	RUN(query_sorted_and_encoded);
	RUN(header_values_canonicalised);
	RUN(refusals);
	RUN(sha256);
	return test_summary();
}
