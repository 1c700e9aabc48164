#!/usr/bin/env python3
"""tests/lint/layers.py - the shape docs/architecture.md draws, checked.

    layers.py REPO

Three rules, each a failure with the files and names that break it:
  1. No circle between the C files of common/, evalpod/ and controller/: a
     file that uses a function of another (an exported one, defined there)
     is above it, so two files never use each other, directly or around a
     loop.
  2. A controller file includes no header of a layer above its own.  LAYERS
     below is the picture of docs/architecture.md; a new file must be placed
     in it (an unplaced file is a failure too), which is the point: the
     author says where it sits.
  3. No C file is longer than MAX_LINES.
Exit 0 when all hold, 1 otherwise.
"""
import collections
import os
import re
import sys

MAX_LINES = 800

# controller/ from the top (commands) down to the spec; common/ is below all.
# Names are file names without .c/.h; a name stands for both files.
LAYERS = [
    ("commands", "main cmds cmdutil cmd-brief cmd-cancel cmd-delete cmd-render cmd-show "
                 "cmd-simulate cmd-start cmd-status cmd-eval eval-out cmd-report"
                 " cmd-cluster cmd-cache"),
    ("the loop", "loop session.c"),
    ("the steps", "round rank confirm specfault report tracker report-html report-internal "
                  "report-plots report-model "
                  "cache-use"),
    ("proposers, backends, the batch",
     "propose proposers proposal tune tune-internal tune-model tune-run tune-space surrogate "
     "model model-internal mix context exchange prompt prompt-internal prompt-brief "
     "prompt-reflect prompt-text answer answer-internal answer-apply llm llm-internal llm-api "
     "llm-outcome llmcmd backend backend-local evalrun kround kround-internal kround-job "
     "kround-watch kube kpod pack"
     " kround-queue kcluster"),
    ("the session", "services state winner progress store store-internal store-llm store-session "
                    "store-sql store-variant store-github handoff pairs diff session.h github "
                    "github-internal github-call"
                    " kstate cache"),
    ("the spec", "spec spec-internal spec-evaluator spec-exprs spec-problem spec-proposer "
                 "spec-read spec-render llm-provider mutate render"),
]

# kctl export and its tuned tables sit with the commands.
LAYERS[0] = (LAYERS[0][0], LAYERS[0][1] + " cmd-export tuned tuned-c")
# Shape buckets (several timed shapes in one session) sit with the winner.
LAYERS[4] = (LAYERS[4][0], LAYERS[4][1] + " bucket")


def strip(src):
    """src with comments and string/char literals emptied (newlines kept)."""
    out, i, n = [], 0, len(src)
    while i < n:
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * src.count("\n", i, j))
            i = j
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src[i] in "\"'":
            q, j = src[i], i + 1
            while j < n and src[j] != q:
                j += 2 if src[j] == "\\" else 1
            out.append(q + q)
            i = j + 1
        else:
            out.append(src[i])
            i += 1
    return "".join(out)


# A definition at the left margin (clang-format puts them there): the
# return type, the name, the parameters (which may span lines), the body.
DEF = re.compile(r"^(static\s+)?(?:[A-Za-z_][\w\s\*]*?[\s\*])([A-Za-z_]\w*)\s*"
                 r"\(((?:[^()]|\([^()]*\))*)\)\s*\{", re.M)
WORD = re.compile(r"\b[A-Za-z_]\w*\b")


def circles(root):
    """Rule 1: the file-level circles in each folder, as (files, {edge: names})."""
    bad = []
    for folder in ("common", "evalpod", "controller"):
        d = os.path.join(root, folder)
        files = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".c"))
        text = {f: strip(open(f, encoding="utf-8").read()) for f in files}
        owner = {}
        for f in files:
            for m in DEF.finditer(text[f]):
                if not m.group(1) and m.group(2) not in ("if", "for", "while", "switch"):
                    owner.setdefault(m.group(2), f)
        edges, why = collections.defaultdict(set), collections.defaultdict(set)
        for f in files:
            for w in set(WORD.findall(text[f])):
                o = owner.get(w)
                if o and o != f:
                    edges[f].add(o)
                    why[(f, o)].add(w)
        for comp in components(files, edges):
            if len(comp) > 1:
                bad.append((comp, {(a, b): why[(a, b)] for a in comp for b in edges[a]
                                   if b in comp}))
    return bad


def components(nodes, edges):
    """Strongly connected components (Tarjan, iterative)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def layer_of(name):
    """The layer number of a controller file name (0 = commands), or None."""
    for i, (_, names) in enumerate(LAYERS):
        for n in names.split():
            if name == n or ("." not in n and name.rsplit(".", 1)[0] == n):
                return i
    return None


def upward_includes(root):
    """Rule 2: (file, header, problem) for each include of a higher layer."""
    d = os.path.join(root, "controller")
    bad = []
    for f in sorted(os.listdir(d)):
        if not f.endswith((".c", ".h")):
            continue
        mine = layer_of(f)
        if mine is None:
            bad.append((f, "", "is in no layer of tests/lint/layers.py (say where it sits)"))
            continue
        src = open(os.path.join(d, f), encoding="utf-8").read()
        for h in re.findall(r'^#include "([^"]+)"', src, re.M):
            if not os.path.exists(os.path.join(d, h)):
                continue  # common/ or a generated header: below every layer
            theirs = layer_of(h)
            if theirs is None:
                bad.append((h, "", "is in no layer of tests/lint/layers.py (say where it sits)"))
            elif theirs < mine:
                bad.append((f, h, f"({LAYERS[mine][0]}) includes a header of "
                                  f"{LAYERS[theirs][0]}, a layer above it"))
    return sorted(set(bad))


def long_files(root):
    """Rule 3: (file, lines) of every C file past MAX_LINES."""
    out = []
    for folder in ("common", "evalpod", "controller"):
        d = os.path.join(root, folder)
        for f in sorted(os.listdir(d)):
            if f.endswith(".c"):
                with open(os.path.join(d, f), encoding="utf-8") as fh:
                    n = sum(1 for _ in fh)
                if n > MAX_LINES:
                    out.append((f"{folder}/{f}", n))
    return out


def main():
    if len(sys.argv) != 2:
        print("usage: layers.py REPO", file=sys.stderr)
        return 2
    root = sys.argv[1]
    failed = 0
    for comp, why in circles(root):
        failed += 1
        print("FAIL circle: " + " ".join(os.path.relpath(f, root) for f in comp))
        for (a, b), names in sorted(why.items()):
            print(f"     {os.path.basename(a)} uses {os.path.basename(b)}: "
                  + " ".join(sorted(names)))
    for f, h, what in upward_includes(root):
        failed += 1
        print(f"FAIL controller/{f} {h + ' ' if h else ''}{what}")
    for f, n in long_files(root):
        failed += 1
        print(f"FAIL {f} has {n} lines (more than {MAX_LINES}: split it along a seam)")
    if not failed:
        print("ok   no circle between files, no header of a layer above, "
              f"no C file over {MAX_LINES} lines")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
