/*
 * ir-ptx.c - the PTX scanner of ir_analyze_text (kind "ptx"): NVIDIA's
 * CL_PROGRAM_BINARIES text.  See ir.c for the fields and
 * docs/ir-analysis.md for their limits.
 *
 * May use: ir-internal.h (the span helpers, ir-note.c's bookkeeping);
 * never ir.c, which calls this scanner.
 */
#include "ir-internal.h"

#include <string.h>

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
		ir_note_width(sc, parts.width);
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
/* See ir-internal.h. */
void ir_ptx_scan_line(struct ir_scan *sc, struct span line)
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
