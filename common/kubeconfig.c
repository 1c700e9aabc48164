/*
 * kubeconfig.c - kubeconfig files and in-cluster service accounts; the
 * contract is in kubeconfig.h.  Running an exec credential plugin and
 * reading its ExecCredential live in kubeconfig-exec.c.
 *
 * The files stay loaded (libyaml trees through yamlx) while one context,
 * its cluster and its user are looked up across them, first file first;
 * only the entries used are read field by field, so that a broken entry
 * elsewhere is no error unless its name or shape is.  The documents held
 * credentials, so their text and scalars are wiped before being freed.
 */
#include "kubeconfig.h"
#include "err.h"
#include "fileio.h"
#include "kubeconfig-internal.h"
#include "log.h"
#include "sbuf.h"
#include "xalloc.h"
#include "yamlx.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define KC_MAX_FILE      (16u << 20) /* a kubeconfig */
#define KC_MAX_SMALL     (1u << 20)  /* a token or namespace file */
#define KC_REFRESH_AHEAD 60          /* seconds before expiry that a token is renewed */

#define KC_V1      "client.authentication.k8s.io/v1"
#define KC_V1BETA1 "client.authentication.k8s.io/v1beta1"

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

/* ---- small helpers ---- */

void kubeconfig__wipe(char **s)
{
	if (*s) {
		explicit_bzero(*s, strlen(*s));
		free(*s);
		*s = NULL;
	}
}

static void kc_wipe_list(char ***list)
{
	for (char **p = *list; p && *p; p++)
		kubeconfig__wipe(p);
	free(*list);
	*list = NULL;
}

static const char *kc_env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* path with a leading $HOME shown as "~"; malloc'd. */
static char *kc_shown(const char *path)
{
	const char *home = kc_env("HOME");
	size_t hl = home ? strlen(home) : 0;

	while (hl > 1 && home[hl - 1] == '/')
		hl--;
	if (hl > 1 && !strncmp(path, home, hl) && path[hl] == '/')
		return xasprintf("~%s", path + hl);
	return xstrdup(path);
}

static char *kc_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return xstrdup(".");
	if (slash == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(slash - path));
}

static char *kc_resolve(const char *dir, const char *p)
{
	return *p == '/' ? xstrdup(p) : xasprintf("%s/%s", dir, p);
}

char *kubeconfig__trim(char *s)
{
	size_t len = strlen(s), lead = 0;

	while (len && isspace((unsigned char)s[len - 1]))
		s[--len] = '\0';
	while (isspace((unsigned char)s[lead]))
		lead++;
	memmove(s, s + lead, len - lead + 1);
	memset(s + len - lead + 1, 0, lead); /* no stray copy of a token's tail */
	return s;
}

/* Reads a small file, trimmed, into *out (malloc'd, wiped by the caller). */
static int kc_read_small(const char *path, const char *what, char **out, char *msg, size_t n)
{
	char *text = NULL;
	size_t len = 0;
	int rc = file_read(path, KC_MAX_SMALL, &text, &len, msg, n);

	*out = NULL;
	if (rc)
		return rc;
	kubeconfig__trim(text);
	if (!*text) {
		free(text);
		return kerr_set(msg, n, KERR_IO, "%s '%s' is empty", what, path);
	}
	*out = text;
	return 0;
}

int kubeconfig__printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < ' ' || *s == 0x7f)
			return 0;
	return 1;
}

/* Reads token file path into *tok, wiping what *tok held; *tok is kept on failure. */
static int kc_read_token(const char *path, char **tok, char *msg, size_t n)
{
	char *fresh = NULL;
	int rc = kc_read_small(path, "token file", &fresh, msg, n);

	if (rc)
		return rc;
	if (!kubeconfig__printable(fresh)) {
		kubeconfig__wipe(&fresh);
		return kerr_set(msg, n, KERR_INVALID, "token file '%s' holds control characters",
				path);
	}
	kubeconfig__wipe(tok);
	*tok = fresh;
	return 0;
}

static int kc_b64_value(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/*
 * Decodes standard base64 (white space skipped, padding optional) into a
 * malloc'd NUL-terminated *out.  Returns 0, or -1 for bad input or a result
 * that holds a NUL byte (the fields decoded here are PEM text).
 */
static int kc_b64_decode(const char *s, char **out)
{
	size_t len = strlen(s), o = 0, q = 0, pad = 0;
	unsigned char *buf = xmalloc(len / 4 * 3 + 4);
	uint32_t acc = 0;
	int bits = 0;

	*out = NULL;
	for (const char *p = s; *p; p++) {
		int v = kc_b64_value((unsigned char)*p);

		if (isspace((unsigned char)*p))
			continue;
		if (*p == '=' && ++pad <= 2)
			continue;
		if (v < 0 || pad)
			goto bad;
		q++;
		acc = (acc << 6 | (uint32_t)v) & 0xffffff;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[o++] = (unsigned char)(acc >> bits);
		}
	}
	if (q % 4 == 1 || (pad && (q + pad) % 4) || memchr(buf, 0, o))
		goto bad;
	buf[o] = '\0';
	*out = (char *)buf;
	return 0;
bad:
	explicit_bzero(buf, len / 4 * 3 + 4);
	free(buf);
	return -1;
}

