#!/usr/bin/env python3
"""kctl and s3tool against a store that answers the way broken or hostile
stores do (tests/peers/hostile_s3.py): every malformed answer ends in a
clear error naming the bucket and prefix, never a hang, an over-read or a
result taken from a key outside the round.

usage: kctl_hostile_s3.py KCTL EVALPOD S3TOOL HOSTILE_S3_PY DATA_DIR

Children run under generous timeouts: a hang is a failure, not a wait.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from checks import check, run, session_id, summary

SPEC_FILES = ("affine.cl", "affine_ref.cl", "affine.yaml")
BUCKET = "hostile-runs"
CHILD_TIMEOUT = 600  # seconds; far beyond what any of these takes


class Peer:
    def __init__(self, script):
        self.proc = subprocess.Popen([sys.executable, script, "--lifetime", "3000"],
                                     stdout=subprocess.PIPE, text=True)
        self.url = "http://127.0.0.1:" + self.proc.stdout.readline().strip()

    def mode(self, mode):
        req = urllib.request.Request(self.url + "/__hostile__", method="POST",
                                     data=json.dumps({"mode": mode}).encode())
        return json.load(urllib.request.urlopen(req, timeout=30))

    def counters(self):
        return json.load(urllib.request.urlopen(self.url + "/__hostile__", timeout=30))

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


class Setup:
    def __init__(self, args, peer):
        self.kctl, self.evalpod, self.s3tool, _, data = args
        self.peer = peer
        self.tmp = tempfile.mkdtemp(prefix="kctl-hostile-")
        for name in SPEC_FILES:
            shutil.copy(os.path.join(data, name), self.tmp)
        self.env = dict(os.environ, KCTL_STATE_DIR=os.path.join(self.tmp, "state"),
                        XDG_CACHE_HOME=os.path.join(self.tmp, "cache"),
                        KCTL_EVALPOD=self.evalpod, S3_ENDPOINT=peer.url,
                        AWS_ACCESS_KEY_ID="AKIDHOSTILE", AWS_SECRET_ACCESS_KEY="hostile-secret",
                        AWS_REGION="us-east-1",
                        AWS_SHARED_CREDENTIALS_FILE=os.path.join(self.tmp, "none"),
                        AWS_CONFIG_FILE=os.path.join(self.tmp, "none"))
        self.env.pop("KCTL_TEST_CRASH_AT", None)
        text = open(os.path.join(self.tmp, "affine.yaml"), encoding="utf-8").read()
        text = text.replace("session:\n", "evaluator:\n"
                            f"  storage: s3://{BUCKET}/runs\n"
                            f"  s3: {{endpoint: \"{peer.url}\", addressing: path}}\n"
                            "session:\n", 1)
        text = text.replace("confirm_passes: 2\n", "confirm_passes: 0\n", 1)
        self.spec = os.path.join(self.tmp, "s3.yaml")
        with open(self.spec, "w", encoding="utf-8") as f:
            f.write(text)

    def tool(self, args):
        return subprocess.run([self.s3tool] + args, env=self.env, capture_output=True,
                              text=True, timeout=CHILD_TIMEOUT)

    def start(self, rounds=1):
        # every session evaluates: what is tested is the collect from the store, which
        # results from the cache of an earlier session here would skip
        return subprocess.run([self.kctl, "start", self.spec, "--rounds", str(rounds),
                               "--no-cache"],
                              env=self.env, capture_output=True, text=True,
                              timeout=CHILD_TIMEOUT)

    def status(self, sid):
        r = subprocess.run([self.kctl, "status", sid, "-o", "json"], env=self.env,
                           capture_output=True, text=True, timeout=CHILD_TIMEOUT)
        return json.loads(r.stdout) if r.returncode == 0 else {}


LIST_CASES = (
    ("empty-body", "the list answer has an empty body", 1),
    ("not-xml", "not a ListBucketResult document", 1),
    ("truncated-no-keys", "truncated pages in a row without a key", 3),
    ("repeat-token", "the same continuation token twice", 2),
    ("no-token", "a truncated list page without a continuation token", 1),
)


def test_listing_errors(s):
    s.peer.mode("none")
    r = s.tool(["mb", f"s3://{BUCKET}"])
    check(r.returncode == 0, f"the bucket is created ({r.stderr.strip()!r})")
    for mode, words, most in LIST_CASES:
        s.peer.mode(mode)
        r = s.tool(["ls", f"s3://{BUCKET}", "runs/some/prefix/"])
        lists = s.peer.counters()["lists"]
        check(r.returncode == 1, f"{mode}: s3tool ls fails ({r.returncode})")
        check(words in r.stderr, f"{mode}: the error says what is wrong ({r.stderr.strip()!r})")
        check(f"'{BUCKET}/?prefix=runs/some/prefix/'" in r.stderr,
              f"{mode}: the error names the bucket and prefix")
        check(r.stdout == "", f"{mode}: no half listing is printed")
        check(lists <= most, f"{mode}: at most {most} list requests ({lists})")


def test_long_keys_keep_status_and_code(s):
    s.peer.mode("none")
    key = "runs/" + "k" * 1000
    r = s.tool(["get", f"s3://{BUCKET}", key])
    check(r.returncode == 1, "a GET of a missing 1,005-byte key fails")
    first = r.stderr.split(";")[0]
    check("404 NoSuchKey" in first and "k" * 50 not in first,
          f"status and S3 code come before the key ({r.stderr[:120]!r})")
    check(r.stderr.rstrip().endswith("k'"), "the key is there in full, last")


def test_collect_ignores_foreign_keys(s):
    s.peer.mode("foreign-keys")
    r = s.start()
    c = s.peer.counters()
    check(r.returncode == 0, f"the session finishes beside foreign keys ({r.stderr[-300:]!r})")
    check(c["foreign_gets"] == 0, f"no key outside the round's prefix was read "
                                  f"({c['foreign_gets']} reads)")
    check("ignoring key 'elsewhere/runs/" in r.stderr,
          "a key elsewhere that contains the prefix is ignored with a warning naming it")
    check("ignoring key '" + "y" * 1000 + "'" in r.stderr,
          "a 1,000-byte key is named in full in its warning")
    check("\x1b" not in r.stderr and "ignoring key 'esc?]0;owned?/runs/" in r.stderr,
          "control bytes in a key name reach the terminal as '?'")
    check(r.stderr.count("ignoring key 'zzz") >= 1,
          "a key as long as the prefix, with a result path after it, is ignored")
    sid = session_id(r)
    check(s.status(sid).get("evaluations", 0) >= 4, "every real result was recorded")


def test_zero_byte_results(s):
    s.peer.mode("zero-results")
    r = s.start()
    check(r.returncode != 0, "a session whose results are all 0-byte objects fails")
    check(re.search(r"result object 'runs/[^']*/results/r0\d-[a-z0-9-]+\.json' is empty "
                    r"\(0 bytes\); not taken", r.stderr) is not None,
          f"the empty result object is named ({r.stderr[-300:]!r})")
    check("still without a result" in r.stderr or "unwritten" in r.stderr,
          "the round says which results are missing")
    sid = session_id(r)
    check(s.status(sid).get("state") != "done", "the session is left resumable, not done")


def test_collect_list_errors(s):
    for mode, words, _ in LIST_CASES[:3]:
        s.peer.mode(mode)
        r = s.start()
        sid = session_id(r)
        check(r.returncode != 0, f"{mode}: kctl start fails at the collect ({r.returncode})")
        check(words in r.stderr and f"'{BUCKET}/?prefix=runs/{sid}/r000/'" in r.stderr,
              f"{mode}: the error names bucket, round prefix and reason "
              f"({r.stderr[-300:]!r})")
        check(s.status(sid).get("state") not in ("done", None),
              f"{mode}: the session is left resumable, not done")


def test_sigterm_stops_endless_listing(s):
    s.peer.mode("endless")
    p = subprocess.Popen([s.kctl, "start", s.spec, "--rounds", "1", "--no-cache"], env=s.env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + CHILD_TIMEOUT
    while time.monotonic() < deadline and p.poll() is None and s.peer.counters()["lists"] < 20:
        time.sleep(0.5)
    listing = s.peer.counters()["lists"] >= 20
    check(listing and p.poll() is None, "kctl is following an endless listing")
    p.send_signal(signal.SIGTERM)
    try:
        out, err = p.communicate(timeout=CHILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        check(False, "kctl stops listing on SIGTERM")
        return
    check(p.returncode != 0, f"kctl exits non-zero after SIGTERM ({p.returncode})")
    check("interrupted" in err, f"it says it was interrupted ({err[-300:]!r})")
    sid = (out.splitlines() or [""])[0].strip()
    check(s.status(sid).get("state") != "done", "the session is left resumable")


class Lines(threading.Thread):
    """Reads a child's stream line by line; sets seen once a line holds words."""

    def __init__(self, stream, words):
        super().__init__(daemon=True)
        self.stream, self.words = stream, words
        self.seen = threading.Event()
        self.text = []
        self.start()

    def run(self):
        for line in self.stream:
            self.text.append(line)
            if self.words in line:
                self.seen.set()


