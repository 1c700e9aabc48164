#!/usr/bin/env python3
"""kube_double.py - a strict HTTPS test double of the Kubernetes API for Jobs.

Usage: kube_double.py --tls CERT KEY [--client-ca CA] [--token TOKEN[=USER]]...
                      [--version v1.30.0] [--run MODE] [--run-delay S]
                      [--map NAME=PATH]... [--pass-env NAME]... [--workdir DIR]
                      [--bookmark-interval S] [--history N] [--watch-timeout S]
                      [--pod-backoff S] [--namespace NS]... [--port N]
                      [--lifetime S] [--verbose]

Listens on 127.0.0.1 (port 0, the default, picks a free one), prints the port
as the first line of stdout, and serves HTTP/1.1 over TLS (keep-alive; watches
are chunked streams).  Python 3 standard library only.

It answers what kctl needs of a kube-apiserver, following the real protocol
(Status bodies, resourceVersions, watch semantics) where the real v1.20
server the other tests run cannot show newer behaviour, and it plays the Job
controller and the kubelet itself, so Jobs run to completion:

  GET    /version, /api, /apis, /api/v1, /apis/batch, /apis/batch/v1
  POST   /apis/batch/v1/namespaces/NS/jobs           create (?dryRun=All,
                                                      ?fieldValidation=Strict)
  GET    /apis/batch/v1/namespaces/NS/jobs           list (labelSelector,
         fieldSelector, limit/continue) or ?watch=1 (resourceVersion,
         allowWatchBookmarks, timeoutSeconds)
  DELETE /apis/batch/v1/namespaces/NS/jobs           deletecollection
  GET    /apis/batch/v1/jobs                         list/watch, all namespaces
  GET|PUT|PATCH|DELETE /apis/batch/v1/namespaces/NS/jobs/NAME
  GET|PATCH /apis/batch/v1/namespaces/NS/jobs/NAME/status
  GET    /api/v1/namespaces/NS/pods, /api/v1/pods    list/watch
  GET|DELETE /api/v1/namespaces/NS/pods/NAME, GET .../pods/NAME/log

Control API on the same port, without auth (see tests/peers/README.md):
  POST /__control__ {"plan": [FAULT...]} | {"pod_faults": {...}} |
                    {"admit": "JOB"} | {"expire": "JOB"} | {"compact": true}
  GET /__control__  counters; DELETE /__control__ resets them.
"""

import argparse
import base64
import collections
import copy
import http.server
import json
import os
import re
import select
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid

from kube_double_meta import now_ts, parse_quantity, rand5
from kube_double_select import (fields_match, labels_match, parse_field_selector,
                                parse_label_selector)
from kube_double_status import (ApiError, FieldErrors, already_exists, bad_request,
                                conflict, go_q, not_found, status_obj)
from kube_double_validate import Decoder, validate_job

CONTROL = "/__control__"
MAX_BODY = 3 * 1024 * 1024  # the apiserver's request size limit
NODE = "kube-double-node"


# -------------------------------------------------------------- helpers


def compress_indexes(idx):
    out, run = [], None
    for i in sorted(idx):
        if run and i == run[1] + 1:
            run[1] = i
        else:
            if run:
                out.append(run)
            run = [i, i]
    if run:
        out.append(run)
    return ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in out)


