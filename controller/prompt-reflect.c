/*
 * prompt-reflect.c - the reflection: its prompt (prompt_reflect), built from
 * parts and trimmed to its limit like a round's prompt, and the parsing of
 * the learnings a model answers with (prompt_parse_reflection).
 *
 * May use: prompt.c's parts and trimming and prompt-text.c's renderers
 * (prompt-internal.h), sbuf and common/.
 */
#include "prompt-internal.h"
#include "sbuf.h"
#include "xalloc.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* --- reflection ---------------------------------------------------------- */

enum { R_HEAD, R_LEARNINGS, R_VARIANTS, R_ASK, R_COUNT };

static const struct part_kind reflect_kinds[R_COUNT] = {
	[R_HEAD] = { .name = "task" },
	[R_LEARNINGS] = { .name = "learnings",
			  .one = "older learning line",
			  .many = "older learning lines" },
	[R_VARIANTS] = { .name = "variants", .one = "variant", .many = "variants" },
	[R_ASK] = { .name = "ask" },
};

static const struct trim_step reflect_trims[] = {
	{ R_LEARNINGS, TRIM_DROP_FIRST },
	{ R_VARIANTS, TRIM_DROP_LAST },
};

static void reflect_head(struct sbuf *b, json_t *ctx)
{
	json_t *k = json_object_get(ctx, "kernel"), *v;
	const char *s;
	size_t i;

	sbuf_addf(b, "## Reflection on round %" JSON_INTEGER_FORMAT "\n",
		  prompt_int_of(ctx, "round", 0));
	sbuf_addf(b, "Kernel: %s\n", prompt_str_of(k, "name") ? prompt_str_of(k, "name") : "?");
	if ((s = prompt_str_of(k, "semantics")))
		sbuf_addf(b, "Semantics: %s\n", s);
	json_array_foreach (json_object_get(k, "shapes"), i, v)
		if (json_is_true(json_object_get(v, "primary"))) {
			sbuf_addf(b, "Timed shape: %s: ",
				  prompt_str_of(v, "name") ? prompt_str_of(v, "name") : "?");
			add_assignments(b, json_object_get(v, "values"));
			sbuf_addch(b, '\n');
		}
	sbuf_adds(b, "Below are the variants this round evaluated, with their figures or the way "
		     "they failed, and the learnings so far.  Distil what they teach about making "
		     "this kernel fast on this device.\n");
}

static void reflect_variant(struct sbuf *b, json_t *v)
{
	json_t *fig = json_object_get(v, "figures");
	const char *status = prompt_str_of(v, "status") ? prompt_str_of(v, "status")
							: prompt_str_of(fig, "status");
	const char *s;

	sbuf_addf(b, "### %s", prompt_str_of(v, "id") ? prompt_str_of(v, "id") : "(no id)");
	if ((s = prompt_str_of(v, "parent")))
		sbuf_addf(b, " (parent %s)", s);
	sbuf_addf(b, ": %s", status ? status : "not evaluated");
	if ((s = prompt_str_of(v, "fault_kind")) && (!status || strcmp(s, status)))
		sbuf_addf(b, " (%s)", s);
	if (status && !strcmp(status, "ok")) {
		sbuf_adds(b, "; ");
		add_figure_line(b, fig);
	}
	sbuf_addch(b, '\n');
	add_rationale_params(b, v);
	add_evidence_line(b, fig);
	if ((s = prompt_str_of(v, "evidence")) && *s) {
		sbuf_adds(b, "Evidence:\n");
		add_indented(b, s, REFLECT_EVIDENCE_MAX, "    ");
	}
}

