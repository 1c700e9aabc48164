#!/usr/bin/env python3
"""kctl's Kubernetes backend against a real kube-apiserver and Job controller.

usage: kctl_kube.py KCTL EVALPOD DATA_DIR REPO_ROOT

Run under tests/peers/with-s3.sh and tests/peers/with-kube.sh: a real
kube-apiserver v1.20.2 with its kube-controller-manager (KUBE_SERVER,
KUBE_CA, KUBE_ADMIN_TOKEN, KUBE_USER_TOKEN, KUBE_USER_CERT/KEY,
KUBE_NAMESPACE) and a real S3 store (S3_ENDPOINT ...).  There is no kubelet:
tests/peers/fake_kubelet.py plays the node, running evalpod for each Pod
with the Pod's environment (nothing else: the presigned batch URL) and
patching the Pod's status, so the real Job controller completes or fails
the Jobs.  kctl authenticates with the ServiceAccount token that
manifests/rbac.yaml's account gets, and with a client certificate bound to
the same Role: the Role's verbs are all kctl needs.
"""
import base64
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

from checks import SANITIZER_ENV, check, need_env, pod_env, session_id, summary

SPEC_FILES = ("affine.cl", "affine_ref.cl", "affine.yaml")


def env(name):
    return os.environ[name]


CTX = ssl.create_default_context(cafile=os.environ.get("KUBE_CA"))


def api(method, path, body=None, token=None, ok=(200, 201, 202)):
    req = urllib.request.Request(env("KUBE_SERVER") + path, method=method,
                                 data=None if body is None else json.dumps(body).encode())
    req.add_header("Authorization", "Bearer " + (token or env("KUBE_ADMIN_TOKEN")))
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, context=CTX, timeout=30) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def apply_rbac(repo, ns):
    """manifests/rbac.yaml in namespace ns, plus the cert user bound to its Role."""
    paths = {"ServiceAccount": f"/api/v1/namespaces/{ns}/serviceaccounts",
             "Role": f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
             "RoleBinding": f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings"}
    with open(os.path.join(repo, "manifests", "rbac.yaml"), encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    for d in docs:
        d["metadata"]["namespace"] = ns
        for s in d.get("subjects", []):
            s["namespace"] = ns
        st, body = api("POST", paths[d["kind"]], d)
        check(st in (201, 409), f"rbac.yaml: {d['kind']} created ({st})")
    rb = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
          "metadata": {"name": "kctl-cert-user", "namespace": ns},
          "subjects": [{"kind": "User", "name": "kctl-cert-user",
                        "apiGroup": "rbac.authorization.k8s.io"}],
          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "kctl"}}
    api("POST", paths["RoleBinding"], rb)


def sa_token(ns):
    """The token of the kctl ServiceAccount (1.20 keeps it in a Secret)."""
    for _ in range(100):
        st, sa = api("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/kctl")
        names = [s["name"] for s in sa.get("secrets", [])] if st == 200 else []
        if names:
            st, sec = api("GET", f"/api/v1/namespaces/{ns}/secrets/{names[0]}")
            if st == 200 and "token" in sec.get("data", {}):
                return base64.b64decode(sec["data"]["token"]).decode()
        time.sleep(0.2)
    return None


def kubeconfig(path, ns, token=None, cert=None, key=None):
    user = {"token": token} if token else {"client-certificate": cert, "client-key": key}
    cfg = {"apiVersion": "v1", "kind": "Config", "current-context": "test",
           "clusters": [{"name": "test", "cluster": {"server": env("KUBE_SERVER"),
                                                     "certificate-authority": env("KUBE_CA")}}],
           "users": [{"name": "u", "user": user}],
           "contexts": [{"name": "test", "context": {"cluster": "test", "user": "u",
                                                     "namespace": ns}}]}
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(cfg, f)
    os.chmod(path, 0o600)
    return path