/* ---- files ---- */

/* Wipes every scalar of the document (tokens, keys) and frees the file. */
static void kc_file_release(struct kc_file *f)
{
	if (f->y.loaded)
		for (yaml_node_t *nd = f->y.doc.nodes.start; nd < f->y.doc.nodes.top; nd++)
			if (nd->type == YAML_SCALAR_NODE)
				explicit_bzero(nd->data.scalar.value, nd->data.scalar.length);
	yamlx_release(&f->y);
	if (f->text) {
		explicit_bzero(f->text, f->len);
		free(f->text);
	}
	free(f->path);
	free(f->shown);
	free(f->dir);
	memset(f, 0, sizeof(*f));
}

static void kc_set_release(struct kc_set *s)
{
	for (size_t i = 0; i < s->nf; i++)
		kc_file_release(&s->f[i]);
	free(s->f);
	s->f = NULL;
	s->nf = 0;
}

static int kc_file_check(struct kc_file *f);

/* Reads and checks path as the next file of s. */
static int kc_set_add(struct kc_set *s, const char *path, char *msg, size_t n)
{
	struct kc_file *f;
	int rc;

	s->f = xreallocarray(s->f, s->nf + 1, sizeof(*s->f));
	f = &s->f[s->nf++];
	memset(f, 0, sizeof(*f));
	f->path = xstrdup(path);
	f->shown = kc_shown(path);
	f->dir = kc_dirname(path);
	yamlx_init(&f->y, f->shown, msg, n);
	rc = file_read(path, KC_MAX_FILE, &f->text, &f->len, msg, n);
	if (rc)
		return rc;
	rc = yamlx_load(&f->y, f->text, f->len, "a kubeconfig", "a kubeconfig mapping");
	if (rc && f->y.loaded && !yamlx_root(&f->y))
		return 0; /* an empty file: an empty config, as client-go has it */
	if (!rc)
		rc = yamlx_check(&f->y, yamlx_root(&f->y));
	if (rc)
		return rc;
	f->root = yamlx_root(&f->y);
	if (yamlx_type_of(f->root) == YAMLX_NULL)
		f->root = NULL;
	else if (!(rc = yamlx_need_map(&f->y, f->root, "", 0, SIZE_MAX)))
		rc = kc_file_check(f);
	return rc;
}

static int kc_exists(const char *path)
{
	struct stat st;

	return !(stat(path, &st) && errno == ENOENT);
}

/* Adds each existing file of $KUBECONFIG (once each). */
static int kc_set_add_env(struct kc_set *s, const char *list, char *msg, size_t n)
{
	char *copy = xstrdup(list), *save = NULL, *p;
	int rc = 0;

	for (p = strtok_r(copy, ":", &save); p && !rc; p = strtok_r(NULL, ":", &save)) {
		int dup = 0;

		for (size_t i = 0; i < s->nf; i++)
			dup |= !strcmp(s->f[i].path, p);
		if (!dup && kc_exists(p))
			rc = kc_set_add(s, p, msg, n);
	}
	free(copy);
	return rc;
}

/* The files by the search order of kubeconfig.h; s may end up empty. */
static int kc_set_open(struct kc_set *s, const char *path, char *msg, size_t n)
{
	const char *env = kc_env("KUBECONFIG"), *home = kc_env("HOME");
	char *def;
	int rc = 0;

	if (path)
		return kc_set_add(s, path, msg, n);
	if (env)
		return kc_set_add_env(s, env, msg, n);
	if (!home)
		return 0;
	def = xasprintf("%s/.kube/config", home);
	if (kc_exists(def))
		rc = kc_set_add(s, def, msg, n);
	free(def);
	return rc;
}

/* ---- entries ---- */

/* The name of list item i of a section (checked), into *name. */
static int kc_item_name(struct kc_file *f, const yaml_node_t *item, const char *ipath,
			const char **name)
{
	const yaml_node_t *nd;
	char npath[YAMLX_PATH_LEN];
	int rc = yamlx_need_map(&f->y, item, ipath, 0, SIZE_MAX);

	if (rc)
		return rc;
	nd = yamlx_map_get(&f->y, item, "name");
	if (!nd)
		return yamlx_fail(&f->y, item, KERR_PARSE, ipath, "has no name");
	yamlx_path_key(npath, ipath, "name");
	return yamlx_get_text(&f->y, nd, npath, name);
}

