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
import copy
import http.server
import json
import os
import re
import select
import signal
import socket
import ssl
import sys
import threading
import time
import urllib.parse
import uuid

from kube_double_cluster import Store
from kube_double_select import (fields_match, labels_match, parse_field_selector,
                                parse_label_selector)
from kube_double_status import ApiError, bad_request, not_found, status_obj

CONTROL = "/__control__"
MAX_BODY = 3 * 1024 * 1024  # the apiserver's request size limit


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
