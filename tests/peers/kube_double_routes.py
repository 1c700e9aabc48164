"""kube_double_routes.py - the paths the API double serves.

TEMPLATES maps a request path to its route name, TEMPLATE_TEXT names the
route in the request counters, STATIC lists the paths without a resource,
and discovery() answers /api, /apis and the group versions as the apiserver
does.

Uses the standard library only.
"""

import re

TEMPLATES = [
    (re.compile(r"/apis/batch/v1/namespaces/([^/]+)/jobs"), "jobs-coll"),
    (re.compile(r"/apis/batch/v1/namespaces/([^/]+)/jobs/([^/]+)"), "job"),
    (re.compile(r"/apis/batch/v1/namespaces/([^/]+)/jobs/([^/]+)/status"), "job-status"),
    (re.compile(r"/apis/batch/v1/jobs"), "jobs-all"),
    (re.compile(r"/api/v1/namespaces/([^/]+)/pods"), "pods-coll"),
    (re.compile(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)"), "pod"),
    (re.compile(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)/log"), "pod-log"),
    (re.compile(r"/api/v1/pods"), "pods-all"),
    (re.compile(r"/apis/kueue.x-k8s.io/v1beta1/namespaces/([^/]+)/workloads"), "workloads-coll"),
    (re.compile(r"/apis/kueue.x-k8s.io/v1beta1/namespaces/([^/]+)/workloads/([^/]+)"),
     "workload"),
    (re.compile(r"/apis/kueue.x-k8s.io/v1beta1/workloads"), "workloads-all"),
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
    "workloads-coll": "/apis/kueue.x-k8s.io/v1beta1/namespaces/{ns}/workloads",
    "workload": "/apis/kueue.x-k8s.io/v1beta1/namespaces/{ns}/workloads/{name}",
    "workloads-all": "/apis/kueue.x-k8s.io/v1beta1/workloads",
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
