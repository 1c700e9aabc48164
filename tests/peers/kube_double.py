#!/usr/bin/env python3
"""kube_double.py - a strict HTTPS test double of the Kubernetes API for Jobs.

Usage: kube_double.py --tls CERT KEY [--client-ca CA] [--token TOKEN[=USER]]...
                      [--version v1.30.0] [--run MODE] [--run-delay S]
                      [--map NAME=PATH]... [--pass-env NAME]... [--workdir DIR]
                      [--bookmark-interval S] [--history N] [--watch-timeout S]
                      [--pod-backoff S] [--namespace NS]... [--port N]
                      [--lifetime S] [--kueue RESOURCE=QUOTA]
                      [--kueue-queue NAME]... [--verbose]

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
  GET    /apis/kueue.x-k8s.io/v1beta1/namespaces/NS/workloads[/NAME],
         /apis/kueue.x-k8s.io/v1beta1/workloads      list/get/watch (--kueue)

Control API on the same port, without auth (see tests/peers/README.md):
  POST /__control__ {"plan": [FAULT...]} | {"pod_faults": {...}} |
                    {"admit": "JOB"} | {"expire": "JOB"} | {"compact": true} |
                    {"kueue_hold_quota": BOOL}
  GET /__control__  counters; DELETE /__control__ resets them.

The double is split by concern into kube_double_*.py next to this file, as
the C code is split into modules; each says what it holds:
  kube_double.py          this command line
  kube_double_server.py   HTTPS server, TLS, auth, routing, fault injection
  kube_double_http.py     request bodies and answers
  kube_double_routes.py   paths and discovery documents
  kube_double_rest.py     list, create, get, update, patch, delete, logs
  kube_double_watch.py    watch streams
  kube_double_control.py  /__control__: faults and run modes
  kube_double_cluster.py  the simulated cluster (Store) and its clock
  kube_double_store.py    objects, resourceVersions, watch history
  kube_double_jobs.py     the Job API: defaults, create, delete, patch, update
  kube_double_pods.py     Pods: made from Jobs, deleted
  kube_double_kubelet.py  the node: scheduling and running Pods
  kube_double_jobctl.py   the Job controller
  kube_double_kueue.py    Kueue: Workloads and their admission (--kueue)
  kube_double_validate.py decoding and validating Jobs
  kube_double_select.py   label and field selectors
  kube_double_meta.py     names, labels, quantities, timestamps
  kube_double_status.py   Status errors
"""

import argparse
import os
import re
import signal
import sys
import threading

from kube_double_server import Server


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
    ap.add_argument("--kueue", metavar="RESOURCE=QUOTA",
                    help="serve Kueue's Workloads and admit Jobs within this quota")
    ap.add_argument("--kueue-queue", action="append", default=[], metavar="LOCALQUEUE")
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
