#!/usr/bin/env python3
"""Many sessions on one cluster, against the strict API double with Kueue.

usage: kctl_fleet.py KCTL EVALPOD DATA_DIR REPO_ROOT

Run under tests/peers/with-s3.sh (a real S3 store).  Starts
tests/peers/kube_double.py with --kueue (Workloads and an admission model
with a quota of one GPU) and without it (no Kueue: its API answers 404), and
as a v1.21 server (one Job per shard).  Covered: two sessions of two users in
two namespaces submitted at once with quota for one: the second says "queued
by Kueue: ..." in its log and in `kctl status` and `kctl status --watch` run
from other processes, and completes once the first frees the quota; the
in-flight limit (evaluator.kubernetes.max_pods_in_flight) is never passed,
counted as the double's concurrently running pods of each session, with an
Indexed Job and with one Job per shard; a suspended Job with no Kueue
installed says so and still completes when admitted; `kctl status --cluster`
across two namespaces, and in one.
"""
import json
import os
import shutil
import subprocess
import sys
import pty
import tempfile
import threading
import time

from checks import check, need_env, run, session_id as sid_of, summary
from kctl_kube_double import Double, Scenario

QUOTA_MSG = ("queued by Kueue: couldn't assign flavors to pod set main: insufficient unused "
             "quota for nvidia.com/gpu in flavor default-flavor, 1 more needed")


