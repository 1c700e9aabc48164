/*
 * kubeconfig-file.c - the kubeconfig files and the named entries in them:
 * which files to read (an explicit path, $KUBECONFIG, ~/.kube/config),
 * loading and checking each, and finding a cluster, user or context by
 * name across them, first file first.  kubeconfig.c reads the entries it
 * finds field by field.  Declared, with the contracts, in
 * kubeconfig-internal.h.
 *
 * The files stay loaded (libyaml trees through yamlx) while the lookups
 * run; the documents held credentials, so their text and scalars are
 * wiped before being freed.
 *
 * May use: err, fileio, sbuf, xalloc, yamlx; nothing else of the module.
 */
#include "kubeconfig-internal.h"
#include "err.h"
#include "fileio.h"
#include "sbuf.h"
#include "xalloc.h"
#include "yamlx.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define KC_MAX_FILE (16u << 20) /* a kubeconfig */

const char *kubeconfig__env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* path with a leading $HOME shown as "~"; malloc'd. */
static char *kc_shown(const char *path)
{
	const char *home = kubeconfig__env("HOME");
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

char *kubeconfig__resolve(const char *dir, const char *p)
{
	return *p == '/' ? xstrdup(p) : xasprintf("%s/%s", dir, p);
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

void kubeconfig__set_release(struct kc_set *s)
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

int kubeconfig__exists(const char *path)
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
		if (!dup && kubeconfig__exists(p))
			rc = kc_set_add(s, p, msg, n);
	}
	free(copy);
	return rc;
}

/* The files by the search order of kubeconfig.h; s may end up empty. */
int kubeconfig__set_open(struct kc_set *s, const char *path, char *msg, size_t n)
{
	const char *env = kubeconfig__env("KUBECONFIG"), *home = kubeconfig__env("HOME");
	char *def;
	int rc = 0;

	if (path)
		return kc_set_add(s, path, msg, n);
	if (env)
		return kc_set_add_env(s, env, msg, n);
	if (!home)
		return 0;
	def = xasprintf("%s/.kube/config", home);
	if (kubeconfig__exists(def))
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
int kubeconfig__find(struct kc_set *s, const char *section, const char *inner, const char *name,
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
void kubeconfig__names(struct kc_set *s, struct sbuf *out)
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
int kubeconfig__text(struct kc_file *f, const yaml_node_t *map, const char *parent, const char *key,
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
