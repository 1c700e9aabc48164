/*
 * kctl render SPEC [-o yaml|json] [--shards N] [--server-version MAJOR.MINOR]
 *
 * Prints the Kubernetes Job that kctl would submit for a round of SPEC,
 * exactly as it would be sent, with placeholders where only a running
 * session knows the values (the session id, the batches' presigned URLs).
 * Talks to no cluster: the server version (default: one with every Job
 * feature kctl uses) decides Indexed Job or one Job per shard, suspend,
 * podFailurePolicy and backoffLimitPerIndex, as the server's version does
 * in a session.
 */
#include "cmds.h"
#include "err.h"
#include "kround.h"
#include "kube.h"
#include "log.h"
#include "render.h"
#include "sbuf.h"
#include "session.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char render_usage[] =
	"usage: kctl render SPEC [-o yaml|json] [--shards N] [--server-version MAJOR.MINOR]\n";

int cmd_render(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "shards", required_argument, NULL, 's' },
		{ "server-version", required_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	struct session s = { 0 };
	struct kube k = { 0 };
	const char *out = "yaml";
	char msg[2048], *end = NULL;
	long shards = 2;
	json_t *job = NULL;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 's':
			shards = strtol(optarg, &end, 10);
			if (!end || *end || shards < 1 || shards > 4096) {
				log_error("--shards wants a number from 1 to 4096");
				return KCTL_EXIT_USAGE;
			}
			break;
		case 'v':
			if (sscanf(optarg, "%d.%d", &k.major, &k.minor) != 2 || k.major < 1) {
				log_error("--server-version wants MAJOR.MINOR, e.g. 1.20");
				return KCTL_EXIT_USAGE;
			}
			break;
		default: fputs(render_usage, stderr); return KCTL_EXIT_USAGE;
		}
	}
	if (optind != argc - 1 || (strcmp(out, "yaml") && strcmp(out, "json"))) {
		fputs(render_usage, stderr);
		return KCTL_EXIT_USAGE;
	}
	if ((rc = spec_load(&s.spec, argv[optind], msg, sizeof(msg)))) {
		log_error("%s", msg);
		spec_release(&s.spec);
		return KCTL_EXIT_FAIL;
	}
	s.id = "SESSION";
	if (k.major) {
		k.ns = s.spec.kube.namespace ? s.spec.kube.namespace : "NAMESPACE";
		s.kube = &k;
	}
	job = kround_render(&s, (int)shards, msg, sizeof(msg));
	if (!job) {
		log_error("%s", msg);
		rc = KCTL_EXIT_FAIL;
	} else if (!strcmp(out, "json")) {
		char *text = json_dumps(job, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

		puts(text);
		free(text);
	} else {
		struct sbuf b = SBUF_INIT;

		render_yaml(&b, job);
		fwrite(b.buf, 1, b.len, stdout);
		sbuf_release(&b);
	}
	json_decref(job);
	spec_release(&s.spec);
	return rc ? KCTL_EXIT_FAIL : KCTL_EXIT_OK;
}
