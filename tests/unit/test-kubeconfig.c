/*
 * test-kubeconfig.c - common/kubeconfig.c: kubeconfig files (merged by
 * $KUBECONFIG), in-cluster service accounts and exec credential plugins,
 * with files and a plugin script written to a temp folder.
 */
#include "err.h"
#include "kubeconfig.h"
#include "test.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CA_PEM "-----BEGIN CERTIFICATE-----\nCA-DATA\n-----END CERTIFICATE-----\n"
#define CA_B64                                                                                     \
	"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBLURBVEEKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
#define CERT_PEM "-----BEGIN CERTIFICATE-----\nCLIENT\n-----END CERTIFICATE-----\n"
#define CERT_B64                                                                                   \
	"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNMSUVOVAotLS0tLUVORCBDRVJUSUZJQ0FURS0tLS0tCg=="
#define KEY_PEM "-----BEGIN PRIVATE KEY-----\nKEY\n-----END PRIVATE KEY-----\n"
#define KEY_B64 "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCktFWQotLS0tLUVORCBQUklWQVRFIEtFWS0tLS0tCg=="
#define V1      "client.authentication.k8s.io/v1"
#define V1BETA1 "client.authentication.k8s.io/v1beta1"

static char dir[] = "/tmp/test-kubeconfig.XXXXXX";
static char orig_path[4096];

/* The plugin: args[0] is its run-count file; mode from "<count>.mode", else $MODE. */
static const char plugin_text[] =
	"#!/bin/sh\n"
	"count=$1\n"
	"echo run >> \"$count\"\n"
	"n=$(wc -l < \"$count\" | tr -d ' ')\n"
	"printf '%s' \"$KUBERNETES_EXEC_INFO\" > \"$count.info\"\n"
	"mode=$(cat \"$count.mode\" 2>/dev/null || echo \"$MODE\")\n"
	"case \"$mode\" in\n"
	"fail) echo \"plugin broke: no credentials\" >&2; exit 1;;\n"
	"failtok) echo \"old token was exec-1\" >&2; exit 3;;\n"
	"badjson) echo 'oops, not json' >&2; echo '{\"apiVersion\":'; exit 0;;\n"
	"sleep) echo 'sleeping' >&2; sleep 20; exit 0;;\n"
	"big) head -c 2000000 /dev/zero | tr '\\0' a; exit 0;;\n"
	"cert) printf '{\"apiVersion\":\"%s\",\"kind\":\"ExecCredential\",\"status\":"
	"{\"clientCertificateData\":\"CERT\",\"clientKeyData\":\"KEY\"}}' \"$VERSION\";;\n"
	"*) printf '{\"apiVersion\":\"%s\",\"kind\":\"ExecCredential\",\"status\":"
	"{\"token\":\"exec-%s\",\"expirationTimestamp\":\"%s\"}}' \"$VERSION\" \"$n\" \"$EXP\";;\n"
	"esac\n";

/* dir/name, in a static rotation of buffers so a test can hold a few. */
static const char *at(const char *name)
{
	static char bufs[8][512];
	static int next;
	char *b = bufs[next++ % 8];

	snprintf(b, sizeof(bufs[0]), "%s/%s", dir, name);
	return b;
}

static const char *write_file(const char *name, const char *text)
{
	const char *path = at(name);
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
	return path;
}

static void clean_env(void)
{
	static const char *const names[] = { "KUBECONFIG", "KUBERNETES_SERVICE_HOST",
					     "KUBERNETES_SERVICE_PORT", "POD_NAMESPACE" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unsetenv(names[i]);
	setenv("HOME", at("home"), 1);
	setenv("PATH", orig_path, 1);
	kubeconfig_exec_timeout_ms = 30000;
}

static int count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	int c, lines = 0;

	if (!f)
		return 0;
	while ((c = fgetc(f)) != EOF)
		lines += c == '\n';
	fclose(f);
	return lines;
}

static const char base_text[] = "apiVersion: v1\n"
				"kind: Config\n"
				"preferences: {}\n"
				"current-context: dev\n"
				"clusters:\n"
				"- name: main\n"
				"  cluster:\n"
				"    server: https://k8s.example:6443/\n"
				"    certificate-authority: certs/ca.crt\n"
				"    tls-server-name: api.internal\n"
				"    extensions:\n"
				"    - name: client.authentication.k8s.io/exec\n"
				"      extension: {audience: x}\n"
				"- name: data\n"
				"  cluster:\n"
				"    server: https://10.0.0.9\n"
				"    certificate-authority: certs/ca.crt\n"
				"    certificate-authority-data: " CA_B64 "\n"
				"users:\n"
				"- name: tok\n"
				"  user:\n"
				"    token: tok-123\n"
				"- name: files\n"
				"  user:\n"
				"    client-certificate: certs/client.crt\n"
				"    client-key: certs/client.key\n"
				"- name: data\n"
				"  user:\n"
				"    client-certificate-data: " CERT_B64 "\n"
				"    client-key-data: " KEY_B64 "\n"
				"- name: tokfile\n"
				"  user:\n"
				"    tokenFile: tok.txt\n"
				"contexts:\n"
				"- name: dev\n"
				"  context: {cluster: main, user: tok, namespace: team-a}\n"
				"- name: certs\n"
				"  context: {cluster: main, user: files}\n"
				"- name: pem\n"
				"  context: {cluster: data, user: data, namespace: ''}\n"
				"- name: tf\n"
				"  context: {cluster: main, user: tokfile}\n"
				"- name: anon\n"
				"  context: {cluster: main}\n";

