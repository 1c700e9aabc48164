/*
 * kubeconfig-internal.h - what the files of the kubeconfig module share.
 * Not part of the module's contract: only its own files include it.  Names
 * carry a double underscore (kubeconfig__), as libuv's uv__ internals do.
 * The layers, each using only those below it:
 *   kubeconfig.c         the context, its cluster and user; in-cluster
 *   kubeconfig-exec.c    running an exec credential plugin
 *   kubeconfig-file.c    the files, and the named entries in them
 *   kubeconfig-secret.c  text that may hold a credential
 */
#ifndef KCTL_KUBECONFIG_INTERNAL_H
#define KCTL_KUBECONFIG_INTERNAL_H

#include "kubeconfig.h"
#include "sbuf.h"
#include "yamlx.h"

#include <stddef.h>

/* --- kubeconfig-secret.c ------------------------------------------------ */

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

/* Wipes each string of the NULL-terminated *list, frees it, sets *list to NULL. */
void kubeconfig__wipe_list(char ***list);

/*
 * Reads the small file path (a token, a namespace; at most 1 MiB), trimmed,
 * into *out, malloc'd: the caller wipes and frees it.  An empty file is an
 * error naming it as what.  Returns 0, or a KERR_* code with msg filled and
 * *out NULL.
 */
int kubeconfig__read_small(const char *path, const char *what, char **out, char *msg, size_t n);

/*
 * Reads token file path into *tok, wiping what *tok held; a token with
 * control characters is refused.  Returns 0, or a KERR_* code with msg
 * filled and *tok kept as it was.
 */
int kubeconfig__read_token(const char *path, char **tok, char *msg, size_t n);

/*
 * Decodes standard base64 (white space skipped, padding optional) into a
 * malloc'd NUL-terminated *out.  Returns 0, or -1 for bad input or a result
 * that holds a NUL byte (the fields decoded are PEM text).
 */
int kubeconfig__b64_decode(const char *s, char **out);

/* --- kubeconfig-file.c -------------------------------------------------- */

/* One loaded kubeconfig file. */
struct kc_file {
	char *path;  /* as named */
	char *shown; /* for messages: "~" for $HOME */
	char *dir;   /* the folder relative paths in it resolve against */
	char *text;
	size_t len;
	struct yamlx y;
	const yaml_node_t *root; /* a mapping, or NULL for an empty file */
};

/* The files merged, in order of precedence. */
struct kc_set {
	struct kc_file *f;
	size_t nf;
};

/* An entry of clusters/users/contexts found by name. */
struct kc_entry {
	struct kc_file *f;
	const yaml_node_t *at;     /* where messages point: the inner mapping, else the item */
	const yaml_node_t *map;    /* the inner mapping (cluster:, user:, context:); may be NULL */
	char path[YAMLX_PATH_LEN]; /* of the inner mapping, e.g. "users[0].user" */
};

/* The environment variable name, or NULL when it is unset or empty. */
const char *kubeconfig__env(const char *name);

/* p resolved against the folder dir (p itself when absolute); malloc'd. */
char *kubeconfig__resolve(const char *dir, const char *p);

/* 0 when path does not exist (ENOENT), else 1: other errors show on reading. */
int kubeconfig__exists(const char *path);

/*
 * Loads into s (zeroed by the caller) the files by the search order of
 * kubeconfig.h: path, else each existing file of $KUBECONFIG, else
 * ~/.kube/config when it exists; s may end up empty.  Each file is checked
 * to hold lists of named mappings.  Returns 0 or a KERR_* code with msg
 * filled; release s with kubeconfig__set_release either way.
 */
int kubeconfig__set_open(struct kc_set *s, const char *path, char *msg, size_t n);

/* Wipes every document of s and frees its files; s is left empty. */
void kubeconfig__set_release(struct kc_set *s);

/*
 * Finds the first file's entry named name in section ("clusters") with its
 * inner mapping inner ("cluster").  Returns 1 with e filled (borrowing from
 * s), 0 when no file has it, or a KERR_* code with the files' message.
 */
int kubeconfig__find(struct kc_set *s, const char *section, const char *inner, const char *name,
		     struct kc_entry *e);

/* Appends "a, b, c" of the context names in every file to out, each once. */
void kubeconfig__names(struct kc_set *s, struct sbuf *out);

/*
 * The text value key of map (whose path is parent) into *out, borrowed
 * from f; *out is NULL when map or the key is absent, null or "".
 * Returns 0 or a KERR_* code with f's message.
 */
int kubeconfig__text(struct kc_file *f, const yaml_node_t *map, const char *parent, const char *key,
		     const char **out);

/* --- kubeconfig-exec.c -------------------------------------------------- */

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
