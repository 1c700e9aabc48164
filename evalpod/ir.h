/*
 * ir.h - stage 5: what the driver exposes about the compiled code.
 *
 * The text comes from the driver: on PoCL (CPU) from its kernel cache
 * (irpocl.h); on NVIDIA, CL_PROGRAM_BINARIES is PTX text.
 *
 * The analysis is evidence, not a verdict: counts of what is in the code,
 * with the source of each figure recorded.
 */
#ifndef EVALPOD_IR_H
#define EVALPOD_IR_H

#include <jansson.h>
#include <stddef.h>

/*
 * Analyses LLVM IR text (kind "llvm-ir"), PTX ("ptx") or x86-64 objdump -d
 * output ("x86-asm") and returns a new JSON object (*out, caller owns a
 * reference) such as
 *   {"kind":"llvm-ir","instructions":N,"fma":..,"fmul":..,"fadd":..,
 *    "loads":..,"stores":..,"vector_ops":..,"max_vector_width":16,
 *    "vector_widths":{"4":..,"16":..},"branches":..,"calls":..,
 *    "allocas":..,"private_bytes":..,"barriers":..,"atomics":..,
 *    "functions":[names]}
 * with the fields that make sense for that kind (ptx: "registers" from
 * .reg declarations, "local_bytes" from .local, "spill_stores"/"spill_loads"
 * from st.local/ld.local; x86-asm: "fma" from vfmadd*, vector widths from
 * xmm/ymm/zmm use, "stack_spills" from stores to (%rsp)/(%rbp) offsets,
 * "gathers").  Returns 0, or KERR_INVALID for an unknown kind.
 */
int ir_analyze_text(const char *kind, const char *text, size_t len, json_t **out, char *msg,
		    size_t n);

#endif
