/*
 * render.c - templates with placeholders in parsed YAML; the contract is in
 * render.h.
 */
#include "render.h"
#include "err.h"
#include "sbuf.h"
#include "xalloc.h"
#include "yamlx.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RENDER_NAME_MAX 64

/* What one scalar turned into. */
enum render_kind { RK_VALUE, RK_DROP };

struct render {
	struct yamlx y;
	const json_t *vars;
};

/* The value of name, or NULL when it has none (absent or null). */
static const json_t *render_var(const struct render *r, const char *name)
{
	const json_t *v = json_object_get(r->vars, name);

	return v && !json_is_null(v) ? v : NULL;
}

/*
 * Parses "${name}" or "${name?}" at p (p[0..1] == "${"); fills name and
 * *optional, returns the length consumed, or 0 when malformed.
 */
static size_t render_placeholder(const char *p, char name[RENDER_NAME_MAX], int *optional)
{
	size_t i = 2, len = 0;

	if (!isalpha((unsigned char)p[i]) && p[i] != '_')
		return 0;
	while ((isalnum((unsigned char)p[i]) || p[i] == '_') && len + 1 < RENDER_NAME_MAX)
		name[len++] = p[i++];
	name[len] = '\0';
	*optional = p[i] == '?';
	i += (size_t)*optional;
	return p[i] == '}' ? i + 1 : 0;
}

/* Appends a scalar value to b for interpolation; nonzero when v is not scalar. */
static int render_text_of(struct sbuf *b, const json_t *v)
{
	if (json_is_string(v))
		sbuf_adds(b, json_string_value(v));
	else if (json_is_integer(v))
		sbuf_addf(b, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		sbuf_addf(b, "%.17g", json_real_value(v));
	else if (json_is_boolean(v))
		sbuf_adds(b, json_is_true(v) ? "true" : "false");
	else
		return -1;
	return 0;
}

/*
 * Renders the scalar node nd (at path) into *out, or says to drop it.
 * as_key: the scalar is a mapping key, which must come out a string.
 */
static int render_scalar(struct render *r, const yaml_node_t *nd, const char *path, int as_key,
			 json_t **out, enum render_kind *kind)
{
	const char *t = yamlx_text(nd), *p;
	char name[RENDER_NAME_MAX];
	struct sbuf b = SBUF_INIT;
	int optional = 0, quoted = nd->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
	size_t used;

	*kind = RK_VALUE;
	*out = NULL;
	if (!strstr(t, "${"))
		return as_key ? (*out = json_string(t), 0) : yamlx_to_json(&r->y, nd, path, out);
	/* the whole scalar is one placeholder: the value keeps its type */
	if (!strncmp(t, "${", 2) && (used = render_placeholder(t, name, &optional)) && !t[used]) {
		const json_t *v = render_var(r, name);

		if (!v && optional) {
			*kind = RK_DROP;
			return 0;
		}
		if (!v)
			return yamlx_fail(&r->y, nd, KERR_INVALID, path,
					  "placeholder ${%s} has no value", name);
		if ((quoted || as_key) && !json_is_string(v)) {
			sbuf_addch(&b, '\0');
			b.len = 0;
			if (render_text_of(&b, v)) {
				sbuf_release(&b);
				return yamlx_fail(&r->y, nd, KERR_INVALID, path,
						  "${%s} is a %s where a string is wanted", name,
						  json_is_array(v) ? "list" : "mapping");
			}
			*out = json_string(b.buf);
			sbuf_release(&b);
			return 0;
		}
		*out = json_deep_copy(v);
		return 0;
	}
	/* interpolation */
	sbuf_addch(&b, '\0');
	b.len = 0;
	for (p = t; *p;) {
		const json_t *v;

		if (!strncmp(p, "$${", 3)) {
			sbuf_adds(&b, "${");
			p += 3;
			continue;
		}
		if (strncmp(p, "${", 2)) {
			sbuf_addch(&b, *p++);
			continue;
		}
		if (!(used = render_placeholder(p, name, &optional))) {
			sbuf_release(&b);
			return yamlx_fail(&r->y, nd, KERR_PARSE, path,
					  "malformed placeholder at column %d of '%.60s'",
					  (int)(p - t) + 1, t);
		}
		v = render_var(r, name);
		if (!v && optional) {
			sbuf_release(&b);
			*kind = RK_DROP;
			return 0;
		}
		if (!v || render_text_of(&b, v)) {
			sbuf_release(&b);
			return yamlx_fail(
				&r->y, nd, KERR_INVALID, path,
				v ? "${%s} is not a string or number: it cannot go inside "
				    "a string"
				  : "placeholder ${%s} has no value",
				name);
		}
		p += used;
	}
	*out = json_string(b.buf);
	sbuf_release(&b);
	return 0;
}

static int render_node(struct render *r, const yaml_node_t *nd, const char *path, json_t **out,
		       enum render_kind *kind);

static int render_map(struct render *r, const yaml_node_t *nd, const char *path, json_t **out)
{
	json_t *m = json_object();
	int rc = 0;

	for (size_t i = 0; !rc && i < yamlx_map_size(nd); i++) {
		const yaml_node_t *kn = yamlx_map_key(&r->y, nd, i);
		char sub[YAMLX_PATH_LEN];
		json_t *k = NULL, *v = NULL;
		enum render_kind kk, vk = RK_VALUE;

		yamlx_path_key(sub, path, yamlx_text(kn));
		rc = render_scalar(r, kn, sub, 1, &k, &kk);
		if (!rc && kk == RK_VALUE)
			rc = render_node(r, yamlx_map_value(&r->y, nd, i), sub, &v, &vk);
		if (!rc && kk == RK_VALUE && vk == RK_VALUE) {
			if (json_object_get(m, json_string_value(k)))
				rc = yamlx_fail(&r->y, kn, KERR_INVALID, sub,
						"the key '%.60s' appears twice after substitution",
						json_string_value(k));
			else
				json_object_set(m, json_string_value(k), v);
		}
		json_decref(k);
		json_decref(v);
	}
	if (rc)
		json_decref(m);
	*out = rc ? NULL : m;
	return rc;
}

static int render_list(struct render *r, const yaml_node_t *nd, const char *path, json_t **out)
{
	json_t *a = json_array();
	int rc = 0;

	for (size_t i = 0; !rc && i < yamlx_list_size(nd); i++) {
		char sub[YAMLX_PATH_LEN];
		json_t *v = NULL;
		enum render_kind vk;

		yamlx_path_idx(sub, path, i);
		rc = render_node(r, yamlx_list_item(&r->y, nd, i), sub, &v, &vk);
		if (!rc && vk == RK_VALUE)
			json_array_append(a, v);
		json_decref(v);
	}
	if (rc)
		json_decref(a);
	*out = rc ? NULL : a;
	return rc;
}

static int render_node(struct render *r, const yaml_node_t *nd, const char *path, json_t **out,
		       enum render_kind *kind)
{
	*kind = RK_VALUE;
	switch (yamlx_type_of(nd)) {
	case YAMLX_MAP: return render_map(r, nd, path, out);
	case YAMLX_LIST: return render_list(r, nd, path, out);
	default: return render_scalar(r, nd, path, 0, out, kind);
	}
}

int render_template(const char *file, const char *text, size_t len, const json_t *vars,
		    json_t **out, char *msg, size_t n)
{
	struct render r = { .vars = vars };
	enum render_kind kind = RK_VALUE;
	int rc;

	*out = NULL;
	yamlx_init(&r.y, file, msg, n);
	rc = yamlx_load(&r.y, text, len, "a manifest template", "a Kubernetes object");
	if (!rc)
		rc = yamlx_check(&r.y, yamlx_root(&r.y));
	if (!rc)
		rc = render_node(&r, yamlx_root(&r.y), "", out, &kind);
	if (!rc && (kind == RK_DROP || !json_is_object(*out)))
		rc = yamlx_fail(&r.y, yamlx_root(&r.y), KERR_INVALID, "",
				"the template must render to a mapping");
	if (rc) {
		json_decref(*out);
		*out = NULL;
	}
	yamlx_release(&r.y);
	return rc;
}

/* --- YAML out -------------------------------------------------------------- */

static void render_indent(struct sbuf *b, int depth)
{
	for (int i = 0; i < depth; i++)
		sbuf_adds(b, "  ");
}

static void render_scalar_out(struct sbuf *b, const json_t *v)
{
	char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));

	sbuf_adds(b, t ? t : "null");
	free(t);
}

