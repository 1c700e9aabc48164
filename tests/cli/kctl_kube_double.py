#!/usr/bin/env python3
"""kctl's Kubernetes backend against the strict API double: what 1.20 lacks
and what a real server will not do on request.

usage: kctl_kube_double.py KCTL EVALPOD DATA_DIR REPO_ROOT

Run under tests/peers/with-s3.sh (a real S3 store).  Starts
tests/peers/kube_double.py over TLS with a fresh CA, as a v1.30 server that
runs each pod's container locally (evalpod, with the pod's environment):
Indexed Jobs, suspend admitted the way Kueue does it, podFailurePolicy and
backoffLimitPerIndex, 422 Status bodies, watch bookmarks, 410 Gone,
injected 429 with Retry-After, 500, a watch cut mid-stream, slow answers,
pod failures (OOMKilled, Unschedulable, eviction, evalpod refusing its
batch), a create whose reply is lost (adopted on 409), a Job name taken by
another session (refused), a Job past its activeDeadlineSeconds, and a
kubeconfig whose user is an exec credential plugin.
"""
import json
import re
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from checks import (SANITIZER_ENV, check, make_certs, need_env, pod_env, run,
                    session_id as sid_of, summary)

SPEC_FILES = ("affine.cl", "affine_ref.cl", "affine.yaml")
TOKEN = "double-token-5f1e2d"


def env(name):
    return os.environ[name]


class Double:
    def __init__(self, repo, evalpod, tmp, version="v1.30.0", extra=()):
        self.tmp = tmp
        os.makedirs(os.path.join(tmp, "pods"), exist_ok=True)
        make_certs(tmp)
        self.log = open(os.path.join(tmp, "double.log"), "w")
        self.p = subprocess.Popen(
            [sys.executable, os.path.join(repo, "tests", "peers", "kube_double.py"),
             "--tls", os.path.join(tmp, "server.pem"), os.path.join(tmp, "server.key"),
             "--token", f"{TOKEN}=kctl", "--version", version, "--run", "exec",
             "--map", f"evalpod={evalpod}", "--workdir", os.path.join(tmp, "pods"),
             "--bookmark-interval", "1", "--namespace", "kctl",
             *[a for v in SANITIZER_ENV for a in ("--pass-env", v)], *extra],
            stdout=subprocess.PIPE, stderr=self.log, text=True, env=pod_env())
        self.port = int(self.p.stdout.readline())
        self.url = f"https://127.0.0.1:{self.port}"
        self.ca = os.path.join(tmp, "ca.pem")
        self.ctx = ssl.create_default_context(cafile=self.ca)

    def control(self, body=None, method=None):
        req = urllib.request.Request(self.url + "/__control__", method=method or
                                     ("POST" if body is not None else "GET"),
                                     data=json.dumps(body).encode() if body is not None else None)
        with urllib.request.urlopen(req, context=self.ctx, timeout=30) as r:
            return json.loads(r.read() or b"{}")

    def jobs(self):
        req = urllib.request.Request(self.url + "/apis/batch/v1/namespaces/kctl/jobs")
        req.add_header("Authorization", "Bearer " + TOKEN)
        with urllib.request.urlopen(req, context=self.ctx, timeout=30) as r:
            return json.loads(r.read()).get("items", [])

    def create_job(self, job):
        req = urllib.request.Request(self.url + "/apis/batch/v1/namespaces/kctl/jobs",
                                     data=json.dumps(job).encode(), method="POST")
        req.add_header("Authorization", "Bearer " + TOKEN)
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, context=self.ctx, timeout=30) as r:
            return json.loads(r.read())

    def pod_logs(self, tail=1500):
        """The end of each failed pod's log (the double's pods/log), to show why."""
        def get(path):
            req = urllib.request.Request(self.url + path)
            req.add_header("Authorization", "Bearer " + TOKEN)
            with urllib.request.urlopen(req, context=self.ctx, timeout=30) as r:
                return r.read().decode(errors="replace")
        out = []
        for p in json.loads(get("/api/v1/namespaces/kctl/pods")).get("items", []):
            if p.get("status", {}).get("phase") == "Failed":
                name = p["metadata"]["name"]
                out.append(f"--- {name}\n" + get(f"/api/v1/namespaces/kctl/pods/{name}/log")[-tail:])
        return "\n".join(out)

    def stop(self):
        self.p.terminate()
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
        self.log.close()


