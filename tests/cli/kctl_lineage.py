#!/usr/bin/env python3
"""What kctl records as a lineage's success (docs/kctl.md, ranking, stepping):

- a session on tests/data/lineage/steps.yaml, whose kernel about halves its
  time with each step down in S: its lineages improve by margins no load
  hides, and those improvements are recorded as successes, each with the
  side-by-side figures that show it;
- every lineage step the rounds' reasons note is judged again here, from the
  result files in the round folders, by the documented rule: the child and
  the lineage's best each paired with the program the child's round timed
  as its baseline, the 95% sign-test interval of each, and one process's
  allowance (15%) when the best is that baseline, two when it is not.  The
  learnings hold a success exactly where that rule shows one.

The other half, equally fast variants under injected noise never making a
success, is tests/cli/kctl.py's noise scenario.

usage: kctl_lineage.py KCTL EVALPOD DATA_DIR
"""
import glob
import math
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import check, load_json, run, session_id, summary  # noqa: E402

BIAS = 0.15  # controller/pairs.h, PAIRS_PROCESS_BIAS


def ci_index(n):
    """controller/pairs.c, pairs_ci_index: the largest j whose interval
    [x[j], x[n-1-j]] misses the median with probability 5% or less."""
    k, cdf = -1, 0.0
    if n < 6:
        return -1
    for j in range(n // 2):
        cdf += math.comb(n, j) * 0.5 ** n
        if 2 * cdf > 0.05:
            break
        k = j
    return k


def speedup_over(base, prog):
    """(lo, hi, pairs): the 95% interval of prog's per-round speedup over base."""
    if not base or not prog or base.get("batch_id") != prog.get("batch_id"):
        return (None, None, 0)

    def by_round(doc):
        p = doc.get("performance") or {}
        return {r: t for r, t in zip(p.get("rounds") or [], p.get("samples_ms") or [])
                if isinstance(t, (int, float)) and t > 0}
    b, c = by_round(base), by_round(prog)
    ratios = sorted(b[r] / c[r] for r in b if r in c)
    k = ci_index(len(ratios))
    if k < 0:
        return (None, None, len(ratios))
    return (ratios[k], ratios[len(ratios) - 1 - k], len(ratios))


def round_of(vid):
    m = re.match(r"r(\d+)-", vid)
    return int(m.group(1)) if m else None


def judge(folder, rnd, child, old):
    """Whether the documented rule shows child (round rnd) faster than old."""
    rdir = os.path.join(folder, "rounds", f"r{rnd:03d}", "results")
    base = None
    for path in glob.glob(os.path.join(rdir, "*.json")):
        doc = load_json(path)
        if doc and doc.get("role") == "baseline":
            base = doc
    if base is None:
        return False, "no baseline in round %d" % rnd
    cres = load_json(os.path.join(rdir, child + ".json"))
    clo, _, cn = speedup_over(base, cres)
    if base.get("id") == old:
        return clo is not None and clo > 1 + BIAS, f"beside {old}: lo {clo} ({cn} pairs)"
    odir = os.path.join(folder, "rounds", f"r{round_of(old):03d}", "results")
    _, ohi, on = speedup_over(load_json(os.path.join(odir, base.get("id") + ".json")),
                              load_json(os.path.join(odir, old + ".json")))
    shown = clo is not None and ohi is not None and clo > ohi * (1 + BIAS) ** 2
    return shown, f"over {base.get('id')}: child lo {clo} ({cn} pairs), old hi {ohi} ({on} pairs)"


def lineage_steps(kctl, evalpod, data):
    tmp = tempfile.mkdtemp(prefix="kctl-lineage-")
    try:
        for name in ("steps.cl", "steps_ref.cl", "steps.yaml"):
            shutil.copy(os.path.join(data, name), tmp)
        env = dict(os.environ, KCTL_STATE_DIR=os.path.join(tmp, "state"),
                   XDG_CACHE_HOME=os.path.join(tmp, "cache"), KCTL_EVALPOD=evalpod)
        r = subprocess.run([kctl, "start", os.path.join(tmp, "steps.yaml")], cwd=tmp, env=env,
                           capture_output=True, text=True, timeout=900)
        sid = session_id(r)
        check(r.returncode == 0, f"the session ends done (exit {r.returncode}: "
              f"{(r.stderr.strip().splitlines() or [''])[-1][:300]})")
        folder = os.path.join(tmp, "runs", sid)
        try:
            with open(os.path.join(folder, "learnings.md"), encoding="utf-8") as f:
                learn = f.read()
        except OSError:
            learn = ""
        db = sqlite3.connect(os.path.join(tmp, "state", "kctl.db"))
        reasons = db.execute("SELECT round, reason FROM rounds WHERE session = ? ORDER BY round",
                             (sid,)).fetchall()
        db.close()
        recorded = set(re.findall(r"^- \[S\d+\] (\S+) improved lineage of (\S+):", learn, re.M))
        noted, disagree = [], []
        for rnd, reason in reasons:
            for m in re.finditer(r"lineage \d+: (\S+) improves on (\S+) \(", reason or ""):
                child, old = m.group(1), m.group(2)
                shown, why = judge(folder, rnd, child, old)
                noted.append((rnd, child, old, shown))
                print(f"     round {rnd}: {child} over {old}: {why}; shown {shown}")
                if shown != ((child, old) in recorded):
                    disagree.append(f"round {rnd}: {child} over {old}: rule says "
                                    f"{shown} ({why}), learnings say {not shown}")
        check(noted, f"the rounds note lineage steps (got {noted})")
        check(not disagree and all((c, o) in {(n[1], n[2]) for n in noted} for c, o in recorded),
              f"the learnings hold a lineage success exactly where the rule, judged again "
              f"from the result files, shows one ({len(noted)} steps; {disagree or 'agree'})")
        check(any(n[3] for n in noted),
              f"a lineage whose child about halved its time is recorded as a success "
              f"(steps {noted})")
        lines = re.findall(r"^- \[S\d+\] \S+ improved lineage of .*$", learn, re.M)
        check(lines and all(re.search(r"side by side in round \d+: \+[\d.]+% \(95% CI "
                                      r"|over \S+, each timed beside it: ", l) for l in lines),
              f"each lineage success names its side-by-side figures (got {lines})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    if len(sys.argv) != 4:
        print("usage: kctl_lineage.py KCTL EVALPOD DATA_DIR", file=sys.stderr)
        return 2
    kctl, evalpod, data = (os.path.abspath(a) for a in sys.argv[1:])
    run([lineage_steps], kctl, evalpod, data)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
