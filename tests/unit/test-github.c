/*
 * test-github.c - controller/github.c against tests/peers/github_double.py,
 * a strict double of GitHub's REST API over TLS (run by
 * tests/unit/run-github-test.sh, which exports GITHUB_DOUBLE,
 * GITHUB_DOUBLE_CA, GITHUB_DOUBLE_TOKEN and GITHUB_DOUBLE_REPO).
 *
 * The client's clock and pause are the test's: a wait advances a fake
 * clock and is recorded, so rate-limit waits are checked exactly and take
 * no time.  Everything the client logs goes to a file (stderr redirected,
 * debug level) that is searched for the token at the end, as is every
 * message the cases saw.
 */
#include "err.h"
#include "evalrun.h"
#include "github.h"
#include "github-internal.h"
#include "http.h"
#include "log.h"
#include "sbuf.h"
#include "test.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>

extern char **environ;

static const char *base, *ca, *token, *repo;
static time_t fake_now;
static long pauses[16];
static int npauses;
static struct sbuf seen = SBUF_INIT;    /* every message the cases got */
static struct sbuf logtext = SBUF_INIT; /* everything the client logged */

#define TOKEN_ENV "GITHUB_DOUBLE_TOKEN"
#define PRE       "GitHub %s in 'kctl-test/tracking': "

static time_t fake_clock(void *arg)
{
	return fake_now;
}

static void fake_pause(void *arg, long ms)
{
	if (npauses < (int)(sizeof(pauses) / sizeof(pauses[0])))
		pauses[npauses++] = ms;
	fake_now += (ms + 999) / 1000;
}

/* The double's control endpoint: POST doc (stolen) or, with doc NULL, GET its state. */
static json_t *ctl(json_t *doc)
{
	const char *hdr[] = { "Content-Type: application/json", NULL };
	struct http_opts o = { .ca_file = ca, .headers = hdr, .max_attempts = 1 };
	struct http_response resp;
	char *url = NULL, *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	char msg[512];
	json_t *out = NULL;

	url = malloc(strlen(base) + 16);
	snprintf(url, strlen(base) + 16, "%s/__control__", base);
	if (http_request(doc ? "POST" : "GET", url, text, text ? strlen(text) : 0, &o, &resp, msg,
			 sizeof(msg)))
		fprintf(stderr, "control: %s\n", msg);
	else
		out = json_loadb(resp.body, resp.body_len, 0, NULL);
	http_response_release(&resp);
	free(text);
	free(url);
	json_decref(doc);
	return out;
}

static void ctl_do(const char *fmt_json)
{
	json_decref(ctl(json_loads(fmt_json, 0, NULL)));
}

/* Clears the double and the fake clock's record. */
static void fresh(void)
{
	ctl_do("{\"reset\": true}");
	fake_now = time(NULL);
	npauses = 0;
}

/* A client on the double with the test's clock; tweak may change opts first. */
static struct github *client(void (*tweak)(struct github_opts *))
{
	struct github_opts o = { .api_url = base,
				 .repo = repo,
				 .token = token,
				 .token_env = TOKEN_ENV,
				 .ca_file = ca,
				 .backoff_ms = 10,
				 .now = fake_clock,
				 .pause = fake_pause };
	struct github *gh = NULL;
	char msg[512];

	if (tweak)
		tweak(&o);
	if (github_new(&o, &gh, msg, sizeof(msg)))
		fprintf(stderr, "github_new: %s\n", msg);
	return gh;
}

static void keep(const char *msg)
{
	sbuf_adds(&seen, msg);
	sbuf_addch(&seen, '\n');
}

/* The double's request log (borrowed from state, which the caller decrefs). */
static json_t *requests(json_t *state)
{
	return json_object_get(state, "requests");
}

static size_t count_requests(const char *method, const char *path_part)
{
	json_t *st = ctl(NULL);
	size_t i, n = 0;
	json_t *r;

	json_array_foreach (requests(st), i, r) {
		if (!strcmp(json_string_value(json_object_get(r, "method")), method) &&
		    strstr(json_string_value(json_object_get(r, "path")), path_part))
			n++;
	}
	json_decref(st);
	return n;
}

/* Characters (code points) of valid UTF-8 s. */
static size_t chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

