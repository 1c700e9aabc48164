#!/usr/bin/env python3
"""report.html of recorded and synthetic sessions (tests/cli/report_data.py):

- the recorded real session (tests/data/report/recorded): the page's shape
  (sections, each plot's elements and points by class, table headers, links)
  against the golden tests/data/report/recorded.structure.json, and its
  -o json data against the store;
- a session where every variant failed, one with a single variant, and one
  of 1,000 variants (its page stays under 3 MB, one point per variant);
- a session whose texts are hostile: nothing in the page could run, fetch or
  add markup, and the texts are there, escaped;
- with Chromium (tests/cli/browser.py), the 1,000-variant page loads without
  a console message or a request, with every point drawn; how long the load
  took is printed, not judged.

usage: report_golden.py KCTL EVALPOD    (UPDATE_GOLDEN=1 rewrites the golden)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import browser  # noqa: E402
import report_data  # noqa: E402
import report_page  # noqa: E402

GOLDEN = os.path.join(HERE, "..", "data", "report", "recorded.structure.json")
from checks import check, summary  # noqa: E402


def report(kctl, env, db, sid, folder, *args):
    out = os.path.join(folder, "report.html")
    r = subprocess.run([kctl, "report", sid, "--state", db, "--out", out] + list(args),
                       env=env, capture_output=True, text=True, timeout=300)
    if r.returncode:
        raise SystemExit(f"kctl report {sid} failed ({r.returncode}): {r.stderr[-600:]}")
    with open(out, encoding="utf-8") as f:
        return out, f.read()


def data(kctl, env, db, sid):
    r = subprocess.run([kctl, "report", sid, "--state", db, "-o", "json"], env=env,
                       capture_output=True, text=True, timeout=300)
    return json.loads(r.stdout)


def recorded(kctl, env, tmp):
    db, sid, folder = report_data.load_recorded(tmp)
    _, page = report(kctl, env, db, sid, folder)
    got = report_page.structure(page)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        with open(GOLDEN, "w", encoding="utf-8") as f:
            json.dump(got, f, indent=1, sort_keys=True)
            f.write("\n")
    with open(GOLDEN, encoding="utf-8") as f:
        want = json.load(f)
    for key in ("sections", "plots", "tables", "links"):
        check(got[key] == want[key], f"recorded session: the page's {key} are the golden ones"
              + ("" if got[key] == want[key] else f": got {json.dumps(got[key])[:600]}"))
    check(report_page.hazards(page) == [], "recorded session: nothing could run or fetch")
    m = data(kctl, env, db, sid)
    statuses = {v["status"] for v in m["variants"] if v["status"]}
    check({"ok", "compile_error", "incorrect", "crash", "timeout"} <= statuses,
          f"recorded session: the data has every kind of outcome ({sorted(statuses)})")
    kinds = {(f["status"], f["kind"]) for f in m["failures"]}
    check(len(kinds) >= 4 and all(e["message"] for f in m["failures"] for e in f["examples"]),
          "recorded session: failures grouped by kind, each example with its message")
    ir = [a for t in m["top"] for a in t["artifacts"] if a["name"].endswith(".ll")]
    check(any(a["present"] for a in ir) and any(not a["present"] for a in ir),
          "recorded session: IR kept is linked, IR dropped is marked absent")


def synthetic(kctl, env, tmp, name, n, rounds, seed, **kw):
    d = os.path.join(tmp, name)
    os.makedirs(d)
    db, sid, folder = report_data.make_synthetic(d, n, rounds, seed, kctl=kctl, **kw)
    path, page = report(kctl, env, db, sid, folder)
    return path, page, data(kctl, env, db, sid)


def run_all(kctl, tmp):
    env = dict(os.environ, KCTL_STATE_DIR=os.path.join(tmp, "state"))
    os.makedirs(os.path.join(tmp, "recorded"))
    recorded(kctl, env, os.path.join(tmp, "recorded"))

    _, page, m = synthetic(kctl, env, tmp, "failed", 30, 3, 7,
                           statuses={"compile_error": 1, "crash": 1, "incorrect": 1})
    check(report_page.hazards(page) == [], "all failed: the page is sound")
    check(report_page.points(page, "scatter") == 30 and "progress" not in
          report_page.structure(page)["plots"],
          "all failed: 30 points in the failure lane, no progress line to draw")
    check("No variant has passed its checks yet" in page and m["winner"] is None,
          "all failed: the page says no variant passed")

    _, page, m = synthetic(kctl, env, tmp, "one", 1, 0, 3)
    s = report_page.structure(page)
    check(report_page.hazards(page) == [] and report_page.points(page, "scatter") == 1
          and report_page.points(page, "lineage") == 1,
          "one variant: one point per plot, a sound page")

    big_path, page, m = synthetic(kctl, env, tmp, "big", 1000, 20, 11)
    size = len(page.encode())
    big_points = report_page.points(page, "scatter")
    check(size < 3 << 20, f"1,000 variants: the page is {size} bytes (< 3 MiB)")
    check(report_page.points(page, "scatter") == sum(1 for v in m["variants"] if v["status"]),
          "1,000 variants: one scatter point per evaluated variant")
    check(report_page.hazards(page) == [], "1,000 variants: a sound page")

    _, page, m = synthetic(kctl, env, tmp, "hostile", 40, 4, 5, hostile=True)
    check(report_page.hazards(page) == [], f"hostile texts: nothing could run, fetch or add "
          f"markup ({report_page.hazards(page)[:4]})")
    head = report_data.HOSTILE[:40]
    escaped = (head.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
               .replace('"', "&quot;").replace("'", "&#39;"))
    check(escaped in page, f"hostile texts: shown, escaped ({escaped[:50]})")
    check("</script>" not in page and "<!-- -->" not in page,
          "hostile texts: no </script> or comment survives")

    try:
        browser.find_chromium()
    except browser.ChromiumMissing as e:
        print(f"skip: the browser part: {e}")
        return
    with browser.Browser() as b:
        t0 = time.monotonic()
        r = b.check(big_path, counts=["svg[data-plot=scatter] circle.pt", "svg"])
        took = time.monotonic() - t0
    print(f"     the 1,000-variant page ({size} bytes) opened and drew in {took:.2f} s")
    check(r["console"] == [] and r["requests"] == [],
          "1,000 variants in Chromium: no console message, no request")
    check(r["counts"]["svg[data-plot=scatter] circle.pt"] == big_points,
          f"1,000 variants in Chromium: all {big_points} scatter points drawn")


def main():
    kctl = sys.argv[1]
    os.environ.setdefault("KCTL_EVALPOD", sys.argv[2])
    tmp = tempfile.mkdtemp(prefix="kctl-report-golden-")
    try:
        run_all(kctl, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
