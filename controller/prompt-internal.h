/*
 * prompt-internal.h - what the parts of prompt.h's module share: prompt.c
 * (the system text, parts and trimming, a round's prompt), prompt-text.c
 * (the small renderers), prompt-brief.c (the profile brief) and
 * prompt-reflect.c (the reflection prompt and its answer).  Not for use
 * outside them; prompt.h is the public interface.
 */
#ifndef KCTL_PROMPT_INTERNAL_H
#define KCTL_PROMPT_INTERNAL_H

#include "prompt.h"
#include "sbuf.h"

#include <jansson.h>
#include <stddef.h>

#define PROMPT_DEFAULT_MAX   60000
#define REFLECT_EVIDENCE_MAX 600 /* bytes of one failure's evidence in the reflection prompt */
#define LINE_MAX_BYTES       400 /* a one-line field: a rationale, a note */

/* ---- prompt.c: parts and trimming ---- */

struct item {
	struct sbuf full, lean; /* lean: the form kept when shortened */
	int has_lean, is_lean;
};

/* How a part's trim notes name what was left out. */
struct part_kind {
	const char *name;       /* in *trimmed */
	const char *one, *many; /* a dropped item: "inspiration", "inspirations" */
	const char *lean;       /* what shortening removed: "the evidence of" */
	int lean_counted;       /* follow lean by the count and one/many */
};

struct part {
	const struct part_kind *kind;
	struct sbuf head; /* empty: the part is absent */
	struct item *it;
	size_t n, cap;
	size_t first, end; /* items kept: [first, end) */
	size_t nlean;      /* kept items in their lean form */
	size_t lean_at;    /* items at or after it are not shortened again */
	size_t items_len;  /* bytes of the kept items in their current forms */
	struct sbuf notes;
	int trimmed;
};

enum trim_how { TRIM_DROP_LAST, TRIM_DROP_FIRST, TRIM_LEAN_LAST };

struct trim_step {
	size_t part;
	enum trim_how how;
};

/* ---- prompt-brief.c: bottleneck classes ---- */

struct bottleneck_class {
	const char *name;    /* as in roofline.bottleneck */
	const char *label;   /* "compute-bound" */
	const char *meaning; /* the label with what it rests on */
	const char *hint;    /* what tends to help */
};

/* ---- prompt-text.c ---- */

/* o.key as a string, NULL when absent or not a string. */
const char *prompt_str_of(json_t *o, const char *key);

/* 1 with *out set when o.key is a finite number. */
int prompt_num_of(json_t *o, const char *key, double *out);

/* o.key as an integer, dflt when absent or not an integer. */
json_int_t prompt_int_of(json_t *o, const char *key, json_int_t dflt);

/* The largest cut <= max (< strlen(s)) that does not split a UTF-8 sequence. */
size_t prompt_utf8_cut(const char *s, size_t max);

/* s on one line: line breaks and tabs become spaces, cut at max bytes with "...". */
void add_oneline(struct sbuf *b, const char *s, size_t max);

/* Multi-line s, each non-empty line after indent, cut at max bytes with a note. */
void add_indented(struct sbuf *b, const char *s, size_t max, const char *indent);

/* Source text in a fenced block. */
void add_code(struct sbuf *b, const char *s);

/*
 * tmpl in a fenced block with the body of each block replaced by the line
 * stand (indented as its start marker); -1, nothing appended, when tmpl's
 * blocks cannot be found.
 */
int add_code_without_blocks(struct sbuf *b, const char *tmpl, const char *start, const char *end,
			    const char *stand);

/* A measured figure: 4 significant digits, whole numbers from 1000 on. */
void add_fig(struct sbuf *b, double v);

/* A fraction as a percentage with one decimal. */
void add_pct(struct sbuf *b, double f);

/* v on one line: strings unquoted, other values as compact JSON, "null" when absent. */
void add_scalar(struct sbuf *b, json_t *v);

/* The elements of arr joined by sep. */
void add_joined(struct sbuf *b, json_t *arr, const char *sep);

/* o's keys, sorted (malloc'd; the strings are borrowed). */
const char **prompt_sorted_keys(json_t *o, size_t *n);

/* "K=1024, M=1024" from {"M": 1024, "K": 1024}. */
void add_assignments(struct sbuf *b, json_t *o);

/* A variant's "Rationale: ..." and "Parameters: ..." lines, when it has them. */
void add_rationale_params(struct sbuf *b, json_t *v);

/* "- TM = 1, 2, 4" lines of a tunables array. */
void add_tunables(struct sbuf *b, json_t *arr, const char *indent);

/* Whether s is one of the strings of the array names. */
int prompt_in_names(json_t *names, const char *s);

/* A variant's blocks: those named in order first, in its order, then the rest. */
void add_blocks(struct sbuf *b, json_t *blocks, json_t *order);

/* ---- prompt-brief.c ---- */

/* The class named name (roofline.bottleneck), or NULL. */
const struct bottleneck_class *prompt_class_of(const char *name);

/* The brief of variant v on device dev (its code too when with_code). */
void brief_render(struct sbuf *b, json_t *v, json_t *dev, int with_code, json_t *order);

/* One line of figures: "3.40x vs the reference, median 1.23 ms, compute-bound". */
void add_figure_line(struct sbuf *b, json_t *fig);

/* The evidence of a failure's figures, when it has some. */
void add_evidence_line(struct sbuf *b, json_t *fig);

/* ---- prompt.c ---- */

/* An empty part of kind; part_release frees it. */
void part_init(struct part *p, const struct part_kind *kind);

void part_release(struct part *p);

/* A new empty item at the end of p; valid until the next part_add. */
struct item *part_add(struct part *p);

/* Every item kept, in full: call once the items are added. */
void part_seal(struct part *p);

/* Applies steps in order until the parts fit max; names the parts trimmed in tr. */
size_t parts_trim(struct part *parts, size_t n, const struct trim_step *steps, size_t nsteps,
		  size_t max, json_t *tr);

/* The kept heads, items and trim notes of the parts (the caller frees it). */
char *parts_render(const struct part *parts, size_t n);

/* The learnings of ctx, one item per line, after heading (nothing when none). */
void prompt_build_learnings(struct part *p, json_t *ctx, const char *heading);

#endif
