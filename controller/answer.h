/*
 * answer.h - what a proposer model answers, parsed strictly (answer.c).
 *
 * The answer format (the prompt teaches it; docs/kctl.md documents it):
 *
 *   === DIRECTION: one line saying what changes and why
 *   PARENT: r02-v003                    optional: one of the ids the prompt offered
 *   TUNABLE: TM = 1, 2, 4, 8            optional, repeatable: a #define the tuner may sweep
 *   --- BLOCK name
 *   the block's whole new body
 *   --- END
 *   --- EDIT name
 *   <<<<<<< SEARCH
 *   text that occurs exactly once in the block's body
 *   =======
 *   its replacement
 *   >>>>>>> REPLACE
 *   --- END
 *
 * Text before the first "=== DIRECTION" is ignored (a preamble).  After
 * it, only blank lines may stand between sections; anything else is an
 * error naming its line.  A BLOCK body wrapped in a Markdown code fence
 * (first line ``` or ```lang, last line ```) loses the fence.  An EDIT
 * section holds one or more SEARCH/REPLACE pairs, applied in order.  A
 * direction needs at least one BLOCK or EDIT section; a block may appear
 * in only one section of a direction.
 */
#ifndef KCTL_ANSWER_H
#define KCTL_ANSWER_H

#include <stddef.h>
#include <stdint.h>

struct answer_edit {
	char *search, *replace;
	size_t line; /* 1-based line of its SEARCH marker in the answer */
};

struct answer_part {
	char *block; /* block name */
	int whole;   /* 1: BLOCK (body replaces the block), 0: EDIT (edits) */
	char *body;  /* BLOCK: the new body, ending in '\n' unless empty */
	struct answer_edit *edits;
	size_t nedits;
	size_t line; /* line of its "---" header */
};

struct answer_tunable {
	char *name;
	int64_t *values; /* distinct, at least 2, in the order given */
	size_t nvalues;
};

struct direction {
	char *rationale; /* never empty */
	char *parent;    /* NULL: the prompt's parent */
	struct answer_part *parts;
	size_t nparts;
	struct answer_tunable *tunables;
	size_t ntunables;
	size_t line; /* line of its "=== DIRECTION" header */
};

struct answer {
	struct direction *d;
	size_t n;
};

/*
 * Parses text.  At most max_directions directions (more is an error).
 * Returns 0, or KERR_PARSE with msg "line N: what is wrong" (e.g. "line 14:
 * '--- END' missing for the BLOCK section opened at line 9", "line 3: text
 * outside a section", "no '=== DIRECTION' header", "line 20: block 'body'
 * appears twice in direction 2").  a is released with answer_release in
 * every case.
 */
int answer_parse(const char *text, size_t max_directions, struct answer *a, char *msg, size_t n);
void answer_release(struct answer *a);

/*
 * Applies direction d to parent_src (a program whose blocks are delimited
 * by the markers).  Returns the new source (malloc'd), or NULL with msg:
 * "block 'foo' is not a block of the kernel (blocks: tile, body)", "EDIT
 * of block 'body', edit 2 (answer line 31): the SEARCH text is not in the
 * block", "... matches 3 times; it must match exactly once", "BLOCK 'body'
 * contains an EVOLVE-BLOCK marker: code outside the blocks cannot change",
 * "TUNABLE TM: the blocks have no '#define TM' line", "TUNABLE TM: its
 * #define has value 3, not one of 1, 2, 4, 8".  A tunable needs exactly one
 * "#define NAME value" line across the blocks of the result, with a value
 * from its list.
 */
char *answer_apply(const struct direction *d, const char *parent_src, const char *start_marker,
		   const char *end_marker, char *msg, size_t n);

/*
 * The source with the "#define name value" line in its blocks set to
 * value (the rest of the line kept); NULL with msg when there is no such
 * line or more than one.  What the tuner uses to sweep a variant's own
 * tunables.
 */
char *answer_set_define(const char *src, const char *start_marker, const char *end_marker,
			const char *name, int64_t value, char *msg, size_t n);

/* The value of the one "#define name value" line in the blocks of src, when
 * there is exactly one and its value is a decimal integer: 1 with *value. */
int answer_get_define(const char *src, const char *start_marker, const char *end_marker,
		      const char *name, int64_t *value);

#endif
