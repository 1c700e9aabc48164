"""The scripted model's answers for examples/chunk_gla (model.py answers
with these when the context's kernel is chunk_gla).

The template is one unnamed block (named "0"), already register-tiled, with
its tunables rendered as -D options over #ifndef-guarded defaults.  The
directions are real rewrites of it:

- STREAM: gla_state reads its rows straight from global memory instead of
  staging each chunk in local memory (a structural change: no staging, one
  barrier instead of two per chunk);
- WRONG: one decay step too few across chunks (the evaluator must catch it);
- SPEC_TUNABLE: declares TR, a spec tunable, as its own (kctl refuses it);
- UNROLL: UNR (not a spec tunable) as the direction's own tunable;
- EXP2: the decay table from exp2, asked for again after SPEC_TUNABLE;
- FOLD_X: on a STREAM parent, the decay folded into x instead of y;
- STREAM_EXP2: from round 2 on, STREAM and EXP2 together, for a parent
  that has neither (the template, when nothing beat it beyond the noise).
"""
import re

STAGED = """\
\t\tbarrier(CLK_LOCAL_MEM_FENCE);
\t\t// Whole rows per work-item: no integer division in the index math,
\t\t// which would cost more than a work-item's share of the copy.
\t\tfor (int m = lid; m < len; m += nwi) {
\t\t\tsize_t p = rev ? t0 + m : t0 + len - 1 - m;
\t\t\tfloat w = wdec[m];

\t\t\tfor (int c = 0; c < K; c += 16)
\t\t\t\tvstore16(vload16(0, x + p * ldx + c), 0, lx + m * K + c);
\t\t\tfor (int c = 0; c < V; c += 16)
\t\t\t\tvstore16(vload16(0, y + p * ldy + c) * w, 0, ly + m * V + c);
\t\t}
\t\tbarrier(CLK_LOCAL_MEM_FENCE);
\t\t_Pragma("unroll") for (int i = 0; i < SKT; i++)
\t\t\tacc[i] *= wdec[len];
\t\tfor (int m = 0; m < len; m++) {
\t\t\tfloatS yw = vloadS(0, ly + m * V + cv);

\t\t\t_Pragma("unroll") for (int i = 0; i < SKT; i++)
\t\t\t\tacc[i] = fma((floatS)(lx[m * K + kr + i]), yw, acc[i]);
\t\t}
"""

STREAMED = """\
\t\t_Pragma("unroll") for (int i = 0; i < SKT; i++)
\t\t\tacc[i] *= wdec[len];
\t\t// Straight from global memory: each work-item reads its SKT rows of x
\t\t// and SVW columns of y per position; no staging, no barrier.
\t\tfor (int m = 0; m < len; m++) {
\t\t\tsize_t p = rev ? t0 + m : t0 + len - 1 - m;
\t\t\tfloatS yw = vloadS(0, y + p * ldy + cv) * wdec[m];

\t\t\t_Pragma("unroll") for (int i = 0; i < SKT; i++)
\t\t\t\tacc[i] = fma((floatS)(x[p * ldx + kr + i]), yw, acc[i]);
\t\t}
"""

WDEC = "\t\twdec[m] = exp(g * m);\n"
TR_LINE = "#define TR 16           // gla_chunk: tile rows per work-item\n"
UNR_LINE = "#define UNR 1           // gla_chunk: unroll factor of the tiles' inner loop\n"
RDEC_LINE = "\t\trdec[i] = i <= CHUNK ? exp(g * (CHUNK - i)) : 0.0f;\n"


def edit(why, pairs, tunables=()):
    out = [f"=== DIRECTION: {why}\n"]
    out += [f"TUNABLE: {name} = {', '.join(map(str, vals))}\n" for name, vals in tunables]
    out.append("--- EDIT 0\n")
    for search, replace in pairs:
        out.append(f"<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n")
    out.append("--- END\n")
    return "".join(out)


STREAM = edit("gla_state: read the rows from global memory instead of staging each chunk "
              "in local memory (two barriers a chunk are latency-bound)",
              [(WDEC, WDEC + "\tbarrier(CLK_LOCAL_MEM_FENCE); // wdec is read by all\n"),
               (STAGED, STREAMED)])