TEST(token_auth_current_context)
{
	struct kubeconfig kc;
	struct http_opts o = { .timeout_ms = 1234 };
	char msg[512], *hdr;

	clean_env();
	CHECK(kubeconfig_load(&kc, at("base"), NULL, msg, sizeof(msg)) == 0);
	CHECK_STR(kc.context, "dev");
	CHECK_STR(kc.server, "https://k8s.example:6443");
	CHECK_STR(kc.namespace, "team-a");
	CHECK_STR(kc.source, at("base"));
	CHECK_STR(kc.cluster_name, "main");
	CHECK_STR(kc.user_name, "tok");
	CHECK_STR(kc.token, "tok-123");
	CHECK(kc.token_file == NULL && kc.exec_command == NULL && kc.insecure == 0);
	CHECK_STR(kc.ca_file, at("certs/ca.crt"));
	CHECK_STR(kc.tls_server_name, "api.internal");
	hdr = kubeconfig_auth_header(&kc);
	CHECK_STR(hdr, "Authorization: Bearer tok-123");
	free(hdr);
	kubeconfig_http_opts(&kc, &o);
	CHECK_STR(o.ca_file, at("certs/ca.crt"));
	CHECK(o.ca_pem == NULL && o.client_cert == NULL && o.client_cert_pem == NULL);
	CHECK_STR(o.tls_server_name, "api.internal");
	CHECK(o.timeout_ms == 1234 && o.insecure_skip_verify == 0);
	CHECK(kubeconfig_refresh(&kc, 0, msg, sizeof(msg)) == 0);
	CHECK_STR(kc.token, "tok-123");
	kubeconfig_release(&kc);
	CHECK(kc.token == NULL && kc.server == NULL);
	kubeconfig_release(&kc); /* twice is harmless */
}

TEST(named_context_and_default_namespace)
{
	static const struct {
		const char *context, *user, *ns;
	} cases[] = {
		{ "dev", "tok", "team-a" },
		{ "certs", "files", NULL },
		{ "pem", "data", NULL }, /* namespace: '' is none */
		{ "anon", NULL, NULL },
	};
	struct kubeconfig kc;
	char msg[512];

	clean_env();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK(kubeconfig_load(&kc, at("base"), cases[i].context, msg, sizeof(msg)) == 0);
		CHECK_STR(kc.context, cases[i].context);
		CHECK(cases[i].user ? kc.user_name && !strcmp(kc.user_name, cases[i].user)
				    : kc.user_name == NULL);
		CHECK(cases[i].ns ? kc.namespace && !strcmp(kc.namespace, cases[i].ns)
				  : kc.namespace == NULL);
		CHECK_STR(kubeconfig_namespace(&kc), cases[i].ns ? cases[i].ns : "default");
		kubeconfig_release(&kc);
	}
	CHECK(kubeconfig_load(&kc, at("base"), "anon", msg, sizeof(msg)) == 0);
	CHECK(kubeconfig_auth_header(&kc) == NULL);
	kubeconfig_release(&kc);
}

TEST(client_certificates_files_and_data)
{
	struct kubeconfig kc;
	struct http_opts o = { 0 };
	char msg[512];

	clean_env();
	CHECK(kubeconfig_load(&kc, at("base"), "certs", msg, sizeof(msg)) == 0);
	CHECK_STR(kc.client_cert_file, at("certs/client.crt"));
	CHECK_STR(kc.client_key_file, at("certs/client.key"));
	CHECK(kc.token == NULL && kubeconfig_auth_header(&kc) == NULL);
	kubeconfig_http_opts(&kc, &o);
	CHECK_STR(o.client_cert, at("certs/client.crt"));
	CHECK_STR(o.client_key, at("certs/client.key"));
	CHECK(o.client_cert_pem == NULL && o.client_key_pem == NULL);
	kubeconfig_release(&kc);

	memset(&o, 0, sizeof(o));
	CHECK(kubeconfig_load(&kc, at("base"), "pem", msg, sizeof(msg)) == 0);
	CHECK_STR(kc.client_cert_pem, CERT_PEM);
	CHECK_STR(kc.client_key_pem, KEY_PEM);
	CHECK_STR(kc.ca_pem, CA_PEM);
	CHECK_STR(kc.ca_file, at("certs/ca.crt"));
	kubeconfig_http_opts(&kc, &o);
	CHECK(o.ca_file == NULL); /* -data overrides the file, as in client-go */
	CHECK_STR(o.ca_pem, CA_PEM);
	CHECK_STR(o.client_cert_pem, CERT_PEM);
	CHECK_STR(o.client_key_pem, KEY_PEM);
	CHECK(o.client_cert == NULL && o.client_key == NULL && o.tls_server_name == NULL);
	kubeconfig_release(&kc);
}

