#!/usr/bin/env python3
"""A session's GitHub tracking issue (spec session.github), end to end
against the strict GitHub double: opened at the start, a comment after each
round, the report and the close at the end, reused by a resume; a rate
limit, a lost reply and a missing token queue posts without stopping the
session, and the token appears in no output, file or database.

usage: kctl_github.py KCTL EVALPOD DATA_DIR DOUBLE

DATA_DIR holds the affine spec (tests/data/kctl); DOUBLE is
tests/peers/github_double.py, started here over TLS with a CA made for the
run.
"""
import glob
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

from checks import make_certs

failures = []
passes = []

SPEC_FILES = ("affine.cl", "affine_ref.cl", "affine.yaml")
TOKEN = "ghp_kctlTEST0123456789abcdefDOUBLE"
REPO = "kernels/tracked"


def check(cond, what):
    (passes if cond else failures).append(what)
    print(("ok   " if cond else "FAIL ") + what, flush=True)


class Double:
    def __init__(self, script, d):
        make_certs(d)
        self.ca = os.path.join(d, "ca.pem")
        self.proc = subprocess.Popen(
            [sys.executable, script, "--tls", os.path.join(d, "server.pem"),
             os.path.join(d, "server.key"), "--token", TOKEN, "--repo", REPO,
             "--lifetime", "1800"], stdout=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline())
        self.url = f"https://localhost:{self.port}"
        self.ctx = ssl.create_default_context(cafile=self.ca)

    def control(self, body=None):
        req = urllib.request.Request(self.url + "/__control__", method="POST" if body else "GET",
                                     data=json.dumps(body).encode() if body else None,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, context=self.ctx, timeout=30) as r:
            return json.loads(r.read() or b"{}")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