class Scenario:
    def __init__(self, args, dbl, label, bucket, kube, user=None):
        self.kctl, self.evalpod, data, self.repo = args
        self.tmp = tempfile.mkdtemp(prefix="kctl-kd-")
        for name in SPEC_FILES:
            shutil.copy(os.path.join(data, name), self.tmp)
        kc = os.path.join(self.tmp, "kubeconfig")
        with open(kc, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "d",
                       "clusters": [{"name": "d", "cluster": {"server": dbl.url,
                                                              "certificate-authority": dbl.ca}}],
                       "users": [{"name": "u", "user": user or {"token": TOKEN}}],
                       "contexts": [{"name": "d", "context": {"cluster": "d", "user": "u",
                                                              "namespace": "kctl"}}]}, f)
        self.env = dict(os.environ, KCTL_STATE_DIR=os.path.join(self.tmp, "state"),
                        AWS_ACCESS_KEY_ID=env("S3_ACCESS_KEY"),
                        AWS_SECRET_ACCESS_KEY=env("S3_SECRET_KEY"), AWS_REGION=env("S3_REGION"),
                        AWS_SHARED_CREDENTIALS_FILE="/nonexistent",
                        AWS_CONFIG_FILE="/nonexistent")
        self.env.pop("KUBECONFIG", None)
        # each scenario its own result cache (docs/kctl.md, "The result cache")
        self.env["KCTL_CACHE_DIR"] = os.path.join(self.tmp, "cache")
        text = open(os.path.join(self.tmp, "affine.yaml"), encoding="utf-8").read()
        kube = dict({"gpus": 0}, **kube)
        extra = "".join(f"    {k}: {json.dumps(v)}\n" for k, v in kube.items())
        text = text.replace("session:\n", "evaluator:\n  backend: kubernetes\n"
                            f"  storage: s3://{bucket}/runs\n"
                            f"  s3: {{endpoint: \"{env('S3_ENDPOINT')}\"}}\n"
                            f"  kubernetes:\n    kubeconfig: {kc}\n    image: evalpod:test\n"
                            "    variants_per_pod: 1\n" + extra + "session:\n", 1)
        # the confirmation (docs/kctl.md) is exercised by kctl.py and kctl_s3.py
        text = text.replace("confirm_passes: 2\n", "confirm_passes: 0\n", 1)
        self.spec = os.path.join(self.tmp, "kube.yaml")
        with open(self.spec, "w") as f:
            f.write(text)
        s3tool = os.path.join(os.path.dirname(self.kctl), "..", "tests", "s3tool")
        subprocess.run([s3tool, "mb", f"s3://{bucket}"], capture_output=True, timeout=60,
                       env=dict(self.env, S3_ENDPOINT=env("S3_ENDPOINT")))
        print(f"-- {label}", flush=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run(self, args, timeout=600):
        return subprocess.run([self.kctl] + args, env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def results(self, sid, rnd):
        d = os.path.join(self.tmp, "runs", sid, "rounds", f"r{rnd:03d}", "results")
        return {n[:-5]: json.load(open(os.path.join(d, n))) for n in
                (os.listdir(d) if os.path.isdir(d) else [])
                if n.endswith(".json") and n != "summary.json" and ".infra-" not in n}


def admitter(dbl, stop, seen, faults=None, before=None, expire=False):
    """Plays Kueue: sees each suspended Job, records it, admits it.  before(job)
    runs first; expire moves the admitted Job past its deadline a second later."""
    done = set()
    while not stop.is_set():
        try:
            for j in dbl.jobs():
                name = j["metadata"]["name"]
                if j["spec"].get("suspend") and name not in done:
                    seen.append(json.loads(json.dumps(j)))
                    if before:
                        before(j)
                    if faults:
                        dbl.control({"pod_faults": {name: faults}})
                    dbl.control({"admit": name})
                    done.add(name)
                    if expire:
                        time.sleep(1)
                        dbl.control({"expire": name})
        except Exception:
            pass
        time.sleep(0.2)


def run_admitted(s, dbl, **kw):
    """kctl start --rounds 1 with an admitter beside it; (result, Jobs seen)."""
    stop, seen = threading.Event(), []
    t = threading.Thread(target=admitter, args=(dbl, stop, seen), kwargs=kw, daemon=True)
    t.start()
    r = s.run(["start", s.spec, "--rounds", "1"])
    stop.set()
    t.join()
    return r, seen


def test_indexed_kueue(args, dbl):
    with Scenario(args, dbl, "Indexed Job, created suspended, admitted as Kueue would",
                  "kd-indexed", {"queue": "kctl"}) as s:
        stop, seen = threading.Event(), []
        t = threading.Thread(target=admitter, args=(dbl, stop, seen), daemon=True)
        t.start()
        r = s.run(["start", s.spec, "--rounds", "1"])
        stop.set()
        t.join()
        check(r.returncode == 0, f"kctl completes on a 1.30 server ({r.stderr[-300:]!r})")
        sid = sid_of(r)
        res = s.results(sid, 1)
        check(len(res) >= 3 and all(v.get("status") == "ok" for v in res.values()),
              f"every shard's results came back ({len(res)})")
        # Within a round the Job's pod counts are the progress shown.
        done = re.findall(r"round 1: Job \S+: (\d+) of (\d+) shard\(s\) done", r.stderr)
        check(done and int(done[-1][0]) == int(done[-1][1]) >= 3,
              f"round 1's progress lines count its shards up to all of them ({done})")
        r1 = [j for j in seen if j["metadata"]["labels"].get("kctl.dev/round") == "1"]
        check(len(r1) == 1, f"round 1 is one Job ({len(r1)})")
        if r1:
            spec = r1[0]["spec"]
            check(spec.get("completionMode") == "Indexed" and spec.get("completions", 0) >= 3,
                  "Indexed, one completion per shard")
            check(spec.get("suspend") is True and r1[0]["metadata"]["labels"].get(
                "kueue.x-k8s.io/queue-name") == "kctl", "created suspended, for the queue")
            rules = spec.get("podFailurePolicy", {}).get("rules", [])
            check(any(x.get("action") == "FailIndex" for x in rules)
                  and spec.get("backoffLimitPerIndex") is not None,
                  "podFailurePolicy with FailIndex and backoffLimitPerIndex")
            names = [e["name"] for e in spec["template"]["spec"]["containers"][0]["env"]]
            check(names == [f"EVALPOD_BATCH_URL_{i}" for i in range(spec["completions"])],
                  "one batch URL per index")
            urls = [e["value"] for e in spec["template"]["spec"]["containers"][0]["env"]]
            exp = [int(u.split("X-Amz-Expires=")[1].split("&")[0]) for u in urls
                   if "X-Amz-Expires=" in u]
            dl = spec.get("activeDeadlineSeconds", 0)
            check(exp and dl > 0 and min(exp) >= dl + 60,
                  f"the batch URLs outlive the Job's deadline ({exp[:1]} s vs {dl} s)")


def test_faults(args, dbl):
    with Scenario(args, dbl, "429, 500, a cut watch, slow answers, 410 Gone", "kd-faults",
                  {}) as s:
        dbl.control(method="DELETE")
        dbl.control({"plan": ["429", "500", {"fault": "cut-event", "path": "watch"},
                              "slow:2", {"fault": "gone", "path": "watch"}]})
        r = s.run(["start", s.spec, "--rounds", "1"])
        c = dbl.control()
        check(r.returncode == 0, f"kctl rides out the faults ({r.stderr[-300:]!r})")
        served = c.get("faults_served", {})
        served = sum(served.values()) if isinstance(served, dict) else served
        check(served >= 5, f"the faults were served ({c.get('faults_served')})")
        check("listing again" in r.stderr, "410 Gone made kctl list again")
        # The retried failures other than the 429, the 500 and the 410: the cut watch.
        cut = [ln for ln in r.stderr.splitlines() if "trying again in" in ln
               and not any(c in ln for c in (" 429", " 500", " 410", "HTTP 429", "HTTP 500"))]
        check(cut and not any("HTTP 200" in ln for ln in cut),
              f"a cut watch is reported with curl's error, not as 'HTTP 200' ({cut[:2]})")
        check(c.get("watch_connections", 0) >= 3, f"the watch was resumed "
                                                  f"({c.get('watch_connections')} connections)")
        jobs = [j for j in dbl.jobs() if j["metadata"].get("annotations", {}).get(
            "kctl.dev/session-id") == sid_of(r)]
        creates = c.get("requests", {}).get("POST /apis/batch/v1/namespaces/{ns}/jobs", 0)
        check(creates <= len(jobs) + 2, f"creates retried, not duplicated ({creates} POSTs, "
                                        f"{len(jobs)} Jobs)")


def test_cancel_refused(args, dbl):
    with Scenario(args, dbl, "kctl cancel deletes the Jobs first; a refusal cancels nothing",
                  "kd-cancel", {"queue": "kctl"}) as s:
        dbl.control(method="DELETE")
        proc = subprocess.Popen([s.kctl, "start", s.spec, "--rounds", "1"], env=s.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, text=True)
        try:
            sid = proc.stdout.readline().strip()
            deadline, mine = time.time() + 300, []
            while time.time() < deadline and proc.poll() is None and not mine:
                mine = [j for j in dbl.jobs() if j["metadata"].get("annotations", {}).get(
                    "kctl.dev/session-id") == sid]
                time.sleep(0.2)
            check(bool(mine), f"the session created its (suspended) Job ({sid})")
            dbl.control({"plan": [{"fault": "403", "verb": "DELETE", "path": "/jobs"}]})
            r = s.run(["cancel", sid])
            st = json.loads(s.run(["status", sid, "-o", "json"]).stdout or "{}")
            check(r.returncode == 1 and "403" in r.stderr and "is not cancelled" in r.stderr
                  and "Sanitizer" not in r.stderr,
                  f"a refused delete: exit 1, the store's answer, 'not cancelled' "
                  f"({r.returncode}: {r.stderr[-300:]!r})")
            check(st.get("state") == "running" and proc.poll() is None,
                  f"the session is still running, its kctl too ({st.get('state')})")
            r = s.run(["cancel", sid])
            check(r.returncode == 0 and "deleted the session's Kubernetes Jobs" in r.stderr,
                  f"cancel again: exit 0, the Jobs deleted ({r.returncode}: "
                  f"{r.stderr[-300:]!r})")
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                pass
            st = json.loads(s.run(["status", sid, "-o", "json"]).stdout or "{}")
            check(proc.poll() is not None and st.get("state") == "cancelled",
                  f"the session's kctl stops; the state is cancelled ({st.get('state')})")
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()


def start_waiting(s, dbl):
    """kctl start in the background on a queue nobody admits: (process, session id,
    its round-0 Job or None once it is created)."""
    proc = subprocess.Popen([s.kctl, "start", s.spec, "--rounds", "1"], env=s.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True)
    sid = proc.stdout.readline().strip()
    deadline, mine = time.time() + 300, []
    while time.time() < deadline and proc.poll() is None and not mine:
        mine = [j for j in dbl.jobs() if j["metadata"].get("annotations", {}).get(
            "kctl.dev/session-id") == sid]
        time.sleep(0.2)
    return proc, sid, (mine[0] if mine else None)


def test_cancel_force(args, dbl):
    with Scenario(args, dbl, "kctl cancel --force: a cluster gone for good", "kd-cancel-force",
                  {"queue": "kctl"}) as s:
        dbl.control(method="DELETE")
        proc, sid, job = start_waiting(s, dbl)
        try:
            check(job is not None, f"the session created its (suspended) Job ({sid})")
            name = job["metadata"]["name"] if job else "?"
            label = job["metadata"]["labels"]["kctl.dev/session"] if job else "?"
            dbl.control({"plan": [{"fault": "403", "verb": "DELETE", "path": "/jobs",
                                   "times": 50}]})
            r = s.run(["cancel", sid, "--force"])
            dbl.control(method="DELETE")
            st = json.loads(s.run(["status", sid, "-o", "json"]).stdout or "{}")
            check(r.returncode == 0 and "403" in r.stderr and st.get("state") == "cancelled",
                  f"the delete fails, the session is cancelled anyway, exit 0 "
                  f"({r.returncode}, {st.get('state')}: {r.stderr[-400:]!r})")
            check(f"cancelling session {sid} anyway (--force)" in r.stderr and name in r.stderr,
                  f"the warning names the Job that may remain ({name})")
            check(f"kubectl delete jobs -n kctl -l kctl.dev/session={label}" in r.stderr,
                  "and the command that removes the session's Jobs later")
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                pass
            check(proc.poll() is not None, "the session's kctl stops")
            check(any(j["metadata"]["name"] == name for j in dbl.jobs()),
                  "the Job is still there: nothing pretended it was deleted")
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()


def test_delete_kube_session(args, dbl):
    with Scenario(args, dbl, "kctl delete of an interrupted Kubernetes session needs cancel "
                  "or --force", "kd-delete", {"queue": "kctl"}) as s:
        dbl.control(method="DELETE")
        proc, sid, job = start_waiting(s, dbl)
        try:
            check(job is not None, f"the session created its (suspended) Job ({sid})")
            proc.terminate()
            proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
        st = json.loads(s.run(["status", sid, "-o", "json"]).stdout or "{}")
        check(proc.returncode == 130 and st.get("state") == "paused",
              f"SIGTERM pauses the session, its Job left running ({proc.returncode}, "
              f"{st.get('state')})")
        r = s.run(["delete", sid])
        st = json.loads(s.run(["status", sid, "-o", "json"]).stdout or "{}")
        check(r.returncode == 1 and "runs on Kubernetes and is paused" in r.stderr
              and f"kctl cancel {sid}" in r.stderr and st.get("state") == "paused"
              and "Sanitizer" not in r.stderr,
              f"delete refuses, pointing at cancel; the session stays ({r.returncode}: "
              f"{r.stderr[-300:]!r})")
        label = job["metadata"]["labels"]["kctl.dev/session"] if job else "?"
        r = s.run(["delete", sid, "--force"])
        gone = s.run(["status", sid, "-o", "json"])
        check(r.returncode == 0 and f"deleted session {sid}" in r.stdout
              and gone.returncode != 0, f"--force deletes it ({r.returncode}: "
                                        f"{r.stderr[-300:]!r})")
        check(f"kubectl delete jobs -n kctl -l kctl.dev/session={label}" in r.stderr
              and (job or {}).get("metadata", {}).get("name", "?") in r.stderr,
              "and warns which Jobs may remain, with the command to remove them")


def test_sigterm_during_api_retry(args, dbl):
    with Scenario(args, dbl, "SIGTERM while kctl waits out a 503's Retry-After: 30",
                  "kd-sigterm-retry", {}) as s:
        dbl.control(method="DELETE")
        dbl.control({"plan": [{"fault": "503", "verb": "GET", "path": "/jobs", "times": 100,
                               "retry_after": 30}]})
        proc = subprocess.Popen([s.kctl, "start", s.spec, "--rounds", "1"], env=s.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, text=True)
        lines, seen = [], threading.Event()

        def read():
            for line in proc.stderr:
                lines.append(line)
                if "retrying in 30000 ms" in line:
                    seen.set()
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            check(seen.wait(300) and proc.poll() is None,
                  "kctl pauses 30 s before asking the refusing API server again")
            t0 = time.monotonic()
            proc.terminate()
            proc.wait(timeout=300)
            took = time.monotonic() - t0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            dbl.control(method="DELETE")
        reader.join(60)
        sid = proc.stdout.read().strip()
        st = json.loads(s.run(["status", sid, "-o", "json"]).stdout or "{}")
        # far below the pause, and generous for a busy machine
        check(took < 20, f"kctl exits soon after SIGTERM, not after the pause ({took:.1f} s)")
        check(proc.returncode == 130 and st.get("state") == "paused"
              and f"interrupted; go on with: kctl resume {sid}" in "".join(lines),
              f"as an interrupt does: 130, paused, the hint ({proc.returncode}, "
              f"{st.get('state')}: {''.join(lines)[-300:]!r})")


def test_invalid(args, dbl):
    with Scenario(args, dbl, "422 Invalid keeps the Status and its causes", "kd-invalid",
                  {"gpus": 1, "gpu_resource": "bogus resource"}) as s:
        r = s.run(["start", s.spec, "--rounds", "1"])
        check(r.returncode != 0, "kctl fails on 422")
        check("422 Invalid" in r.stderr and "resources.limits" in r.stderr,
              f"the reason and the field are in the message ({r.stderr[-300:]!r})")


def test_pod_failures(args, dbl):
    with Scenario(args, dbl, "an OOMKilled pod is the infrastructure's", "kd-oom",
                  {"queue": "kctl", "backoff_limit": 0}) as s:
        stop, seen = threading.Event(), []
        t = threading.Thread(target=admitter, args=(dbl, stop, seen, "oom"), daemon=True)
        t.start()
        r = s.run(["start", s.spec, "--rounds", "1"])
        stop.set()
        t.join()
        sid = sid_of(r)
        res = s.results(sid, 0).get("r00-start", {})
        check(res.get("status") == "infra_error" and "OOMKilled" in json.dumps(res),
              f"OOMKilled becomes an infra_error result naming it ({json.dumps(res)[:200]})")
    with Scenario(args, dbl, "an Unschedulable pod fails its Job after pending_timeout_s",
                  "kd-unsched", {"queue": "kctl", "pending_timeout_s": 10}) as s:
        stop, seen = threading.Event(), []
        t = threading.Thread(target=admitter, args=(dbl, stop, seen, "unschedulable"),
                             daemon=True)
        t.start()
        r = s.run(["start", s.spec, "--rounds", "1"])
        stop.set()
        t.join()
        res = s.results(sid_of(r), 0).get("r00-start", {})
        check(res.get("status") == "infra_error" and "Unschedulable" in json.dumps(res),
              f"Unschedulable becomes an infra_error result naming it ({json.dumps(res)[:160]})")
        check("deleting it" in r.stderr, "the stuck Job was deleted")
    with Scenario(args, dbl, "an evicted pod is ignored by the podFailurePolicy and replaced",
                  "kd-evict", {"queue": "kctl", "backoff_limit": 0}) as s:
        stop, seen = threading.Event(), []
        t = threading.Thread(target=admitter, args=(dbl, stop, seen, ["evicted", "exec"]),
                             daemon=True)
        t.start()
        r = s.run(["start", s.spec, "--rounds", "1"])
        stop.set()
        t.join()
        res = s.results(sid_of(r), 0).get("r00-start", {})
        check(r.returncode == 0 and res.get("status") == "ok",
              f"the replacement pod's result stands though backoffLimit is 0 "
              f"({res.get('status')}, {r.stderr[-200:]!r})")
    with Scenario(args, dbl, "evalpod refusing its batch fails the session", "kd-refused",
                  {"queue": "kctl"}) as s:
        stop, seen = threading.Event(), []
        t = threading.Thread(target=admitter, args=(dbl, stop, seen, "fail:1"), daemon=True)
        t.start()
        r = s.run(["start", s.spec, "--rounds", "1"])
        stop.set()
        t.join()
        check(r.returncode != 0 and "refused the batch" in r.stderr,
              f"exit 1 in a pod fails the session ({r.stderr[-200:]!r})")


def batch_deadline(s, sid, attempt):
    """compile_timeout_s + run_timeout_s of round 0's batch of that attempt (0: none)."""
    path = os.path.join(s.tmp, "runs", sid, "rounds", "r000", f"batch-a{attempt}-s0.json")
    if not os.path.exists(path):
        return 0
    lim = json.load(open(path)).get("limits", {})
    # evalpod's defaults (docs/evalbatch.md, limits)
    return lim.get("compile_timeout_s", 120) + lim.get("run_timeout_s", 120)


def test_reference_slow(args, dbl):
    with Scenario(args, dbl, "evalpod's exit 4 in a pod (the reference was slow) is retried "
                  "with the deadline doubled", "kd-slow", {"queue": "kctl",
                                                           "backoff_limit": 0}) as s:
        first = []

        def slow_once(j):
            if not first:  # round 0's first Job: its evalpod says the reference was slow
                first.append(j["metadata"]["name"])
                dbl.control({"pod_faults": {first[0]: "fail:4"}})

        r, seen = run_admitted(s, dbl, before=slow_once)
        sid = sid_of(r)
        check(r.returncode == 0, f"the session completes ({r.stderr[-300:]!r})")
        check("the reference ran past its" in r.stderr and "in 1 pod(s) (evalpod exit status 4)"
              in r.stderr and "the machine is slow, not the candidates; evaluating again with "
              "the deadline doubled" in r.stderr,
              f"the warning says the reference was slow, in the pod ({r.stderr[-600:]!r})")
        a0, a1 = batch_deadline(s, sid, 0), batch_deadline(s, sid, 1)
        check(a0 > 0 and a1 >= 2 * a0 - 1e-6,
              f"the next attempt's batch has the check deadline doubled ({a0} s, then {a1} s)")
        res = os.listdir(os.path.join(s.tmp, "runs", sid, "rounds", "r000", "results"))
        check(s.results(sid, 0).get("r00-start", {}).get("status") == "ok"
              and not any(".infra-" in x for x in res),
              f"the start's result is its own, with no infra_error set aside ({res})")
    with Scenario(args, dbl, "exit 4 every time: the session stops, naming the limit to raise",
                  "kd-slow-always", {"queue": "kctl", "backoff_limit": 0}) as s:
        r, seen = run_admitted(s, dbl, faults="fail:4")
        sid = sid_of(r)
        r0 = [j for j in seen if j["metadata"]["labels"].get("kctl.dev/round") == "0"]
        check(r.returncode != 0 and len(r0) == 3 and "Sanitizer" not in r.stderr,
              f"three attempts, then kctl fails ({r.returncode}, {len(r0)} Jobs)")
        check(f"go on with a higher limit: kctl resume {sid} --set limits.run_timeout_s="
              in r.stderr and "the reference ran past its" in r.stderr,
              f"the message names the slow reference and the limit ({r.stderr[-400:]!r})")
        st = json.loads(s.run(["status", sid, "-o", "json"]).stdout or "{}")
        check(st.get("state") not in ("done", None) and not s.results(sid, 0),
              f"nothing is recorded against the start; the session can be resumed "
              f"({st.get('state')}, {list(s.results(sid, 0))})")


def test_adoption(args, dbl):
    with Scenario(args, dbl, "a create whose reply is lost is adopted on 409", "kd-lost",
                  {}) as s:
        dbl.control(method="DELETE")
        dbl.control({"plan": [{"fault": "lost-reply", "verb": "POST", "path": "/jobs"}]})
        r = s.run(["start", s.spec, "--rounds", "1"])
        c = dbl.control()
        sid = sid_of(r)
        check(r.returncode == 0 and c.get("faults_served", {}).get("lost-reply") == 1,
              f"kctl completes though a create's reply was lost ({r.stderr[-200:]!r})")
        check("was created before; adopting it" in r.stderr, "the 409 AlreadyExists is adopted")
        jobs = [j for j in dbl.jobs() if j["metadata"].get("annotations", {}).get(
            "kctl.dev/session-id") == sid]
        creates = c.get("requests", {}).get("POST /apis/batch/v1/namespaces/{ns}/jobs", 0)
        check(creates == len(jobs) + 1 and len(s.results(sid, 0)) == 1,
              f"one Job per create, the adopted one's result read ({creates} POSTs, "
              f"{len(jobs)} Jobs)")
    with Scenario(args, dbl, "a Job of that name from another session is not adopted",
                  "kd-squat", {"queue": "kctl"}) as s:
        squat = []

        def squatter(j):
            # creates the name kctl's round 1 will use, for another session
            name = j["metadata"]["name"]
            if "-r000-" not in name or squat:
                return
            other = {"apiVersion": "batch/v1", "kind": "Job",
                     "metadata": {"name": name.replace("-r000-", "-r001-"),
                                  "annotations": {"kctl.dev/session-id": "someone-else"}},
                     "spec": {"suspend": True, "template": {"spec": {
                         "restartPolicy": "Never",
                         "containers": [{"name": "other", "image": "other:1"}]}}}}
            dbl.create_job(other)
            squat.append(other["metadata"]["name"])

        r, _ = run_admitted(s, dbl, before=squatter)
        check(bool(squat) and r.returncode != 0 and
              f"Job '{squat[0] if squat else '?'}' exists and is not this session's (its "
              "kctl.dev/session-id annotation: someone-else)" in r.stderr,
              f"kctl refuses the other session's Job ({r.stderr[-200:]!r})")
        other = [j for j in dbl.jobs() if j["metadata"]["name"] in squat]
        check(len(other) == 1 and other[0]["metadata"]["annotations"].get(
            "kctl.dev/session-id") == "someone-else", "and leaves it alone")


def test_deadline(args, dbl):
    with Scenario(args, dbl, "a Job past activeDeadlineSeconds is the infrastructure's",
                  "kd-deadline", {"queue": "kctl", "active_deadline_s": 60}) as s:
        r, seen = run_admitted(s, dbl, faults="hang", expire=True)
        res = s.results(sid_of(r), 0).get("r00-start", {})
        check(res.get("status") == "infra_error" and "DeadlineExceeded" in json.dumps(res),
              f"DeadlineExceeded becomes an infra_error result naming it "
              f"({json.dumps(res)[:200]})")
        check(all(j["spec"].get("activeDeadlineSeconds") == 60 for j in seen) and len(seen) >= 2,
              f"every attempt's Job carried the deadline, and it was retried ({len(seen)} Jobs)")


def test_exec_plugin(args, dbl):
    tmp = tempfile.mkdtemp(prefix="kctl-exec-")
    plugin = os.path.join(tmp, "cred.sh")
    count = os.path.join(tmp, "runs")
    with open(plugin, "w") as f:
        f.write("#!/bin/sh\necho run >> " + count + "\n"
                "cat <<EOF\n{\"apiVersion\": \"client.authentication.k8s.io/v1\", "
                "\"kind\": \"ExecCredential\", \"status\": {\"token\": \"" + TOKEN + "\", "
                "\"expirationTimestamp\": \"2099-01-01T00:00:00Z\"}}\nEOF\n")
    os.chmod(plugin, 0o755)
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": plugin,
                     "interactiveMode": "Never"}}
    try:
        with Scenario(args, dbl, "an exec credential plugin", "kd-exec", {}, user=user) as s:
            r = s.run(["start", s.spec, "--rounds", "1"])
            check(r.returncode == 0, f"kctl authenticates through the plugin ({r.stderr[-200:]!r})")
            if r.returncode:
                print(dbl.pod_logs())
            runs = open(count).read().count("run") if os.path.exists(count) else 0
            check(runs == 1, f"a token valid until 2099 is fetched once per kctl ({runs})")
            check(TOKEN not in r.stderr + r.stdout, "the token is not printed")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_outage(args, dbl):
    with Scenario(args, dbl, "lists failing for longer than http.h's retries share the "
                  "API retry budget", "kd-outage", {}) as s:
        dbl.control(method="DELETE")
        # about 12 s of 503s (Retry-After: 1) on the Job lists: three times what
        # http.h's own retries cover
        dbl.control({"plan": [{"fault": "503", "verb": "GET", "path": "/jobs", "times": 12}]})
        r = s.run(["start", s.spec, "--rounds", "1"])
        c = dbl.control()
        check(c.get("faults_served", {}).get("503") == 12, f"the 503s were served "
                                                          f"({c.get('faults_served')})")
        check(r.returncode == 0, f"kctl rides out the outage ({r.stderr[-400:]!r})")
        check("left of evaluator.kubernetes.api_retry_s" in r.stderr,
              "kctl said how long it goes on trying")
    with Scenario(args, dbl, "an outage longer than api_retry_s fails the round, saying so",
                  "kd-outage-long", {"api_retry_s": 3}) as s:
        dbl.control(method="DELETE")
        dbl.control({"plan": [{"fault": "503", "verb": "GET", "path": "/jobs", "times": 40}]})
        r = s.run(["start", s.spec, "--rounds", "1"])
        dbl.control(method="DELETE")
        check(r.returncode != 0 and "503" in r.stderr and "api_retry_s" in r.stderr
              and "giving up" in r.stderr, f"the message names the status and the budget "
                                           f"({r.stderr[-400:]!r})")


