#!/usr/bin/env python3
"""browser.py - opens an HTML file in headless Chromium and says what the page did.

    python3 tests/cli/browser.py FILE.html [--screenshot OUT.png] [--count SELECTOR]...
            [--width W] [--height H] [--dark] [--print-pdf OUT.pdf]
            [--wait-for JS-EXPRESSION] [--timeout S]

prints one JSON object:

    console          [{"level", "text", "source"}]: every console API call (any
                     level), every uncaught exception (level "error", source
                     "exception") and every browser log entry of level warning or
                     error (source "log": a resource that failed to load, a CSP
                     violation, ...); a worker's messages come once, from the
                     worker; every alert/confirm/prompt (level "warning", source
                     "dialog"; it is accepted)
    requests         the URL of every request the page made (its frames and
                     workers included) other than its own document and data: and
                     blob: URLs, failed or not, in order
    failed_requests  [{"url", "error"}]: those that failed (net::ERR_..., or why
                     they were blocked)
    counts           {SELECTOR: matching elements} for each --count
    title            document.title
    width, height    the document's scroll size in CSS pixels
    screenshot       the PNG written (the whole page, up to 16384 px tall), or null
    pdf              the PDF written (Page.printToPDF), or null
    dark             whether the page saw prefers-color-scheme: dark

Exit 0 when the page was checked (what it did is for the caller to judge), 77
when no Chromium can be found (ctest's skip; the message says what is missing),
1 on any other failure, 2 on a usage error.  Tests import check(), or keep a
Browser open for several pages (a launch takes seconds):

    with Browser() as b:
        r = b.check("report.html", counts=["svg[data-plot=progress] circle"])

How: Chromium runs as `--headless=new --remote-debugging-pipe`, reading the
DevTools Protocol as NUL-terminated JSON on its fd 3 and answering on fd 4
(no websocket module needed).  Each check opens a fresh tab, enables the
Runtime, Log and Network events (and attaches to the tab's workers and
out-of-process frames) before it navigates, so a request is seen even when
it fails; then waits for the load event, for --wait-for's expression and
for the requests in flight to end (SETTLE_S at most).  No host resolves but localhost and 127.0.0.1 (--host-resolver-rules),
so a page cannot reach the network and never waits on DNS, while a test's
loopback server can still be reached.
Chromium runs in its own process group with a throwaway profile and is
killed, group and all, when the Browser closes, on error or at exit; its
stderr is kept and shown only in a failure's message.  The binary is
$KCTL_CHROMIUM, else the first of CANDIDATES on PATH.  Every wait has a
deadline (--timeout, 120 s by default: the test machines are busy).
"""
import argparse
import atexit
import base64
import ctypes
import fcntl
import json
import os
import pathlib
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

CANDIDATES = ("chromium", "chromium-browser", "google-chrome-stable", "google-chrome",
              "chrome")
TIMEOUT_S = 120.0
# After the load event: how long requests still in flight are waited for
# before the page is read as it is (they are in "requests" either way).
SETTLE_S = 20.0
MAX_MESSAGE = 256 << 20    # one DevTools message (a screenshot, a PDF)
MAX_SHOT_HEIGHT = 16384
SKIP = 77
PR_SET_PDEATHSIG = 1
FLAGS = (
    "--headless=new", "--remote-debugging-pipe", "--disable-gpu",
    "--no-first-run", "--no-default-browser-check", "--disable-extensions",
    "--disable-component-extensions-with-background-pages", "--disable-sync",
    "--disable-background-networking", "--disable-component-update",
    "--disable-default-apps", "--disable-breakpad", "--disable-crash-reporter",
    "--disable-dev-shm-usage", "--mute-audio", "--hide-scrollbars",
    "--password-store=basic", "--use-mock-keychain",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
)
# What the page reports back after it has loaded, in one evaluation.
READ_PAGE = """((selectors) => {
  const counts = {};
  for (const s of selectors) counts[s] = document.querySelectorAll(s).length;
  const e = document.documentElement;
  return {counts, title: document.title,
          width: Math.max(e.scrollWidth, document.body ? document.body.scrollWidth : 0),
          height: Math.max(e.scrollHeight, document.body ? document.body.scrollHeight : 0),
          dark: matchMedia('(prefers-color-scheme: dark)').matches};
})(%s)"""
# Lets timers the page set at load time run (and their requests start).
AFTER_TIMERS = "new Promise(r => setTimeout(() => setTimeout(r, 0), 0))"
# Polls a caller's expression (--wait-for) until it is truthy.
WAIT_FOR = "new Promise(r => { const t = () => (%s) ? r(true) : setTimeout(t, 20); t(); })"


