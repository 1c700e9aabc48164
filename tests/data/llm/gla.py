"""The scripted model's answers for examples/chunk_gla (model.py answers
with these when the context's kernel is chunk_gla).

The template is one unnamed block (named "0"), already register-tiled, with
its tunables rendered as -D options over #ifndef-guarded defaults.  The
directions are real rewrites of it:

- PAIR: gla_state's position loop takes two positions per step (a
  structural change of the loop, with a remainder loop for odd lengths);
- WRONG: one decay step too few across chunks (the evaluator must catch it);
- SPEC_TUNABLE: declares TR, a spec tunable, as its own (kctl refuses it);
- UNROLL: UNR (not a spec tunable) as the direction's own tunable;
- EXP2: the decay table from exp2, asked for again after SPEC_TUNABLE;
- FOLD_X: the decay folded into x instead of y, for a parent whose position
  loop is still the template's;
- PAIR_EXP2: from round 2 on, PAIR and EXP2 together, for a parent
  that has neither (the template, when nothing beat it beyond the noise).
"""
import re

PAIR_HEAD = "\t\tfor (int m = 0; m < len; m++) {\n"

PAIRED = """\
\t\tint m = 0;

\t\t// Two positions per step: two rows in flight, one pass over acc.
\t\tfor (; m + 1 < len; m += 2) {
\t\t\tint p = rev ? t0 + len - 1 - m : t0 + m, p1 = rev ? p - 1 : p + 1;
\t\t\tfloatS yw0 = vloadS(0, y + (size_t)p * ldy + cv) * wdec[len - 1 - m];
\t\t\tfloatS yw1 = vloadS(0, y + (size_t)p1 * ldy + cv) * wdec[len - 2 - m];

\t\t\t_Pragma("unroll") for (int i = 0; i < SKT; i++)
\t\t\t\tacc[i] = fma((floatS)(x[(size_t)p1 * ldx + kr + i]), yw1,
\t\t\t\t             fma((floatS)(x[(size_t)p * ldx + kr + i]), yw0, acc[i]));
\t\t}
\t\tfor (; m < len; m++) {
"""

WDEC = "\t\twdec[m] = exp(g * m);\n"
# The defaults kctl_llm.py's scenario gives its copy of the template
# (name, the template's value, the scenario's), so that PoCL compiles
# each program in about 1.3 s instead of 6-9 s.
SMALL_DEFAULTS = [("WG", 2, 1), ("TR", 16, 4), ("VW", 16, 8), ("SVW", 16, 8), ("SKT", 16, 8)]
TR_LINE = "#define TR 4            // gla_chunk: tile rows per work-item\n"
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


PAIR = edit("gla_state: two positions per step of the position loop (more loads in flight "
            "per pass over the accumulators)",
            [(PAIR_HEAD, PAIRED)])
WRONG = edit("gla_state: carry the state with one decay step less (memory-bound)",
             [("\t\t\tacc[i] *= wdec[len];\n", "\t\t\tacc[i] *= wdec[len - 1];\n")])
SPEC_TUNABLE = edit("gla_chunk: smaller row tiles (register pressure)",
                    [(TR_LINE, TR_LINE.replace("TR 4 ", "TR 2 "))], [("TR", (2, 4, 8))])
UNROLL = edit("gla_chunk: unroll the tiles' inner loop (compute-bound)",
              [(UNR_LINE, UNR_LINE.replace("UNR 1 ", "UNR 2 "))], [("UNR", (1, 2, 4))])
EXP2 = edit("gla_chunk: the decay table from exp2 (fewer instructions per entry)",
            [(RDEC_LINE, RDEC_LINE.replace("exp(g * (CHUNK - i))",
                                             "exp2(g * M_LOG2E_F * (CHUNK - i))"))])
PAIR_EXP2 = edit("both kernels: gla_state two positions per step, and gla_chunk's "
                 "decay table from exp2",
                 [(PAIR_HEAD, PAIRED),
                  (RDEC_LINE, RDEC_LINE.replace("exp(g * (CHUNK - i))",
                                                "exp2(g * M_LOG2E_F * (CHUNK - i))"))])
FOLD_X = edit("gla_state: fold the decay into x, one multiply per row instead of per column",
              [("\t\t\tyw = vloadS(0, y + (size_t)p * ldy + cv) * wdec[len - 1 - m];\n"
                "\n"
                "\t\t\t_Pragma(\"unroll\") for (int i = 0; i < SKT; i++)\n"
                "\t\t\t\tacc[i] = fma((floatS)(x[(size_t)p * ldx + kr + i]), yw, acc[i]);\n",
                "\t\t\tfloat w = wdec[len - 1 - m];\n"
                "\n"
                "\t\t\tyw = vloadS(0, y + (size_t)p * ldy + cv);\n"
                "\t\t\t_Pragma(\"unroll\") for (int i = 0; i < SKT; i++)\n"
                "\t\t\t\tacc[i] = fma((floatS)(x[(size_t)p * ldx + kr + i] * w), yw, acc[i]);\n")])


def directions(ctx):
    """The directions that apply to the parent, first answer first."""
    body = ((ctx.get("parent") or {}).get("blocks") or {}).get("0", "")
    ideas = []
    if PAIR_HEAD in body:
        ideas.append(PAIR)
    if ctx.get("round") == 1:
        ideas += [WRONG, SPEC_TUNABLE]
    if "#define UNR 1 " in body:
        ideas.append(UNROLL)
    if "exp(g * (CHUNK - i))" in body:
        ideas.append(EXP2)
    if "x[(size_t)p * ldx + kr + i]), yw" in body:
        ideas.append(FOLD_X)
    if ctx.get("round", 1) > 1 and PAIR_HEAD in body and \
            "exp(g * (CHUNK - i))" in body:
        # round 1's ideas together: new even when round 2's parent is the
        # template again (when no rewrite beat it beyond the noise)
        ideas.append(PAIR_EXP2)
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
