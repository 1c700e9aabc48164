/*
 * kubeconfig.c - kubeconfig files and in-cluster service accounts; the
 * contract is in kubeconfig.h.  This file picks the context and reads its
 * cluster and user field by field (TLS material, tokens, the exec plugin's
 * settings), so that a broken entry elsewhere is no error unless its name
 * or shape is.  Below it: kubeconfig-file.c finds the files and the named
 * entries in them, kubeconfig-exec.c runs an exec credential plugin,
 * kubeconfig-secret.c handles the text that holds credentials.
 *
 * May use: kubeconfig-internal.h (those three files), err, log, sbuf,
 * xalloc, yamlx.
 */
#include "kubeconfig.h"
#include "err.h"
#include "kubeconfig-internal.h"
#include "log.h"
#include "sbuf.h"
#include "xalloc.h"
#include "yamlx.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KC_REFRESH_AHEAD 60 /* seconds before expiry that a token is renewed */

#define KC_V1      "client.authentication.k8s.io/v1"
#define KC_V1BETA1 "client.authentication.k8s.io/v1beta1"

/* ---- fields of clusters and users ---- */

enum kc_kind {
	KF_STR,  /* a string */
	KF_PATH, /* a path, resolved against the file's folder */
	KF_B64,  /* base64 of PEM text */
	KF_BOOL,
};

struct kc_field {
	const char *key;
	enum kc_kind kind;
	size_t off; /* of the char * (or int, KF_BOOL) in struct kubeconfig */
};

#define KC_AT(kc, off)   ((char **)(void *)((char *)(kc) + (off)))
#define KC_FLAG(kc, off) ((int *)(void *)((char *)(kc) + (off)))

static const struct kc_field kc_cluster_fields[] = {
	{ "server", KF_STR, offsetof(struct kubeconfig, server) },
	{ "certificate-authority", KF_PATH, offsetof(struct kubeconfig, ca_file) },
	{ "certificate-authority-data", KF_B64, offsetof(struct kubeconfig, ca_pem) },
	{ "tls-server-name", KF_STR, offsetof(struct kubeconfig, tls_server_name) },
	{ "insecure-skip-tls-verify", KF_BOOL, offsetof(struct kubeconfig, insecure) },
};

static const struct kc_field kc_user_fields[] = {
	{ "token", KF_STR, offsetof(struct kubeconfig, token) },
	{ "tokenFile", KF_PATH, offsetof(struct kubeconfig, token_file) },
	{ "client-certificate", KF_PATH, offsetof(struct kubeconfig, client_cert_file) },
	{ "client-certificate-data", KF_B64, offsetof(struct kubeconfig, client_cert_pem) },
	{ "client-key", KF_PATH, offsetof(struct kubeconfig, client_key_file) },
	{ "client-key-data", KF_B64, offsetof(struct kubeconfig, client_key_pem) },
};

static int kc_read_field(const struct kc_entry *e, const struct kc_field *fd, struct kubeconfig *kc)
{
	struct kc_file *f = e->f;
	const yaml_node_t *nd = yamlx_map_get(&f->y, e->map, fd->key);
	char path[YAMLX_PATH_LEN];
	const char *s = NULL;
	int rc;

	if (!nd || yamlx_type_of(nd) == YAMLX_NULL)
		return 0;
	yamlx_path_key(path, e->path, fd->key);
	if (fd->kind == KF_BOOL)
		return yamlx_get_bool(&f->y, nd, path, KC_FLAG(kc, fd->off));
	if ((rc = yamlx_get_text(&f->y, nd, path, &s)) || !*s)
		return rc;
	if (fd->kind == KF_STR)
		*KC_AT(kc, fd->off) = xstrdup(s);
	else if (fd->kind == KF_PATH)
		*KC_AT(kc, fd->off) = kubeconfig__resolve(f->dir, s);
	else if (kubeconfig__b64_decode(s, KC_AT(kc, fd->off)))
		return yamlx_fail(&f->y, nd, KERR_PARSE, path, "not base64 of PEM text");
	return 0;
}

static int kc_read_fields(const struct kc_entry *e, const struct kc_field *t, size_t nt,
			  struct kubeconfig *kc)
{
	int rc = 0;

	for (size_t i = 0; i < nt && !rc && e->map; i++)
		rc = kc_read_field(e, &t[i], kc);
	return rc;
}

