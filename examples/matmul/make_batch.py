#!/usr/bin/env python3
"""Writes an EvalBatch for the matmul example (docs/evalbatch.md).

A way to feed the example to evalpod by hand, without kctl:
    python3 examples/matmul/make_batch.py --size 1024 --variants 8 > batch.json
    evalpod run batch.json --out results/
The problem, shapes, tolerances and tunables mirror examples/matmul.yaml (the
source of truth; keep the two in step).  Variants are points of the tunable
space rendered as -D build options over the template (the template's #ifndef
defaults are the baseline): first a fixed list of points known to differ
widely (the fast register-blocked ones, local-memory staging, K blocking),
then, with the default seed, the 8 points that seed drew from the space on
2026-12-06 (pinned, so that bench/harness.sh times the same 16 variants
whatever later changes the space), then valid points drawn at random with
the seed.
"""
import argparse
import itertools
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# tunables.params of examples/matmul.yaml, in its order
PARAMS = {
    "TM": [1, 2, 4, 6, 8, 12, 16],
    "VN": [1, 2, 4, 8, 16],
    "TN": [1, 2, 4],
    "WX": [1, 2, 4, 8, 16, 32],
    "WY": [1, 2, 4, 8, 16, 32],
    "KU": [1, 2, 4, 8],
    "KB": [0, 16, 32, 64, 128, 256],
    "LOCAL": [0, 1],
    "PACK": [0, 1, 2],
}

# A few points worth seeing first: (TM, VN, TN, WX, WY, KU, KB, LOCAL, PACK)
FIRST = [
    (8, 16, 2, 4, 1, 2, 0, 0, 1),
    (8, 16, 2, 4, 1, 2, 0, 0, 0),
    (8, 16, 1, 8, 1, 1, 0, 0, 1),
    (12, 8, 1, 8, 1, 1, 0, 0, 0),
    (8, 16, 1, 8, 1, 1, 256, 0, 0),
    (8, 16, 1, 4, 4, 4, 32, 1, 0),
    (8, 8, 2, 8, 1, 1, 0, 0, 1),
    (4, 1, 1, 16, 1, 1, 0, 0, 0),
]

# Seed 1's first 8 draws from the space of 2026-12-06 (WY up to 32), in
# FIRST's order of names: the rest of bench/harness.sh's 16 variants; each
# must stay a valid point of the space.
DRAWN = [
    (12, 16, 1, 32, 8, 8, 16, 1, 0),
    (12, 1, 1, 2, 16, 4, 16, 1, 0),
    (4, 1, 4, 8, 16, 8, 64, 0, 0),
    (1, 8, 1, 16, 8, 4, 128, 0, 0),
    (4, 8, 2, 32, 4, 2, 64, 0, 2),
    (6, 1, 2, 16, 16, 8, 0, 0, 1),
    (1, 16, 4, 32, 4, 1, 16, 0, 1),
    (2, 2, 2, 8, 1, 1, 0, 0, 1),
]


def valid(p):
    """tunables.constraints of examples/matmul.yaml."""
    acc = p["TM"] * p["TN"] * p["VN"]
    return (4 <= acc <= 256
            and p["WX"] * p["WY"] <= 256
            and (p["KB"] == 0 or p["KB"] % p["KU"] == 0)
            and (p["LOCAL"] == 0 or p["KB"] > 0)
            and (p["LOCAL"] == 0
                 or 4 * p["KB"] * (p["WY"] * p["TM"] + p["WX"] * p["TN"] * p["VN"]) <= 65536)
            and (p["PACK"] == 0 or p["LOCAL"] == 0)
            and (p["PACK"] == 0 or (48 % p["TM"] == 0 and 64 % (p["TN"] * p["VN"]) == 0)))


def points(count, seed):
    names = list(PARAMS)
    out = [dict(zip(names, v)) for v in FIRST + (DRAWN if seed == 1 else [])]
    assert all(valid(p) and all(p[k] in PARAMS[k] for k in names) for p in out)
    rng = random.Random(seed)
    space = [dict(zip(names, v)) for v in itertools.product(*PARAMS.values())]
    space = [p for p in space if valid(p) and p not in out]
    rng.shuffle(space)
    return (out + space)[:count]