class BrowserError(Exception):
    """A check that could not be done; the message says why."""


class ChromiumMissing(BrowserError):
    """No Chromium binary: a test skips (77) on this one."""


def find_chromium():
    """The Chromium binary to run: $KCTL_CHROMIUM when set, else the first of
    CANDIDATES on PATH.  Raises ChromiumMissing naming what was looked for."""
    named = os.environ.get("KCTL_CHROMIUM")
    if named:
        path = shutil.which(named)
        if not path:
            raise ChromiumMissing(f"KCTL_CHROMIUM={named} is not an executable")
        return path
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    raise ChromiumMissing("no Chromium found: none of " + ", ".join(CANDIDATES) +
                          " is on PATH (install Debian's chromium package, or set "
                          "KCTL_CHROMIUM)")


def _child_setup(read_fd, write_fd, prctl):
    """In the child before exec: the pipe ends on fds 3 and 4 (moved above 10
    first, so neither lands on the other), and death with the parent."""
    r = fcntl.fcntl(read_fd, fcntl.F_DUPFD, 10)
    w = fcntl.fcntl(write_fd, fcntl.F_DUPFD, 10)
    os.dup2(r, 3)
    os.dup2(w, 4)
    if prctl:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _prctl():
    """libc's prctl, looked up before the fork; None where there is none (the
    process group kill still ends Chromium)."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


class Browser:
    """One headless Chromium, driven over the DevTools pipe.  Use it as a
    context manager, or call close(); check() opens one page per call."""

    def __init__(self, binary=None, timeout=TIMEOUT_S):
        self.timeout = timeout
        self.proc = None
        self.tmp = tempfile.mkdtemp(prefix="kctl-browser-")
        self._to = self._from = None
        self._parts = []            # what has come of a message not yet ended
        self._held = 0
        self._next_id = 0
        self._replies = {}
        self._listeners = {}
        self._ignored = set()
        try:
            self._launch(binary or find_chromium())
        except BaseException:
            self.close()
            raise
        atexit.register(self.close)

    def _launch(self, binary):
        r3, w3 = os.pipe()
        r4, w4 = os.pipe()
        argv = [binary, *FLAGS, "--user-data-dir=" + os.path.join(self.tmp, "profile")]
        if os.geteuid() == 0:
            argv.append("--no-sandbox")  # Chromium refuses to run its sandbox as root
        argv.append("about:blank")
        prctl = _prctl()
        with open(os.path.join(self.tmp, "stderr"), "wb") as err:
            try:
                self.proc = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                    start_new_session=True, close_fds=False,
                    preexec_fn=lambda: _child_setup(r3, w4, prctl))
            finally:
                os.close(r3)
                os.close(w4)
        self._to, self._from = w3, r4
        self.call("Target.setDiscoverTargets", {"discover": False})

    def close(self):
        """Kills Chromium's process group and removes the profile; safe twice."""
        atexit.unregister(self.close)
        if self.proc is not None and self.proc.returncode is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                pass
        for fd in (self._to, self._from):
            if fd is not None:
                os.close(fd)
        self._to = self._from = None
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def stderr_tail(self, limit=4000):
        try:
            with open(os.path.join(self.tmp, "stderr"), "rb") as f:
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return ""
        return text[-limit:]

    def exit_status(self):
        """How Chromium ended, once its pipe is closed (it is given a few
        seconds to exit: this only words a failure)."""
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "Chromium is still running"
        return f"exit status {code}" if code >= 0 else f"killed by signal {-code}"

    def fail(self, what):
        """A BrowserError for what, with the end of Chromium's stderr."""
        tail = self.stderr_tail().strip()
        return BrowserError(what + ("\n--- chromium stderr ---\n" + tail if tail else ""))

    # -- the pipe --------------------------------------------------------

    def send(self, method, params=None, session=None, ignore=False):
        """Sends one command; returns its id.  With ignore, its reply is dropped."""
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        try:
            while data:
                data = data[os.write(self._to, data):]
        except OSError as e:
            raise self.fail(f"writing to Chromium's pipe: {e} ({self.exit_status()})") from None
        if ignore:
            self._ignored.add(self._next_id)
        return self._next_id

    def call(self, method, params=None, session=None):
        """Sends a command and returns its result; raises on an error reply."""
        cid = self.send(method, params, session)
        self.wait(lambda: cid in self._replies, f"the reply to {method}")
        reply = self._replies.pop(cid)
        if "error" in reply:
            raise self.fail(f"{method}: {reply['error'].get('message')}")
        return reply.get("result", {})

    def wait(self, done, what, limit=None):
        """Reads messages until done() holds.  Raises after the timeout
        (or returns False after limit seconds, when limit is given)."""
        deadline = time.monotonic() + (limit if limit is not None else self.timeout)
        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                if limit is not None:
                    return False
                raise self.fail(f"timed out after {self.timeout:g} s waiting for {what}")
            self._pump(left)
        return True

    def _pump(self, left):
        ready, _, _ = select.select([self._from], [], [], left)
        if not ready:
            return
        chunk = os.read(self._from, 1 << 20)
        if not chunk:
            raise self.fail(f"Chromium closed its DevTools pipe ({self.exit_status()})")
        # Parts are joined only when a message ends: a screenshot comes in
        # hundreds of reads, and copying it whole at each would be quadratic.
        self._parts.append(chunk)
        self._held += len(chunk)
        if self._held > MAX_MESSAGE:
            raise self.fail(f"a DevTools message over {MAX_MESSAGE} bytes")
        if b"\0" not in chunk:
            return
        *messages, rest = b"".join(self._parts).split(b"\0")
        self._parts, self._held = [rest], len(rest)
        for raw in messages:
            try:
                msg = json.loads(raw)
            except ValueError as e:
                raise self.fail(f"a DevTools message that is not JSON: {e}") from None
            self._dispatch(msg)

    def _dispatch(self, msg):
        if "id" in msg:
            if msg["id"] in self._ignored:
                self._ignored.discard(msg["id"])
            else:
                self._replies[msg["id"]] = msg
            return
        listener = self._listeners.get(msg.get("sessionId"))
        if listener:
            listener(msg["method"], msg.get("params", {}), msg.get("sessionId"))

    # -- a page ----------------------------------------------------------

    def check(self, path, counts=(), screenshot=None, dark=False, width=1280, height=800,
              pdf=None, wait_for=None):
        """Opens path in a fresh tab and returns what it did (the module's
        JSON object as a dict); writes the screenshot and PDF when asked.
        wait_for: a JavaScript expression waited for (until truthy) after
        the load event, for pages that finish their work later."""
        if not os.path.isfile(path):
            raise BrowserError(f"no such file '{path}'")
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        page = None
        try:
            page = _Page(self, self.call("Target.attachToTarget",
                                         {"targetId": target, "flatten": True})["sessionId"])
            return page.check(path, dict(counts=list(counts), screenshot=screenshot,
                                         dark=dark, width=width, height=height, pdf=pdf,
                                         wait_for=wait_for))
        finally:
            try:
                self.call("Target.closeTarget", {"targetId": target})
            except BrowserError:
                pass  # Chromium is gone: the error that ended the check says why
            self._listeners = {k: v for k, v in self._listeners.items()
                               if getattr(v, "__self__", None) is not page}


