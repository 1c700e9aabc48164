/*
 * ir.c - counts what is in compiled kernel code and fetches that code from
 * PoCL's kernel cache.
 *
 * The three scanners (LLVM IR, PTX, x86-64 objdump output) are line
 * oriented and share one set of counters; a table per kind says which
 * counters mean something for that kind and are reported.  Every figure is
 * a count of text patterns, not a semantic analysis: docs/ir-analysis.md
 * says where each field comes from and where it is wrong.
 *
 * Fields reported (see ir_kinds[] for which kind reports which):
 *   instructions      instruction lines in function bodies
 *   fma, fma_lanes    fused multiply-adds (llvm.fma/fmuladd calls, PTX
 *                     fma and float mad, x86 vfmadd...); fma_lanes (IR
 *                     only) adds the vector width of each call
 *   fmul, fadd        float multiplies, float adds and subtracts
 *   loads, stores     memory reads and writes (x86: by operand position)
 *   loads_global ...  PTX loads and stores by state space; spill_loads and
 *                     spill_stores are ld.local / st.local
 *   vector_ops        instructions on vector types or registers;
 *                     vector_widths is their histogram and
 *                     max_vector_width the widest, in vector_width_unit
 *   scalar_sse        x86: instructions on xmm registers in scalar form
 *   branches, calls   control flow; intrinsics are IR calls to @llvm.*
 *   allocas           IR allocas; private_bytes sums the sized ones,
 *                     allocas_unsized counts the others
 *   barriers, atomics, gathers, scatters
 *   registers         PTX virtual registers declared with .reg
 *   local_bytes, shared_bytes   PTX .local / .shared declarations
 *   stack_spills, stack_reloads x86 stores to / loads from a fixed offset
 *                     of %rsp or %rbp
 *   functions         names of defined functions; entries (PTX) the kernels
 */
#include "ir.h"
#include "err.h"
#include "sbuf.h"
#include "xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define IR_TOOL_SECONDS 30           /* limit on one llvm-dis or objdump run */
#define IR_MAX_DIRENTS  100000       /* directory entries looked at in a cache */
#define IR_STDERR_KEEP  256          /* bytes of a tool's stderr kept for msg */
#define IR_MAX_NAME     255          /* longest kernel name accepted */
#define LL_TYPE_DEPTH   16           /* nesting of [N x [M x ...]] followed */
#define IR_NUMBER_MAX   (1ull << 40) /* larger numbers in text are not sizes */

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