class Scenario:
    def __init__(self, args, label, bucket, kube, image="evalpod:test"):
        self.kctl, self.evalpod, data, self.repo = args
        self.tmp = tempfile.mkdtemp(prefix="kctl-kube-")
        for name in SPEC_FILES:
            shutil.copy(os.path.join(data, name), self.tmp)
        self.env = dict(os.environ, KCTL_STATE_DIR=os.path.join(self.tmp, "state"),
                        XDG_CACHE_HOME=os.path.join(self.tmp, "cache"),
                        AWS_ACCESS_KEY_ID=env("S3_ACCESS_KEY"),
                        AWS_SECRET_ACCESS_KEY=env("S3_SECRET_KEY"),
                        AWS_REGION=env("S3_REGION"),
                        AWS_SHARED_CREDENTIALS_FILE="/nonexistent",
                        AWS_CONFIG_FILE="/nonexistent")
        self.env.pop("KCTL_TEST_CRASH_AT", None)
        self.env.pop("KUBECONFIG", None)
        text = open(os.path.join(self.tmp, "affine.yaml"), encoding="utf-8").read()
        kspec = "".join(f"    {k}: {json.dumps(v)}\n" for k, v in kube.items())
        text = text.replace("session:\n", "evaluator:\n  backend: kubernetes\n"
                            f"  storage: s3://{bucket}/runs\n"
                            f"  s3: {{endpoint: \"{env('S3_ENDPOINT')}\"}}\n"
                            "  kubernetes:\n"
                            f"    image: {image}\n    gpus: 0\n    variants_per_pod: 2\n"
                            + kspec + "session:\n", 1)
        # the confirmation (docs/kctl.md) is exercised by kctl.py and kctl_s3.py
        text = text.replace("confirm_passes: 2\n", "confirm_passes: 0\n", 1)
        self.spec = os.path.join(self.tmp, "kube.yaml")
        with open(self.spec, "w", encoding="utf-8") as f:
            f.write(text)
        s3tool = os.path.join(os.path.dirname(self.kctl), "..", "tests", "s3tool")
        subprocess.run([s3tool, "mb", f"s3://{bucket}"], env=dict(self.env,
                       S3_ENDPOINT=env("S3_ENDPOINT")), capture_output=True, timeout=60)
        print(f"-- {label}", flush=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run(self, args, extra=None, timeout=900):
        e = dict(self.env, **(extra or {}))
        return subprocess.run([self.kctl] + args, env=e, capture_output=True, text=True,
                              timeout=timeout)

    def status(self, sid):
        r = self.run(["status", sid, "-o", "json"])
        return json.loads(r.stdout) if r.returncode == 0 else {}

    def results(self, sid, rnd):
        d = os.path.join(self.tmp, "runs", sid, "rounds", f"r{rnd:03d}", "results")
        out = {}
        for n in os.listdir(d) if os.path.isdir(d) else []:
            if n.endswith(".json") and n != "summary.json" and ".infra-" not in n:
                out[n[:-5]] = json.load(open(os.path.join(d, n)))
        return out


class Kubelet:
    def __init__(self, repo, evalpod, ns, extra=()):
        self.logs = tempfile.mkdtemp(prefix="kctl-kubelet-")
        self.p = subprocess.Popen(
            [sys.executable, os.path.join(repo, "tests", "peers", "fake_kubelet.py"),
             "--server", env("KUBE_SERVER"), "--ca", env("KUBE_CA"),
             "--token", env("KUBE_ADMIN_TOKEN"), "--namespace", ns,
             "--map", f"evalpod={evalpod}", "--log-dir", self.logs, "--max-parallel", "2",
             *[a for v in SANITIZER_ENV for a in ("--pass-env", v)],
             *extra], stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(self.logs, "kubelet.log"), "w"), env=pod_env())

    def stop(self):
        self.p.terminate()
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
        shutil.rmtree(self.logs, ignore_errors=True)


def session_jobs(ns, sid):
    st, lst = api("GET", f"/apis/batch/v1/namespaces/{ns}/jobs")
    return [j for j in lst.get("items", []) if
            j["metadata"].get("annotations", {}).get("kctl.dev/session-id") == sid]