static int render_is_empty(const json_t *v)
{
	return (json_is_object(v) && !json_object_size(v)) ||
	       (json_is_array(v) && !json_array_size(v));
}

/* Whether key can be written plain: a name, not a word YAML reads as null, bool or number. */
static int render_plain_key(const char *k)
{
	static const char *const words[] = { "null", "Null",  "NULL",  "true",  "True",
					     "TRUE", "false", "False", "FALSE", "yes",
					     "Yes",  "YES",   "no",    "No",    "NO",
					     "on",   "On",    "ON",    "off",   "Off",
					     "OFF",  "y",     "Y",     "n",     "N" };

	if (!isalpha((unsigned char)k[0]))
		return 0;
	for (const char *p = k; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("_./-", *p))
			return 0;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strcmp(k, words[i]))
			return 0;
	return 1;
}

static void render_value(struct sbuf *b, const json_t *v, int depth, int inline_first);

/* A key and its value; the line is already indented. */
static void render_entry(struct sbuf *b, const char *k, const json_t *x, int depth)
{
	if (render_plain_key(k)) {
		sbuf_adds(b, k);
	} else {
		json_t *key = json_string(k);

		render_scalar_out(b, key);
		json_decref(key);
	}
	sbuf_addch(b, ':');
	if ((json_is_object(x) || json_is_array(x)) && !render_is_empty(x)) {
		sbuf_addch(b, '\n');
		render_value(b, x, depth + 1, 0);
	} else {
		sbuf_addch(b, ' ');
		render_value(b, x, depth, 0);
	}
}

/*
 * v (not empty) at depth; inline_first: the first line continues one
 * already begun ("- "), so it gets no indentation of its own.
 */
static void render_value(struct sbuf *b, const json_t *v, int depth, int inline_first)
{
	const char *k;
	size_t i;
	json_t *x;
	int first = 1;

	if (render_is_empty(v)) {
		sbuf_adds(b, json_is_object(v) ? "{}\n" : "[]\n");
	} else if (json_is_object(v)) {
		json_object_foreach ((json_t *)v, k, x) {
			if (!(first && inline_first))
				render_indent(b, depth);
			first = 0;
			render_entry(b, k, x, depth);
		}
	} else if (json_is_array(v)) {
		json_array_foreach ((json_t *)v, i, x) {
			if (!(first && inline_first))
				render_indent(b, depth);
			first = 0;
			sbuf_adds(b, "- ");
			if ((json_is_object(x) || json_is_array(x)) && !render_is_empty(x))
				render_value(b, x, depth + 1, 1);
			else
				render_value(b, x, depth, 0);
		}
	} else {
		render_scalar_out(b, v);
		sbuf_addch(b, '\n');
	}
}

void render_yaml(struct sbuf *b, const json_t *v)
{
	render_value(b, v, 0, 0);
}
