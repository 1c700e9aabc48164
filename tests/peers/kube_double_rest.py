"""kube_double_rest.py - the REST verbs on Jobs and Pods.

RestHandler serves what is not a watch: discovery and health paths, list
(selectors, limit and continue, resourceVersion and resourceVersionMatch),
create, get, update, merge patch, delete and deletecollection of Jobs and their
status subresource, and get, delete and log of Pods.  Unknown paths and verbs
get the apiserver's 404 and 405; a namespace outside --namespace is NotFound.

Uses kube_double_status, kube_double_routes and kube_double_select; the
objects come from self.server.store (kube_double_cluster.Store).
"""

import base64
import copy
import json
import os
import time

from kube_double_routes import STATIC, discovery
from kube_double_select import (fields_match, labels_match, parse_field_selector,
                                parse_label_selector)
from kube_double_status import ApiError, bad_request, not_found


class RestHandler:
    """Everything but watches on the API's resources; a part of Handler."""

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
        ns = groups[0] if name not in ("jobs-all", "pods-all", "workloads-all") else None
        if ns is not None and args.namespace and ns not in args.namespace:
            raise not_found("namespaces", "", ns)
        res = "jobs" if name.startswith("job") else "pods" if name.startswith("pod") \
            else "workloads"
        group = "batch" if res == "jobs" else ""
        if watch:
            return self.watch(res, ns, q, fault)
        if res == "workloads":
            # Kueue's Workloads are read here, never written: kctl only looks
            if m != "GET":
                raise ApiError(405, "MethodNotAllowed",
                               "the server does not allow this method on the requested resource")
            if name == "workload":
                return self.send_json(200, st.get(res, ns, groups[1]))
            return self.list(res, ns, q)
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
        kind, apiv = {"jobs": ("JobList", "batch/v1"), "pods": ("PodList", "v1"),
                      "workloads": ("WorkloadList", "kueue.x-k8s.io/v1beta1")}[res]
        return self.send_json(200, {"kind": kind, "apiVersion": apiv, "metadata": meta,
                                    "items": items})