TEST(token_file_reread_on_refresh)
{
	struct kubeconfig kc;
	char msg[512];

	clean_env();
	write_file("tok.txt", "  file-token-1\n");
	CHECK(kubeconfig_load(&kc, at("base"), "tf", msg, sizeof(msg)) == 0);
	CHECK_STR(kc.token_file, at("tok.txt"));
	CHECK_STR(kc.token, "file-token-1");
	write_file("tok.txt", "file-token-2\n");
	CHECK(kubeconfig_refresh(&kc, 0, msg, sizeof(msg)) == 0);
	CHECK_STR(kc.token, "file-token-2");
	write_file("tok.txt", "line1\nline2\n");
	CHECK(kubeconfig_refresh(&kc, 0, msg, sizeof(msg)) == KERR_INVALID);
	CHECK_CONTAINS(msg, "control characters");
	CHECK(strstr(msg, "line1") == NULL);
	write_file("tok.txt", "\n");
	CHECK(kubeconfig_refresh(&kc, 0, msg, sizeof(msg)) == KERR_IO);
	CHECK_CONTAINS(msg, "tok.txt");
	CHECK_STR(kc.token, "file-token-2"); /* kept on failure */
	unlink(at("tok.txt"));
	CHECK(kubeconfig_refresh(&kc, 0, msg, sizeof(msg)) == KERR_IO);
	CHECK(strstr(msg, "file-token") == NULL);
	kubeconfig_release(&kc);
	CHECK(kubeconfig_load(&kc, at("base"), "tf", msg, sizeof(msg)) == KERR_IO);
	CHECK_CONTAINS(msg, at("tok.txt"));
	kubeconfig_release(&kc);
}

/* Runs load with stderr sent to a file; returns load's result, the stderr text in out. */
static int load_capturing(struct kubeconfig *kc, const char *path, char *msg, size_t n, char *out,
			  size_t outn)
{
	int saved = dup(2), fd = open(at("stderr.txt"), O_CREAT | O_TRUNC | O_RDWR, 0600), rc;
	ssize_t got;

	fflush(stderr);
	dup2(fd, 2);
	rc = kubeconfig_load(kc, path, NULL, msg, n);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	got = pread(fd, out, outn - 1, 0);
	out[got > 0 ? got : 0] = '\0';
	close(fd);
	return rc;
}

TEST(insecure_warns_and_refuses_ca)
{
	static const char ok[] = "current-context: c\n"
				 "clusters: [{name: k, cluster: {server: 'https://h:1', "
				 "insecure-skip-tls-verify: true}}]\n"
				 "users: [{name: u, user: {token: SECRET-TOKEN}}]\n"
				 "contexts: [{name: c, context: {cluster: k, user: u}}]\n";
	static const char bad[] = "current-context: c\n"
				  "clusters:\n"
				  "- name: k\n"
				  "  cluster:\n"
				  "    server: https://h:1\n"
				  "    insecure-skip-tls-verify: true\n"
				  "    certificate-authority-data: " CA_B64 "\n"
				  "contexts: [{name: c, context: {cluster: k}}]\n";
	struct kubeconfig kc;
	struct http_opts o = { 0 };
	char msg[512], err[2048];

	clean_env();
	CHECK(load_capturing(&kc, write_file("insecure", ok), msg, sizeof(msg), err, sizeof(err)) ==
	      0);
	CHECK(kc.insecure == 1);
	kubeconfig_http_opts(&kc, &o);
	CHECK(o.insecure_skip_verify == 1);
	CHECK_CONTAINS(err, "insecure-skip-tls-verify");
	CHECK_CONTAINS(err, "cluster 'k'");
	CHECK(strstr(err, "SECRET-TOKEN") == NULL);
	kubeconfig_release(&kc);
	CHECK(kubeconfig_load(&kc, write_file("insecure-ca", bad), NULL, msg, sizeof(msg)) ==
	      KERR_INVALID);
	CHECK_CONTAINS(msg, "insecure-ca:5:5: clusters[0].cluster: specifying a root certificates "
			    "file with the insecure flag is not allowed");
	kubeconfig_release(&kc);
}