/* A file a kubeconfig names must be readable now, as client-go checks. */
static int kc_need_file(const struct kc_entry *e, const char *key, const char *path)
{
	if (!path || !access(path, R_OK))
		return 0;
	return yamlx_fail(&e->f->y, e->at, KERR_IO, e->path, "%s '%s': %s", key, path,
			  strerror(errno));
}

/* ---- exec plugin settings ---- */

/*
 * The item count of nd, a list or absent/null (0); anything else is an
 * error.  The type is checked first: a scalar's or mapping's size read as
 * a list's is garbage (a scalar `args:` asked calloc for 2^44 entries).
 */
static int kc_list_count(struct kc_file *f, const yaml_node_t *nd, const char *path, size_t *cnt)
{
	int rc = 0;

	*cnt = 0;
	if (nd && yamlx_type_of(nd) != YAMLX_NULL &&
	    !(rc = yamlx_need_list(&f->y, nd, path, 0, SIZE_MAX)))
		*cnt = yamlx_list_size(nd);
	return rc;
}

static int kc_read_args(struct kc_file *f, const yaml_node_t *nd, const char *path, char ***out)
{
	size_t cnt;
	char ipath[YAMLX_PATH_LEN];
	const char *s;
	int rc = kc_list_count(f, nd, path, &cnt);

	*out = xcalloc(cnt + 1, sizeof(**out));
	for (size_t i = 0; i < cnt && !rc; i++) {
		yamlx_path_idx(ipath, path, i);
		rc = yamlx_get_text(&f->y, yamlx_list_item(&f->y, nd, i), ipath, &s);
		if (!rc)
			(*out)[i] = xstrdup(s);
	}
	return rc;
}

static int kc_read_env(struct kc_file *f, const yaml_node_t *nd, const char *path, char ***out)
{
	size_t cnt;
	char ipath[YAMLX_PATH_LEN];
	const char *name, *value;
	int rc = kc_list_count(f, nd, path, &cnt);

	*out = xcalloc(cnt + 1, sizeof(**out));
	for (size_t i = 0; i < cnt && !rc; i++) {
		const yaml_node_t *item = yamlx_list_item(&f->y, nd, i);

		yamlx_path_idx(ipath, path, i);
		if ((rc = yamlx_need_map(&f->y, item, ipath, 0, SIZE_MAX)) ||
		    (rc = kubeconfig__text(f, item, ipath, "name", &name)) ||
		    (rc = kubeconfig__text(f, item, ipath, "value", &value)))
			break;
		if (!name || strchr(name, '='))
			rc = yamlx_fail(&f->y, item, KERR_INVALID, ipath,
					"needs a name without '='");
		else
			(*out)[i] = xasprintf("%s=%s", name, value ? value : "");
	}
	return rc;
}

static int kc_read_exec(const struct kc_entry *e, const yaml_node_t *ex, struct kubeconfig *kc)
{
	static const char *const versions[] = { KC_V1, KC_V1BETA1, NULL };
	struct kc_file *f = e->f;
	char path[YAMLX_PATH_LEN], sub[YAMLX_PATH_LEN];
	const yaml_node_t *nd;
	const char *s;
	int rc, idx = 0;

	yamlx_path_key(path, e->path, "exec");
	if ((rc = yamlx_need_map(&f->y, ex, path, 0, SIZE_MAX)) ||
	    (rc = kubeconfig__text(f, ex, path, "command", &s)))
		return rc;
	if (!s)
		return yamlx_fail(&f->y, ex, KERR_INVALID, path, "has no command");
	kc->exec_command = strchr(s, '/') ? kubeconfig__resolve(f->dir, s) : xstrdup(s);
	yamlx_path_key(sub, path, "apiVersion");
	if (!(nd = yamlx_map_get(&f->y, ex, "apiVersion")))
		return yamlx_fail(&f->y, ex, KERR_INVALID, path, "has no apiVersion (%s or %s)",
				  KC_V1, KC_V1BETA1);
	if ((rc = yamlx_get_enum(&f->y, nd, sub, versions, &idx)))
		return rc;
	kc->exec_api_version = xstrdup(versions[idx]);
	yamlx_path_key(sub, path, "args");
	if ((rc = kc_read_args(f, yamlx_map_get(&f->y, ex, "args"), sub, &kc->exec_args)))
		return rc;
	yamlx_path_key(sub, path, "env");
	if ((rc = kc_read_env(f, yamlx_map_get(&f->y, ex, "env"), sub, &kc->exec_env)))
		return rc;
	if ((rc = kubeconfig__text(f, ex, path, "installHint", &s)) || !s)
		return rc;
	kc->exec_install_hint = xstrdup(s);
	return 0;
}