static const char *const ir_counter_names[IRC_NR] = {
	[IRC_INSTRUCTIONS] = "instructions",
	[IRC_FMA] = "fma",
	[IRC_FMA_LANES] = "fma_lanes",
	[IRC_FMUL] = "fmul",
	[IRC_FADD] = "fadd",
	[IRC_LOADS] = "loads",
	[IRC_STORES] = "stores",
	[IRC_LOADS_GLOBAL] = "loads_global",
	[IRC_LOADS_SHARED] = "loads_shared",
	[IRC_LOADS_PARAM] = "loads_param",
	[IRC_LOADS_CONST] = "loads_const",
	[IRC_STORES_GLOBAL] = "stores_global",
	[IRC_STORES_SHARED] = "stores_shared",
	[IRC_STORES_PARAM] = "stores_param",
	[IRC_SPILL_LOADS] = "spill_loads",
	[IRC_SPILL_STORES] = "spill_stores",
	[IRC_VECTOR_OPS] = "vector_ops",
	[IRC_SCALAR_SSE] = "scalar_sse",
	[IRC_BRANCHES] = "branches",
	[IRC_CALLS] = "calls",
	[IRC_INTRINSICS] = "intrinsics",
	[IRC_ALLOCAS] = "allocas",
	[IRC_ALLOCAS_UNSIZED] = "allocas_unsized",
	[IRC_PRIVATE_BYTES] = "private_bytes",
	[IRC_BARRIERS] = "barriers",
	[IRC_ATOMICS] = "atomics",
	[IRC_GATHERS] = "gathers",
	[IRC_SCATTERS] = "scatters",
	[IRC_REGISTERS] = "registers",
	[IRC_LOCAL_BYTES] = "local_bytes",
	[IRC_SHARED_BYTES] = "shared_bytes",
	[IRC_STACK_SPILLS] = "stack_spills",
	[IRC_STACK_RELOADS] = "stack_reloads",
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

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_xdigit(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int is_ident(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       c == '.' || c == '$' || c == '-';
}

static struct span span_trim(struct span s)
{
	while (s.n && is_space(s.p[0])) {
		s.p++;
		s.n--;
	}
	while (s.n && is_space(s.p[s.n - 1]))
		s.n--;
	return s;
}

static int span_eq(struct span s, const char *lit)
{
	size_t l = strlen(lit);

	return s.n == l && !memcmp(s.p, lit, l);
}

static int span_prefix(struct span s, const char *lit)
{
	size_t l = strlen(lit);

	return s.n >= l && !memcmp(s.p, lit, l);
}

static int span_suffix(struct span s, const char *lit)
{
	size_t l = strlen(lit);

	return s.n >= l && !memcmp(s.p + s.n - l, lit, l);
}

static const char *span_find(struct span s, const char *lit)
{
	return memmem(s.p, s.n, lit, strlen(lit));
}

/* The part of s from q (which points into s) to its end. */
static struct span span_from(struct span s, const char *q)
{
	struct span r = { q, (size_t)(s.p + s.n - q) };

	return r;
}

/* The part of s before q (which points into s). */
static struct span span_until(struct span s, const char *q)
{
	struct span r = { s.p, (size_t)(q - s.p) };

	return r;
}

/* Returns the next whitespace-delimited token of *s and moves past it. */
static struct span span_token(struct span *s)
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
static int parse_ull(const char **pp, const char *end, unsigned long long *v)
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

/* a * b, or IR_NUMBER_MAX when the product is larger (a size we distrust). */
static unsigned long long mul_sat(unsigned long long a, unsigned long long b)
{
	unsigned long long r;

	if (__builtin_mul_overflow(a, b, &r) || r > IR_NUMBER_MAX)
		return IR_NUMBER_MAX;
	return r;
}

/* ---- shared bookkeeping ---------------------------------------------- */

static json_t *ir_json_check(json_t *v)
{
	if (!v) {
		fprintf(stderr, "fatal: out of memory building a JSON value\n");
		abort();
	}
	return v;
}

static void note_width(struct ir_scan *sc, long long width)
{
	char key[32];
	json_t *old;

	snprintf(key, sizeof(key), "%lld", width);
	old = json_object_get(sc->widths, key);
	json_object_set_new(sc->widths, key,
			    ir_json_check(json_integer(old ? json_integer_value(old) + 1 : 1)));
	if (width > sc->max_width)
		sc->max_width = width;
	sc->count[IRC_VECTOR_OPS]++;
}

/* Names that are not valid UTF-8 are left out rather than mangled. */
static void note_name(json_t *arr, struct span name)
{
	json_t *s;

	if (!name.n)
		return;
	s = json_stringn(name.p, name.n);
	if (s)
		json_array_append_new(arr, s);
}

/* ---- LLVM IR --------------------------------------------------------- */

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
		note_width(sc, width);
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
		note_name(sc->functions, ll_ident(at + 1, line.p + line.n));
}

/*
 * llvm-dis layout: "define ... {" and "}" in column 0, labels in column 0,
 * instructions indented, comments after ';'.
 */
static void ll_scan_line(struct ir_scan *sc, struct span line)
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

/* ---- PTX ------------------------------------------------------------- */

static struct span ptx_strip_comment(struct span line)
{
	const char *c = span_find(line, "//");

	return span_trim(c ? span_until(line, c) : line);
}

/* The lane count of ".v4" (p after the v); *lanes is left alone otherwise. */
static void ptx_lanes(const char *p, const char *end, unsigned long long *lanes)
{
	unsigned long long v;

	if (!parse_ull(&p, end, &v) && p == end)
		*lanes = v;
}

/* Bytes of a PTX type token such as ".f32", 0 when unknown. */
static unsigned long long ptx_type_size(struct span tok)
{
	static const struct {
		const char *name;
		unsigned long long size;
	} types[] = {
		{ ".b8", 1 },  { ".u8", 1 },  { ".s8", 1 },  { ".b16", 2 }, { ".u16", 2 },
		{ ".s16", 2 }, { ".f16", 2 }, { ".b32", 4 }, { ".u32", 4 }, { ".s32", 4 },
		{ ".f32", 4 }, { ".b64", 8 }, { ".u64", 8 }, { ".s64", 8 }, { ".f64", 8 },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(types); i++)
		if (span_eq(tok, types[i].name))
			return types[i].size;
	return 0;
}

/*
 * s: what follows ".reg": type tokens, then names separated by commas,
 * each "%f<31>" (31 registers) or "%f" (one).
 */
static void ptx_note_reg(struct ir_scan *sc, struct span s)
{
	const char *p, *end;

	for (s = span_trim(s); s.n && s.p[0] == '.'; s = span_trim(s))
		span_token(&s);
	if (span_suffix(s, ";"))
		s.n--;
	p = s.p;
	end = s.p + s.n;
	while (p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		struct span name =
			span_trim((struct span){ p, (size_t)((comma ? comma : end) - p) });
		const char *lt = memchr(name.p, '<', name.n);
		unsigned long long count = 1;

		if (lt) {
			lt++;
			if (parse_ull(&lt, name.p + name.n, &count))
				count = 0;
		}
		if (name.n)
			sc->count[IRC_REGISTERS] += (long long)count;
		p = comma ? comma + 1 : end;
	}
}

/*
 * s: what follows ".local" or ".shared": [.align N] [.vK] .TYPE NAME[N]...;
 * Returns the bytes declared; "[]" (extern, dynamic) declares none.
 */
static unsigned long long ptx_decl_bytes(struct span s)
{
	unsigned long long elem = 0, lanes = 1, total = 0, dim, v;
	struct span tok;
	const char *p, *end;

	while ((tok = span_token(&s)).n && tok.p[0] == '.') {
		if (span_eq(tok, ".align"))
			span_token(&s);
		else if (span_prefix(tok, ".v") && tok.n > 2 && is_digit(tok.p[2]))
			ptx_lanes(tok.p + 2, tok.p + tok.n, &lanes);
		else if (ptx_type_size(tok))
			elem = ptx_type_size(tok);
	}
	s = span_from(s, tok.p);
	p = s.p;
	end = s.p + s.n;
	while (p < end && *p != ';') {
		dim = 1;
		while (p < end && *p != ',' && *p != ';') {
			if (*p++ != '[')
				continue;
			if (parse_ull(&p, end, &v))
				v = 0;
			dim = mul_sat(dim, v);
		}
		total += mul_sat(mul_sat(elem, lanes), dim);
		if (p < end && *p == ',')
			p++;
	}
	return total;
}

/*
 * s: what follows ".entry" or ".func": [(return params)] NAME(...
 * The name is held until ptx_settle_function sees a body or a ';'.
 */
static void ptx_note_function(struct ir_scan *sc, struct span s, int entry)
{
	struct span name;
	size_t i = 0;
	int parens = 0;

	s = span_trim(s);
	if (s.n && s.p[0] == '(') {
		for (; i < s.n; i++) {
			parens += s.p[i] == '(';
			parens -= s.p[i] == ')';
			if (!parens)
				break;
		}
		s = span_trim(span_from(s, s.p + (i < s.n ? i + 1 : s.n)));
	}
	name.p = s.p;
	name.n = 0;
	while (name.n < s.n && s.p[name.n] != '(' && s.p[name.n] != ';' && !is_space(s.p[name.n]))
		name.n++;
	json_decref(sc->pending);
	sc->pending = name.n ? json_stringn(name.p, name.n) : NULL;
	sc->pending_entry = entry;
}

/*
 * A pending function is defined once a brace opens at depth 0 and only
 * declared (a prototype) when its statement ends with ';' first.
 */
static void ptx_settle_function(struct ir_scan *sc, int opened, int ended)
{
	if (!sc->pending || (!opened && !ended))
		return;
	if (opened) {
		json_array_append(sc->functions, sc->pending);
		if (sc->pending_entry)
			json_array_append(sc->entries, sc->pending);
	}
	json_decref(sc->pending);
	sc->pending = NULL;
}

/*
 * t: a line that starts with a directive.  Only declarations whose state
 * space comes first, after linkage (.visible, .extern...), are looked at:
 * ".param .u64 .ptr .shared p" is a parameter, not shared memory.
 */
static void ptx_scan_directive(struct ir_scan *sc, struct span t)
{
	struct span s = t, tok;
	int is_extern = 0;

	while ((tok = span_token(&s)).n) {
		if (span_eq(tok, ".visible") || span_eq(tok, ".weak") || span_eq(tok, ".common")) {
			continue;
		} else if (span_eq(tok, ".extern")) {
			is_extern = 1;
		} else if (span_eq(tok, ".reg")) {
			ptx_note_reg(sc, s);
			return;
		} else if (span_eq(tok, ".local")) {
			sc->count[IRC_LOCAL_BYTES] += (long long)ptx_decl_bytes(s);
			return;
		} else if (span_eq(tok, ".shared")) {
			sc->count[IRC_SHARED_BYTES] += (long long)ptx_decl_bytes(s);
			return;
		} else if (span_eq(tok, ".entry") || span_eq(tok, ".func")) {
			if (!is_extern)
				ptx_note_function(sc, s, span_eq(tok, ".entry"));
			return;
		} else {
			return;
		}
	}
}

/* PTX opcode roots, e.g. "ld" in "ld.global.v4.f32". */
enum {
	PTX_FLOAT = 1 << 0, /* counted only with a floating-point type */
	PTX_LOAD = 1 << 1,  /* state space counted into ptx_spaces[].load */
	PTX_STORE = 1 << 2, /* ... .store */
};

static const struct {
	const char *root;
	enum ir_counter counter;
	unsigned flags;
} ptx_ops[] = {
	{ "fma", IRC_FMA, 0 },          { "mad", IRC_FMA, PTX_FLOAT },
	{ "mul", IRC_FMUL, PTX_FLOAT }, { "add", IRC_FADD, PTX_FLOAT },
	{ "sub", IRC_FADD, PTX_FLOAT }, { "ld", IRC_LOADS, PTX_LOAD },
	{ "ldu", IRC_LOADS, PTX_LOAD }, { "st", IRC_STORES, PTX_STORE },
	{ "bra", IRC_BRANCHES, 0 },     { "brx", IRC_BRANCHES, 0 },
	{ "call", IRC_CALLS, 0 },       { "bar", IRC_BARRIERS, 0 },
	{ "barrier", IRC_BARRIERS, 0 }, { "atom", IRC_ATOMICS, 0 },
	{ "red", IRC_ATOMICS, 0 },
};

static const struct {
	const char *space; /* matched as a prefix: "shared::cta" is shared */
	enum ir_counter load, store;
} ptx_spaces[] = {
	{ "global", IRC_LOADS_GLOBAL, IRC_STORES_GLOBAL },
	{ "shared", IRC_LOADS_SHARED, IRC_STORES_SHARED },
	{ "local", IRC_SPILL_LOADS, IRC_SPILL_STORES },
	{ "param", IRC_LOADS_PARAM, IRC_STORES_PARAM },
	{ "const", IRC_LOADS_CONST, IRC_NR },
};

static int ptx_is_float_type(struct span c)
{
	return span_eq(c, "f16") || span_eq(c, "f16x2") || span_eq(c, "bf16") ||
	       span_eq(c, "bf16x2") || span_eq(c, "f32") || span_eq(c, "f64");
}

/* What the dot-separated parts of an opcode say (after its root). */
struct ptx_parts {
	int is_float;
	long long width;      /* .v2/.v4/.v8 lanes, 2 for packed f16x2 */
	enum ir_counter load; /* state space counters, IRC_NR if none */
	enum ir_counter store;
};

static void ptx_parse_parts(struct span op, struct ptx_parts *pp)
{
	const char *p = op.p, *end = op.p + op.n;
	unsigned long long lanes = 0;
	size_t i;

	pp->is_float = 0;
	pp->load = pp->store = IRC_NR;
	while ((p = memchr(p, '.', (size_t)(end - p)))) {
		const char *q;
		struct span c;

		p++;
		q = memchr(p, '.', (size_t)(end - p));
		c.p = p;
		c.n = (size_t)((q ? q : end) - p);
		pp->is_float |= ptx_is_float_type(c);
		if (c.n >= 2 && c.p[0] == 'v' && is_digit(c.p[1]))
			ptx_lanes(c.p + 1, c.p + c.n, &lanes);
		else if (span_suffix(c, "x2") && ptx_is_float_type(c))
			lanes = 2;
		for (i = 0; i < ARRAY_SIZE(ptx_spaces); i++) {
			if (span_prefix(c, ptx_spaces[i].space)) {
				pp->load = ptx_spaces[i].load;
				pp->store = ptx_spaces[i].store;
			}
		}
	}
	pp->width = (long long)lanes;
}

/* t: the first line of an instruction, "[@%p] opcode operands;". */
static void ptx_scan_insn(struct ir_scan *sc, struct span t)
{
	struct span s = t, op, root;
	struct ptx_parts parts;
	const char *dot;
	size_t i;

	op = span_token(&s);
	if (op.n && op.p[0] == '@')
		op = span_token(&s);
	if (span_suffix(op, ";"))
		op.n--;
	if (!op.n)
		return;
	sc->count[IRC_INSTRUCTIONS]++;
	dot = memchr(op.p, '.', op.n);
	root = dot ? span_until(op, dot) : op;
	ptx_parse_parts(op, &parts);
	if (parts.width)
		note_width(sc, parts.width);
	for (i = 0; i < ARRAY_SIZE(ptx_ops); i++) {
		if (!span_eq(root, ptx_ops[i].root))
			continue;
		if ((ptx_ops[i].flags & PTX_FLOAT) && !parts.is_float)
			return;
		sc->count[ptx_ops[i].counter]++;
		if ((ptx_ops[i].flags & PTX_LOAD) && parts.load != IRC_NR)
			sc->count[parts.load]++;
		if ((ptx_ops[i].flags & PTX_STORE) && parts.store != IRC_NR)
			sc->count[parts.store]++;
		return;
	}
}

static int count_char(struct span s, char c)
{
	int k = 0;
	size_t i;

	for (i = 0; i < s.n; i++)
		k += s.p[i] == c;
	return k;
}

/*
 * Function bodies are the text between braces at depth 0 and 1; braces in
 * operands ({%f1, %f2}) balance within their line.  A statement ends at
 * ';' and may span lines (call sequences), so only its first line counts.
 */
static void ptx_scan_line(struct ir_scan *sc, struct span line)
{
	struct span t = ptx_strip_comment(line);
	int inside = sc->depth > 0;

	if (!t.n)
		return;
	sc->depth += count_char(t, '{') - count_char(t, '}');
	if (sc->depth < 0)
		sc->depth = 0;
	if (sc->in_stmt) {
		sc->in_stmt = !span_suffix(t, ";");
	} else if (t.p[0] == '.') {
		ptx_scan_directive(sc, t);
	} else if (inside && t.p[0] != '{' && t.p[0] != '}' && !span_suffix(t, ":")) {
		ptx_scan_insn(sc, t);
		sc->in_stmt = !span_suffix(t, ";");
	}
	ptx_settle_function(sc, !inside && sc->depth > 0, !inside && span_suffix(t, ";"));
}

/* ---- x86-64 objdump -d (AT&T syntax) --------------------------------- */

/* "0000000000001000 <name>:" names a function; returns 1 for such a line. */
static int x86_scan_header(struct ir_scan *sc, struct span line)
{
	const char *lt;
	struct span name;

	if (!line.n || !is_xdigit(line.p[0]) || !span_suffix(line, ">:"))
		return 0;
	lt = memchr(line.p, '<', line.n);
	if (!lt)
		return 0;
	name.p = lt + 1;
	name.n = (size_t)(line.p + line.n - 2 - name.p);
	/* .plt stubs and foo@plt are the loader's, not code that was compiled */
	if (name.n && name.p[0] != '.' && !memchr(name.p, '@', name.n))
		note_name(sc->functions, name);
	return 1;
}

static int x86_is_raw_bytes(struct span s)
{
	struct span tok;

	while ((tok = span_token(&s)).n)
		if (tok.n != 2 || !is_xdigit(tok.p[0]) || !is_xdigit(tok.p[1]))
			return 0;
	return 1;
}

/*
 * "   1000:\tpush   %rbp" (or with raw bytes "1000:\t55 \tpush %rbp"):
 * sets *insn to "push   %rbp".  Returns -1 for any other line.
 */
static int x86_insn_field(struct span line, struct span *insn)
{
	struct span s = span_trim(line), rest;
	const char *tab;
	size_t i = 0;

	while (i < s.n && is_xdigit(s.p[i]))
		i++;
	if (!i || i + 1 >= s.n || s.p[i] != ':' || s.p[i + 1] != '\t')
		return -1;
	rest = span_from(s, s.p + i + 2);
	tab = memrchr(rest.p, '\t', rest.n);
	if (tab)
		rest = span_from(rest, tab + 1);
	else if (x86_is_raw_bytes(rest))
		return -1; /* the bytes of a long instruction, continued */
	*insn = span_trim(rest);
	return insn->n ? 0 : -1;
}

static int x86_is_prefix(struct span tok)
{
	static const char *const prefixes[] = {
		"lock", "rep",      "repz",     "repe",  "repnz",  "repne",  "cs",      "ds",
		"ss",   "es",       "fs",       "gs",    "data16", "data32", "addr32",  "notrack",
		"bnd",  "xacquire", "xrelease", "{vex}", "{vex3}", "{evex}", "{disp8}", "{disp32}",
	};
	size_t i;

	if (span_prefix(tok, "rex"))
		return 1;
	for (i = 0; i < ARRAY_SIZE(prefixes); i++)
		if (span_eq(tok, prefixes[i]))
			return 1;
	return 0;
}

/* Mnemonic prefixes counted as such; "j" is every jump. */
static const struct {
	const char *prefix;
	enum ir_counter counter;
} x86_ops[] = {
	{ "vfmadd", IRC_FMA },        { "vfmsub", IRC_FMA },         { "vfnmadd", IRC_FMA },
	{ "vfnmsub", IRC_FMA },       { "vgather", IRC_GATHERS },    { "vpgather", IRC_GATHERS },
	{ "vscatter", IRC_SCATTERS }, { "vpscatter", IRC_SCATTERS }, { "call", IRC_CALLS },
	{ "j", IRC_BRANCHES },
};

/* Widest of %xmm/%ymm/%zmm named in ops, in bits; 0 if none. */
static long long x86_reg_width(struct span ops)
{
	if (span_find(ops, "%zmm"))
		return 512;
	if (span_find(ops, "%ymm"))
		return 256;
	if (span_find(ops, "%xmm"))
		return 128;
	return 0;
}

/*
 * Whether an instruction on xmm registers works on one element: scalar
 * SSE/AVX forms end in ss/sd/sh or convert from/to them.  Packed integer
 * ops (p..., vp...) such as vpminsd and broadcasts are vector ops.
 */
static int x86_is_scalar(struct span mn)
{
	if (span_eq(mn, "movd") || span_eq(mn, "movq") || span_eq(mn, "vmovd") ||
	    span_eq(mn, "vmovq"))
		return 1;
	if (span_prefix(mn, "p") || span_prefix(mn, "vp") || span_prefix(mn, "vbroadcast"))
		return 0;
	return span_suffix(mn, "ss") || span_suffix(mn, "sd") || span_suffix(mn, "sh") ||
	       span_find(mn, "ss2") || span_find(mn, "sd2") || span_find(mn, "sh2");
}

/* The comma-separated operands of ops, commas inside (...) kept. */
#define X86_MAX_OPS 8
static size_t x86_split_ops(struct span ops, struct span *out)
{
	size_t k = 0, i, start = 0;
	int depth = 0;

	if (!ops.n)
		return 0;
	for (i = 0; i <= ops.n && k < X86_MAX_OPS; i++) {
		if (i < ops.n && ops.p[i] != ',') {
			depth += ops.p[i] == '(';
			depth -= ops.p[i] == ')';
			continue;
		}
		if (i < ops.n && depth > 0)
			continue;
		out[k++] = span_trim((struct span){ ops.p + start, i - start });
		start = i + 1;
	}
	return k;
}

static int x86_is_memory(struct span op)
{
	return memchr(op.p, '(', op.n) || (op.n && op.p[0] == '%' && memchr(op.p, ':', op.n));
}

/* Instructions whose last operand is read, not written. */
static int x86_reads_last(struct span mn)
{
	return span_prefix(mn, "test") || (span_prefix(mn, "cmp") && !span_prefix(mn, "cmpxchg")) ||
	       span_eq(mn, "bt") || span_eq(mn, "btw") || span_eq(mn, "btl") ||
	       span_eq(mn, "btq") || span_prefix(mn, "ucomis") || span_prefix(mn, "comis") ||
	       span_prefix(mn, "vucomis") || span_prefix(mn, "vcomis") ||
	       span_prefix(mn, "ptest") || span_prefix(mn, "vptest");
}

/* One-operand instructions that write their operand. */
static int x86_writes_only_op(struct span mn)
{
	static const char *const writers[] = { "pop", "inc",  "dec",  "neg",     "not",     "set",
					       "fst", "fist", "fnst", "stmxcsr", "vstmxcsr" };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(writers); i++)
		if (span_prefix(mn, writers[i]))
			return 1;
	return 0;
}