TEST(errors)
{
	static const struct {
		const char *text, *context;
		int rc;
		const char *want;
	} cases[] = {
		{ "current-context: c\n"
		  "clusters: [{name: k, cluster: {server: 'https://h'}}]\n"
		  "users:\n"
		  "- name: u\n"
		  "  user:\n"
		  "    client-certificate-data: 'not*base64!'\n"
		  "    client-key-data: " KEY_B64 "\n"
		  "contexts: [{name: c, context: {cluster: k, user: u}}]\n",
		  NULL, KERR_PARSE, "bad:6:30: users[0].user.client-certificate-data: not base64" },
		{ "clusters: [{name: k, cluster: {server: 'https://h'}}]\n"
		  "contexts: [{name: one, context: {cluster: k}}, {name: two, context: {cluster: "
		  "k}}]\n",
		  "three", KERR_NOTFOUND, "context 'three' not found in " },
		{ "clusters: [{name: k, cluster: {server: 'https://h'}}]\n"
		  "contexts: [{name: one, context: {cluster: k}}, {name: two, context: {cluster: "
		  "k}}]\n",
		  "three", KERR_NOTFOUND, "; contexts: one, two" },
		{ "clusters: [{name: k, cluster: {server: 'https://h'}}]\n"
		  "contexts: [{name: one, context: {cluster: k}}]\n",
		  NULL, KERR_NOTFOUND,
		  "sets no current-context and none was named; contexts: one" },
		{ "contexts: [{name: c, context: {cluster: gone}}]\n", "c", KERR_NOTFOUND,
		  "context 'c' names cluster 'gone', which " },
		{ "clusters: [{name: k, cluster: {server: 'https://h'}}]\n"
		  "contexts: [{name: c, context: {cluster: k, user: nobody}}]\n",
		  "c", KERR_NOTFOUND, "context 'c' names user 'nobody'" },
		{ "clusters: [{name: k, cluster: {tls-server-name: x}}]\n"
		  "contexts: [{name: c, context: {cluster: k}}]\n",
		  "c", KERR_INVALID, "bad:1:31: clusters[0].cluster: cluster 'k' has no server" },
		{ "clusters: [{name: k, cluster: {server: [a]}}]\n"
		  "contexts: [{name: c, context: {cluster: k}}]\n",
		  "c", KERR_PARSE, "clusters[0].cluster.server: expected a string, got a list" },
		{ "clusters: [{name: k, cluster: {server: h, certificate-authority: nope.crt}}]\n"
		  "contexts: [{name: c, context: {cluster: k}}]\n",
		  "c", KERR_IO, "certificate-authority '" },
		{ "clusters: [{name: k, cluster: {server: h}}]\n"
		  "users: [{name: u, user: {client-certificate-data: " CERT_B64 "}}]\n"
		  "contexts: [{name: c, context: {cluster: k, user: u}}]\n",
		  "c", KERR_INVALID, "users[0].user: a client certificate without its key" },
		{ "clusters: [{name: k, cluster: {server: h}}]\n"
		  "users: [{name: u, user: {client-certificate-data: " CERT_B64
		  ", client-certificate: certs/client.crt, client-key: certs/client.key}}]\n"
		  "contexts: [{name: c, context: {cluster: k, user: u}}]\n",
		  "c", KERR_INVALID,
		  "client-certificate-data and client-certificate are both given" },
		{ "clusters: [{name: k, cluster: {server: h}}]\n"
		  "users: [{name: u, user: {exec: {command: x, apiVersion: "
		  "client.authentication.k8s.io/v1alpha1}}}]\n"
		  "contexts: [{name: c, context: {cluster: k, user: u}}]\n",
		  "c", KERR_INVALID, "users[0].user.exec.apiVersion: " },
		{ "clusters: [{name: k, cluster: {server: h}}]\n"
		  "users: [{name: u, user: {auth-provider: {name: gcp}}}]\n"
		  "contexts: [{name: c, context: {cluster: k, user: u}}]\n",
		  "c", KERR_INVALID, "auth-provider" },
		/* found by tests/fuzz: a scalar's size was read as a list's */
		{ "clusters: [{name: k, cluster: {server: h}}]\n"
		  "users: [{name: u, user: {exec: {command: x, apiVersion: "
		  "client.authentication.k8s.io/v1, args: a-b}}}]\n"
		  "contexts: [{name: c, context: {cluster: k, user: u}}]\n",
		  "c", KERR_PARSE, "users[0].user.exec.args: expected a list" },
		{ "clusters: [{name: k, cluster: {server: h}}]\n"
		  "users: [{name: u, user: {exec: {command: x, apiVersion: "
		  "client.authentication.k8s.io/v1, env: A=b}}}]\n"
		  "contexts: [{name: c, context: {cluster: k, user: u}}]\n",
		  "c", KERR_PARSE, "users[0].user.exec.env: expected a list" },
		{ "clusters: {k: 1}\n", "c", KERR_PARSE, "bad:1:11: clusters: expected a list" },
		{ "a: [\n", NULL, KERR_PARSE, "bad:" },
		{ "", NULL, KERR_NOTFOUND, "sets no current-context" },
		{ "contexts: [{context: {cluster: k}}]\n", "c", KERR_PARSE,
		  "bad:1:12: contexts[0]: has no name" },
	};
	struct kubeconfig kc;
	char msg[512];

	clean_env();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = kubeconfig_load(&kc, write_file("bad", cases[i].text), cases[i].context,
					 msg, sizeof(msg));

		CHECK(rc == cases[i].rc);
		CHECK_CONTAINS(msg, cases[i].want);
		if (rc != cases[i].rc)
			fprintf(stderr, "  case %zu: rc %d (%s)\n", i, rc, msg);
		kubeconfig_release(&kc);
	}
	CHECK(kubeconfig_load(&kc, at("no-such-file"), NULL, msg, sizeof(msg)) == KERR_IO);
	CHECK_CONTAINS(msg, "no-such-file");
	kubeconfig_release(&kc);
}