/* ---- context, cluster, user ---- */

static int kc_load_cluster(struct kc_set *s, struct kubeconfig *kc, char *msg, size_t n)
{
	struct kc_entry e;
	int rc = kubeconfig__find(s, "clusters", "cluster", kc->cluster_name, &e);

	if (rc < 0)
		return rc;
	if (!rc)
		return kerr_set(msg, n, KERR_NOTFOUND,
				"context '%s' names cluster '%s', which %s does not define",
				kc->context, kc->cluster_name, kc->source);
	rc = kc_read_fields(&e, kc_cluster_fields,
			    sizeof(kc_cluster_fields) / sizeof(*kc_cluster_fields), kc);
	if (!rc && !kc->server)
		rc = yamlx_fail(&e.f->y, e.at, KERR_INVALID, e.path, "cluster '%s' has no server",
				kc->cluster_name);
	if (!rc && kc->insecure && (kc->ca_file || kc->ca_pem))
		rc = yamlx_fail(&e.f->y, e.at, KERR_INVALID, e.path,
				"specifying a root certificates file with the insecure flag is not "
				"allowed");
	if (!rc && !kc->ca_pem)
		rc = kc_need_file(&e, "certificate-authority", kc->ca_file);
	if (rc)
		return rc;
	if (!strstr(kc->server, "://")) {
		char *full = xasprintf("https://%s", kc->server);

		free(kc->server);
		kc->server = full;
	}
	for (size_t len = strlen(kc->server); len && kc->server[len - 1] == '/'; len--)
		kc->server[len - 1] = '\0';
	if (kc->insecure)
		log_warn(
			"%s: cluster '%s' sets insecure-skip-tls-verify: TLS verification of %s is "
			"off because the kubeconfig says so",
			e.f->shown, kc->cluster_name, kc->server);
	return 0;
}

/* Client certificates as client-go validates them; then the exec plugin, if still needed. */
static int kc_check_user(const struct kc_entry *e, struct kubeconfig *kc)
{
	struct yamlx *y = &e->f->y;
	const yaml_node_t *ex = yamlx_map_get(y, e->map, "exec");
	int cert = kc->client_cert_file || kc->client_cert_pem;
	int key = kc->client_key_file || kc->client_key_pem;
	int rc = 0;

	if (kc->client_cert_file && kc->client_cert_pem)
		return yamlx_fail(y, e->at, KERR_INVALID, e->path,
				  "client-certificate-data and client-certificate are both given");
	if (kc->client_key_file && kc->client_key_pem)
		return yamlx_fail(y, e->at, KERR_INVALID, e->path,
				  "client-key-data and client-key are both given");
	if (cert != key)
		return yamlx_fail(y, e->at, KERR_INVALID, e->path, "a client %s without its %s",
				  cert ? "certificate" : "key", cert ? "key" : "certificate");
	if ((rc = kc_need_file(e, "client-certificate", kc->client_cert_file)) ||
	    (rc = kc_need_file(e, "client-key", kc->client_key_file)))
		return rc;
	if (kc->token || kc->token_file || cert)
		return 0; /* static credentials: client-go leaves the exec plugin unused */
	if (ex && yamlx_type_of(ex) != YAMLX_NULL)
		return kc_read_exec(e, ex, kc);
	if (yamlx_map_get(y, e->map, "auth-provider") || yamlx_map_get(y, e->map, "username"))
		return yamlx_fail(y, e->at, KERR_INVALID, e->path,
				  "auth-provider and username/password are not supported; use "
				  "a token, a client certificate or an exec plugin");
	return 0;
}

