#!/usr/bin/env python3
"""bench/retime.py - times the winners of several kctl sessions side by side.

    python3 bench/retime.py [--evalpod PATH] [--samples N] [--passes P] SESSION_DIR...

Each SESSION_DIR is a session's output folder (runs/<name>/<session>/, the
one holding best.cl) of the same spec.  The winner's id is read from
best.cl's header and its source and build options from the round batch that
proposed it, so it runs exactly as it was measured.  All winners go into one
EvalBatch (the first session's last batch: problem, shapes, checks), the
first session's winner as the baseline, the others as variants, with more
samples than a round takes (--samples, default 40), and evalpod runs it once.
Machine noise then hits every winner alike.

Prints each winner's median at the timed shape, its GFLOP/s, and its speed
over the first winner as the paired median with the quartiles of the paired
ratios, and says whether all are within noise of each other: every paired
quartile range contains 1.0, or the spread of medians is below the largest
robust CV.  Exits 0 when they are, 1 when they are not, 2 on a usage error.

One evalpod process can time a program a few percent off the others it
times, with a narrow interval (controller/pairs.h, PAIRS_PROCESS_BIAS), so
one run cannot tell 2 % apart from that.  With --passes P (P >= 2) the
batch runs in P evalpod processes, one after the other, and every pair of
winners is judged as a session's confirmation judges its candidates
(controller/confirm.c, pairs_faster_across): one is faster than the other
when it is faster by more than 1 % with 95 % confidence in every pass on
its own (the sign-test interval of its per-round ratios), and either the
t-interval of the passes' log medians lies above 1 % or every pass shows
more than the process bias.  The winners are within noise of each other
when no pair is so separated; the script prints, per pair, each pass's
paired median with its interval and the verdict.  For kernel files rather
than sessions, `kctl eval --passes P` judges each against a baseline the
same way.
"""
import argparse
import glob
import json
import math
import os
import re
import subprocess
import sys
import tempfile

# controller/pairs.h: a tie, and what one evalpod process can be off by.
MIN_GAIN = 0.01
PROCESS_BIAS = 0.15


def winner_of(folder):
    """(variant id, source, build options) of a session folder's best.cl."""
    with open(os.path.join(folder, "best.cl"), encoding="utf-8") as f:
        head = f.read(4096)
    m = re.search(r"Best kernel of kctl session \S+: (\S+)", head)
    if not m:
        sys.exit(f"retime: {folder}/best.cl: no 'Best kernel of kctl session' header")
    vid = m.group(1)
    for path in sorted(glob.glob(os.path.join(folder, "rounds", "r*", "batch.json"))):
        batch = json.load(open(path, encoding="utf-8"))
        for v in batch.get("variants", []) + [batch.get("baseline") or {}]:
            if v.get("id") == vid:
                return vid, v["source"], v.get("build_options", "")
    sys.exit(f"retime: {folder}: variant {vid} is in no round's batch.json")


def ci_index(n):
    """pairs_ci_index: the largest j with 2 P(Binomial(n, 1/2) <= j) <= 5 %, or -1."""
    k, cdf = -1, 0.0
    for j in range(n // 2 if n >= 6 else 0):
        cdf += math.exp(math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1)
                        + n * math.log(0.5))
        if 2 * cdf > 0.05:
            break
        k = j
    return k