TEST(kubeconfig_env_merged)
{
	static const char a[] = "clusters:\n"
				"- name: shared\n"
				"  cluster: {server: 'https://first'}\n"
				"users:\n"
				"- name: u1\n"
				"  user: {token: from-a}\n"
				"contexts:\n"
				"- name: ctx-a\n"
				"  context: {cluster: shared, user: u1}\n";
	static const char b[] = "current-context: ctx-b\n"
				"clusters:\n"
				"- name: shared\n"
				"  cluster: {server: 'https://second'}\n"
				"users:\n"
				"- name: u1\n"
				"  user: {token: from-b-loses}\n"
				"- name: u2\n"
				"  user: {token: from-b}\n"
				"contexts:\n"
				"- name: ctx-b\n"
				"  context: {cluster: shared, user: u2, namespace: nb}\n"
				"- name: ctx-a\n"
				"  context: {cluster: shared, user: u2}\n";
	struct kubeconfig kc;
	char msg[512], list[2048];

	clean_env();
	write_file("merge-a", a);
	write_file("merge-b", b);
	snprintf(list, sizeof(list), "%s:%s::%s", at("missing"), at("merge-a"), at("merge-b"));
	setenv("KUBECONFIG", list, 1);
	CHECK(kubeconfig_load(&kc, NULL, NULL, msg, sizeof(msg)) == 0);
	CHECK_STR(kc.context, "ctx-b"); /* a sets none, b's counts */
	CHECK_STR(kc.server, "https://first");
	CHECK_STR(kc.token, "from-b");
	CHECK_STR(kc.namespace, "nb");
	CHECK_CONTAINS(kc.source, "merge-a:");
	CHECK_CONTAINS(kc.source, "merge-b");
	CHECK(strstr(kc.source, "missing") == NULL);
	kubeconfig_release(&kc);

	CHECK(kubeconfig_load(&kc, NULL, "ctx-a", msg, sizeof(msg)) == 0);
	CHECK_STR(kc.token, "from-a"); /* a's ctx-a and a's u1 win */
	kubeconfig_release(&kc);
	CHECK(kubeconfig_load(&kc, NULL, "nope", msg, sizeof(msg)) == KERR_NOTFOUND);
	CHECK_CONTAINS(msg, "context 'nope' not found in ");
	CHECK_CONTAINS(msg, "; contexts: ctx-a, ctx-b");
	CHECK(strstr(msg, "ctx-b, ctx-a") == NULL); /* each name once */
	kubeconfig_release(&kc);

	/* the first file that sets current-context wins */
	write_file("merge-a", "current-context: ctx-a\n");
	snprintf(list, sizeof(list), "%s:%s:%s", at("merge-a"), at("merge-b"), at("missing"));
	setenv("KUBECONFIG", list, 1);
	CHECK(kubeconfig_load(&kc, NULL, NULL, msg, sizeof(msg)) == 0);
	CHECK_STR(kc.context, "ctx-a");
	CHECK_STR(kc.token, "from-b"); /* now only b defines ctx-a: user u2 */
	CHECK_STR(kc.server, "https://second");
	kubeconfig_release(&kc);

	/* nothing there and not in a pod */
	setenv("KUBECONFIG", at("missing"), 1);
	CHECK(kubeconfig_load(&kc, NULL, NULL, msg, sizeof(msg)) == KERR_NOTFOUND);
	CHECK_CONTAINS(msg, "not in a pod");
	kubeconfig_release(&kc);
}

TEST(home_kube_config)
{
	struct kubeconfig kc;
	char msg[512];

	clean_env();
	mkdir(at("home/.kube"), 0700);
	write_file("home/.kube/config", "current-context: h\n"
					"clusters: [{name: k, cluster: {server: 'https://home'}}]\n"
					"contexts: [{name: h, context: {cluster: k}}]\n");
	CHECK(kubeconfig_load(&kc, NULL, NULL, msg, sizeof(msg)) == 0);
	CHECK_STR(kc.server, "https://home");
	CHECK_STR(kc.source, "~/.kube/config");
	kubeconfig_release(&kc);
	write_file("home/.kube/config", "clusters: 3\n");
	CHECK(kubeconfig_load(&kc, NULL, NULL, msg, sizeof(msg)) == KERR_PARSE);
	CHECK_CONTAINS(msg, "~/.kube/config:1:11: clusters: ");
	kubeconfig_release(&kc);
	unlink(at("home/.kube/config"));
	rmdir(at("home/.kube"));
}

