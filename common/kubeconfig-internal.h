/*
 * kubeconfig-internal.h - what kubeconfig.c (files, in-cluster) and
 * kubeconfig-exec.c (exec credential plugins) share.  Not part of the
 * module's contract: only those two files include it.  Names carry a
 * double underscore (kubeconfig__), as libuv's uv__ internals do.
 */
#ifndef KCTL_KUBECONFIG_INTERNAL_H
#define KCTL_KUBECONFIG_INTERNAL_H

#include "kubeconfig.h"

#include <stddef.h>

/*
 * Wipes the string *s (explicit_bzero over its length) and frees it, then
 * sets *s to NULL.  *s may be NULL already: then nothing happens.  Used
 * for anything that may hold a credential.
 */
void kubeconfig__wipe(char **s);

/*
 * Strips leading and trailing white space of s in place (the bytes freed
 * at the end are zeroed, so that no stray copy of a token's tail stays).
 * Returns s; nothing is allocated.
 */
char *kubeconfig__trim(char *s);

/*
 * Returns 1 when s holds no control characters (bytes below ' ' or DEL),
 * else 0.  A token goes into a header line, so one that fails is refused.
 */
int kubeconfig__printable(const char *s);

/*
 * Runs kc's exec plugin once (kc->exec_command must be set) and takes the
 * credential it prints: kc->token, client_cert_pem and client_key_pem are
 * replaced by copies kc owns (an unchanged value keeps its pointer, since
 * struct http_opts borrow them) and token_expiry is set.  Returns 0 or a
 * KERR_* code with msg filled, as kubeconfig_refresh in kubeconfig.h
 * lists them; on failure kc is left as it was.  The plugin's output is
 * wiped before being freed; a plugin still running is killed and reaped.
 */
int kubeconfig__exec(struct kubeconfig *kc, char *msg, size_t n);

#endif
