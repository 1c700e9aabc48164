#!/usr/bin/env python3
"""fake_kubelet.py - plays the node for one namespace of a test cluster.

It watches the Pods of a namespace (list, then watch from the list's
resourceVersion; re-list on 410 Gone; reconnect when the stream drops).  Each
new Pending Pod has its first container run as a local process, and the Pod's
status is patched the way a kubelet would: Running, then Succeeded or Failed
with a terminated container state.  Python 3 standard library only.

  python3 tests/peers/fake_kubelet.py --server "$KUBE_SERVER" --ca "$KUBE_CA" \
      --token "$KUBE_ADMIN_TOKEN" --namespace "$KUBE_NAMESPACE" \
      --map evalpod=build/evalpod/evalpod --map /bin/sh=/bin/sh

What it does, in short (see tests/peers/README.md):
  * command[0] (or, when the container has no command, its image) must be
    named by a --map KEY=LOCAL_PATH, as given or by basename; otherwise the Pod
    fails with reason ContainerCannotRun.
  * $(VAR) in command and args is expanded from the container's env ($$ is a
    literal $); env values may use earlier env entries.  valueFrom supports
    fieldRef, configMapKeyRef and secretKeyRef.
  * The process gets the container's env plus PATH, HOME and TMPDIR of the
    kubelet; its stdout and stderr go to LOG_DIR/NS_POD.log.
  * Deleting the Pod kills the process (TERM, then KILL after the grace period,
    at most --max-grace seconds).  activeDeadlineSeconds is enforced: the Pod
    fails with reason DeadlineExceeded.
  * restartPolicy OnFailure restarts a failing container in place
    (restartCount goes up); Never and Always run it once.
  * Failure simulation: --fail-image-pull SUBSTR, or the annotation
    fake-kubelet.kctl.test/image-pull-backoff: "true", leaves the Pod Pending
    with a waiting container (reason ImagePullBackOff).  --oom-exit reports an
    exit status of 137 as OOMKilled.  The annotation
    fake-kubelet.kctl.test/oom-after: "SECONDS" SIGKILLs the process after that
    long and reports OOMKilled.

One line per event goes to stderr.  Nothing is written to stdout.
"""

import argparse
import base64
import datetime
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

ANN = "fake-kubelet.kctl.test/"


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def log(msg):
    t = datetime.datetime.now().strftime("%H:%M:%S.%f")[:-3]
    sys.stderr.write("fake_kubelet %s %s\n" % (t, msg))
    sys.stderr.flush()


class ApiError(Exception):
    def __init__(self, status, body):
        Exception.__init__(self, "HTTP %s: %s" % (status, body[:300]))
        self.status = status
        self.body = body