TEST(body_fit)
{
	static const struct {
		const char *marker, *text;
		size_t len, max;
		const char *want;
	} cases[] = {
		{ NULL, "plain", 5, 0, "plain" },
		{ "<!-- m -->", "text", 4, 0, "<!-- m -->\n\ntext" },
		{ NULL,
		  "a\xff"
		  "b",
		  3, 0,
		  "a\xef\xbf\xbd"
		  "b" },
		{ NULL, "a\0b", 3, 0,
		  "a\xef\xbf\xbd"
		  "b" },
		{ NULL, "\xc0\xaf", 2, 0, "\xef\xbf\xbd\xef\xbf\xbd" }, /* an overlong '/' */
		{ NULL, "\xe2\x82", 2, 0, "\xef\xbf\xbd\xef\xbf\xbd" }, /* a cut sequence */
		{ NULL, "", 0, 0, "" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got =
			github_body_fit(cases[i].marker, cases[i].text, cases[i].len, cases[i].max);

		CHECK_STR(got, cases[i].want);
		free(got);
	}
}

TEST(body_fit_cuts_at_a_character)
{
	static const char *const units[] = { "a", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x9a\x80" };

	for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
		struct sbuf t = SBUF_INIT;
		char *got;
		json_t *s;

		for (int i = 0; i < GITHUB_BODY_MAX + 100; i++)
			sbuf_adds(&t, units[u]);
		got = github_body_fit("<!-- m -->", t.buf, t.len, 0);
		s = json_string(got); /* NULL when not valid UTF-8 */
		CHECK(s != NULL);
		CHECK(chars(got) == GITHUB_BODY_MAX);
		CHECK(!strncmp(got, "<!-- m -->\n\n", 12));
		CHECK_CONTAINS(got, "more than GitHub's limit of 65536]");
		json_decref(s);
		free(got);
		sbuf_release(&t);
	}
}

TEST(link_next)
{
	static const struct {
		const char *header, *want; /* want NULL: no next link */
	} cases[] = {
		{ "<https://a/r/1/issues?page=2>; rel=\"next\", <https://a/r/1/issues?page=9>; "
		  "rel=\"last\"",
		  "https://a/r/1/issues?page=2" },
		{ "<https://a/x?page=1>; rel=\"prev\", <https://a/x?page=3>; rel=\"next\"",
		  "https://a/x?page=3" },
		{ "<https://a/x?page=3>; rel=\"last next\"", "https://a/x?page=3" },
		{ "<https://a/x>;rel=next", "https://a/x" },
		{ "<https://a/x> ; REL = \"Next\"", "https://a/x" },
		{ "<https://a/x?a=1,2>; rel=\"next\"", "https://a/x?a=1,2" },
		{ "<https://a/x>; title=\"rel=next, <https://evil/>; rel=next\"; rel=\"prev\"",
		  NULL },
		{ "<https://a/x>; rel=\"nextish\"", NULL },
		{ "<https://a/x>; rel=\"last\"", NULL },
		{ "<https://a/x; rel=\"next\"", NULL },
		{ "https://a/x; rel=\"next\"", NULL },
		{ "<https://a/x>; rel=\"prev\" junk, <https://a/y>; rel=\"next\"", "https://a/y" },
		{ "<https://a/x>; rel=\"next", "https://a/x" },
		{ "", NULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = github__link_next(cases[i].header);

		if (cases[i].want)
			CHECK_STR(got, cases[i].want);
		else if (got)
			fprintf(stderr, "link case %zu: got '%s', want none\n", i, got);
		CHECK(cases[i].want || !got);
		free(got);
	}
}

TEST(session_marker)
{
	char out[256];

	CHECK(github_session_marker("20261125-0543-ab12", out, sizeof(out)) == 0);
	CHECK_STR(out, "<!-- kctl-session: 20261125-0543-ab12 -->");
	CHECK(github_session_marker("a -->x", out, sizeof(out)) == KERR_INVALID);
	CHECK(github_session_marker("", out, sizeof(out)) == KERR_INVALID);
	CHECK(github_session_marker(NULL, out, sizeof(out)) == KERR_INVALID);
}

TEST(env_api_url)
{
	unsetenv("GITHUB_API_URL");
	CHECK_STR(github_env_api_url(), "https://api.github.com");
	setenv("GITHUB_API_URL", "", 1);
	CHECK_STR(github_env_api_url(), "https://api.github.com");
	setenv("GITHUB_API_URL", "https://ghe.example/api/v3", 1);
	CHECK_STR(github_env_api_url(), "https://ghe.example/api/v3");
	unsetenv("GITHUB_API_URL");
}

TEST(options_refused)
{
	static const struct {
		const char *url, *repo, *token, *want;
	} cases[] = {
		{ "http://api.github.com", "o/r", "t", "GitHub API URL 'http://api.github.com'" },
		{ "ftp://x", "o/r", "t", "expected https://HOST" },
		{ "https://h/api?x=1", "o/r", "t", "no user, query or fragment" },
		{ "https://u:p@h/api", "o/r", "t", "no user, query or fragment" },
		{ NULL, "o", "t", "GitHub repository 'o'" },
		{ NULL, "o/r/x", "t", "GitHub repository 'o/r/x'" },
		{ NULL, "/r", "t", "GitHub repository '/r'" },
		{ NULL, "o/", "t", "GitHub repository 'o/'" },
		{ NULL, "o/..", "t", "GitHub repository 'o/..'" },
		{ NULL, "-o/r", "t", "GitHub repository '-o/r'" },
		{ NULL, "o b/r", "t", "GitHub repository 'o b/r'" },
		{ NULL, "o/r?x", "t", "GitHub repository 'o/r?x'" },
		{ NULL, "o/r", "", "GitHub token from $T: expected a non-empty token" },
		{ NULL, "o/r", "sec ret", "GitHub token from $T: expected a non-empty token" },
		{ NULL, "o/r", "sec\x01ret", "GitHub token: control characters" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct github_opts o = { .api_url = cases[i].url,
					 .repo = cases[i].repo,
					 .token = cases[i].token,
					 .token_env = "T" };
		struct github *gh = (struct github *)&o;
		char msg[512];

		CHECK(github_new(&o, &gh, msg, sizeof(msg)) == KERR_INVALID);
		CHECK(gh == NULL);
		CHECK_CONTAINS(msg, cases[i].want);
		if (*cases[i].token)
			CHECK(!strstr(msg, "sec"));
	}
}

/* Issues the happy path needs: a decoy pull request and closed issue with the marker. */
static void seed(const char *marker, int count, int before)
{
	json_t *issues = json_array();

	for (int i = 0; i < count; i++) {
		char body[128];

		snprintf(body, sizeof(body), "filler %d <!-- kctl-session: other-%d -->", i, i);
		json_array_append_new(issues, json_pack("{s:s, s:s, s:[s]}", "title", "filler",
							"body", body, "labels", "kctl"));
	}
	if (before) {
		json_array_append_new(issues,
				      json_pack("{s:s, s:s, s:[s], s:b}", "title", "pr", "body",
						marker, "labels", "kctl", "pull_request", 1));
		json_array_append_new(issues,
				      json_pack("{s:s, s:s, s:[s], s:s}", "title", "old", "body",
						marker, "labels", "kctl", "state", "closed"));
	}
	json_decref(ctl(json_pack("{s:o}", "issues", issues)));
}

/* Checks what every request of the log carried: the headers and the token's place. */
static void check_request_headers(void)
{
	json_t *st = ctl(NULL);
	size_t i, n = 0;
	json_t *r;

	json_array_foreach (requests(st), i, r) {
		json_t *h = json_object_get(r, "headers");

		CHECK_STR(json_string_value(json_object_get(r, "auth")), "match");
		CHECK(json_is_false(json_object_get(r, "token_elsewhere")));
		CHECK_STR(json_string_value(json_object_get(h, "accept")),
			  "application/vnd.github+json");
		CHECK_STR(json_string_value(json_object_get(h, "x-github-api-version")),
			  "2022-11-28");
		CHECK(!strncmp(json_string_value(json_object_get(h, "user-agent")), "kctl/", 5));
		n++;
	}
	CHECK(n > 0);
	json_decref(st);
}

TEST(happy_path)
{
	const char *labels[] = { "kctl", "kctl-session", NULL };
	struct github *gh;
	char marker[128], msg[512] = "";
	long long number = 0, found = -1, cid = 0, cfound = 0;
	json_t *st, *issue, *c;

	fresh();
	gh = client(NULL);
	github_session_marker("s-42", marker, sizeof(marker));
	seed(marker, 3, 1);
	CHECK(github_issue_create(gh, "kctl session s-42: matmul", marker, "Round 0 \xce\xbb",
				  labels, &number, msg, sizeof(msg)) == 0);
	keep(msg);
	CHECK(number == 6);
	seed(marker, 250, 0); /* newest first: the issue is now on page 3 */
	CHECK(github_issue_find(gh, "kctl-session", marker, &found, msg, sizeof(msg)) == 0);
	CHECK(found == number); /* the one issue with that label */
	CHECK(count_requests("GET", "/repositories/") == 0);
	/* 256 issues labelled kctl: the pull request and the closed issue that
	   carry the marker too are passed over */
	CHECK(github_issue_find(gh, "kctl", marker, &found, msg, sizeof(msg)) == 0);
	keep(msg);
	CHECK(found == number);
	CHECK(count_requests("GET", "/repositories/4242/issues") == 2); /* pages 2 and 3 */
	CHECK(github_issue_find(gh, NULL, "<!-- kctl-session: nobody -->", &found, msg,
				sizeof(msg)) == 0);
	CHECK(found == 0);

	CHECK(github_comment_add(gh, number, "<!-- kctl-round: 1 -->", "| round | best |", &cid,
				 msg, sizeof(msg)) == 0);
	keep(msg);
	CHECK(cid > 0);
	CHECK(github_comment_update(gh, cid, "<!-- kctl-round: 1 -->", "| round | 1.9x |", msg,
				    sizeof(msg)) == 0);
	CHECK(github_comment_find(gh, number, "<!-- kctl-round: 1 -->", &cfound, msg,
				  sizeof(msg)) == 0);
	CHECK(cfound == cid);
	CHECK(github_comment_find(gh, number, "<!-- kctl-round: 2 -->", &cfound, msg,
				  sizeof(msg)) == 0);
	CHECK(cfound == 0);
	CHECK(github_issue_close(gh, number, msg, sizeof(msg)) == 0);
	keep(msg);

	st = ctl(NULL);
	issue = json_array_get(json_object_get(st, "issues"), (size_t)number - 1);
	CHECK_STR(json_string_value(json_object_get(issue, "state")), "closed");
	CHECK_STR(json_string_value(json_object_get(issue, "state_reason")), "completed");
	CHECK_STR(json_string_value(json_object_get(issue, "body")),
		  "<!-- kctl-session: s-42 -->\n\nRound 0 \xce\xbb");
	CHECK(json_array_size(json_object_get(issue, "labels")) == 2);
	c = json_array_get(json_object_get(st, "comments"), 0);
	CHECK_STR(json_string_value(json_object_get(c, "body")),
		  "<!-- kctl-round: 1 -->\n\n| round | 1.9x |");
	json_decref(st);
	check_request_headers();
	github_free(gh);
}

TEST(long_body_accepted)
{
	struct github *gh;
	struct sbuf t = SBUF_INIT;
	char msg[512] = "";
	long long number = 0;
	json_t *st;

	fresh();
	gh = client(NULL);
	for (int i = 0; i < 70000; i++)
		sbuf_adds(&t, "\xe2\x82\xac");
	CHECK(github_issue_create(gh, "long", "<!-- m -->", t.buf, NULL, &number, msg,
				  sizeof(msg)) == 0);
	keep(msg);
	st = ctl(NULL);
	CHECK(chars(json_string_value(json_object_get(
		      json_array_get(json_object_get(st, "issues"), 0), "body"))) == 65536);
	json_decref(st);
	sbuf_release(&t);
	github_free(gh);
}

static void wrong_token(struct github_opts *o)
{
	o->token = "github_pat_wrong";
}

static void small_body(struct github_opts *o)
{
	o->max_body = 1 << 20;
}

static void five_pages(struct github_opts *o)
{
	o->max_pages = 5;
}

static void growing(struct github_opts *o)
{
	o->secondary_wait_s = 10;
}

/* Runs op on a fresh double with plan queued; checks rc and the message. */
struct fault_case {
	const char *plan; /* JSON array */
	const char *op;   /* create, find, comment, close, update */
	void (*tweak)(struct github_opts *);
	int rc;
	const char *want; /* the whole message, or its start when prefix */
	int prefix;
};

static int run_op(struct github *gh, const char *op, long long issue, char *msg, size_t n)
{
	long long out = 0;

	if (!strcmp(op, "create"))
		return github_issue_create(gh, "t", "<!-- kctl-session: f -->", "b", NULL, &out,
					   msg, n);
	if (!strcmp(op, "find"))
		return github_issue_find(gh, NULL, "<!-- kctl-session: f -->", &out, msg, n);
	if (!strcmp(op, "comment"))
		return github_comment_add(gh, issue, NULL, "c", &out, msg, n);
	if (!strcmp(op, "update"))
		return github_comment_update(gh, 999999, NULL, "c", msg, n);
	return github_issue_close(gh, issue, msg, n);
}

TEST(faults)
{
	static const struct fault_case cases[] = {
		{ "[{\"fault\": \"401\"}]", "create", NULL, KERR_HTTP,
		  "GitHub create issue in 'kctl-test/tracking': 401 Bad credentials (the token "
		  "from $" TOKEN_ENV " was refused)",
		  0 },
		{ "[]", "find", wrong_token, KERR_HTTP,
		  "GitHub find issue in 'kctl-test/tracking': 401 Bad credentials (the token from "
		  "$" TOKEN_ENV " was refused)",
		  0 },
		{ "[{\"fault\": \"forbidden\"}]", "comment", NULL, KERR_HTTP,
		  "GitHub add comment in 'kctl-test/tracking': 403 Resource not accessible by "
		  "personal access token (the token from $" TOKEN_ENV " may not do this: it needs "
		  "Issues read and write on the repository)",
		  0 },
		{ "[{\"fault\": \"404\"}]", "close", NULL, KERR_HTTP,
		  "GitHub close issue in 'kctl-test/tracking': 404 Not Found (no such repository, "
		  "issue or comment, or the token from $" TOKEN_ENV " cannot see it)",
		  0 },
		{ "[]", "update", NULL, KERR_HTTP,
		  "GitHub update comment in 'kctl-test/tracking': 404 Not Found (no such "
		  "repository, issue or comment, or the token from $" TOKEN_ENV " cannot see it)",
		  0 },
		{ "[{\"fault\": \"422\"}]", "create", NULL, KERR_HTTP,
		  "GitHub create issue in 'kctl-test/tracking': 422 Validation Failed: "
		  "Issue.title missing_field; name\\nhas \\x1b[31mcontrol\\x1b[0m characters",
		  0 },
		{ "[{\"fault\": \"500\"}]", "comment", NULL, KERR_HTTP,
		  "GitHub add comment in 'kctl-test/tracking': 500 Server Error", 0 },
		{ "[{\"fault\": \"500\", \"times\": 9}]", "find", NULL, KERR_HTTP,
		  "GitHub find issue in 'kctl-test/tracking': 500 Server Error", 0 },
		{ "[{\"fault\": \"not-json\"}]", "find", NULL, KERR_PARSE,
		  "GitHub find issue in 'kctl-test/tracking': 200 answer is not JSON (", 1 },
		{ "[{\"fault\": \"huge\", \"size\": 2097152}]", "find", small_body, KERR_LIMIT,
		  "GitHub find issue in 'kctl-test/tracking': GET "
		  "https://localhost:",
		  1 },
		{ "[{\"fault\": \"wrong-type\"}]", "create", NULL, KERR_PARSE,
		  "GitHub create issue in 'kctl-test/tracking': the answer's $.number: expected "
		  "an integer, got string",
		  0 },
		{ "[{\"fault\": \"foreign-link\", \"link\": "
		  "\"https://evil.example/repositories/4242/issues?page=2\"}]",
		  "find", NULL, KERR_PARSE,
		  "GitHub find issue in 'kctl-test/tracking': the next page's link "
		  "'https://evil.example/repositories/4242/issues?<redacted>' leaves ",
		  1 },
		{ "[{\"fault\": \"missing\"}]", "comment", NULL, KERR_PARSE,
		  "GitHub add comment in 'kctl-test/tracking': the answer's $.id: required key is "
		  "missing",
		  0 },
		{ "[{\"fault\": \"wrong-type\"}]", "find", NULL, KERR_PARSE,
		  "GitHub find issue in 'kctl-test/tracking': page 1: $[0].number: expected an "
		  "integer, got string",
		  0 },
		{ "[{\"fault\": \"self-link\"}]", "find", NULL, KERR_PARSE,
		  "GitHub find issue in 'kctl-test/tracking': page 1 links to itself or the first "
		  "page",
		  0 },
		{ "[{\"fault\": \"endless\", \"times\": 100}]", "find", five_pages, KERR_LIMIT,
		  "GitHub find issue in 'kctl-test/tracking': more than 5 pages (the walk stops "
		  "there)",
		  0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct github *gh;
		char msg[1024] = "", plan[512];
		long long number = 0;
		int rc;

		fresh();
		gh = client(cases[i].tweak);
		github_issue_create(gh, "target", NULL, "x", NULL, &number, msg, sizeof(msg));
		snprintf(plan, sizeof(plan), "{\"plan\": %s}", cases[i].plan);
		ctl_do(plan);
		rc = run_op(gh, cases[i].op, number, msg, sizeof(msg));
		keep(msg);
		if (rc != cases[i].rc ||
		    (cases[i].prefix ? strncmp(msg, cases[i].want, strlen(cases[i].want))
				     : strcmp(msg, cases[i].want)))
			fprintf(stderr, "case %zu: rc %d (%s)\n  got  %s\n  want %s\n", i, rc,
				kerr_str(rc), msg, cases[i].want);
		CHECK(rc == cases[i].rc);
		if (cases[i].prefix)
			CHECK(!strncmp(msg, cases[i].want, strlen(cases[i].want)));
		else
			CHECK_STR(msg, cases[i].want);
		github_free(gh);
	}
}

TEST(foreign_scheme_and_port_refused)
{
	static const struct {
		const char *start, *port;
	} links[] = { { "http://localhost:", NULL },
		      { "https://localhost:", "1" },
		      { "https://127.0.0.1:", NULL },
		      { "https://user@localhost:", NULL } };
	const char *port = strrchr(base, ':') + 1;

	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		struct github *gh;
		char link[256], plan[512], msg[1024];
		long long found = 0;

		fresh();
		gh = client(NULL);
		snprintf(link, sizeof(link), "%s%s/repositories/4242/issues", links[i].start,
			 links[i].port ? links[i].port : port);
		snprintf(plan, sizeof(plan),
			 "{\"plan\": [{\"fault\": \"foreign-link\", \"link\": \"%s\"}]}", link);
		ctl_do(plan);
		CHECK(github_issue_find(gh, NULL, "<!-- m -->", &found, msg, sizeof(msg)) ==
		      KERR_PARSE);
		keep(msg);
		CHECK_CONTAINS(msg, "leaves https://localhost:");
		CHECK(count_requests("GET", "/issues") == 1);
		github_free(gh);
	}
}

TEST(echoed_token_scrubbed)
{
	struct github *gh;
	char msg[1024] = "";
	long long number = 0;

	fresh();
	gh = client(NULL);
	ctl_do("{\"plan\": [{\"fault\": \"echo-token\"}]}");
	CHECK(github_issue_create(gh, "t", NULL, "b", NULL, &number, msg, sizeof(msg)) ==
	      KERR_HTTP);
	keep(msg);
	CHECK_CONTAINS(msg, "401 Bad credentials: got 'Bearer <redacted>'");
	CHECK(!strstr(msg, token));
	github_free(gh);
}

TEST(server_error_then_ok)
{
	struct github *gh;
	char msg[512] = "";
	long long found = -1;

	fresh();
	gh = client(NULL);
	ctl_do("{\"plan\": [{\"fault\": \"500\", \"times\": 2}]}");
	CHECK(github_issue_find(gh, NULL, "<!-- m -->", &found, msg, sizeof(msg)) == 0);
	CHECK(found == 0);
	CHECK(count_requests("GET", "/issues") == 3);
	CHECK(npauses == 2 && pauses[0] == 10 && pauses[1] == 20);
	github_free(gh);
}

TEST(create_retried_only_when_not_done)
{
	struct github *gh;
	char msg[512] = "";
	long long number = 0;
	json_t *st;

	/* a 500 before the create: nothing found by the marker, posted again */
	fresh();
	gh = client(NULL);
	ctl_do("{\"plan\": [{\"fault\": \"500\", \"method\": \"POST\"}]}");
	CHECK(github_issue_create(gh, "t", "<!-- kctl-session: c1 -->", "b", NULL, &number, msg,
				  sizeof(msg)) == 0);
	CHECK(number == 1);
	CHECK(count_requests("POST", "/issues") == 2);
	st = ctl(NULL);
	CHECK(json_array_size(json_object_get(st, "issues")) == 1);
	json_decref(st);

	/* the create done, its answer lost: found by the marker, not posted again */
	fresh();
	ctl_do("{\"plan\": [{\"fault\": \"502-after\", \"method\": \"POST\"}]}");
	CHECK(github_issue_create(gh, "t", "<!-- kctl-session: c2 -->", "b", NULL, &number, msg,
				  sizeof(msg)) == 0);
	CHECK(number == 1);
	CHECK(count_requests("POST", "/issues") == 1);
	CHECK(count_requests("GET", "/issues") == 1);
	st = ctl(NULL);
	CHECK(json_array_size(json_object_get(st, "issues")) == 1);
	json_decref(st);
	github_free(gh);
}

TEST(primary_limit_later)
{
	struct github *gh;
	char msg[1024] = "", plan[256], want[512];
	long long number = 0;
	time_t reset;

	fresh();
	gh = client(NULL);
	reset = fake_now + 3600;
	snprintf(plan, sizeof(plan), "{\"plan\": [{\"fault\": \"primary\", \"reset\": %lld}]}",
		 (long long)reset);
	ctl_do(plan);
	CHECK(github_issue_create(gh, "t", NULL, "b", NULL, &number, msg, sizeof(msg)) ==
	      KERR_LATER);
	keep(msg);
	CHECK(github_not_before(gh) == reset);
	snprintf(want, sizeof(want),
		 PRE
		 "403 rate limited: API rate limit exceeded for user ID 77. If you reach out "
		 "to GitHub Support for help, please include the request ID "
		 "0000:0000:0000000:0000000:00000000.; retry later, not before %lld (in 3600 s)",
		 "create issue", (long long)reset);
	CHECK_STR(msg, want);
	CHECK(npauses == 0);
	/* until then no request goes out */
	fake_now = reset - 1;
	CHECK(github_comment_add(gh, 1, NULL, "c", &number, msg, sizeof(msg)) == KERR_LATER);
	CHECK_CONTAINS(msg, "a rate limit asked to wait; retry later, not before");
	CHECK(count_requests("POST", "/issues") == 1);
	fake_now = reset;
	CHECK(github_not_before(gh) == 0);
	CHECK(github_issue_create(gh, "t", NULL, "b", NULL, &number, msg, sizeof(msg)) == 0);
	CHECK(number == 1);
	github_free(gh);
}

TEST(primary_limit_short_wait)
{
	struct github *gh;
	char msg[1024] = "", plan[256];
	long long number = 0;

	fresh();
	gh = client(NULL);
	snprintf(plan, sizeof(plan),
		 "{\"plan\": [{\"fault\": \"primary\", \"status\": 429, \"reset\": %lld}]}",
		 (long long)fake_now + 5);
	ctl_do(plan);
	CHECK(github_issue_create(gh, "t", NULL, "b", NULL, &number, msg, sizeof(msg)) == 0);
	CHECK(number == 1);
	CHECK(npauses == 1 && pauses[0] == 5000);
	CHECK(count_requests("POST", "/issues") == 2);

	/* a reset already past still waits a second, not a burst of retries */
	snprintf(plan, sizeof(plan), "{\"plan\": [{\"fault\": \"primary\", \"reset\": %lld}]}",
		 (long long)fake_now - 100);
	ctl_do(plan);
	CHECK(github_issue_create(gh, "t", NULL, "b", NULL, &number, msg, sizeof(msg)) == 0);
	CHECK(number == 2);
	CHECK(npauses == 2 && pauses[1] == 1000);
	github_free(gh);
}

TEST(secondary_limit_retry_after)
{
	struct github *gh;
	char msg[1024] = "";
	long long number = 0;
	time_t t0;

	fresh();
	gh = client(NULL);
	ctl_do("{\"plan\": [{\"fault\": \"secondary\", \"retry_after\": 3}]}");
	CHECK(github_issue_create(gh, "t", NULL, "b", NULL, &number, msg, sizeof(msg)) == 0);
	CHECK(npauses == 1 && pauses[0] == 3000);

	ctl_do("{\"plan\": [{\"fault\": \"secondary\", \"status\": 429, \"retry_after\": 120}]}");
	t0 = fake_now;
	CHECK(github_issue_find(gh, NULL, "<!-- m -->", &number, msg, sizeof(msg)) == KERR_LATER);
	keep(msg);
	CHECK(github_not_before(gh) == t0 + 120);
	CHECK_CONTAINS(msg, "GitHub find issue in 'kctl-test/tracking': 429 rate limited: You "
			    "have exceeded a secondary rate limit.");
	CHECK_CONTAINS(msg, "(in 120 s)");
	CHECK(npauses == 1);
	github_free(gh);
}

TEST(secondary_limit_grows)
{
	struct github *gh;
	char msg[1024] = "";
	long long number = 0;
	time_t t0;

	fresh();
	gh = client(growing);
	ctl_do("{\"plan\": [{\"fault\": \"secondary\", \"times\": 3}]}");
	t0 = fake_now;
	CHECK(github_issue_create(gh, "t", NULL, "b", NULL, &number, msg, sizeof(msg)) ==
	      KERR_LATER);
	keep(msg);
	CHECK(npauses == 2 && pauses[0] == 10000 && pauses[1] == 20000);
	CHECK(github_not_before(gh) == t0 + 30 + 40);
	CHECK_CONTAINS(msg, "(in 40 s)");
	github_free(gh);
}

static int stop_flag;

static int stop_asked(void)
{
	return stop_flag;
}

static void stoppable(struct github_opts *o)
{
	o->stop = stop_asked;
}

/* A signal (stop) ends waits: a short rate limit is not slept, a retry not made. */
TEST(stop_ends_waits)
{
	struct github *gh;
	char msg[1024] = "";
	long long number = 0;

	fresh();
	gh = client(stoppable);
	stop_flag = 1;
	ctl_do("{\"plan\": [{\"fault\": \"secondary\", \"retry_after\": 3}]}");
	CHECK(github_issue_create(gh, "t", NULL, "b", NULL, &number, msg, sizeof(msg)) ==
	      KERR_LATER);
	CHECK(npauses == 0);
	CHECK(github_not_before(gh) == fake_now + 3);
	fake_now += 3;
	ctl_do("{\"plan\": [{\"fault\": \"500\"}]}");
	CHECK(github_issue_find(gh, NULL, "<!-- m -->", &number, msg, sizeof(msg)) == KERR_HTTP);
	CHECK_STR(msg, "GitHub find issue in 'kctl-test/tracking': interrupted before attempt 2");
	CHECK(npauses == 0);
	CHECK(count_requests("GET", "/issues") == 1);
	stop_flag = 0;
	github_free(gh);
}

/* The double is strict: what the client must send, it checks. */
TEST(double_is_strict)
{
	static const struct {
		const char *headers[4];
		long status;
		const char *says;
	} cases[] = {
		{ { "Accept: application/vnd.github+json", NULL },
		  400,
		  "API version None is not supported." },
		{ { "X-GitHub-Api-Version: 2022-11-28", NULL },
		  415,
		  "Unsupported 'Accept' header" },
		{ { "X-GitHub-Api-Version: 2022-11-28", "Accept: application/vnd.github+json",
		    NULL },
		  401,
		  "Bad credentials" },
		{ { "X-GitHub-Api-Version: 2022-11-28", "Accept: application/vnd.github+json",
		    "Authorization: Bearer github_pat_wrong", NULL },
		  401,
		  "Bad credentials" },
	};
	char url[512];

	snprintf(url, sizeof(url), "%s/repos/%s/issues", base, repo);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct http_opts o = { .ca_file = ca,
				       .headers = cases[i].headers,
				       .max_attempts = 1 };
		struct http_response resp;
		char msg[512];

		CHECK(http_request("GET", url, NULL, 0, &o, &resp, msg, sizeof(msg)) == KERR_HTTP);
		CHECK(resp.status == cases[i].status);
		CHECK_CONTAINS(resp.body, cases[i].says);
		http_response_release(&resp);
	}
}

/* The token reaches no child: evalpod's environment is built without it. */
TEST(token_not_in_child_env)
{
	char **envp = evalrun_env(environ, NULL);
	int found = 0;

	CHECK(getenv(TOKEN_ENV) != NULL);
	for (char **e = envp; e && *e; e++)
		found |= strstr(*e, token) != NULL;
	CHECK(!found);
	evalrun_env_free(envp);
}

/* Neither the log nor any message holds the token; both hold something. */
TEST(log_checked)
{
	CHECK(logtext.len > 0 && seen.len > 0);
	CHECK_CONTAINS(logtext.buf, "rate limited");
	CHECK_CONTAINS(seen.buf, "Bad credentials");
	CHECK(!strstr(logtext.buf, token));
	CHECK(!strstr(seen.buf, token));
}

int main(void)
{
	char logpath[512];
	int saved = dup(2), fd;
	FILE *f;
	char buf[4096];
	size_t got;

	base = getenv("GITHUB_DOUBLE");
	ca = getenv("GITHUB_DOUBLE_CA");
	token = getenv(TOKEN_ENV);
	repo = getenv("GITHUB_DOUBLE_REPO");
	if (!base || !ca || !token || !repo) {
		fprintf(stderr, "test-github: run it through run-github-test.sh\n");
		return 77;
	}
	snprintf(logpath, sizeof(logpath), "%s/client.log",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	log_level_current = LOG_DEBUG;
	dup2(fd, 2); /* the client's log lines, and the checks' failures too */
	close(fd);

	RUN(body_fit);
	RUN(body_fit_cuts_at_a_character);
	RUN(link_next);
	RUN(session_marker);
	RUN(env_api_url);
	RUN(options_refused);
	RUN(happy_path);
	RUN(long_body_accepted);
	RUN(faults);
	RUN(foreign_scheme_and_port_refused);
	RUN(echoed_token_scrubbed);
	RUN(server_error_then_ok);
	RUN(create_retried_only_when_not_done);
	RUN(primary_limit_later);
	RUN(primary_limit_short_wait);
	RUN(secondary_limit_retry_after);
	RUN(secondary_limit_grows);
	RUN(stop_ends_waits);
	RUN(double_is_strict);
	RUN(token_not_in_child_env);

	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	f = fopen(logpath, "r");
	while (f && (got = fread(buf, 1, sizeof(buf), f)) > 0)
		sbuf_add(&logtext, buf, got);
	if (f)
		fclose(f);
	fputs(logtext.buf ? logtext.buf : "", stderr);
	RUN(log_checked);
	sbuf_release(&logtext);
	sbuf_release(&seen);
	return test_summary();
}
