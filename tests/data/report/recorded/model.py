#!/usr/bin/env python3
"""The proposer command of the recorded session (tests/data/report/README.md).

kctl runs it with the prompt on stdin and the context document's path as its
argument; it answers in kctl's answer format (docs/kctl.md, "The answer
format").  Its directions are EDITs of matmul.cl's block, chosen so that the
recorded session holds every kind of outcome the report must draw: sound
rewrites of the block's defaults, a compile error, a wrong result, a crash
and a hang.  Each direction is given once in a session (model-given.json in
kctl's working directory remembers which), so kctl never refuses one as a duplicate.  For a
reflection (a context with "variants") it answers LEARNING lines citing the
round's own variants.
"""
import json
import os
import sys

ROW = "\tconst int row = get_global_id(1) * TM;  // first row of this work-item\n"
COL = "\tconst int col = get_global_id(0) * CN;  // first column of this work-item\n"
ACC = "\tfloatV acc[TM][TN];\n"
BLOCK = "0"  # the template's one block has no name: kctl calls it 0
STORE = "\t\t\t\t\tSTOREV(acc[i][t], crow + c);\n"


def edit(why, search, replace):
    return (f"=== DIRECTION: {why}\n--- EDIT {BLOCK}\n<<<<<<< SEARCH\n{search}=======\n"
            f"{replace}>>>>>>> REPLACE\n--- END\n")


def default(name, old, new, why):
    """A rewrite of one #ifndef-guarded default (the launch reads it too)."""
    line = f"#define {name} {old} "
    return ("default-" + name + str(new), line,
            lambda block: edit(why, next(l for l in block.splitlines(True)
                                         if l.startswith(line)),
                               next(l for l in block.splitlines(True)
                                    if l.startswith(line)).replace(
                                   f"#define {name} {old} ", f"#define {name} {new} ")))


def fixed(key, why, search, replace):
    return (key, search, lambda block: edit(why, search, replace))


# (key, a line the parent's block must hold, the direction), by round
IDEAS = {
    1: [
        fixed("compile", "hoist the row index; the store loop reads it once", ROW,
              ROW.replace("* TM;", "* TM")),
        fixed("incorrect", "fold the epilogue's scaling into the vector store", STORE,
              STORE.replace("acc[i][t],", "acc[i][t] * (floatV)(1.01f),")),
        default("TM", 1, 4, "four rows of C per work-item: each B vector is reused 4 times"),
    ],
    2: [
        fixed("crash", "prefetch the far tile of C before the K loop", ACC,
              ACC + "\n\tif (col == 0 && row == 0)\n\t\tC[(size_t)1 << 40] = 0.0f;\n"),
        fixed("timeout", "wait until every work-item of the group has its column", COL,
              COL + "\tfor (;;)\n\t\tif (K < 0)\n\t\t\tbreak;\n"),
        default("VN", 4, 8, "8-wide vectors along N: one AVX register per load"),
    ],
    3: [
        default("KU", 1, 4, "unroll K by 4: fewer loop branches per FMA"),
        default("WY", 1, 4, "4 x 8 work-groups: rows of A shared within a group"),
    ],
}
SPARE = [
    default("WX", 8, 16, "16 work-items along N: longer rows of B per group"),
    default("TN", 1, 2, "two vectors per work-item along N"),
]


def given_file():
    """Where the directions given so far are kept: kctl's working directory."""
    return os.path.join(os.getcwd(), "model-given.json")


def propose(ctx):
    path = given_file()
    try:
        with open(path) as f:
            given = set(json.load(f))
    except FileNotFoundError:
        given = set()
    blocks = (ctx.get("parent") or {}).get("blocks") or {}
    block = blocks.get(BLOCK) or ctx["kernel"]["template"]
    want = int(ctx.get("directions") or 1)
    out = []
    for key, needs, make in IDEAS.get(int(ctx.get("round") or 0), []) + SPARE:
        if len(out) < want and key not in given and needs in block:
            out.append(make(block))
            given.add(key)
    with open(path, "w") as f:
        json.dump(sorted(given), f)
    return "Here is what I would try.\n\n" + "\n".join(out)


def reflect(ctx):
    rows = ctx.get("variants", [])
    ok = [v["id"] for v in rows if v.get("status") == "ok"]
    bad = [v["id"] for v in rows if v.get("status") not in (None, "ok")]
    lines = ["What the round shows:"]
    if ok:
        lines.append(f"LEARNING: {len(ok)} of {len(rows)} variants passed & were timed; "
                     f"the defaults matter when TM*VN < 16 [{', '.join(ok[:2])}]")
    if bad:
        lines.append(f"LEARNING: edits outside the K loop broke \"correctness\" or the "
                     f"build [{', '.join(bad[:2])}]")
    return "\n".join(lines) + "\n"


def main():
    sys.stdin.read()
    ctx_path = sys.argv[1]
    with open(ctx_path) as f:
        ctx = json.load(f)
    sys.stdout.write(reflect(ctx) if "variants" in ctx else propose(ctx))


if __name__ == "__main__":
    main()