def verdict(ratios):
    """pairs_verdict: (median, lo, hi) of the ratios; lo and hi None under 6 pairs."""
    r = sorted(ratios)
    n = len(r)
    if not n:
        return None, None, None
    med = r[n // 2] if n % 2 else (r[n // 2 - 1] + r[n // 2]) / 2
    k = ci_index(n)
    return (med, r[k], r[n - 1 - k]) if k >= 0 else (med, None, None)


def paired(a, b):
    """pairs_add: a's time over b's, per timing round holding a sample of both."""
    def by_round(res):
        p = res["performance"]
        return {r: t for r, t in zip(p.get("rounds") or [], p.get("samples_ms") or [])
                if isinstance(r, int) and t and t > 0}
    ta, tb = by_round(a), by_round(b)
    return [ta[r] / tb[r] for r in sorted(ta.keys() & tb.keys())]


def faster(v):
    return v[1] is not None and v[1] > 1 + MIN_GAIN


def faster_across(vs):
    """pairs_faster_across over one verdict per pass."""
    if len(vs) < 2 or not all(faster(v) for v in vs):
        return False
    if all(v[1] > 1 + PROCESS_BIAS for v in vs):
        return True
    logs = [math.log(v[0]) for v in vs]
    n = len(logs)
    mean = sum(logs) / n
    sd = math.sqrt(max(0.0, sum((x - mean) ** 2 for x in logs) / (n - 1)))
    t = [0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228]
    t975 = t[n - 1] if n - 1 <= 10 else 1.96 + 2.5 / (n - 1)
    return mean - t975 * sd / math.sqrt(n) > math.log(1 + MIN_GAIN)


def run_pass(evalpod, batch, entries, tmp, k):
    """One evalpod process over the batch: the winners' result documents."""
    path = os.path.join(tmp, f"batch-{k}.json")
    batch["batch_id"] = f"retime-{k}"
    with open(path, "w", encoding="utf-8") as f:
        json.dump(batch, f)
    out = os.path.join(tmp, f"out-{k}")
    res = subprocess.run([evalpod, "run", path, "--out", out, "--quiet"],
                         capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"retime: evalpod exited {res.returncode}: {res.stderr[-2000:]}")
    docs = []
    for e in entries:
        r = json.load(open(os.path.join(out, e["id"] + ".json"), encoding="utf-8"))
        if r.get("status") != "ok":
            sys.exit(f"retime: {e['id']} is {r.get('status')}: {r.get('fault')}")
        docs.append(r)
    return docs


def fmt(v):
    if v[1] is None:
        return f"{v[0]:.3f} (too few pairs)"
    return f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"


def across_passes(evalpod, batch, entries, passes):
    """--passes: every pair judged over several evalpod processes; 0 within noise, else 1."""
    with tempfile.TemporaryDirectory(prefix="kctl-retime.") as tmp:
        runs = [run_pass(evalpod, batch, entries, tmp, k) for k in range(passes)]
    ids = [e["id"] for e in entries]
    print(f"{len(ids)} winners timed side by side in {passes} evalpod runs, at least "
          f"{batch['measurement']['min_samples']} samples each per run")
    print(f"{'winner':34} " + " ".join(f"{'GFLOP/s ' + str(k + 1):>10}" for k in range(passes)))
    for i, vid in enumerate(ids):
        gf = [(run[i].get("roofline") or {}).get("gflops") or 0 for run in runs]
        print(f"{vid:34} " + " ".join(f"{g:10.1f}" for g in gf))
    separated = 0
    for i in range(len(ids)):
        for j in range(i + 1, len(ids)):
            # speed of j over i: i's time over j's, round by round
            vs = [verdict(paired(run[i], run[j])) for run in runs]
            if faster_across(vs):
                word = f"{ids[j]} faster"
            elif faster_across([(1 / m, 1 / h, 1 / l) if l else (1 / m, None, None)
                                for m, l, h in vs]):
                word = f"{ids[i]} faster"
            else:
                word = "not separated"
            separated += word != "not separated"
            print(f"{ids[j]} over {ids[i]}: " + "; ".join(fmt(v) for v in vs) + f": {word}")
    print("within noise of each other (no pair separated by the confirmation's rule)"
          if not separated else f"NOT within noise: {separated} pair(s) separated")
    return 0 if not separated else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--evalpod", default=os.path.join(os.path.dirname(__file__), "..",
                                                      "build", "evalpod", "evalpod"))
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--passes", type=int, default=1,
                    help="evalpod runs; from 2 on, pairs are judged across them")
    ap.add_argument("sessions", nargs="+")
    a = ap.parse_args()
    if len(a.sessions) < 2:
        ap.error("give at least two session folders")
    if a.passes < 1:
        ap.error("--passes is at least 1")

    batches = sorted(glob.glob(os.path.join(a.sessions[0], "rounds", "r*", "batch.json")))
    if not batches:
        sys.exit(f"retime: {a.sessions[0]}: no rounds/*/batch.json")
    batch = json.load(open(batches[-1], encoding="utf-8"))
    entries = []
    for i, folder in enumerate(a.sessions):
        vid, src, opts = winner_of(folder)
        entries.append({"id": f"s{i + 1}-{vid}", "source": src, "build_options": opts,
                        "parent": None, "rationale": f"winner of {os.path.basename(folder)}"})
    batch["baseline"] = {k: v for k, v in entries[0].items() if k in ("id", "source", "build_options")}
    batch["variants"] = entries[1:]
    batch.pop("outputs", None)
    meas = batch.setdefault("measurement", {})
    meas["min_samples"] = max(a.samples, int(meas.get("min_samples", 0)))
    if a.passes > 1:
        return across_passes(a.evalpod, batch, entries, a.passes)

    with tempfile.TemporaryDirectory(prefix="kctl-retime.") as tmp:
        docs = run_pass(a.evalpod, batch, entries, tmp, 0)
    rows = []
    for e, r in zip(entries, docs):
        p = r["performance"]
        vb = p.get("speedup_vs_baseline") or {}
        rows.append((e["id"], p["median_ms"], (r.get("roofline") or {}).get("gflops"),
                     p.get("robust_cv", 0.0), vb))

    print(f"{len(rows)} winners timed side by side in one evalpod run, "
          f"at least {meas['min_samples']} samples each")
    print(f"{'winner':34} {'median ms':>10} {'GFLOP/s':>9} {'rCV':>6}  vs first (paired median [p25, p75])")
    inside = True
    for vid, med, gf, rcv, vb in rows:
        if vb and vid != rows[0][0]:
            lo, mid, hi = vb.get("paired_p25"), vb.get("paired_median"), vb.get("paired_p75")
            rel = f"{mid:.3f} [{lo:.3f}, {hi:.3f}]"
            inside = inside and lo <= 1.0 <= hi
        else:
            rel = "(the first)"
        print(f"{vid:34} {med:10.3f} {gf or 0:9.1f} {rcv * 100:5.1f}%  {rel}")
    meds = [r[1] for r in rows]
    spread = max(meds) / min(meds) - 1
    worst_cv = max(r[3] for r in rows)
    same = inside or spread <= worst_cv
    print(f"spread of medians {spread * 100:.1f}%, largest robust CV {worst_cv * 100:.1f}%: "
          + ("within noise of each other" if same else "NOT within noise"))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
