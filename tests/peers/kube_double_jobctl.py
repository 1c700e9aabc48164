"""kube_double_jobctl.py - the simulated Job controller.

JobController, a part of kube_double_cluster.Store, reconciles each Job on
every tick as kube-controller-manager does, following the server version:
counting finished Pods (podFailurePolicy rules, backoffLimitPerIndex), the
status counters and conditions, suspend and resume, backoffLimit,
activeDeadlineSeconds, maxFailedIndexes, completion (Indexed or not), Pod
creation with the optional --pod-backoff, the tracking finalizers, garbage
collection (Orphan, Foreground) and ttlSecondsAfterFinished.

Called with the store's lock held.  Uses kube_double_meta; the Pods it makes
and ends come from kube_double_pods.PodLifecycle.
"""

import time

from kube_double_meta import now_ts


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


class JobController:
    """Reconciliation of Jobs and their Pods; a part of Store."""

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