/* A fixed offset of %rsp or %rbp: "0x18(%rsp)", not "(%rsp,%rax,4)". */
static int x86_is_stack_slot(struct span op)
{
	return span_find(op, "(%rsp)") || span_find(op, "(%rbp)");
}

/*
 * Loads and stores from memory operands: in AT&T syntax the destination
 * is last, so a memory operand there is a store and elsewhere a load.
 * Read-modify-write forms count as stores only.
 */
static void x86_note_memory(struct ir_scan *sc, struct span mn, struct span ops)
{
	struct span op[X86_MAX_OPS];
	size_t k = x86_split_ops(ops, op), i;
	int load = 0, store = 0, spill = 0, reload = 0;

	if (span_prefix(mn, "lea") || span_prefix(mn, "prefetch") || span_prefix(mn, "clflush"))
		return;
	for (i = 0; i < k; i++) {
		int is_store;

		if (!x86_is_memory(op[i]))
			continue;
		if (span_prefix(mn, "j") || span_prefix(mn, "call") || span_prefix(mn, "push"))
			is_store = 0;
		else if (k == 1)
			is_store = x86_writes_only_op(mn);
		else
			is_store = i == k - 1 && !x86_reads_last(mn);
		store |= is_store;
		load |= !is_store;
		spill |= is_store && x86_is_stack_slot(op[i]);
		reload |= !is_store && x86_is_stack_slot(op[i]);
	}
	sc->count[IRC_LOADS] += load;
	sc->count[IRC_STORES] += store;
	sc->count[IRC_STACK_SPILLS] += spill;
	sc->count[IRC_STACK_RELOADS] += reload;
}

