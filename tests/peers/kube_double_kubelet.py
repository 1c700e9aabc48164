"""kube_double_kubelet.py - the simulated node: scheduling and running Pods.

Kubelet, a part of kube_double_cluster.Store, moves each Pod along on every
tick: scheduled (or stuck Unschedulable), ContainerCreating (or stuck in
ImagePullBackOff), running, then exited (Succeeded, Failed, OOMKilled,
StartError; restarted with CrashLoopBackOff under restartPolicy OnFailure) or
evicted.  Under --run exec it runs the container's command as a real process
(names mapped with --map, $(VAR) and fieldRef env expanded), its output the
Pod's log.

Called with the store's lock held.  Uses kube_double_meta; the container
statuses and conditions it writes come from kube_double_pods.PodLifecycle.
"""

import os
import re
import subprocess
import sys
import time

from kube_double_meta import now_ts

NODE = "kube-double-node"


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


class Kubelet:
    """The node's work on each Pod; a part of Store."""

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
