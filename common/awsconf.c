/*
 * awsconf.c - AWS credentials and settings; the contract is in awsconf.h.
 */
#include "awsconf.h"
#include "err.h"
#include "fileio.h"
#include "xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define AWSCONF_MAX_FILE (1u << 20)

/* Where each setting may come from in a profile section. */
enum awsconf_field { AF_KEY, AF_SECRET, AF_TOKEN, AF_REGION, AF_ENDPOINT, AF_ADDRESSING };

static const struct {
	const char *sub; /* NULL: top level of the section, else the sub-section */
	const char *key;
	enum awsconf_field field;
} awsconf_keys[] = {
	{ NULL, "aws_access_key_id", AF_KEY },       { NULL, "aws_secret_access_key", AF_SECRET },
	{ NULL, "aws_session_token", AF_TOKEN },     { NULL, "region", AF_REGION },
	{ NULL, "endpoint_url", AF_ENDPOINT },       { "s3", "endpoint_url", AF_ENDPOINT },
	{ "s3", "addressing_style", AF_ADDRESSING },
};

/* What one file said about one profile. */
struct awsconf_found {
	char *v[AF_ADDRESSING + 1];
	int section_seen;
};

static void awsconf_wipe(char **s)
{
	if (*s) {
		explicit_bzero(*s, strlen(*s));
		free(*s);
		*s = NULL;
	}
}

static void awsconf_found_release(struct awsconf_found *f)
{
	for (size_t i = 0; i <= AF_ADDRESSING; i++)
		awsconf_wipe(&f->v[i]);
}

static char *awsconf_trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

/* Whether the section header text (inside the brackets) names profile. */
static int awsconf_section_is(const char *hdr, const char *profile, int config_file)
{
	if (!config_file || !strcmp(profile, "default"))
		if (!strcmp(hdr, profile))
			return 1;
	if (config_file && !strncmp(hdr, "profile", 7) && (hdr[7] == ' ' || hdr[7] == '\t')) {
		const char *p = hdr + 8;

		while (*p == ' ' || *p == '\t')
			p++;
		return !strcmp(p, profile);
	}
	return 0;
}

static void awsconf_set(struct awsconf_found *f, const char *sub, const char *key, const char *val)
{
	for (size_t i = 0; i < sizeof(awsconf_keys) / sizeof(awsconf_keys[0]); i++) {
		if ((!sub) != (!awsconf_keys[i].sub) ||
		    (sub && strcasecmp(sub, awsconf_keys[i].sub)) ||
		    strcasecmp(key, awsconf_keys[i].key))
			continue;
		awsconf_wipe(&f->v[awsconf_keys[i].field]);
		f->v[awsconf_keys[i].field] = xstrdup(val);
	}
}

/* Parses text (the file path for messages) for profile's section into f. */
static int awsconf_parse(char *text, const char *path, const char *profile, int config_file,
			 struct awsconf_found *f, char *msg, size_t n)
{
	char *line = text, *next, *sub = NULL;
	int lineno = 0, in = 0;

	for (; line; line = next) {
		char *eq, *s;
		int indented = *line == ' ' || *line == '\t';

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		s = awsconf_trim(line);
		if (!*s || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			char *end = strchr(s, ']');

			if (!end)
				return kerr_set(msg, n, KERR_PARSE,
						"%s:%d: section header without ']'", path, lineno);
			*end = '\0';
			in = awsconf_section_is(awsconf_trim(s + 1), profile, config_file);
			f->section_seen |= in;
			sub = NULL;
			continue;
		}
		if (!(eq = strchr(s, '=')))
			return kerr_set(msg, n, KERR_PARSE, "%s:%d: expected 'key = value'", path,
					lineno);
		*eq = '\0';
		if (!indented)
			sub = NULL;
		if (!in)
			continue;
		if (!*awsconf_trim(eq + 1) && !indented) {
			sub = awsconf_trim(s); /* "s3 =" opens a sub-section */
			continue;
		}
		awsconf_set(f, indented ? sub : NULL, awsconf_trim(s), awsconf_trim(eq + 1));
	}
	return 0;
}

/* Reads path for profile; a missing file is no error (f stays empty). */
static int awsconf_read(const char *path, const char *profile, int config_file,
			struct awsconf_found *f, char *msg, size_t n)
{
	struct stat st;
	char *text = NULL;
	size_t len = 0;
	int rc;

