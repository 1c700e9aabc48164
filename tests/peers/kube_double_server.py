"""kube_double_server.py - the API double's HTTPS server: TLS, auth, routing.

Server is a threading HTTP server that does each connection's TLS handshake
in its own thread (client certificates optional with --client-ca), holds the
bearer tokens, the /version answer and the store (kube_double_cluster.Store).
Handler puts the request handler together from its parts (kube_double_http,
kube_double_control, kube_double_rest, kube_double_watch); its dispatch()
counts the request, authenticates it (401), applies an injected fault and
hands it on.

Uses the modules named above and kube_double_routes and kube_double_status.
"""

import http.server
import re
import socket
import ssl
import sys
import time
import urllib.parse

from kube_double_cluster import Store
from kube_double_control import CONTROL, ControlHandler
from kube_double_http import HandlerBase
from kube_double_rest import RestHandler
from kube_double_routes import STATIC, TEMPLATE_TEXT, TEMPLATES
from kube_double_status import ApiError
from kube_double_watch import WatchHandler


class Handler(ControlHandler, RestHandler, WatchHandler, HandlerBase):
    """One connection's requests: routing, auth, faults, then the parts."""

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

    def dispatch(self):
        self._body = None
        url = urllib.parse.urlsplit(self.path)
        path = url.path
        q = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
        st = self.server.store
        if path == CONTROL:
            return self.control()
        name, groups = self.route(path)
        if name and name.startswith("workload") and not self.server.args.kueue:
            name, groups = None, ()  # no Kueue: its API group is not there
        watch = q.get("watch") in ("1", "true") and self.command == "GET" and \
            name in ("jobs-coll", "jobs-all", "pods-coll", "pods-all", "workloads-coll",
                     "workloads-all")
        if watch:
            tkey = "GET watch " + name.split("-")[0]
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
                elif f in ("cut-watch", "cut-event", "gone"):
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
