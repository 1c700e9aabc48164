#!/usr/bin/env python3
"""kctl report end to end: a real session on the small affine problem
leaves report.html beside report.md; `kctl report` prints the same page,
report.md and the JSON data; the page's plots hold one point per variant
as the store has them, its links lead to files that exist, and nothing in
it could run or fetch anything.  Usage and lookup failures exit as
documented.

usage: kctl_report.py KCTL EVALPOD DATA_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_page  # noqa: E402

from checks import check, summary  # noqa: E402


def main():
    kctl, evalpod, data = sys.argv[1:4]
    tmp = tempfile.mkdtemp(prefix="kctl-report-")
    try:
        run_all(kctl, evalpod, data, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary()


def run_all(kctl, evalpod, data, tmp):
    for name in ("affine.cl", "affine_ref.cl", "affine.yaml"):
        shutil.copy(os.path.join(data, name), tmp)
    env = dict(os.environ, KCTL_STATE_DIR=os.path.join(tmp, "state"), KCTL_EVALPOD=evalpod,
               XDG_CACHE_HOME=os.path.join(tmp, "cache"))

    def kctl_run(*args):
        return subprocess.run([kctl] + list(args), cwd=tmp, env=env, capture_output=True,
                              text=True, timeout=900)

    r = kctl_run("start", "affine.yaml")
    check(r.returncode == 0, f"kctl start exits 0 (got {r.returncode}: {r.stderr[-400:]})")
    sid = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    folder = os.path.join(tmp, "runs", sid)
    page_path = os.path.join(folder, "report.html")
    check(os.path.isfile(page_path), "the session folder has report.html beside report.md")
    page = open(page_path, encoding="utf-8").read() if os.path.isfile(page_path) else ""

    # the same page from the command, written into the session folder
    r = kctl_run("report", sid, "--out", os.path.join(folder, "again.html"))
    check(r.returncode == 0, "kctl report --out FILE exits 0")
    again = open(os.path.join(folder, "again.html"), encoding="utf-8").read()
    check(again == page, "kctl report draws the page kctl wrote after the last round")
    r = kctl_run("report", sid[:12], "-o", "md")
    check(r.returncode == 0 and r.stdout == open(os.path.join(folder, "report.md"),
                                                  encoding="utf-8").read(),
          "kctl report -o md prints report.md (a session id prefix is enough)")

    r = kctl_run("report", sid, "-o", "json")
    model = json.loads(r.stdout) if r.returncode == 0 else {}
    check(model.get("schema") == "kctl.report" and model.get("version") == 1,
          "-o json is the kctl.report data, version 1")
    shown = json.loads(kctl_run("show", sid, "-o", "json").stdout)
    evaluated = [v for v in shown if v.get("status")]
    passed = [v for v in shown if v.get("status") == "ok"]
    check(len(model.get("variants", [])) == len(shown),
          f"the data holds every variant ({len(shown)})")
    winner = (model.get("winner") or {}).get("variant")
    check(bool(winner) and model["top"][0]["id"] == winner,
          "the top variants start with the winner")
    check(model.get("roofline", {}).get("peak_gflops", 0) > 0 and model.get("device"),
          "the data carries the device and its measured peaks")

    # the page's shape
    check(report_page.hazards(page) == [], f"nothing in the page could run or fetch: "
          f"{report_page.hazards(page)[:5]}")
    s = report_page.structure(page)
    for plot in ("progress", "scatter", "roofline", "lineage", "statuses", "bottlenecks",
                 "timing"):
        check(plot in s["plots"], f"the page draws the {plot} plot")
    check(report_page.points(page, "scatter") == len(evaluated),
          f"the scatter has one point per evaluated variant ({len(evaluated)})")
    check(report_page.points(page, "roofline") == len(passed),
          f"the roofline has one point per variant that passed ({len(passed)})")
    check(report_page.points(page, "lineage") == len(shown),
          f"the lineage tree has one node per variant ({len(shown)})")
    boxes = s["plots"].get("timing", {}).get("elements", {}).get("rect", 0)
    check(boxes == sum(1 for t in model["top"] if t.get("stats")),
          f"the timing plot has one box per top variant with timings ({boxes})")
    local = [h for h in s["links"] if not h.startswith("#")]
    check(local and all(os.path.isdir(os.path.join(folder, h)) if h.endswith("/")
                        else os.path.isfile(os.path.join(folder, h)) for h in local),
          f"every link to a trace, IR file or results folder leads to it in the session "
          f"folder ({len(local)} links)")
    folders = [h for h in local if h.endswith("/")]
    check(len(folders) == len(evaluated),
          f"the table of all variants links each one's results folder ({len(folders)})")
    check(any(h.endswith("trace.json") for h in local), "the winner's trace is linked")
    for section in ("summary", "progress", "variants", "roofline", "lineage", "rounds", "top",
                    "failures", "learnings"):
        check(section in s["sections"], f"the page has the {section} section")

    # printed to stdout the links are absolute, so they still lead to the files
    r = kctl_run("report", sid)
    links = [h for h in report_page.structure(r.stdout)["links"] if not h.startswith("#")]
    check(r.returncode == 0 and links and all(h.startswith(folder) and os.path.exists(h)
                                              for h in links),
          "a page printed elsewhere links the session folder's files by absolute path")

    # a done session whose folder lacks the page (ended by an older kctl) gets it back
    os.unlink(page_path)
    r = kctl_run("show", sid)
    check(r.returncode == 0 and os.path.isfile(page_path),
          "kctl show rewrites a done session's missing report.html")

    r = kctl_run("report", "no-such-session")
    check(r.returncode == 1 and "no-such-session" in r.stderr,
          f"an unknown session exits 1 naming it ({r.returncode}: {r.stderr.strip()[:120]})")
    r = kctl_run("report", sid, "-o", "pdf")
    check(r.returncode == 2 and "pdf" in r.stderr, "an unknown format is a usage error (2)")
    r = kctl_run("report")
    check(r.returncode == 2 and "usage" in r.stderr, "no session is a usage error (2)")
    r = kctl_run("report", sid, "--out", os.path.join(tmp, "no", "such", "dir", "r.html"))
    check(r.returncode == 1 and "r.html" in r.stderr,
          f"an unwritable --out exits 1 naming the file ({r.stderr.strip()[:160]})")


if __name__ == "__main__":
    sys.exit(main())
