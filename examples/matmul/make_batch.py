#!/usr/bin/env python3
"""Writes an EvalBatch for the matmul example (docs/evalbatch.md).

Until kctl's loop lands this is how the example is fed to evalpod:
    python3 examples/matmul/make_batch.py --size 512 --variants 16 > batch.json
    evalpod run batch.json --out results/
Variants are points of the TM x VN x WX space, rendered as -D build options
over the template (the template's #ifndef defaults are the baseline).
"""
import argparse
import itertools
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def read(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return f.read()


def space():
    # Ordered so that the first points are the most different from each other.
    pts = []
    for tm, vn, wx in itertools.product([8, 4, 2, 1], [16, 8, 4], [8, 4, 16, 1]):
        if tm * vn <= 128:
            pts.append((tm, vn, wx))
    return pts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=512, help="M = N = K of the timed shape")
    ap.add_argument("--variants", type=int, default=16)
    ap.add_argument("--min-samples", type=int, default=10)
    ap.add_argument("--min-time-ms", type=float, default=100)
    ap.add_argument("--batch-id", default="matmul-example")
    args = ap.parse_args()
    if args.size % 16:
        sys.exit("--size must be a multiple of 16")
    template = read("matmul.cl")
    variants = []
    for i, (tm, vn, wx) in enumerate(space()[: args.variants]):
        variants.append({
            "id": f"v{i:03d}-tm{tm}-vn{vn}-wx{wx}",
            "parent": "baseline",
            "source": template,
            "build_options": f"-DTM={tm} -DVN={vn} -DWX={wx}",
            "rationale": f"register block {tm}x{vn}, work-group {wx}",
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
            ],
            "scalars": [
                {"name": "M", "type": "int", "value": "M"},
                {"name": "N", "type": "int", "value": "N"},
                {"name": "K", "type": "int", "value": "K"},
            ],
            "launch": [{
                "kernel": "matmul", "args": ["A", "B", "C", "M", "N", "K"],
                "global": ["round_up(ceil_div(N, VN), WX)", "ceil_div(M, TM)"],
                "local": ["WX", 1],
            }],
            "reference_launch": [{
                "kernel": "matmul_ref", "args": ["A", "B", "C", "M", "N", "K"],
                "global": ["N", "M"],
            }],
            "flops": "2*M*N*K",
            "bytes": "4*(M*K + K*N + M*N)",
        },
        "shapes": [
            {"name": f"{n}", "timed": True, "values": {"M": n, "N": n, "K": n}},
            {"name": "64x48x80", "values": {"M": 64, "N": 48, "K": 80}},
            {"name": "136x32x40", "values": {"M": 136, "N": 32, "K": 40}},
        ],
        "reference": {"source": read("reference.cl")},
        "baseline": {"id": "baseline", "source": template},
        "variants": variants,
        "measurement": {"warmup": 2, "min_samples": args.min_samples,
                        "min_time_ms": args.min_time_ms},
        "correctness": {"atol": 1e-4, "rtol": 1e-4, "seeds": [1, 2, 3]},
    }
    json.dump(batch, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
