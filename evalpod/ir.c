/*
 * ir.c - counts what is in compiled kernel code (irpocl.c fetches that code
 * from PoCL's kernel cache).
 *
 * The three scanners (LLVM IR in ir-llvm.c, PTX in ir-ptx.c, x86-64 objdump
 * output in ir-x86.c) are line oriented and share one set of counters
 * (ir-internal.h); a table per kind here says which counters mean something
 * for that kind and are reported.  Every figure is
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
 *
 * May use: the scanners and ir-note.c (through ir-internal.h), err, Jansson.
 */
#include "ir.h"
#include "ir-internal.h"
#include "err.h"

#include <string.h>

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
	{ "llvm-ir", ir_llvm_scan_line, ll_fields, ARRAY_SIZE(ll_fields), "elements", 0 },
	{ "ptx", ir_ptx_scan_line, ptx_fields, ARRAY_SIZE(ptx_fields), "elements", 1 },
	{ "x86-asm", ir_x86_scan_line, x86_fields, ARRAY_SIZE(x86_fields), "bits", 0 },
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
