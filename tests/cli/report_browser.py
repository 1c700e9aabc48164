#!/usr/bin/env python3
"""report.html in a real browser: headless Chromium (tests/cli/browser.py)
opens the page of a real session on the affine problem, in light and dark
mode, and finds no console message, no request of any kind, and in each
plot as many points as the store has variants; the page prints to PDF.  A
screenshot of each mode is kept as the test's artifact.

usage: report_browser.py KCTL EVALPOD DATA_DIR ARTIFACT_DIR

Exits 77 (ctest's skip), saying why, only when no Chromium can be found:
ci/deps.sh installs Debian's chromium package.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402

from checks import check, summary  # noqa: E402


def session(kctl, evalpod, data, tmp):
    """A finished session's folder and its variants (kctl show -o json)."""
    for name in ("affine.cl", "affine_ref.cl", "affine.yaml"):
        shutil.copy(os.path.join(data, name), tmp)
    env = dict(os.environ, KCTL_STATE_DIR=os.path.join(tmp, "state"), KCTL_EVALPOD=evalpod,
               XDG_CACHE_HOME=os.path.join(tmp, "cache"))
    r = subprocess.run([kctl, "start", "affine.yaml"], cwd=tmp, env=env, capture_output=True,
                       text=True, timeout=900)
    if r.returncode:
        raise SystemExit(f"kctl start failed ({r.returncode}): {r.stderr[-800:]}")
    sid = r.stdout.split()[-1]
    shown = subprocess.run([kctl, "show", sid, "-o", "json"], cwd=tmp, env=env,
                           capture_output=True, text=True, timeout=120)
    return os.path.join(tmp, "runs", sid), json.loads(shown.stdout)


def main():
    kctl, evalpod, data, artifacts = sys.argv[1:5]
    try:
        browser.find_chromium()
    except browser.ChromiumMissing as e:
        print(f"skip: {e}")
        return 77
    os.makedirs(artifacts, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="kctl-report-browser-")
    try:
        folder, shown = session(kctl, evalpod, data, tmp)
        page = os.path.join(folder, "report.html")
        evaluated = sum(1 for v in shown if v.get("status"))
        passed = sum(1 for v in shown if v.get("status") == "ok")
        want = {
            "svg[data-plot=scatter] circle.pt": evaluated,
            "svg[data-plot=roofline] circle.pt": passed,
            "svg[data-plot=lineage] circle.node": len(shown),
            "svg[data-plot=progress] circle.step": None,
            "svg[data-plot=timing] g.box": None,
            "svg": None,
        }
        with browser.Browser() as b:
            for dark in (False, True):
                mode = "dark" if dark else "light"
                shot = os.path.join(artifacts, f"report-{mode}.png")
                r = b.check(page, counts=list(want), screenshot=shot, dark=dark,
                            pdf=None if dark else os.path.join(tmp, "report.pdf"))
                check(r["dark"] == dark, f"{mode}: the page saw the colour scheme asked for")
                check(r["console"] == [], f"{mode}: no console message, error or exception "
                      f"({r['console'][:3]})")
                check(r["requests"] == [], f"{mode}: the page requested nothing "
                      f"({r['requests'][:3]})")
                for sel, n in want.items():
                    if n is not None:
                        check(r["counts"][sel] == n,
                              f"{mode}: {sel} counts {n} (got {r['counts'][sel]})")
                check(r["counts"]["svg[data-plot=progress] circle.step"] >= 1,
                      f"{mode}: the incumbent's steps are marked")
                check(r["counts"]["svg[data-plot=timing] g.box"] >= 1,
                      f"{mode}: the timing spread has a box per top variant")
                check(r["counts"]["svg"] >= 7, f"{mode}: the page has its plots "
                      f"({r['counts']['svg']} svg)")
                check(os.path.getsize(shot) > 10000, f"{mode}: the screenshot {shot} was kept")
                check(r["title"].startswith("kctl session "), f"{mode}: the page's title")
            with open(os.path.join(tmp, "report.pdf"), "rb") as f:
                check(f.read(5) == b"%PDF-", "the page prints (Page.printToPDF)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
