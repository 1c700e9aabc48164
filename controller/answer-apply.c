/*
 * answer-apply.c - applying a parsed direction (answer_apply) to its parent:
 * EDIT results spliced back byte for byte, BLOCK bodies through
 * blocks_inject, the result checked with blocks_verify; and the #define lines
 * of the blocks that TUNABLE lines set (answer_get_define, answer_set_define).
 *
 * May use: answer-internal.h (answer.h's parsed directions and two line
 * helpers of answer.c), mutate, sbuf and common/.  answer.c calls nothing here.
 */
#include "answer-internal.h"
#include "err.h"
#include "mutate.h"
#include "sbuf.h"
#include "xalloc.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* --- #define lines in the blocks -------------------------------------------- */

/*
 * Counts the "#define name" lines in the blocks of src; *at gets the
 * first one's value span as offsets in src.
 */
static size_t define_find(const char *src, const struct blocks *bl, const char *name,
			  struct define_line *at)
{
	size_t count = 0, nlen = strlen(name);

	for (size_t b = 0; b < bl->n; b++) {
		size_t off = bl->b[b].start;

		while (off < bl->b[b].end) {
			const char *nl = memchr(src + off, '\n', bl->b[b].end - off);
			size_t len = nl ? (size_t)(nl - (src + off)) : bl->b[b].end - off;
			struct define_line d;

			if (define_line_parse(src + off, len, &d) && d.name_len == nlen &&
			    !memcmp(src + off + d.name, name, nlen) && !count++) {
				*at = d;
				at->value += off;
				at->value_end += off;
			}
			off += len + (nl != NULL);
		}
	}
	return count;
}

static void values_list(struct sbuf *sb, const struct answer_tunable *t)
{
	for (size_t i = 0; i < t->nvalues; i++)
		sbuf_addf(sb, "%s%" PRId64, i ? ", " : "", t->values[i]);
}

/* Each declared tunable has exactly one #define in the blocks, with a value from its list. */
static int tunable_check(const struct answer_tunable *t, const char *src, const struct blocks *bl,
			 char *msg, size_t n)
{
	struct define_line at = { 0 };
	struct sbuf list = SBUF_INIT;
	size_t count = define_find(src, bl, t->name, &at), len = at.value_end - at.value, used;
	int64_t v;
	int rc = 0;

	if (!count)
		return kerr_set(msg, n, KERR_INVALID,
				"TUNABLE %s: the blocks have no '#define %s' line", t->name,
				t->name);
	if (count > 1)
		return kerr_set(
			msg, n, KERR_INVALID,
			"TUNABLE %s: the blocks have %zu '#define %s' lines; it needs exactly "
			"one",
			t->name, count, t->name);
	if (!answer_parse_int(src + at.value, len, &used, &v) || used != len)
		return kerr_set(msg, n, KERR_INVALID,
				"TUNABLE %s: its #define has value '%.*s', not a decimal integer",
				t->name, (int)len, src + at.value);
	for (size_t i = 0; i < t->nvalues; i++)
		if (t->values[i] == v)
			return 0;
	values_list(&list, t);
	rc = kerr_set(msg, n, KERR_INVALID,
		      "TUNABLE %s: its #define has value %" PRId64 ", not one of %s", t->name, v,
		      list.buf);
	sbuf_release(&list);
	return rc;
}

static int tunables_check(const struct direction *d, const char *src, const char *start_marker,
			  const char *end_marker, char *msg, size_t n)
{
	struct blocks bl = { 0 };
	int rc = blocks_find(src, start_marker, end_marker, &bl, msg, n);

	for (size_t i = 0; !rc && i < d->ntunables; i++)
		rc = tunable_check(&d->tunables[i], src, &bl, msg, n);
	blocks_release(&bl);
	return rc;
}

int answer_get_define(const char *src, const char *start_marker, const char *end_marker,
		      const char *name, int64_t *value)
{
	struct blocks bl = { 0 };
	struct define_line at = { 0 };
	size_t count, used = 0;
	char why[128];

	if (blocks_find(src, start_marker, end_marker, &bl, why, sizeof(why)))
		return 0;
	count = define_find(src, &bl, name, &at);
	blocks_release(&bl);
	return count == 1 &&
	       answer_parse_int(src + at.value, at.value_end - at.value, &used, value) &&
	       used == at.value_end - at.value;
}