def test_token_session(args, ns, token, kc_dir):
    kc = kubeconfig(os.path.join(kc_dir, "sa.kubeconfig"), ns, token=token)
    with Scenario(args, "ServiceAccount token of manifests/rbac.yaml, one round", "kube-sa",
                  {"kubeconfig": kc}) as s:
        r = s.run(["start", s.spec, "--rounds", "1"])
        check(r.returncode == 0, f"kctl start on the kubernetes backend exits 0 "
                                 f"({r.stderr[-400:]!r})")
        sid = session_id(r)
        st = s.status(sid)
        check(st.get("evaluations", 0) >= 4, f"every variant was evaluated in a pod "
                                             f"({st.get('evaluations')})")
        res = s.results(sid, 1)
        check(res and all(v.get("status") == "ok" for v in res.values()),
              f"round 1's results came back through the store ({len(res)})")
        jobs = session_jobs(ns, sid)
        r1 = [j for j in jobs if j["metadata"]["labels"].get("kctl.dev/round") == "1"]
        check(len(r1) >= 2, f"1.20 has no Indexed Jobs: one Job per shard ({len(r1)})")
        check(all(j["spec"].get("completionMode") in (None, "NonIndexed") for j in r1),
              "no completionMode was sent to a 1.20 server")
        check(all(any(c["type"] == "Complete" and c["status"] == "True"
                      for c in j.get("status", {}).get("conditions", [])) for j in r1),
              "the Job controller completed every Job")
        env_names = [e["name"] for j in r1
                     for e in j["spec"]["template"]["spec"]["containers"][0].get("env", [])]
        check(env_names and set(env_names) == {"EVALPOD_BATCH_URL"},
              "a pod gets nothing but its batch URL")
        check("Kubernetes v1.20.2" in r.stderr, "kctl read the server version")


def test_client_cert(args, ns, kc_dir):
    kc = kubeconfig(os.path.join(kc_dir, "cert.kubeconfig"), ns,
                    cert=env("KUBE_USER_CERT"), key=env("KUBE_USER_KEY"))
    with Scenario(args, "client certificate bound to the same Role", "kube-cert",
                  {"kubeconfig": kc}) as s:
        r = s.run(["start", s.spec, "--rounds", "1"])
        check(r.returncode == 0, f"kctl authenticates with a client certificate "
                                 f"({r.stderr[-300:]!r})")


def test_forbidden(args, ns, kc_dir):
    kc = kubeconfig(os.path.join(kc_dir, "nobody.kubeconfig"), ns,
                    token=env("KUBE_USER_TOKEN"))
    with Scenario(args, "a user without the Role", "kube-forbidden", {"kubeconfig": kc}) as s:
        r = s.run(["start", s.spec, "--rounds", "1"])
        check(r.returncode != 0, "kctl fails when RBAC forbids creating Jobs")
        check("403 Forbidden" in r.stderr and "jobs.batch is forbidden" in r.stderr,
              f"the Status reason and message are kept ({r.stderr[-300:]!r})")
        check(env("KUBE_USER_TOKEN") not in r.stderr + r.stdout, "the token is not printed")


def test_image_pull(args, ns, token, kc_dir, repo, evalpod):
    kc = kubeconfig(os.path.join(kc_dir, "sa2.kubeconfig"), ns, token=token)
    with Scenario(args, "ImagePullBackOff is the infrastructure's, retried, never the kernel's",
                  "kube-pull", {"kubeconfig": kc, "pending_timeout_s": 10},
                  image="registry.invalid/broken:1") as s:
        r = s.run(["start", s.spec, "--rounds", "1"], timeout=600)
        sid = session_id(r)
        res = s.results(sid, 0)
        start = res.get("r00-start", {})
        check(start.get("status") == "infra_error",
              f"the start variant's result is infra_error ({start.get('status')})")
        msg = json.dumps(start.get("fault", {}))
        check("ImagePullBackOff" in msg, f"the reason names ImagePullBackOff ({msg[:200]})")
        d = os.path.join(s.tmp, "runs", sid, "rounds", "r000", "results")
        aside = [n for n in os.listdir(d) if ".infra-" in n] if os.path.isdir(d) else []
        check(len(aside) == 2, f"it was retried: two earlier infra results set aside ({aside})")
        jobs = session_jobs(ns, sid)
        check(not [j for j in jobs if j.get("status", {}).get("active")],
              "the stuck Jobs were deleted")
        learn = open(os.path.join(s.tmp, "runs", sid, "learnings.md")).read() \
            if os.path.exists(os.path.join(s.tmp, "runs", sid, "learnings.md")) else ""
        check("ImagePullBackOff" not in learn, "no learning blames the kernel for it")