def read(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return f.read()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=1024, help="M = N = K of the timed shape")
    ap.add_argument("--variants", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1, help="seeds the random points")
    ap.add_argument("--min-samples", type=int, default=10)
    ap.add_argument("--min-time-ms", type=float, default=100)
    ap.add_argument("--batch-id", default="matmul-example")
    args = ap.parse_args()
    if args.size < 1:
        sys.exit("--size must be at least 1")
    template = read("matmul.cl")
    variants = []
    for i, p in enumerate(points(args.variants, args.seed)):
        tag = "-".join(f"{k.lower()}{v}" for k, v in p.items())
        variants.append({
            "id": f"v{i:03d}-{tag}",
            "parent": "baseline",
            "source": template,
            "build_options": " ".join(f"-D{k}={v}" for k, v in p.items()),
            "rationale": (f"register block {p['TM']}x{p['TN']}x{p['VN']}, work-group "
                          f"{p['WX']}x{p['WY']}, K unroll {p['KU']}, K block {p['KB']}, "
                          f"local {p['LOCAL']}, packed {p['PACK']}"),
        })
    n = args.size
    batch = {
        "schema": "evalpod.batch",
        "version": 1,
        "batch_id": args.batch_id,
        "problem": {
            "name": "matmul",
            "semantics": "C = A * B, row-major fp32, A is MxK, B is KxN",
            "buffers": [
                {"name": "A", "type": "float", "count": "M*K", "role": "input",
                 "init": {"dist": "uniform", "lo": -1, "hi": 1}},
                {"name": "B", "type": "float", "count": "K*N", "role": "input",
                 "init": {"dist": "uniform", "lo": -1, "hi": 1}},
                {"name": "C", "type": "float", "count": "M*N", "role": "output"},
                {"name": "Ap", "type": "float", "count": "round_up(M, 48) * K",
                 "role": "scratch"},
                {"name": "Bp", "type": "float", "count": "round_up(N, 64) * K",
                 "role": "scratch"},
            ],
            "scalars": [
                {"name": "M", "type": "int", "value": "M"},
                {"name": "N", "type": "int", "value": "N"},
                {"name": "K", "type": "int", "value": "K"},
            ],
            "launch": [{
                "kernel": "pack_a", "args": ["A", "Ap", "M", "K"],
                "global": ["PACK == 1 ? round_up(ceil_div(K, 16), 8) : 0",
                           "PACK == 1 ? round_up(ceil_div(M, TM), 8) : 1"],
                "local": ["PACK == 1 ? 8 : 1", "PACK == 1 ? 8 : 1"],
            }, {
                "kernel": "pack_b", "args": ["B", "Bp", "N", "K"],
                "global": ["PACK ? round_up(ceil_div(N, VN), 64) : 0",
                           "PACK ? round_up(K, 16) : 1"],
                "local": ["PACK ? 64 : 1", "PACK ? 16 : 1"],
            }, {
                "kernel": "matmul", "args": ["A", "B", "Ap", "Bp", "C", "M", "N", "K"],
                "global": ["round_up(ceil_div(N, TN * VN), WX)",
                           "round_up(ceil_div(M, TM), WY)"],
                "local": ["WX", "WY"],
            }],
            "reference_launch": [{
                "kernel": "matmul_ref", "args": ["A", "B", "C", "M", "N", "K"],
                "global": ["N", "M"],
            }],
            "flops": "2*M*N*K",
            "bytes": "4*(M*K + K*N + M*N)",
        },
        "shapes": [
            {"name": f"{n}x{n}x{n}", "timed": True, "values": {"M": n, "N": n, "K": n}},
            {"name": "512x2048x256", "values": {"M": 512, "N": 2048, "K": 256}},
            {"name": "257x259x263", "values": {"M": 257, "N": 259, "K": 263}},
        ],
        "reference": {"source": read("reference.cl")},
        "baseline": {"id": "baseline", "source": template},
        "variants": variants,
        "measurement": {"warmup": 2, "min_samples": args.min_samples,
                        "min_time_ms": args.min_time_ms},
        "correctness": {"atol": 1e-3, "rtol": 1e-3, "seeds": [1, 2, 3]},
    }
    json.dump(batch, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