static void x86_scan_insn(struct ir_scan *sc, struct span s)
{
	struct span mn, ops;
	const char *cut;
	long long width;
	size_t i;

	while ((mn = span_token(&s)).n && x86_is_prefix(mn))
		if (span_eq(mn, "lock"))
			sc->count[IRC_ATOMICS]++;
	if (!mn.n || span_prefix(mn, "nop") || span_eq(mn, "int3") || span_eq(mn, "(bad)"))
		return; /* alignment padding and undecodable bytes */
	ops = span_trim(s);
	if ((cut = memchr(ops.p, '#', ops.n)))
		ops = span_trim(span_until(ops, cut));
	if ((cut = memchr(ops.p, '<', ops.n)))
		ops = span_trim(span_until(ops, cut));
	sc->count[IRC_INSTRUCTIONS]++;
	for (i = 0; i < ARRAY_SIZE(x86_ops); i++) {
		if (span_prefix(mn, x86_ops[i].prefix)) {
			sc->count[x86_ops[i].counter]++;
			break;
		}
	}
	width = x86_reg_width(ops);
	if (width == 128 && x86_is_scalar(mn))
		sc->count[IRC_SCALAR_SSE]++;
	else if (width)
		note_width(sc, width);
	x86_note_memory(sc, mn, ops);
}

