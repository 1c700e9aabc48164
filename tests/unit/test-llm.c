/*
 * test-llm.c - llm_complete against tests/peers/llm_server.py, a strict
 * double of both APIs on loopback (its path is argv[1]).  Every case
 * starts its own server with its own script and request log, so what a
 * case sees is what it scripted.  Times are only checked from below: the
 * machine may be busy.
 */
#include "err.h"
#include "llm.h"
#include "sbuf.h"
#include "test.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define KEY       "sk-test-0123456789abcdef"
#define WRONG_KEY "sk-wrong-fedcba9876543210"
#define SYSTEM    "You are a careful OpenCL engineer."

static const char *server_py;
static char tmpdir[] = "/tmp/test-llm.XXXXXX";
static int peer_serial;

/* An answer with what breaks naive parsers: quotes, backslashes, UTF-8, CR, SSE lookalikes. */
static const char opencl_text[] =
	"```c\n"
	"__kernel void scale(__global float *x, const float a) /* \"quoted\" */\n"
	"{\n"
	"\tsize_t i = get_global_id(0);\n"
	"\tx[i] *= a; // a\\b and \\n are not escapes here\n"
	"\tprintf(\"%d\\n\", (int)i);\n"
	"}\n"
	"```\n"
	"Unicode: \xce\xbb \xe2\x86\x92 \xf0\x9f\x9a\x80 caf\xc3\xa9\n"
	"\n\ndata: [DONE]\n\nevent: message_stop\n: not a comment\r\n"
	"a CR\r, a tab\t and the end.";

struct peer {
	pid_t pid;
	char script[256];
	char log[256];
	char base[64];
};