def test_auth_after_loss(args, dbl):
    with Scenario(args, dbl, "a 403 right after a lost connection is transient", "kd-403-loss",
                  {}) as s:
        dbl.control(method="DELETE")
        # the create's connection is lost, then the server (starting again) refuses twice
        dbl.control({"plan": [{"fault": "close", "verb": "POST", "path": "/jobs"},
                              {"fault": "403", "verb": "POST", "path": "/jobs", "times": 2}]})
        r = s.run(["start", s.spec, "--rounds", "1"])
        c = dbl.control()
        check(sum(c.get("faults_served", {}).values()) == 3, f"the faults were served "
                                                             f"({c.get('faults_served')})")
        check(r.returncode == 0, f"kctl retries the 403 and completes ({r.stderr[-400:]!r})")
        check("transient: it follows a lost connection" in r.stderr,
              "the message says why the 403 was retried")
    with Scenario(args, dbl, "a 403 out of the blue is final", "kd-403-final", {}) as s:
        dbl.control(method="DELETE")
        dbl.control({"plan": [{"fault": "403", "verb": "POST", "path": "/jobs"}]})
        r = s.run(["start", s.spec, "--rounds", "1"])
        dbl.control(method="DELETE")
        check(r.returncode != 0 and "403" in r.stderr and "(final: the connection to the API "
              "server had not been lost" in r.stderr,
              f"kctl fails at once, saying the 403 is final and why ({r.stderr[-400:]!r})")
        check("trying again" not in r.stderr, "it was not retried")