char *answer_set_define(const char *src, const char *start_marker, const char *end_marker,
			const char *name, int64_t value, char *msg, size_t n)
{
	struct blocks bl = { 0 };
	struct sbuf sb = SBUF_INIT;
	struct define_line at = { 0 };
	size_t count;

	if (blocks_find(src, start_marker, end_marker, &bl, msg, n))
		return NULL;
	count = define_find(src, &bl, name, &at);
	blocks_release(&bl);
	if (count != 1) {
		kerr_set(msg, n, count ? KERR_INVALID : KERR_NOTFOUND,
			 "%zu '#define %s' lines in the blocks; exactly one is needed", count,
			 name);
		return NULL;
	}
	sbuf_add(&sb, src, at.value);
	/* "#define X" without a value: the new one needs a blank before it */
	if (at.value == at.value_end && !answer_blank(src[at.value - 1]))
		sbuf_addch(&sb, ' ');
	sbuf_addf(&sb, "%" PRId64, value);
	sbuf_adds(&sb, src + at.value_end);
	return sbuf_detach(&sb, NULL);
}

/* --- applying a direction --------------------------------------------------- */

static int block_index(const struct blocks *bl, const char *name)
{
	for (size_t i = 0; i < bl->n; i++)
		if (!strcmp(bl->b[i].name, name))
			return (int)i;
	return -1;
}

static int unknown_block(const struct blocks *bl, const char *name, char *msg, size_t n)
{
	struct sbuf names = SBUF_INIT;
	int rc;

	for (size_t i = 0; i < bl->n; i++)
		sbuf_addf(&names, "%s%s", i ? ", " : "", bl->b[i].name);
	rc = kerr_set(msg, n, KERR_NOTFOUND, "block '%s' is not a block of the kernel (blocks: %s)",
		      name, names.buf);
	sbuf_release(&names);
	return rc;
}

static int has_marker(const char *s, const char *start_marker, const char *end_marker)
{
	return strstr(s, start_marker) || strstr(s, end_marker);
}

/* Non-overlapping occurrences of needle in hay; *first is the first. */
static size_t occurrences(const char *hay, const char *needle, const char **first)
{
	size_t count = 0, nlen = strlen(needle);

	*first = NULL;
	for (const char *q = strstr(hay, needle); q; q = strstr(q + nlen, needle))
		if (!count++)
			*first = q;
	return count;
}

/* Applies the edits of pt to body in order; *out is the result (malloc'd). */
static int edits_apply(const struct answer_part *pt, const char *body, const char *start_marker,
		       const char *end_marker, char **out, char *msg, size_t n)
{
	char *cur = xstrdup(body);

	*out = NULL;
	for (size_t k = 0; k < pt->nedits; k++) {
		const struct answer_edit *e = &pt->edits[k];
		const char *at;
		size_t count = occurrences(cur, e->search, &at);
		struct sbuf sb = SBUF_INIT;
		int rc = 0;

		if (has_marker(e->replace, start_marker, end_marker))
			rc = kerr_set(
				msg, n, KERR_INVALID,
				"EDIT of block '%s', edit %zu (answer line %zu): the REPLACE "
				"text contains an EVOLVE-BLOCK marker: code outside the blocks "
				"cannot change",
				pt->block, k + 1, e->line);
		else if (!count)
			rc = kerr_set(msg, n, KERR_INVALID,
				      "EDIT of block '%s', edit %zu (answer line %zu): the SEARCH "
				      "text is not in the block%s",
				      pt->block, k + 1, e->line,
				      k ? " (as the edits before it left it)" : "");
		else if (count > 1)
			rc = kerr_set(msg, n, KERR_INVALID,
				      "EDIT of block '%s', edit %zu (answer line %zu): the SEARCH "
				      "text matches %zu times; it must match exactly once",
				      pt->block, k + 1, e->line, count);
		if (rc) {
			free(cur);
			return rc;
		}
		sbuf_add(&sb, cur, (size_t)(at - cur));
		sbuf_adds(&sb, e->replace);
		sbuf_adds(&sb, at + strlen(e->search));
		free(cur);
		cur = sbuf_detach(&sb, NULL);
	}
	*out = cur;
	return 0;
}

