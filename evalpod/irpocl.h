/*
 * irpocl.h - fetching a kernel's compiled code from PoCL's kernel cache, for
 * ir_analyze_text (ir.h) to count.
 *
 * PoCL (CPU): evalpod points POCL_CACHE_DIR at a private directory and sets
 * POCL_KERNEL_CACHE=1 and POCL_LEAVE_KERNEL_COMPILER_TEMP_FILES=1 (without
 * it PoCL 3.1 keeps only the .so) before creating its context, so after a kernel has
 * been launched PoCL has left, per kernel and local size,
 *   <cache>/<2 chars>/<hash>/<kernel>/<geometry>/parallel.bc  (the
 *   work-group function after PoCL's vectorising passes) and <kernel>.so
 *   (the machine code).  The .bc is printed as text by the LLVM library
 *   PoCL has loaded into this process (llvm-dis when there is none) and the
 *   .so disassembled with objdump.
 */
#ifndef EVALPOD_IRPOCL_H
#define EVALPOD_IRPOCL_H

#include <stddef.h>

/*
 * Looks in a PoCL cache directory for the artifacts of kernel (the most
 * recently modified geometry directory of that kernel whose name does not
 * start with "0-0-0", else any), prints the IR with the loaded LLVM
 * library or else the first of llvm-dis-15, llvm-dis that works,
 * disassembles the code with objdump, and returns:
 *   *ir_text  malloc'd LLVM IR text (NULL if unavailable), *ir_len
 *   *asm_text malloc'd objdump -d output of the kernel's .so (NULL if
 *             unavailable), *asm_len
 * Each text is cut at max_bytes, at its last whole line.  The loaded
 * library prints bitcode of at most max_bytes / 32 in this process; larger
 * bitcode goes to llvm-dis.  A tool runs from posix_spawnp (no shell; a
 * fork would copy the page tables of this large process) with a 30 s
 * limit.
 * Returns 0 when at least one text was found, KERR_NOTFOUND otherwise (msg
 * says what was looked for and where).
 */
int irpocl_collect(const char *cache_dir, const char *kernel, size_t max_bytes, char **ir_text,
		   size_t *ir_len, char **asm_text, size_t *asm_len, char *msg, size_t n);

#endif
