/*
 * spec-render.c - a point of the tunable space rendered into a variant of
 * the template, the way tunables.render says: -D build options, or the
 * blocks' #define lines given the point's values (spec_render_point).  The
 * tuner renders with it, and so does the spec's own check of every launch
 * expression at sampled settings (spec-exprs.c), so both agree.
 *
 * May use: spec.h, mutate.h (blocks, #define lines) and common/.
 */
#include "spec.h"
#include "err.h"
#include "mutate.h"
#include "sbuf.h"
#include "xalloc.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int spec_tunable_index(const struct spec *s, const char *name, size_t len)
{
	for (size_t j = 0; j < s->ntunables; j++)
		if (strlen(s->tunables[j].name) == len && !memcmp(s->tunables[j].name, name, len))
			return (int)j;
	return -1;
}

/* Reads params into vals (one per tunable, in spec order). */
static int params_values(const struct spec *s, json_t *params, int64_t *vals, char *msg, size_t n)
{
	const char *key;
	json_t *x;

	if (!json_is_object(params))
		return kerr_set(msg, n, KERR_INVALID, "params: not an object");
	json_object_foreach (params, key, x) {
		if (spec_tunable_index(s, key, strlen(key)) < 0)
			return kerr_set(msg, n, KERR_INVALID, "params: '%s' is not a tunable", key);
	}
	for (size_t j = 0; j < s->ntunables; j++) {
		x = json_object_get(params, s->tunables[j].name);
		if (!json_is_integer(x))
			return kerr_set(msg, n, KERR_INVALID, "params: '%s' is %s",
					s->tunables[j].name, x ? "not an integer" : "missing");
		vals[j] = json_integer_value(x);
	}
	return 0;
}

static char *render_options(const struct spec *s, const int64_t *vals)
{
	struct sbuf sb = SBUF_INIT;

	sbuf_adds(&sb, s->build_options ? s->build_options : "");
	for (size_t j = 0; j < s->ntunables; j++)
		sbuf_addf(&sb, "%s-D%s=%" PRId64, sb.len ? " " : "", s->tunables[j].name, vals[j]);
	return sbuf_detach(&sb, NULL);
}

/*
 * Copies the body of block b, giving every tunable's #define line its new
 * value (the rest of the line, comment included, is kept); marks in found
 * the tunables that had a line.  sb may be NULL to only mark.
 */
static void render_body(const struct spec *s, const struct block *b, const int64_t *vals,
			char *found, struct sbuf *sb)
{
	const char *src = s->template_src;

	for (size_t off = b->start; off < b->end;) {
		size_t len = strcspn(src + off, "\n"), next;
		const char *p = src + off;
		struct define_line d;
		int j = -1;

		if (off + len > b->end)
			len = b->end - off;
		next = off + len + (off + len < b->end);
		if (define_line_parse(p, len, &d))
			j = spec_tunable_index(s, p + d.name, d.name_len);
		if (j >= 0)
			found[j] = 1;
		if (sb && j >= 0) {
			sbuf_add(sb, p, d.value);
			sbuf_addf(sb, "%s%" PRId64, d.value == d.name + d.name_len ? " " : "",
				  vals[j]);
			sbuf_add(sb, p + d.value_end, next - off - d.value_end);
		} else if (sb) {
			sbuf_add(sb, p, next - off);
		}
		off = next;
	}
}

static char *render_define(const struct spec *s, const struct blocks *bl, const int64_t *vals)
{
	const char *src = s->template_src;
	char *found = xcalloc(s->ntunables, 1);
	struct sbuf sb = SBUF_INIT;
	size_t prev = 0;

	for (size_t i = 0; i < bl->n; i++)
		render_body(s, &bl->b[i], vals, found, NULL);
	for (size_t i = 0; i < bl->n; i++) {
		sbuf_add(&sb, src + prev, bl->b[i].start - prev);
		for (size_t j = 0; i == 0 && j < s->ntunables; j++)
			if (!found[j])
				sbuf_addf(&sb, "%s#define %s %" PRId64 "\n", bl->b[0].indent,
					  s->tunables[j].name, vals[j]);
		render_body(s, &bl->b[i], vals, found, &sb);
		prev = bl->b[i].end;
	}
	sbuf_adds(&sb, src + prev);
	free(found);
	return sbuf_detach(&sb, NULL);
}

int spec_render_point(const struct spec *s, const struct blocks *bl, json_t *params, char **source,
		      char **options, char *msg, size_t n)
{
	int64_t *vals = xcalloc(s->ntunables, sizeof(*vals));
	char why[512];
	int rc;

	*source = *options = NULL;
	rc = params_values(s, params, vals, msg, n);
	if (rc)
		goto out;
	if (s->render == RENDER_OPTIONS) {
		*source = xstrdup(s->template_src);
		*options = render_options(s, vals);
	} else {
		*source = render_define(s, bl, vals);
		*options = xstrdup(s->build_options ? s->build_options : "");
	}
	if (blocks_verify(s->template_src, bl, *source, s->marker_start, s->marker_end, why,
			  sizeof(why)))
		rc = kerr_set(msg, n, KERR_INVALID, "rendering the tunables broke the template: %s",
			      why);
out:
	if (rc) {
		free(*source);
		free(*options);
		*source = *options = NULL;
	}
	free(vals);
	return rc;
}
