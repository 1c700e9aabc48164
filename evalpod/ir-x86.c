/*
 * ir-x86.c - the x86-64 scanner of ir_analyze_text (kind "x86-asm"):
 * objdump -d output in AT&T syntax.  See ir.c for the fields and
 * docs/ir-analysis.md for their limits.
 *
 * May use: ir-internal.h (the span helpers, ir-note.c's bookkeeping);
 * never ir.c, which calls this scanner.
 */
#include "ir-internal.h"

#include <string.h>

static int is_xdigit(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

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
		ir_note_name(sc->functions, name);
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
		ir_note_width(sc, width);
	x86_note_memory(sc, mn, ops);
}

/* See ir-internal.h. */
void ir_x86_scan_line(struct ir_scan *sc, struct span line)
{
	struct span insn;

	if (x86_scan_header(sc, line) || x86_insn_field(line, &insn))
		return;
	x86_scan_insn(sc, insn);
}
