/*
 * github.c - the GitHub client's operations (the contract is in
 * github.h): the client's options checked, issue and comment bodies made
 * to fit, and the REST paths of each operation with the walk over a
 * listing's pages.  One call's headers, waits and errors are
 * github-call.c's.
 *
 * May use: github-call.c (through github-internal.h), common/ (err, log,
 * jsonx, sbuf, xalloc), jansson, libcurl's escaping.
 */
#include "github-internal.h"
#include "err.h"
#include "jsonx.h"
#include "log.h"
#include "sbuf.h"
#include "xalloc.h"

#include <curl/curl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define GITHUB_TIMEOUT_MS      30000L
#define GITHUB_MAX_WAIT_S      30L
#define GITHUB_SECONDARY_S     60L
#define GITHUB_BACKOFF_MS      1000L
#define GITHUB_MAX_ATTEMPTS    4
#define GITHUB_MAX_PAGES       100
#define GITHUB_MAX_BODY        ((size_t)32 << 20)
#define GITHUB_TITLE_MAX       256 /* characters of an issue title */
#define GITHUB_OWNER_MAX       100
#define GITHUB_NAME_MAX        100
#define GITHUB_SESSION_ID_MAX  100
#define GITHUB_REPLACEMENT     "\xef\xbf\xbd" /* U+FFFD */
#define GITHUB_PER_PAGE        "100"
#define GITHUB_ISSUE_NUMBER_HI ((int64_t)1 << 53) /* ids travel as JSON numbers */

const char *github_env_api_url(void)
{
	const char *v = getenv("GITHUB_API_URL");

	return v && *v ? v : GITHUB_API_URL_DEFAULT;
}

time_t github_not_before(const struct github *gh)
{
	return gh->not_before > github__now(gh) ? gh->not_before : 0;
}

/* Length of the UTF-8 sequence at s (left bytes), 0 if it is not one (overlongs included). */
static size_t github_char_len(const unsigned char *s, size_t left)
{
	size_t len;
	uint32_t cp;

	if (*s < 0x80)
		return *s ? 1 : 0;
	len = (*s >> 5) == 6 ? 2 : (*s >> 4) == 14 ? 3 : (*s >> 3) == 30 ? 4 : 0;
	if (!len || len > left)
		return 0;
	cp = *s & (0x7f >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/*
 * Appends text (len bytes) to b as valid UTF-8 without NUL (each bad byte
 * a U+FFFD); returns the characters appended.
 */
static size_t github_add_clean(struct sbuf *b, const char *text, size_t len)
{
	size_t chars = 0;

	for (size_t i = 0; i < len; chars++) {
		size_t l = github_char_len((const unsigned char *)text + i, len - i);

		if (l)
			sbuf_add(b, text + i, l);
		else
			sbuf_adds(b, GITHUB_REPLACEMENT);
		i += l ? l : 1;
	}
	return chars;
}

/* The byte offset of character number chars in valid UTF-8 s (len bytes). */
static size_t github_char_offset(const char *s, size_t len, size_t chars)
{
	size_t i = 0;

	while (i < len && chars--)
		i += github_char_len((const unsigned char *)s + i, len - i);
	return i;
}

char *github_body_fit(const char *marker, const char *text, size_t len, size_t max)
{
	struct sbuf b = SBUF_INIT;
	size_t chars = 0;
	char note[160];
	size_t note_len, keep;

	if (!max)
		max = GITHUB_BODY_MAX;
	if (marker && *marker) {
		chars += github_add_clean(&b, marker, strlen(marker));
		sbuf_adds(&b, "\n\n");
		chars += 2;
	}
	chars += github_add_clean(&b, text ? text : "", text ? len : 0);
	if (chars <= max)
		return sbuf_detach(&b, NULL);
	note_len = (size_t)snprintf(note, sizeof(note),
				    "\n\n[kctl cut the text here: it had %zu characters, more than "
				    "GitHub's limit of %zu]",
				    chars, max);
	keep = max > note_len ? max - note_len : 0;
	b.len = github_char_offset(b.buf, b.len, keep);
	b.buf[b.len] = '\0';
	if (note_len <= max)
		sbuf_add(&b, note, note_len);
	return sbuf_detach(&b, NULL);
}

int github_session_marker(const char *id, char *out, size_t n)
{
	size_t len = id ? strlen(id) : 0;

	if (!len || len > GITHUB_SESSION_ID_MAX ||
	    strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn"
		       "opqrstuvwxyz0123456789._:-") != len)
		return kerr_set(out, n, KERR_INVALID,
				"session id '%.100s': expected 1 to %d of [A-Za-z0-9._:-]",
				id ? id : "", GITHUB_SESSION_ID_MAX);
	snprintf(out, n, "<!-- kctl-session: %s -->", id);
	return 0;
}

/* Nonzero when s is "owner/name" as GitHub allows them. */
static int github_repo_valid(const char *s)
{
	static const char word[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	const char *slash = strchr(s, '/');
	size_t owner = slash ? (size_t)(slash - s) : 0;
	size_t name = slash ? strlen(slash + 1) : 0;
	char buf[GITHUB_OWNER_MAX + 1];

	if (!owner || owner > GITHUB_OWNER_MAX || !name || name > GITHUB_NAME_MAX || *s == '-')
		return 0;
	snprintf(buf, sizeof(buf), "%.*s", (int)owner, s);
	for (const char *p = buf; *p; p++)
		if (!strchr(word, *p) && *p != '-' && *p != '_')
			return 0;
	for (const char *p = slash + 1; *p; p++)
		if (!strchr(word, *p) && !strchr("._-", *p))
			return 0;
	return strcmp(slash + 1, ".") && strcmp(slash + 1, "..");
}

/* Checks api_url: https://, a host, no user, query or fragment. */
static int github_url_check(const char *url, char *msg, size_t n)
{
	CURLU *u = curl_url();
	char *host = NULL, *scheme = NULL, *x = NULL;
	int rc = 0;

	if (!u)
		abort();
	if (curl_url_set(u, CURLUPART_URL, url, 0) ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) || strcasecmp(scheme, "https") ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) || !*host)
		rc = kerr_set(msg, n, KERR_INVALID,
			      "GitHub API URL '%.200s': expected https://HOST[/PATH]", url);
	else if (curl_url_get(u, CURLUPART_USER, &x, 0) != CURLUE_NO_USER || strpbrk(url, "?#"))
		rc = kerr_set(msg, n, KERR_INVALID,
			      "GitHub API URL: expected no user, query or fragment in it");
	curl_free(host);
	curl_free(scheme);
	curl_free(x);
	curl_url_cleanup(u);
	return rc;
}