/* src with the bodies of the blocks i where body[i] is set replaced, byte for byte. */
static char *splice(const char *src, const struct blocks *bl, char *const *body)
{
	struct sbuf sb = SBUF_INIT;
	size_t prev = 0;

	for (size_t i = 0; i < bl->n; i++) {
		if (!body[i])
			continue;
		sbuf_add(&sb, src + prev, bl->b[i].start - prev);
		sbuf_adds(&sb, body[i]);
		prev = bl->b[i].end;
	}
	sbuf_adds(&sb, src + prev);
	return sbuf_detach(&sb, NULL);
}

/* What the parts of a direction do to the parent's blocks, by block index. */
struct plan {
	char **edited;       /* EDIT results, spliced verbatim */
	const char **names;  /* BLOCK parts, for blocks_inject */
	const char **bodies; /* their bodies */
	size_t nwhole;
	char *used; /* blocks some part names */
};

static int plan_part(struct plan *pl, const struct answer_part *pt, const char *src,
		     const struct blocks *bl, const char *sm, const char *em, char *msg, size_t n)
{
	int j = block_index(bl, pt->block);
	char *body;
	int rc;

	if (j < 0)
		return unknown_block(bl, pt->block, msg, n);
	if (pl->used[j]++)
		return kerr_set(msg, n, KERR_INVALID, "block '%s' appears twice in the direction",
				pt->block);
	if (pt->whole) {
		if (has_marker(pt->body, sm, em))
			return kerr_set(msg, n, KERR_INVALID,
					"BLOCK '%s' contains an EVOLVE-BLOCK marker: code outside "
					"the blocks cannot change",
					pt->block);
		pl->names[pl->nwhole] = pt->block;
		pl->bodies[pl->nwhole++] = pt->body;
		return 0;
	}
	body = block_body(src, bl, (size_t)j);
	rc = edits_apply(pt, body, sm, em, &pl->edited[j], msg, n);
	free(body);
	return rc;
}

char *answer_apply(const struct direction *d, const char *parent_src, const char *start_marker,
		   const char *end_marker, char *msg, size_t n)
{
	struct blocks bl = { 0 }, mid_bl = { 0 };
	struct plan pl = { 0 };
	char *mid = NULL, *res = NULL;
	char why[512];

	if (blocks_find(parent_src, start_marker, end_marker, &bl, why, sizeof(why))) {
		kerr_set(msg, n, KERR_INVALID, "the parent's blocks: %s", why);
		goto out;
	}
	pl.edited = xcalloc(bl.n, sizeof(*pl.edited));
	pl.used = xcalloc(bl.n, 1);
	pl.names = xcalloc(d->nparts + 1, sizeof(*pl.names));
	pl.bodies = xcalloc(d->nparts + 1, sizeof(*pl.bodies));
	for (size_t i = 0; i < d->nparts; i++)
		if (plan_part(&pl, &d->parts[i], parent_src, &bl, start_marker, end_marker, msg, n))
			goto out;
	/* EDITs first, byte for byte; then the BLOCKs, indented by blocks_inject */
	mid = splice(parent_src, &bl, pl.edited);
	if (blocks_find(mid, start_marker, end_marker, &mid_bl, why, sizeof(why))) {
		kerr_set(msg, n, KERR_INVALID, "the edited blocks: %s", why);
		goto out;
	}
	res = blocks_inject(mid, &mid_bl, pl.names, pl.bodies, pl.nwhole, msg, n);
	if (res && (blocks_verify(parent_src, &bl, res, start_marker, end_marker, msg, n) ||
		    tunables_check(d, res, start_marker, end_marker, msg, n))) {
		free(res);
		res = NULL;
	}
out:
	for (size_t i = 0; pl.edited && i < bl.n; i++)
		free(pl.edited[i]);
	free(pl.edited);
	free(pl.used);
	free(pl.names);
	free(pl.bodies);
	free(mid);
	blocks_release(&mid_bl);
	blocks_release(&bl);
	return res;
}
