/*
 * ir.h - stage 5: what the driver exposes about the compiled code.
 *
 * PoCL (CPU): evalpod points POCL_CACHE_DIR at a private directory and sets
 * POCL_KERNEL_CACHE=1 and POCL_LEAVE_KERNEL_COMPILER_TEMP_FILES=1 (without
 * it PoCL 3.1 keeps only the .so) before creating its context, so after a kernel has
 * been launched PoCL has left, per kernel and local size,
 *   <cache>/<2 chars>/<hash>/<kernel>/<geometry>/parallel.bc  (the
 *   work-group function after PoCL's vectorising passes) and <kernel>.so
 *   (the machine code).  The .bc is disassembled with llvm-dis (the LLVM
 *   that PoCL itself depends on) and the .so with objdump.
 * NVIDIA: CL_PROGRAM_BINARIES is PTX text.
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

/*
 * Looks in a PoCL cache directory for the artifacts of kernel (the most
 * recently modified geometry directory of that kernel whose name does not
 * start with "0-0-0", else any), disassembles them with the first of
 * llvm-dis-15, llvm-dis found on PATH and objdump, and returns:
 *   *ir_text  malloc'd LLVM IR text (NULL if unavailable), *ir_len
 *   *asm_text malloc'd objdump -d output of the kernel's .so (NULL if
 *             unavailable), *asm_len
 * Each text is cut at max_bytes.  Tools run through fork/exec with no
 * shell, with a 30 s limit.  Returns 0 when at least one text was found,
 * KERR_NOTFOUND otherwise (msg says what was looked for and where).
 */
int ir_collect_pocl(const char *cache_dir, const char *kernel, size_t max_bytes, char **ir_text,
		    size_t *ir_len, char **asm_text, size_t *asm_len, char *msg, size_t n);

#endif
