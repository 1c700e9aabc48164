/*
 * prompt.h - the text a proposer model is given (prompt.c).
 *
 * Everything is rendered from one context document (context.c builds it
 * from the session; the command proposer gets the same document as a JSON
 * file), deterministically: the same context gives the same bytes, keys in
 * a fixed order, numbers in a fixed format.  The prompt is the same text
 * for both APIs and for a command.
 *
 * The context document:
 * {
 *   "round": 4, "mode": "explore" | "exploit", "directions": 4,
 *   "kernel": {
 *     "name": "matmul", "semantics": "C = A * B, row-major ..." | null,
 *     "dtype": "float",                    the buffers' element types, joined by ", "
 *     "buffers": [{"name": "A", "type": "float", "role": "input", "count": "M*K"}],
 *     "scalars": [{"name": "M", "type": "int", "value": "M"}],
 *     "launch": [{"kernel": "mm", "global": ["M", "N"], "local": ["TM", "TN"] | null}],
 *     "flops": "2*M*N*K" | null, "bytes": "4*(M*K+K*N+M*N)" | null,
 *     "shapes": [{"name": "big", "values": {"M": 1024, ...}, "primary": true}],
 *     "build_options": "-cl-fast-relaxed-math",
 *     "tunables": [{"name": "TM", "values": [1, 2, 4]}], "render": "define" | "options",
 *     "markers": {"start": "EVOLVE-BLOCK-START", "end": "EVOLVE-BLOCK-END"},
 *     "template": "the whole template source",
 *     "blocks": ["tile", "body"]
 *   },
 *   "device": {"name": "...", "vendor": "...", "driver": "...", "compute_units": 32,
 *              "peak_gflops": 241.9, "peak_gbs": 38.9} | null,
 *   "parent": VARIANT | null,
 *   "inspirations": [VARIANT, ...],       other lineages' bests, best first
 *   "learnings": "the learnings file's text" | null,
 *   "failures": [{"id": "r03-v002", "rationale": "...", "status": "compile_error",
 *                 "fault_kind": "..." | null, "evidence": "log excerpt / worst error and where / signal"}],
 *   "tuner": {"tried": 40, "best": {"id": "...", "params": {...}, "speedup_vs_reference": 2.1} | null,
 *             "notes": ["TM=4 is 1.3x TM=1 at the same TN", ...]}
 * }
 * VARIANT:
 * {
 *   "id": "r02-v003", "rationale": "...", "lineage": 2, "params": {...} | null,
 *   "tunables": [{"name": "U", "values": [1, 2, 4]}],   its own, declared by a model
 *   "blocks": {"tile": "body text", ...},               in the template's order
 *   "options": "build options",
 *   "figures": {                                        any may be absent or null
 *     "status": "ok", "shape": "big", "median_ms": 1.23, "robust_cv": 0.02,
 *     "speedup_vs_reference": 3.4, "gflops": 75.4, "gbps": 0.88,
 *     "fraction_of_peak_flops": 0.31, "fraction_of_peak_bw": 0.02,
 *     "arithmetic_intensity": 85.3, "bottleneck": "compute",
 *     "evidence": ["arithmetic intensity 85.33 flop/byte; ridge point 6.21", ...],
 *     "ir": {"kernel": "mm", "flavor": "x86", "vector_width_unit": "bits",
 *            "max_vector_width": 512, "vector_widths": {"128": 12},
 *            "fma": 3, "loads": 54, "stores": 18, "branches": 30, "private_bytes": 0,
 *            "stack_spills": 5, "stack_reloads": 8, "scalar_sse": 0, "calls": 0}
 *   }
 * }
 */
#ifndef KCTL_PROMPT_H
#define KCTL_PROMPT_H

#include <jansson.h>
#include <stddef.h>

struct prompt_opts {
	size_t max_bytes; /* the prompt's size limit (system text not counted); 0: 60000 */
};

/*
 * The system text: the role, the rules (only the blocks change; the
 * answer format of answer.h with an example; distinct directions).
 * Static storage.
 */
const char *prompt_system(void);

