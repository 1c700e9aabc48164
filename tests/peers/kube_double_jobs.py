"""kube_double_jobs.py - the Job resource's API verbs.

JobApi, a part of kube_double_cluster.Store, does what the apiserver does for
batch/v1 Jobs: defaulting (SetDefaults_Job), create (generateName, dryRun,
fieldValidation, the generated selector and labels of the version), delete
with propagationPolicy and preconditions, merge patch and update of the Job
and its status subresource with the immutable-field rules, and the control
API's admit (unsuspend) and expire (past activeDeadlineSeconds).

Uses kube_double_status, kube_double_meta and kube_double_validate; the store
methods (emit, update) come from kube_double_store.ObjectStore.
"""

import collections
import copy
import time
import uuid

from kube_double_meta import now_ts, rand5
from kube_double_status import (ApiError, FieldErrors, already_exists, bad_request,
                                conflict, go_q, not_found)
from kube_double_validate import Decoder, validate_job


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


class JobApi:
    """Create, delete, patch and update of Jobs; a part of Store."""

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
