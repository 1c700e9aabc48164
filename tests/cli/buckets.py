#!/usr/bin/env python3
"""evalpod with several timed shapes (shape buckets) in one batch.

usage: buckets.py EVALPOD DATA_DIR   (DATA_DIR: tests/data/redteam)

One batch of the affine problem (y = 2x + 1) times two shapes, `big`
(n = 65536, the primary: the first timed) and `mid` (n = 4096), and checks a
third, `odd` (n = 1000).  It holds the honest control `good`, a baseline,
and `bucket_cheat`, a kernel right at every check and when timed at the
primary, but that writes zeros when timed at `mid` (it recognises the
correctness inputs by x[0]).

- `good` and the baseline are ok; `performance` is the primary's, exactly as
  with one timed shape; `performance_by_shape` has both buckets, each with
  its own median, speedups and GFLOP/s from the problem's flops at that n;
- `bucket_cheat` is invalid / wrong_when_timed, its message naming `mid`,
  with no figures;
- summary.json's reference has its timing at both buckets;
- a batch with one timed shape has no `performance_by_shape`;
- the same batch again with a session's reference cache (--ref-cache) takes
  the reference's outputs, the secondary bucket's timing outputs included,
  from the cache and reaches the same verdicts; there the reference is not
  timed: the baseline, timed beside it in the cold run, carries its speed at
  each bucket (its anchor), and every speedup over the reference is the
  speedup over the baseline times that bucket's anchor.
"""
import json
import os
import subprocess
import sys
import tempfile

import checks
import redteam

check = checks.check
SEEDS = [1, 2, 3]
LIMITS = {"compile_timeout_s": 30, "run_timeout_s": 6, "time_timeout_s": 400}
MID_N = 4096


def make_batch(data, timed=("big", "mid")):
    cheat = checks.read(data, "bucket_cheat.cl")
    cheat = cheat.replace("@CHECK_X0@", redteam.bits_list(SEEDS))
    cheat = cheat.replace("@BUCKET_N@", str(MID_N))
    variants = [{"id": "good", "source": checks.read(data, "good.cl")},
                {"id": "bucket_cheat", "source": cheat}]
    batch = checks.affine_batch("buckets", checks.read(data, "reference.cl"), variants, LIMITS,
                                baseline={"id": "baseline",
                                          "source": checks.read(data, "baseline.cl")},
                                seeds=SEEDS)
    batch["shapes"] = [{"name": "big", "values": {"n": 1 << 16}},
                       {"name": "odd", "values": {"n": 1000}},
                       {"name": "mid", "values": {"n": MID_N}}]
    for sh in batch["shapes"]:
        if sh["name"] in timed:
            sh["timed"] = True
    return batch