/* A 0-byte token file (kubeconfig tokenFile or in-cluster) is an error naming it, no header. */
TEST(empty_token_files)
{
	struct kubeconfig kc;
	char msg[512], *hdr;

	clean_env();
	write_file("tok.txt", "");
	CHECK(kubeconfig_load(&kc, at("base"), "tf", msg, sizeof(msg)) == KERR_IO);
	CHECK_CONTAINS(msg, at("tok.txt"));
	CHECK_CONTAINS(msg, "is empty");
	hdr = kubeconfig_auth_header(&kc);
	CHECK(hdr == NULL);
	free(hdr);
	kubeconfig_release(&kc);
	mkdir(at("sa0"), 0700);
	write_file("sa0/token", "");
	write_file("sa0/ca.crt", CA_PEM);
	write_file("sa0/namespace", "jobs\n");
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	CHECK(kubeconfig_in_cluster(&kc, at("sa0"), msg, sizeof(msg)) == KERR_IO);
	CHECK_CONTAINS(msg, at("sa0/token"));
	CHECK_CONTAINS(msg, "is empty");
	kubeconfig_release(&kc);
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
}

TEST(in_cluster)
{
	static const struct {
		const char *host, *port, *pod_ns, *server, *ns;
	} cases[] = {
		{ "10.96.0.1", "443", NULL, "https://10.96.0.1:443", "jobs" },
		{ "fd00:10:96::1", "6443", NULL, "https://[fd00:10:96::1]:6443", "jobs" },
		{ "kubernetes.default.svc", "443", "other", "https://kubernetes.default.svc:443",
		  "other" },
	};
	struct kubeconfig kc;
	struct http_opts o = { 0 };
	char msg[512], *hdr;

	clean_env();
	mkdir(at("sa"), 0700);
	write_file("sa/token", "sa-token-1\n");
	write_file("sa/ca.crt", CA_PEM);
	write_file("sa/namespace", "jobs\n");
	CHECK(kubeconfig_in_cluster(&kc, at("sa"), msg, sizeof(msg)) == KERR_NOTFOUND);
	kubeconfig_release(&kc);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		setenv("KUBERNETES_SERVICE_HOST", cases[i].host, 1);
		setenv("KUBERNETES_SERVICE_PORT", cases[i].port, 1);
		if (cases[i].pod_ns)
			setenv("POD_NAMESPACE", cases[i].pod_ns, 1);
		CHECK(kubeconfig_in_cluster(&kc, at("sa"), msg, sizeof(msg)) == 0);
		CHECK_STR(kc.server, cases[i].server);
		CHECK_STR(kc.namespace, cases[i].ns);
		CHECK_STR(kc.context, "in-cluster");
		CHECK_STR(kc.source, "in-cluster");
		CHECK_STR(kc.token, "sa-token-1");
		CHECK_STR(kc.token_file, at("sa/token"));
		CHECK_STR(kc.ca_file, at("sa/ca.crt"));
		kubeconfig_release(&kc);
	}
	CHECK(kubeconfig_in_cluster(&kc, at("sa"), msg, sizeof(msg)) == 0);
	write_file("sa/token", "sa-token-2");
	CHECK(kubeconfig_refresh(&kc, 0, msg, sizeof(msg)) == 0);
	hdr = kubeconfig_auth_header(&kc);
	CHECK_STR(hdr, "Authorization: Bearer sa-token-2");
	free(hdr);
	kubeconfig_http_opts(&kc, &o);
	CHECK_STR(o.ca_file, at("sa/ca.crt"));
	kubeconfig_release(&kc);
	unlink(at("sa/token"));
	CHECK(kubeconfig_in_cluster(&kc, at("sa"), msg, sizeof(msg)) == KERR_IO);
	CHECK_CONTAINS(msg, at("sa/token"));
	kubeconfig_release(&kc);
	/* no kubeconfig anywhere: load falls back to the pod's (default) service account */
	if (access(KUBECONFIG_SA_DIR "/token", F_OK)) {
		CHECK(kubeconfig_load(&kc, NULL, NULL, msg, sizeof(msg)) == KERR_IO);
		CHECK_CONTAINS(msg, KUBECONFIG_SA_DIR "/token");
		kubeconfig_release(&kc);
	}
	unlink(at("sa/ca.crt"));
	unlink(at("sa/namespace"));
	rmdir(at("sa"));
}

/* ---- exec plugins ---- */

/* Writes a kubeconfig whose user runs command with the plugin's settings, and loads it. */
static int load_exec(struct kubeconfig *kc, const char *command, const char *version,
		     const char *plugin_version, const char *mode, const char *exp,
		     const char *count, char *msg, size_t n)
{
	char text[4096];

	snprintf(text, sizeof(text),
		 "current-context: c\n"
		 "clusters: [{name: k, cluster: {server: 'https://h'}}]\n"
		 "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
		 "users:\n"
		 "- name: u\n"
		 "  user:\n"
		 "    exec:\n"
		 "      apiVersion: %s\n"
		 "      command: %s\n"
		 "      args: ['%s']\n"
		 "      env:\n"
		 "      - {name: MODE, value: '%s'}\n"
		 "      - {name: EXP, value: '%s'}\n"
		 "      - {name: VERSION, value: '%s'}\n"
		 "      installHint: install the plugin from example.com\n"
		 "      provideClusterInfo: false\n"
		 "      interactiveMode: Never\n",
		 version, command, at(count), mode, exp, plugin_version);
	unlink(at(count));
	return kubeconfig_load(kc, write_file("exec-config", text), NULL, msg, n);
}