static int kc_load_user(struct kc_set *s, struct kubeconfig *kc, char *msg, size_t n)
{
	struct kc_entry e;
	int rc;

	if (!kc->user_name)
		return 0; /* anonymous */
	rc = kubeconfig__find(s, "users", "user", kc->user_name, &e);
	if (rc < 0)
		return rc;
	if (!rc)
		return kerr_set(msg, n, KERR_NOTFOUND,
				"context '%s' names user '%s', which %s does not define",
				kc->context, kc->user_name, kc->source);
	if (!e.map)
		return 0;
	rc = kc_read_fields(&e, kc_user_fields, sizeof(kc_user_fields) / sizeof(*kc_user_fields),
			    kc);
	if (!rc)
		rc = kc_check_user(&e, kc);
	if (!rc && kc->token_file && !kc->token)
		rc = kubeconfig__read_token(kc->token_file, &kc->token, msg, n);
	return rc;
}

/* The context's name: the caller's, else the first current-context set. */
static int kc_pick_context(struct kc_set *s, const char *context, struct kubeconfig *kc, char *msg,
			   size_t n)
{
	struct sbuf names = SBUF_INIT;
	const char *cur = context;
	int rc = 0;

	for (size_t i = 0; i < s->nf && !cur && !rc; i++)
		rc = kubeconfig__text(&s->f[i], s->f[i].root, "", "current-context", &cur);
	if (rc)
		return rc;
	if (cur) {
		kc->context = xstrdup(cur);
		return 0;
	}
	kubeconfig__names(s, &names);
	rc = kerr_set(msg, n, KERR_NOTFOUND, "%s sets no current-context and none was named%s%s",
		      kc->source, names.len ? "; contexts: " : "", names.len ? names.buf : "");
	sbuf_release(&names);
	return rc;
}

static int kc_load_context(struct kc_set *s, struct kubeconfig *kc, char *msg, size_t n)
{
	struct sbuf names = SBUF_INIT;
	struct kc_entry e;
	const char *v;
	int rc = kubeconfig__find(s, "contexts", "context", kc->context, &e);

	if (rc == 0) {
		kubeconfig__names(s, &names);
		rc = kerr_set(msg, n, KERR_NOTFOUND, "context '%s' not found in %s; %s%s",
			      kc->context, kc->source, names.len ? "contexts: " : "there are none",
			      names.len ? names.buf : "");
		sbuf_release(&names);
		return rc;
	}
	if (rc < 0 || (rc = kubeconfig__text(e.f, e.map, e.path, "cluster", &v)))
		return rc;
	if (!v)
		return yamlx_fail(&e.f->y, e.at, KERR_INVALID, e.path,
				  "context '%s' names no cluster", kc->context);
	kc->cluster_name = xstrdup(v);
	if ((rc = kubeconfig__text(e.f, e.map, e.path, "user", &v)))
		return rc;
	kc->user_name = v ? xstrdup(v) : NULL;
	if ((rc = kubeconfig__text(e.f, e.map, e.path, "namespace", &v)))
		return rc;
	kc->namespace = v ? xstrdup(v) : NULL;
	return 0;
}

static char *kc_source(const struct kc_set *s)
{
	struct sbuf b = SBUF_INIT;

	for (size_t i = 0; i < s->nf; i++)
		sbuf_addf(&b, "%s%s", i ? ":" : "", s->f[i].shown);
	return sbuf_detach(&b, NULL);
}

int kubeconfig_load(struct kubeconfig *kc, const char *path, const char *context, char *msg,
		    size_t n)
{
	struct kc_set s = { 0 };
	int rc;

	memset(kc, 0, sizeof(*kc));
	if ((rc = kubeconfig__set_open(&s, path, msg, n)))
		goto out;
	if (!s.nf && context) {
		rc = kerr_set(msg, n, KERR_NOTFOUND,
			      "context '%s' not found: no kubeconfig file %s", context,
			      kubeconfig__env("KUBECONFIG") ? "of $KUBECONFIG exists" : "exists");
		goto out;
	}
	if (!s.nf) {
		rc = kubeconfig_in_cluster(kc, NULL, msg, n);
		if (rc == KERR_NOTFOUND)
			rc = kerr_set(msg, n, KERR_NOTFOUND,
				      "no kubeconfig (%s) and not in a pod (no "
				      "KUBERNETES_SERVICE_HOST/PORT)",
				      kubeconfig__env("KUBECONFIG")
					      ? "no file of $KUBECONFIG exists"
					      : "~/.kube/config does not exist");
		goto out;
	}
	kc->source = kc_source(&s);
	if (!(rc = kc_pick_context(&s, context, kc, msg, n)) &&
	    !(rc = kc_load_context(&s, kc, msg, n)) && !(rc = kc_load_cluster(&s, kc, msg, n)))
		rc = kc_load_user(&s, kc, msg, n);
out:
	kubeconfig__set_release(&s);
	return rc;
}