WRONG = edit("gla_state: carry the state with one decay step less (memory-bound)",
             [("\t\t\tacc[i] *= wdec[len];\n", "\t\t\tacc[i] *= wdec[len - 1];\n")])
SPEC_TUNABLE = edit("gla_chunk: smaller row tiles (register pressure)",
                    [(TR_LINE, TR_LINE.replace("TR 16 ", "TR 8  "))], [("TR", (4, 8, 16))])
UNROLL = edit("gla_chunk: unroll the tiles' inner loop (compute-bound)",
              [(UNR_LINE, UNR_LINE.replace("UNR 1 ", "UNR 2 "))], [("UNR", (1, 2, 4))])
EXP2 = edit("gla_chunk: the decay table from exp2 (fewer instructions per entry)",
            [(RDEC_LINE, RDEC_LINE.replace("exp(g * (CHUNK - i))",
                                             "exp2(g * M_LOG2E_F * (CHUNK - i))"))])
STREAM_EXP2 = edit("both kernels: gla_state's rows from global memory, and gla_chunk's "
                   "decay table from exp2",
                   [(WDEC, WDEC + "\tbarrier(CLK_LOCAL_MEM_FENCE); // wdec is read by all\n"),
                    (STAGED, STREAMED),
                    (RDEC_LINE, RDEC_LINE.replace("exp(g * (CHUNK - i))",
                                                  "exp2(g * M_LOG2E_F * (CHUNK - i))"))])
FOLD_X = edit("gla_state: fold the decay into x, one multiply per row instead of per column",
              [("\t\t\tfloatS yw = vloadS(0, y + p * ldy + cv) * wdec[m];\n"
                "\n"
                "\t\t\t_Pragma(\"unroll\") for (int i = 0; i < SKT; i++)\n"
                "\t\t\t\tacc[i] = fma((floatS)(x[p * ldx + kr + i]), yw, acc[i]);\n",
                "\t\t\tfloatS yw = vloadS(0, y + p * ldy + cv);\n"
                "\t\t\tfloat w = wdec[m];\n"
                "\n"
                "\t\t\t_Pragma(\"unroll\") for (int i = 0; i < SKT; i++)\n"
                "\t\t\t\tacc[i] = fma((floatS)(x[p * ldx + kr + i] * w), yw, acc[i]);\n")])


def directions(ctx):
    """The directions that apply to the parent, first answer first."""
    body = ((ctx.get("parent") or {}).get("blocks") or {}).get("0", "")
    ideas = []
    if "lx[m * K + kr + i]" in body:
        ideas.append(STREAM)
    if ctx.get("round") == 1:
        ideas += [WRONG, SPEC_TUNABLE]
    if "#define UNR 1 " in body:
        ideas.append(UNROLL)
    if "exp(g * (CHUNK - i))" in body:
        ideas.append(EXP2)
    if "x[p * ldx + kr + i]), yw" in body:
        ideas.append(FOLD_X)
    if ctx.get("round", 1) > 1 and "lx[m * K + kr + i]" in body and \
            "exp(g * (CHUNK - i))" in body:
        # round 1's ideas together: new even when round 2's parent is the
        # template again (when no rewrite beat it beyond the noise)
        ideas.append(STREAM_EXP2)
    return ideas


def answer(ctx, prompt, want):
    """A first answer, or the one that replaces what kctl's follow-up says
    it refused with the ideas not given yet."""
    ideas = directions(ctx)
    again = prompt.rfind("=== END OF YOUR PREVIOUS ANSWER")
    if again >= 0:
        follow = prompt[again:]
        m = re.search(r"Give (\d+) direction", follow)
        want = int(m.group(1)) if m else want
        given = prompt[prompt.rfind("=== YOUR PREVIOUS ANSWER"):again]
        ideas = [d for d in ideas if d.splitlines()[0] not in given]
    while ideas and len(ideas) < want:
        ideas.append(ideas[0])  # a duplicate: kctl refuses and counts it
    return "Directions for chunk_gla.\n\n" + "\n".join(ideas[:want])
