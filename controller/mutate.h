/*
 * mutate.h - EVOLVE-BLOCK regions of a kernel template.
 *
 * A template marks the code a proposer may change:
 *
 *     // EVOLVE-BLOCK-START [name]
 *     ... code ...
 *     // EVOLVE-BLOCK-END
 *
 * A marker is recognised anywhere on its line (so any comment syntax
 * works); the text after the start marker, trimmed, is the block's name
 * (blocks without one are named "0", "1"... by position).  Blocks do not
 * nest.  The body is everything between the marker lines.
 */
#ifndef KCTL_MUTATE_H
#define KCTL_MUTATE_H

#include <stddef.h>

struct block {
	char *name;
	size_t start, end; /* byte offsets of the body in the source: [start, end) */
	size_t line;       /* 1-based line of the start marker */
	char *indent;      /* leading whitespace of the start marker's line */
};

struct blocks {
	struct block *b;
	size_t n;
};

/*
 * Finds the blocks of src.  Returns 0, or KERR_PARSE with msg naming the
 * line ("line 12: EVOLVE-BLOCK-END without a start", "line 3: block
 * 'tile' is never closed", "line 40: start marker inside block 'tile'
 * opened at line 3", duplicate names, no block at all).
 */
int blocks_find(const char *src, const char *start_marker, const char *end_marker,
		struct blocks *out, char *msg, size_t n);
void blocks_release(struct blocks *bl);

/* Returns a malloc'd copy of the body of block i. */
char *block_body(const char *src, const struct blocks *bl, size_t i);

/*
 * Returns a new malloc'd source: tmpl with the body of each block named in
 * names[] replaced by bodies[] (n entries; other blocks unchanged).  A new
 * body that is not already indented is indented like its start marker's
 * line.  NULL when a name is not a block of tmpl (msg says which).
 */
char *blocks_inject(const char *tmpl, const struct blocks *bl, const char *const *names,
		    const char *const *bodies, size_t n, char *msg, size_t mlen);

/*
 * Checks that src keeps tmpl's code outside the blocks byte for byte
 * (markers included; blocks must appear in the same order with the same
 * names).  Returns 0, or KERR_INVALID with msg saying where src first
 * differs ("line 57 outside the blocks differs from the template").
 */
int blocks_verify(const char *tmpl, const struct blocks *bl, const char *src,
		  const char *start_marker, const char *end_marker, char *msg, size_t n);

/*
 * Content address of a variant: hex SHA-256 (64 chars + NUL) over the
 * source, a NUL byte and the build options.
 */
void variant_hash(const char *source, const char *options, char out[65]);

/* An object-like "#define NAME value" line: offsets into the line. */
struct define_line {
	size_t name, name_len;
	size_t value, value_end; /* the value, without a trailing comment or blanks */
};

/*
 * Reads the line p[0..len): optional blanks, '#', blanks, "define", a
 * blank, an identifier not followed by '(', then the value up to a
 * comment ("//" or a block comment), trimmed of blanks and CR.  Returns 1
 * for such a line, 0 otherwise.  How the tuner renders its parameters and
 * how a model's tunables are found and swept.
 */
int define_line_parse(const char *p, size_t len, struct define_line *d);

#endif