/* f's list section (clusters, users, contexts) into *list; NULL when absent or null. */
static int kc_section(struct kc_file *f, const char *section, const yaml_node_t **list)
{
	*list = f->root ? yamlx_map_get(&f->y, f->root, section) : NULL;
	if (!*list || yamlx_type_of(*list) == YAMLX_NULL) {
		*list = NULL;
		return 0;
	}
	return yamlx_need_list(&f->y, *list, section, 0, SIZE_MAX);
}

/* The sections are lists of named mappings throughout, as client-go decodes them. */
static int kc_file_check(struct kc_file *f)
{
	static const char *const sections[] = { "clusters", "users", "contexts" };
	const yaml_node_t *list;
	char ipath[YAMLX_PATH_LEN];
	const char *name;
	int rc = 0;

	for (size_t i = 0; i < sizeof(sections) / sizeof(*sections) && !rc; i++) {
		rc = kc_section(f, sections[i], &list);
		for (size_t j = 0; !rc && list && j < yamlx_list_size(list); j++) {
			yamlx_path_idx(ipath, sections[i], j);
			rc = kc_item_name(f, yamlx_list_item(&f->y, list, j), ipath, &name);
		}
	}
	return rc;
}

/* Finds name in f's section; returns 1 (e filled), 0 (not there) or an error. */
static int kc_find_in(struct kc_file *f, const char *section, const char *inner, const char *name,
		      struct kc_entry *e)
{
	const yaml_node_t *list, *item;
	char ipath[YAMLX_PATH_LEN];
	const char *got;
	int rc = kc_section(f, section, &list);

	for (size_t i = 0; !rc && list && i < yamlx_list_size(list); i++) {
		item = yamlx_list_item(&f->y, list, i);
		yamlx_path_idx(ipath, section, i);
		rc = kc_item_name(f, item, ipath, &got);
		if (rc || strcmp(got, name))
			continue;
		e->f = f;
		yamlx_path_key(e->path, ipath, inner);
		e->map = yamlx_map_get(&f->y, item, inner);
		if (e->map && yamlx_type_of(e->map) == YAMLX_NULL)
			e->map = NULL;
		e->at = e->map ? e->map : item;
		if (e->map && (rc = yamlx_need_map(&f->y, e->map, e->path, 0, SIZE_MAX)))
			return rc;
		return 1;
	}
	return rc;
}

/* The first file's entry named name; 1, 0 or an error, as kc_find_in. */
static int kc_find(struct kc_set *s, const char *section, const char *inner, const char *name,
		   struct kc_entry *e)
{
	int rc = 0;

	for (size_t i = 0; i < s->nf && !rc; i++)
		rc = kc_find_in(&s->f[i], section, inner, name, e);
	return rc;
}

/* Whether a file before s->f[i] defines a context named name. */
static int kc_seen_before(struct kc_set *s, size_t i, const char *name)
{
	struct kc_entry e;

	for (size_t j = 0; j < i; j++)
		if (kc_find_in(&s->f[j], "contexts", "context", name, &e) == 1)
			return 1;
	return 0;
}

/* "a, b, c" of the context names in every file (for messages), each once. */
static void kc_names(struct kc_set *s, struct sbuf *out)
{
	const char *section = "contexts";

	for (size_t i = 0; i < s->nf; i++) {
		struct kc_file *f = &s->f[i];
		const yaml_node_t *list;

		if (kc_section(f, section, &list) || !list)
			continue;
		for (size_t j = 0; j < yamlx_list_size(list); j++) {
			const yaml_node_t *item = yamlx_list_item(&f->y, list, j), *nd;

			if (item->type != YAML_MAPPING_NODE ||
			    !(nd = yamlx_map_get(&f->y, item, "name")) ||
			    nd->type != YAML_SCALAR_NODE)
				continue;
			if (!kc_seen_before(s, i, yamlx_text(nd)))
				sbuf_addf(out, "%s%s", out->len ? ", " : "", yamlx_text(nd));
		}
	}
}

/* A text value of map (NULL when absent, null or ""); *out borrowed. */
static int kc_text(struct kc_file *f, const yaml_node_t *map, const char *parent, const char *key,
		   const char **out)
{
	const yaml_node_t *nd = map ? yamlx_map_get(&f->y, map, key) : NULL;
	char path[YAMLX_PATH_LEN];
	int rc;

	*out = NULL;
	if (!nd || yamlx_type_of(nd) == YAMLX_NULL)
		return 0;
	yamlx_path_key(path, parent, key);
	rc = yamlx_get_text(&f->y, nd, path, out);
	if (!rc && !**out)
		*out = NULL;
	return rc;
}

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
		*KC_AT(kc, fd->off) = kc_resolve(f->dir, s);
	else if (kc_b64_decode(s, KC_AT(kc, fd->off)))
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
		    (rc = kc_text(f, item, ipath, "name", &name)) ||
		    (rc = kc_text(f, item, ipath, "value", &value)))
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
	    (rc = kc_text(f, ex, path, "command", &s)))
		return rc;
	if (!s)
		return yamlx_fail(&f->y, ex, KERR_INVALID, path, "has no command");
	kc->exec_command = strchr(s, '/') ? kc_resolve(f->dir, s) : xstrdup(s);
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
	if ((rc = kc_text(f, ex, path, "installHint", &s)) || !s)
		return rc;
	kc->exec_install_hint = xstrdup(s);
	return 0;
}

