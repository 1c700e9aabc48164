#!/usr/bin/env python3
"""bench/retime.py - times the winners of several kctl sessions side by side.

    python3 bench/retime.py [--evalpod PATH] [--samples N] SESSION_DIR...
    python3 bench/retime.py --passes P --spec SPEC [--kctl PATH] SESSION_DIR...

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
one run cannot tell 2 % apart from that.  With --passes P (P >= 2) and
--spec SPEC (the sessions' spec), the winners' best.cl files (each holding
its parameters as #defines) go to `kctl eval SPEC --passes P --no-cache`,
the first as the baseline: P evalpod runs, one after the other, at the
spec's own samples, and kctl eval judges every two of them as a session's
confirmation judges its candidates (controller/pairs.h,
pairs_faster_across): one is faster than the other when it is faster by
more than 1 % with 95 % confidence in every run on its own (the sign-test
interval of its per-round ratios), and either the t-interval of the runs'
log medians lies above 1 % or every run shows more than the process bias.
The winners are within noise of each other when no pair is so separated;
the script prints, per pair, each run's paired median with its interval
and the verdict.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile


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


def run_pass(evalpod, batch, entries, tmp):
    """One evalpod process over the batch: the winners' result documents."""
    path = os.path.join(tmp, "batch.json")
    batch["batch_id"] = "retime"
    with open(path, "w", encoding="utf-8") as f:
        json.dump(batch, f)
    out = os.path.join(tmp, "out")
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
    if v.get("lo") is None:
        return f"{v['median']:.3f} (too few pairs)"
    return f"{v['median']:.3f} [{v['lo']:.3f}, {v['hi']:.3f}]"


def across_passes(kctl, spec, folders, passes):
    """--passes: kctl eval judges every pair over several evalpod runs; 0 within noise, else 1."""
    with tempfile.TemporaryDirectory(prefix="kctl-retime.") as tmp:
        files = []
        for i, folder in enumerate(folders):
            # best.cl holds its parameters as #defines: it runs as it was measured
            path = os.path.join(tmp, f"s{i + 1}-{winner_of(folder)[0]}.cl")
            with open(os.path.join(folder, "best.cl"), encoding="utf-8") as f:
                text = f.read()
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            files.append(path)
        cmd = [kctl, "eval", spec, "--baseline", files[0], "--passes", str(passes),
               "--no-cache", "--out", os.path.join(tmp, "out"), "-o", "json"]
        for path in files[1:]:
            cmd += ["--kernel", path]
        res = subprocess.run(cmd, capture_output=True, text=True,
                             env=dict(os.environ, KCTL_STATE_DIR=os.path.join(tmp, "state")))
        try:
            doc = json.loads(res.stdout)
        except ValueError:
            sys.exit(f"retime: kctl eval exited {res.returncode}: {res.stderr[-2000:]}")
    name = {p: os.path.basename(p)[:-3] for p in files}
    progs = [doc["baseline"]] + doc["kernels"]
    bad = [p for p in progs if p.get("status") != "ok"]
    if bad:
        sys.exit(f"retime: {name.get(bad[0]['file'])} is {bad[0]['status']}: {bad[0]['fault']}")
    print(f"{len(files)} winners timed side by side in {passes} evalpod runs "
          f"(kctl eval --passes {passes}, session {doc['session']})")
    # speed of b over a; kctl eval states the kernels against the baseline,
    # and every two kernels in "pairs"
    judged = [(doc["baseline"]["file"], k["file"], k.get("speedup_by_pass") or [],
               k.get("across_passes") or "same program") for k in doc["kernels"]]
    judged += [(q["a"], q["b"], q["speedup_by_pass"], q["across_passes"])
               for q in doc.get("pairs") or []]
    separated = 0
    for a, b, by, word in judged:
        separated += word in ("faster", "slower")
        print(f"{name[b]} over {name[a]}: " + "; ".join(fmt(v) for v in by) + f": {word}")
    print("within noise of each other (no pair separated by the confirmation's rule)"
          if not separated else f"NOT within noise: {separated} pair(s) separated")
    return 0 if not separated else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--evalpod", default=os.path.join(os.path.dirname(__file__), "..",
                                                      "build", "evalpod", "evalpod"))
    ap.add_argument("--kctl", default=os.path.join(os.path.dirname(__file__), "..",
                                                   "build", "controller", "kctl"))
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--passes", type=int, default=1,
                    help="evalpod runs; from 2 on, kctl eval judges pairs across them")
    ap.add_argument("--spec", help="the sessions' spec (with --passes)")
    ap.add_argument("sessions", nargs="+")
    a = ap.parse_args()
    if len(a.sessions) < 2:
        ap.error("give at least two session folders")
    if not 1 <= a.passes <= 10:
        ap.error("--passes is 1 to 10")
    if a.passes > 1:
        if not a.spec:
            ap.error("--passes needs --spec, the sessions' spec")
        return across_passes(a.kctl, a.spec, a.sessions, a.passes)

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

    with tempfile.TemporaryDirectory(prefix="kctl-retime.") as tmp:
        docs = run_pass(a.evalpod, batch, entries, tmp)
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