def test_undeletable(args, dbl):
    with Scenario(args, dbl, "a stuck Job that cannot be deleted fails the round",
                  "kd-undeletable", {"queue": "kctl", "pending_timeout_s": 10}) as s:
        dbl.control(method="DELETE")
        dbl.control({"plan": [{"fault": "403", "verb": "DELETE", "path": "/jobs/",
                               "times": 5}]})
        r, seen = run_admitted(s, dbl, faults="image-pull")
        dbl.control(method="DELETE")
        name = seen[0]["metadata"]["name"] if seen else "?"
        check(r.returncode != 0 and f"Job {name} is stuck" in r.stderr
              and "could not delete it" in r.stderr and "403" in r.stderr,
              f"the round fails, naming the Job and the refusal ({r.stderr[-500:]!r})")
        check(f"kubectl delete job -n kctl {name}" in r.stderr, "and says what to do")
        check("kctl needs the RBAC verb 'delete' on jobs.batch in namespace kctl" in r.stderr,
              "and names the RBAC verb kctl lacks")
        left = [j for j in dbl.jobs() if j["metadata"]["name"] == name]
        check(len(left) == 1, "the Job is still there: nothing pretended it was gone")


def test_eval(args, dbl):
    with Scenario(args, dbl, "kctl eval on the cluster, and --backend local beside it",
                  "kd-eval", {}) as s:
        src = open(os.path.join(s.tmp, "affine.cl"), encoding="utf-8").read()
        wrong = os.path.join(s.tmp, "wrong.cl")
        with open(wrong, "w", encoding="utf-8") as f:
            f.write(src.replace("2.0f, 1.0f)", "2.0f, 3.0f)"))
        fine = os.path.join(s.tmp, "fine.cl")
        with open(fine, "w", encoding="utf-8") as f:
            f.write(src.replace("// y = 2x + 1", "// y = 2x + 1 (written out again)"))
        out = os.path.join(s.tmp, "eval-out")
        before = len(dbl.jobs())
        r = s.run(["eval", s.spec, "--kernel", fine, "--kernel", wrong, "--out", out,
                   "--threshold", "50", "-o", "json"])
        try:
            doc = json.loads(r.stdout)
        except ValueError:
            doc = {}
        st = {k.get("file"): k.get("status") for k in doc.get("kernels", [])}
        check(r.returncode == 1 and st == {fine: "ok", wrong: "incorrect"}
              and doc.get("verdict") == "incorrect",
              f"on the cluster: the wrong kernel fails, the other passes, exit 1 "
              f"({r.returncode}, {st}, {r.stderr[-300:]!r})")
        jobs = [j for j in dbl.jobs() if j["metadata"].get("annotations", {}).get(
            "kctl.dev/session-id") == doc.get("session")]
        check(len(jobs) >= 1 and len(dbl.jobs()) > before,
              f"the evaluation ran as the session's Job(s) ({len(jobs)})")
        check(os.path.isfile(os.path.join(out, "summary.md"))
              and os.path.isdir(doc.get("results", "/nonexistent")),
              "its summary and the results fetched from object storage are in --out")
        before = len(dbl.jobs())
        r = s.run(["eval", s.spec, "--kernel", fine, "--backend", "local", "--out", out,
                   "--threshold", "50"])
        check(r.returncode == 0 and len(dbl.jobs()) == before,
              f"--backend local evaluates here, no Job ({r.returncode}, {r.stderr[-200:]!r})")


