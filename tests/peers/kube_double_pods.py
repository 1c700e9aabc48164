"""kube_double_pods.py - Pods: their creation from a Job, their deletion.

PodLifecycle, a part of kube_double_cluster.Store, makes a Job's Pod from its
template as the Job controller does (generateName, owner reference, tracking
finalizer, the completion index annotation, label, hostname and env of
Indexed Jobs, the defaults the apiserver adds), picks its run mode from the
pod faults, and deletes Pods, by user request or the controller's, with a
grace period.  It also builds the Pod and Job conditions and container
statuses that the kubelet and the Job controller write.

Called with the store's lock held, except delete_pod, which takes it.  Uses
kube_double_status and kube_double_meta.
"""

import copy
import os
import signal
import time
import uuid

from kube_double_meta import now_ts, parse_quantity, rand5
from kube_double_status import not_found


class PodLifecycle:
    """Pod creation, deletion and status pieces; a part of Store."""

    def delete_pod(self, ns, name, by_user=True):
        with self.lock:
            pod = self.objs["pods"].get((ns, name))
            if pod is None:
                raise not_found("pods", "", name)
            self.terminate_pod(pod, counted_failure=by_user)
            return copy.deepcopy(pod)

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
