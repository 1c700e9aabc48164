#!/usr/bin/env python3
"""The headless-Chromium checker (tests/cli/browser.py) can see what it is
for, so a clean report's "nothing happened" means something.

usage: browser_check.py

Fixture pages are written to a temporary folder; one Chromium serves them all
(a launch takes seconds), and one more runs the command line end to end.
- a clean page with inline SVG: no console entries, no requests, three
  'svg circle' and no 'svg rect'; its screenshot is a PNG of the page's size;
- console.error, console.warn, an alert, an uncaught exception and one
  thrown from a timer set at load: all reported, with their levels;
- an image, a stylesheet, a CSS url(), a fetch to 127.0.0.1:1 (refused) and an
  image from https://example.com: all in "requests" and "failed_requests";
  a stylesheet from a live loopback server is requested (the server sees it)
  and is not among the failed;
- a dedicated worker's request, console.error and exception, each once;
- prefers-color-scheme: the page writes its computed background into its
  title, which differs between --dark and light;
- --print-pdf writes a PDF;
- a bad selector and a missing file are errors, not zero counts;
- Chromium's whole process group is gone after close;
- a Chromium that exits at once is an error showing its exit status and
  stderr; one that never answers times out and is killed, children too;
- with no Chromium the command exits 77 naming what it looked for.
Exit 77 (ctest's skip) when no Chromium is installed and everything that
needs none passed.
"""
import http.server
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib

import browser
from checks import check, run, summary

HERE = os.path.dirname(os.path.abspath(__file__))
CLI = os.path.join(HERE, "browser.py")

CLEAN = """<!doctype html><html><head><meta charset="utf-8"><title>clean</title>
<style>body { margin: 0 } svg { display: block }</style></head><body>
<h1>A clean page</h1>
<svg width="300" height="1500" data-plot="dots">
  <circle cx="30" cy="30" r="10"/><circle cx="60" cy="700" r="10"/>
  <circle cx="90" cy="1400" r="10"/>
</svg></body></html>
"""

NOISY = """<!doctype html><html><head><title>noisy</title></head><body>
<script>
console.error("kctl-marker-error", 42);
console.warn("kctl-marker-warn");
alert("kctl-marker-alert");
addEventListener("load", () => setTimeout(() => { throw new Error("kctl-marker-late"); }, 0));
throw new Error("kctl-marker-throw");
</script></body></html>
"""

NETWORK = """<!doctype html><html><head><title>network</title>
<link rel="stylesheet" href="http://127.0.0.1:1/sheet.css">
<link rel="stylesheet" href="http://127.0.0.1:{port}/live.css">
<style>body {{ background-image: url(http://127.0.0.1:1/bg.png) }}</style></head><body>
<img src="http://127.0.0.1:1/img.png" alt="">
<img src="https://example.com/a.png" alt="">
<script>fetch("http://127.0.0.1:1/x").catch(() => {{}});</script>
</body></html>
"""
REFUSED = ["http://127.0.0.1:1/sheet.css", "http://127.0.0.1:1/bg.png",
           "http://127.0.0.1:1/img.png", "https://example.com/a.png", "http://127.0.0.1:1/x"]

# The worker throws, then requests, then tells the page, which the check waits for.
WORKER = """<!doctype html><html><head><title>worker</title></head><body><script>
const code = "console.error('kctl-marker-worker');" +
  "setTimeout(() => { throw new Error('kctl-marker-worker-throw'); }, 0);" +
  "setTimeout(() => fetch('http://127.0.0.1:1/from-worker').catch(() => {})" +
  "                   .finally(() => postMessage('done')), 0);";
const w = new Worker(URL.createObjectURL(new Blob([code], {type: "text/javascript"})));
w.onmessage = () => { window.workerDone = true; };
</script></body></html>
"""

SCHEME = """<!doctype html><html><head><title>unset</title><style>
body { background: rgb(255, 255, 255) }
@media (prefers-color-scheme: dark) { body { background: rgb(0, 0, 0) } }
</style></head><body><p>light or dark</p>
<script>document.title = getComputedStyle(document.body).backgroundColor;</script>
</body></html>
"""


def write(d, name, text):
    path = os.path.join(d, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def png_size(path):
    """(width, height) of a PNG whose signature and IHDR chunk are intact, else None."""
    with open(path, "rb") as f:
        head = f.read(33)
    if len(head) < 33 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    (crc,) = struct.unpack(">I", head[29:33])
    if zlib.crc32(head[12:29]) != crc:
        return None
    return struct.unpack(">II", head[16:24])


def texts(result, level, source):
    return [e["text"] for e in result["console"]
            if e["level"] == level and e["source"] == source]


class Live(http.server.BaseHTTPRequestHandler):
    """A loopback server that answers every GET with an empty stylesheet."""
    hits = []

    def do_GET(self):
        Live.hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "text/css")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *a):
        pass


