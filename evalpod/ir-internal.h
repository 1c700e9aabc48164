/*
 * ir-internal.h - what the code scanners of ir.c share; not part of ir.h's
 * contract and included only by ir.c, ir-llvm.c, ir-ptx.c, ir-x86.c and
 * ir-note.c.
 *
 * ir.c owns the counters and the table of kinds; each ir-<kind>.c scans
 * one kind of text a line at a time into a struct ir_scan; ir-note.c holds
 * the bookkeeping they all share, so that the scanners never call back
 * into ir.c, which calls them.  The span helpers are static inline: they
 * run for every token of every line and were static in one file before
 * the scanners were split apart.
 */
#ifndef EVALPOD_IR_INTERNAL_H
#define EVALPOD_IR_INTERNAL_H

#include "arraysize.h"

#include <jansson.h>
#include <stddef.h>
#include <string.h>

#define IR_NUMBER_MAX (1ull << 40) /* larger numbers in text are not sizes */

/* What the scanners count; ir.c names them (ir_counter_names) and picks them per kind. */
enum ir_counter {
	IRC_INSTRUCTIONS,
	IRC_FMA,
	IRC_FMA_LANES,
	IRC_FMUL,
	IRC_FADD,
	IRC_LOADS,
	IRC_STORES,
	IRC_LOADS_GLOBAL,
	IRC_LOADS_SHARED,
	IRC_LOADS_PARAM,
	IRC_LOADS_CONST,
	IRC_STORES_GLOBAL,
	IRC_STORES_SHARED,
	IRC_STORES_PARAM,
	IRC_SPILL_LOADS,
	IRC_SPILL_STORES,
	IRC_VECTOR_OPS,
	IRC_SCALAR_SSE,
	IRC_BRANCHES,
	IRC_CALLS,
	IRC_INTRINSICS,
	IRC_ALLOCAS,
	IRC_ALLOCAS_UNSIZED,
	IRC_PRIVATE_BYTES,
	IRC_BARRIERS,
	IRC_ATOMICS,
	IRC_GATHERS,
	IRC_SCATTERS,
	IRC_REGISTERS,
	IRC_LOCAL_BYTES,
	IRC_SHARED_BYTES,
	IRC_STACK_SPILLS,
	IRC_STACK_RELOADS,
	IRC_NR
};

/* A piece of the input text; not NUL-terminated. */
struct span {
	const char *p;
	size_t n;
};

struct ir_scan {
	long long count[IRC_NR];
	long long max_width;
	json_t *widths;    /* decimal width -> number of instructions */
	json_t *functions; /* names of defined functions */
	json_t *entries;   /* ptx: names of .entry functions */
	int depth;         /* llvm-ir: 1 inside define {}, ptx: brace depth */
	int in_list;       /* llvm-ir: inside a switch's [ ... ] case lines */
	int in_stmt;       /* ptx: the statement goes on on the next line */
	json_t *pending;   /* ptx: a .func/.entry name not yet seen to have a body */
	int pending_entry; /* ptx: pending is an .entry */
};

/* ---- span helpers ---------------------------------------------------- */

static inline int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

static inline int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static inline struct span span_trim(struct span s)
{
	while (s.n && is_space(s.p[0])) {
		s.p++;
		s.n--;
	}
	while (s.n && is_space(s.p[s.n - 1]))
		s.n--;
	return s;
}

static inline int span_eq(struct span s, const char *lit)
{
	size_t l = strlen(lit);

	return s.n == l && !memcmp(s.p, lit, l);
}

static inline int span_prefix(struct span s, const char *lit)
{
	size_t l = strlen(lit);

	return s.n >= l && !memcmp(s.p, lit, l);
}

static inline int span_suffix(struct span s, const char *lit)
{
	size_t l = strlen(lit);

	return s.n >= l && !memcmp(s.p + s.n - l, lit, l);
}

static inline const char *span_find(struct span s, const char *lit)
{
	return memmem(s.p, s.n, lit, strlen(lit));
}

/* The part of s from q (which points into s) to its end. */
static inline struct span span_from(struct span s, const char *q)
{
	struct span r = { q, (size_t)(s.p + s.n - q) };

	return r;
}

/* The part of s before q (which points into s). */
static inline struct span span_until(struct span s, const char *q)
{
	struct span r = { s.p, (size_t)(q - s.p) };

	return r;
}

/* Returns the next whitespace-delimited token of *s and moves past it. */
static inline struct span span_token(struct span *s)
{
	struct span t;
	size_t i = 0;

	*s = span_trim(*s);
	while (i < s->n && !is_space(s->p[i]))
		i++;
	t.p = s->p;
	t.n = i;
	s->p += i;
	s->n -= i;
	return t;
}

/*
 * Parses a decimal number at *pp (before end) and moves past it.  Returns
 * 0, or -1 when there is no digit or the number is above IR_NUMBER_MAX.
 */
static inline int parse_ull(const char **pp, const char *end, unsigned long long *v)
{
	const char *p = *pp;
	unsigned long long x = 0;

	if (p >= end || !is_digit(*p))
		return -1;
	while (p < end && is_digit(*p)) {
		x = x * 10 + (unsigned long long)(*p - '0');
		if (x > IR_NUMBER_MAX)
			return -1;
		p++;
	}
	*pp = p;
	*v = x;
	return 0;
}

/* a * b, or IR_NUMBER_MAX when the product is larger (a size we distrust). */
static inline unsigned long long mul_sat(unsigned long long a, unsigned long long b)
{
	unsigned long long r;

	if (__builtin_mul_overflow(a, b, &r) || r > IR_NUMBER_MAX)
		return IR_NUMBER_MAX;
	return r;
}

/* ---- shared bookkeeping (ir-note.c) ---------------------------------- */

/* Returns v; a NULL v (Jansson out of memory) aborts with a message. */
json_t *ir_json_check(json_t *v);

/* Counts one vector instruction of width (in the kind's vector_width_unit). */
void ir_note_width(struct ir_scan *sc, long long width);

/* Appends name to arr; names that are not valid UTF-8 are left out rather than mangled. */
void ir_note_name(json_t *arr, struct span name);

/* ---- the scanners: each takes one line, without its newline ----------- */

void ir_llvm_scan_line(struct ir_scan *sc, struct span line); /* ir-llvm.c */
void ir_ptx_scan_line(struct ir_scan *sc, struct span line);  /* ir-ptx.c */
void ir_x86_scan_line(struct ir_scan *sc, struct span line);  /* ir-x86.c */

#endif