static void x86_scan_line(struct ir_scan *sc, struct span line)
{
	struct span insn;

	if (x86_scan_header(sc, line) || x86_insn_field(line, &insn))
		return;
	x86_scan_insn(sc, insn);
}

/* ---- the kinds ------------------------------------------------------- */

static const enum ir_counter ll_fields[] = {
	IRC_INSTRUCTIONS, IRC_FMA,     IRC_FMA_LANES,       IRC_FMUL,          IRC_FADD,
	IRC_LOADS,        IRC_STORES,  IRC_VECTOR_OPS,      IRC_BRANCHES,      IRC_CALLS,
	IRC_INTRINSICS,   IRC_ALLOCAS, IRC_ALLOCAS_UNSIZED, IRC_PRIVATE_BYTES, IRC_BARRIERS,
	IRC_ATOMICS,      IRC_GATHERS, IRC_SCATTERS,
};

static const enum ir_counter ptx_fields[] = {
	IRC_INSTRUCTIONS,  IRC_FMA,           IRC_FMUL,         IRC_FADD,        IRC_LOADS,
	IRC_LOADS_GLOBAL,  IRC_LOADS_SHARED,  IRC_LOADS_PARAM,  IRC_LOADS_CONST, IRC_STORES,
	IRC_STORES_GLOBAL, IRC_STORES_SHARED, IRC_STORES_PARAM, IRC_SPILL_LOADS, IRC_SPILL_STORES,
	IRC_VECTOR_OPS,    IRC_BRANCHES,      IRC_CALLS,        IRC_BARRIERS,    IRC_ATOMICS,
	IRC_REGISTERS,     IRC_LOCAL_BYTES,   IRC_SHARED_BYTES,
};

