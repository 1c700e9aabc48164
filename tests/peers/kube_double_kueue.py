"""kube_double_kueue.py - Kueue's Workloads and admission, as the double plays them.

With --kueue RESOURCE=QUOTA (e.g. nvidia.com/gpu=1) the double serves
kueue.x-k8s.io/v1beta1 Workloads (list, get and watch; namespaced and across
namespaces) and plays Kueue's Job integration and scheduler for one
ClusterQueue (KUEUE_CQ) with one flavor (KUEUE_FLAVOR) and that nominal quota,
shared by every LocalQueue (or those of --kueue-queue, when given; a Job for
another gets an Inadmissible Workload):

  - a Job labelled kueue.x-k8s.io/queue-name gets a Workload in its namespace,
    owned by the Job (ownerReferences, controller) and labelled
    kueue.x-k8s.io/job-uid, its pod set "main" counting the Job's parallelism;
  - pending Workloads are admitted first come, first served (BestEffortFIFO):
    one that fits the quota left gets QuotaReserved and Admitted (True) and its
    Job is resumed (spec.suspend false); one that does not gets QuotaReserved
    False, reason Pending, with Kueue's message ("couldn't assign flavors to
    pod set main: insufficient unused quota for R in flavor F, N more needed");
  - a finished Job's Workload gets Finished and frees its quota; a deleted
    Job's Workload is deleted (the garbage collector).

The control API's {"kueue_hold_quota": true} keeps finished Workloads' quota
(as if their Jobs ran on) until {"kueue_hold_quota": false}: a test can hold a
wait for as long as it needs to look at it, whatever the machine's speed.

Without --kueue the Workload API is absent, as on a cluster without Kueue: its
paths answer 404 NotFound.

Uses kube_double_meta for timestamps; a part of kube_double_cluster.Store.
"""

import copy
import hashlib
import uuid

from kube_double_meta import now_ts

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_CQ = "cluster-queue"
KUEUE_FLAVOR = "default-flavor"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
UID_LABEL = "kueue.x-k8s.io/job-uid"


def quantity(v):
    """An integer resource quantity ("1", 2); anything else counts as 0."""
    try:
        return int(str(v))
    except ValueError:
        return 0


