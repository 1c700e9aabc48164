#!/usr/bin/env python3
"""Writes synthetic-smooth.json (or, given "rugged", synthetic-rugged.json): a made-up recorded space for testing
`kctl simulate` (format kctl-space/1, see docs/kctl.md).  The points are a
uniform random sample of examples/matmul.yaml's valid space plus the
template's own point; the speedup is a smooth function of the tunables'
normalised indices with one peak, and a corner of the space fails, so a
search that learns the structure has something to find.  Not a
measurement: tests/data/space/matmul-512.json is the real one."""
import itertools, json, math, random, sys

TUNABLES = [("TM", [1, 2, 4, 6, 8, 12, 16]), ("VN", [1, 2, 4, 8, 16]), ("TN", [1, 2, 4]),
            ("WX", [1, 2, 4, 8, 16, 32]), ("WY", [1, 2, 4, 8]), ("KU", [1, 2, 4, 8]),
            ("KB", [0, 16, 32, 64, 128, 256]), ("LOCAL", [0, 1]), ("PACK", [0, 1])]
TEMPLATE = {"TM": 1, "VN": 4, "TN": 1, "WX": 8, "WY": 1, "KU": 1, "KB": 0, "LOCAL": 0, "PACK": 0}
# the peak, in normalised index units, and how sharply each tunable matters
PEAK = {"TM": 0.66, "VN": 0.75, "TN": 0.5, "WX": 0.6, "WY": 0.33, "KU": 0.66, "KB": 0.4,
        "LOCAL": 0.0, "PACK": 1.0}
WEIGHT = {"TM": 3.0, "VN": 3.0, "TN": 1.5, "WX": 2.0, "WY": 1.5, "KU": 1.0, "KB": 1.0,
          "LOCAL": 0.5, "PACK": 0.8}


def valid(p):
    TM, VN, TN, WX, WY, KU, KB, LOCAL, PACK = (p[n] for n, _ in TUNABLES)
    return (TM * TN * VN <= 256 and TM * TN * VN >= 4 and WX * WY <= 256
            and (KB == 0 or KB % KU == 0) and (LOCAL == 0 or KB > 0)
            and (PACK == 0 or LOCAL == 0)
            and (PACK == 0 or (48 % TM == 0 and 64 % (TN * VN) == 0))
            and (LOCAL == 0 or 4 * KB * (WY * TM + WX * TN * VN) <= 65536))


def outcome(p):
    if p["TM"] * p["TN"] * p["VN"] >= 128:
        return "compile_error", None
    if p["LOCAL"] and p["WX"] * p["WY"] == 256:
        return "runtime_error", None
    d = 0.0
    for name, values in TUNABLES:
        x = values.index(p[name]) / (len(values) - 1)
        d += WEIGHT[name] * (x - PEAK[name]) ** 2
    return "ok", round(60.0 * math.exp(-d), 4)


def outcome_rugged(p, rng):
    """Closer to a CPU matmul: register tile and work-group size trade off,
    products of tunables matter more than each alone, 5% noise."""
    if p["TM"] * p["TN"] * p["VN"] >= 128:
        return "compile_error", None
    if p["LOCAL"] and p["WX"] * p["WY"] == 256:
        return "runtime_error", None
    acc = p["TM"] * p["TN"] * p["VN"]
    wg = p["WX"] * p["WY"]
    s = 40.0 * math.exp(-0.5 * ((math.log2(acc) - 5.0) / 1.3) ** 2)
    s *= math.exp(-0.5 * ((math.log2(wg) - 4.0) / 2.0) ** 2)
    s *= 1.0 + 0.25 * (p["VN"] in (8, 16)) + 0.15 * (p["KU"] >= 4) + 0.3 * p["PACK"]
    s *= 0.6 if p["LOCAL"] else 1.0
    s *= 1.0 if p["KB"] in (0, 64, 128) else 0.85
    s *= math.exp(rng.gauss(0, 0.05))
    return "ok", round(s, 4)


def main():
    rugged = len(sys.argv) > 1 and sys.argv[1] == "rugged"
    rng = random.Random(13)
    names = [n for n, _ in TUNABLES]
    space = [dict(zip(names, vals)) for vals in itertools.product(*(v for _, v in TUNABLES))]
    space = [p for p in space if valid(p) and p != TEMPLATE]
    points = [TEMPLATE] + rng.sample(space, 299)
    out = []
    for p in points:
        status, speedup = outcome_rugged(p, rng) if rugged else outcome(p)
        out.append({"params": p, "status": status, "median_ms": None, "gflops": None,
                    "cv": None, "speedup": speedup})
    doc = {"format": "kctl-space/1", "spec": "examples/matmul.yaml",
           "shape": {"M": 512, "N": 512, "K": 512}, "device": "synthetic (no device)",
           "recorded": "synthetic", "commit": None,
           "measurement": {"note": "synthetic: speedup is a made-up function (%s)" % ("rugged" if rugged else "smooth")},
           "points": out}
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")


main()
