/*
 * awsconf.h - AWS credentials, region and endpoint, found the way the AWS
 * CLI and SDKs find them.
 *
 * Credentials, first match wins:
 *   1. AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN), unless
 *      a profile was named explicitly (the caller's profile argument);
 *   2. the profile's section of the shared credentials file
 *      (AWS_SHARED_CREDENTIALS_FILE, default ~/.aws/credentials: [NAME]);
 *   3. the profile's section of the config file (AWS_CONFIG_FILE, default
 *      ~/.aws/config: [default] or [profile NAME]).
 * The profile is the argument, else AWS_PROFILE, else AWS_DEFAULT_PROFILE,
 * else "default".
 *
 * Region: AWS_REGION, AWS_DEFAULT_REGION, then the profile's `region` in the
 * config file.  Endpoint: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, then the
 * profile's `endpoint_url` (or `s3 =` sub-section `endpoint_url`).  The
 * profile's `s3 =` sub-section may also set `addressing_style`.
 *
 * Files are INI as the CLI writes them: '#' and ';' start comments, keys are
 * case-insensitive, an indented line continues the sub-section above it.
 * A file that is missing is skipped; one that cannot be read or is too large
 * (1 MiB) is an error naming it.  A named profile found nowhere is an error.
 *
 * The secret and token are wiped from memory by awsconf_release.  Nothing in
 * this module logs; `source` says where credentials came from (for
 * messages), never what they are.
 */
#ifndef KCTL_AWSCONF_H
#define KCTL_AWSCONF_H

#include <stddef.h>

struct awsconf {
	char *profile;
	char *access_key; /* NULL when none was found */
	char *secret_key;
	char *session_token; /* NULL when none */
	char *region;        /* NULL when none */
	char *endpoint_url;  /* NULL when none */
	char *addressing;    /* "path", "virtual", "auto" or NULL */
	char *source;        /* "environment" or the file the credentials came from */
};

/*
 * Fills c (which the caller zeroes or has released).  profile may be NULL.
 * Returns 0 (c->access_key may still be NULL: anonymous), or KERR_IO /
 * KERR_NOTFOUND / KERR_PARSE with msg naming the file and line.
 * c must be released with awsconf_release in every case.
 */
int awsconf_load(struct awsconf *c, const char *profile, char *msg, size_t n);

void awsconf_release(struct awsconf *c);

#endif