static const enum ir_counter x86_fields[] = {
	IRC_INSTRUCTIONS, IRC_FMA,          IRC_LOADS,         IRC_STORES,  IRC_VECTOR_OPS,
	IRC_SCALAR_SSE,   IRC_BRANCHES,     IRC_CALLS,         IRC_ATOMICS, IRC_GATHERS,
	IRC_SCATTERS,     IRC_STACK_SPILLS, IRC_STACK_RELOADS,
};

static const struct ir_kind {
	const char *name;
	void (*scan_line)(struct ir_scan *sc, struct span line);
	const enum ir_counter *fields;
	size_t nfields;
	const char *width_unit; /* what a vector width counts */
	int has_entries;
} ir_kinds[] = {
	{ "llvm-ir", ll_scan_line, ll_fields, ARRAY_SIZE(ll_fields), "elements", 0 },
	{ "ptx", ptx_scan_line, ptx_fields, ARRAY_SIZE(ptx_fields), "elements", 1 },
	{ "x86-asm", x86_scan_line, x86_fields, ARRAY_SIZE(x86_fields), "bits", 0 },
};

static json_t *ir_scan_result(const struct ir_kind *k, struct ir_scan *sc)
{
	json_t *o = ir_json_check(json_object());
	size_t i;

	json_object_set_new(o, "kind", ir_json_check(json_string(k->name)));
	for (i = 0; i < k->nfields; i++)
		json_object_set_new(o, ir_counter_names[k->fields[i]],
				    ir_json_check(json_integer(sc->count[k->fields[i]])));
	json_object_set_new(o, "max_vector_width", ir_json_check(json_integer(sc->max_width)));
	json_object_set_new(o, "vector_width_unit", ir_json_check(json_string(k->width_unit)));
	json_object_set(o, "vector_widths", sc->widths);
	json_object_set(o, "functions", sc->functions);
	if (k->has_entries)
		json_object_set(o, "entries", sc->entries);
	return o;
}

int ir_analyze_text(const char *kind, const char *text, size_t len, json_t **out, char *msg,
		    size_t n)
{
	const struct ir_kind *k = NULL;
	struct ir_scan sc;
	const char *p = text, *end = text + len;
	size_t i;

	*out = NULL;
	for (i = 0; kind && i < ARRAY_SIZE(ir_kinds); i++)
		if (!strcmp(kind, ir_kinds[i].name))
			k = &ir_kinds[i];
	if (!k)
		return kerr_set(msg, n, KERR_INVALID,
				"unknown code kind '%s': expected llvm-ir, ptx or x86-asm",
				kind ? kind : "(null)");
	if (!text && len)
		return kerr_set(msg, n, KERR_INVALID, "no text for kind '%s'", kind);
	memset(&sc, 0, sizeof(sc));
	sc.widths = ir_json_check(json_object());
	sc.functions = ir_json_check(json_array());
	sc.entries = ir_json_check(json_array());
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		struct span line = { p, (size_t)((nl ? nl : end) - p) };

		if (line.n && line.p[line.n - 1] == '\r')
			line.n--;
		k->scan_line(&sc, line);
		p = nl ? nl + 1 : end;
	}
	*out = ir_scan_result(k, &sc);
	json_decref(sc.widths);
	json_decref(sc.functions);
	json_decref(sc.entries);
	json_decref(sc.pending);
	return 0;
}

/* ---- running a disassembler ------------------------------------------ */

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Child side: never returns.  Only async-signal-safe calls after fork.  Its
 * own process group lets a timeout kill whatever the tool started too.  If
 * exec fails, errno goes back through report (closed on a successful exec).
 */
static void tool_child(char *const argv[], int in, int out, int err, int report)
{
	int e;
	ssize_t w;

	setpgid(0, 0);
	signal(SIGPIPE, SIG_DFL);
	if (dup2(in, STDIN_FILENO) >= 0 && dup2(out, STDOUT_FILENO) >= 0 &&
	    dup2(err, STDERR_FILENO) >= 0)
		execvp(argv[0], argv);
	e = errno;
	w = write(report, &e, sizeof(e));
	(void)w;
	_exit(127);
}

/* Parent side of one tool run: its two pipes and what came out of them. */
struct tool_io {
	int fd[2]; /* stdout, stderr; -1 once at EOF */
	struct sbuf *out;
	size_t max;
	char err[IR_STDERR_KEEP];
	size_t err_len;
	int truncated;      /* out reached max; the rest was not read */
	int read_errno;     /* errno of a failed read or poll */
	long long deadline; /* now_ms() value */
};

/* Reads what fd i has; returns 0, or -1 with errno on a read error. */
static int tool_read(struct tool_io *io, int i)
{
	char chunk[65536];
	ssize_t got = read(io->fd[i], chunk, sizeof(chunk));

	if (got < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -1;
	if (got == 0) {
		close(io->fd[i]);
		io->fd[i] = -1;
	} else if (i == 1) {
		size_t keep = sizeof(io->err) - 1 - io->err_len;

		keep = (size_t)got < keep ? (size_t)got : keep;
		memcpy(io->err + io->err_len, chunk, keep);
		io->err_len += keep;
		io->err[io->err_len] = '\0';
	} else {
		size_t room = io->max - io->out->len;

		if ((size_t)got > room) {
			got = (ssize_t)room;
			io->truncated = 1;
		}
		sbuf_add(io->out, chunk, (size_t)got);
	}
	return 0;
}

/*
 * Reads the tool's output until both pipes close, the output reaches its
 * limit or the deadline passes.  Returns 0, KERR_TIMEOUT or KERR_IO.
 */
static int tool_pump(struct tool_io *io)
{
	while ((io->fd[0] >= 0 || io->fd[1] >= 0) && !io->truncated) {
		struct pollfd pfd[2];
		long long left = io->deadline - now_ms();
		int i, r;

		if (left <= 0)
			return KERR_TIMEOUT;
		for (i = 0; i < 2; i++) {
			pfd[i].fd = io->fd[i];
			pfd[i].events = POLLIN;
			pfd[i].revents = 0;
		}
		r = poll(pfd, 2, left > 1000 ? 1000 : (int)left);
		if (r < 0 && errno != EINTR) {
			io->read_errno = errno;
			return KERR_IO;
		}
		for (i = 0; r > 0 && i < 2; i++) {
			if (pfd[i].revents && io->fd[i] >= 0 && tool_read(io, i)) {
				io->read_errno = errno;
				return KERR_IO;
			}
		}
	}
	return 0;
}

static void tool_kill(pid_t pid)
{
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL); /* in case it has not made its group yet */
}

