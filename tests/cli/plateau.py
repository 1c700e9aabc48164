#!/usr/bin/env python3
"""bench/plateau.py on the two recordings of tests/data/space: its figures
agree with a computation made here, and bad input is refused.

usage: plateau.py REPO_ROOT
"""
import json
import os
import statistics
import subprocess
import sys

fails = 0


def check(cond, what):
    global fails
    print(("ok   " if cond else "FAIL ") + what)
    fails += not cond


def run(root, *args):
    return subprocess.run([sys.executable, os.path.join(root, "bench/plateau.py"), *args],
                          capture_output=True, text=True, timeout=120)


def main():
    root = sys.argv[1]
    recs = [os.path.join(root, f"tests/data/space/matmul-1024-plateau-{n}.json") for n in (1, 2)]
    # the best point by the mean of the two recordings, each divided by its median
    figs = []
    for path in recs:
        with open(path, encoding="utf-8") as f:
            pts = json.load(f)["points"]
        med = statistics.median(p["gflops"] for p in pts)
        figs.append({(p["params"]["WX"], p["params"]["WY"], p["params"]["KU"]): p["gflops"] / med
                     for p in pts})
    mean = {k: (figs[0][k] + figs[1][k]) / 2 for k in figs[0]}
    order = sorted(mean, key=lambda k: -mean[k])
    within1 = sum(mean[k] >= mean[order[0]] * 0.99 for k in mean)
    wx, wy, ku = order[0]
    n = len(order)

    r = run(root, *recs, "--mark", f"WX={wx},WY={wy},KU={ku}", "--samples", f"{n},8",
            "--confirm", f"{n},1", "--draws", "300")
    out = r.stdout
    check(r.returncode == 0, f"exits 0 on the two recordings (stderr: {r.stderr[-300:]})")
    check(f"within 1 %: {within1}," in out, f"counts {within1} points within 1 % of the best")
    check(f"rank 1 of {n}" in out, "the best point by the mean is ranked first by --mark")
    rows = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 5 and f[0].isdigit() and f[1].isdigit():
            rows[(int(f[0]), int(f[1]))] = [float(x) for x in f[2:]]
    check(rows.get((n, n)) == [1.0, 1.0, 1.0],
          f"measuring every point and confirming them all always wins with the best "
          f"(got {rows.get((n, n))})")
    lone = rows.get((8, 1))
    check(lone is not None and lone[0] < 1.0 and 0.0 <= lone[2] < 1.0,
          f"8 points and no confirmation land below the best, not always together (got {lone})")

    r = run(root, recs[0])
    check(r.returncode != 0 and "two or more recordings" in r.stderr,
          "one recording is refused with a message")
    r = run(root, *recs, "--mark", "NOPE=1")
    check(r.returncode != 0 and "--mark: 'NOPE=1' is not NAME=VALUE" in r.stderr, "a bad --mark is named")
    print(f"{fails} failed")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