static void rfc3339(time_t t, const char *suffix, char *out, size_t n)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, n, "%Y-%m-%dT%H:%M:%S", &tm);
	strlcat(out, suffix, n);
}

TEST(exec_token_expiry)
{
	static const struct {
		time_t offset;      /* expiry from now */
		const char *suffix; /* after the seconds */
		int rerun;          /* whether a second refresh runs it again */
	} cases[] = {
		{ 3600, "Z", 0 },  { 3600, ".123456789Z", 0 },
		{ 0, "", 0 },                      /* no expiry */
		{ -3600, "Z", 1 }, { 30, "Z", 1 }, /* within 60 s */
	};
	struct kubeconfig kc;
	char msg[512], exp[64], info[512];
	char *hdr;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		time_t want = cases[i].offset ? time(NULL) + cases[i].offset : 0;

		clean_env();
		exp[0] = '\0';
		if (want)
			rfc3339(want, cases[i].suffix, exp, sizeof(exp));
		CHECK(load_exec(&kc, "./plugin.sh", V1, V1, "token", exp, "count", msg,
				sizeof(msg)) == 0);
		CHECK_STR(kc.exec_command, at("./plugin.sh"));
		CHECK_STR(kc.exec_api_version, V1);
		CHECK(kc.exec_args && kc.exec_args[0] && !strcmp(kc.exec_args[0], at("count")));
		CHECK(kc.exec_env && kc.exec_env[0] && !strcmp(kc.exec_env[0], "MODE=token"));
		CHECK(kc.token == NULL && count_lines(at("count")) == 0); /* not run at load */
		CHECK(kubeconfig_refresh(&kc, 0, msg, sizeof(msg)) == 0);
		CHECK_STR(kc.token, "exec-1");
		CHECK(kc.token_expiry == want);
		hdr = kubeconfig_auth_header(&kc);
		CHECK_STR(hdr, "Authorization: Bearer exec-1");
		free(hdr);
		CHECK(kubeconfig_refresh(&kc, 0, msg, sizeof(msg)) == 0);
		CHECK(count_lines(at("count")) == 1 + cases[i].rerun);
		CHECK_STR(kc.token, cases[i].rerun ? "exec-2" : "exec-1");
		CHECK(kubeconfig_refresh(&kc, 1, msg, sizeof(msg)) == 0); /* forced */
		CHECK(count_lines(at("count")) == 2 + cases[i].rerun);
		kubeconfig_release(&kc);
	}
	{
		FILE *f = fopen(at("count.info"), "r");
		size_t got = f ? fread(info, 1, sizeof(info) - 1, f) : 0;

		info[got] = '\0';
		if (f)
			fclose(f);
		CHECK_STR(info, "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\","
				"\"spec\":{\"interactive\":false}}");
	}
}

TEST(exec_offsets_v1beta1_path_and_cert)
{
	struct kubeconfig kc;
	struct http_opts o = { 0 };
	char msg[512], path[8192];
	time_t t = time(NULL) + 7200;

	/* +02:00: the same instant written two hours later on the clock */
	clean_env();
	snprintf(path, sizeof(path), "%s:%s", dir, orig_path);
	setenv("PATH", path, 1);
	{
		char exp[64];

		rfc3339(t + 7200, "+02:00", exp, sizeof(exp));
		CHECK(load_exec(&kc, "plugin.sh", V1BETA1, V1BETA1, "token", exp, "count-b", msg,
				sizeof(msg)) == 0);
	}
	CHECK_STR(kc.exec_command, "plugin.sh"); /* no '/': found on PATH */
	CHECK(kubeconfig_refresh(&kc, 0, msg, sizeof(msg)) == 0);
	CHECK_STR(kc.token, "exec-1");
	CHECK(kc.token_expiry == t);
	kubeconfig_release(&kc);

	clean_env();
	CHECK(load_exec(&kc, "./plugin.sh", V1, V1, "cert", "", "count-c", msg, sizeof(msg)) == 0);
	CHECK(kubeconfig_refresh(&kc, 0, msg, sizeof(msg)) == 0);
	CHECK_STR(kc.client_cert_pem, "CERT");
	CHECK_STR(kc.client_key_pem, "KEY");
	CHECK(kc.token == NULL && kubeconfig_auth_header(&kc) == NULL);
	kubeconfig_http_opts(&kc, &o);
	CHECK_STR(o.client_cert_pem, "CERT");
	CHECK_STR(o.client_key_pem, "KEY");
	CHECK(kubeconfig_refresh(&kc, 0, msg, sizeof(msg)) == 0);
	CHECK(count_lines(at("count-c")) == 1); /* a certificate without expiry is kept */
	kubeconfig_release(&kc);
}

