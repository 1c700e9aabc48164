/*
 * ir-llvm.c - the LLVM IR scanner of ir_analyze_text (kind "llvm-ir"): text
 * as llvm-dis writes it.  Counts instructions inside define { } bodies;
 * see ir.c for the fields and docs/ir-analysis.md for their limits.
 *
 * May use: ir-internal.h (the span helpers, ir-note.c's bookkeeping);
 * never ir.c, which calls this scanner.
 */
#include "ir-internal.h"

#include <string.h>

#define LL_TYPE_DEPTH 16 /* nesting of [N x [M x ...]] followed */

static int is_ident(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       c == '.' || c == '$' || c == '-';
}

/* Moves *pp past lit if the text there starts with it; returns 1 if so. */
static int skip_lit(const char **pp, const char *end, const char *lit)
{
	size_t l = strlen(lit);

	if ((size_t)(end - *pp) < l || memcmp(*pp, lit, l))
		return 0;
	*pp += l;
	return 1;
}

static unsigned long long round_pow2(unsigned long long v)
{
	unsigned long long r = 1;

	while (r < v && r < IR_NUMBER_MAX)
		r <<= 1;
	return r;
}

/*
 * Widest vector type <N x T> written in s (element count), 0 if none.
 * <vscale x N x T> is not matched: scalable vectors have no fixed width.
 */
static long long ll_vector_width(struct span s)
{
	const char *p = s.p, *end = s.p + s.n;
	unsigned long long n, best = 0;

	while ((p = memchr(p, '<', (size_t)(end - p)))) {
		p++;
		if (parse_ull(&p, end, &n) || !skip_lit(&p, end, " x "))
			continue;
		if (n > best)
			best = n;
	}
	return (long long)best;
}

/* An identifier after @ or %: plain, or "quoted" (quotes left out). */
static struct span ll_ident(const char *p, const char *end)
{
	struct span s = { p, 0 };

	if (p < end && *p == '"') {
		const char *q = memchr(p + 1, '"', (size_t)(end - p - 1));

		s.p = p + 1;
		s.n = q ? (size_t)(q - p - 1) : 0;
		return s;
	}
	while (p + s.n < end && is_ident(p[s.n]))
		s.n++;
	return s;
}

static const struct {
	const char *name;
	unsigned long long size;
} ll_scalars[] = {
	{ "half", 2 },   { "bfloat", 2 },    { "float", 4 },      { "double", 8 },
	{ "fp128", 16 }, { "x86_fp80", 16 }, { "ppc_fp128", 16 }, { "ptr", 8 },
};

/* Allocation size of a scalar type at *pp (iN, float, ptr...), moving past it. */
static int ll_scalar_size(const char **pp, const char *end, unsigned long long *size)
{
	const char *p = *pp;
	unsigned long long bits;
	size_t i;

	if (p < end && *p == 'i') {
		p++;
		if (parse_ull(&p, end, &bits) || !bits || (p < end && is_ident(*p)))
			return -1;
		*size = round_pow2((bits + 7) / 8);
		*pp = p;
		return 0;
	}
	for (i = 0; i < ARRAY_SIZE(ll_scalars); i++) {
		const char *q = p;

		if (skip_lit(&q, end, ll_scalars[i].name) && !(q < end && is_ident(*q))) {
			*size = ll_scalars[i].size;
			*pp = q;
			return 0;
		}
	}
	return -1;
}

/*
 * Allocation size in bytes of the type at *pp: a scalar, [N x T], <N x T>
 * (rounded up to a power of two as LLVM lays vectors out), or a typed
 * pointer (T*, T addrspace(N)*).  Structs and named types are -1.
 */
