/*
 * kctl status --cluster [--namespace NS | --all-namespaces] [--kubeconfig
 * FILE] [--context NAME] [-o text|json]: kctl's sessions on a shared
 * cluster, from the API server rather than the local state database, so
 * that other users' sessions are there too (kcluster.h).  No spec: the
 * kubeconfig rules of docs/kubernetes.md pick the cluster and the
 * namespace.
 */
#include "cmds.h"
#include "err.h"
#include "jsonx.h"
#include "kcluster.h"
#include "kube.h"
#include "log.h"
#include "session.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char cluster_usage[] =
	"usage: kctl status --cluster [--namespace NS | --all-namespaces] [--kubeconfig FILE]\n"
	"                   [--context NAME] [-o text|json]\n";

static long long cluster_count(json_t *e, const char *key)
{
	return (long long)json_integer_value(json_object_get(json_object_get(e, "jobs"), key));
}

/* One session's line: where, which, its Jobs and what Kueue says. */
static void cluster_print_one(json_t *e)
{
	json_t *kq = json_object_get(e, "kueue");
	const char *state = json_string_value(json_object_get(kq, "state"));
	const char *text = json_string_value(json_object_get(kq, "message"));
	const char *queue = json_string_value(json_object_get(e, "queue"));
	char jobs[96];

	snprintf(jobs, sizeof(jobs), "%lld/%lld/%lld/%lld", cluster_count(e, "active"),
		 cluster_count(e, "succeeded"), cluster_count(e, "failed"),
		 cluster_count(e, "suspended"));
	printf("%-16s %-40s %5lld  %-16s %-14s ",
	       json_string_value(json_object_get(e, "namespace")),
	       json_string_value(json_object_get(e, "session")),
	       (long long)json_integer_value(json_object_get(e, "round")), jobs,
	       queue ? queue : "-");
	if (!state)
		printf("-\n");
	else if (!*state)
		printf("admitted\n");
	else
		printf("%s: %s\n", state, text ? text : "");
	if (json_string_value(json_object_get(e, "session_id")))
		printf("  session %s\n", json_string_value(json_object_get(e, "session_id")));
}

int cmd_status_cluster(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cluster", no_argument, NULL, 'c' },
		{ "namespace", required_argument, NULL, 'n' },
		{ "all-namespaces", no_argument, NULL, 'A' },
		{ "kubeconfig", required_argument, NULL, 'k' },
		{ "context", required_argument, NULL, 'x' },
		{ "output", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	const char *ns = NULL, *kubeconfig = NULL, *context = NULL;
	int c, all = 0, as_json = 0;
	char msg[2048];
	struct kube k;
	json_t *out;

	optind = 1;
	while ((c = getopt_long(argc, argv, "n:Ao:", opts, NULL)) != -1) {
		if (c == 'n')
			ns = optarg;
		else if (c == 'A')
			all = 1;
		else if (c == 'k')
			kubeconfig = optarg;
		else if (c == 'x')
			context = optarg;
		else if (c == 'o' && !cmd_output_format(optarg, &as_json))
			continue;
		else if (c != 'c')
			return fputs(cluster_usage, stderr), KCTL_EXIT_USAGE;
	}
	if (optind < argc || (ns && all)) {
		if (ns && all)
			fputs("kctl status --cluster: --namespace and --all-namespaces exclude "
			      "each other\n",
			      stderr);
		fputs(cluster_usage, stderr);
		return KCTL_EXIT_USAGE;
	}
	if (kube_open(&k, kubeconfig, context, ns, msg, sizeof(msg))) {
		log_error("%s", msg);
		return KCTL_EXIT_INFRA;
	}
	out = kcluster_sessions(&k, all ? NULL : k.ns, msg, sizeof(msg));
	if (!out) {
		log_error("%s", msg);
		kube_close(&k);
		return KCTL_EXIT_INFRA;
	}
	if (as_json) {
		char *text = jx_dump(out);

		fputs(text, stdout);
		free(text);
	} else if (!json_array_size(out)) {
		printf("no kctl Jobs in %s%s\n", all ? "any namespace" : "namespace ",
		       all ? "" : k.ns);
	} else {
		size_t i;
		json_t *e;

		printf("%-16s %-40s %5s  %-16s %-14s %s\n", "NAMESPACE", "SESSION", "ROUND",
		       "JOBS A/S/F/SUSP", "QUEUE", "KUEUE");
		json_array_foreach (out, i, e)
			cluster_print_one(e);
	}
	json_decref(out);
	kube_close(&k);
	return KCTL_EXIT_OK;
}