def test_clean(b, d):
    shot = os.path.join(d, "clean.png")
    r = b.check(write(d, "clean.html", CLEAN), counts=["svg circle", "svg rect"],
                screenshot=shot)
    check(r["console"] == [], f"a clean page logs nothing ({r['console']})")
    check(r["requests"] == [] and r["failed_requests"] == [],
          f"a clean page requests nothing ({r['requests']})")
    check(r["counts"] == {"svg circle": 3, "svg rect": 0},
          f"three circles and no rect counted ({r['counts']})")
    check(r["title"] == "clean" and r["dark"] is False, "title read, light by default")
    check(r["width"] == 1280 and r["height"] >= 1500,
          f"the scroll size is the page's ({r['width']}x{r['height']})")
    size = png_size(shot) if os.path.exists(shot) else None
    check(r["screenshot"] == shot and size == (r["width"], r["height"]),
          f"the screenshot is a PNG of the whole page ({size})")


def test_noisy(b, d):
    r = b.check(write(d, "noisy.html", NOISY))
    check(texts(r, "error", "console") == ["kctl-marker-error 42"],
          f"console.error reported with its arguments ({r['console']})")
    check(texts(r, "warning", "console") == ["kctl-marker-warn"], "console.warn reported")
    thrown = texts(r, "error", "exception")
    check(len(thrown) == 2 and "Error: kctl-marker-throw" in thrown[0],
          f"the uncaught exception reported ({thrown})")
    check(len(thrown) == 2 and "kctl-marker-late" in thrown[1],
          "an exception from a timer set at load reported")
    check(texts(r, "warning", "dialog") == ["alert dialog: kctl-marker-alert"],
          "an alert reported (and answered: the page went on)")
    check(r["requests"] == [], "a script's errors are no requests")


def test_network(b, d):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Live)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        live = f"http://127.0.0.1:{server.server_address[1]}/live.css"
        r = b.check(write(d, "network.html", NETWORK.format(port=server.server_address[1])))
    finally:
        server.shutdown()
        server.server_close()
    check(sorted(r["requests"]) == sorted(REFUSED + [live]),
          f"every request reported, failed or not ({r['requests']})")
    failed = {f["url"]: f["error"] for f in r["failed_requests"]}
    check(sorted(failed) == sorted(REFUSED) and all(e.startswith("net::") for e in
                                                    failed.values()),
          f"the refused ones are failed, with Chromium's reason ({failed})")
    check("/live.css" in Live.hits and live not in failed,
          f"the live server was asked and its answer is no failure ({Live.hits})")
    check(any("Failed to load resource" in t for t in texts(r, "error", "log")),
          "the failed loads are in the log")


def test_worker(b, d):
    r = b.check(write(d, "worker.html", WORKER), wait_for="window.workerDone")
    check(r["requests"] == ["http://127.0.0.1:1/from-worker"],
          f"a worker's request reported, its blob: script not ({r['requests']})")
    check(texts(r, "error", "console") == ["kctl-marker-worker"],
          f"a worker's console.error reported once ({r['console']})")
    thrown = texts(r, "error", "exception")
    check(len(thrown) == 1 and "kctl-marker-worker-throw" in thrown[0],
          "a worker's uncaught exception reported once")


def test_scheme(b, d):
    page = write(d, "scheme.html", SCHEME)
    light = b.check(page)
    dark = b.check(page, dark=True)
    check(light["title"] == "rgb(255, 255, 255)" and light["dark"] is False,
          f"light: the light background ({light['title']})")
    check(dark["title"] == "rgb(0, 0, 0)" and dark["dark"] is True,
          f"--dark: the dark background ({dark['title']})")


def test_pdf(b, d):
    out = os.path.join(d, "clean.pdf")
    r = b.check(write(d, "print.html", CLEAN), pdf=out)
    with open(out, "rb") as f:
        data = f.read()
    check(r["pdf"] == out and data.startswith(b"%PDF-") and b"%%EOF" in data[-1024:],
          f"--print-pdf writes a whole PDF ({len(data)} bytes)")


