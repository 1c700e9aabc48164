/*
 * kubeconfig.h - where the Kubernetes API server is and how to authenticate
 * to it, found the way client-go finds it.
 *
 * Files: the path argument; else $KUBECONFIG, a ':'-separated list whose
 * files are merged (a file that does not exist is skipped; for clusters,
 * users and contexts the first file that defines a name wins, and the
 * first file that sets current-context wins); else ~/.kube/config; else,
 * when none of those exists and KUBERNETES_SERVICE_HOST is set, the pod's
 * in-cluster service account (kubeconfig_in_cluster).
 *
 * Of each file only clusters, users, contexts and current-context are read;
 * other keys (preferences, extensions, ...) are ignored, as are unknown
 * keys inside entries.  Relative paths (certificate-authority,
 * client-certificate, client-key, tokenFile, and an exec command that
 * contains '/') are resolved against the folder of the file that defined
 * the entry.  The -data fields are base64 and override the path fields for
 * the CA; a client certificate given both ways is an error, as in client-go.
 *
 * Credentials: token, else tokenFile (read at load and again at every
 * kubeconfig_refresh), else a client certificate and key, else an exec
 * plugin (client.authentication.k8s.io/v1 or v1beta1), which runs only in
 * kubeconfig_refresh.  As in client-go, static credentials make the exec
 * plugin unused (its exec_* fields stay NULL).  A user with only an
 * auth-provider (or username/password) is refused: kctl does not speak
 * those.
 *
 * Errors name the file and, for a problem in the document, LINE:COLUMN
 * and the key path:
 *   ~/.kube/config:12:7: users[0].user.client-certificate-data: not base64
 * (paths under $HOME are shown with "~").  Tokens, keys and the contents
 * of token files are never logged and never put into messages; only
 * insecure-skip-tls-verify is logged (a warning, at load).
 */
#ifndef KCTL_KUBECONFIG_H
#define KCTL_KUBECONFIG_H

#include "http.h"

#include <stddef.h>
#include <time.h>

/* The default service-account folder of a pod. */
#define KUBECONFIG_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* How long an exec plugin may run before it is killed; tests lower it. */
extern long kubeconfig_exec_timeout_ms; /* 30000 */

/* Caller-owned; zero it or kubeconfig_release it before loading. */
struct kubeconfig {
	char *context;   /* the context used ("in-cluster" in a pod) */
	char *server;    /* "https://host:port" (no trailing '/') */
	char *namespace; /* the context's namespace, or the pod's in-cluster; NULL if none */
	char *source;    /* for messages: the file(s) or "in-cluster" */
	char *ca_file;   /* certificate-authority (path resolved against its file's folder) */
	char *ca_pem;    /* certificate-authority-data, base64-decoded PEM */
	char *tls_server_name;
	int insecure;                             /* insecure-skip-tls-verify: true */
	char *client_cert_file, *client_key_file; /* client-certificate / client-key */
	char *client_cert_pem, *client_key_pem;   /* ...-data, decoded; or from an exec plugin */
	char *token;         /* current bearer token (token, tokenFile contents, or exec result) */
	char *token_file;    /* tokenFile / in-cluster token: re-read on kubeconfig_refresh */
	time_t token_expiry; /* exec credential expirationTimestamp; 0 = none */
	/* exec plugin (client.authentication.k8s.io/v1 and v1beta1) */
	char *exec_command;
	char **exec_args; /* NULL-terminated (never NULL when exec_command is set) */
	char **exec_env;  /* NAME=VALUE, NULL-terminated (never NULL when exec_command is set) */
	char *exec_api_version;
	/* additions */
	char *cluster_name;      /* the context's cluster and user names; NULL in-cluster */
	char *user_name;         /* NULL also when the context names no user (anonymous) */
	char *exec_install_hint; /* the plugin's installHint, quoted when it is not found */
};

/*
 * Loads kc (see the top of this file for which files).  path NULL: the
 * search order above.  context NULL: the current-context.  Does not run an
 * exec plugin: call kubeconfig_refresh before each request.
 * Returns 0, or
 *   KERR_NOTFOUND  no kubeconfig and not in a pod; the context (msg lists
 *                  the contexts there are), or the cluster or user it
 *                  names, is not defined; no current-context;
 *   KERR_IO        a file (the kubeconfig, a CA, certificate, key or token
 *                  file) cannot be read;
 *   KERR_PARSE     malformed YAML, a wrong type, bad base64;
 *   KERR_INVALID   a cluster without server, insecure together with a CA,
 *                  a certificate without key, an unsupported exec
 *                  apiVersion or auth method;
 *   KERR_LIMIT     a file over 16 MiB.
 * kc must be released with kubeconfig_release in every case.
 */
int kubeconfig_load(struct kubeconfig *kc, const char *path, const char *context, char *msg,
		    size_t n);

/*
 * Loads kc from a pod's service account: dir (NULL: KUBECONFIG_SA_DIR)
 * holds token (required), ca.crt (used when present) and namespace
 * (optional; $POD_NAMESPACE wins over it, as in client-go); the server is
 * https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, an IPv6 host
 * in brackets.  Returns 0, KERR_NOTFOUND (the variables are not set: not
 * in a pod) or KERR_IO (the token cannot be read, or is empty).  kc must
 * be released with kubeconfig_release in every case.
 */
int kubeconfig_in_cluster(struct kubeconfig *kc, const char *dir, char *msg, size_t n);

/*
 * Makes the credential current.  With an exec plugin: runs it when kc has
 * no token or client certificate yet, when token_expiry is within 60 s, or
 * when force is set (say, after a 401), and takes its token (and expiry) or
 * client certificate and key.  With a token_file: re-reads it.  Otherwise
 * does nothing.  Returns 0, or KERR_IO (token file unreadable or empty;
 * plugin not found), KERR_CHILD (the plugin exited non-zero or was killed:
 * msg names the command and quotes the start of its stderr), KERR_TIMEOUT
 * (it ran longer than kubeconfig_exec_timeout_ms and was killed), KERR_LIMIT
 * (more than 1 MiB of output) or KERR_PARSE (output not an ExecCredential
 * of the configured apiVersion with a token or a certificate and key).  On
 * failure kc keeps its previous credential.
 */
int kubeconfig_refresh(struct kubeconfig *kc, int force, char *msg, size_t n);

/*
 * Fills the TLS fields of o (ca_file or ca_pem, client_cert/client_key or
 * their _pem, tls_server_name, insecure_skip_verify) from kc; o's other
 * fields are untouched.  o borrows kc's strings: use it while kc lives and
 * fill it again after kubeconfig_refresh.
 */
void kubeconfig_http_opts(const struct kubeconfig *kc, struct http_opts *o);

/*
 * Returns "Authorization: Bearer TOKEN" (malloc'd; the caller wipes and
 * frees it) or NULL when kc has no token (client certificate or anonymous).
 */
char *kubeconfig_auth_header(const struct kubeconfig *kc);

/* kc's namespace, or "default" when it has none (borrowed from kc or static). */
const char *kubeconfig_namespace(const struct kubeconfig *kc);

/* Frees kc's fields, wiping the token, keys and exec environment first; kc is zeroed. */
void kubeconfig_release(struct kubeconfig *kc);

#endif
