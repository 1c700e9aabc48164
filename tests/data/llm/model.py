#!/usr/bin/env python3
"""A scripted proposer model for kctl's tests and benchmark.

As a proposer command (proposer.kind: command): reads the prompt on stdin and
the context document from $KCTL_CONTEXT, and answers in kctl's answer format.
As a library: answer(context) gives the same text, for the loopback API
servers' scripts.

The answers are real structural rewrites of mm.cl's naive body: a block of
RM x CW elements of C per work-item held in registers (what the tuner alone
cannot reach), an fma EDIT, then sweeps of the block's shape; a request for
more directions than it has gets duplicates (which kctl counts and asks
again for).  For examples/chunk_gla it answers with gla.py's rewrites.
MODEL_FAULT=edit makes the first answer's EDIT miss (kctl asks again with
the error; the second answer is right); MODEL_FAULT=garbage answers text in
no format first, MODEL_FAULT=mute every time, MODEL_FAULT=escapes puts
terminal escape sequences in every rationale and learning and a raw ESC in
the first direction's code.  MODEL_SLEEP_ONCE=FILE: the first call
writes its pid to FILE and hangs for two minutes.  MODEL_LOG=FILE: each call
appends its round, parent and environment as a JSON line.
"""
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gla  # noqa: E402  the answers for examples/chunk_gla

BLOCKED_BODY = """\
const int j0 = get_global_id(0) * CW, i0 = get_global_id(1) * RM;
float acc[RM][CW];

for (int r = 0; r < RM; r++)
	for (int c = 0; c < CW; c++)
		acc[r][c] = 0.0f;
for (int k = 0; k < K; k++) {
	float b[CW];

	for (int c = 0; c < CW; c++)
		b[c] = j0 + c < N ? B[k * N + j0 + c] : 0.0f;
	for (int r = 0; r < RM; r++) {
		const float a = i0 + r < M ? A[(i0 + r) * K + k] : 0.0f;

		for (int c = 0; c < CW; c++)
			acc[r][c] = fma(a, b[c], acc[r][c]);
	}
}
for (int r = 0; r < RM; r++)
	for (int c = 0; c < CW; c++)
		if (i0 + r < M && j0 + c < N)
			C[(i0 + r) * N + j0 + c] = acc[r][c];
"""


def params(wx, wy, rm, cw):
    return (f"#define WX {wx}            // work-group size along N\n"
            f"#define WY {wy}            // work-group size along M\n"
            f"#define RM {rm}            // rows of C per work-item\n"
            f"#define CW {cw}            // columns of C per work-item\n")


def blocked(rm, cw, why):
    return (f"=== DIRECTION: {why}\n"
            "TUNABLE: RM = 1, 2, 4, 8\n"
            "TUNABLE: CW = 1, 2, 4, 8\n"
            "--- BLOCK params\n" + params(8, 8, rm, cw) + "--- END\n"
            "--- BLOCK body\n```c\n" + BLOCKED_BODY + "```\n--- END\n")


FMA_EDIT = ("=== DIRECTION: fuse the multiply-add into one fma per step\n"
            "--- EDIT body\n"
            "<<<<<<< SEARCH\n"
            "\t\ts += A[i * K + k] * B[k * N + j];\n"
            "=======\n"
            "\t\ts = fma(A[i * K + k], B[k * N + j], s);\n"
            ">>>>>>> REPLACE\n"
            "--- END\n")

BAD_EDIT = FMA_EDIT.replace("s += A[i * K + k]", "s += A[i*K + k]")


def directions(ctx):
    """Every direction this model knows for the request, best idea first."""
    parent = ctx.get("parent") or {}
    body = (parent.get("blocks") or {}).get("body", "")
    ideas = []
    if "acc[r][c]" not in body:
        ideas.append(blocked(4, 4, "hold a 4x4 block of C in registers per work-item"))
        ideas.append(blocked(2, 8, "hold a 2x8 block of C per work-item: longer rows of B"))
        ideas.append(FMA_EDIT)
        ideas.append(blocked(8, 4, "hold an 8x4 block of C per work-item: reuse each B load 8 times"))
    else:
        ideas.append(blocked(4, 8, "a 4x8 register block: more reuse of each A load"))
        ideas.append(blocked(8, 8, "an 8x8 register block"))
        ideas.append(blocked(2, 4, "a 2x4 register block: fewer registers"))
    return ideas


