/*
 * render.h - manifests from templates, substituted in parsed YAML.
 *
 * A template is one YAML document (a Kubernetes object).  Values go in
 * through placeholders written in scalars, never by pasting text, so no
 * value can change the document's structure (a value with a newline or a
 * colon stays inside its string):
 *
 *   key: ${name}       a plain scalar that is one placeholder takes the
 *                      value's JSON type: number, boolean, string, or a whole
 *                      mapping or list (node selectors, tolerations, env)
 *   key: "${name}"     a quoted scalar is always a string ("3", not 3: label
 *                      values)
 *   key: a-${name}-b   a placeholder inside a longer scalar: string
 *                      interpolation (the value must be a string or number)
 *   key: ${name?}      optional: when name has no value (absent or JSON
 *                      null) the entry is left out (its key from a mapping,
 *                      its item from a list)
 *   ${name}: value     a key may be a placeholder too (a resource name such
 *                      as nvidia.com/gpu); ${name?} drops the entry
 *
 * Inside a flow collection ([a, b] or {a: b}) YAML reads the braces of a
 * plain ${x} as structure: write such placeholders in block style.
 *
 * A placeholder without a value and without '?' is an error naming it and
 * where it is (FILE:LINE:COLUMN: key.path: ...); so is an unclosed "${" or a
 * name that is not [A-Za-z_][A-Za-z0-9_]*.  "$${" writes a literal "${".
 */
#ifndef KCTL_RENDER_H
#define KCTL_RENDER_H

#include <jansson.h>
#include <stddef.h>

struct sbuf;

/*
 * Renders text[0..len) (file names it in messages) with vars (a JSON object
 * of name -> value) into *out, a new JSON value the caller decrefs.
 * Returns 0, or KERR_PARSE / KERR_INVALID / KERR_RANGE with msg set and
 * *out NULL.
 */
int render_template(const char *file, const char *text, size_t len, const json_t *vars,
		    json_t **out, char *msg, size_t n);

/*
 * Appends v to b as block-style YAML: every string double-quoted (as JSON
 * writes it, which YAML reads the same), so the output reads back exactly.
 */
void render_yaml(struct sbuf *b, const json_t *v);

#endif
