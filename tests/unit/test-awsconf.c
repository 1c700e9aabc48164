/*
 * test-awsconf.c - common/awsconf.c: where credentials, region and endpoint
 * come from, by the AWS CLI's rules, with files written to a temp folder.
 */
#include "awsconf.h"
#include "err.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/test-awsconf.XXXXXX";
static char cred_path[256], conf_path[256];

static const char cred_text[] = "# shared credentials\n"
				"[default]\n"
				"aws_access_key_id = AKIDDEFAULT\n"
				"aws_secret_access_key = secret/default\n"
				"\n"
				"[ci]\n"
				"AWS_ACCESS_KEY_ID=AKIDCI\n"
				"aws_secret_access_key=  secret+ci  \n"
				"aws_session_token = tok=en/ci\n";

static const char conf_text[] = "[default]\n"
				"region = eu-west-1\n"
				"; comment\n"
				"[profile ci]\n"
				"region = ap-south-1\n"
				"s3 =\n"
				"  addressing_style = path\n"
				"  endpoint_url = http://127.0.0.1:9000\n"
				"output = json\n"
				"[profile only-config]\n"
				"aws_access_key_id = AKIDCONF\n"
				"aws_secret_access_key = secret-conf\n"
				"endpoint_url = https://store.example\n"
				"[ci]\n"
				"region = wrong-a-bare-name-is-not-a-profile-in-config\n";

static const char *const env_names[] = {
	"AWS_ACCESS_KEY_ID",   "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	"AWS_REGION",          "AWS_DEFAULT_REGION",    "AWS_PROFILE",
	"AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL_S3",   "AWS_ENDPOINT_URL",
};

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void clean_env(void)
{
	for (size_t i = 0; i < sizeof(env_names) / sizeof(env_names[0]); i++)
		unsetenv(env_names[i]);
	setenv("AWS_SHARED_CREDENTIALS_FILE", cred_path, 1);
	setenv("AWS_CONFIG_FILE", conf_path, 1);
}

/* 0-byte credentials and config files hold no entries: the environment still counts. */
TEST(empty_files_are_no_entries)
{
	char empty[300];
	struct awsconf c;
	char msg[256];
	FILE *f;

	snprintf(empty, sizeof(empty), "%s/empty", dir);
	f = fopen(empty, "w");
	if (f)
		fclose(f);
	clean_env();
	setenv("AWS_SHARED_CREDENTIALS_FILE", empty, 1);
	setenv("AWS_CONFIG_FILE", empty, 1);
	CHECK(awsconf_load(&c, NULL, msg, sizeof(msg)) == 0);
	CHECK(c.access_key == NULL && c.secret_key == NULL && c.region == NULL);
	CHECK(c.endpoint_url == NULL && c.addressing == NULL);
	awsconf_release(&c);
	setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "secret-env", 1);
	CHECK(awsconf_load(&c, NULL, msg, sizeof(msg)) == 0);
	CHECK_STR(c.access_key, "AKIDENV");
	CHECK(c.region == NULL);
	awsconf_release(&c);
	CHECK(awsconf_load(&c, "named", msg, sizeof(msg)) == KERR_NOTFOUND);
	CHECK_CONTAINS(msg, "named");
	awsconf_release(&c);
	unlink(empty);
}

TEST(default_profile_from_files)
{
	struct awsconf c;
	char msg[256];

	clean_env();
	CHECK(awsconf_load(&c, NULL, msg, sizeof(msg)) == 0);
	CHECK_STR(c.profile, "default");
	CHECK_STR(c.access_key, "AKIDDEFAULT");
	CHECK_STR(c.secret_key, "secret/default");
	CHECK(c.session_token == NULL);
	CHECK_STR(c.region, "eu-west-1");
	CHECK(c.endpoint_url == NULL);
	CHECK_STR(c.source, cred_path);
	awsconf_release(&c);
}