	if (stat(path, &st) && errno == ENOENT)
		return 0;
	rc = file_read(path, AWSCONF_MAX_FILE, &text, &len, msg, n);
	if (!rc)
		rc = awsconf_parse(text, path, profile, config_file, f, msg, n);
	if (text) {
		explicit_bzero(text, len);
		free(text);
	}
	return rc;
}

static const char *awsconf_env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

static char *awsconf_file(const char *env, const char *name)
{
	const char *v = awsconf_env(env), *home = awsconf_env("HOME");

	if (v)
		return xstrdup(v);
	return xasprintf("%s/.aws/%s", home ? home : ".", name);
}

static void awsconf_take(char **dst, char **src)
{
	if (!*dst && *src) {
		*dst = *src;
		*src = NULL;
	}
}

static void awsconf_dup(char **dst, const char *src)
{
	if (!*dst && src)
		*dst = xstrdup(src);
}

int awsconf_load(struct awsconf *c, const char *profile, char *msg, size_t n)
{
	struct awsconf_found cred = { 0 }, conf = { 0 };
	char *cred_path = awsconf_file("AWS_SHARED_CREDENTIALS_FILE", "credentials");
	char *conf_path = awsconf_file("AWS_CONFIG_FILE", "config");
	const char *named = profile;
	int rc;

	memset(c, 0, sizeof(*c));
	if (!profile)
		profile = awsconf_env("AWS_PROFILE");
	if (!profile)
		profile = awsconf_env("AWS_DEFAULT_PROFILE");
	c->profile = xstrdup(profile ? profile : "default");
	rc = awsconf_read(cred_path, c->profile, 0, &cred, msg, n);
	if (!rc)
		rc = awsconf_read(conf_path, c->profile, 1, &conf, msg, n);
	if (rc)
		goto out;
	if (profile && !cred.section_seen && !conf.section_seen) {
		rc = kerr_set(msg, n, KERR_NOTFOUND, "AWS profile '%s' is in neither '%s' nor '%s'",
			      c->profile, cred_path, conf_path);
		goto out;
	}
	if (!named && awsconf_env("AWS_ACCESS_KEY_ID") && awsconf_env("AWS_SECRET_ACCESS_KEY")) {
		c->access_key = xstrdup(awsconf_env("AWS_ACCESS_KEY_ID"));
		c->secret_key = xstrdup(awsconf_env("AWS_SECRET_ACCESS_KEY"));
		awsconf_dup(&c->session_token, awsconf_env("AWS_SESSION_TOKEN"));
		c->source = xstrdup("environment");
	} else if (cred.v[AF_KEY] && cred.v[AF_SECRET]) {
		awsconf_take(&c->access_key, &cred.v[AF_KEY]);
		awsconf_take(&c->secret_key, &cred.v[AF_SECRET]);
		awsconf_take(&c->session_token, &cred.v[AF_TOKEN]);
		c->source = xstrdup(cred_path);
	} else if (conf.v[AF_KEY] && conf.v[AF_SECRET]) {
		awsconf_take(&c->access_key, &conf.v[AF_KEY]);
		awsconf_take(&c->secret_key, &conf.v[AF_SECRET]);
		awsconf_take(&c->session_token, &conf.v[AF_TOKEN]);
		c->source = xstrdup(conf_path);
	}
	awsconf_dup(&c->region, awsconf_env("AWS_REGION"));
	awsconf_dup(&c->region, awsconf_env("AWS_DEFAULT_REGION"));
	awsconf_take(&c->region, &conf.v[AF_REGION]);
	awsconf_dup(&c->endpoint_url, awsconf_env("AWS_ENDPOINT_URL_S3"));
	awsconf_dup(&c->endpoint_url, awsconf_env("AWS_ENDPOINT_URL"));
	awsconf_take(&c->endpoint_url, &conf.v[AF_ENDPOINT]);
	awsconf_take(&c->addressing, &conf.v[AF_ADDRESSING]);
out:
	awsconf_found_release(&cred);
	awsconf_found_release(&conf);
	free(cred_path);
	free(conf_path);
	return rc;
}

void awsconf_release(struct awsconf *c)
{
	if (!c)
		return;
	free(c->profile);
	free(c->access_key);
	awsconf_wipe(&c->secret_key);
	awsconf_wipe(&c->session_token);
	free(c->region);
	free(c->endpoint_url);
	free(c->addressing);
	free(c->source);
	memset(c, 0, sizeof(*c));
}
