#!/usr/bin/env python3
"""How far apart can the winners of separate sessions be expected to land? (prints)

    python3 bench/plateau.py tests/data/space/matmul-1024-plateau-1.json \
        tests/data/space/matmul-1024-plateau-2.json [--mark WX=4,WY=1,KU=2 ...]

Reads two or more recordings of the same points (bench/record_space.py, e.g.
with --fix, so that they are a neighbourhood recorded whole) and prints:

- how the recordings agree: each is divided by its own median (the host's
  speed moves between recordings), then the rank correlation of the points'
  figures and the spread of one point's figure between recordings, from
  which the noise of a single measurement (sigma) is estimated;
- the points by the mean of the recordings, and how many are within 1, 2
  and 3 % of the best: the plateau a session's winner is chosen from;
- the rank of the points named by --mark;
- a model of a session's end game, drawn 4,000 times: a session measures
  K points of the plateau once each (noise sigma), takes the C it measured
  fastest into a confirmation that times them side by side until their
  order is right, and wins with the best of those.  Per K and C: the
  winner's median and 5th-percentile fraction of the best point, and the
  chance that the winners of three such sessions are within 1 % of each
  other.  The mean of the recordings stands in for the truth; it carries
  sigma / sqrt(n) of noise itself, so the figures are estimates.

Python 3 standard library only.
"""
import argparse
import json
import math
import os
import random
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from record_space import parse_assignments  # noqa: E402 (the script's folder first)


def die(msg):
    sys.exit(f"plateau: {msg}")


def key(params, names):
    return tuple(params[n] for n in names)


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        die(f"{path}: {e}")
    pts = [p for p in doc.get("points", []) if p.get("status") == "ok" and p.get("gflops")]
    if not pts:
        die(f"{path}: no ok point with gflops")
    return doc, pts


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    for pos, i in enumerate(order):
        r[i] = float(pos)
    return r


def spearman(x, y):
    rx, ry = ranks(x), ranks(y)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    num = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    den = math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))
    return num / den if den else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("recordings", nargs="+")
    ap.add_argument("--mark", action="append", default=[],
                    help="NAME=VALUE,...: print where the points with these values rank")
    ap.add_argument("--samples", default="8,16,24,32,48",
                    help="K: points of the plateau a session measures")
    ap.add_argument("--confirm", default="4,8", help="C: candidates its confirmation re-times")
    ap.add_argument("--draws", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if len(args.recordings) < 2:
        die("give two or more recordings of the same points")

    names, figs = None, []
    for path in args.recordings:
        doc, pts = load(path)
        these = list(pts[0]["params"])
        if names is None:
            names = these
        elif these != names:
            die(f"{path}: tunables {these} differ from {names}")
        med = statistics.median(p["gflops"] for p in pts)
        figs.append({key(p["params"], names): p["gflops"] / med for p in pts})
        print(f"{path}: {len(pts)} ok points, device {doc.get('device')}, "
              f"recorded {doc.get('recorded')}, median {med:.1f} GFLOP/s, "
              f"best {max(p['gflops'] for p in pts):.1f}")
    common = sorted(set.intersection(*(set(f) for f in figs)))
    if len(common) < 8:
        die(f"only {len(common)} points are in every recording")
    varying = [i for i in range(len(names)) if len({k[i] for k in common}) > 1]

    def label(k):
        return " ".join(f"{names[i]}={k[i]}" for i in varying)

    # agreement between recordings, and one measurement's noise
    for j in range(1, len(figs)):
        rho = spearman([figs[0][k] for k in common], [figs[j][k] for k in common])
        print(f"rank correlation, recording 1 against {j + 1}: {rho:.2f} (Spearman, "
              f"{len(common)} points)")
    devs = []
    for k in common:
        logs = [math.log(f[k]) for f in figs]
        m = statistics.fmean(logs)
        devs.extend(x - m for x in logs)
    nrec = len(figs)
    sigma = math.sqrt(sum(d * d for d in devs) / (len(common) * (nrec - 1)))
    print(f"one measurement's noise (sd of log figure, recordings pooled): "
          f"sigma = {100 * sigma:.1f} %")

    truth = {k: statistics.fmean(f[k] for f in figs) for k in common}
    order = sorted(common, key=lambda k: -truth[k])
    best = truth[order[0]]
    print(f"by the mean of the {nrec} recordings (best = 1): worst {truth[order[-1]] / best:.3f}; "
          + ", ".join(f"within {p} %: {sum(truth[k] >= best * (1 - p / 100) for k in common)}"
                      for p in (1, 2, 3, 5)))
    for i, k in enumerate(order[:8]):
        print(f"  {i + 1:3d}. {label(k):28s} {truth[k] / best:.3f}  ("
              + ", ".join(f"{f[k] / best:.3f}" for f in figs) + ")")
    for text in args.mark:
        want = parse_assignments(text, names, "--mark")
        for i, k in enumerate(order):
            if all(k[names.index(nm)] == v for nm, v in want.items()):
                print(f"  --mark {text}: rank {i + 1} of {len(order)}, {label(k)}, "
                      f"{truth[k] / best:.3f} of the best")

    rng = random.Random(args.seed)
    print(f"a session's end game ({args.draws} draws each; noise {100 * sigma:.1f} %):")
    print("     K    C   winner median   winner 5th pct   P(3 winners within 1 %)")
    for ks in (int(x) for x in args.samples.split(",") if x):
        for c in (int(x) for x in args.confirm.split(",") if x):
            kk = min(ks, len(common))
            wins = []
            for _ in range(args.draws):
                seen = rng.sample(common, kk)
                meas = sorted(seen, key=lambda k: -truth[k] * math.exp(rng.gauss(0, sigma)))
                wins.append(max(truth[k] for k in meas[:c]) / best)
            three = 0
            for _ in range(args.draws):
                w = [rng.choice(wins) for _ in range(3)]
                three += max(w) / min(w) <= 1.01
            wins.sort()
            print(f"  {kk:4d} {c:4d}   {statistics.median(wins):13.3f}   "
                  f"{wins[len(wins) // 20]:14.3f}   {three / args.draws:23.2f}")


if __name__ == "__main__":
    main()