int github_new(const struct github_opts *o, struct github **out, char *msg, size_t n)
{
	const char *url = o->api_url && *o->api_url ? o->api_url : GITHUB_API_URL_DEFAULT;
	struct github *gh;
	size_t ulen = strlen(url);
	int rc;

	*out = NULL;
	rc = github_url_check(url, msg, n);
	if (rc)
		return rc;
	if (!o->repo || !github_repo_valid(o->repo))
		return kerr_set(msg, n, KERR_INVALID,
				"GitHub repository '%.200s': expected OWNER/NAME (letters, digits, "
				"'-', '_'; the name also '.')",
				o->repo ? o->repo : "");
	if (!o->token || !*o->token || strpbrk(o->token, " \t\r\n\v\f") || strlen(o->token) > 4096)
		return kerr_set(msg, n, KERR_INVALID,
				"GitHub token%s%s: expected a non-empty token without blanks",
				o->token_env ? " from $" : "", o->token_env ? o->token_env : "");
	for (const char *p = o->token; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return kerr_set(msg, n, KERR_INVALID,
					"GitHub token: control characters in it");
	gh = xcalloc(1, sizeof(*gh));
	while (ulen > 8 && url[ulen - 1] == '/')
		ulen--;
	gh->api_url = xstrndup(url, ulen);
	gh->repo = xstrdup(o->repo);
	gh->token = xstrdup(o->token);
	gh->auth = xasprintf("Authorization: Bearer %s", o->token);
	gh->token_env = o->token_env ? xstrdup(o->token_env) : NULL;
	gh->ca_file = o->ca_file ? xstrdup(o->ca_file) : NULL;
	gh->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : GITHUB_TIMEOUT_MS;
	gh->max_wait_s = o->max_wait_s > 0 ? o->max_wait_s : GITHUB_MAX_WAIT_S;
	gh->secondary_wait_s = o->secondary_wait_s > 0 ? o->secondary_wait_s : GITHUB_SECONDARY_S;
	gh->backoff_ms = o->backoff_ms > 0 ? o->backoff_ms : GITHUB_BACKOFF_MS;
	gh->max_attempts = o->max_attempts > 0 ? o->max_attempts : GITHUB_MAX_ATTEMPTS;
	gh->max_pages = o->max_pages > 0 ? o->max_pages : GITHUB_MAX_PAGES;
	gh->max_body = o->max_body > 0 ? o->max_body : GITHUB_MAX_BODY;
	gh->stop = o->stop;
	gh->now = o->now;
	gh->pause = o->pause;
	gh->clock_arg = o->clock_arg;
	*out = gh;
	return 0;
}

static void github_wipe(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

void github_free(struct github *gh)
{
	if (!gh)
		return;
	github_wipe(gh->token);
	github_wipe(gh->auth);
	free(gh->api_url);
	free(gh->repo);
	free(gh->token_env);
	free(gh->ca_file);
	free(gh);
}

/* Called for each item of a listing: 1 to stop the walk, 0 for more, or KERR_*. */
typedef int (*github_item_fn)(void *arg, json_t *item, const char *path, char *msg, size_t n);

/*
 * Walks the listing at url page by page: each page must be a JSON array,
 * each of its items goes to fn.  Bounded by gh->max_pages; a next link
 * equal to the page's own is a loop.
 */
static int github_walk(struct github *gh, const char *what, const char *first, github_item_fn fn,
		       void *arg, char *msg, size_t n)
{
	char *url = xstrdup(first);
	int rc = 0, page = 0;

	while (url && !rc) {
		struct github_reply r;
		size_t i;
		json_t *item;

		if (++page > gh->max_pages) {
			rc = kerr_set(
				msg, n, KERR_LIMIT,
				"GitHub %s in '%s': more than %d pages (the walk stops there)",
				what, gh->repo, gh->max_pages);
			break;
		}
		rc = github__call(gh, what, "GET", url, NULL, GITHUB_RETRY_ALL, &r, msg, n);
		if (!rc && !json_is_array(r.json))
			rc = kerr_set(msg, n, KERR_PARSE,
				      "GitHub %s in '%s': page %d: expected a JSON array, got %s",
				      what, gh->repo, page, jx_type_name(r.json));
		json_array_foreach (rc ? NULL : r.json, i, item) {
			char path[64], m[512];

			snprintf(path, sizeof(path), "page %d: $[%zu]", page, i);
			rc = fn(arg, item, path, m, sizeof(m));
			if (rc < 0)
				rc = kerr_set(msg, n, rc, "GitHub %s in '%s': %s", what, gh->repo,
					      m);
			if (rc)
				break;
		}
		if (!rc && r.next && (!strcmp(r.next, first) || !strcmp(r.next, url)))
			rc = kerr_set(
				msg, n, KERR_PARSE,
				"GitHub %s in '%s': page %d links to itself or the first page",
				what, gh->repo, page);
		free(url);
		url = NULL;
		if (!rc && r.next)
			url = xstrdup(r.next);
		github__reply_release(&r);
	}
	free(url);
	return rc < 0 ? rc : 0;
}

struct github_find {
	const char *marker;
	const char *kind; /* "issue" or "comment" */
	long long found;  /* the lowest matching number or id; 0: none */
};

/* An issue or comment of a listing: checks its shape, notes a match. */
static int github_find_item(void *arg, json_t *item, const char *path, char *msg, size_t n)
{
	struct github_find *f = arg;
	int issue = !strcmp(f->kind, "issue");
	const char *key = issue ? "number" : "id";
	json_t *body;
	int64_t v = 0;
	int rc;

	if (!json_is_object(item))
		return kerr_set(msg, n, KERR_PARSE, "%s: expected an %s object, got %s", path,
				f->kind, jx_type_name(item));
	rc = jx_int(item, path, key, JX_REQUIRED, 1, GITHUB_ISSUE_NUMBER_HI, &v, msg, n);
	if (rc)
		return rc;
	body = json_object_get(item, "body");
	if (!body || (!json_is_null(body) && !json_is_string(body)))
		return kerr_set(msg, n, KERR_PARSE, "%s.body: expected a string or null, got %s",
				path, jx_type_name(body));
	if (issue && json_object_get(item, "pull_request"))
		return 0; /* the issues listing holds pull requests too */
	if (json_is_string(body) && strstr(json_string_value(body), f->marker) &&
	    (!f->found || v < f->found))
		f->found = v;
	return 0;
}

/* Nonzero when label can go into a listing's labels= filter and onto an issue. */
static int github_label_valid(const char *label)
{
	struct sbuf b = SBUF_INIT;
	size_t chars = github_add_clean(&b, label, strlen(label));
	int ok = chars && chars <= GITHUB_LABEL_MAX && !strcmp(b.buf, label) && !strchr(label, ',');

	for (const char *p = label; ok && *p; p++)
		ok = (unsigned char)*p >= 0x20 && *p != 0x7f;
	sbuf_release(&b);
	return ok;
}

int github_issue_find(struct github *gh, const char *label, const char *marker, long long *number,
		      char *msg, size_t n)
{
	struct github_find f = { .marker = marker, .kind = "issue" };
	char *url, *esc = NULL;
	int rc;

	*number = 0;
	if (!marker || !*marker)
		return kerr_set(msg, n, KERR_INVALID, "GitHub find issue: an empty marker");
	if (label && !github_label_valid(label))
		return kerr_set(msg, n, KERR_INVALID,
				"GitHub find issue: label '%.60s': expected 1 to %d characters, "
				"no comma or control character",
				label, GITHUB_LABEL_MAX);
	if (label) {
		esc = curl_easy_escape(NULL, label, 0);
		if (!esc)
			abort();
	}
	url = xasprintf("%s/repos/%s/issues?state=open&per_page=" GITHUB_PER_PAGE "%s%s",
			gh->api_url, gh->repo, esc ? "&labels=" : "", esc ? esc : "");
	rc = github_walk(gh, "find issue", url, github_find_item, &f, msg, n);
	if (!rc)
		*number = f.found;
	curl_free(esc);
	free(url);
	return rc;
}

int github_comment_find(struct github *gh, long long number, const char *marker, long long *id,
			char *msg, size_t n)
{
	struct github_find f = { .marker = marker, .kind = "comment" };
	char *url;
	int rc;

	*id = 0;
	if (!marker || !*marker || number <= 0)
		return kerr_set(msg, n, KERR_INVALID,
				"GitHub find comment: an empty marker or issue number %lld",
				number);
	url = xasprintf("%s/repos/%s/issues/%lld/comments?per_page=" GITHUB_PER_PAGE, gh->api_url,
			gh->repo, number);
	rc = github_walk(gh, "find comment", url, github_find_item, &f, msg, n);
	if (!rc)
		*id = f.found;
	free(url);
	return rc;
}

/* A body as a JSON string: fitted, with the marker first. */
static json_t *github_body_json(const char *marker, const char *body)
{
	char *text = github_body_fit(marker, body, body ? strlen(body) : 0, 0);
	json_t *s = json_string(text);

	free(text);
	if (!s)
		abort(); /* github_body_fit made it valid UTF-8: only memory can fail */
	return s;
}

/* Reads key (a positive integer) of a 2xx answer into *out. */
static int github_answer_id(const struct github *gh, const char *what, json_t *doc, const char *key,
			    long long *out, char *msg, size_t n)
{
	char m[512];
	int64_t v = 0;
	int rc;

	if (!json_is_object(doc))
		return kerr_set(msg, n, KERR_PARSE,
				"GitHub %s in '%s': expected a JSON object, got %s", what, gh->repo,
				jx_type_name(doc));
	rc = jx_int(doc, "$", key, JX_REQUIRED, 1, GITHUB_ISSUE_NUMBER_HI, &v, m, sizeof(m));
	if (rc)
		return kerr_set(msg, n, rc, "GitHub %s in '%s': the answer's %s", what, gh->repo,
				m);
	*out = v;
	return 0;
}

/* The request body of a new issue; NULL with msg when title or a label is unfit. */
static json_t *github_issue_doc(const char *title, const char *marker, const char *body,
				const char *const *labels, char *msg, size_t n)
{
	struct sbuf t = SBUF_INIT;
	size_t chars = title ? github_add_clean(&t, title, strlen(title)) : 0;
	json_t *doc = NULL, *ls = json_array();

	for (const char *const *l = labels; l && *l; l++) {
		if (!github_label_valid(*l)) {
			kerr_set(msg, n, KERR_INVALID,
				 "GitHub create issue: label '%.60s': expected 1 to %d characters, "
				 "no comma or control character",
				 *l, GITHUB_LABEL_MAX);
			goto out;
		}
		json_array_append_new(ls, json_string(*l));
	}
	if (!chars || chars > GITHUB_TITLE_MAX) {
		kerr_set(msg, n, KERR_INVALID,
			 "GitHub create issue: expected a title of 1 to %d "
			 "characters",
			 GITHUB_TITLE_MAX);
		goto out;
	}
	doc = json_pack("{s:s, s:o, s:O}", "title", t.buf, "body", github_body_json(marker, body),
			"labels", ls);
out:
	json_decref(ls);
	sbuf_release(&t);
	return doc;
}

int github_issue_create(struct github *gh, const char *title, const char *marker, const char *body,
			const char *const *labels, long long *number, char *msg, size_t n)
{
	json_t *doc = github_issue_doc(title, marker, body, labels, msg, n);
	char *url = xasprintf("%s/repos/%s/issues", gh->api_url, gh->repo);
	int rc = doc ? 0 : KERR_INVALID;

	*number = 0;
	for (int attempt = 1; doc; attempt++) {
		struct github_reply r;
		long long found = 0;

		rc = github__call(gh, "create issue", "POST", url, doc, GITHUB_RETRY_LIMITS, &r,
				  msg, n);
		if (!rc)
			rc = github_answer_id(gh, "create issue", r.json, "number", number, msg, n);
		github__reply_release(&r);
		if (!rc || !r.unsure || !marker || !*marker || attempt >= gh->max_attempts)
			break;
		log_warn("%s; looking for the issue by its marker before trying again", msg);
		github__backoff(gh, attempt);
		rc = github_issue_find(gh, NULL, marker, &found, msg, n);
		if (rc || found) {
			*number = found;
			break;
		}
	}
	json_decref(doc);
	free(url);
	return rc;
}

int github_issue_close(struct github *gh, long long number, char *msg, size_t n)
{
	json_t *doc = json_pack("{s:s, s:s}", "state", "closed", "state_reason", "completed");
	char *url = xasprintf("%s/repos/%s/issues/%lld", gh->api_url, gh->repo, number);
	struct github_reply r;
	const char *state = NULL;
	char m[512];
	int rc;

	rc = github__call(gh, "close issue", "PATCH", url, doc, GITHUB_RETRY_ALL, &r, msg, n);
	if (!rc && !json_is_object(r.json))
		rc = kerr_set(msg, n, KERR_PARSE,
			      "GitHub close issue in '%s': expected a JSON object, got %s",
			      gh->repo, jx_type_name(r.json));
	if (!rc && jx_str(r.json, "$", "state", JX_REQUIRED, &state, m, sizeof(m)))
		rc = kerr_set(msg, n, KERR_PARSE, "GitHub close issue in '%s': the answer's %s",
			      gh->repo, m);
	if (!rc && strcmp(state, "closed"))
		rc = kerr_set(msg, n, KERR_PARSE,
			      "GitHub close issue in '%s': issue %lld is still '%.40s'", gh->repo,
			      number, state);
	github__reply_release(&r);
	json_decref(doc);
	free(url);
	return rc;
}

int github_comment_add(struct github *gh, long long number, const char *marker, const char *body,
		       long long *id, char *msg, size_t n)
{
	json_t *doc = json_pack("{s:o}", "body", github_body_json(marker, body));
	char *url = xasprintf("%s/repos/%s/issues/%lld/comments", gh->api_url, gh->repo, number);
	struct github_reply r;
	int rc;

	*id = 0;
	rc = github__call(gh, "add comment", "POST", url, doc, GITHUB_RETRY_LIMITS, &r, msg, n);
	if (!rc)
		rc = github_answer_id(gh, "add comment", r.json, "id", id, msg, n);
	github__reply_release(&r);
	json_decref(doc);
	free(url);
	return rc;
}

int github_comment_update(struct github *gh, long long id, const char *marker, const char *body,
			  char *msg, size_t n)
{
	json_t *doc = json_pack("{s:o}", "body", github_body_json(marker, body));
	char *url = xasprintf("%s/repos/%s/issues/comments/%lld", gh->api_url, gh->repo, id);
	struct github_reply r;
	long long got = 0;
	int rc;

	rc = github__call(gh, "update comment", "PATCH", url, doc, GITHUB_RETRY_ALL, &r, msg, n);
	if (!rc)
		rc = github_answer_id(gh, "update comment", r.json, "id", &got, msg, n);
	if (!rc && got != id)
		rc = kerr_set(msg, n, KERR_PARSE,
			      "GitHub update comment in '%s': the answer is comment %lld, not %lld",
			      gh->repo, got, id);
	github__reply_release(&r);
	json_decref(doc);
	free(url);
	return rc;
}