TEST(exec_failures)
{
	static const struct {
		const char *command, *plugin_version, *mode;
		int rc;
		const char *want, *want2;
	} cases[] = {
		{ "./plugin.sh", V1, "fail", KERR_CHILD, "exited with 1",
		  "stderr: \"plugin broke: no credentials\"" },
		{ "./plugin.sh", V1, "badjson", KERR_PARSE, "not JSON",
		  "stderr: \"oops, not json\"" },
		{ "./plugin.sh", V1BETA1, "token", KERR_PARSE,
		  "returned apiVersion '" V1BETA1 "', expected '" V1 "'", "plugin.sh" },
		{ "./plugin.sh", V1, "sleep", KERR_TIMEOUT, "did not finish within 300 ms",
		  "stderr: \"sleeping\"" },
		{ "./plugin.sh", V1, "big", KERR_LIMIT, "more than 1048576 bytes", "plugin.sh" },
		{ "no-such-kubeconfig-plugin", V1, "token", KERR_NOTFOUND,
		  "'no-such-kubeconfig-plugin'", "install the plugin from example.com" },
	};
	struct kubeconfig kc;
	char msg[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct timespec t0, t1;
		int rc;

		clean_env();
		kubeconfig_exec_timeout_ms = 300;
		CHECK(load_exec(&kc, cases[i].command, V1, cases[i].plugin_version, cases[i].mode,
				"", "count-f", msg, sizeof(msg)) == 0);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		rc = kubeconfig_refresh(&kc, 0, msg, sizeof(msg));
		clock_gettime(CLOCK_MONOTONIC, &t1);
		CHECK(rc == cases[i].rc);
		CHECK_CONTAINS(msg, cases[i].want);
		CHECK_CONTAINS(msg, cases[i].want2);
		CHECK(t1.tv_sec - t0.tv_sec < 5);
		CHECK(kc.token == NULL);
		if (rc != cases[i].rc)
			fprintf(stderr, "  case %zu: rc %d (%s)\n", i, rc, msg);
		kubeconfig_release(&kc);
	}
}

TEST(exec_failure_keeps_token_out_of_messages)
{
	struct kubeconfig kc;
	char msg[512];

	clean_env();
	CHECK(load_exec(&kc, "./plugin.sh", V1, V1, "token", "", "count-t", msg, sizeof(msg)) == 0);
	CHECK(kubeconfig_refresh(&kc, 0, msg, sizeof(msg)) == 0);
	CHECK_STR(kc.token, "exec-1");
	write_file("count-t.mode", "failtok\n");
	CHECK(kubeconfig_refresh(&kc, 1, msg, sizeof(msg)) == KERR_CHILD);
	CHECK_CONTAINS(msg, "exited with 3");
	CHECK_CONTAINS(msg, "old token was");
	CHECK(strstr(msg, "exec-1") == NULL);
	CHECK_STR(kc.token, "exec-1"); /* the previous credential stays */
	unlink(at("count-t.mode"));
	kubeconfig_release(&kc);
}

TEST(static_credentials_beat_exec)
{
	static const char text[] = "current-context: c\n"
				   "clusters: [{name: k, cluster: {server: 'https://h'}}]\n"
				   "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
				   "users: [{name: u, user: {token: static, exec: {command: x, "
				   "apiVersion: " V1 "}}}]\n";
	struct kubeconfig kc;
	char msg[512];

	clean_env();
	CHECK(kubeconfig_load(&kc, write_file("both", text), NULL, msg, sizeof(msg)) == 0);
	CHECK(kc.exec_command == NULL);
	CHECK(kubeconfig_refresh(&kc, 1, msg, sizeof(msg)) == 0);
	CHECK_STR(kc.token, "static");
	kubeconfig_release(&kc);
}

int main(void)
{
	const char *path = getenv("PATH");

	if (!mkdtemp(dir))
		return 1;
	snprintf(orig_path, sizeof(orig_path), "%s", path ? path : "/usr/bin:/bin");
	mkdir(at("home"), 0700);
	mkdir(at("certs"), 0700);
	write_file("certs/ca.crt", CA_PEM);
	write_file("certs/client.crt", CERT_PEM);
	write_file("certs/client.key", KEY_PEM);
	write_file("base", base_text);
	write_file("plugin.sh", plugin_text);
	chmod(at("plugin.sh"), 0700);
	RUN(token_auth_current_context);
	RUN(named_context_and_default_namespace);
	RUN(client_certificates_files_and_data);
	RUN(token_file_reread_on_refresh);
	RUN(insecure_warns_and_refuses_ca);
	RUN(errors);
	RUN(kubeconfig_env_merged);
	RUN(home_kube_config);
	RUN(empty_token_files);
	RUN(in_cluster);
	RUN(exec_token_expiry);
	RUN(exec_offsets_v1beta1_path_and_cert);
	RUN(exec_failures);
	RUN(exec_failure_keeps_token_out_of_messages);
	RUN(static_credentials_beat_exec);
	{
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
	}
	return test_summary();
}