def wait_for(what, timeout=240, every=0.3):
    """what() until it returns something true, or None after timeout seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = what()
        if v:
            return v
        time.sleep(every)
    return None


class Terminal:
    """stderr on a pseudo-terminal, as a person at a terminal sees it (kctl's live
    line); read() is what kctl wrote there."""

    def __init__(self):
        self.master, self.slave = pty.openpty()
        self.data = []
        self.t = threading.Thread(target=self.pump, daemon=True)
        self.t.start()

    def pump(self):
        while True:
            try:
                got = os.read(self.master, 65536)
            except OSError:  # EIO: the last writer closed it
                return
            if not got:
                return
            self.data.append(got)

    def seek(self, _):
        self.t.join(10)

    def read(self):
        return b"".join(self.data).decode(errors="replace")


def start(s, tty=False):
    """kctl start --rounds 1 in the background; stdout into a file, stderr into a
    file or (tty) a pseudo-terminal."""
    out = open(os.path.join(s.tmp, "start.out"), "w+")
    err = Terminal() if tty else open(os.path.join(s.tmp, "start.err"), "w+")
    p = subprocess.Popen([s.kctl, "start", s.spec, "--rounds", "1"], env=s.env, stdout=out,
                         stderr=err.slave if tty else err, text=True)
    if tty:
        os.close(err.slave)
    # the session id comes first, once the state database is there: only then may
    # another process read it (a kctl status racing the database's creation is not
    # what these tests are about)
    wait_for(lambda: p.poll() is not None or open(out.name).readline().strip(), timeout=120)
    return p, out, err


def finish(p, out, err, timeout=600):
    try:
        p.wait(timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    out.seek(0)
    err.seek(0)
    return p.returncode, out.read(), err.read()


def status_text(s):
    r = s.run(["status"], timeout=60)
    return r.stdout if r.returncode == 0 else ""


def kubeconfig(s):
    return os.path.join(s.tmp, "kubeconfig")


def test_quota(args, dbl):
    """Two sessions, two namespaces, quota for one GPU: the second waits and says why."""
    with Scenario(args, dbl, "quota for one: the second session is queued by Kueue",
                  "kd-fleet-a", {"queue": "team-a", "gpus": 1, "max_pods_in_flight": 1}) as a, \
            Scenario(args, dbl, "(its second session, another user's, another namespace)",
                     "kd-fleet-b", {"queue": "team-b", "gpus": 1, "max_pods_in_flight": 1,
                                    "namespace": "team-b"}) as b:
        dbl.control(method="DELETE")
        # the first session's quota stays taken until the test has seen the second wait
        dbl.control({"kueue_hold_quota": True})
        pa = start(a)
        # the first holds the quota before the second asks for it
        admitted = wait_for(lambda: [j for j in dbl.jobs() if not j["spec"].get("suspend")],
                            timeout=120)
        check(bool(admitted), "the first session's Job is admitted by the double's Kueue")
        pb = start(b, tty=True)
        seen = wait_for(lambda: QUOTA_MSG in status_text(b) and status_text(b), timeout=120)
        # a watcher from yet another process, while the second session waits
        watch = subprocess.Popen([b.kctl, "status", "--watch", "--interval", "0.5",
                                  sid_of_file(b)], env=b.env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        check(bool(seen), "kctl status, from another process, says the second session is "
                          f"queued by Kueue, and why ({status_text(b)[-400:]!r})")
        if seen:
            line = [ln for ln in seen.splitlines() if "queued by Kueue" in ln]
            check(line and "namespace team-b, queue team-b" in line[0] and "(queue team-b, for "
                  in line[0], f"with the namespace, the queue and for how long ({line[:1]})")
        js = b.run(["status", "-o", "json"], timeout=60)
        try:
            doc = json.loads(js.stdout)[0].get("kubernetes", {})
        except (ValueError, IndexError, AttributeError):
            doc = {}
        check(doc.get("state") in ("queued", "") and doc.get("namespace") == "team-b",
              f"kctl status -o json has the session's kubernetes part ({doc})")
        cl = a.run(["status", "--cluster", "--all-namespaces", "--kubeconfig", kubeconfig(a)],
                   timeout=60)
        rows = [ln for ln in cl.stdout.splitlines() if ln.startswith(("kctl ", "team-b "))]
        check(cl.returncode == 0 and len(rows) == 2 and any(
            r.startswith("team-b") and "queued: couldn't assign flavors" in r for r in rows),
            f"kctl status --cluster --all-namespaces lists both sessions, the second queued "
            f"({cl.returncode}, {cl.stdout[-600:]!r}, {cl.stderr[-300:]!r})")
        one = a.run(["status", "--cluster", "-o", "json", "--kubeconfig", kubeconfig(a)],
                    timeout=60)
        try:
            got = json.loads(one.stdout)
        except ValueError:
            got = None
        check(isinstance(got, list) and [e.get("namespace") for e in got] == ["kctl"],
              f"without --all-namespaces: the kubeconfig's namespace only ({one.stdout[-300:]!r})")
        dbl.control({"kueue_hold_quota": False})
        ra, outa, erra = finish(*pa)
        rb, outb, errb = finish(*pb)
        try:
            wout, _ = watch.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            watch.kill()
            wout, _ = watch.communicate()
        check(ra == 0 and rb == 0, f"both sessions complete ({ra}: {erra[-300:]!r}; "
                                   f"{rb}: {errb[-300:]!r})")
        check(QUOTA_MSG in errb, "the second session's log says it is queued by Kueue, and why")
        live = [seg for seg in errb.split("\r") if seg.startswith("round ") and
                "queued by Kueue: couldn't assign flavors" in seg and "\033[K" in seg]
        check(live, f"on a terminal, kctl start's live line says it is queued, redrawn in "
                    f"place ({errb[-500:]!r})")
        check("no Job waits for Kueue any more" in errb,
              "and says so when its Job is admitted")
        check(not any("round 0:" in ln and "queued by Kueue" in ln for ln in erra.splitlines()),
              "the first session's first round, admitted at once, was not queued")
        check(QUOTA_MSG in wout and "kubernetes: namespace team-b" in wout,
              f"kctl status --watch shows the wait while it lasts ({wout[-300:]!r})")
        peak = dbl.control().get("max_pods_in_flight", {})
        check(peak and all(0 < v <= 1 for v in peak.values()) and len(peak) >= 2,
              f"never more than max_pods_in_flight pods of a session at once ({peak})")
        after = b.run(["status"], timeout=60).stdout
        check("queued by Kueue" not in after and "kubernetes: namespace team-b" in after,
              f"once done, the session waits for nothing ({after[-300:]!r})")


def sid_of_file(s):
    """The session id, from the state (the session kctl start runs in the background)."""
    r = s.run(["status", "-o", "json"], timeout=60)
    try:
        return json.loads(r.stdout)[0]["session"]
    except (ValueError, IndexError, KeyError):
        return "none"


def test_no_kueue(args, tmp):
    """A suspended Job on a cluster without Kueue says so; admitted by hand, it completes."""
    dbl = Double(args[3], args[1], os.path.join(tmp, "nokueue"))
    try:
        with Scenario(args, dbl, "suspended, no Kueue installed (404)", "kd-fleet-nokueue",
                      {"queue": "lq-missing", "pending_timeout_s": 10}) as s:
            p = start(s)
            said = wait_for(lambda: "suspended; no Kueue Workload found: is Kueue installed "
                            "and the LocalQueue lq-missing present?" in status_text(s),
                            timeout=120)
            check(bool(said), f"kctl status says no Kueue Workload was found "
                              f"({status_text(s)[-300:]!r})")
            cl = s.run(["status", "--cluster", "--kubeconfig", kubeconfig(s)], timeout=60)
            check(cl.returncode == 0 and "no-kueue: no Kueue Workload API" in cl.stdout,
                  f"kctl status --cluster says so too ({cl.stdout[-300:]!r})")
            # past pending_timeout_s (10 s; pods looked at every 3 s) the waiting Job is
            # still there: a wait for admission has no pod to be stuck
            time.sleep(16)
            jobs = dbl.jobs()
            check(jobs and all(j["spec"].get("suspend") and not any(
                c["type"] == "Failed" for c in j.get("status", {}).get("conditions", []))
                for j in jobs if j["metadata"]["labels"].get("kctl.dev/round") == "0"),
                f"16 s suspended, past pending_timeout_s 10, the Job is neither deleted nor "
                f"failed ({[j['metadata']['name'] for j in jobs]})")
            # a person (or a Kueue installed late) admits every Job from now on
            while p[0].poll() is None:
                for j in dbl.jobs():
                    if j["spec"].get("suspend"):
                        dbl.control({"admit": j["metadata"]["name"]})
                time.sleep(0.3)
            rc, out, err = finish(*p)
            check(rc == 0, f"admitted, the session completes ({err[-300:]!r})")
            check("suspended; no Kueue Workload found" in err, "its log said why it waited")
            check("pending_timeout" not in err and "stuck" not in err,
                  "the wait did not count against pending_timeout_s")
    finally:
        dbl.stop()


def test_in_flight_per_shard(args, tmp):
    """v1.21: one Job per shard; at most max_pods_in_flight of them at once."""
    dbl = Double(args[3], args[1], os.path.join(tmp, "v121"), version="v1.21.0")
    try:
        with Scenario(args, dbl, "one Job per shard (1.21), max_pods_in_flight 2",
                      "kd-fleet-121", {"max_pods_in_flight": 2}) as s:
            r = s.run(["start", s.spec, "--rounds", "1"])
            check(r.returncode == 0, f"the session completes ({r.stderr[-300:]!r})")
            jobs = [j for j in dbl.jobs() if j["metadata"]["annotations"].get(
                "kctl.dev/session-id") == sid_of(r)]
            check(len(jobs) >= 3, f"one Job per shard ({len(jobs)})")
            peak = dbl.control().get("max_pods_in_flight", {})
            check(peak and max(peak.values()) == 2,
                  f"two pods at once at most, and two at some point ({peak})")
            check("shard(s) wait for a free slot (evaluator.kubernetes.max_pods_in_flight 2)"
                  in r.stderr, "the log says shards wait for a slot")
    finally:
        dbl.stop()


def test_bad_input(args, dbl):
    with Scenario(args, dbl, "bad options and values", "kd-fleet-bad", {}) as s:
        r = s.run(["status", "--cluster", "--namespace", "a", "--all-namespaces"])
        check(r.returncode == 2 and "exclude each other" in r.stderr,
              f"--namespace with --all-namespaces is a usage error ({r.stderr!r})")
        r = s.run(["status", "--cluster", "--kubeconfig", "/nonexistent/kc"])
        check(r.returncode == 3 and "/nonexistent/kc" in r.stderr,
              f"a missing kubeconfig is named ({r.returncode}, {r.stderr!r})")
        text = open(s.spec).read().replace("max_pods_in_flight", "x") + ""
        bad = s.spec + ".bad.yaml"
        with open(bad, "w") as f:
            f.write(text.replace("    variants_per_pod: 1\n",
                                 "    variants_per_pod: 1\n    max_pods_in_flight: 0\n"))
        r = s.run(["start", bad, "--rounds", "1"])
        check(r.returncode != 0 and "max_pods_in_flight" in r.stderr,
              f"max_pods_in_flight 0 is refused, naming the key ({r.stderr[-300:]!r})")


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    skip = need_env("S3_ENDPOINT")
    if skip:
        return skip
    args = [os.path.abspath(a) for a in sys.argv[1:]]
    tmp = tempfile.mkdtemp(prefix="kctl-fleet-")
    dbl = Double(args[3], args[1], os.path.join(tmp, "kueue"),
                 extra=["--namespace", "team-b", "--kueue", "nvidia.com/gpu=1"])
    try:
        only = os.environ.get("KCTL_TEST_ONLY", "").split(",")
        tests = [(test_quota, dbl), (test_bad_input, dbl), (test_no_kueue, tmp),
                 (test_in_flight_per_shard, tmp)]
        for t, arg in tests:
            if any(o in t.__name__ for o in only):
                run([t], args, arg)
    finally:
        dbl.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