def answer(ctx, prompt=""):
    """The answer to a prompt: a first one, or one that fixes what kctl's
    follow-up (the last "YOUR PREVIOUS ANSWER" section) says was wrong."""
    fault = os.environ.get("MODEL_FAULT", "")
    want = int(ctx.get("directions") or 1)
    if (ctx.get("kernel") or {}).get("name") == "chunk_gla":
        return gla.answer(ctx, prompt, want)
    ideas = directions(ctx)
    again = prompt.rfind("=== END OF YOUR PREVIOUS ANSWER")
    if fault == "mute":
        return "I would rather not.\n"
    if fault == "escapes":
        ideas = [d.replace("=== DIRECTION: ", "=== DIRECTION: \x1b]0;owned\x07\x1b[2J", 1)
                 for d in ideas]
        ideas[0] = ideas[0].replace("```c\n", "```c\n// \x1b[31mred\n", 1)
    if again < 0:
        if fault == "garbage":
            return "Sure! Here is a faster kernel: just make it faster.\n"
        if fault == "edit":
            ideas = [BAD_EDIT if d == FMA_EDIT else d for d in ideas]
    else:
        follow = prompt[again:]
        m = re.search(r"Give (\d+) direction", follow)
        want = int(m.group(1)) if m else want
        bad = [int(x) - 1 for x in re.findall(r"direction (\d+) \(line \d+\)", follow)]
        if bad:
            ideas = [ideas[i] for i in bad if i < len(ideas)] + ideas
    while len(ideas) < want:
        ideas.append(ideas[0])  # a duplicate: kctl refuses and counts it
    return "Here are my directions.\n\n" + "\n".join(ideas[:want])


def reflection(ctx):
    """LEARNING lines about a round (kctl's reflection document): one grounded
    in the round's variants, one citing a variant that does not exist (kctl
    drops it)."""
    ok = [v["id"] for v in ctx.get("variants", []) if v.get("status") == "ok"]
    blocked = [v["id"] for v in ctx.get("variants", [])
               if "acc[r][c]" in (v.get("blocks") or {}).get("body", "")]
    lines = ["Here is what the round shows."]
    if blocked:
        lines.append(f"LEARNING: holding a block of C in registers beats one element per "
                     f"work-item [{', '.join(blocked[:2])}]")
    if ok:
        lines.append(f"- LEARNING: every variant of this round passed its checks [{ok[0]}].")
    lines.append("LEARNING: a variant nobody ran was fastest [r99-v999]")
    if os.environ.get("MODEL_FAULT") == "escapes":
        lines = [ln.replace("LEARNING: ", "LEARNING: \x1b]0;owned\x07", 1) for ln in lines]
    return "\n".join(lines) + "\n"


def main():
    prompt = sys.stdin.read()
    with open(os.environ["KCTL_CONTEXT"]) as f:
        ctx = json.load(f)
    if "variants" in ctx:
        sys.stdout.write(reflection(ctx))
        return
    once = os.environ.get("MODEL_SLEEP_ONCE")
    if once and not os.path.exists(once):
        # the first call hangs (and says so), for the kill -9 tests
        with open(once, "w") as f:
            f.write(str(os.getpid()))
        time.sleep(120)
    log = os.environ.get("MODEL_LOG")
    if log:
        with open(log, "a") as f:
            f.write(json.dumps({"round": ctx.get("round"),
                                "again": "YOUR PREVIOUS ANSWER" in prompt,
                                "parent": (ctx.get("parent") or {}).get("id"),
                                "env": dict(os.environ)}) + "\n")
    sys.stdout.write(answer(ctx, prompt))


if __name__ == "__main__":
    main()