class Api:
    """A tiny Kubernetes REST client over http.client."""

    def __init__(self, server, ca, token, cert=None, key=None, insecure=False):
        u = urllib.parse.urlsplit(server)
        if u.scheme not in ("https", "http"):
            raise SystemExit("--server must be an http(s) URL")
        self.scheme = u.scheme
        self.host = u.hostname
        self.port = u.port or (443 if u.scheme == "https" else 80)
        self.base = u.path.rstrip("/")
        self.token = token
        self.ctx = None
        if u.scheme == "https":
            if insecure:
                self.ctx = ssl._create_unverified_context()
            else:
                self.ctx = ssl.create_default_context(cafile=ca)
            if cert:
                self.ctx.load_cert_chain(cert, key)
        self.local = threading.local()

    def connect(self, timeout):
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def headers(self, ctype=None):
        h = {"Accept": "application/json", "User-Agent": "kctl-fake-kubelet/1"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        if ctype:
            h["Content-Type"] = ctype
        return h

    def request(self, method, path, body=None, ctype="application/json", tries=4):
        data = None if body is None else json.dumps(body).encode()
        last = None
        for attempt in range(tries):
            conn = getattr(self.local, "conn", None)
            if conn is None:
                conn = self.local.conn = self.connect(30)
            try:
                conn.request(method, self.base + path, body=data,
                             headers=self.headers(ctype if data is not None else None))
                resp = conn.getresponse()
                raw = resp.read()
            except (OSError, http.client.HTTPException) as e:
                last = e
                conn.close()
                self.local.conn = None
                time.sleep(0.2 * (attempt + 1))
                continue
            if resp.status >= 300:
                raise ApiError(resp.status, raw.decode("utf-8", "replace"))
            return json.loads(raw.decode()) if raw else {}
        raise last

    def watch(self, path, timeout):
        """Yields decoded watch events; returns when the stream ends."""
        conn = self.connect(timeout)
        try:
            conn.request("GET", self.base + path, headers=self.headers())
            resp = conn.getresponse()
            if resp.status >= 300:
                raise ApiError(resp.status, resp.read().decode("utf-8", "replace"))
            while True:
                line = resp.readline()
                if not line:
                    return
                line = line.strip()
                if line:
                    yield json.loads(line.decode())
        finally:
            conn.close()


def expand(s, env):
    """Kubernetes $(VAR) expansion: unknown names stay as written, $$ is $."""
    out = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c != "$" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        nxt = s[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "(":
            j = s.find(")", i + 2)
            if j < 0:
                out.append(s[i:])
                break
            name = s[i + 2:j]
            if name in env:
                out.append(env[name])
            else:
                out.append(s[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def field_path(pod, fp):
    md = pod.get("metadata", {})
    for prefix, key in (("metadata.labels", "labels"), ("metadata.annotations", "annotations")):
        if fp.startswith(prefix + "["):
            k = fp[len(prefix) + 1:-1].strip("'\"")
            return (md.get(key) or {}).get(k, "")
    simple = {
        "metadata.name": md.get("name", ""),
        "metadata.namespace": md.get("namespace", ""),
        "metadata.uid": md.get("uid", ""),
        "spec.nodeName": pod.get("spec", {}).get("nodeName", ""),
        "spec.serviceAccountName": pod.get("spec", {}).get("serviceAccountName", ""),
        "status.podIP": "127.0.0.1",
        "status.hostIP": "127.0.0.1",
    }
    if fp in simple:
        return simple[fp]
    raise ValueError("unsupported fieldRef %s" % fp)


class CannotRun(Exception):
    def __init__(self, reason, msg):
        Exception.__init__(self, msg)
        self.reason = reason


class Kubelet:
    def __init__(self, args):
        # extra variables of the kubelet's own environment every container
        # gets (the sanitizers' options when the suite runs under ASan)
        self.pass_env = list(args.pass_env)
        self.a = args
        self.api = Api(args.server, args.ca, args.token, args.cert, args.key, args.insecure)
        self.ns = args.namespace
        self.maps = {}
        for m in args.map:
            if "=" not in m:
                raise SystemExit("--map wants KEY=LOCAL_PATH, got %r" % m)
            k, v = m.split("=", 1)
            self.maps[k] = os.path.abspath(v) if os.sep in v else v
        self.lock = threading.Lock()
        self.seen = {}        # uid -> Run
        self.slots = threading.Semaphore(args.max_parallel)
        self.stopping = threading.Event()
        if args.log_dir:
            self.log_dir = args.log_dir
            os.makedirs(self.log_dir, exist_ok=True)
        else:
            self.log_dir = tempfile.mkdtemp(prefix="fake-kubelet-")
        log("logs in %s" % self.log_dir)

    # ---- API helpers
    def pod_path(self, name):
        return "/api/v1/namespaces/%s/pods/%s" % (self.ns, urllib.parse.quote(name))

    def patch_status(self, name, status):
        try:
            self.api.request("PATCH", self.pod_path(name) + "/status", {"status": status},
                             ctype="application/merge-patch+json")
            return True
        except ApiError as e:
            if e.status == 404:
                log("pod %s/%s gone; status not patched" % (self.ns, name))
            else:
                log("status patch of %s/%s failed: %s" % (self.ns, name, e))
        except (OSError, http.client.HTTPException) as e:
            log("status patch of %s/%s failed: %s" % (self.ns, name, e))
        return False

    # ---- watch loop
    def selector_query(self):
        q = {}
        if self.a.label_selector:
            q["labelSelector"] = self.a.label_selector
        return q

    def run_forever(self):
        base = "/api/v1/namespaces/%s/pods" % self.ns
        rv = None
        while not self.stopping.is_set():
            try:
                if rv is None:
                    q = self.selector_query()
                    lst = self.api.request("GET", base + "?" + urllib.parse.urlencode(q))
                    rv = lst.get("metadata", {}).get("resourceVersion")
                    items = lst.get("items") or []
                    log("listed %d pod(s) in %s at resourceVersion %s" % (len(items), self.ns, rv))
                    live = set()
                    for p in items:
                        live.add(p["metadata"]["uid"])
                        self.on_pod("LISTED", p)
                    self.forget_missing(live)
                q = self.selector_query()
                q.update({"watch": "1", "resourceVersion": rv, "allowWatchBookmarks": "true",
                          "timeoutSeconds": str(self.a.watch_timeout)})
                for ev in self.api.watch(base + "?" + urllib.parse.urlencode(q), self.a.watch_timeout + 30):
                    if self.stopping.is_set():
                        return
                    typ = ev.get("type")
                    obj = ev.get("object") or {}
                    if typ == "ERROR":
                        code = obj.get("code")
                        log("watch error %s: %s" % (code, obj.get("message", "")))
                        if code == 410:
                            rv = None
                        break
                    new_rv = obj.get("metadata", {}).get("resourceVersion")
                    if new_rv:
                        rv = new_rv
                    if typ == "BOOKMARK":
                        continue
                    self.on_pod(typ, obj)
            except ApiError as e:
                log("API error: %s" % e)
                if e.status == 410:
                    rv = None
                time.sleep(1)
            except (OSError, http.client.HTTPException, ValueError) as e:
                log("watch dropped (%s: %s); reconnecting" % (type(e).__name__, e))
                time.sleep(0.5)

    def forget_missing(self, live):
        with self.lock:
            gone = [r for uid, r in self.seen.items() if uid not in live]
        for r in gone:
            r.deleted("pod no longer listed")

    def on_pod(self, typ, pod):
        md = pod.get("metadata", {})
        uid = md.get("uid")
        name = md.get("name")
        with self.lock:
            run = self.seen.get(uid)
        if typ == "DELETED":
            if run:
                run.deleted("pod deleted")
            return
        if md.get("deletionTimestamp"):
            if run:
                run.deleted("pod is being deleted")
            else:
                self.finish_delete(name, uid)
            return
        if run is not None:
            return
        if pod.get("status", {}).get("phase", "Pending") != "Pending":
            return
        run = Run(self, pod)
        with self.lock:
            self.seen[uid] = run
        log("%s %s/%s: new pending pod" % (typ, self.ns, name))
        t = threading.Thread(target=run.main, name="pod-" + name)
        t.daemon = True
        t.start()

    def finish_delete(self, name, uid):
        # As a kubelet does once the containers are gone: remove the object.
        try:
            self.api.request("DELETE", self.pod_path(name),
                             {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                              "preconditions": {"uid": uid}})
        except (ApiError, OSError, http.client.HTTPException):
            pass

    def shutdown(self):
        self.stopping.set()
        with self.lock:
            runs = list(self.seen.values())
        for r in runs:
            r.deleted("fake kubelet exiting", quiet=True)


class Run:
    """One Pod's life on the fake node."""

    def __init__(self, kl, pod):
        self.kl = kl
        self.pod = pod
        self.name = pod["metadata"]["name"]
        self.uid = pod["metadata"]["uid"]
        self.id = "%s/%s" % (kl.ns, self.name)
        self.kill_reason = None
        self.gone = threading.Event()
        self.proc = None
        self.plock = threading.Lock()

    def deleted(self, why, quiet=False):
        if self.gone.is_set():
            return
        self.gone.set()
        if not quiet:
            log("%s: %s" % (self.id, why))
        self.kill("Deleted")

    def kill(self, reason):
        with self.plock:
            p = self.proc
            if self.kill_reason is None:
                self.kill_reason = reason
        if p is None or p.poll() is not None:
            return
        grace = self.pod.get("spec", {}).get("terminationGracePeriodSeconds", 30)
        if grace is None:
            grace = 30
        grace = min(float(grace), self.kl.a.max_grace)
        if reason in ("OOMKilled",):
            grace = 0
        threading.Thread(target=self._kill, args=(p, grace), daemon=True).start()

    def _kill(self, p, grace):
        try:
            if grace > 0:
                os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(grace)
                    return
                except subprocess.TimeoutExpired:
                    pass
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def container(self):
        cs = self.pod.get("spec", {}).get("containers") or []
        if not cs:
            raise CannotRun("ContainerCannotRun", "pod has no containers")
        return cs[0]

    def env_of(self, c):
        env = {}
        for e in c.get("env") or []:
            n = e.get("name")
            if "value" in e or not e.get("valueFrom"):
                env[n] = expand(e.get("value") or "", env)
                continue
            vf = e["valueFrom"]
            try:
                if "fieldRef" in vf:
                    env[n] = field_path(self.pod, vf["fieldRef"].get("fieldPath", ""))
                elif "configMapKeyRef" in vf or "secretKeyRef" in vf:
                    secret = "secretKeyRef" in vf
                    ref = vf["secretKeyRef" if secret else "configMapKeyRef"]
                    kind = "secrets" if secret else "configmaps"
                    try:
                        obj = self.kl.api.request(
                            "GET", "/api/v1/namespaces/%s/%s/%s" % (self.kl.ns, kind, ref.get("name")))
                        val = (obj.get("data") or {}).get(ref.get("key"))
                    except ApiError as err:
                        if err.status != 404:
                            raise
                        val = None
                    if val is None:
                        if ref.get("optional"):
                            continue
                        raise CannotRun("CreateContainerConfigError",
                                        "%s %s has no key %s" % (kind[:-1], ref.get("name"), ref.get("key")))
                    env[n] = base64.b64decode(val).decode("utf-8", "replace") if secret else val
                else:
                    raise CannotRun("CreateContainerConfigError",
                                    "env %s: unsupported valueFrom %s" % (n, sorted(vf)))
            except ValueError as err:
                raise CannotRun("CreateContainerConfigError", "env %s: %s" % (n, err))
        return env

    def resolve(self, c, env):
        cmd = [expand(x, env) for x in (c.get("command") or [])]
        args = [expand(x, env) for x in (c.get("args") or [])]
        maps = self.kl.maps
        image = c.get("image", "")
        if cmd:
            key = cmd[0]
            exe = maps.get(key) or maps.get(os.path.basename(key))
            if exe is None:
                raise CannotRun("ContainerCannotRun",
                                "fake kubelet: command %r is not mapped (use --map %s=LOCAL_PATH)" % (key, key))
            return [exe] + cmd[1:] + args
        exe = maps.get(image)
        if exe is None:
            raise CannotRun("ContainerCannotRun",
                            "fake kubelet: container has no command and image %r is not mapped" % image)
        return [exe] + args

    def base_cstatus(self, c):
        image = c.get("image", "")
        return {"name": c.get("name", "c"), "image": image, "imageID": "fake://" + image,
                "containerID": "fake://%s" % self.uid, "restartCount": 0}

    def fail_pending(self, c, reason, msg):
        st = self.base_cstatus(c)
        st.update({"ready": False, "started": False,
                   "state": {"waiting": {"reason": reason, "message": msg}}})
        self.kl.patch_status(self.name, {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": now_rfc3339()},
                           {"type": "ContainersReady", "status": "False", "reason": "ContainersNotReady",
                            "lastTransitionTime": now_rfc3339()}],
            "containerStatuses": [st]})

    def fail_now(self, c, reason, msg, started=None):
        st = self.base_cstatus(c)
        t = now_rfc3339()
        st.update({"ready": False, "started": False,
                   "state": {"terminated": {"exitCode": 128, "reason": reason, "message": msg,
                                            "startedAt": started or t, "finishedAt": t}}})
        self.kl.patch_status(self.name, {"phase": "Failed", "reason": reason, "message": msg,
                                         "startTime": started or t, "hostIP": "127.0.0.1",
                                         "containerStatuses": [st]})
        log("%s: Failed (%s: %s)" % (self.id, reason, msg))

    def main(self):
        try:
            self._main()
        except Exception as e:  # keep the kubelet alive whatever a pod does
            log("%s: internal error %s: %s" % (self.id, type(e).__name__, e))

    def _main(self):
        kl = self.kl
        c = self.container() if (self.pod.get("spec", {}).get("containers")) else {}
        anns = self.pod.get("metadata", {}).get("annotations") or {}
        image = c.get("image", "")
        if (kl.a.fail_image_pull and kl.a.fail_image_pull in image) or \
                anns.get(ANN + "image-pull-backoff", "").lower() in ("1", "true", "yes"):
            msg = 'Back-off pulling image "%s"' % image
            self.fail_pending(c, "ImagePullBackOff", msg)
            log("%s: ImagePullBackOff (stays Pending)" % self.id)
            return
        started = now_rfc3339()
        try:
            self.container()
            env = self.env_of(c)
            argv = self.resolve(c, env)
        except CannotRun as e:
            self.fail_now(c, e.reason, str(e), started)
            return
        except (ApiError, OSError, http.client.HTTPException) as e:
            self.fail_now(c, "CreateContainerConfigError", str(e), started)
            return

        # Wait for a slot; the pod stays Pending meanwhile.
        while not kl.slots.acquire(timeout=0.5):
            if self.gone.is_set() or kl.stopping.is_set():
                return
        try:
            self.run_container(c, env, argv, started, anns)
        finally:
            kl.slots.release()

    def run_container(self, c, env, argv, started, anns):
        kl = self.kl
        spec = self.pod.get("spec", {})
        policy = spec.get("restartPolicy", "Always")
        deadline = spec.get("activeDeadlineSeconds")
        t_start = time.time()
        oom_after = anns.get(ANN + "oom-after")
        penv = dict(env)
        for k in ("PATH", "HOME", "TMPDIR") + tuple(kl.pass_env):
            if k in os.environ and k not in penv:
                penv[k] = os.environ[k]
        wd = c.get("workingDir")
        if not wd or not os.path.isdir(wd):
            wd = kl.log_dir
        logpath = os.path.join(kl.log_dir, "%s_%s.log" % (kl.ns, self.name))
        restarts = 0
        last_state = None
        while True:
            if self.gone.is_set():
                return
            cstart = now_rfc3339()
            st = self.base_cstatus(c)
            st.update({"ready": True, "started": True, "restartCount": restarts,
                       "state": {"running": {"startedAt": cstart}}})
            if last_state:
                st["lastState"] = last_state
            ok = kl.patch_status(self.name, {
                "phase": "Running", "startTime": started, "hostIP": "127.0.0.1", "podIP": "127.0.0.1",
                "podIPs": [{"ip": "127.0.0.1"}],
                "conditions": [
                    {"type": "Initialized", "status": "True", "lastTransitionTime": started},
                    {"type": "Ready", "status": "True", "lastTransitionTime": cstart},
                    {"type": "ContainersReady", "status": "True", "lastTransitionTime": cstart},
                    {"type": "PodScheduled", "status": "True", "lastTransitionTime": started}],
                "containerStatuses": [st]})
            if not ok and self.gone.is_set():
                return
            try:
                with open(logpath, "ab") as lf:
                    p = subprocess.Popen(argv, env=penv, cwd=wd, stdin=subprocess.DEVNULL,
                                         stdout=lf, stderr=subprocess.STDOUT, start_new_session=True)
            except OSError as e:
                self.fail_now(c, "ContainerCannotRun", "exec %s: %s" % (argv[0], e), started)
                return
            with self.plock:
                self.proc = p
                self.kill_reason = None
                pending_kill = self.gone.is_set()
            log("%s: Running pid %d: %s (log %s)" % (self.id, p.pid, " ".join(argv), logpath))
            if pending_kill:
                self.kill("Deleted")
            t_proc = time.time()
            while True:
                try:
                    rc = p.wait(0.2)
                    break
                except subprocess.TimeoutExpired:
                    pass
                tnow = time.time()
                if deadline is not None and tnow - t_start >= float(deadline) and self.kill_reason is None:
                    log("%s: activeDeadlineSeconds %s passed; killing" % (self.id, deadline))
                    self.kill("DeadlineExceeded")
                if oom_after and tnow - t_proc >= float(oom_after) and self.kill_reason is None:
                    log("%s: simulating the OOM killer" % self.id)
                    self.kill("OOMKilled")
                if kl.stopping.is_set() and self.kill_reason is None:
                    self.kill("Deleted")
            finished = now_rfc3339()
            code = rc if rc >= 0 else 128 - rc
            why = self.kill_reason
            if why == "Deleted" or self.gone.is_set():
                log("%s: process exited (%d) after deletion" % (self.id, code))
                if not kl.stopping.is_set():
                    kl.finish_delete(self.name, self.uid)
                return
            if why == "OOMKilled" or (kl.a.oom_exit and code == 137):
                creason = "OOMKilled"
            else:
                creason = "Completed" if code == 0 else "Error"
            term = {"exitCode": code, "reason": creason, "startedAt": cstart, "finishedAt": finished,
                    "containerID": "fake://%s" % self.uid}
            if why == "DeadlineExceeded":
                phase, preason, pmsg = "Failed", "DeadlineExceeded", \
                    "Pod was active on the node longer than the specified deadline"
            elif code == 0:
                phase, preason, pmsg = "Succeeded", None, None
            elif policy == "OnFailure" and not kl.stopping.is_set():
                restarts += 1
                last_state = {"terminated": term}
                log("%s: exited %d (%s); restartPolicy OnFailure, restart #%d"
                    % (self.id, code, creason, restarts))
                st = self.base_cstatus(c)
                st.update({"ready": False, "started": False, "restartCount": restarts,
                           "lastState": last_state,
                           "state": {"waiting": {"reason": "CrashLoopBackOff",
                                                 "message": "back-off restarting failed container"}}})
                kl.patch_status(self.name, {"containerStatuses": [st]})
                if self.gone.wait(min(kl.a.restart_backoff * restarts, 10)):
                    return
                continue
            else:
                phase, preason, pmsg = "Failed", None, None
            st = self.base_cstatus(c)
            st.update({"ready": False, "started": False, "restartCount": restarts,
                       "state": {"terminated": term}})
            if last_state:
                st["lastState"] = last_state
            status = {"phase": phase, "containerStatuses": [st],
                      "conditions": [
                          {"type": "Initialized", "status": "True", "lastTransitionTime": started},
                          {"type": "Ready", "status": "False", "reason": "PodCompleted",
                           "lastTransitionTime": finished},
                          {"type": "ContainersReady", "status": "False", "reason": "PodCompleted",
                           "lastTransitionTime": finished},
                          {"type": "PodScheduled", "status": "True", "lastTransitionTime": started}]}
            if preason:
                status["reason"] = preason
                status["message"] = pmsg
            kl.patch_status(self.name, status)
            log("%s: %s (exit %d, %s%s)" % (self.id, phase, code, creason,
                                             ", " + preason if preason else ""))
            return


def main():
    ap = argparse.ArgumentParser(description="Plays a Kubernetes node for one namespace.")
    ap.add_argument("--server", required=True, help="https://127.0.0.1:PORT")
    ap.add_argument("--ca", help="CA bundle for the server")
    ap.add_argument("--token", help="bearer token")
    ap.add_argument("--token-file", help="read the bearer token from this file")
    ap.add_argument("--cert", help="client certificate (instead of a token)")
    ap.add_argument("--key", help="client key")
    ap.add_argument("--insecure", action="store_true", help="don't verify the server")
    ap.add_argument("--namespace", required=True)
    ap.add_argument("--label-selector", default="")
    ap.add_argument("--map", action="append", default=[], metavar="IMAGE_OR_CMD=LOCAL_PATH")
    ap.add_argument("--node-name", default="fake-node", help="name used in logs")
    ap.add_argument("--max-parallel", type=int, default=4)
    ap.add_argument("--pass-env", action="append", default=[], metavar="NAME",
                    help="also give containers this variable of the kubelet's environment")
    ap.add_argument("--log-dir", help="per-pod logs (default: a new temp dir)")
    ap.add_argument("--fail-image-pull", metavar="SUBSTRING",
                    help="pods whose image contains this stay Pending with ImagePullBackOff")
    ap.add_argument("--oom-exit", action="store_true", help="report exit status 137 as OOMKilled")
    ap.add_argument("--max-grace", type=float, default=5.0,
                    help="cap on terminationGracePeriodSeconds when killing (default 5)")
    ap.add_argument("--restart-backoff", type=float, default=1.0,
                    help="seconds before restart n (times n, at most 10) with restartPolicy OnFailure")
    ap.add_argument("--watch-timeout", type=int, default=60, help="timeoutSeconds of each watch")
    ap.add_argument("--lifetime", type=float, default=3600, help="exit after this many seconds")
    a = ap.parse_args()
    if a.token_file:
        with open(a.token_file) as f:
            a.token = f.read().strip()
    if a.max_parallel < 1:
        ap.error("--max-parallel must be at least 1")
    kl = Kubelet(a)

    def on_signal(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    timer = threading.Timer(a.lifetime, lambda: os.kill(os.getpid(), signal.SIGTERM))
    timer.daemon = True
    timer.start()
    log("node %s serving namespace %s%s" % (a.node_name, a.namespace,
                                            " (selector %s)" % a.label_selector if a.label_selector else ""))
    try:
        kl.run_forever()
    except KeyboardInterrupt:
        pass
    finally:
        log("stopping; killing running pods' processes")
        kl.shutdown()
        # give the killers a moment
        deadline = time.time() + a.max_grace + 1
        while time.time() < deadline:
            with kl.lock:
                busy = [r for r in kl.seen.values() if r.proc is not None and r.proc.poll() is None]
            if not busy:
                break
            time.sleep(0.1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