def test_cache(args, dbl):
    with Scenario(args, dbl, "the result cache: round 0 evaluated, the rounds after it cached",
                  "kd-cache", {}) as s:
        def jobs_of(sid):
            return [j["metadata"]["labels"].get("kctl.dev/round") for j in dbl.jobs()
                    if j["metadata"].get("annotations", {}).get("kctl.dev/session-id") == sid]

        r1 = s.run(["start", s.spec, "--rounds", "1"])
        sid1 = sid_of(r1)
        check(r1.returncode == 0 and sorted(set(jobs_of(sid1))) == ["0", "1"],
              f"a first session runs Jobs for rounds 0 and 1 ({r1.returncode}, "
              f"{jobs_of(sid1)}: {r1.stderr[-300:]!r})")
        r2 = s.run(["start", s.spec, "--rounds", "1"])
        sid2 = sid_of(r2)
        st2 = json.loads(s.run(["status", sid2, "-o", "json"]).stdout or "{}")
        check(r2.returncode == 0 and jobs_of(sid2) == ["0"]
              and st2.get("cached") == st2.get("evaluations", 0) - 1 > 0,
              f"a second identical session runs round 0 only (the device comes from its "
              f"first result), round 1 from the cache ({jobs_of(sid2)}, cached "
              f"{st2.get('cached')} of {st2.get('evaluations')}: {r2.stderr[-300:]!r})")


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    skip = need_env("S3_ENDPOINT")
    if skip:
        return skip
    args = [os.path.abspath(a) for a in sys.argv[1:]]
    tmp = tempfile.mkdtemp(prefix="kctl-double-")
    dbl = Double(args[3], args[1], tmp)
    try:
        # KCTL_TEST_ONLY=a,b: only the tests whose names contain a or b
        only = os.environ.get("KCTL_TEST_ONLY", "").split(",")
        run([t for t in (test_indexed_kueue, test_faults, test_invalid, test_pod_failures,
                         test_adoption, test_deadline, test_exec_plugin, test_outage,
                         test_auth_after_loss, test_undeletable, test_cancel_refused,
                         test_reference_slow, test_cancel_force, test_delete_kube_session,
                         test_sigterm_during_api_retry, test_eval, test_cache)
             if any(o in t.__name__ for o in only)], args, dbl)
    finally:
        dbl.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