def test_crash_resume_cancel(args, ns, token, kc_dir):
    kc = kubeconfig(os.path.join(kc_dir, "sa3.kubeconfig"), ns, token=token)
    with Scenario(args, "kctl killed after creating Jobs: resume adopts them", "kube-crash",
                  {"kubeconfig": kc}) as s:
        r = s.run(["start", s.spec, "--rounds", "1"], extra={"KCTL_TEST_CRASH_AT": "spawned:1"})
        check(r.returncode != 0, "kctl died at the crash point")
        sid = session_id(r)
        r = s.run(["resume", sid])
        check(r.returncode == 0, f"kctl resume completes ({r.stderr[-300:]!r})")
        check("still running; waiting for them" in r.stderr or "adopting" in r.stderr
              or "from before" in r.stderr, "the resumed kctl waited for the Jobs it found")
        r1 = [j for j in session_jobs(ns, sid)
              if j["metadata"]["labels"].get("kctl.dev/round") == "1"]
        attempts = {j["metadata"]["labels"].get("kctl.dev/attempt") for j in r1}
        check(attempts == {"0"}, f"round 1 ran once: no second attempt ({attempts})")
    with Scenario(args, "kctl cancel deletes the session's Jobs", "kube-cancel",
                  {"kubeconfig": kc}) as s:
        r = s.run(["start", s.spec, "--rounds", "1"], extra={"KCTL_TEST_CRASH_AT": "spawned:0"})
        sid = session_id(r)
        check(len(session_jobs(ns, sid)) >= 1, "the crashed session left its Job behind")
        r = s.run(["cancel", sid])
        check(r.returncode == 0, f"kctl cancel exits 0 ({r.stderr[-200:]!r})")
        gone = False
        for _ in range(50):
            if not session_jobs(ns, sid):
                gone = True
                break
            time.sleep(0.2)
        check(gone, "the session's Jobs are gone")


def new_jobs(ns, before):
    st, lst = api("GET", f"/apis/batch/v1/namespaces/{ns}/jobs")
    return [j for j in lst.get("items", []) if j["metadata"]["name"] not in before]