/*
 * The user prompt for ctx.  Parts, most useful first: the task and answer
 * reminder, the problem (semantics, shapes, dtype, launch), the device,
 * the template with its blocks, the parent's blocks and figures (its
 * brief), the failures of the last round, the learnings, the tuner's
 * findings, the inspirations.  When the text exceeds max_bytes, the least
 * useful parts are trimmed first (inspirations one by one from the last,
 * then, when there is a parent, the template's blocks, which the parent's
 * stand for, then the tuner's notes, the learnings to their newest lines,
 * the failures' evidence, the device's details), never the task, the
 * template outside its blocks or the parent; each trim leaves a line
 * saying what was left out.
 * Returns malloc'd text; *trimmed (may be NULL) gets a new array of the
 * names of the parts trimmed.  NULL with msg when even the untrimmable
 * parts exceed max_bytes.
 *
 * In detail (prompt.c): the parts are "## " sections joined by blank
 * lines; absent ones (no device, no failures, no learnings, no tuner, no
 * inspirations) are left out.  Trimming stops as soon as the text fits,
 * in this order: the inspirations from the last; the template's blocks
 * (all at once: each block's lines become one line saying the parent shows
 * the block, its markers kept; only with a parent); the tuner's notes from
 * the last; the learnings' lines from the oldest (first); the failures'
 * evidence from the last failure; the device's details (down to its name
 * and peaks); and, as a last resort, the failures themselves from the
 * last.  Each trimmed part says so in a line under its heading, e.g.
 * "[3 inspirations left out to fit the prompt limit]", "[the evidence of
 * 2 failures left out to fit the prompt limit]", "[the template's blocks
 * left out to fit the prompt limit]".  *trimmed lists the names
 * "inspirations", "template's blocks", "tuner", "learnings", "failures",
 * "device" in the order they were first trimmed (an empty array when nothing was);
 * *trimmed is set to NULL on failure (KERR_LIMIT, msg naming the size of
 * each part and the limit).  A failure's evidence is cut to 1500 bytes
 * with a note, one-line fields (rationales, notes) to 400.
 *
 * The same content gives the same bytes: the members of objects the text
 * lists (shape values, params, vector_widths) are sorted by key (numeric
 * keys by value), and a variant's blocks follow kernel.blocks, whatever
 * order the document holds them in.  Absent or mistyped members are left
 * out of the text; the context is not validated here.
 */
char *prompt_build(json_t *ctx, const struct prompt_opts *o, json_t **trimmed, char *msg, size_t n);

/*
 * The profile brief of one VARIANT object (the parent's part of the
 * prompt): its figures (median, speedup vs reference, GFLOP/s, GB/s,
 * fraction of roofline, bottleneck class and the evidence for it, IR
 * figures: vector width, instruction mix, spills) and, when with_code,
 * its blocks.  `kctl brief` prints it.  malloc'd.  Blocks are listed in
 * the order of variant.blocks; device (may be NULL) gives the peaks the
 * fractions are of and the ridge point.
 */
char *prompt_brief(json_t *variant, json_t *device, int with_code);

/*
 * The follow-up message when an answer could not be used: the precise
 * error and the format reminder.  malloc'd.
 */
char *prompt_retry(const char *error);

/*
 * The reflection prompt after a round: ctx is
 * {"round": 4, "kernel": {...as above...}, "variants": [VARIANT..., each with
 * "parent" and "status"], "learnings": "..."}; asks for lines
 *   LEARNING: text [r03-v001, r03-v004]
 * each citing the variant ids it rests on.  malloc'd; trimmed to max_bytes
 * (0: 60000): the learnings from the oldest line, then the variants from
 * the last, each leaving a note; a text still too long is cut at
 * max_bytes.  A variant's "fault_kind" and "evidence" (as in failures)
 * are shown when present.
 */
char *prompt_reflect(json_t *ctx, size_t max_bytes);

/*
 * Parses a reflection answer: every "LEARNING: text [id, id]" line (other
 * lines ignored) whose ids are all in known (an array of strings) and that
 * cites at least one.  Returns a new array of {"text", "cites": [ids]};
 * *dropped counts the LEARNING lines refused.  The tag may follow blanks
 * and a "- " or "* " bullet; the bracket closes the line (blanks and a
 * full stop after it are allowed); ids are separated by commas, a repeated
 * id is cited once; a line with an empty text is refused too.
 */
json_t *prompt_parse_reflection(const char *answer, json_t *known, size_t *dropped);

#endif