/* ---- in-cluster ---- */

int kubeconfig_in_cluster(struct kubeconfig *kc, const char *dir, char *msg, size_t n)
{
	const char *host = kubeconfig__env("KUBERNETES_SERVICE_HOST"),
		   *port = kubeconfig__env("KUBERNETES_SERVICE_PORT");
	const char *ns = kubeconfig__env("POD_NAMESPACE");
	char *ca = NULL, *nsfile = NULL;
	int rc;

	memset(kc, 0, sizeof(*kc));
	if (!host || !port)
		return kerr_set(msg, n, KERR_NOTFOUND,
				"not in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
				"are not both set");
	if (!dir)
		dir = KUBECONFIG_SA_DIR;
	kc->context = xstrdup("in-cluster");
	kc->source = xstrdup("in-cluster");
	kc->server = xasprintf(strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port);
	kc->token_file = xasprintf("%s/token", dir);
	rc = kubeconfig__read_token(kc->token_file, &kc->token, msg, n);
	ca = xasprintf("%s/ca.crt", dir);
	if (!access(ca, R_OK)) {
		kc->ca_file = ca;
		ca = NULL;
	}
	nsfile = xasprintf("%s/namespace", dir);
	if (ns)
		kc->namespace = xstrdup(ns);
	else if (!rc && kubeconfig__exists(nsfile))
		rc = kubeconfig__read_small(nsfile, "namespace file", &kc->namespace, msg, n);
	free(ca);
	free(nsfile);
	return rc;
}

/* ---- using the result ---- */

int kubeconfig_refresh(struct kubeconfig *kc, int force, char *msg, size_t n)
{
	if (kc->exec_command) {
		int have = kc->token || kc->client_cert_pem;
		int expiring =
			kc->token_expiry && kc->token_expiry - time(NULL) <= KC_REFRESH_AHEAD;

		if (!force && have && !expiring)
			return 0;
		return kubeconfig__exec(kc, msg, n);
	}
	if (kc->token_file)
		return kubeconfig__read_token(kc->token_file, &kc->token, msg, n);
	return 0;
}

void kubeconfig_http_opts(const struct kubeconfig *kc, struct http_opts *o)
{
	o->ca_pem = kc->ca_pem;
	o->ca_file = kc->ca_pem ? NULL : kc->ca_file;
	o->client_cert_pem = kc->client_cert_pem;
	o->client_key_pem = kc->client_key_pem;
	o->client_cert = kc->client_cert_pem ? NULL : kc->client_cert_file;
	o->client_key = kc->client_key_pem ? NULL : kc->client_key_file;
	o->tls_server_name = kc->tls_server_name;
	o->insecure_skip_verify = kc->insecure;
}

char *kubeconfig_auth_header(const struct kubeconfig *kc)
{
	return kc->token ? xasprintf("Authorization: Bearer %s", kc->token) : NULL;
}

const char *kubeconfig_namespace(const struct kubeconfig *kc)
{
	return kc->namespace ? kc->namespace : "default";
}

void kubeconfig_release(struct kubeconfig *kc)
{
	if (!kc)
		return;
	free(kc->context);
	free(kc->server);
	free(kc->namespace);
	free(kc->source);
	free(kc->ca_file);
	free(kc->ca_pem);
	free(kc->tls_server_name);
	free(kc->client_cert_file);
	free(kc->client_key_file);
	kubeconfig__wipe(&kc->client_cert_pem);
	kubeconfig__wipe(&kc->client_key_pem);
	kubeconfig__wipe(&kc->token);
	free(kc->token_file);
	free(kc->exec_command);
	kubeconfig__wipe_list(&kc->exec_args);
	kubeconfig__wipe_list(&kc->exec_env);
	free(kc->exec_api_version);
	free(kc->cluster_name);
	free(kc->user_name);
	free(kc->exec_install_hint);
	memset(kc, 0, sizeof(*kc));
}