def test_apiserver_restart(args, ns, token, kc_dir):
    """Runs with no kubelet: the round's pods stay Pending until the restart is over."""
    kc = kubeconfig(os.path.join(kc_dir, "sa4.kubeconfig"), ns, token=token)
    repo = args[3]
    with Scenario(args, "the API server stops gracefully mid-round, 10 s down, and restarts",
                  "kube-restart", {"kubeconfig": kc}) as s:
        before = {j["metadata"]["name"] for j in new_jobs(ns, set())}
        p = subprocess.Popen([s.kctl, "start", s.spec, "--rounds", "1"], env=s.env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        kubelet = None
        try:
            deadline = time.time() + 120
            while not new_jobs(ns, before) and p.poll() is None and time.time() < deadline:
                time.sleep(0.2)
            check(bool(new_jobs(ns, before)), "kctl created the round's Job")
            rs = subprocess.run(["bash", os.path.join(repo, "tests", "peers", "kube_cluster.sh"),
                                 "restart-apiserver", env("KUBE_DIR"), "10", "TERM"],
                                capture_output=True, text=True, timeout=180)
            check(rs.returncode == 0, f"the API server restarted ({rs.stderr[-300:]!r})")
            kubelet = Kubelet(repo, args[1], ns)
            try:
                out, err = p.communicate(timeout=300)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
                check(False, f"kctl finished after the restart ({err[-600:]!r})")
                return
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            if kubelet:
                kubelet.stop()
        check(p.returncode == 0, f"the session completes across the restart ({err[-600:]!r})")
        check("trying again in" in err, "kctl saw the API server go away and waited for it")
        st = s.status((out.splitlines() or [""])[0].strip())
        check(st.get("evaluations", 0) >= 4,
              f"every variant was evaluated ({st.get('evaluations')})")


def test_adopted_pending_timeout(args, ns, token, kc_dir):
    kc = kubeconfig(os.path.join(kc_dir, "sa5.kubeconfig"), ns, token=token)
    with Scenario(args, "a Job adopted by kctl resume whose pod never starts ends at "
                  "pending_timeout_s", "kube-adopt-pull",
                  {"kubeconfig": kc, "pending_timeout_s": 10},
                  image="registry.invalid/never:1") as s:
        r = s.run(["start", s.spec, "--rounds", "1"], extra={"KCTL_TEST_CRASH_AT": "spawned:0"})
        check(r.returncode != 0, "kctl died after creating round 0's Job")
        sid = session_id(r)
        jobs = session_jobs(ns, sid)
        check(len(jobs) == 1, f"the crashed kctl left its Job ({len(jobs)})")
        if len(jobs) != 1:
            return
        name = jobs[0]["metadata"]["name"]
        dl = jobs[0]["spec"].get("activeDeadlineSeconds", 0)
        check(dl > 300, f"its activeDeadlineSeconds ({dl}) is far beyond this test's wait")
        try:
            r = s.run(["resume", sid, "--rounds", "1"], timeout=300)
        except subprocess.TimeoutExpired as e:
            err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else e.stderr
            check(False, f"kctl resume ends the adopted Job at pending_timeout_s "
                         f"({(err or '')[-400:]!r})")
            return
        check(f"Job {name}: pod" in r.stderr and "ImagePullBackOff" in r.stderr
              and "deleting it" in r.stderr,
              f"the adopted Job was ended as stuck ({r.stderr[-400:]!r})")
        res = s.results(sid, 0).get("r00-start", {})
        check(res.get("status") == "infra_error" and "ImagePullBackOff" in json.dumps(res),
              f"its variant got an infra_error result naming ImagePullBackOff "
              f"({json.dumps(res)[:200]})")
        left = [j for j in session_jobs(ns, sid) if j["metadata"]["name"] == name
                and not j["metadata"].get("deletionTimestamp")]
        check(not left, "the adopted Job was deleted")


class PodCounter:
    """Counts, from the API, the pods of a session that are not over (Pending or
    Running) every 0.2 s while a thread runs; peak is the most seen at once."""

    def __init__(self, ns, label_of):
        import threading
        self.ns, self.label_of, self.peak, self.pods = ns, label_of, 0, {}
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()

    def loop(self):
        while not self.stop.is_set():
            label = self.label_of()
            if label:
                st, lst = api("GET", f"/api/v1/namespaces/{self.ns}/pods?labelSelector="
                              + urllib.parse.quote(f"kctl.dev/session={label}"))
                live = [p for p in lst.get("items", []) if p.get("status", {}).get("phase")
                        in ("Pending", "Running")]
                self.peak = max(self.peak, len(live))
                for p in lst.get("items", []):
                    self.pods[p["metadata"]["name"]] = p
            time.sleep(0.2)

    def end(self):
        self.stop.set()
        self.t.join(10)


def wait_listed(s, kc, ns, label):
    """kctl status --cluster --all-namespaces until it lists label in ns (RBAC
    bindings take a moment to reach the authorizer's cache); the last run."""
    for _ in range(60):
        r = s.run(["status", "--cluster", "--all-namespaces", "--kubeconfig", kc])
        if r.returncode == 0 and any(ln.startswith(ns + " ") and label in ln
                                     for ln in r.stdout.splitlines()):
            return r
        time.sleep(1)
    return r


def test_fleet(args, ns, token, kc_dir):
    """One Job per shard (1.20) within max_pods_in_flight; the PriorityClass reaches
    the pods; kctl status --cluster lists the real Jobs."""
    kc = kubeconfig(os.path.join(kc_dir, "fleet.kubeconfig"), ns, token=token)
    st, _ = api("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", {
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": "kctl-batch"}, "value": 100, "globalDefault": False,
        "description": "pods of batch kctl sessions"})
    check(st in (201, 409), f"the PriorityClass of manifests/team-queues.yaml is created ({st})")
    with Scenario(args, "sharing the cluster: in-flight limit, PriorityClass, status --cluster",
                  "kube-fleet", {"kubeconfig": kc, "max_pods_in_flight": 1,
                                 "priority_class": "kctl-batch"}) as s:
        label = {}
        counter = PodCounter(ns, lambda: label.get("v"))
        p = subprocess.Popen([s.kctl, "start", s.spec, "--rounds", "1"], env=s.env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        sid = p.stdout.readline().strip()
        if sid:
            import hashlib
            cut = "".join(c if c.isalnum() else "-" for c in sid.lower())[:40].rstrip("-")
            label["v"] = cut + "-" + hashlib.sha256(sid.encode()).hexdigest()[:6]
        out, err = p.communicate(timeout=900)
        counter.end()
        check(p.returncode == 0, f"the session completes ({err[-300:]!r})")
        jobs = session_jobs(ns, sid)
        check(len(jobs) >= 3, f"one Job per shard, two variants each ({len(jobs)})")
        check(counter.pods and counter.peak == 1,
              f"never more than one pod of the session at once ({counter.peak} at most, "
              f"{len(counter.pods)} pods seen)")
        check("shard(s) wait for a free slot" in err, "the log says shards wait for a slot")
        check(counter.pods and all(pd["spec"].get("priorityClassName") == "kctl-batch"
                                   for pd in counter.pods.values()),
              "the pods carry the PriorityClass")
        check(counter.pods and all(pd["spec"].get("priority") == 100
                                   for pd in counter.pods.values()),
              f"the API server resolved it to its value "
              f"({[pd['spec'].get('priority') for pd in counter.pods.values()][:3]})")
        r = s.run(["status", "--cluster", "-o", "json", "--kubeconfig", kc])
        try:
            rows = {e["session_id"]: e for e in json.loads(r.stdout)}
        except (ValueError, KeyError, TypeError):
            rows = {}
        row = rows.get(sid, {})
        check(r.returncode == 0 and row.get("namespace") == ns and row.get("jobs", {}).get(
            "succeeded") == len(jobs) and row.get("round") == 1,
            f"kctl status --cluster lists the session's real Jobs ({row}, {r.stderr[-200:]!r})")
        r = s.run(["status", "--cluster", "--all-namespaces", "--kubeconfig", kc])
        check(r.returncode == 3 and "403" in r.stderr and "kctl-cluster-viewer.yaml" in r.stderr,
              f"across namespaces the Role is not enough, and kctl says what is "
              f"({r.returncode}, {r.stderr[-300:]!r})")
        # manifests/kctl-cluster-viewer.yaml, its binding pointed at the ServiceAccount
        with open(os.path.join(s.repo, "manifests", "kctl-cluster-viewer.yaml"),
                  encoding="utf-8") as f:
            role, binding = [d for d in yaml.safe_load_all(f) if d]
        binding["subjects"] = [{"kind": "ServiceAccount", "name": "kctl", "namespace": ns}]
        made = [api("POST", "/apis/rbac.authorization.k8s.io/v1/" + path, d)[0]
                for path, d in (("clusterroles", role), ("clusterrolebindings", binding))]
        check(all(st in (201, 409) for st in made),
              f"kctl-cluster-viewer.yaml's ClusterRole is accepted by the server ({made})")
        r = wait_listed(s, kc, ns, label.get("v", "?"))
        check(r.returncode == 0,
              f"with it, the same account lists the sessions across namespaces "
              f"({r.returncode}, {r.stdout[-300:]!r}, {r.stderr[-200:]!r})")


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    skip = need_env("KUBE_SERVER", "S3_ENDPOINT", peer="with-s3.sh and with-kube.sh")
    if skip:
        return skip
    args = [os.path.abspath(a) for a in sys.argv[1:]]
    ns = env("KUBE_NAMESPACE")
    apply_rbac(args[3], ns)
    token = sa_token(ns)
    check(token is not None, "the ServiceAccount of rbac.yaml has a token")
    kc_dir = tempfile.mkdtemp(prefix="kctl-kc-")
    # KCTL_TEST_ONLY=a,b: only the tests whose names contain a or b
    only = os.environ.get("KCTL_TEST_ONLY", "").split(",")
    kubelet = Kubelet(args[3], args[1], ns, ["--fail-image-pull", "registry.invalid"])

    def run_one(t, a):
        if not any(o in t.__name__ for o in only):
            return
        try:
            t(*a)
        except Exception as e:  # the test's own crash is a failure
            check(False, f"{t.__name__} raised {e!r}")
    try:
        for t, a in ((test_token_session, (args, ns, token, kc_dir)),
                     (test_client_cert, (args, ns, kc_dir)),
                     (test_forbidden, (args, ns, kc_dir)),
                     (test_image_pull, (args, ns, token, kc_dir, args[3], args[1])),
                     (test_crash_resume_cancel, (args, ns, token, kc_dir)),
                     (test_adopted_pending_timeout, (args, ns, token, kc_dir)),
                     (test_fleet, (args, ns, token, kc_dir))):
            run_one(t, a)
        kubelet.stop()
        kubelet = None
        # last: it restarts the API server, and runs its own kubelet
        run_one(test_apiserver_restart, (args, ns, token, kc_dir))
    finally:
        if kubelet:
            kubelet.stop()
        shutil.rmtree(kc_dir, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