class KueueModel:
    """Workloads made from Jobs, and their admission; a part of Store."""

    def kueue_quota(self):
        res, _, n = (self.args.kueue or "").partition("=")
        return res, quantity(n)

    def kueue_request(self, job):
        """What the Job's pod set asks of the quota's resource: per pod, times parallelism."""
        res, _ = self.kueue_quota()
        per = 0
        for c in job["spec"]["template"]["spec"].get("containers") or []:
            r = c.get("resources") or {}
            per += quantity((r.get("requests") or r.get("limits") or {}).get(res, 0))
        return per * int(job["spec"].get("parallelism") or 1)

    def kueue_condition(self, wl, ctype, status, reason, message):
        conds = wl["status"].setdefault("conditions", [])
        for c in conds:
            if c["type"] == ctype:
                if (c["status"], c["reason"], c["message"]) != (status, reason, message):
                    if c["status"] != status:
                        c["lastTransitionTime"] = now_ts()
                    c.update(status=status, reason=reason, message=message)
                return
        conds.append({"type": ctype, "status": status, "reason": reason, "message": message,
                      "lastTransitionTime": now_ts(), "observedGeneration": 1})

    def kueue_make(self, job):
        meta = job["metadata"]
        h = hashlib.sha256(meta["uid"].encode()).hexdigest()[:5]
        wl = {"apiVersion": KUEUE_GROUP + "/v1beta1", "kind": "Workload",
              "metadata": {"name": "job-%s-%s" % (meta["name"][:50], h),
                           "namespace": meta["namespace"], "uid": str(uuid.uuid4()),
                           "creationTimestamp": now_ts(), "generation": 1,
                           "labels": {UID_LABEL: meta["uid"]},
                           "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
                                                "name": meta["name"], "uid": meta["uid"],
                                                "controller": True,
                                                "blockOwnerDeletion": True}]},
              "spec": {"queueName": meta["labels"][QUEUE_LABEL], "active": True,
                       "priority": 0,
                       "podSets": [{"name": "main",
                                    "count": int(job["spec"].get("parallelism") or 1),
                                    "template": copy.deepcopy(job["spec"]["template"])}]},
              "status": {"conditions": []}}
        self.emit("workloads", "ADDED", wl)

    def kueue_used(self):
        return sum(w["_usage"] for w in self.kueue_admitted.values())

    def kueue_tick(self):
        """Makes, admits and finishes Workloads; called with the lock held."""
        if not self.args.kueue:
            return
        res, quota = self.kueue_quota()
        owners = {}
        for wl in self.objs["workloads"].values():
            owners[wl["metadata"]["labels"][UID_LABEL]] = wl
        jobs = {j["metadata"]["uid"]: j for j in self.objs["jobs"].values()}
        for uid, job in jobs.items():
            if uid not in owners and QUEUE_LABEL in (job["metadata"].get("labels") or {}) \
                    and job["spec"].get("suspend"):
                self.kueue_make(job)
        # The garbage collector: a Workload whose Job is gone goes too.
        for uid, wl in list(owners.items()):
            if uid not in jobs:
                self.kueue_admitted.pop(uid, None)
                self.emit("workloads", "DELETED", wl)
        for wl in sorted(self.objs["workloads"].values(),
                         key=lambda w: int(w["metadata"]["resourceVersion"])):
            uid = wl["metadata"]["labels"][UID_LABEL]
            job = jobs.get(uid)
            if job is None:
                continue
            finished = [c for c in job.get("status", {}).get("conditions") or []
                        if c["type"] in ("Complete", "Failed") and c["status"] == "True"]
            if finished:
                if uid in self.kueue_admitted and not self.kueue_hold:
                    del self.kueue_admitted[uid]
                    self.update("workloads", wl, lambda o: self.kueue_condition(
                        o, "Finished", "True", "Succeeded" if finished[0]["type"] ==
                        "Complete" else "Failed", "Job finished"))
                continue
            if uid in self.kueue_admitted:
                continue
            self.kueue_consider(wl, job, res, quota)

    def kueue_consider(self, wl, job, res, quota):
        queue = wl["spec"]["queueName"]
        if self.args.kueue_queue and queue not in self.args.kueue_queue:
            self.update("workloads", wl, lambda o: self.kueue_condition(
                o, "QuotaReserved", "False", "Inadmissible",
                "LocalQueue %s doesn't exist" % queue))
            return
        need = self.kueue_request(job)
        used = self.kueue_used()
        if need > quota:
            text = ("couldn't assign flavors to pod set main: insufficient quota for %s in "
                    "flavor %s, request > maximum capacity (%d > %d)"
                    % (res, KUEUE_FLAVOR, need, quota))
        elif used + need > quota:
            text = ("couldn't assign flavors to pod set main: insufficient unused quota for "
                    "%s in flavor %s, %d more needed" % (res, KUEUE_FLAVOR, used + need - quota))
        else:
            self.kueue_admitted[job["metadata"]["uid"]] = {"_usage": need}

            def admit(o):
                o["status"]["admission"] = {"clusterQueue": KUEUE_CQ, "podSetAssignments": [{
                    "name": "main", "flavors": {res: KUEUE_FLAVOR},
                    "resourceUsage": {res: str(need)}, "count": o["spec"]["podSets"][0]["count"]}]}
                self.kueue_condition(o, "QuotaReserved", "True", "QuotaReserved",
                                     "Quota reserved in ClusterQueue %s" % KUEUE_CQ)
                self.kueue_condition(o, "Admitted", "True", "Admitted",
                                     "The workload is admitted")
            self.update("workloads", wl, admit)
            self.admit(job["metadata"]["name"], job["metadata"]["namespace"])
            return
        self.update("workloads", wl, lambda o: self.kueue_condition(
            o, "QuotaReserved", "False", "Pending", text))

    def pods_in_flight(self):
        """Pods of each kctl session (by its label) not yet over; called with the lock held."""
        n = {}
        for pod in self.objs["pods"].values():
            if pod["status"].get("phase") in ("Pending", "Running") or \
                    pod["metadata"].get("deletionTimestamp"):
                label = (pod["metadata"].get("labels") or {}).get("kctl.dev/session", "")
                n[label] = n.get(label, 0) + 1
        for label, count in n.items():
            self.max_in_flight[label] = max(self.max_in_flight.get(label, 0), count)
