"""kube_double_store.py - the object store of the API double.

ObjectStore holds the objects by resource and (namespace, name), the
resourceVersion counter, the event history that watches replay (compacted
past --history events, or on request), the lock and condition that every
reader and writer shares, and the request counters and fault lists that the
control API reads and sets.  emit() is the one way a change is recorded.

kube_double_cluster.Store adds the resources' behaviour to it.  Uses
kube_double_status.
"""

import collections
import copy
import tempfile
import threading

from kube_double_status import not_found


class ObjectStore:
    """Objects, the resourceVersion counter, the event history for watches,
    and the control state; a base of kube_double_cluster.Store."""

    def __init__(self, args):
        self.args = args
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.rv = 100
        self.compacted = self.rv  # events with rv <= this are gone
        self.objs = {"jobs": {}, "pods": {}, "workloads": {}}
        self.kueue_admitted = {}  # job uid -> its Workload's usage of the quota
        self.kueue_hold = False   # finished Workloads keep their quota (control API)
        self.max_in_flight = {}   # kctl.dev/session label -> most pods at once
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

    def get(self, res, ns, name):
        with self.lock:
            o = self.objs[res].get((ns, name))
            if o is None:
                raise not_found(res, {"jobs": "batch", "workloads": "kueue.x-k8s.io"}
                                .get(res, ""), name)
            return copy.deepcopy(o)