/*
 * Waits for pid until the deadline, then kills it.  Returns 0 with
 * *status set, or -1 when it had to be killed for running too long.
 */
static int tool_wait(pid_t pid, long long deadline, int *status)
{
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR) {
			*status = 0;
			return 0; /* reaped by someone else: nothing to wait for */
		}
		if (now_ms() >= deadline) {
			tool_kill(pid);
			while (waitpid(pid, status, 0) < 0 && errno == EINTR)
				;
			return -1;
		}
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
}

/* The first line of a tool's stderr, for a message. */
static const char *tool_first_line(char *err)
{
	char *nl = strchr(err, '\n');

	if (nl)
		*nl = '\0';
	return err[0] ? err : "(no message)";
}

static int tool_status(struct tool_io *io, const char *tool, int status, char *msg, size_t n)
{
	if (io->truncated)
		return 0; /* we stopped it once we had enough */
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status))
		return kerr_set(msg, n, KERR_CHILD, "'%s' exited with status %d: %s", tool,
				WEXITSTATUS(status), tool_first_line(io->err));
	return kerr_set(msg, n, KERR_CHILD, "'%s' was killed by signal %d", tool,
			WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static void close_pair(int fd[2])
{
	for (int i = 0; i < 2; i++) {
		if (fd[i] >= 0)
			close(fd[i]);
		fd[i] = -1;
	}
}

/*
 * Starts argv with stdin from /dev/null and its stdout and stderr into
 * io->fd.  Returns 0 with *pid set, KERR_NOTFOUND when argv[0] is not on
 * PATH, KERR_CHILD when it cannot be executed, or KERR_IO.
 */
static int tool_start(char *const argv[], struct tool_io *io, pid_t *pid, char *msg, size_t n)
{
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, execp[2] = { -1, -1 };
	int null_fd, rc = 0, child_errno = 0;
	ssize_t got;

	null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null_fd < 0 || pipe2(outp, O_CLOEXEC) || pipe2(errp, O_CLOEXEC) ||
	    pipe2(execp, O_CLOEXEC)) {
		rc = kerr_set(msg, n, KERR_IO, "cannot set up pipes for '%s': %s", argv[0],
			      strerror(errno));
		goto out;
	}
	*pid = fork();
	if (*pid < 0) {
		rc = kerr_set(msg, n, KERR_IO, "cannot start '%s': %s", argv[0], strerror(errno));
		goto out;
	}
	if (*pid == 0)
		tool_child(argv, null_fd, outp[1], errp[1], execp[1]);
	close(execp[1]);
	execp[1] = -1;
	while ((got = read(execp[0], &child_errno, sizeof(child_errno))) < 0 && errno == EINTR)
		;
	if (got == (ssize_t)sizeof(child_errno)) {
		while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR)
			;
		*pid = -1;
		rc = child_errno == ENOENT
			     ? kerr_set(msg, n, KERR_NOTFOUND, "'%s' is not on PATH", argv[0])
			     : kerr_set(msg, n, KERR_CHILD, "cannot run '%s': %s", argv[0],
					strerror(child_errno));
		goto out;
	}
	io->fd[0] = outp[0];
	io->fd[1] = errp[0];
	outp[0] = errp[0] = -1;
out:
	if (null_fd >= 0)
		close(null_fd);
	close_pair(outp);
	close_pair(errp);
	close_pair(execp);
	return rc;
}

/* Output cut at the size limit ends at its last whole line. */
static void cut_to_line(struct sbuf *b)
{
	const char *nl = b->len ? memrchr(b->buf, '\n', b->len) : NULL;

	b->len = nl ? (size_t)(nl - b->buf) + 1 : 0;
	if (b->buf)
		b->buf[b->len] = '\0';
}

/*
 * Runs argv (no shell, PATH searched) with stdin from /dev/null and returns
 * its stdout in *out (malloc'd, NUL-terminated, caller frees), at most max
 * bytes; output cut there ends at its last whole line.  Returns 0,
 * KERR_NOTFOUND (not on PATH), KERR_CHILD (failed), KERR_TIMEOUT
 * (IR_TOOL_SECONDS) or KERR_IO.
 */
static int tool_capture(char *const argv[], size_t max, char **out, size_t *len, char *msg,
			size_t n)
{
	struct sbuf b = SBUF_INIT;
	struct tool_io io = { .fd = { -1, -1 }, .out = &b, .max = max };
	pid_t pid = -1;
	int rc, status = 0;

	*out = NULL;
	*len = 0;
	rc = tool_start(argv, &io, &pid, msg, n);
	if (rc)
		goto out;
	io.deadline = now_ms() + IR_TOOL_SECONDS * 1000LL;
	rc = tool_pump(&io);
	if (rc || io.truncated)
		tool_kill(pid);
	if (tool_wait(pid, io.deadline, &status) || rc == KERR_TIMEOUT) {
		rc = kerr_set(msg, n, KERR_TIMEOUT, "'%s' ran longer than %d s", argv[0],
			      IR_TOOL_SECONDS);
		goto out;
	}
	if (rc) {
		rc = kerr_set(msg, n, rc, "cannot read the output of '%s': %s", argv[0],
			      strerror(io.read_errno));
		goto out;
	}
	rc = tool_status(&io, argv[0], status, msg, n);
	if (rc)
		goto out;
	if (io.truncated)
		cut_to_line(&b);
	*out = sbuf_detach(&b, len);
out:
	close_pair(io.fd);
	sbuf_release(&b);
	return rc;
}

/* ---- finding PoCL's artifacts ----------------------------------------- */

static int is_kind(const char *path, mode_t type, struct stat *st)
{
	struct stat local;

	if (!st)
		st = &local;
	return !lstat(path, st) && (st->st_mode & S_IFMT) == type;
}