class _Page:
    """One tab's session and the child sessions of its workers and frames:
    what they logged and requested."""

    def __init__(self, browser, session):
        self.b = browser
        self.session = session
        self.console = []
        self.requests = []          # ((session, requestId), url), in order
        self.url_of = {}            # (session, requestId) -> its latest URL
        self.failed = []
        self.in_flight = set()
        self.loaded = False
        self.document = None        # the loaderId (= requestId) of the page itself
        self.children = []          # sessions of its workers and frames
        browser._listeners[session] = self.on_event

    def enable(self, session, child):
        """The domains whose events are collected, on the tab or a child."""
        send = (lambda m, p=None: self.b.send(m, p, session, ignore=True)) if child else (
            lambda m, p=None: self.b.call(m, p, session))
        for method in ("Runtime.enable", "Log.enable", "Network.enable"):
            send(method)
        send("Target.setAutoAttach",
             {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True})
        if child:
            send("Runtime.runIfWaitingForDebugger")

    def on_event(self, method, p, session):
        if method == "Network.requestWillBeSent":
            self.on_request(p, session)
        elif method in ("Network.loadingFinished", "Network.loadingFailed"):
            key = (session, p["requestId"])
            self.in_flight.discard(key)
            if method == "Network.loadingFailed" and key in self.url_of:
                why = p.get("blockedReason") or p.get("corsErrorStatus", {}).get("corsError")
                self.failed.append({"url": self.url_of[key],
                                    "error": p.get("errorText", "") + (f" ({why})" if why
                                                                       else "")})
        elif method == "Runtime.consoleAPICalled":
            level = {"warning": "warning", "error": "error", "assert": "error"}.get(
                p.get("type"), p.get("type", "log"))
            self.log(level, " ".join(_arg_text(a) for a in p.get("args", [])), "console")
        elif method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            exc = d.get("exception", {})
            self.log("error", " ".join(filter(None, (d.get("text"), exc.get("description") or
                                                      str(exc.get("value", "")))))
                     , "exception")
        elif method == "Log.entryAdded":
            e = p.get("entry", {})
            # A worker's messages come from its own session, with their detail.
            if e.get("level") in ("warning", "error") and e.get("source") != "worker":
                text = e.get("text", "") + (f" ({e['url']})" if e.get("url") else "")
                self.log(e["level"], text, "log")
        elif method == "Page.loadEventFired" and session == self.session:
            self.loaded = True
        elif method == "Page.javascriptDialogOpening":
            # An alert would hold the page (and its load event) until answered.
            self.log("warning", f"{p.get('type')} dialog: {p.get('message')}", "dialog")
            self.b.send("Page.handleJavaScriptDialog", {"accept": True}, session, ignore=True)
        elif method == "Target.attachedToTarget":
            child = p["sessionId"]
            self.b._listeners[child] = self.on_event
            self.children.append(child)
            self.enable(child, child=True)

    def on_request(self, p, session):
        url = p.get("request", {}).get("url", "")
        key = (session, p["requestId"])
        own = session == self.session and key[1] == self.document
        if own or url.startswith(("data:", "blob:")):  # blob: and data: never leave the page
            return
        self.requests.append((key, url))  # a redirect's new URL is a request of its own
        self.url_of[key] = url
        self.in_flight.add(key)

    def log(self, level, text, source):
        self.console.append({"level": level, "text": text, "source": source})

    def check(self, path, o):
        b, s = self.b, self.session
        self.enable(s, child=False)
        b.call("Page.enable", None, s)
        b.call("Emulation.setDeviceMetricsOverride",
               {"width": o["width"], "height": o["height"], "deviceScaleFactor": 1,
                "mobile": False},
               s)
        b.call("Emulation.setEmulatedMedia",
               {"features": [{"name": "prefers-color-scheme",
                              "value": "dark" if o["dark"] else "light"}]}, s)
        url = pathlib.Path(os.path.abspath(path)).as_uri()
        nav = b.call("Page.navigate", {"url": url}, s)
        if nav.get("errorText"):
            raise b.fail(f"opening '{url}': {nav['errorText']}")
        # The document's own request may come before the reply that names it.
        self.document = nav.get("loaderId")
        own = (s, self.document)
        self.requests = [(k, u) for k, u in self.requests if k != own]
        self.in_flight.discard(own)
        b.wait(lambda: self.loaded, f"the load event of '{path}'")
        self.settle(o["wait_for"])
        seen = self.evaluate(READ_PAGE % json.dumps(o["counts"]))
        result = {"console": self.console, "requests": [u for _, u in self.requests],
                  "failed_requests": self.failed, **seen, "screenshot": None, "pdf": None}
        if o["screenshot"]:
            self.screenshot(o["screenshot"], max(seen["width"], o["width"]), seen["height"])
            result["screenshot"] = o["screenshot"]
        if o["pdf"]:
            data = b.call("Page.printToPDF", {"printBackground": True}, s)["data"]
            _write(o["pdf"], base64.b64decode(data))
            result["pdf"] = o["pdf"]
        return result

    def settle(self, wait_for):
        """After the load event: timers set at load run, wait_for holds, each
        worker and frame has sent what it did until then (a reply comes after
        its session's earlier events), and the requests in flight end (or
        SETTLE_S passes; they are listed either way)."""
        self.evaluate(AFTER_TIMERS, promise=True)
        if wait_for:
            self.evaluate(WAIT_FOR % wait_for, promise=True)
        for child in list(self.children):
            try:
                self.b.call("Runtime.evaluate", {"expression": "0"}, child)
            except BrowserError:
                pass  # it has ended: what it sent came before
        self.b.wait(lambda: not self.in_flight, "requests in flight", limit=SETTLE_S)

    def evaluate(self, expression, promise=False):
        r = self.b.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                             "awaitPromise": promise}, self.session)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise BrowserError("reading the page: " + (d.get("exception", {}).get(
                "description") or d.get("text", "an exception")))
        return r.get("result", {}).get("value")

    def screenshot(self, out, width, height):
        clip = {"x": 0, "y": 0, "width": width, "height": min(max(height, 1), MAX_SHOT_HEIGHT),
                "scale": 1}
        r = self.b.call("Page.captureScreenshot", {"format": "png", "clip": clip,
                                                   "captureBeyondViewport": True},
                        self.session)
        _write(out, base64.b64decode(r["data"]))