def run(evalpod, batch, tmp, name, extra=()):
    path = os.path.join(tmp, name + ".json")
    out = os.path.join(tmp, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(batch, f)
    try:
        proc = subprocess.run([evalpod, "run", path, "--out", out, *extra],
                              capture_output=True, text=True, errors="replace", timeout=900)
    except subprocess.TimeoutExpired:
        check(False, f"{name}: evalpod finishes within 900 s")
        return out, None, ""
    sys.stderr.write(proc.stderr[-3000:])
    print(proc.stdout)
    return out, proc.returncode, proc.stdout


def load(out, name):
    try:
        with open(os.path.join(out, name + ".json"), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        check(False, f"{name}: written and readable ({e})")
        return {}


def check_honest(res, name):
    perf = res.get("performance") or {}
    by = res.get("performance_by_shape") or {}
    check(res.get("status") == "ok", f"{name}: ok (got {res.get('status')}, {res.get('fault')})")
    check(perf.get("shape") == "big", f"{name}: performance is the primary's (big)")
    check(sorted(by) == ["big", "mid"], f"{name}: performance_by_shape has big and mid "
          f"(got {sorted(by)})")
    if sorted(by) != ["big", "mid"]:
        return
    check(by["big"].get("median_ms") == perf.get("median_ms"),
          f"{name}: the primary's entry is performance's median")
    check(by["mid"].get("shape") == "mid", f"{name}: the mid entry names its shape")
    for b, n in (("big", 1 << 16), ("mid", MID_N)):
        e = by[b]
        ms = e.get("median_ms") or 0
        sp = (e.get("speedup_vs_reference") or {}).get("ratio_of_medians")
        check(ms > 0 and isinstance(sp, (int, float)) and sp > 0,
              f"{name}@{b}: a median and a speedup vs the reference (got {ms}, {sp})")
        gf = e.get("gflops")
        check(ms > 0 and isinstance(gf, (int, float)) and
              abs(gf - 2 * n / (ms * 1e6)) <= 1e-6 * gf,
              f"{name}@{b}: gflops is 2*n / median at n = {n} (got {gf})")


def check_batch(out, rc, label, anchored=False):
    check(rc == 0, f"{label}: evalpod exits 0 (got {rc})")
    check_honest(load(out, "good"), f"{label}: good")
    check_honest(load(out, "baseline"), f"{label}: baseline")
    cheat = load(out, "bucket_cheat")
    fault = cheat.get("fault") or {}
    check((cheat.get("status"), fault.get("kind")) == ("invalid", "wrong_when_timed"),
          f"{label}: bucket_cheat is invalid/wrong_when_timed "
          f"(got {cheat.get('status')}, {fault.get('kind')})")
    check("'mid'" in (fault.get("message") or ""),
          f"{label}: bucket_cheat's fault names the shape (got {fault.get('message')!r})")
    check("performance" not in cheat and "performance_by_shape" not in cheat,
          f"{label}: bucket_cheat has no figures")
    summary = load(out, "summary")
    ref = summary.get("reference") or {}
    if not anchored:
        check(sorted(ref.get("performance_by_shape") or {}) == ["big", "mid"],
              f"{label}: the summary's reference is timed at big and mid")
        return summary
    # The baseline was timed beside the reference at both shapes in the cold
    # run: its anchors carry the reference's speed at each (evalpod.md).
    anchors = ref.get("anchor_by_shape") or {}
    check(sorted(anchors) == ["big", "mid"] and ref.get("performance") is None and
          not ref.get("performance_by_shape") and
          all(a.get("program") == "baseline" and a.get("links") == 0
              for a in anchors.values()),
          f"{label}: the reference is not timed; the baseline's anchors at big and mid "
          f"carry it ({anchors})")
    good = load(out, "good").get("performance_by_shape") or {}
    for b in ("big", "mid"):
        e = good.get(b) or {}
        vs_ref, vs_base = e.get("speedup_vs_reference") or {}, e.get("speedup_vs_baseline") or {}
        k = (anchors.get(b) or {}).get("speedup_vs_reference", 0)
        want = vs_base.get("ratio_of_medians", 0) * k
        # evalpod writes 10 significant digits: three rounded figures can be
        # about 1.5e-9 of the value apart; a wrong anchor is off by percents
        check(k > 0 and abs(vs_ref.get("ratio_of_medians", -1) - want) <= 1e-8 * want,
              f"{label}: good@{b}'s speedup over the reference is its speedup over the "
              f"baseline times the baseline's anchor at {b}")
    return summary


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    evalpod, data = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        out, rc, stdout = run(evalpod, make_batch(data), tmp, "two")
        check_batch(out, rc, "two buckets")
        check("good@mid" in stdout, "the table has a row per secondary bucket")

        out1, rc1, _ = run(evalpod, make_batch(data, timed=("mid",)), tmp, "one")
        check(rc1 == 0, f"one timed shape: evalpod exits 0 (got {rc1})")
        good = load(out1, "good")
        check(good.get("status") == "ok" and "performance_by_shape" not in good and
              (good.get("performance") or {}).get("shape") == "mid",
              "one timed shape: no performance_by_shape; performance at that shape")
        cheat = load(out1, "bucket_cheat")
        check(cheat.get("status") == "invalid",
              "one timed shape: the cheat timed at its bucket alone is caught too")

        cache = os.path.join(tmp, "session-cache")
        outc, rcc, _ = run(evalpod, make_batch(data), tmp, "cold", ("--ref-cache", cache))
        check_batch(outc, rcc, "cold cache")
        outw, rcw, _ = run(evalpod, make_batch(data), tmp, "warm", ("--ref-cache", cache))
        summary = check_batch(outw, rcw, "warm cache", anchored=True)
        check((summary.get("reference") or {}).get("outputs_cached") is True,
              "warm cache: the reference's outputs (both buckets' timing sets) come "
              "from the cache")
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