/* ---- context, cluster, user ---- */

static int kc_load_cluster(struct kc_set *s, struct kubeconfig *kc, char *msg, size_t n)
{
	struct kc_entry e;
	int rc = kc_find(s, "clusters", "cluster", kc->cluster_name, &e);

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
	rc = kc_find(s, "users", "user", kc->user_name, &e);
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
		rc = kc_read_token(kc->token_file, &kc->token, msg, n);
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
		rc = kc_text(&s->f[i], s->f[i].root, "", "current-context", &cur);
	if (rc)
		return rc;
	if (cur) {
		kc->context = xstrdup(cur);
		return 0;
	}
	kc_names(s, &names);
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
	int rc = kc_find(s, "contexts", "context", kc->context, &e);

	if (rc == 0) {
		kc_names(s, &names);
		rc = kerr_set(msg, n, KERR_NOTFOUND, "context '%s' not found in %s; %s%s",
			      kc->context, kc->source, names.len ? "contexts: " : "there are none",
			      names.len ? names.buf : "");
		sbuf_release(&names);
		return rc;
	}
	if (rc < 0 || (rc = kc_text(e.f, e.map, e.path, "cluster", &v)))
		return rc;
	if (!v)
		return yamlx_fail(&e.f->y, e.at, KERR_INVALID, e.path,
				  "context '%s' names no cluster", kc->context);
	kc->cluster_name = xstrdup(v);
	if ((rc = kc_text(e.f, e.map, e.path, "user", &v)))
		return rc;
	kc->user_name = v ? xstrdup(v) : NULL;
	if ((rc = kc_text(e.f, e.map, e.path, "namespace", &v)))
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
	if ((rc = kc_set_open(&s, path, msg, n)))
		goto out;
	if (!s.nf && context) {
		rc = kerr_set(msg, n, KERR_NOTFOUND,
			      "context '%s' not found: no kubeconfig file %s", context,
			      kc_env("KUBECONFIG") ? "of $KUBECONFIG exists" : "exists");
		goto out;
	}
	if (!s.nf) {
		rc = kubeconfig_in_cluster(kc, NULL, msg, n);
		if (rc == KERR_NOTFOUND)
			rc = kerr_set(msg, n, KERR_NOTFOUND,
				      "no kubeconfig (%s) and not in a pod (no "
				      "KUBERNETES_SERVICE_HOST/PORT)",
				      kc_env("KUBECONFIG") ? "no file of $KUBECONFIG exists"
							   : "~/.kube/config does not exist");
		goto out;
	}
	kc->source = kc_source(&s);
	if (!(rc = kc_pick_context(&s, context, kc, msg, n)) &&
	    !(rc = kc_load_context(&s, kc, msg, n)) && !(rc = kc_load_cluster(&s, kc, msg, n)))
		rc = kc_load_user(&s, kc, msg, n);
out:
	kc_set_release(&s);
	return rc;
}

/* ---- in-cluster ---- */

int kubeconfig_in_cluster(struct kubeconfig *kc, const char *dir, char *msg, size_t n)
{
	const char *host = kc_env("KUBERNETES_SERVICE_HOST"),
		   *port = kc_env("KUBERNETES_SERVICE_PORT");
	const char *ns = kc_env("POD_NAMESPACE");
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
	rc = kc_read_token(kc->token_file, &kc->token, msg, n);
	ca = xasprintf("%s/ca.crt", dir);
	if (!access(ca, R_OK)) {
		kc->ca_file = ca;
		ca = NULL;
	}
	nsfile = xasprintf("%s/namespace", dir);
	if (ns)
		kc->namespace = xstrdup(ns);
	else if (!rc && kc_exists(nsfile))
		rc = kc_read_small(nsfile, "namespace file", &kc->namespace, msg, n);
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
		return kc_read_token(kc->token_file, &kc->token, msg, n);
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
	kc_wipe_list(&kc->exec_args);
	kc_wipe_list(&kc->exec_env);
	free(kc->exec_api_version);
	free(kc->cluster_name);
	free(kc->user_name);
	free(kc->exec_install_hint);
	memset(kc, 0, sizeof(*kc));
}