TEST(named_profile_and_subsection)
{
	struct awsconf c;
	char msg[256];

	clean_env();
	setenv("AWS_PROFILE", "ci", 1);
	CHECK(awsconf_load(&c, NULL, msg, sizeof(msg)) == 0);
	CHECK_STR(c.access_key, "AKIDCI");
	CHECK_STR(c.secret_key, "secret+ci");
	CHECK_STR(c.session_token, "tok=en/ci");
	CHECK_STR(c.region, "ap-south-1");
	CHECK_STR(c.addressing, "path");
	CHECK_STR(c.endpoint_url, "http://127.0.0.1:9000");
	awsconf_release(&c);
}

TEST(environment_wins_unless_profile_named)
{
	struct awsconf c;
	char msg[256];

	clean_env();
	setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "secret-env", 1);
	setenv("AWS_SESSION_TOKEN", "token-env", 1);
	setenv("AWS_REGION", "us-west-2", 1);
	setenv("AWS_DEFAULT_REGION", "ignored-1", 1);
	setenv("AWS_ENDPOINT_URL", "http://generic:1", 1);
	setenv("AWS_ENDPOINT_URL_S3", "http://s3-specific:2", 1);
	CHECK(awsconf_load(&c, NULL, msg, sizeof(msg)) == 0);
	CHECK_STR(c.access_key, "AKIDENV");
	CHECK_STR(c.session_token, "token-env");
	CHECK_STR(c.region, "us-west-2");
	CHECK_STR(c.endpoint_url, "http://s3-specific:2");
	CHECK_STR(c.source, "environment");
	awsconf_release(&c);

	/* a profile named by the caller beats the environment's keys */
	CHECK(awsconf_load(&c, "only-config", msg, sizeof(msg)) == 0);
	CHECK_STR(c.access_key, "AKIDCONF");
	CHECK_STR(c.source, conf_path);
	CHECK_STR(c.region, "us-west-2"); /* the environment's region still applies */
	awsconf_release(&c);
}

TEST(missing_profile_and_files)
{
	struct awsconf c;
	char msg[256];

	clean_env();
	CHECK(awsconf_load(&c, "nope", msg, sizeof(msg)) == KERR_NOTFOUND);
	CHECK_CONTAINS(msg, "'nope'");
	awsconf_release(&c);
	/* "[ci]" in the config file is not profile ci's section there */
	setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials", 1);
	CHECK(awsconf_load(&c, "ci", msg, sizeof(msg)) == 0);
	CHECK(c.access_key == NULL);
	CHECK_STR(c.region, "ap-south-1");
	awsconf_release(&c);
	setenv("AWS_CONFIG_FILE", "/nonexistent/config", 1);
	CHECK(awsconf_load(&c, NULL, msg, sizeof(msg)) == 0);
	CHECK(c.access_key == NULL && c.region == NULL);
	awsconf_release(&c);
}

TEST(malformed_file)
{
	struct awsconf c;
	char msg[256], bad[300];

	clean_env();
	snprintf(bad, sizeof(bad), "%s/bad", dir);
	write_file(bad, "[default]\naws_access_key_id = A\nthis line has no equals sign\n");
	setenv("AWS_SHARED_CREDENTIALS_FILE", bad, 1);
	CHECK(awsconf_load(&c, NULL, msg, sizeof(msg)) == KERR_PARSE);
	CHECK_CONTAINS(msg, ":3: expected 'key = value'");
	awsconf_release(&c);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	snprintf(cred_path, sizeof(cred_path), "%s/credentials", dir);
	snprintf(conf_path, sizeof(conf_path), "%s/config", dir);
	write_file(cred_path, cred_text);
	write_file(conf_path, conf_text);
	RUN(empty_files_are_no_entries);
	RUN(default_profile_from_files);
	RUN(named_profile_and_subsection);
	RUN(environment_wins_unless_profile_named);
	RUN(missing_profile_and_files);
	RUN(malformed_file);
	unlink(cred_path);
	unlink(conf_path);
	{
		char bad[300];

		snprintf(bad, sizeof(bad), "%s/bad", dir);
		unlink(bad);
	}
	rmdir(dir);
	return test_summary();
}