/* The best geometry directory seen so far (see ir_collect_pocl in ir.h). */
struct ir_pick {
	char *dir;
	int generic; /* "0-0-0...": built for no particular local size */
	struct timespec mtime;
	long budget; /* directory entries still allowed to be looked at */
};

static int newer(struct timespec a, struct timespec b)
{
	return a.tv_sec != b.tv_sec ? a.tv_sec > b.tv_sec : a.tv_nsec > b.tv_nsec;
}

/* Calls fn(dir/name) for each entry of dir but "." and "..": -1 on budget. */
static int walk_dir(const char *dir, struct ir_pick *pick, const char *kernel,
		    void (*fn)(const char *path, const char *name, struct ir_pick *pick,
			       const char *kernel))
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int rc = 0;

	if (!d)
		return 0; /* vanished or unreadable: nothing of ours in it */
	while ((de = readdir(d))) {
		char *path;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (--pick->budget < 0) {
			rc = -1;
			break;
		}
		path = xasprintf("%s/%s", dir, de->d_name);
		fn(path, de->d_name, pick, kernel);
		free(path);
	}
	closedir(d);
	return rc;
}

static void consider_geometry(const char *path, const char *name, struct ir_pick *pick,
			      const char *kernel)
{
	struct stat st;
	char *bc = xasprintf("%s/parallel.bc", path);
	char *so = xasprintf("%s/%s.so", path, kernel);
	int generic = !strncmp(name, "0-0-0", 5);

	if (is_kind(path, S_IFDIR, &st) &&
	    (is_kind(bc, S_IFREG, NULL) || is_kind(so, S_IFREG, NULL)) &&
	    (!pick->dir || (pick->generic && !generic) ||
	     (pick->generic == generic && newer(st.st_mtim, pick->mtime)))) {
		free(pick->dir);
		pick->dir = xstrdup(path);
		pick->generic = generic;
		pick->mtime = st.st_mtim;
	}
	free(bc);
	free(so);
}

/* path: <cache>/<2 chars>/<hash>; its <kernel> directory holds geometries. */
static void consider_program(const char *path, const char *name, struct ir_pick *pick,
			     const char *kernel)
{
	char *kdir = xasprintf("%s/%s", path, kernel);

	if (is_kind(kdir, S_IFDIR, NULL))
		walk_dir(kdir, pick, kernel, consider_geometry);
	free(kdir);
}

static void consider_bucket(const char *path, const char *name, struct ir_pick *pick,
			    const char *kernel)
{
	if (is_kind(path, S_IFDIR, NULL))
		walk_dir(path, pick, kernel, consider_program);
}

static int valid_kernel_name(const char *kernel)
{
	return kernel && kernel[0] && strlen(kernel) <= IR_MAX_NAME && !strchr(kernel, '/') &&
	       strcmp(kernel, ".") && strcmp(kernel, "..");
}

/* Disassemblers for PoCL's bitcode, tried in order: PoCL 3.1 uses LLVM 15. */
static const char *const ir_disassemblers[] = { "llvm-dis-15", "llvm-dis" };

static int collect_ir(const char *bc, size_t max, char **text, size_t *len, char *why, size_t n)
{
	int rc = KERR_NOTFOUND;
	size_t i;

	why[0] = '\0';
	for (i = 0; i < ARRAY_SIZE(ir_disassemblers); i++) {
		char *argv[] = { (char *)ir_disassemblers[i], "-o", "-", (char *)bc, NULL };
		char one[256];

		rc = tool_capture(argv, max, text, len, one, sizeof(one));
		if (!rc)
			break;
		if (why[0])
			strlcat(why, "; ", n);
		strlcat(why, one, n);
	}
	return rc;
}

static int collect_asm(const char *so, size_t max, char **text, size_t *len, char *why, size_t n)
{
	char *argv[] = { "objdump", "-d", "--no-show-raw-insn", (char *)so, NULL };

	return tool_capture(argv, max, text, len, why, n);
}

int ir_collect_pocl(const char *cache_dir, const char *kernel, size_t max_bytes, char **ir_text,
		    size_t *ir_len, char **asm_text, size_t *asm_len, char *msg, size_t n)
{
	struct ir_pick pick = { .budget = IR_MAX_DIRENTS };
	char *bc = NULL, *so = NULL;
	char ir_why[512] = "no parallel.bc", asm_why[512] = "no .so";
	int rc = 0;

	*ir_text = *asm_text = NULL;
	*ir_len = *asm_len = 0;
	if (!valid_kernel_name(kernel) || !cache_dir || !max_bytes)
		return kerr_set(msg, n, KERR_INVALID,
				"bad arguments to collect kernel '%s' from '%s'",
				kernel ? kernel : "(null)", cache_dir ? cache_dir : "(null)");
	if (walk_dir(cache_dir, &pick, kernel, consider_bucket) || pick.budget < 0) {
		rc = kerr_set(msg, n, KERR_LIMIT, "more than %d entries under PoCL cache '%s'",
			      IR_MAX_DIRENTS, cache_dir);
		goto out;
	}
	if (!pick.dir) {
		rc = kerr_set(msg, n, KERR_NOTFOUND,
			      "no PoCL build of kernel '%s' under '%s' (looked for "
			      "*/*/%s/*/parallel.bc or %s.so)",
			      kernel, cache_dir, kernel, kernel);
		goto out;
	}
	bc = xasprintf("%s/parallel.bc", pick.dir);
	so = xasprintf("%s/%s.so", pick.dir, kernel);
	if (is_kind(bc, S_IFREG, NULL))
		collect_ir(bc, max_bytes, ir_text, ir_len, ir_why, sizeof(ir_why));
	if (is_kind(so, S_IFREG, NULL))
		collect_asm(so, max_bytes, asm_text, asm_len, asm_why, sizeof(asm_why));
	if (!*ir_text && !*asm_text)
		rc = kerr_set(msg, n, KERR_NOTFOUND,
			      "no code for kernel '%s' in '%s': IR: %s; asm: %s", kernel, pick.dir,
			      ir_why, asm_why);
out:
	free(pick.dir);
	free(bc);
	free(so);
	return rc;
}
