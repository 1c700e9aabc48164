"""kube_double_watch.py - watch streams.

WatchHandler answers ?watch=1 on Jobs and Pods with a chunked stream of
events, as the apiserver does: the initial ADDED events (or a replay from a
resourceVersion, 410 Expired when it is compacted), selector transitions
turned into ADDED and DELETED, bookmarks with allowWatchBookmarks,
sendInitialEvents, timeoutSeconds, and the cut-watch, cut-event and gone faults.  It ends
when the client goes away or the server stops.

Uses kube_double_status and kube_double_select; the events come from
self.server.store (kube_double_store.ObjectStore's history).
"""

import copy
import json
import select
import socket
import ssl
import time
import uuid

from kube_double_select import (fields_match, labels_match, parse_field_selector,
                                parse_label_selector)
from kube_double_status import bad_request, status_obj


class WatchHandler:
    """Watch streams; a part of Handler."""

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
        kind, apiv = {"jobs": ("Job", "batch/v1"), "pods": ("Pod", "v1"),
                      "workloads": ("Workload", "kueue.x-k8s.io/v1beta1")}[res]
        self.send_response(200)
        self.send_header("Audit-Id", str(uuid.uuid4()))
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        cut = fault is not None and fault["fault"] == "cut-watch"
        cut_event = fault is not None and fault["fault"] == "cut-event"
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
                    if cut_event:
                        # half of the first event's line: the client must not act on it
                        line = (json.dumps({"type": etype, "object": obj},
                                           separators=(",", ":")) + "\n").encode()
                        self.chunk(line[:len(line) // 2])
                        self.close_connection = True
                        try:
                            self.connection.shutdown(socket.SHUT_RDWR)
                        except OSError:
                            pass
                        return
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
