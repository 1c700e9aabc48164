"""kube_double_cluster.py - the whole simulated cluster, and its clock.

Store puts the parts together: the object store (kube_double_store), the Job
API (kube_double_jobs), Pods (kube_double_pods), the node (kube_double_kubelet)
the Job controller (kube_double_jobctl) and Kueue (kube_double_kueue).  loop() is the thread that drives
the kubelet and the controller until the server stops.

Uses those five modules.
"""

import time

from kube_double_jobctl import JobController
from kube_double_jobs import JobApi
from kube_double_kubelet import Kubelet
from kube_double_kueue import KueueModel
from kube_double_pods import PodLifecycle
from kube_double_store import ObjectStore


class Store(JobApi, PodLifecycle, Kubelet, JobController, KueueModel, ObjectStore):
    """Objects, the resourceVersion counter, the event history for watches,
    the simulated Job controller and kubelet, and the control state."""

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
                    self.kueue_tick()
                    self.pods_in_flight()
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