def test_sigterm_ends_retry_wait(s):
    """A store answering 503 with Retry-After: 30 makes kctl pause 30 s
    before its next try; SIGTERM during that pause ends it at once."""
    s.peer.mode("none")
    s.tool(["mb", f"s3://{BUCKET}"])  # the resume below needs it (409 when there)
    s.peer.mode("slow-down")
    p = subprocess.Popen([s.kctl, "start", s.spec, "--rounds", "1", "--no-cache"], env=s.env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err = Lines(p.stderr, "retrying in 30000 ms")
    waiting = err.seen.wait(CHILD_TIMEOUT)
    check(waiting and p.poll() is None,
          "kctl pauses 30 s before trying the refusing store again")
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=CHILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    took = time.monotonic() - t0
    err.join(CHILD_TIMEOUT)
    text = "".join(err.text)
    s.peer.mode("none")
    # far below the 30 s pause, and generous for a busy machine
    check(took < 20, f"kctl exits soon after SIGTERM, not after the pause ({took:.1f} s)")
    check(p.returncode == 130 and "Sanitizer" not in text,
          f"it exits as an interrupt does (130, got {p.returncode})")
    sid = (p.stdout.read().splitlines() or [""])[0].strip()
    check(f"interrupted; go on with: kctl resume {sid}" in text,
          f"it prints the resume hint ({text[-300:]!r})")
    check(s.status(sid).get("state") == "paused", "the session is left paused")
    r = subprocess.run([s.kctl, "resume", sid], env=s.env, capture_output=True, text=True,
                       timeout=CHILD_TIMEOUT)
    check(r.returncode == 0 and s.status(sid).get("state") == "done",
          f"the session resumes to its end ({r.stderr[-300:]!r})")


def main():
    if len(sys.argv) != 6:
        print(__doc__)
        return 2
    args = [os.path.abspath(a) for a in sys.argv[1:]]
    peer = Peer(args[3])
    s = Setup(args, peer)
    try:
        run((test_listing_errors, test_long_keys_keep_status_and_code,
             test_collect_ignores_foreign_keys, test_zero_byte_results, test_collect_list_errors,
             test_sigterm_stops_endless_listing, test_sigterm_ends_retry_wait), s)
    finally:
        peer.stop()
        shutil.rmtree(s.tmp, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
