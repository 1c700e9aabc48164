"""kube_double_control.py - the fault and mode switches the tests use.

ControlHandler answers /__control__ (no auth): GET reads the counters,
DELETE resets them and the faults, POST queues request faults ("plan": status
codes, slow:S, close, lost-reply, cut-watch, gone; each for a verb, a path
and a number of times), sets Pod run modes ("pod_faults", by JOB or
JOB:INDEX), and admits, expires, evicts or compacts.  take_fault picks the
queued fault a request meets; kube_double_server.Handler.dispatch applies it.

Uses the store (kube_double_cluster.Store) through self.server.store.
"""

import json
import re

CONTROL = "/__control__"


class ControlHandler:
    """The control API and the fault queue; a part of Handler."""

    def take_fault(self, target, watch):
        st = self.server.store
        with st.lock:
            for i, f in enumerate(st.faults):
                if f["fault"] in ("cut-watch", "cut-event", "gone") and not watch:
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
                           "jobs": len(st.objs["jobs"]), "pods": len(st.objs["pods"]),
                           "workloads": len(st.objs["workloads"]),
                           "max_pods_in_flight": dict(st.max_in_flight)}
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
                            ("cut-watch", "cut-event", "gone", "close", "lost-reply") or re.fullmatch(r"slow:[0-9.]+", name)):
                        return self.send_json(400, {"error": "unknown fault %r" % name})
                    f["fault"] = name
                    f["times"] = int(f.get("times", 1))
                    st.faults.append(f)
                for k, v in (body.get("pod_faults") or {}).items():
                    st.pod_faults[k] = list(v) if isinstance(v, list) else v
                if body.get("admit"):
                    out["admitted"] = st.admit(body["admit"], body.get("namespace"))
                if "kueue_hold_quota" in body:
                    st.kueue_hold = bool(body["kueue_hold_quota"])
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