char *prompt_reflect(json_t *ctx, size_t max_bytes)
{
	struct part parts[R_COUNT];
	json_t *v, *tr = json_array();
	size_t max = max_bytes ? max_bytes : PROMPT_DEFAULT_MAX, i, len;
	char *out;

	for (i = 0; i < R_COUNT; i++)
		part_init(&parts[i], &reflect_kinds[i]);
	reflect_head(&parts[R_HEAD].head, ctx);
	prompt_build_learnings(&parts[R_LEARNINGS], ctx, "## Learnings so far\n");
	sbuf_adds(&parts[R_VARIANTS].head, "## The variants of this round\n");
	json_array_foreach (json_object_get(ctx, "variants"), i, v)
		reflect_variant(&part_add(&parts[R_VARIANTS])->full, v);
	part_seal(&parts[R_VARIANTS]);
	sbuf_adds(&parts[R_ASK].head,
		  "## What to write\n"
		  "Write what this round teaches, one finding per line, in this form:\n"
		  "LEARNING: one specific, checkable finding [r03-v001, r03-v004]\n"
		  "The brackets at the end of the line cite the ids of the variants above that the "
		  "finding rests on; a line that cites none, or an id not listed above, is "
		  "discarded.  Write only what the figures support: what helped and by how much, "
		  "what failed and why, what to avoid next.  Do not restate the learnings so far.  "
		  "At most 8 lines; nothing but LEARNING lines is read.\n");
	parts_trim(parts, R_COUNT, reflect_trims, sizeof(reflect_trims) / sizeof(reflect_trims[0]),
		   max, tr);
	out = parts_render(parts, R_COUNT);
	len = strlen(out);
	if (len > max)
		out[prompt_utf8_cut(out, max)] = '\0';
	for (i = 0; i < R_COUNT; i++)
		part_release(&parts[i]);
	json_decref(tr);
	return out;
}

/* --- parsing a reflection ------------------------------------------------- */

static int is_blank(int c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/*
 * The learning of line s[0, len) after its "LEARNING:" tag: {"text",
 * "cites"}, or NULL when it cites no id or one not in known.
 */
static json_t *parse_learning(const char *s, size_t len, json_t *known)
{
	const char *end = s + len, *open, *p;
	json_t *l = NULL, *cites = json_array(), *text;
	char *body;

	while (end > s && (is_blank(end[-1]) || end[-1] == '.'))
		end--;
	if (end == s || end[-1] != ']')
		goto out;
	for (open = end - 1; open > s && *open != '['; open--)
		;
	if (*open != '[')
		goto out;
	for (p = open + 1; p < end;) {
		const char *c = memchr(p, ',', (size_t)(end - 1 - p)), *e = c ? c : end - 1, *q = e;
		char *id;

		while (p < q && is_blank(*p))
			p++;
		while (q > p && is_blank(q[-1]))
			q--;
		id = xstrndup(p, (size_t)(q - p));
		if (!json_object_get(known, id)) {
			free(id);
			goto out;
		}
		if (!prompt_in_names(cites, id))
			json_array_append_new(cites, json_string(id));
		free(id);
		p = e + 1;
	}
	for (p = s; p < open && is_blank(*p); p++)
		;
	for (end = open; end > p && is_blank(end[-1]); end--)
		;
	body = xstrndup(p, (size_t)(end - p));
	text_defang(body); /* shown by kctl brief and the report, kept in the prompts */
	text = json_string(body);
	free(body);
	if (!json_array_size(cites) || end == p || !text) {
		json_decref(text);
		goto out;
	}
	l = json_pack("{s:o, s:O}", "text", text, "cites", cites);
out:
	json_decref(cites);
	return l;
}

/* Where the learning of a "LEARNING:" line starts (after an optional bullet), or NULL. */
static const char *learning_tag(const char *s, size_t len)
{
	static const char tag[] = "LEARNING:";
	const char *end = s + len;

	while (s < end && is_blank(*s))
		s++;
	if (end - s >= 2 && (*s == '-' || *s == '*') && s[1] == ' ')
		s += 2;
	while (s < end && is_blank(*s))
		s++;
	if ((size_t)(end - s) < sizeof(tag) - 1 || memcmp(s, tag, sizeof(tag) - 1))
		return NULL;
	return s + sizeof(tag) - 1;
}

json_t *prompt_parse_reflection(const char *answer, json_t *known, size_t *dropped)
{
	json_t *out = json_array(), *set = json_object(), *v, *l;
	const char *s = answer ? answer : "";
	size_t i, nd = 0;

	json_array_foreach (known, i, v)
		if (json_is_string(v))
			json_object_set_new(set, json_string_value(v), json_true());
	while (*s) {
		const char *nl = strchr(s, '\n'), *body;
		size_t len = nl ? (size_t)(nl - s) : strlen(s);

		if ((body = learning_tag(s, len))) {
			if ((l = parse_learning(body, len - (size_t)(body - s), set)))
				json_array_append_new(out, l);
			else
				nd++;
		}
		s += len + (nl != NULL);
	}
	json_decref(set);
	if (dropped)
		*dropped = nd;
	return out;
}