/* Starts the server with script (stolen); returns 0, or -1 having said why. */
static int peer_start(struct peer *p, json_t *script, const char *key)
{
	int out[2];
	char line[32] = "";
	struct pollfd pf;
	ssize_t got = 0;
	FILE *f;

	peer_serial++;
	snprintf(p->script, sizeof(p->script), "%s/script-%d.json", tmpdir, peer_serial);
	snprintf(p->log, sizeof(p->log), "%s/log-%d.jsonl", tmpdir, peer_serial);
	f = fopen(p->script, "w");
	if (!f || json_dumpf(script, f, 0) || fclose(f)) {
		fprintf(stderr, "cannot write %s\n", p->script);
		json_decref(script);
		return -1;
	}
	json_decref(script);
	if (pipe(out))
		return -1;
	p->pid = fork();
	if (p->pid == 0) {
		dup2(out[1], 1);
		close(out[0]);
		close(out[1]);
		if (key)
			execlp("python3", "python3", server_py, "--script", p->script, "--log",
			       p->log, "--key", key, "--lifetime", "600", (char *)NULL);
		else
			execlp("python3", "python3", server_py, "--script", p->script, "--log",
			       p->log, "--lifetime", "600", (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	pf = (struct pollfd){ .fd = out[0], .events = POLLIN };
	while (!strchr(line, '\n') && (size_t)got < sizeof(line) - 1 && poll(&pf, 1, 60000) == 1) {
		ssize_t k = read(out[0], line + got, sizeof(line) - 1 - (size_t)got);

		if (k <= 0)
			break;
		got += k;
	}
	close(out[0]);
	if (!strchr(line, '\n') || strtol(line, NULL, 10) <= 0) {
		fprintf(stderr, "llm_server did not start\n");
		return -1;
	}
	snprintf(p->base, sizeof(p->base), "http://127.0.0.1:%ld/v1", strtol(line, NULL, 10));
	return 0;
}

static void peer_stop(struct peer *p)
{
	if (p->pid <= 0)
		return;
	kill(p->pid, SIGTERM);
	waitpid(p->pid, NULL, 0);
	p->pid = 0;
}

/* The request log as an array of objects (caller decrefs). */
static json_t *peer_log(const struct peer *p)
{
	json_t *all = json_array();
	char buf[1 << 16];
	struct sbuf line = SBUF_INIT;
	FILE *f = fopen(p->log, "r");

	while (f && fgets(buf, sizeof(buf), f)) {
		sbuf_adds(&line, buf);
		if (line.len && line.buf[line.len - 1] == '\n') {
			json_t *rec = json_loads(line.buf, 0, NULL);

			if (rec)
				json_array_append_new(all, rec);
			sbuf_reset(&line);
		}
	}
	if (f)
		fclose(f);
	sbuf_release(&line);
	return all;
}

static json_t *J(const char *text)
{
	json_error_t err;
	json_t *v = json_loads(text, 0, &err);

	if (!v)
		fprintf(stderr, "bad test JSON: %s: %s\n", err.text, text);
	return v;
}

static struct llm_conf conf_for(enum llm_provider prov, const struct peer *p, int stream)
{
	struct llm_conf c = {
		.provider = prov,
		.model = "test-model",
		.base_url = p->base,
		.api_key = KEY,
		.stream = stream,
		.temperature = NAN,
		.top_p = NAN,
		.max_output_tokens = 123,
		.timeout_ms = 120000,
		.max_attempts = 3,
		.backoff_ms = 10,
	};
	return c;
}

/* A long answer: many lines, some UTF-8, over many stream events. */
static char *long_text(void)
{
	struct sbuf b = SBUF_INIT;

	for (int i = 0; i < 1500; i++)
		sbuf_addf(&b, "\tacc += a[%d] * b[\"%d\"]; /* \xce\xb1\\%d */\n", i, i, i % 7);
	return sbuf_detach(&b, NULL);
}

/* Asks a server scripted with one answer; checks text, tokens, finish and attempts. */
static void check_answer(enum llm_provider prov, int stream, const char *text, const char *finish,
			 int chunk, const char *framing)
{
	struct peer p = { 0 };
	struct llm_reply r;
	struct llm_conf c;
	char msg[512] = "";
	json_t *e = json_pack("{s:s, s:i, s:i, s:s, s:i, s:s}", "text", text, "input_tokens", 17,
			      "output_tokens", 42, "finish", finish, "chunk", chunk, "model",
			      "served-model");
	int rc;

	if (framing)
		json_object_set_new(e, "framing", J(framing));
	if (peer_start(&p, json_pack("[o]", e), KEY)) {
		CHECK(0);
		return;
	}
	c = conf_for(prov, &p, stream);
	rc = llm_complete(&c, SYSTEM, "Make it faster.", &r, msg, sizeof(msg));
	if (rc)
		fprintf(stderr, "llm_complete: %s\n", msg);
	CHECK(rc == 0);
	CHECK(r.text && strlen(r.text) == strlen(text) && !strcmp(r.text, text));
	CHECK(r.input_tokens == 17);
	CHECK(r.output_tokens == 42);
	CHECK_STR(r.finish, finish);
	CHECK_STR(r.model, "served-model");
	CHECK(r.attempts == 1);
	CHECK(r.ms > 0);
	llm_reply_release(&r);
	peer_stop(&p);
}

TEST(openai_whole)
{
	char *big = long_text();

	check_answer(LLM_OPENAI, 0, opencl_text, "stop", 16, NULL);
	check_answer(LLM_OPENAI, 0, big, "length", 16, NULL);
	check_answer(LLM_OPENAI, 0, "", "stop", 16, NULL);
	free(big);
}

TEST(openai_stream)
{
	char *big = long_text();

	check_answer(LLM_OPENAI, 1, opencl_text, "stop", 5, NULL);
	check_answer(LLM_OPENAI, 1, opencl_text, "stop", 3,
		     "[\"crlf\", \"comments\", \"multiline\"]");
	check_answer(LLM_OPENAI, 1, big, "length", 7, NULL);
	free(big);
}

TEST(anthropic_whole)
{
	char *big = long_text();

	check_answer(LLM_ANTHROPIC, 0, opencl_text, "end_turn", 16, NULL);
	check_answer(LLM_ANTHROPIC, 0, big, "max_tokens", 16, NULL);
	free(big);
}

TEST(anthropic_stream)
{
	char *big = long_text();

	check_answer(LLM_ANTHROPIC, 1, opencl_text, "end_turn", 4, NULL);
	check_answer(LLM_ANTHROPIC, 1, opencl_text, "end_turn", 9,
		     "[\"crlf\", \"comments\", \"multiline\"]");
	check_answer(LLM_ANTHROPIC, 1, big, "max_tokens", 11, NULL);
	free(big);
}

/* Runs one call against script; returns rc, leaves r and msg to the caller. */
static int ask(struct peer *p, const char *script, enum llm_provider prov, int stream,
	       struct llm_conf *tweak, struct llm_reply *r, char *msg, size_t n)
{
	struct llm_conf c;
	int rc;

	memset(r, 0, sizeof(*r));
	if (peer_start(p, J(script), KEY))
		return -1000;
	c = conf_for(prov, p, stream);
	if (tweak) {
		if (tweak->api_key)
			c.api_key = tweak->api_key;
		if (tweak->max_attempts)
			c.max_attempts = tweak->max_attempts;
		if (tweak->max_answer_bytes)
			c.max_answer_bytes = tweak->max_answer_bytes;
		if (tweak->timeout_ms)
			c.timeout_ms = tweak->timeout_ms;
		if (tweak->retry_after_cap_ms)
			c.retry_after_cap_ms = tweak->retry_after_cap_ms;
	}
	rc = llm_complete(&c, SYSTEM, "Make it faster.", r, msg, n);
	return rc;
}

/* The t of request i in the log, or NAN. */
static double log_time(json_t *log, size_t i)
{
	json_t *t = json_object_get(json_array_get(log, i), "t");

	return t ? json_number_value(t) : NAN;
}

TEST(retry_after_429)
{
	static const struct {
		enum llm_provider prov;
		int stream;
	} cases[] = { { LLM_OPENAI, 0 }, { LLM_ANTHROPIC, 1 } };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct peer p = { 0 };
		struct llm_reply r;
		char msg[512] = "";
		json_t *log;
		int rc = ask(&p, "[{\"fail\": \"429\", \"retry_after\": 1}, {\"text\": \"ok\"}]",
			     cases[i].prov, cases[i].stream, NULL, &r, msg, sizeof(msg));

		CHECK(rc == 0);
		CHECK_STR(r.text, "ok");
		CHECK(r.attempts == 2);
		CHECK(r.ms >= 900); /* backoff_ms is 10: only Retry-After makes it wait */
		log = peer_log(&p);
		CHECK(json_array_size(log) == 2);
		CHECK(log_time(log, 1) - log_time(log, 0) >= 0.9);
		json_decref(log);
		llm_reply_release(&r);
		peer_stop(&p);
	}
}

TEST(retry_after_capped)
{
	struct peer p = { 0 };
	struct llm_reply r;
	struct llm_conf t = { .retry_after_cap_ms = 50 };
	char msg[512] = "";
	int rc = ask(&p, "[{\"fail\": \"429\", \"retry_after\": 3600}, {\"text\": \"ok\"}]",
		     LLM_OPENAI, 1, &t, &r, msg, sizeof(msg));

	CHECK(rc == 0);
	CHECK_STR(r.text, "ok");
	CHECK(r.attempts == 2);
	llm_reply_release(&r);
	peer_stop(&p);
}

/* Passing failures, then the answer: each is retried once. */
TEST(transient_then_success)
{
	static const struct {
		const char *script;
		enum llm_provider prov;
		int stream;
	} cases[] = {
		{ "[{\"fail\": \"500\"}, {\"text\": \"after 500\"}]", LLM_OPENAI, 0 },
		{ "[{\"fail\": \"500\"}, {\"text\": \"after 500\"}]", LLM_ANTHROPIC, 1 },
		{ "[{\"fail\": \"529\"}, {\"text\": \"after 529\"}]", LLM_ANTHROPIC, 0 },
		{ "[{\"fail\": \"503\"}, {\"text\": \"after 503\"}]", LLM_OPENAI, 1 },
		{ "[{\"fail\": \"cut\", \"text\": \"a long enough text to cut in two\", \"chunk\": "
		  "2},"
		  " {\"text\": \"after cut\"}]",
		  LLM_OPENAI, 1 },
		{ "[{\"fail\": \"cut\", \"text\": \"a long enough text to cut in two\", \"chunk\": "
		  "2},"
		  " {\"text\": \"after cut\"}]",
		  LLM_ANTHROPIC, 1 },
		{ "[{\"fail\": \"cut\", \"text\": \"a long enough text to cut in two\"},"
		  " {\"text\": \"after cut\"}]",
		  LLM_OPENAI, 0 },
		{ "[{\"fail\": \"truncate\", \"text\": \"a long enough text to cut in two\","
		  " \"chunk\": 2}, {\"text\": \"after truncate\"}]",
		  LLM_OPENAI, 1 },
		{ "[{\"fail\": \"truncate\", \"text\": \"a long enough text to cut in two\","
		  " \"chunk\": 2}, {\"text\": \"after truncate\"}]",
		  LLM_ANTHROPIC, 1 },
		{ "[{\"fail\": \"overloaded\", \"text\": \"half of this, then an error\", "
		  "\"chunk\": 2},"
		  " {\"text\": \"after overloaded\"}]",
		  LLM_ANTHROPIC, 1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct peer p = { 0 };
		struct llm_reply r;
		char msg[512] = "";
		const char *want = strstr(cases[i].script, "\"after ");
		char buf[64];
		int rc = ask(&p, cases[i].script, cases[i].prov, cases[i].stream, NULL, &r, msg,
			     sizeof(msg));

		snprintf(buf, sizeof(buf), "%.*s", (int)strcspn(want + 1, "\""), want + 1);
		if (rc || r.attempts != 2)
			fprintf(stderr, "case %zu: rc %d attempts %d: %s\n", i, rc, r.attempts,
				msg);
		CHECK(rc == 0);
		CHECK_STR(r.text, buf);
		CHECK(r.attempts == 2);
		llm_reply_release(&r);
		peer_stop(&p);
	}
}

/* 4xx other than 429 are final; msg quotes the server and never the key. */
TEST(final_errors)
{
	static const struct {
		const char *script;
		enum llm_provider prov;
		int stream;
		const char *key;
		const char *want;
	} cases[] = {
		{ "[{\"fail\": \"400\", \"message\": \"max_tokens: too large for this model\"}]",
		  LLM_ANTHROPIC, 0, NULL,
		  "anthropic: HTTP 400 invalid_request_error: max_tokens: too large for this "
		  "model" },
		{ "[{\"fail\": \"400\", \"message\": \"messages: bad\"}]", LLM_OPENAI, 1, NULL,
		  "openai: HTTP 400 invalid_request_error: messages: bad" },
		{ "[{\"text\": \"unused\"}]", LLM_OPENAI, 0, WRONG_KEY,
		  "openai: HTTP 401 invalid_api_key: Incorrect API key provided: <redacted>" },
		{ "[{\"text\": \"unused\"}]", LLM_OPENAI, 1, WRONG_KEY,
		  "openai: HTTP 401 invalid_api_key: Incorrect API key provided" },
		{ "[{\"text\": \"unused\"}]", LLM_ANTHROPIC, 1, WRONG_KEY,
		  "anthropic: HTTP 401 authentication_error: invalid x-api-key" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct peer p = { 0 };
		struct llm_reply r;
		struct llm_conf t = { .api_key = cases[i].key };
		char msg[512] = "";
		int rc = ask(&p, cases[i].script, cases[i].prov, cases[i].stream, &t, &r, msg,
			     sizeof(msg));

		CHECK(rc == KERR_HTTP);
		CHECK(r.attempts == 1);
		CHECK(r.text == NULL);
		CHECK_CONTAINS(msg, cases[i].want);
		CHECK(!strstr(msg, KEY) && !strstr(msg, WRONG_KEY));
		llm_reply_release(&r);
		peer_stop(&p);
	}
}

TEST(retries_exhausted)
{
	struct peer p = { 0 };
	struct llm_reply r;
	char msg[512] = "";
	int rc = ask(&p, "[{\"fail\": \"500\", \"times\": 5, \"message\": \"boom\"}]", LLM_OPENAI,
		     1, NULL, &r, msg, sizeof(msg));
	json_t *log = peer_log(&p);

	CHECK(rc == KERR_HTTP);
	CHECK(r.attempts == 3);
	CHECK_CONTAINS(msg, "openai: HTTP 500 server_error: boom");
	CHECK_CONTAINS(msg, "3 attempts");
	CHECK(json_array_size(log) == 3);
	json_decref(log);
	llm_reply_release(&r);
	peer_stop(&p);
}

TEST(timeouts)
{
	struct peer p = { 0 };
	struct llm_reply r;
	struct llm_conf t = { .timeout_ms = 500, .max_attempts = 2 };
	char msg[512] = "";
	int rc = ask(&p, "[{\"delay\": 4, \"text\": \"late\", \"times\": 2}]", LLM_ANTHROPIC, 1, &t,
		     &r, msg, sizeof(msg));

	CHECK(rc == KERR_TIMEOUT);
	CHECK(r.attempts == 2);
	CHECK(r.ms >= 900);
	CHECK_CONTAINS(msg, "anthropic: ");
	llm_reply_release(&r);
	peer_stop(&p);
}

TEST(answer_limit)
{
	for (int stream = 0; stream < 2; stream++) {
		for (int prov = 0; prov < 2; prov++) {
			struct peer p = { 0 };
			struct llm_reply r;
			struct llm_conf t = { .max_answer_bytes = 1000 };
			char script[8192];
			char msg[512] = "";
			int rc;

			snprintf(script, sizeof(script), "[{\"text\": \"%0*d\", \"chunk\": 100}]",
				 5000, 0);
			rc = ask(&p, script, (enum llm_provider)prov, stream, &t, &r, msg,
				 sizeof(msg));
			CHECK(rc == KERR_LIMIT);
			CHECK(r.attempts == 1);
			CHECK(r.text == NULL);
			llm_reply_release(&r);
			peer_stop(&p);
		}
	}
}

TEST(no_server)
{
	struct peer p = { .base = "http://127.0.0.1:1/v1" };
	struct llm_conf c = conf_for(LLM_OPENAI, &p, 0);
	struct llm_reply r;
	char msg[512] = "";
	int rc;

	c.max_attempts = 2;
	rc = llm_complete(&c, SYSTEM, "x", &r, msg, sizeof(msg));
	CHECK(rc == KERR_HTTP);
	CHECK(r.attempts == 2);
	CHECK_CONTAINS(msg, "openai: ");
	llm_reply_release(&r);
}

TEST(bad_conf)
{
	struct peer p = { .base = "http://127.0.0.1:1/v1" };
	struct llm_conf c = conf_for(LLM_ANTHROPIC, &p, 0);
	struct llm_reply r;
	char msg[512] = "";

	c.model = NULL;
	CHECK(llm_complete(&c, SYSTEM, "x", &r, msg, sizeof(msg)) == KERR_INVALID);
	CHECK(r.attempts == 0);
	llm_reply_release(&r);
	c.model = "m";
	CHECK(llm_complete(&c, SYSTEM, "\xff\xfe", &r, msg, sizeof(msg)) == KERR_INVALID);
	llm_reply_release(&r);
	c.base_url = "ftp://example.com";
	CHECK(llm_complete(&c, SYSTEM, "x", &r, msg, sizeof(msg)) == KERR_INVALID);
	llm_reply_release(&r);
	CHECK_STR(llm_provider_name(LLM_OPENAI), "openai");
	CHECK_STR(llm_provider_name(LLM_ANTHROPIC), "anthropic");
}

static const char *hdr(json_t *rec, const char *name)
{
	return json_string_value(json_object_get(json_object_get(rec, "headers"), name));
}

static json_t *at(json_t *obj, const char *path)
{
	char key[64];

	while (obj && *path) {
		size_t len = strcspn(path, ".");

		snprintf(key, sizeof(key), "%.*s", (int)len, path);
		if (json_is_array(obj))
			obj = json_array_get(obj, strtoul(key, NULL, 10));
		else
			obj = json_object_get(obj, key);
		path += len + (path[len] == '.');
	}
	return obj;
}

/* What went over the wire: path, headers, the key only where it belongs, the body's shape. */
TEST(request_openai)
{
	struct peer p = { 0 };
	struct llm_conf c;
	struct llm_reply r;
	char msg[512] = "";
	json_t *log, *rec, *body;

	if (peer_start(&p, J("[{\"text\": \"a\", \"times\": 2}]"), KEY)) {
		CHECK(0);
		return;
	}
	c = conf_for(LLM_OPENAI, &p, 1);
	c.temperature = 0.5;
	CHECK(llm_complete(&c, SYSTEM, "the prompt", &r, msg, sizeof(msg)) == 0);
	llm_reply_release(&r);
	c.stream = 0;
	c.temperature = NAN;
	c.top_p = 0.25;
	c.max_output_tokens = 0;
	CHECK(llm_complete(&c, NULL, "second", &r, msg, sizeof(msg)) == 0);
	llm_reply_release(&r);
	log = peer_log(&p);
	CHECK(json_array_size(log) == 2);

	rec = json_array_get(log, 0);
	body = json_object_get(rec, "body");
	CHECK_STR(json_string_value(json_object_get(rec, "method")), "POST");
	CHECK_STR(json_string_value(json_object_get(rec, "path")), "/v1/chat/completions");
	CHECK_STR(json_string_value(json_object_get(rec, "key")), "match");
	CHECK(json_is_false(json_object_get(rec, "key_elsewhere")));
	CHECK_STR(hdr(rec, "authorization"), "Bearer <key:match>");
	CHECK(hdr(rec, "x-api-key") == NULL);
	CHECK_STR(hdr(rec, "content-type"), "application/json");
	CHECK(hdr(rec, "expect") == NULL);
	CHECK_STR(json_string_value(at(body, "model")), "test-model");
	CHECK(json_integer_value(at(body, "max_tokens")) == 123);
	CHECK(json_is_true(at(body, "stream")));
	CHECK(json_is_true(at(body, "stream_options.include_usage")));
	CHECK(json_number_value(at(body, "temperature")) == 0.5);
	CHECK(at(body, "top_p") == NULL);
	CHECK(json_array_size(at(body, "messages")) == 2);
	CHECK_STR(json_string_value(at(body, "messages.0.role")), "system");
	CHECK_STR(json_string_value(at(body, "messages.0.content")), SYSTEM);
	CHECK_STR(json_string_value(at(body, "messages.1.role")), "user");
	CHECK_STR(json_string_value(at(body, "messages.1.content")), "the prompt");
	CHECK(at(body, "system") == NULL);

	body = json_object_get(json_array_get(log, 1), "body");
	CHECK(at(body, "stream") == NULL);
	CHECK(at(body, "stream_options") == NULL);
	CHECK(at(body, "temperature") == NULL);
	CHECK(json_number_value(at(body, "top_p")) == 0.25);
	CHECK(json_integer_value(at(body, "max_tokens")) == 4096);
	CHECK(json_array_size(at(body, "messages")) == 1);
	CHECK_STR(json_string_value(at(body, "messages.0.content")), "second");
	json_decref(log);
	peer_stop(&p);
}

TEST(request_anthropic)
{
	struct peer p = { 0 };
	struct llm_conf c;
	struct llm_reply r;
	char msg[512] = "";
	json_t *log, *rec, *body;

	if (peer_start(&p, J("[{\"text\": \"a\", \"times\": 2}]"), KEY)) {
		CHECK(0);
		return;
	}
	c = conf_for(LLM_ANTHROPIC, &p, 1);
	CHECK(llm_complete(&c, SYSTEM, "the prompt", &r, msg, sizeof(msg)) == 0);
	llm_reply_release(&r);
	c.stream = 0;
	c.max_output_tokens = 0;
	CHECK(llm_complete(&c, "", "second", &r, msg, sizeof(msg)) == 0);
	llm_reply_release(&r);
	log = peer_log(&p);
	CHECK(json_array_size(log) == 2);

	rec = json_array_get(log, 0);
	body = json_object_get(rec, "body");
	CHECK_STR(json_string_value(json_object_get(rec, "path")), "/v1/messages");
	CHECK_STR(json_string_value(json_object_get(rec, "key")), "match");
	CHECK(json_is_false(json_object_get(rec, "key_elsewhere")));
	CHECK_STR(hdr(rec, "x-api-key"), "<key:match>");
	CHECK(hdr(rec, "authorization") == NULL);
	CHECK_STR(hdr(rec, "anthropic-version"), "2023-06-01");
	CHECK_STR(hdr(rec, "content-type"), "application/json");
	CHECK_STR(json_string_value(at(body, "model")), "test-model");
	CHECK(json_integer_value(at(body, "max_tokens")) == 123);
	CHECK(json_is_true(at(body, "stream")));
	CHECK(at(body, "stream_options") == NULL);
	CHECK(at(body, "temperature") == NULL);
	CHECK_STR(json_string_value(at(body, "system")), SYSTEM);
	CHECK(json_array_size(at(body, "messages")) == 1);
	CHECK_STR(json_string_value(at(body, "messages.0.role")), "user");
	CHECK_STR(json_string_value(at(body, "messages.0.content")), "the prompt");

	body = json_object_get(json_array_get(log, 1), "body");
	CHECK(at(body, "stream") == NULL);
	CHECK(at(body, "system") == NULL);
	CHECK(json_integer_value(at(body, "max_tokens")) == 4096);
	json_decref(log);
	peer_stop(&p);
}

/* A local server without keys: nothing is sent, and the base URL may end in '/'. */
TEST(no_key)
{
	struct peer p = { 0 };
	struct llm_conf c;
	struct llm_reply r;
	char msg[512] = "", base[80];
	json_t *log;

	if (peer_start(&p, J("[{\"text\": \"keyless\"}]"), NULL)) {
		CHECK(0);
		return;
	}
	snprintf(base, sizeof(base), "%s/", p.base);
	c = conf_for(LLM_OPENAI, &p, 0);
	c.base_url = base;
	c.api_key = NULL;
	CHECK(llm_complete(&c, SYSTEM, "x", &r, msg, sizeof(msg)) == 0);
	CHECK_STR(r.text, "keyless");
	llm_reply_release(&r);
	log = peer_log(&p);
	CHECK_STR(json_string_value(at(log, "0.path")), "/v1/chat/completions");
	CHECK(hdr(json_array_get(log, 0), "authorization") == NULL);
	json_decref(log);
	peer_stop(&p);
}

/* The script's match entries serve by prompt, before the sequence. */
TEST(server_match)
{
	struct peer p = { 0 };
	struct llm_conf c;
	struct llm_reply r;
	char msg[512] = "";

	if (peer_start(&p,
		       J("[{\"match\": \"round 2\", \"text\": \"second\"},"
			 " {\"text\": \"first\"}]"),
		       KEY)) {
		CHECK(0);
		return;
	}
	c = conf_for(LLM_ANTHROPIC, &p, 1);
	CHECK(llm_complete(&c, SYSTEM, "this is round 2", &r, msg, sizeof(msg)) == 0);
	CHECK_STR(r.text, "second");
	llm_reply_release(&r);
	CHECK(llm_complete(&c, SYSTEM, "round 1", &r, msg, sizeof(msg)) == 0);
	CHECK_STR(r.text, "first");
	llm_reply_release(&r);
	CHECK(llm_complete(&c, SYSTEM, "round 2 again", &r, msg, sizeof(msg)) == 0);
	CHECK_STR(r.text, "second");
	llm_reply_release(&r);
	CHECK(llm_complete(&c, SYSTEM, "round 3", &r, msg, sizeof(msg)) == KERR_HTTP);
	CHECK_CONTAINS(msg, "no answer left");
	llm_reply_release(&r);
	peer_stop(&p);
}

static void remove_tmpdir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", tmpdir);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test-llm LLM_SERVER_PY\n");
		return 2;
	}
	server_py = argv[1];
	if (system("python3 -c '' 2>/dev/null")) {
		fprintf(stderr, "python3 is missing: skipped\n");
		return 77;
	}
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(openai_whole);
	RUN(openai_stream);
	RUN(anthropic_whole);
	RUN(anthropic_stream);
	RUN(retry_after_429);
	RUN(retry_after_capped);
	RUN(transient_then_success);
	RUN(final_errors);
	RUN(retries_exhausted);
	RUN(timeouts);
	RUN(answer_limit);
	RUN(no_server);
	RUN(bad_conf);
	RUN(request_openai);
	RUN(request_anthropic);
	RUN(no_key);
	RUN(server_match);
	remove_tmpdir();
	return test_summary();
}
