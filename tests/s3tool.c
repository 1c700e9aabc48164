/*
 * s3tool.c - a small command line over common/s3.c for the tests' scripts:
 *
 *   s3tool mb URL                 create the bucket of URL (s3://BUCKET[/PREFIX])
 *   s3tool ls URL PREFIX          list keys under PREFIX, one per line: KEY SIZE
 *   s3tool get URL KEY            write the object to stdout
 *   s3tool put URL KEY FILE       upload FILE
 *   s3tool rm URL KEY             delete
 *   s3tool presign URL METHOD KEY SECONDS   print a presigned URL
 *
 * Settings come from the AWS environment variables as in kctl; S3_ENDPOINT
 * names the store.  Exit 0 ok, 1 failure (message on stderr), 2 usage.
 */
#include "err.h"
#include "s3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int usage(void)
{
	fputs("usage: s3tool mb URL | ls URL PREFIX | get URL KEY | put URL KEY FILE | rm URL "
	      "KEY\n",
	      stderr);
	return 2;
}

int main(int argc, char **argv)
{
	struct s3_opts o = { .endpoint = getenv("S3_ENDPOINT") };
	struct s3 *s = NULL;
	char msg[4096];
	int rc;

	if (argc < 3)
		return usage();
	if ((rc = s3_open(&s, argv[2], &o, msg, sizeof(msg)))) {
		fprintf(stderr, "s3tool: %s\n", msg);
		return 1;
	}
	if (!strcmp(argv[1], "mb") && argc == 3) {
		rc = s3_create_bucket(s, msg, sizeof(msg));
	} else if (!strcmp(argv[1], "ls") && argc == 4) {
		struct s3_list l;

		rc = s3_list(s, argv[3], 0, &l, msg, sizeof(msg));
		for (size_t i = 0; !rc && i < l.n; i++)
			printf("%s %llu\n", l.obj[i].key, l.obj[i].size);
		if (!rc)
			s3_list_release(&l);
	} else if (!strcmp(argv[1], "get") && argc == 4) {
		char *data = NULL;
		size_t len = 0;

		rc = s3_get(s, argv[3], (size_t)1 << 30, &data, &len, msg, sizeof(msg));
		if (!rc && fwrite(data, 1, len, stdout) != len)
			rc = kerr_set(msg, sizeof(msg), KERR_IO, "stdout: short write");
		free(data);
	} else if (!strcmp(argv[1], "put") && argc == 5) {
		rc = s3_put_file(s, argv[3], argv[4], NULL, msg, sizeof(msg));
	} else if (!strcmp(argv[1], "presign") && argc == 6) {
		char *url = s3_presign(s, argv[3], argv[4], strtol(argv[5], NULL, 10), time(NULL),
				       msg, sizeof(msg));

		rc = url ? 0 : KERR_INVALID;
		if (url)
			puts(url);
		free(url);
	} else if (!strcmp(argv[1], "rm") && argc == 4) {
		rc = s3_delete(s, argv[3], msg, sizeof(msg));
	} else {
		s3_free(s);
		return usage();
	}
	if (rc)
		fprintf(stderr, "s3tool: %s\n", msg);
	s3_free(s);
	return rc ? 1 : 0;
}