static int ll_type_size(const char **pp, const char *end, int depth, unsigned long long *size)
{
	const char *p = *pp;
	unsigned long long count, elem;
	char close;

	if (depth > LL_TYPE_DEPTH || p >= end)
		return -1;
	if (*p == '[' || *p == '<') {
		close = *p == '[' ? ']' : '>';
		p++;
		if (parse_ull(&p, end, &count) || !skip_lit(&p, end, " x ") ||
		    ll_type_size(&p, end, depth + 1, &elem) || p >= end || *p != close)
			return -1;
		p++;
		*size = mul_sat(count, elem);
		if (close == '>')
			*size = round_pow2(*size);
	} else if (ll_scalar_size(&p, end, size)) {
		return -1;
	}
	for (;;) {
		if (p < end && *p == '*') {
			*size = 8;
			p++;
		} else if (skip_lit(&p, end, " addrspace(")) {
			while (p < end && *p != ')')
				p++;
			if (p < end)
				p++;
		} else {
			break;
		}
	}
	*pp = p;
	return 0;
}

/* rest: what follows "alloca": [inalloca] TYPE [, iN COUNT] [, align A] */
static void ll_note_alloca(struct ir_scan *sc, struct span rest, long long width)
{
	const char *p, *end;
	unsigned long long size, count, bits;

	rest = span_trim(rest);
	if (span_prefix(rest, "inalloca "))
		rest = span_trim(span_from(rest, rest.p + strlen("inalloca ")));
	p = rest.p;
	end = rest.p + rest.n;
	if (ll_type_size(&p, end, 0, &size)) {
		sc->count[IRC_ALLOCAS_UNSIZED]++;
		return;
	}
	if (skip_lit(&p, end, ", i") && !parse_ull(&p, end, &bits) && skip_lit(&p, end, " ")) {
		if (parse_ull(&p, end, &count)) {
			sc->count[IRC_ALLOCAS_UNSIZED]++; /* a run-time count */
			return;
		}
		size = mul_sat(size, count);
	}
	sc->count[IRC_PRIVATE_BYTES] += (long long)size;
}

/*
 * The callee of a call: *name is set and 1 returned for a direct call
 * (@name), 0 for an indirect one (%reg(...)) or when none is recognised.
 * A named type such as %struct.s before the callee is not taken for one
 * because it is not followed by '('.
 */
static int ll_callee(struct span rest, struct span *name)
{
	const char *end = rest.p + rest.n;
	size_t i;

	for (i = 0; i < rest.n; i++) {
		struct span id;

		if (rest.p[i] != '@' && rest.p[i] != '%')
			continue;
		id = ll_ident(rest.p + i + 1, end);
		if (rest.p[i] == '@') {
			*name = id;
			return 1;
		}
		if (id.p + id.n < end && id.p[id.n] == '(')
			return 0;
	}
	return 0;
}

/* Direct callees that mean more than "a call"; matched by prefix. */
static const struct {
	const char *prefix;
	enum ir_counter counter; /* IRC_FMA also adds fma_lanes */
	enum ir_counter also;    /* IRC_NR: nothing else */
} ll_callees[] = {
	{ "llvm.fma.", IRC_FMA, IRC_NR },
	{ "llvm.fmuladd.", IRC_FMA, IRC_NR },
	{ "llvm.experimental.constrained.fma.", IRC_FMA, IRC_NR },
	{ "llvm.experimental.constrained.fmuladd.", IRC_FMA, IRC_NR },
	{ "llvm.masked.gather.", IRC_GATHERS, IRC_LOADS },
	{ "llvm.masked.scatter.", IRC_SCATTERS, IRC_STORES },
	{ "llvm.masked.load.", IRC_LOADS, IRC_NR },
	{ "llvm.masked.store.", IRC_STORES, IRC_NR },
	{ "llvm.masked.expandload.", IRC_LOADS, IRC_NR },
	{ "llvm.masked.compressstore.", IRC_STORES, IRC_NR },
	{ "_Z7barrierj", IRC_BARRIERS, IRC_NR },
	{ "_Z18work_group_barrier", IRC_BARRIERS, IRC_NR },
	{ "pocl.barrier", IRC_BARRIERS, IRC_NR },
	{ "llvm.nvvm.barrier", IRC_BARRIERS, IRC_NR },
	{ "llvm.amdgcn.s.barrier", IRC_BARRIERS, IRC_NR },
};

