#!/usr/bin/env python3
"""kctl with several shape buckets in one session (docs/spec.md, "Shape buckets").

One real PoCL session of the affine problem (tests/data/kctl/affine.yaml)
with both of its shapes timed, `big` (the primary) and `odd`:

- every round's batch times both shapes, and the results of the variants
  that passed carry performance_by_shape with both;
- the ranking's objective is the geometric mean of the per-bucket speedups
  over the reference: the round notes' first incumbent figure is that mean
  of its result, and so is the figure report.md gives the winner;
- the winner's figures (kctl status) stay the primary's;
- the confirmation re-checks and re-times the overall winner alone;
- kctl show (text and -o json) and report.md name the best variant per
  bucket, which is the highest recorded speedup at that bucket among the
  variants that passed (ties to the earlier).

usage: kctl_buckets.py KCTL EVALPOD KCTL_DATA_DIR
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

from checks import check, summary


class Env:
    def __init__(self, kctl, evalpod, tmp):
        self.kctl, self.tmp = os.path.abspath(kctl), tmp
        self.env = dict(os.environ, KCTL_STATE_DIR=os.path.join(tmp, "state"),
                        XDG_CACHE_HOME=os.path.join(tmp, "cache"), KCTL_EVALPOD=evalpod)

    def run(self, *args, timeout=600, cwd=None):
        return subprocess.run([self.kctl, *args], env=self.env, capture_output=True, text=True,
                              timeout=timeout, cwd=cwd)


def err(r):
    return f"exit {r.returncode}: {r.stderr.strip()[-600:]}"


def two_bucket_spec(data, d):
    for name in ("affine.cl", "affine_ref.cl", "affine.yaml"):
        shutil.copy(os.path.join(data, name), d)
    path = os.path.join(d, "affine.yaml")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    old = "{name: odd, values: {n: 1000}}"
    assert old in text
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(old, "{name: odd, timed: true, values: {n: 1000}}"))
    return path


def geomean(res):
    by = res.get("performance_by_shape") or {}
    r = [((by.get(b) or {}).get("speedup_vs_reference") or {}).get("ratio_of_medians")
         for b in ("big", "odd")]
    if not all(isinstance(x, (int, float)) and x > 0 for x in r):
        return None
    return math.exp(sum(math.log(x) for x in r) / len(r))


def expected_bests(results):
    """bucket -> variant id: the highest recorded speedup at the bucket, ties to the earlier."""
    best = {}
    for vid in sorted(results):
        res = results[vid]
        if res.get("status") != "ok":
            continue
        for b, perf in (res.get("performance_by_shape") or {}).items():
            r = (perf.get("speedup_vs_reference") or {}).get("ratio_of_medians")
            if isinstance(r, (int, float)) and r > 0 and (b not in best or r > best[b][1]):
                best[b] = (vid, r)
    return {b: v[0] for b, v in best.items()}


def main():
    kctl, evalpod, data = sys.argv[1:4]
    tmp = tempfile.mkdtemp(prefix="kctl-buckets-")
    try:
        e = Env(kctl, evalpod, tmp)
        spec = two_bucket_spec(data, tmp)
        r = e.run("start", spec, "--no-progress", cwd=tmp, timeout=1500)
        sid = (r.stdout.splitlines() or [""])[0].strip()
        check(r.returncode == 0 and sid, f"kctl start of a two-bucket spec ({err(r)})")
        if r.returncode or not sid:
            return summary()
        folder = os.path.join(tmp, "runs", sid)

        # every round's batch times both shapes
        rounds = sorted(os.listdir(os.path.join(folder, "rounds")))
        timed = []
        for rd in rounds:
            with open(os.path.join(folder, "rounds", rd, "batch.json"), encoding="utf-8") as f:
                b = json.load(f)
            timed.append([s["name"] for s in b["shapes"] if s.get("timed")])
        check(rounds and all(t == ["big", "odd"] for t in timed),
              f"every round's batch times big and odd ({timed})")

        # the variants' recorded results
        r = e.run("show", sid, "-o", "json")
        rows = json.loads(r.stdout) if r.returncode == 0 else []
        check(r.returncode == 0 and len(rows) >= 4, f"kctl show -o json lists the variants "
              f"({err(r)})")
        results = {}
        for row in rows:
            rv = e.run("show", sid, row["id"], "-o", "json")
            if rv.returncode == 0:
                results[row["id"]] = json.loads(rv.stdout).get("result") or {}
        ok = {v: res for v, res in results.items() if res.get("status") == "ok"}
        check(ok and all(sorted(res.get("performance_by_shape") or {}) == ["big", "odd"]
                         for res in ok.values()),
              f"every ok result has figures at both buckets ({len(ok)} ok)")

        # the objective in the ranking: the first incumbent's figure
        with open(os.path.join(folder, "report.md"), encoding="utf-8") as f:
            report = f.read()
        m = re.search(r"(\S+) is the first incumbent \(([0-9.]+)x vs reference\)", report)
        gm = geomean(results.get(m.group(1), {})) if m else None
        check(m and gm is not None and abs(float(m.group(2)) - gm) <= 0.0051,
              f"the first incumbent's figure is the geometric mean of its buckets' speedups "
              f"({m.group(0) if m else 'no note'}; mean {gm})")

        # the winner: primary figures in status, the objective in report.md
        st = e.run("status", sid, "-o", "json")
        best = (json.loads(st.stdout).get("best") or {}) if st.returncode == 0 else {}
        wid = best.get("variant")
        check(best.get("shape") == "big", f"the winner's figures are the primary's ({best})")
        check(best.get("candidates") == [] and "no other candidate" in (best.get("verdict") or ""),
              f"the confirmation re-times the overall winner alone ({best.get('verdict')})")
        wres = results.get(wid, {})
        m = re.search(r"speedups over the reference at every bucket: ([0-9.]+)x", report)
        wgm = geomean(wres)
        check(m and wgm is not None and abs(float(m.group(1)) - wgm) <= 0.0051,
              f"report.md gives the winner's objective ({m.group(0) if m else 'none'}; {wgm})")

        # one best per bucket: show (text and json) and report.md
        want = expected_bests(results)
        check(sorted(want) == ["big", "odd"], f"a best for each bucket ({want})")
        txt = e.run("show", sid)
        lines = txt.stdout.split("best per shape bucket", 1)
        got = {}
        if len(lines) == 2:
            for ln in lines[1].splitlines():
                f = ln.split()
                if f and f[0] in ("big", "odd"):
                    got[f[0]] = f[2] if len(f) > 2 and f[1] == "(primary)" else f[1]
        check(txt.returncode == 0 and got == want,
              f"kctl show names each bucket's best ({got}, want {want})")
        check("big (primary)" in txt.stdout, "kctl show marks the primary bucket")
        marked = {b: row["id"] for row in rows for b in row.get("best_in_buckets", [])}
        check(marked == want, f"kctl show -o json marks each bucket's best ({marked})")
        for b, vid in want.items():
            label = b + (" (primary)" if b == "big" else "")
            check(f"| {label} | {vid} |" in report, f"report.md: {label}'s best is {vid}")
        check("Only the overall winner goes through the confirmation" in report,
              "report.md says which figures are confirmed")
        # report.html: the same table, one row per bucket, and the JSON it is drawn from
        with open(os.path.join(folder, "report.html"), encoding="utf-8") as f:
            page = f.read()
        sec = page.split('<section id="buckets">', 1)
        rows_html = re.findall(r"<tr><td>([^<]+)</td><td>([^<]+)</td>",
                               sec[1].split("</section>", 1)[0]) if len(sec) == 2 else []
        got_html = {b.replace(" (primary)", ""): vid for b, vid in rows_html}
        check(got_html == want and rows_html and rows_html[0][0] == "big (primary)",
              f"report.html's bucket table names each bucket's best, the primary first "
              f"({rows_html}, want {want})")
        rj = e.run("report", sid, "-o", "json")
        got_json = {x["bucket"]: x["variant"] for x in
                    (json.loads(rj.stdout).get("buckets") or [])} if rj.returncode == 0 else {}
        check(got_json == want, f"kctl report -o json has each bucket's best ({got_json})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