class Scenario:
    def __init__(self, kctl, evalpod, data, dbl, label):
        self.kctl = kctl
        self.tmp = tempfile.mkdtemp(prefix="kctl-gh-")
        for name in SPEC_FILES:
            shutil.copy(os.path.join(data, name), self.tmp)
        text = open(os.path.join(self.tmp, "affine.yaml"), encoding="utf-8").read()
        text = text.replace("session:\n", "session:\n  github:\n"
                            f"    repo: {REPO}\n    api_url: {dbl.url}\n"
                            f"    ca_file: {dbl.ca}\n    token_env: KCTL_TEST_GH_TOKEN\n"
                            "    labels: [kctl, perf]\n", 1)
        # no confirmation rounds: a resume --rounds N+1 then runs one more round
        text = text.replace("confirm_passes: 2\n", "confirm_passes: 0\n", 1)
        self.spec = os.path.join(self.tmp, "tracked.yaml")
        with open(self.spec, "w", encoding="utf-8") as f:
            f.write(text)
        self.env = dict(os.environ, KCTL_STATE_DIR=os.path.join(self.tmp, "state"),
                        XDG_CACHE_HOME=os.path.join(self.tmp, "cache"), KCTL_EVALPOD=evalpod,
                        KCTL_TEST_GH_TOKEN=TOKEN)
        dbl.control({"reset": True})
        print(f"-- {label}", flush=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run(self, args, env=None):
        return subprocess.run([self.kctl] + args, cwd=self.tmp, env=env or self.env,
                              capture_output=True, text=True, timeout=900)

    def token_nowhere(self, *outputs):
        """The token in no output given, no file under the folder (the state database
        included), and no request sent anywhere but the double's API."""
        leaks = [i for i, o in enumerate(outputs) if TOKEN in (o or "")]
        for path in glob.glob(os.path.join(self.tmp, "**"), recursive=True):
            if os.path.isfile(path):
                with open(path, "rb") as f:
                    if TOKEN.encode() in f.read():
                        leaks.append(path)
        return leaks


def sid_of(res):
    m = re.search(r"^(tracked|affine)-\d{8}-\d{6}-[0-9a-f]{6}$", res.stdout, re.M)
    return m.group(0) if m else None


def marker_posts(state, sid):
    """The issues and comments the double holds for session sid."""
    issues = [i for i in state.get("issues", [])
              if f"<!-- kctl-session: {sid} -->" in (i.get("body") or "")]
    comments = [c for c in state.get("comments", [])
                if f"<!-- kctl-session: {sid}:post-" in (c.get("body") or "")]
    return issues, comments


def session_tracked(kctl, evalpod, data, dbl):
    with Scenario(kctl, evalpod, data, dbl, "a session opens, comments on and closes its "
                  "issue") as sc:
        res = sc.run(["start", sc.spec, "--rounds", "2"])
        sid = sid_of(res)
        check(res.returncode == 0 and sid, f"the session runs ({res.returncode}: "
              f"{res.stderr.strip()[-200:]})")
        state = dbl.control()
        issues, comments = marker_posts(state, sid)
        check(len(issues) == 1, f"one issue, found by its marker ({len(issues)})")
        issue = issues[0] if issues else {}
        labels = sorted(l.get("name", l) if isinstance(l, dict) else l
                        for l in issue.get("labels", []))
        check(issue.get("title") == f"kctl session {sid}" and labels == ["kctl", "perf"],
              f"its title and labels ({issue.get('title')!r}, {labels})")
        check(issue.get("state") == "closed", f"closed when the session is done "
              f"({issue.get('state')})")
        bodies = [c.get("body", "") for c in comments]
        rounds = [int(m.group(1)) for b in bodies for m in [re.search(r"### Round (\d+)", b)]
                  if m]
        check(any("| r01-v" in b and "**Incumbent:**" in b for b in bodies),
              "a round's comment holds its variants and the incumbent")
        check(rounds == [0, 1, 2], f"rounds 0 to 2 ({rounds})")
        check(bodies and "### The session is done" in bodies[-1]
              and "<details><summary>report.md</summary>" in bodies[-1],
              "the last comment is the final report")
        reqs = state.get("requests", [])
        check(reqs and all(r.get("auth") == "match" for r in reqs
                           if r.get("path") != "/__control__")
              and not any(r.get("token_elsewhere") for r in reqs),
              "every request carried the token, to the API only")
        check(not sc.token_nowhere(res.stdout, res.stderr),
              f"the token is in no output or file ({sc.token_nowhere(res.stdout, res.stderr)[:3]})")
        # kctl resume --rounds 3 of the done session: its posts go to the same
        # issue (its number is in the store), none is opened anew
        res = sc.run(["resume", sid, "--rounds", "3"])
        state = dbl.control()
        issues2, comments2 = marker_posts(state, sid)
        check(res.returncode == 0 and len(issues2) == 1 and len(comments2) > len(comments),
              f"a resume posts to the same issue ({res.returncode}, {len(issues2)} issue(s), "
              f"{len(comments)} -> {len(comments2)} comments)")


def rate_limited(kctl, evalpod, data, dbl):
    with Scenario(kctl, evalpod, data, dbl, "a rate limit and a lost reply queue posts; "
                  "the session goes on") as sc:
        reset = int(time.time()) + 3600
        dbl.control({"plan": [{"fault": "primary", "method": "POST", "path": "/comments",
                               "reset": reset, "times": 1}]})
        res = sc.run(["start", sc.spec, "--rounds", "1"])
        sid = sid_of(res)
        check(res.returncode == 0 and "GitHub asks to wait until" in res.stderr,
              f"a primary rate limit: the session ends well and says the posts wait "
              f"({res.returncode}: {res.stderr.strip()[-200:]})")
        issues, comments = marker_posts(dbl.control(), sid)
        check(len(issues) == 1 and not comments,
              f"the issue is open, its comments queued ({len(issues)}, {len(comments)})")
        # a reply lost after the comment was made: the next run finds it by its marker
        dbl.control({"plan": [{"fault": "502-after", "method": "POST", "path": "/comments",
                               "times": 1}]})
        res = sc.run(["resume", sid, "--rounds", "2"])
        state = dbl.control()
        issues, comments = marker_posts(state, sid)
        markers = [re.search(r"post-(\d+)", c["body"]).group(1) for c in comments]
        check(res.returncode == 0 and len(markers) == len(set(markers)),
              f"no comment twice after a lost reply ({markers})")
        rounds = [int(m.group(1)) for c in comments
                  for m in [re.search(r"### Round (\d+)", c["body"])] if m]
        check(rounds == sorted(rounds) and 0 in rounds and 2 in rounds,
              f"the queued comments went first, in order ({rounds})")
        check(issues and issues[0].get("state") == "closed", "closed at the end")


def no_token(kctl, evalpod, data, dbl):
    with Scenario(kctl, evalpod, data, dbl, "without the token the posts wait") as sc:
        env = dict(sc.env)
        env.pop("KCTL_TEST_GH_TOKEN")
        res = sc.run(["start", sc.spec, "--rounds", "1"], env=env)
        sid = sid_of(res)
        check(res.returncode == 0 and "$KCTL_TEST_GH_TOKEN is not set" in res.stderr,
              f"the session runs and says why nothing is posted ({res.returncode})")
        issues, _ = marker_posts(dbl.control(), sid)
        check(not issues, "nothing was posted")
        res = sc.run(["resume", sid, "--rounds", "2"])
        issues, comments = marker_posts(dbl.control(), sid)
        rounds = [int(m.group(1)) for c in comments
                  for m in [re.search(r"### Round (\d+)", c["body"])] if m]
        check(res.returncode == 0 and len(issues) == 1 and rounds[:2] == [0, 1],
              f"with the token back, the queue is sent in order ({rounds})")


def refused(kctl, evalpod, data, dbl):
    with Scenario(kctl, evalpod, data, dbl, "a repository the token cannot see") as sc:
        text = open(sc.spec, encoding="utf-8").read().replace(f"repo: {REPO}",
                                                              "repo: kernels/elsewhere")
        with open(sc.spec, "w", encoding="utf-8") as f:
            f.write(text)
        res = sc.run(["start", sc.spec, "--rounds", "1"])
        check(res.returncode == 0 and "404" in res.stderr and "stays queued" in res.stderr,
              f"a 404 is reported with GitHub's words and the session goes on "
              f"({res.returncode}: {res.stderr.strip()[-240:]})")
        check(not sc.token_nowhere(res.stdout, res.stderr), "the token is in no message")


def crashes(kctl, evalpod, data, dbl):
    with Scenario(kctl, evalpod, data, dbl, "kill -9 at the worst moments, then resume: "
                  "one issue, no comment twice, none missing") as sc:
        env = dict(sc.env, KCTL_TEST_CRASH_AT="posted:0")
        res = sc.run(["start", sc.spec, "--rounds", "2"], env=env)
        sid = sid_of(res)
        check(res.returncode == -9 and sid,
              f"killed right after GitHub took round 0's comment ({res.returncode})")
        env = dict(sc.env, KCTL_TEST_CRASH_AT="ranked:1")
        res = sc.run(["resume", sid], env=env)
        check(res.returncode == -9, f"killed after round 1 was ranked, before its comment "
              f"was queued ({res.returncode})")
        env = dict(sc.env, KCTL_TEST_CRASH_AT="ended")
        res = sc.run(["resume", sid], env=env)
        check(res.returncode == -9, f"killed once the session's end was recorded "
              f"({res.returncode})")
        res = sc.run(["status", sid])
        issues, comments = marker_posts(dbl.control(), sid)
        markers = [re.search(r"post-(\d+)", c["body"]).group(1) for c in comments]
        rounds = [int(m.group(1)) for c in comments
                  for m in [re.search(r"### Round (\d+)", c["body"])] if m]
        ends = [c for c in comments if "### The session is done" in c["body"]]
        check(len(issues) == 1, f"one issue ({len(issues)})")
        check(len(markers) == len(set(markers)) and rounds == [0, 1, 2] and len(ends) == 1,
              f"each round's comment once, in order, and the end once ({rounds}, "
              f"{len(ends)} end(s), markers {markers})")
        check(issues and issues[0].get("state") == "closed",
              "kctl status, rewriting the stale report, also sent the end and closed it")


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    kctl, evalpod, data, script = (os.path.abspath(a) for a in sys.argv[1:])
    if not shutil.which("openssl"):
        print("skipped: openssl not found")
        return 77
    tmp = tempfile.mkdtemp(prefix="kctl-ghd-")
    dbl = Double(script, tmp)
    try:
        for fn in (session_tracked, rate_limited, no_token, refused, crashes):
            try:
                fn(kctl, evalpod, data, dbl)
            except Exception as e:  # a scenario that breaks is a failure, not a crash
                check(False, f"{fn.__name__}: {type(e).__name__}: {e}")
    finally:
        dbl.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(passes)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