def _arg_text(a):
    """A console argument as the DevTools console would print it, roughly."""
    if "value" in a:
        return a["value"] if isinstance(a["value"], str) else json.dumps(a["value"])
    return a.get("unserializableValue") or a.get("description") or a.get("type", "")


def _write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def check(path, counts=(), screenshot=None, dark=False, width=1280, height=800, pdf=None,
          wait_for=None, browser=None, timeout=TIMEOUT_S):
    """What the page at path did (see the module's comment), in a Chromium
    of its own unless browser (a Browser) is given.  Raises ChromiumMissing
    when there is no Chromium, BrowserError on any other failure."""
    if not os.path.isfile(path):
        raise BrowserError(f"no such file '{path}'")  # before a launch for nothing
    opts = dict(counts=counts, screenshot=screenshot, dark=dark, width=width, height=height,
                pdf=pdf, wait_for=wait_for)
    if browser is not None:
        return browser.check(path, **opts)
    with Browser(timeout=timeout) as b:
        return b.check(path, **opts)


def _terminate(signum, frame):
    raise SystemExit(128 + signum)  # so that Browser.close runs


def main(argv=None):
    ap = argparse.ArgumentParser(description="Open an HTML file in headless Chromium and "
                                 "print what it logged, requested and contains, as JSON.")
    ap.add_argument("file")
    ap.add_argument("--screenshot", metavar="OUT.png")
    ap.add_argument("--count", metavar="SELECTOR", action="append", default=[])
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=800)
    ap.add_argument("--dark", action="store_true",
                    help="emulate prefers-color-scheme: dark")
    ap.add_argument("--print-pdf", metavar="OUT.pdf")
    ap.add_argument("--wait-for", metavar="EXPR",
                    help="a JavaScript expression to wait for after the load event")
    ap.add_argument("--timeout", type=float, default=TIMEOUT_S,
                    help="seconds for each wait (default %(default)g)")
    a = ap.parse_args(argv)
    if a.width <= 0 or a.height <= 0 or a.timeout <= 0:
        ap.error("--width, --height and --timeout must be positive")
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _terminate)
    try:
        r = check(a.file, a.count, a.screenshot, a.dark, a.width, a.height, a.print_pdf,
                  a.wait_for, timeout=a.timeout)
    except ChromiumMissing as e:
        print(f"browser.py: {e}: skipped", file=sys.stderr)
        return SKIP
    except (BrowserError, OSError) as e:
        print(f"browser.py: {e}", file=sys.stderr)
        return 1
    print(json.dumps(r, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