def test_errors(b, d):
    page = write(d, "selector.html", CLEAN)
    try:
        b.check(page, counts=["svg[["])
        check(False, "a bad selector is an error")
    except browser.BrowserError as e:
        check("svg[[" in str(e) or "selector" in str(e), f"a bad selector is an error ({e})")
    try:
        browser.check(os.path.join(d, "absent.html"), browser=b)
        check(False, "a missing file is an error")
    except browser.BrowserError as e:
        check("absent.html" in str(e), f"a missing file is an error ({e})")
    r = b.check(page, counts=["svg circle"])
    check(r["counts"] == {"svg circle": 3}, "the browser still works after both")


def group_alive(pgid):
    """Whether a process of group pgid is alive (zombies are dead)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in "ZX":
            return True
    return False


def test_cli(d):
    shot = os.path.join(d, "cli.png")
    p = subprocess.run([sys.executable, CLI, write(d, "cli.html", CLEAN), "--count",
                        "svg circle", "--count", "h1", "--screenshot", shot, "--width", "640",
                        "--dark"], capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"the command checks a page (exit {p.returncode}: {p.stderr})")
    r = json.loads(p.stdout) if p.returncode == 0 else {}
    check(r.get("counts") == {"svg circle": 3, "h1": 1} and r.get("dark") is True and
          r.get("width") == 640, f"its JSON has the counts, scheme and width ({r})")
    check(png_size(shot) == (640, r.get("height")), "and its screenshot")


def test_missing(d):
    env = dict(os.environ, PATH=os.path.join(d, "empty"))
    env.pop("KCTL_CHROMIUM", None)
    page = write(d, "missing.html", CLEAN)
    p = subprocess.run([sys.executable, CLI, page], env=env, capture_output=True, text=True,
                       timeout=600)
    check(p.returncode == 77 and "chromium" in p.stderr and "skipped" in p.stderr,
          f"no Chromium: exit 77, saying so ({p.returncode}: {p.stderr.strip()})")
    env["KCTL_CHROMIUM"] = os.path.join(d, "no-such-chrome")
    p = subprocess.run([sys.executable, CLI, page], env=env, capture_output=True, text=True,
                       timeout=600)
    check(p.returncode == 77 and "no-such-chrome" in p.stderr,
          f"a KCTL_CHROMIUM that is not there: exit 77 naming it ({p.stderr.strip()})")
    p = subprocess.run([sys.executable, CLI, os.path.join(d, "absent.html")], env=env,
                       capture_output=True, text=True, timeout=600)
    check(p.returncode == 1 and "absent.html" in p.stderr,
          f"a missing page: exit 1 naming it ({p.returncode}: {p.stderr.strip()})")


def fake_chromium(d, name, body):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, 0o755)
    return path


def test_broken(d):
    """A Chromium that dies at once, and one that never answers."""
    os.environ["KCTL_CHROMIUM"] = fake_chromium(d, "dies", "echo kctl-fake-stderr >&2; exit 3")
    try:
        browser.Browser(timeout=600).close()
        check(False, "a Chromium that dies is an error")
    except browser.BrowserError as e:
        check("exit status 3" in str(e) and "kctl-fake-stderr" in str(e),
              f"a Chromium that dies: an error with its status and stderr ({e})")
    pidfile = os.path.join(d, "hangs.pid")
    sleep = shutil.which("sleep") or "/bin/sleep"
    os.environ["KCTL_CHROMIUM"] = fake_chromium(d, "hangs", f"echo $$ > {pidfile}; "
                                                f"{sleep} 600 & exec {sleep} 600")
    try:
        browser.Browser(timeout=2).close()
        check(False, "a Chromium that never answers is an error")
    except browser.BrowserError as e:
        check("timed out" in str(e), f"a Chromium that never answers: timed out ({e})")
    finally:
        del os.environ["KCTL_CHROMIUM"]
    with open(pidfile) as f:
        pgid = int(f.read())
    deadline = time.monotonic() + 120
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.2)
    check(not group_alive(pgid), "and it is killed with its children")


def main():
    with tempfile.TemporaryDirectory(prefix="browser-check-") as d:
        run([test_missing], d)
        if os.environ.get("KCTL_CHROMIUM"):
            print("KCTL_CHROMIUM is set: the fake-Chromium checks are skipped")
        else:
            run([test_broken], d)
        try:
            b = browser.Browser()
        except browser.ChromiumMissing as e:
            print(f"{e}: the browser checks are skipped")
            return summary() or 77
        pgid = b.proc.pid
        with b:
            run([test_clean, test_noisy, test_network, test_worker, test_scheme, test_pdf,
                 test_errors],
                b, d)
        deadline = time.monotonic() + 120
        while group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.2)
        check(not group_alive(pgid), "Chromium's process group is gone after close")
        run([test_cli], d)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