def merge_patch(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    for k, v in patch.items():
        if v is None:
            target.pop(k, None)
        else:
            target[k] = merge_patch(target.get(k), v)
    return target


def expand_vars(s, env):
    """$(VAR) expansion of Kubernetes command/args/env ($$ is a literal $)."""
    out, i = [], 0
    while i < len(s):
        if s.startswith("$$", i):
            out.append("$")
            i += 2
        elif s.startswith("$(", i):
            j = s.find(")", i)
            if j < 0:
                out.append(s[i:])
                break
            name = s[i + 2:j]
            out.append(env[name] if name in env else s[i:j + 1])
            i = j + 1
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def field_ref(pod, path):
    m = re.fullmatch(r"metadata\.(annotations|labels)\['([^']*)'\]", path)
    if m:
        return (pod["metadata"].get(m.group(1)) or {}).get(m.group(2), "")
    return {"metadata.name": pod["metadata"]["name"],
            "metadata.namespace": pod["metadata"]["namespace"],
            "metadata.uid": pod["metadata"]["uid"],
            "spec.nodeName": pod["spec"].get("nodeName", ""),
            "spec.serviceAccountName": pod["spec"].get("serviceAccountName", "default"),
            "status.hostIP": "127.0.0.1", "status.podIP": "127.0.0.1"}.get(path, "")


# ------------------------------------------------------------------ store


class Store:
    """Objects, the resourceVersion counter, the event history for watches,
    the simulated Job controller and kubelet, and the control state."""

    def __init__(self, args):
        self.args = args
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.rv = 100
        self.compacted = self.rv  # events with rv <= this are gone
        self.objs = {"jobs": {}, "pods": {}}
        self.history = collections.deque()
        self.jsim = {}   # job uid -> controller state
        self.psim = {}   # pod uid -> kubelet state
        self.faults = []
        self.pod_faults = {}
        self.stopping = False
        self.reported = set()
        self.logdir = tempfile.mkdtemp(prefix="kube-double.")
        self.reset_counters()

    def reset_counters(self):
        self.counters = {"requests": collections.Counter(), "total_requests": 0,
                         "watch_connections": 0, "unauthorized": 0,
                         "faults_served": collections.Counter(),
                         "users": collections.Counter()}

    # -- events

    def emit(self, res, etype, obj, prev=None):
        """Records a change: bumps the resourceVersion, stores obj (or removes
        it for DELETED) and wakes the watchers.  Caller holds the lock."""
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
        if etype == "DELETED":
            self.objs[res].pop(key, None)
        else:
            self.objs[res][key] = obj
        self.history.append((self.rv, res, etype, copy.deepcopy(obj), prev))
        while len(self.history) > self.args.history:
            self.compacted = self.history.popleft()[0]
        self.cond.notify_all()

    def compact(self):
        with self.lock:
            self.history.clear()
            self.compacted = self.rv

    def update(self, res, obj, mutate):
        """Applies mutate(obj) to a stored object; emits MODIFIED if changed."""
        new = copy.deepcopy(obj)
        mutate(new)
        if new != obj:
            before = copy.deepcopy(obj)
            obj.clear()
            obj.update(new)
            self.emit(res, "MODIFIED", obj, before)
            return True
        return False

    # -- jobs

    def labels_for(self, name, uid):
        if self.args.minor >= 27:
            return {"batch.kubernetes.io/controller-uid": uid,
                    "batch.kubernetes.io/job-name": name,
                    "controller-uid": uid, "job-name": name}
        return {"controller-uid": uid, "job-name": name}

    def default_job(self, job, ns):
        minor = self.args.minor
        meta = job.setdefault("metadata", {})
        spec = job.setdefault("spec", {})
        tpl = spec.setdefault("template", {})
        tmeta = tpl.setdefault("metadata", {})
        ps = tpl.setdefault("spec", {})
        # SetDefaults_Job: job labels default to the template's labels.
        if not meta.get("labels") and tmeta.get("labels"):
            meta["labels"] = dict(tmeta["labels"])
        if spec.get("completions") is None and spec.get("parallelism") is None:
            spec["completions"] = 1
            spec["parallelism"] = 1
        if spec.get("parallelism") is None:
            spec["parallelism"] = 1
        if spec.get("backoffLimit") is None:
            spec["backoffLimit"] = 2147483647 if spec.get("backoffLimitPerIndex") is not None \
                else 6
        if minor >= 22:
            spec.setdefault("completionMode", "NonIndexed")
            spec.setdefault("suspend", False)
        if minor >= 29:
            spec.setdefault("podReplacementPolicy",
                            "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed")
        for r in (spec.get("podFailurePolicy") or {}).get("rules") or []:
            for pat in r.get("onPodConditions") or []:
                pat.setdefault("status", "True")
        ps.setdefault("restartPolicy", "Always")
        ps.setdefault("terminationGracePeriodSeconds", 30)
        ps.setdefault("dnsPolicy", "ClusterFirst")
        ps.setdefault("securityContext", {})
        ps.setdefault("schedulerName", "default-scheduler")
        for c in (ps.get("initContainers") or []) + (ps.get("containers") or []):
            if not isinstance(c, dict):
                continue
            c.setdefault("terminationMessagePath", "/dev/termination-log")
            c.setdefault("terminationMessagePolicy", "File")
            img = c.get("image") or ""
            if "imagePullPolicy" not in c and img:
                last = img.rsplit("/", 1)[-1]
                tagged = ":" in last and not last.endswith(":latest")
                c["imagePullPolicy"] = "IfNotPresent" if tagged or "@" in img else "Always"
            c.setdefault("resources", {})
            res = c["resources"]
            if res.get("limits") and not res.get("requests"):
                res["requests"] = dict(res["limits"])
        tmeta["creationTimestamp"] = None
        job["status"] = {}

    def create_job(self, ns, body, strictness, dry_run):
        dec = Decoder(self.args.minor, strictness)
        dec.decode_job(body)
        if body.get("apiVersion") not in (None, "batch/v1") or \
                body.get("kind") not in (None, "Job"):
            raise bad_request("the API version in the data (%s) does not match the expected "
                              "API version (batch/v1)" % body.get("apiVersion")
                              if body.get("apiVersion") not in (None, "batch/v1") else
                              "the kind in the data (%s) does not match the expected kind "
                              "(Job)" % body.get("kind"))
        warnings = dec.finish()
        job = body
        job["apiVersion"] = "batch/v1"
        job["kind"] = "Job"
        meta = job.setdefault("metadata", {})
        if meta.get("namespace") not in (None, "", ns):
            raise bad_request("the namespace of the provided object does not match the "
                              "namespace sent on the request")
        meta["namespace"] = ns
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + rand5()
        self.default_job(job, ns)
        validate_job(job, self.args.minor)
        for k in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
                  "deletionGracePeriodSeconds", "selfLink", "managedFields"):
            meta.pop(k, None)
        meta["uid"] = str(uuid.uuid4())
        meta["generation"] = 1
        meta["creationTimestamp"] = now_ts()
        spec = job["spec"]
        tmeta = spec["template"]["metadata"]
        if not spec.get("manualSelector"):
            gen = self.labels_for(meta["name"], meta["uid"])
            tmeta["labels"] = dict(tmeta.get("labels") or {}, **gen)
            key = "batch.kubernetes.io/controller-uid" if self.args.minor >= 27 \
                else "controller-uid"
            spec["selector"] = {"matchLabels": {key: meta["uid"]}}
        with self.lock:
            if (ns, meta["name"]) in self.objs["jobs"]:
                raise already_exists("jobs", "batch", meta["name"])
            if dry_run:
                meta["resourceVersion"] = ""
                return job, warnings
            self.jsim[meta["uid"]] = {"created": time.monotonic(), "start": None,
                                      "counted": set(), "succeeded": 0, "failed": 0,
                                      "completed": set(), "failed_idx": set(),
                                      "index_failures": collections.Counter(),
                                      "finished": None, "restarts": 0, "ready": 0}
            self.emit("jobs", "ADDED", job)
            return copy.deepcopy(job), warnings

    def get(self, res, ns, name):
        with self.lock:
            o = self.objs[res].get((ns, name))
            if o is None:
                raise not_found(res, "batch" if res == "jobs" else "", name)
            return copy.deepcopy(o)

    def delete_job(self, ns, name, policy, precond, dry_run):
        with self.lock:
            job = self.objs["jobs"].get((ns, name))
            if job is None:
                raise not_found("jobs", "batch", name)
            meta = job["metadata"]
            if precond.get("uid") and precond["uid"] != meta["uid"]:
                raise conflict("jobs", "batch", name,
                               "Precondition failed: UID in precondition: %s, UID in object "
                               "meta: %s" % (precond["uid"], meta["uid"]))
            if precond.get("resourceVersion") and \
                    precond["resourceVersion"] != meta["resourceVersion"]:
                raise conflict("jobs", "batch", name,
                               "Precondition failed: ResourceVersion in precondition: %s, "
                               "ResourceVersion in object meta: %s"
                               % (precond["resourceVersion"], meta["resourceVersion"]))
            if policy not in (None, "Orphan", "Background", "Foreground"):
                raise ApiError(422, "Invalid", 'DeleteOptions.meta.k8s.io "" is invalid: '
                               'propagationPolicy: Unsupported value: %s: supported values: '
                               '"Foreground", "Background", "Orphan", "nil"' % go_q(policy),
                               {"group": "meta.k8s.io", "kind": "DeleteOptions",
                                "causes": [{"reason": "FieldValueNotSupported",
                                            "message": 'Unsupported value: %s: supported '
                                            'values: "Foreground", "Background", "Orphan", '
                                            '"nil"' % go_q(policy),
                                            "field": "propagationPolicy"}]})
            if policy is None:
                # batch/v1 Jobs default to orphaning their pods.
                policy = "Orphan"
            if dry_run:
                return copy.deepcopy(job), 200
            if meta.get("deletionTimestamp"):
                return copy.deepcopy(job), 200
            if policy == "Background" and not meta.get("finalizers"):
                self.emit("jobs", "DELETED", job)
                return {"kind": "Status", "apiVersion": "v1", "metadata": {},
                        "status": "Success",
                        "details": {"name": name, "group": "batch", "kind": "jobs",
                                    "uid": meta["uid"]}}, 200
            fin = {"Orphan": "orphan", "Foreground": "foregroundDeletion"}.get(policy)

            def mark(o):
                o["metadata"]["deletionTimestamp"] = now_ts()
                o["metadata"]["deletionGracePeriodSeconds"] = 0
                if fin and fin not in o["metadata"].get("finalizers", []):
                    o["metadata"].setdefault("finalizers", []).append(fin)
            self.update("jobs", job, mark)
            return copy.deepcopy(job), 200

    def patch_job(self, ns, name, ctype, patch, sub):
        with self.lock:
            job = self.objs["jobs"].get((ns, name))
            if job is None:
                raise not_found("jobs", "batch", name)
            if not isinstance(patch, dict):
                raise bad_request("json: cannot unmarshal into Go value of type map[string]"
                                  "interface {}")
            new = copy.deepcopy(job)
            if sub == "status":
                new["status"] = merge_patch(new.get("status") or {}, patch.get("status") or {})
            else:
                new = merge_patch(new, {k: v for k, v in patch.items() if k != "status"})
            return self.replace_job(job, new, sub)

    def replace_job(self, job, new, sub, check_rv=None):
        name = job["metadata"]["name"]
        if check_rv and check_rv != job["metadata"]["resourceVersion"]:
            raise conflict("jobs", "batch", name, "the object has been modified; please apply "
                           "your changes to the latest version and try again")
        fe = FieldErrors()
        for k in ("name", "namespace", "uid", "creationTimestamp"):
            if new.get("metadata", {}).get(k) != job["metadata"].get(k):
                fe.invalid("metadata." + k, new.get("metadata", {}).get(k),
                           "field is immutable")
        if sub != "status":
            dec = Decoder(self.args.minor, "Ignore")
            dec.decode_job(new)
            mutable = {"suspend", "parallelism", "activeDeadlineSeconds",
                       "ttlSecondsAfterFinished", "backoffLimit", "maxFailedIndexes",
                       "completions" if new.get("spec", {}).get("completionMode") != "Indexed"
                       else ""}
            old_spec, new_spec = job["spec"], new.get("spec") or {}
            for k in sorted(set(old_spec) | set(new_spec)):
                if k in mutable:
                    continue
                if old_spec.get(k) != new_spec.get(k):
                    if k == "template" and job["spec"].get("suspend") and \
                            not self.jsim.get(job["metadata"]["uid"], {}).get("start"):
                        continue  # a never-started suspended Job's template may change
                    fe.invalid("spec." + k, new_spec.get(k), "field is immutable")
            for k in ("suspend", "parallelism", "activeDeadlineSeconds"):
                pass
            new["status"] = job.get("status", {})
            fe.raise_if_any("Job", "batch", name)
            validate_job(new, self.args.minor)
            if new["spec"] != job["spec"]:
                new["metadata"]["generation"] = job["metadata"].get("generation", 1) + 1
        else:
            fe.raise_if_any("Job", "batch", name)
            new["spec"] = job["spec"]
            new["metadata"] = job["metadata"]
        new["metadata"]["resourceVersion"] = job["metadata"]["resourceVersion"]

        def apply(o):
            o.clear()
            o.update(new)
        self.update("jobs", job, apply)
        self.cond.notify_all()
        return copy.deepcopy(job)

    def admit(self, name, ns=None):
        with self.lock:
            n = 0
            for (jns, jname), job in list(self.objs["jobs"].items()):
                if jname == name and (ns is None or ns == jns):
                    if job["spec"].get("suspend"):
                        new = copy.deepcopy(job)
                        new["spec"]["suspend"] = False
                        self.replace_job(job, new, None)
                    n += 1
            return n

    def expire(self, name):
        """Moves a started Job past its activeDeadlineSeconds."""
        with self.lock:
            n = 0
            for (_, jname), job in list(self.objs["jobs"].items()):
                sim = self.jsim.get(job["metadata"]["uid"])
                if jname == name and sim is not None and \
                        job["spec"].get("activeDeadlineSeconds") is not None:
                    sim["expired"] = True
                    n += 1
            return n

    def delete_pod(self, ns, name, by_user=True):
        with self.lock:
            pod = self.objs["pods"].get((ns, name))
            if pod is None:
                raise not_found("pods", "", name)
            self.terminate_pod(pod, counted_failure=by_user)
            return copy.deepcopy(pod)

    # -- the simulated cluster (called with the lock held)

    def pod_mode(self, jobname, index):
        for key in ([("%s:%d" % (jobname, index))] if index is not None else []) + [jobname]:
            v = self.pod_faults.get(key)
            if v is None:
                continue
            if isinstance(v, list):
                m = v.pop(0) if v else None
                if not v:
                    del self.pod_faults[key]
                if m:
                    return m
                continue
            return v
        return self.args.run

    def create_pod(self, job, index, sim):
        minor = self.args.minor
        jm = job["metadata"]
        tpl = copy.deepcopy(job["spec"]["template"])
        meta = tpl.get("metadata") or {}
        meta.pop("creationTimestamp", None)
        base = jm["name"] + "-" if index is None else "%s-%d-" % (jm["name"], index)
        if len(base) > 58:
            base = base[:58]
        meta["generateName"] = base
        meta["name"] = base + rand5()
        meta["namespace"] = jm["namespace"]
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_ts()
        meta["labels"] = dict(meta.get("labels") or {})
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": jm["name"],
                                    "uid": jm["uid"], "controller": True,
                                    "blockOwnerDeletion": True}]
        if minor >= 23:
            meta["finalizers"] = ["batch.kubernetes.io/job-tracking"]
        spec = tpl.get("spec") or {}
        if index is not None:
            meta["annotations"] = dict(meta.get("annotations") or {})
            meta["annotations"]["batch.kubernetes.io/job-completion-index"] = str(index)
            if sim["index_failures"][index] and minor >= 28:
                meta["annotations"]["batch.kubernetes.io/job-index-failure-count"] = \
                    str(sim["index_failures"][index])
            if minor >= 28:
                meta["labels"]["batch.kubernetes.io/job-completion-index"] = str(index)
            spec.setdefault("hostname", "%s-%d" % (jm["name"], index))
            for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
                env = c.setdefault("env", [])
                if not any(e.get("name") == "JOB_COMPLETION_INDEX" for e in env):
                    env.append({"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                        "apiVersion": "v1", "fieldPath":
                        "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}})
        spec.setdefault("serviceAccountName", "default")
        spec.setdefault("serviceAccount", "default")
        spec.setdefault("enableServiceLinks", True)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        spec.setdefault("priority", 0)
        spec.setdefault("tolerations", [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
             "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
             "effect": "NoExecute", "tolerationSeconds": 300}])
        pod = {"kind": "Pod", "apiVersion": "v1", "metadata": meta, "spec": spec,
               "status": {"phase": "Pending", "qosClass": self.qos(spec)}}
        mode = self.pod_mode(jm["name"], index)
        self.psim[meta["uid"]] = {"job": jm["uid"], "index": index, "mode": mode,
                                  "stage": "created", "at": time.monotonic(), "proc": None,
                                  "counted": False, "log": None, "deleting": None,
                                  "restart_at": None}
        self.emit("pods", "ADDED", pod)
        return pod

    @staticmethod
    def qos(spec):
        cs = spec.get("containers") or []
        if all(not (c.get("resources") or {}).get("limits") and
               not (c.get("resources") or {}).get("requests") for c in cs):
            return "BestEffort"
        for c in cs:
            r = c.get("resources") or {}
            lim, req = r.get("limits") or {}, r.get("requests") or {}
            if "cpu" not in lim or "memory" not in lim or \
                    any(parse_quantity(req.get(k, lim[k])) != parse_quantity(lim[k])
                        for k in ("cpu", "memory")):
                return "Burstable"
        return "Guaranteed"

    def terminate_pod(self, pod, counted_failure):
        """Starts deleting a pod: deletionTimestamp now, gone on a later tick."""
        s = self.psim.get(pod["metadata"]["uid"])
        if pod["metadata"].get("deletionTimestamp"):
            return
        if s is not None:
            if not counted_failure:
                s["counted"] = True  # the controller's own deletions do not count
            self.kill_proc(s)
            s["deleting"] = time.monotonic()

        def mark(o):
            o["metadata"]["deletionTimestamp"] = now_ts()
            o["metadata"]["deletionGracePeriodSeconds"] = 30
            if counted_failure and o["status"].get("phase") in ("Pending", "Running") and \
                    s is not None:
                o["status"]["phase"] = "Failed"
                for cs in o["status"].get("containerStatuses") or []:
                    if "terminated" not in cs.get("state", {}):
                        cs["state"] = {"terminated": {"exitCode": 137, "reason": "Error",
                                                      "startedAt": now_ts(),
                                                      "finishedAt": now_ts()}}
                        cs["ready"] = False
        self.update("pods", pod, mark)
        if s is None:
            self.emit("pods", "DELETED", pod)

    @staticmethod
    def kill_proc(s):
        p = s.get("proc")
        if p is not None and p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass

    def container_statuses(self, pod, state, ready, restart=0, last=None):
        out = []
        for c in pod["spec"].get("containers") or []:
            cs = {"name": c["name"], "state": copy.deepcopy(state), "lastState": last or {},
                  "ready": ready, "restartCount": restart, "image": c.get("image", ""),
                  "imageID": "", "started": "running" in state}
            if "running" in state or "terminated" in state:
                cs["imageID"] = "docker.io/library/" + c.get("image", "") + "@sha256:" + "0" * 64
                cs["containerID"] = "containerd://" + pod["metadata"]["uid"].replace("-", "")
            out.append(cs)
        return out

    def mkcond(self, typ, status, reason=None, message=None):
        c = {"type": typ, "status": status, "lastProbeTime": None,
             "lastTransitionTime": now_ts()}
        if reason:
            c["reason"] = reason
        if message:
            c["message"] = message
        return c

    def set_cond(self, conds, new):
        for i, c in enumerate(conds):
            if c["type"] == new["type"]:
                if c["status"] != new["status"] or c.get("reason") != new.get("reason"):
                    conds[i] = new
                return
        conds.append(new)

    def kubelet_tick(self, pod, s, now):
        """Moves one pod along; called with the lock held."""
        st = pod["status"]
        if s["deleting"] is not None:
            owner_gone = s["job"] is None or s["job"] not in self.jsim
            if now - s["deleting"] >= 0.05 and (s["counted"] or owner_gone):
                self.kill_proc(s)
                self.emit("pods", "DELETED", pod)
                self.psim.pop(pod["metadata"]["uid"], None)
            return
        mode = s["mode"]
        stage = s["stage"]
        rp = pod["spec"].get("restartPolicy", "Never")

        def upd(f):
            self.update("pods", pod, f)

        if stage == "created" and now - s["at"] >= 0.01:
            if mode == "unschedulable":
                def f(o):
                    o["status"]["conditions"] = [self.mkcond(
                        "PodScheduled", "False", "Unschedulable",
                        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: "
                        "0/1 nodes are available: 1 No preemption victims found for incoming "
                        "pod.")]
                upd(f)
                s["stage"] = "stuck"
                return

            def f(o):
                o["spec"]["nodeName"] = NODE
                o["status"]["conditions"] = [self.mkcond("PodScheduled", "True")]
            upd(f)
            s["stage"], s["at"] = "scheduled", now
        elif stage == "scheduled" and now - s["at"] >= 0.01:
            def f(o):
                o["status"]["hostIP"] = "127.0.0.1"
                o["status"]["startTime"] = now_ts()
                o["status"]["conditions"] = [
                    self.mkcond("Initialized", "True"),
                    self.mkcond("Ready", "False", "ContainersNotReady",
                              "containers with unready status: [%s]" % " ".join(
                                  c["name"] for c in o["spec"]["containers"])),
                    self.mkcond("ContainersReady", "False", "ContainersNotReady",
                              "containers with unready status: [%s]" % " ".join(
                                  c["name"] for c in o["spec"]["containers"])),
                    self.mkcond("PodScheduled", "True")]
                o["status"]["containerStatuses"] = self.container_statuses(
                    o, {"waiting": {"reason": "ContainerCreating"}}, False)
            upd(f)
            s["stage"], s["at"] = "creating", now
        elif stage == "creating" and now - s["at"] >= 0.02:
            if mode == "image-pull":
                img = pod["spec"]["containers"][0].get("image", "")

                def f(o):
                    o["status"]["containerStatuses"] = self.container_statuses(
                        o, {"waiting": {"reason": "ImagePullBackOff",
                                        "message": 'Back-off pulling image "%s"' % img}}, False)
                upd(f)
                s["stage"] = "stuck"
                return
            self.start_container(pod, s, now)
        elif stage == "restarting" and now >= s["restart_at"]:
            self.start_container(pod, s, now)
        elif stage == "running":
            code, reason = None, None
            if s["proc"] is not None:
                rc = s["proc"].poll()
                if rc is not None:
                    code = rc if rc >= 0 else 128 - rc
                    s["logf"].close()
            elif mode == "hang":
                pass
            elif now - s["at"] >= s["delay"]:
                if mode == "oom":
                    code, reason = 137, "OOMKilled"
                elif mode == "evicted":
                    self.evict(pod, s)
                    return
                elif mode.startswith("fail:"):
                    code = int(mode[5:])
                elif mode.startswith("start-error"):
                    code, reason = 128, "StartError"
                else:
                    code = 0
            if code is None:
                return
            self.container_exited(pod, s, code, reason or ("Completed" if code == 0
                                                            else "Error"), rp)

    def start_container(self, pod, s, now):
        mode = s["mode"]
        s["delay"] = self.args.run_delay
        if mode.startswith("slow:"):
            s["delay"] = float(mode[5:])
        s["proc"] = None
        msg = None
        if mode == "exec":
            msg = self.spawn(pod, s)
        if msg is not None:
            s["stage"] = "running"
            self.container_exited(pod, s, 128, "StartError", pod["spec"].get("restartPolicy"),
                                  msg)
            return
        restarts = s.get("restarts", 0)
        last = s.get("last_state")

        def f(o):
            o["status"]["phase"] = "Running"
            o["status"]["podIP"] = "127.0.0.1"
            o["status"]["podIPs"] = [{"ip": "127.0.0.1"}]
            o["status"]["conditions"] = [
                self.mkcond("Initialized", "True"), self.mkcond("Ready", "True"),
                self.mkcond("ContainersReady", "True"), self.mkcond("PodScheduled", "True")]
            o["status"]["containerStatuses"] = self.container_statuses(
                o, {"running": {"startedAt": now_ts()}}, True, restarts, last)
        self.update("pods", pod, f)
        s["stage"], s["at"] = "running", now

    def spawn(self, pod, s):
        c = pod["spec"]["containers"][0]
        env = {}
        for k in ["PATH", "HOME", "TMPDIR", "LANG"] + list(self.args.pass_env):
            if k in os.environ:
                env[k] = os.environ[k]
        env["HOSTNAME"] = pod["spec"].get("hostname") or pod["metadata"]["name"]
        for e in c.get("env") or []:
            if "value" in e:
                env[e["name"]] = expand_vars(e["value"], env)
            elif (e.get("valueFrom") or {}).get("fieldRef"):
                env[e["name"]] = field_ref(pod, e["valueFrom"]["fieldRef"].get("fieldPath", ""))
            else:
                env[e["name"]] = ""
        argv = [expand_vars(a, env) for a in (c.get("command") or []) + (c.get("args") or [])]
        if not argv:
            return "no command: the double has no image entrypoints"
        exe = self.args.maps.get(argv[0]) or self.args.maps.get(os.path.basename(argv[0]))
        if exe is None:
            if os.path.isabs(argv[0]) and os.access(argv[0], os.X_OK):
                exe = argv[0]
            else:
                return ('failed to create containerd task: exec: "%s": executable file not '
                        'found in $PATH (map it with --map)' % argv[0])
        cwd = c.get("workingDir") if c.get("workingDir") and \
            os.path.isdir(c["workingDir"]) else self.args.workdir
        path = os.path.join(self.logdir, "%s_%s.log" % (pod["metadata"]["namespace"],
                                                         pod["metadata"]["name"]))
        s["log"] = path
        s["logf"] = open(path, "ab")
        try:
            s["proc"] = subprocess.Popen([exe] + argv[1:], env=env, cwd=cwd,
                                         stdin=subprocess.DEVNULL, stdout=s["logf"],
                                         stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as e:
            s["logf"].close()
            return "failed to start %s: %s" % (exe, e)
        if self.args.verbose:
            sys.stderr.write("kube_double: pod %s runs %s\n" % (pod["metadata"]["name"],
                                                               [exe] + argv[1:]))
        return None

    def container_exited(self, pod, s, code, reason, rp, message=None):
        term = {"exitCode": code, "reason": reason, "startedAt": now_ts(),
                "finishedAt": now_ts()}
        if message:
            term["message"] = message
        if code != 0 and rp == "OnFailure":
            s["restarts"] = s.get("restarts", 0) + 1
            s["last_state"] = {"terminated": term}
            s["stage"], s["restart_at"] = "restarting", time.monotonic() + \
                max(self.args.pod_backoff, 0.05)
            n = s["restarts"]

            def f(o):
                o["status"]["conditions"] = [
                    self.mkcond("Initialized", "True"),
                    self.mkcond("Ready", "False", "ContainersNotReady"),
                    self.mkcond("ContainersReady", "False", "ContainersNotReady"),
                    self.mkcond("PodScheduled", "True")]
                o["status"]["containerStatuses"] = self.container_statuses(
                    o, {"waiting": {"reason": "CrashLoopBackOff", "message":
                                    "back-off restarting failed container"}}, False, n,
                    {"terminated": term})
            self.update("pods", pod, f)
            return
        s["stage"] = "done"
        restarts = s.get("restarts", 0)

        def f(o):
            o["status"]["phase"] = "Succeeded" if code == 0 else "Failed"
            o["status"]["conditions"] = [
                self.mkcond("Initialized", "True", "PodCompleted"),
                self.mkcond("Ready", "False", "PodCompleted"),
                self.mkcond("ContainersReady", "False", "PodCompleted"),
                self.mkcond("PodScheduled", "True")]
            o["status"]["containerStatuses"] = self.container_statuses(
                o, {"terminated": term}, False, restarts, s.get("last_state"))
        self.update("pods", pod, f)

    def evict(self, pod, s):
        s["stage"] = "done"
        self.kill_proc(s)

        def f(o):
            st = o["status"]
            st["phase"] = "Failed"
            st["reason"] = "Evicted"
            st["message"] = "The node was low on resource: memory. Threshold quantity: 100Mi, " \
                "available memory: 90Mi. "
            conds = [self.mkcond("Initialized", "True"),
                     self.mkcond("Ready", "False", "PodFailed"),
                     self.mkcond("ContainersReady", "False", "PodFailed"),
                     self.mkcond("PodScheduled", "True")]
            if self.args.minor >= 26:
                conds.insert(0, self.mkcond("DisruptionTarget", "True", "TerminationByKubelet",
                                          "The node was low on resource: memory."))
            st["conditions"] = conds
            st["containerStatuses"] = self.container_statuses(
                o, {"terminated": {"exitCode": 137, "reason": "Error", "startedAt": now_ts(),
                                   "finishedAt": now_ts()}}, False)
        self.update("pods", pod, f)

    # -- the Job controller

    def job_pods(self, uid):
        return [p for p in self.objs["pods"].values()
                if self.psim.get(p["metadata"]["uid"], {}).get("job") == uid]

    def match_pfp(self, job, pod):
        """(action, rule index) of the first podFailurePolicy rule matching a
        failed pod, or (None, None)."""
        rules = ((job["spec"].get("podFailurePolicy") or {}).get("rules")) or []
        st = pod["status"]
        for i, r in enumerate(rules):
            oec = r.get("onExitCodes")
            if oec:
                for cs in st.get("containerStatuses") or []:
                    if oec.get("containerName") and cs["name"] != oec["containerName"]:
                        continue
                    t = cs.get("state", {}).get("terminated")
                    if not t or t["exitCode"] == 0:
                        continue
                    inset = t["exitCode"] in oec.get("values", [])
                    if inset == (oec.get("operator") == "In"):
                        return r["action"], i, "Container %s for pod %s/%s failed with exit " \
                            "code %d matching %s rule at index %d" % (
                                cs["name"], pod["metadata"]["namespace"],
                                pod["metadata"]["name"], t["exitCode"], r["action"], i)
            for pat in r.get("onPodConditions") or []:
                for c in st.get("conditions") or []:
                    if c["type"] == pat.get("type") and c["status"] == pat.get("status", "True"):
                        return r["action"], i, "Pod %s/%s has condition %s matching %s rule " \
                            "at index %d" % (pod["metadata"]["namespace"],
                                             pod["metadata"]["name"], c["type"], r["action"], i)
        return None, None, None

    def status_counts(self, st, sim, spec, active, ready, terminating):
        """Writes the counters of JobStatus the way the 1.x controller does."""
        minor = self.args.minor
        if sim.get("start_ts") and not st.get("startTime"):
            st["startTime"] = sim["start_ts"]
        if active or minor >= 24:
            st["active"] = active
        else:
            st.pop("active", None)
        for k, v in (("succeeded", sim["succeeded"]), ("failed", sim["failed"])):
            if v:
                st[k] = v
            else:
                st.pop(k, None)
        if minor >= 24:
            st["ready"] = ready
        if minor >= 29:
            st["terminating"] = terminating
        if minor >= 23:
            st["uncountedTerminatedPods"] = {}
        if spec.get("completionMode") == "Indexed":
            if sim["completed"]:
                st["completedIndexes"] = compress_indexes(sim["completed"])
            if spec.get("backoffLimitPerIndex") is not None and sim["failed_idx"]:
                st["failedIndexes"] = compress_indexes(sim["failed_idx"])

    def finish_job(self, job, sim, ctype, reason, message):
        now = now_ts()
        minor = self.args.minor
        n = 0
        for p in self.job_pods(job["metadata"]["uid"]):
            if p["status"].get("phase") in ("Pending", "Running"):
                self.terminate_pod(p, counted_failure=False)
                n += 1
        sim["finished"] = time.monotonic()
        if ctype == "Complete" and minor >= 31:
            reason, message = "CompletionsReached", "Reached expected number of succeeded pods"

        def f(o):
            st = o["status"]
            self.status_counts(st, sim, o["spec"], 0, 0, n)
            conds = st.setdefault("conditions", [])
            if ctype == "Failed" and (minor >= 31 or
                                      (minor >= 26 and reason == "PodFailurePolicy")):
                conds.append(self.mkcond("FailureTarget", "True", reason, message))
            if ctype == "Complete" and minor >= 31:
                conds.append(self.mkcond("SuccessCriteriaMet", "True", "CompletionsReached",
                                         "Reached expected number of succeeded pods"))
            c = self.mkcond(ctype, "True", reason, message)
            c["lastProbeTime"] = now
            conds.append(c)
            if ctype == "Complete":
                st["completionTime"] = now
        self.update("jobs", job, f)

    def reconcile(self, job, now):
        meta = job["metadata"]
        sim = self.jsim.get(meta["uid"])
        if sim is None:
            return
        spec = job["spec"]
        minor = self.args.minor
        pods = self.job_pods(meta["uid"])
        # Garbage collection of a Job being deleted.
        if meta.get("deletionTimestamp"):
            fins = meta.get("finalizers") or []
            if "orphan" in fins:
                for p in pods:
                    self.update("pods", p, lambda o: o["metadata"].pop("ownerReferences", None))
                    self.psim[p["metadata"]["uid"]]["job"] = None
                self.emit("jobs", "DELETED", job)
                self.jsim.pop(meta["uid"], None)
            elif "foregroundDeletion" in fins:
                for p in pods:
                    self.terminate_pod(p, counted_failure=False)
                if not pods:
                    self.emit("jobs", "DELETED", job)
                    self.jsim.pop(meta["uid"], None)
            return
        finished = any(c["type"] in ("Complete", "Failed") and c["status"] == "True"
                       for c in job["status"].get("conditions") or [])
        if finished:
            ttl = spec.get("ttlSecondsAfterFinished")
            if ttl is not None and sim["finished"] is not None and \
                    now - sim["finished"] >= ttl:
                self.emit("jobs", "DELETED", job)
                self.jsim.pop(meta["uid"], None)
            self.release_finalizers(pods, sim)
            return
        indexed = spec.get("completionMode") == "Indexed"
        completions = spec.get("completions")
        # Count pods that finished since the last pass.
        fail_job = None
        for p in pods:
            ps = self.psim.get(p["metadata"]["uid"])
            if ps is None or ps["counted"]:
                continue
            phase = p["status"].get("phase")
            if phase not in ("Succeeded", "Failed"):
                continue
            ps["counted"] = True
            idx = ps["index"]
            if phase == "Succeeded":
                if indexed:
                    if idx not in sim["completed"] and idx not in sim["failed_idx"]:
                        sim["completed"].add(idx)
                        sim["succeeded"] += 1
                else:
                    sim["succeeded"] += 1
                continue
            action, _, msg = self.match_pfp(job, p)
            if action == "Ignore":
                continue
            sim["failed"] += 1
            if action == "FailJob":
                fail_job = fail_job or ("PodFailurePolicy", msg)
            if indexed and spec.get("backoffLimitPerIndex") is not None:
                sim["index_failures"][idx] += 1
                if action == "FailIndex" or \
                        sim["index_failures"][idx] > spec["backoffLimitPerIndex"]:
                    sim["failed_idx"].add(idx)
        self.release_finalizers(pods, sim)
        active = [p for p in pods if p["status"].get("phase") in ("Pending", "Running")
                  and not p["metadata"].get("deletionTimestamp")]
        terminating = [p for p in pods if p["metadata"].get("deletionTimestamp")]
        restarts = sum(cs.get("restartCount", 0) for p in active
                       for cs in p["status"].get("containerStatuses") or [])
        # Suspension.
        if spec.get("suspend"):
            for p in active:
                self.terminate_pod(p, counted_failure=False)

            def f(o):
                self.status_counts(o["status"], sim, spec, 0, 0, len(terminating))
                o["status"].pop("startTime", None)
                self.set_cond(o["status"].setdefault("conditions", []),
                              self.mkcond("Suspended", "True", "JobSuspended", "Job suspended"))
            sim["start"] = sim["start_ts"] = None
            self.update("jobs", job, f)
            return
        if sim["start"] is None:
            sim["start"] = now
            sim["start_ts"] = now_ts()
        # Termination.
        ads = spec.get("activeDeadlineSeconds")
        if fail_job:
            self.finish_job(job, sim, "Failed", *fail_job)
            return
        if sim["failed"] + restarts > spec.get("backoffLimit", 6):
            self.finish_job(job, sim, "Failed", "BackoffLimitExceeded",
                            "Job has reached the specified backoff limit")
            return
        if ads is not None and (now - sim["start"] >= ads or sim.get("expired")):
            self.finish_job(job, sim, "Failed", "DeadlineExceeded",
                            "Job was active longer than specified deadline")
            return
        mfi = spec.get("maxFailedIndexes")
        if indexed and mfi is not None and len(sim["failed_idx"]) > mfi:
            self.finish_job(job, sim, "Failed", "MaxFailedIndexesExceeded",
                            "Job has exceeded the specified maximal number of failed indexes")
            return
        if indexed:
            done = len(sim["completed"]) + len(sim["failed_idx"]) >= completions
            if done and not [p for p in active]:
                if sim["failed_idx"]:
                    self.finish_job(job, sim, "Failed", "FailedIndexes",
                                    "Job has failed indexes")
                else:
                    self.finish_job(job, sim, "Complete", None, None)
                return
            if done:
                for p in active:
                    self.terminate_pod(p, counted_failure=False)
        else:
            if completions is not None and sim["succeeded"] >= completions:
                self.finish_job(job, sim, "Complete", None, None)
                return
            if completions is None and sim["succeeded"] > 0 and not active:
                self.finish_job(job, sim, "Complete", None, None)
                return
        # Pod creation (with the optional backoff before replacing failures).
        par = spec.get("parallelism", 1)
        backoff_ok = sim.get("last_fail_seen", 0) + self.args.pod_backoff <= now
        if sim["failed"] != sim.get("failed_seen", 0):
            sim["failed_seen"] = sim["failed"]
            sim["last_fail_seen"] = now
            backoff_ok = self.args.pod_backoff <= 0
        if backoff_ok:
            if indexed:
                busy = {self.psim[p["metadata"]["uid"]]["index"] for p in active}
                if spec.get("podReplacementPolicy") == "Failed":
                    busy |= {self.psim[p["metadata"]["uid"]]["index"] for p in terminating
                             if p["metadata"]["uid"] in self.psim}
                todo = [i for i in range(completions) if i not in sim["completed"]
                        and i not in sim["failed_idx"] and i not in busy]
                for i in todo[:max(0, par - len(active))]:
                    active.append(self.create_pod(job, i, sim))
            else:
                want = par if completions is None else min(par, completions - sim["succeeded"])
                if completions is None and sim["succeeded"] > 0:
                    want = 0
                for _ in range(want - len(active)):
                    active.append(self.create_pod(job, None, sim))
                for p in active[max(want, 0):]:
                    self.terminate_pod(p, counted_failure=False)
                active = active[:max(want, 0)]
        ready = sum(1 for p in active if any(c["type"] == "Ready" and c["status"] == "True"
                                             for c in p["status"].get("conditions") or []))

        def f(o):
            st = o["status"]
            self.status_counts(st, sim, spec, len(active), ready, len(terminating))
            for c in st.get("conditions") or []:
                if c["type"] == "Suspended" and c["status"] == "True":
                    c.update(self.mkcond("Suspended", "False", "JobResumed", "Job resumed"))
        self.update("jobs", job, f)

    def release_finalizers(self, pods, sim):
        for p in pods:
            ps = self.psim.get(p["metadata"]["uid"])
            if ps and ps["counted"] and "batch.kubernetes.io/job-tracking" in \
                    (p["metadata"].get("finalizers") or []):
                def f(o):
                    o["metadata"]["finalizers"].remove("batch.kubernetes.io/job-tracking")
                    if not o["metadata"]["finalizers"]:
                        del o["metadata"]["finalizers"]
                self.update("pods", p, f)

    def loop(self):
        while not self.stopping:
            with self.lock:
                now = time.monotonic()
                try:
                    for pod in list(self.objs["pods"].values()):
                        s = self.psim.get(pod["metadata"]["uid"])
                        if s is not None:
                            self.kubelet_tick(pod, s, now)
                    for job in list(self.objs["jobs"].values()):
                        self.reconcile(job, now)
                    # Background deletion: pods whose owner is gone go too.
                    for pod in list(self.objs["pods"].values()):
                        s = self.psim.get(pod["metadata"]["uid"])
                        if s and s["job"] and s["job"] not in self.jsim and \
                                s["deleting"] is None:
                            self.terminate_pod(pod, counted_failure=False)
                except Exception as e:  # keep simulating; say what broke, once
                    key = repr(e)
                    if key not in self.reported:
                        self.reported.add(key)
                        import traceback
                        traceback.print_exc()
                self.cond.wait(0.02)
        with self.lock:
            for s in self.psim.values():
                self.kill_proc(s)


# --------------------------------------------------------------- the server

TEMPLATES = [
    (re.compile(r"/apis/batch/v1/namespaces/([^/]+)/jobs"), "jobs-coll"),
    (re.compile(r"/apis/batch/v1/namespaces/([^/]+)/jobs/([^/]+)"), "job"),
    (re.compile(r"/apis/batch/v1/namespaces/([^/]+)/jobs/([^/]+)/status"), "job-status"),
    (re.compile(r"/apis/batch/v1/jobs"), "jobs-all"),
    (re.compile(r"/api/v1/namespaces/([^/]+)/pods"), "pods-coll"),
    (re.compile(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)"), "pod"),
    (re.compile(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)/log"), "pod-log"),
    (re.compile(r"/api/v1/pods"), "pods-all"),
]
TEMPLATE_TEXT = {
    "jobs-coll": "/apis/batch/v1/namespaces/{ns}/jobs",
    "job": "/apis/batch/v1/namespaces/{ns}/jobs/{name}",
    "job-status": "/apis/batch/v1/namespaces/{ns}/jobs/{name}/status",
    "jobs-all": "/apis/batch/v1/jobs",
    "pods-coll": "/api/v1/namespaces/{ns}/pods",
    "pod": "/api/v1/namespaces/{ns}/pods/{name}",
    "pod-log": "/api/v1/namespaces/{ns}/pods/{name}/log",
    "pods-all": "/api/v1/pods",
}
STATIC = {"/version", "/api", "/apis", "/api/v1", "/apis/batch", "/apis/batch/v1",
          "/healthz", "/livez", "/readyz"}


def discovery(path, minor):
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]}
    batch = {"name": "batch", "versions": [{"groupVersion": "batch/v1", "version": "v1"}],
             "preferredVersion": {"groupVersion": "batch/v1", "version": "v1"}}
    if path == "/apis":
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [batch]}
    if path == "/apis/batch":
        return dict(batch, kind="APIGroup", apiVersion="v1")
    verbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
    if path == "/apis/batch/v1":
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "batch/v1",
                "resources": [
                    {"name": "jobs", "singularName": "job", "namespaced": True, "kind": "Job",
                     "verbs": verbs, "categories": ["all"]},
                    {"name": "jobs/status", "singularName": "", "namespaced": True,
                     "kind": "Job", "verbs": ["get", "patch", "update"]}]}
    return {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
        {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod",
         "verbs": ["get", "list", "watch", "delete"], "shortNames": ["po"],
         "categories": ["all"]},
        {"name": "pods/log", "singularName": "", "namespaced": True, "kind": "Pod",
         "verbs": ["get"]}]}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kube-double/1"
    timeout = 120  # an idle keep-alive connection is dropped after this

    def log_message(self, fmt, *args):
        if self.server.args.verbose:
            sys.stderr.write("kube_double: %s %s\n" % (self.address_string(), fmt % args))

    # -- plumbing

    def read_body(self):
        if getattr(self, "_body", None) is not None:
            return self._body
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        data = b""
        if "chunked" in te:
            while True:
                line = self.rfile.readline(1024)
                n = int(line.split(b";")[0].strip() or b"0", 16)
                if n == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                data += self.rfile.read(n)
                self.rfile.readline(8)
                if len(data) > MAX_BODY:
                    self.close_connection = True
                    raise ApiError(413, "RequestEntityTooLarge",
                                   "Request entity too large: limit is 3145728")
        else:
            n = int(self.headers.get("Content-Length") or 0)
            if n > MAX_BODY:
                self.close_connection = True
                raise ApiError(413, "RequestEntityTooLarge",
                               "Request entity too large: limit is 3145728")
            data = self.rfile.read(n) if n else b""
        self._body = data
        return data

    def json_body(self):
        data = self.read_body()
        ct = (self.headers.get("Content-Type") or "application/json").split(";")[0].strip()
        if self.command == "POST" or self.command == "PUT":
            if ct not in ("application/json", "*/*", ""):
                raise ApiError(415, "UnsupportedMediaType",
                               "the body of the request was in an unknown format - accepted "
                               "media types include: application/json, application/yaml, "
                               "application/vnd.kubernetes.protobuf")
        try:
            return json.loads(data.decode("utf-8")) if data else None
        except (ValueError, UnicodeDecodeError) as e:
            raise bad_request("couldn't get version/kind; json parse error: %s" % e)

    def send_json(self, code, obj, headers=None):
        if getattr(self, "lost_reply", False):
            self.lost_reply = False
            self.close_connection = True
            return
        data = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
        self.send_response(code)
        self.send_header("Audit-Id", str(uuid.uuid4()))
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            if isinstance(v, list):
                for vv in v:
                    self.send_header(k, vv)
            else:
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_text(self, code, text, ctype="text/plain; charset=utf-8"):
        data = text.encode() if isinstance(text, str) else text
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def route(self, path):
        for rx, name in TEMPLATES:
            m = rx.fullmatch(path)
            if m:
                return name, m.groups()
        return None, ()

    def user(self):
        srv = self.server
        if not srv.tokens and not srv.args.client_ca:
            return "anonymous"
        auth = self.headers.get("Authorization") or ""
        if auth[:7].lower() == "bearer ":
            return srv.tokens.get(auth[7:].strip())
        if srv.args.client_ca:
            try:
                cert = self.connection.getpeercert()
            except (AttributeError, ValueError):
                cert = None
            if cert:
                for rdn in cert.get("subject", ()):
                    for k, v in rdn:
                        if k == "commonName":
                            return v
        return None

    # -- dispatch

    def dispatch(self):
        self._body = None
        url = urllib.parse.urlsplit(self.path)
        path = url.path
        q = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
        st = self.server.store
        if path == CONTROL:
            return self.control()
        name, groups = self.route(path)
        watch = q.get("watch") in ("1", "true") and self.command == "GET" and \
            name in ("jobs-coll", "jobs-all", "pods-coll", "pods-all")
        if watch:
            tkey = "GET watch " + ("jobs" if name.startswith("jobs") else "pods")
        elif name:
            tkey = self.command + " " + TEMPLATE_TEXT[name]
        elif path in STATIC:
            tkey = self.command + " " + path
        else:
            tkey = self.command + " other"
        try:
            user = self.user()
            with st.lock:
                st.counters["requests"][tkey] += 1
                st.counters["total_requests"] += 1
                if user is None:
                    st.counters["unauthorized"] += 1
                else:
                    st.counters["users"][user] += 1
                if watch and user is not None:
                    st.counters["watch_connections"] += 1
            if user is None:
                self.read_body()
                raise ApiError(401, "Unauthorized", "Unauthorized")
            fault = self.take_fault(path + ("?" + url.query if url.query else ""), watch)
            if fault is not None:
                f = fault["fault"]
                if f.startswith("slow:"):
                    time.sleep(float(f[5:]))
                elif f == "close":
                    self.read_body()
                    self.close_connection = True
                    return
                elif f == "lost-reply":
                    # the request takes effect, its answer never arrives
                    self.lost_reply = True
                elif f in ("cut-watch", "gone"):
                    pass
                else:
                    self.read_body()
                    code = int(f)
                    if code == 429:
                        raise ApiError(429, "TooManyRequests",
                                       "Too many requests, please try again later.",
                                       {"retryAfterSeconds": 1}, {"Retry-After": "1"})
                    if code == 503:
                        ra = int(fault.get("retry_after", 1))
                        raise ApiError(503, "ServiceUnavailable",
                                       "the server is currently unable to handle the request",
                                       {"retryAfterSeconds": ra}, {"Retry-After": str(ra)})
                    if code == 504:
                        raise ApiError(504, "Timeout", "the server was unable to return a "
                                       "response in the time allotted, but may still be "
                                       "processing the request")
                    raise ApiError(code, "InternalError" if code == 500 else "BadRequest",
                                   "Internal error occurred: injected fault",
                                   {"causes": [{"message": "injected fault"}]})
            self.serve(path, q, name, groups, watch, fault)
        except ApiError as e:
            try:
                self.read_body()
            except ApiError:
                pass
            self.send_json(e.code, e.body, e.headers)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, socket.timeout):
            self.close_connection = True

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = do_PATCH = dispatch

    def take_fault(self, target, watch):
        st = self.server.store
        with st.lock:
            for i, f in enumerate(st.faults):
                if f["fault"] in ("cut-watch", "gone") and not watch:
                    continue
                if f.get("verb") and f["verb"].upper() != self.command:
                    continue
                if f.get("path") and f["path"] not in target:
                    continue
                f["times"] -= 1
                if f["times"] <= 0:
                    del st.faults[i]
                st.counters["faults_served"][f["fault"]] += 1
                return f
        return None

    def control(self):
        st = self.server.store
        try:
            if self.command == "GET":
                with st.lock:
                    c = st.counters
                    out = {"requests": dict(c["requests"]), "total_requests": c["total_requests"],
                           "watch_connections": c["watch_connections"],
                           "active_watches": self.server.active_watches,
                           "unauthorized": c["unauthorized"], "users": dict(c["users"]),
                           "faults_served": dict(c["faults_served"]),
                           "pending_faults": [f["fault"] for f in st.faults],
                           "pod_faults": st.pod_faults,
                           "resource_version": str(st.rv),
                           "compacted_resource_version": str(st.compacted),
                           "jobs": len(st.objs["jobs"]), "pods": len(st.objs["pods"])}
                return self.send_json(200, out)
            if self.command == "DELETE":
                with st.lock:
                    st.reset_counters()
                    st.faults = []
                    st.pod_faults = {}
                return self.send_json(200, {"ok": True})
            if self.command != "POST":
                return self.send_json(405, {"error": "GET, POST or DELETE"})
            body = json.loads(self.read_body() or b"{}")
            out = {"ok": True}
            with st.lock:
                for f in body.get("plan") or []:
                    if isinstance(f, str):
                        f = {"fault": f}
                    f = dict(f)
                    name = str(f.get("fault", ""))
                    if not (re.fullmatch(r"[45][0-9][0-9]", name) or name in
                            ("cut-watch", "gone", "close", "lost-reply") or re.fullmatch(r"slow:[0-9.]+", name)):
                        return self.send_json(400, {"error": "unknown fault %r" % name})
                    f["fault"] = name
                    f["times"] = int(f.get("times", 1))
                    st.faults.append(f)
                for k, v in (body.get("pod_faults") or {}).items():
                    st.pod_faults[k] = list(v) if isinstance(v, list) else v
                if body.get("admit"):
                    out["admitted"] = st.admit(body["admit"], body.get("namespace"))
                if body.get("compact"):
                    st.compact()
                if body.get("expire"):
                    out["expired"] = st.expire(body["expire"])
                if body.get("evict"):
                    out["evicted"] = self.evict(body["evict"])
            return self.send_json(200, out)
        except (ValueError, AttributeError, TypeError) as e:
            return self.send_json(400, {"error": str(e)})

    def evict(self, key):
        st = self.server.store
        job, _, idx = key.partition(":")
        n = 0
        for pod in list(st.objs["pods"].values()):
            s = st.psim.get(pod["metadata"]["uid"])
            refs = pod["metadata"].get("ownerReferences") or [{}]
            if s and s["stage"] in ("running", "creating", "scheduled", "stuck") and \
                    refs[0].get("name") == job and (not idx or str(s["index"]) == idx):
                st.evict(pod, s)
                n += 1
        return n

    def serve(self, path, q, name, groups, watch, fault):
        st = self.server.store
        args = self.server.args
        m = self.command
        if path in STATIC:
            if m != "GET":
                raise ApiError(405, "MethodNotAllowed",
                               "the server does not allow this method on the requested resource")
            if path in ("/healthz", "/livez", "/readyz"):
                return self.send_text(200, "ok")
            if path == "/version":
                return self.send_json(200, self.server.version_info)
            return self.send_json(200, discovery(path, args.minor))
        if name is None:
            if path.startswith("/api"):
                raise ApiError(404, "NotFound", "the server could not find the requested resource",
                               {})
            return self.send_text(404, "404 page not found\n")
        ns = groups[0] if name not in ("jobs-all", "pods-all") else None
        if ns is not None and args.namespace and ns not in args.namespace:
            raise not_found("namespaces", "", ns)
        res = "jobs" if name.startswith("job") else "pods"
        group = "batch" if res == "jobs" else ""
        if watch:
            return self.watch(res, ns, q, fault)
        dry = q.get("dryRun") == "All"
        if name in ("jobs-coll", "jobs-all", "pods-coll", "pods-all"):
            if m == "GET":
                return self.list(res, ns, q)
            if m == "POST" and name == "jobs-coll":
                body = self.json_body()
                if not isinstance(body, dict):
                    raise bad_request('Job in version "v1" cannot be handled as a Job: json: '
                                      'cannot unmarshal into Go value of type batch.Job')
                strict = q.get("fieldValidation") or "Warn"
                if strict not in ("Ignore", "Warn", "Strict") and args.minor >= 25:
                    raise bad_request("fieldValidation parameter unsupported: %s" % strict)
                job, warns = st.create_job(ns, body, strict, dry)
                hdr = {"Warning": ['299 - %s' % json.dumps(w) for w in warns]} if warns else {}
                return self.send_json(201, job, hdr)
            if m == "DELETE" and name == "jobs-coll":
                opts = self.json_body() or {}
                sel = parse_label_selector(q.get("labelSelector", ""))
                fsel = parse_field_selector(q.get("fieldSelector", ""), "jobs")
                policy = q.get("propagationPolicy") or opts.get("propagationPolicy")
                items = []
                with st.lock:
                    for (jns, jname), job in sorted(st.objs["jobs"].items()):
                        if jns == ns and labels_match(sel, job["metadata"].get("labels")) \
                                and fields_match(fsel, job):
                            items.append(copy.deepcopy(job))
                            st.delete_job(ns, jname, policy, {}, dry)
                    rv = str(st.rv)
                return self.send_json(200, {"kind": "JobList", "apiVersion": "batch/v1",
                                            "metadata": {"resourceVersion": rv},
                                            "items": items})
            raise ApiError(405, "MethodNotAllowed",
                           "the server does not allow this method on the requested resource")
        oname = groups[1]
        if name == "pod-log":
            if m != "GET":
                raise ApiError(405, "MethodNotAllowed",
                               "the server does not allow this method on the requested resource")
            with st.lock:
                pod = st.objs["pods"].get((ns, oname))
                if pod is None:
                    raise not_found("pods", "", oname)
                s = st.psim.get(pod["metadata"]["uid"]) or {}
                if pod["status"].get("phase") == "Pending":
                    raise bad_request('container "%s" in pod "%s" is waiting to start: '
                                      'ContainerCreating' % (pod["spec"]["containers"][0]["name"],
                                                             oname))
                logp = s.get("log")
            data = b""
            if logp and os.path.exists(logp):
                with open(logp, "rb") as fh:
                    data = fh.read()
            return self.send_text(200, data)
        if m == "GET":
            return self.send_json(200, st.get(res, ns, oname))
        if m == "DELETE":
            opts = self.json_body() or {}
            if not isinstance(opts, dict):
                raise bad_request("invalid DeleteOptions")
            if res == "pods":
                return self.send_json(200, st.delete_pod(ns, oname))
            policy = q.get("propagationPolicy") or opts.get("propagationPolicy")
            if policy is None and "orphanDependents" in opts:
                policy = "Orphan" if opts["orphanDependents"] else "Background"
            obj, code = st.delete_job(ns, oname, policy, opts.get("preconditions") or {}, dry)
            return self.send_json(code, obj)
        if res == "jobs" and m == "PATCH":
            ct = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            if ct not in ("application/merge-patch+json",
                          "application/strategic-merge-patch+json"):
                self.read_body()
                raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an "
                               "unknown format - accepted media types include: "
                               "application/merge-patch+json, "
                               "application/strategic-merge-patch+json (in this double)")
            patch = self.json_body()
            sub = "status" if name == "job-status" else None
            return self.send_json(200, st.patch_job(ns, oname, ct, patch, sub))
        if res == "jobs" and m == "PUT":
            body = self.json_body()
            if not isinstance(body, dict):
                raise bad_request("invalid body")
            with st.lock:
                job = st.objs["jobs"].get((ns, oname))
                if job is None:
                    raise not_found("jobs", "batch", oname)
                rv = (body.get("metadata") or {}).get("resourceVersion")
                if not rv:
                    raise ApiError(422, "Invalid", 'Job.batch "%s" is invalid: metadata.'
                                   'resourceVersion: Invalid value: 0x0: must be specified for '
                                   'an update' % oname, {"name": oname, "group": "batch",
                                                         "kind": "Job", "causes": [{
                                                             "reason": "FieldValueInvalid",
                                                             "message": "Invalid value: 0x0: "
                                                             "must be specified for an update",
                                                             "field": "metadata.resourceVersion"
                                                         }]})
                body["apiVersion"], body["kind"] = "batch/v1", "Job"
                return self.send_json(200, st.replace_job(
                    job, body, "status" if name == "job-status" else None, rv))
        raise ApiError(405, "MethodNotAllowed",
                       "the server does not allow this method on the requested resource")

    def list(self, res, ns, q):
        st = self.server.store
        sel = parse_label_selector(q.get("labelSelector", ""))
        fsel = parse_field_selector(q.get("fieldSelector", ""), res)
        rvq = q.get("resourceVersion", "")
        match = q.get("resourceVersionMatch", "")
        limit = int(q.get("limit") or 0) if (q.get("limit") or "0").isdigit() else 0
        cont = q.get("continue", "")
        start = ""
        if cont:
            try:
                c = json.loads(base64.urlsafe_b64decode(cont + "==="))
                start = c["start"]
            except (ValueError, KeyError, TypeError):
                raise bad_request("continue key is not valid: incorrect encoded start "
                                  "resourceVersion (version meta.k8s.io/v1)")
        if rvq not in ("", "0"):
            if not rvq.isdigit():
                raise bad_request("resourceVersion: Invalid value: %s: strconv.ParseUint: "
                                  "parsing %s: invalid syntax" % (json.dumps(rvq),
                                                                  json.dumps(rvq)))
            deadline = time.monotonic() + 3
            with st.lock:
                while int(rvq) > st.rv and time.monotonic() < deadline:
                    st.cond.wait(deadline - time.monotonic())
                if int(rvq) > st.rv:
                    raise ApiError(504, "Timeout", "Too large resource version: %s, current: %d"
                                   % (rvq, st.rv), {"causes": [{
                                       "reason": "ResourceVersionTooLarge",
                                       "message": "Too large resource version"}],
                                       "retryAfterSeconds": 1})
                if match == "Exact" and int(rvq) < st.rv:
                    raise ApiError(410, "Expired", "too old resource version: %s (%d)"
                                   % (rvq, st.rv))
        with st.lock:
            items = []
            for (ons, oname), o in sorted(st.objs[res].items()):
                if ns is not None and ons != ns:
                    continue
                if start and "%s/%s" % (ons, oname) <= start:
                    continue
                if labels_match(sel, o["metadata"].get("labels")) and fields_match(fsel, o):
                    it = copy.deepcopy(o)
                    # A typed list's items carry no kind/apiVersion.
                    it.pop("kind", None)
                    it.pop("apiVersion", None)
                    items.append(it)
            rv = str(st.rv)
        meta = {"resourceVersion": rv}
        if limit and len(items) > limit:
            last = items[limit - 1]["metadata"]
            meta["continue"] = base64.urlsafe_b64encode(json.dumps(
                {"v": "meta.k8s.io/v1", "rv": int(rv),
                 "start": "%s/%s" % (last["namespace"], last["name"])}).encode()).decode() \
                .rstrip("=")
            meta["remainingItemCount"] = len(items) - limit
            items = items[:limit]
        kind = "JobList" if res == "jobs" else "PodList"
        return self.send_json(200, {"kind": kind, "apiVersion": "batch/v1" if res == "jobs"
                                    else "v1", "metadata": meta, "items": items})

    # -- watch

    def peer_closed(self):
        """Whether the watch client went away (EOF or a TLS close)."""
        sock = self.connection
        try:
            r, _, _ = select.select([sock], [], [], 0)
        except (OSError, ValueError):
            return True
        if not r:
            return False
        old = sock.gettimeout()
        try:
            sock.settimeout(0.01)
            return sock.recv(1) == b""
        except (socket.timeout, ssl.SSLWantReadError, BlockingIOError):
            return False
        except (OSError, ssl.SSLError):
            return True
        finally:
            try:
                sock.settimeout(old)
            except OSError:
                pass

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def event(self, etype, obj):
        self.chunk((json.dumps({"type": etype, "object": obj}, separators=(",", ":"))
                    + "\n").encode())

    def watch(self, res, ns, q, fault):
        st = self.server.store
        args = self.server.args
        sel = parse_label_selector(q.get("labelSelector", ""))
        fsel = parse_field_selector(q.get("fieldSelector", ""), res)
        rvq = q.get("resourceVersion", "")
        if rvq not in ("", "0") and not rvq.isdigit():
            raise bad_request("resourceVersion: Invalid value: %s: strconv.ParseUint: parsing "
                              "%s: invalid syntax" % (json.dumps(rvq), json.dumps(rvq)))
        bookmarks = q.get("allowWatchBookmarks") in ("true", "1")
        try:
            timeout = float(q.get("timeoutSeconds") or args.watch_timeout)
        except ValueError:
            raise bad_request("invalid timeoutSeconds")
        initial_end = q.get("sendInitialEvents") == "true" and args.minor >= 27
        kind, apiv = ("Job", "batch/v1") if res == "jobs" else ("Pod", "v1")
        self.send_response(200)
        self.send_header("Audit-Id", str(uuid.uuid4()))
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        cut = fault is not None and fault["fault"] == "cut-watch"
        with st.lock:
            self.server.active_watches += 1
        try:
            with st.lock:
                if fault is not None and fault["fault"] == "gone":
                    pending = [("ERROR", status_obj(
                        410, "Expired", "too old resource version: %s (%d)"
                        % (rvq or "0", st.rv)))]
                    last = None
                elif rvq in ("", "0") or initial_end:
                    pending = []
                    for (ons, _), o in sorted(st.objs[res].items()):
                        if (ns is None or ons == ns) and \
                                labels_match(sel, o["metadata"].get("labels")) and \
                                fields_match(fsel, o):
                            pending.append(("ADDED", copy.deepcopy(o)))
                    last = st.rv
                    if initial_end:
                        pending.append(("BOOKMARK", {
                            "kind": kind, "apiVersion": apiv, "metadata": {
                                "resourceVersion": str(last),
                                "annotations": {"k8s.io/initial-events-end": "true"}}}))
                elif int(rvq) < st.compacted:
                    pending = [("ERROR", status_obj(
                        410, "Expired", "too old resource version: %s (%d)"
                        % (rvq, st.compacted + 1)))]
                    last = None
                else:
                    pending, last = [], int(rvq)
            end = time.monotonic() + timeout
            next_bm = time.monotonic() + args.bookmark_interval
            sent = 0
            while True:
                for etype, obj in pending:
                    self.event(etype, obj)
                    sent += 1
                    if cut:
                        self.close_connection = True
                        try:
                            self.connection.shutdown(socket.SHUT_RDWR)
                        except OSError:
                            pass
                        return
                    if etype == "ERROR":
                        last = None
                if last is None:
                    break
                now = time.monotonic()
                if self.peer_closed():
                    self.close_connection = True
                    return
                if now >= end or st.stopping:
                    break
                if bookmarks and now >= next_bm:
                    with st.lock:
                        newest = max(last, st.rv)
                        if not any(e[0] > last for e in st.history):
                            last = newest
                    self.event("BOOKMARK", {"kind": kind, "apiVersion": apiv,
                                            "metadata": {"resourceVersion": str(last)}})
                    next_bm = now + args.bookmark_interval
                pending = []
                with st.lock:
                    if last < st.compacted:
                        pending = [("ERROR", status_obj(
                            410, "Expired", "too old resource version: %d (%d)"
                            % (last, st.compacted + 1)))]
                        continue
                    evs = [e for e in reversed(st.history) if e[0] > last]
                    if not evs:
                        wait = end - now
                        if bookmarks:
                            wait = min(wait, next_bm - now)
                        st.cond.wait(max(0.01, min(wait, 1.0)))
                        continue
                    for rv, r, etype, obj, prev in reversed(evs):
                        last = rv
                        if r != res:
                            continue
                        if ns is not None and obj["metadata"]["namespace"] != ns:
                            continue

                        def ok(o):
                            return o is not None and \
                                labels_match(sel, o["metadata"].get("labels")) and \
                                fields_match(fsel, o)
                        cur = ok(obj)
                        if etype == "MODIFIED":
                            was = ok(prev)
                            if cur and not was:
                                etype = "ADDED"
                            elif was and not cur:
                                etype = "DELETED"
                            elif not cur:
                                continue
                        elif not cur:
                            continue
                        pending.append((etype, copy.deepcopy(obj)))
            self.wfile.write(b"0\r\n\r\n")
        finally:
            with st.lock:
                self.server.active_watches -= 1


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, args):
        super().__init__(("127.0.0.1", args.port), Handler)
        self.args = args
        self.store = Store(args)
        self.active_watches = 0
        self.tokens = {}
        for t in args.token:
            tok, _, user = t.partition("=")
            self.tokens[tok] = user or "token-user"
        v = args.version
        m = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)(.*)", v)
        if not m:
            raise SystemExit("kube_double: --version must look like v1.30.0")
        self.version_info = {"major": m.group(1), "minor": m.group(2), "gitVersion": v,
                             "gitCommit": "0" * 40, "gitTreeState": "clean",
                             "buildDate": "2024-04-17T17:27:00Z", "goVersion": "go1.22.2",
                             "compiler": "gc", "platform": "linux/amd64"}
        if int(m.group(2)) >= 32:
            self.version_info["emulationMajor"] = m.group(1)
            self.version_info["emulationMinor"] = m.group(2)
        self.tls = None
        if args.tls:
            self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls.minimum_version = ssl.TLSVersion.TLSv1_2
            self.tls.load_cert_chain(args.tls[0], args.tls[1])
            self.tls.set_alpn_protocols(["http/1.1"])
            if args.client_ca:
                self.tls.load_verify_locations(args.client_ca)
                self.tls.verify_mode = ssl.CERT_OPTIONAL

    def finish_request(self, request, client_address):
        # The TLS handshake runs in the connection's own thread.
        if self.tls is None:
            super().finish_request(request, client_address)
            return
        request.settimeout(10)
        try:
            conn = self.tls.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as e:
            if self.args.verbose:
                sys.stderr.write("kube_double: TLS handshake failed: %s\n" % e)
            return
        try:
            conn.settimeout(None)
            super().finish_request(conn, client_address)
        finally:
            try:
                conn.close()
            except OSError:
                pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"),
                    help="serve HTTPS with this certificate (without: plain HTTP)")
    ap.add_argument("--client-ca", help="accept client certificates signed by this CA; "
                    "the subject CN is the user")
    ap.add_argument("--token", action="append", default=[], metavar="TOKEN[=USER]")
    ap.add_argument("--version", default="v1.30.0")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--run", default="succeed",
                    help="succeed | fail:CODE | exec | hang | slow:S | oom | evicted | "
                    "image-pull | unschedulable")
    ap.add_argument("--run-delay", type=float, default=0.2)
    ap.add_argument("--map", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--pass-env", action="append", default=[], metavar="NAME")
    ap.add_argument("--workdir", default=os.getcwd())
    ap.add_argument("--bookmark-interval", type=float, default=1.0)
    ap.add_argument("--history", type=int, default=1000)
    ap.add_argument("--watch-timeout", type=float, default=1800.0)
    ap.add_argument("--pod-backoff", type=float, default=0.0)
    ap.add_argument("--namespace", action="append", default=[])
    ap.add_argument("--lifetime", type=float, default=3600.0)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    args.maps = {}
    for m in args.map:
        k, _, v = m.partition("=")
        if not v:
            ap.error("--map wants NAME=PATH")
        args.maps[k] = os.path.abspath(v)
    mv = re.fullmatch(r"v(\d+)\.(\d+)\..*", args.version)
    if not mv:
        ap.error("--version must look like v1.30.0")
    args.minor = int(mv.group(2))

    server = Server(args)
    print(server.server_address[1], flush=True)
    sim = threading.Thread(target=server.store.loop, daemon=True)
    sim.start()
    timer = threading.Timer(args.lifetime, server.shutdown)
    timer.daemon = True
    timer.start()
    signal.signal(signal.SIGTERM, lambda *a: threading.Thread(target=server.shutdown).start())
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.store.stopping = True
        with server.store.lock:
            server.store.cond.notify_all()
        sim.join(2)
        server.server_close()
        import shutil
        shutil.rmtree(server.store.logdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