static void ll_note_call(struct ir_scan *sc, struct span rest, long long width)
{
	struct span name = { NULL, 0 };
	size_t i;

	if (!ll_callee(rest, &name) || !span_prefix(name, "llvm.")) {
		sc->count[IRC_CALLS]++;
		if (!name.p)
			return;
	} else {
		sc->count[IRC_INTRINSICS]++;
	}
	for (i = 0; i < ARRAY_SIZE(ll_callees); i++) {
		if (!span_prefix(name, ll_callees[i].prefix))
			continue;
		sc->count[ll_callees[i].counter]++;
		if (ll_callees[i].also != IRC_NR)
			sc->count[ll_callees[i].also]++;
		if (ll_callees[i].counter == IRC_FMA)
			sc->count[IRC_FMA_LANES] += width ? width : 1;
		return;
	}
}

/* Opcodes counted; handler (may be NULL) looks at the rest of the line. */
static const struct {
	const char *op;
	enum ir_counter counter; /* IRC_NR: only the handler */
	void (*handler)(struct ir_scan *sc, struct span rest, long long width);
} ll_ops[] = {
	{ "fmul", IRC_FMUL, NULL },
	{ "fadd", IRC_FADD, NULL },
	{ "fsub", IRC_FADD, NULL },
	{ "load", IRC_LOADS, NULL },
	{ "store", IRC_STORES, NULL },
	{ "br", IRC_BRANCHES, NULL },
	{ "switch", IRC_BRANCHES, NULL },
	{ "indirectbr", IRC_BRANCHES, NULL },
	{ "atomicrmw", IRC_ATOMICS, NULL },
	{ "cmpxchg", IRC_ATOMICS, NULL },
	{ "alloca", IRC_ALLOCAS, ll_note_alloca },
	{ "call", IRC_NR, ll_note_call },
	{ "invoke", IRC_NR, ll_note_call },
	{ "callbr", IRC_BRANCHES, ll_note_call },
};

/* t: a trimmed instruction line, "%x = op ..." or "op ...". */
static void ll_scan_insn(struct ir_scan *sc, struct span t)
{
	struct span rest = t, op;
	long long width = ll_vector_width(t);
	size_t i;

	sc->count[IRC_INSTRUCTIONS]++;
	if (width)
		ir_note_width(sc, width);
	if (span_suffix(t, "["))
		sc->in_list = 1; /* a switch whose cases follow one per line */
	if (t.p[0] == '%') {
		const char *eq = span_find(t, " = ");

		if (!eq)
			return;
		rest = span_from(t, eq + 3);
	}
	op = span_token(&rest);
	while (span_eq(op, "tail") || span_eq(op, "musttail") || span_eq(op, "notail"))
		op = span_token(&rest);
	for (i = 0; i < ARRAY_SIZE(ll_ops); i++) {
		if (!span_eq(op, ll_ops[i].op))
			continue;
		if (ll_ops[i].counter != IRC_NR)
			sc->count[ll_ops[i].counter]++;
		if (ll_ops[i].handler)
			ll_ops[i].handler(sc, rest, width);
		return;
	}
}

static void ll_scan_define(struct ir_scan *sc, struct span line)
{
	const char *at = memchr(line.p, '@', line.n);

	sc->depth = 1;
	sc->in_list = 0;
	if (at)
		ir_note_name(sc->functions, ll_ident(at + 1, line.p + line.n));
}

/*
 * llvm-dis layout: "define ... {" and "}" in column 0, labels in column 0,
 * instructions indented, comments after ';'.
 */
/* See ir-internal.h. */
void ir_llvm_scan_line(struct ir_scan *sc, struct span line)
{
	struct span t = span_trim(line);

	if (span_prefix(line, "define ")) {
		ll_scan_define(sc, line);
		return;
	}
	if (!sc->depth || !t.n)
		return;
	if (line.p[0] == '}') {
		sc->depth = 0;
		return;
	}
	if (!is_space(line.p[0]) || t.p[0] == ';')
		return; /* a label or a comment */
	if (sc->in_list) {
		if (t.p[0] == ']')
			sc->in_list = 0;
		return;
	}
	ll_scan_insn(sc, t);
}
