#!/usr/bin/env python3
"""fault_proxy.py - a loopback HTTP/1.1 forwarder that injects scripted faults.

Usage: fault_proxy.py --upstream http://127.0.0.1:PORT [--port N]
                      [--lifetime SECONDS] [--verbose]

Listens on 127.0.0.1 (port 0, the default, picks a free one), prints the port
as the first line of stdout, and forwards every request to the upstream
exactly as received: request line, header lines (Host included: it is part
of an AWS SigV4 signature, so the client signs for the proxy's address and
the upstream checks that), and the body, streamed with its own framing
(Content-Length or chunked).  The response comes back the same way.  Each
client connection gets its own upstream connection, so keep-alive and
"Expect: 100-continue" work end to end.

Faults are queued through a control path on the same port and consumed one
per proxied request, in order; with the queue empty, requests pass:

  POST /__fault__     body {"plan": [FAULT, ...]} appends to the queue
  GET /__fault__      counters and the queue, as JSON: requests (proxied
                      requests seen), faults (served), forwarded (sent
                      upstream), connections (client connections that
                      carried a proxied request), upstream_errors, served
                      (count per fault name), pending (the queue)
  DELETE /__fault__   empties the queue and zeroes the counters

A FAULT is a string, optionally with options after ':' ("503:retry-after=1"),
or an object such as {"fault": "503", "retry_after": 1}:

  "pass"      forward the request (counts as forwarded, not as a fault)
  "NNN"       any status 400-599 with an S3-style XML error body; 500 is
              InternalError, 503 ServiceUnavailable, others by the table below
  "slowdown"  503 with Code SlowDown
  "reset"     read the request, then close with SO_LINGER 0 (a TCP RST)
  "close"     read the request, then close normally (FIN, no response)
  "truncate"  forward, relay the response headers and half the body, RST
  "delay"     wait (option delay=SECONDS, default 2) and then forward
Options: retry-after=N adds "Retry-After: N" to an error reply; code=NAME
replaces the XML Code.

An error reply reads the whole request body first (answering "100 Continue"
when the client asked for it), so the connection stays usable afterwards.
"""

import argparse
import json
import select
import socket
import socketserver
import struct
import sys
import threading
import time
import urllib.parse

CONTROL = "/__fault__"
MAX_HEAD = 64 * 1024  # request/response head larger than this is refused
PIECE = 64 * 1024     # bodies are streamed in pieces of this size

S3_CODES = {
    400: "BadRequest", 403: "AccessDenied", 404: "NoSuchKey",
    409: "Conflict", 429: "SlowDown", 500: "InternalError",
    501: "NotImplemented", 502: "BadGateway", 503: "ServiceUnavailable",
    504: "GatewayTimeout",
}
REASONS = {
    200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
    409: "Conflict", 429: "Too Many Requests", 500: "Internal Server Error",
    501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable",
    504: "Gateway Timeout",
}


class Broken(Exception):
    """The peer sent something that is not HTTP/1.x, or went away."""


class Fault:
    def __init__(self, kind, status=0, code=None, retry_after=None, delay=2.0):
        self.kind, self.status, self.code = kind, status, code
        self.retry_after, self.delay = retry_after, delay

    @classmethod
    def parse(cls, item):
        """Turns one plan entry (string or object) into a Fault."""
        if isinstance(item, dict):
            opts = {str(k).replace("-", "_"): v for k, v in item.items()}
            name = str(opts.pop("fault", opts.pop("kind", "pass")))
        elif isinstance(item, (str, int)):
            name, _, rest = str(item).partition(":")
            opts = {}
            for part in filter(None, rest.split(",")):
                k, _, v = part.partition("=")
                opts[k.strip().replace("-", "_")] = v.strip()
        else:
            raise ValueError("a fault is a string or an object: %r" % (item,))
        name = name.strip().lower()
        ra = opts.get("retry_after")
        ra = None if ra in (None, "") else int(ra)
        code = opts.get("code")
        if name.isdigit():
            status = int(name)
            if not 400 <= status <= 599:
                raise ValueError("fault status must be 400-599: %s" % name)
            return cls("error", status, code or S3_CODES.get(status, "Error"), ra)
        if name == "slowdown":
            return cls("error", 503, code or "SlowDown", ra)
        if name in ("pass", "reset", "close", "truncate"):
            return cls(name)
        if name == "delay":
            return cls("delay", delay=float(opts.get("delay", 2.0)))
        raise ValueError("unknown fault %r" % name)

    def describe(self):
        if self.kind == "error":
            return "%d %s" % (self.status, self.code)
        return self.kind


class State:
    """The queue and counters that all connections share."""

    def __init__(self):
        self.lock = threading.Lock()
        self.plan = []
        self.reset_counters()

    def reset_counters(self):
        self.requests = self.faults = self.forwarded = self.connections = 0
        self.upstream_errors = 0
        self.served = {}

    def next_fault(self):
        with self.lock:
            self.requests += 1
            fault = self.plan.pop(0) if self.plan else Fault("pass")
            if fault.kind in ("pass", "delay"):
                self.forwarded += 1
            else:
                self.faults += 1
                if fault.kind == "truncate":
                    self.forwarded += 1
            name = fault.describe()
            self.served[name] = self.served.get(name, 0) + 1
            return fault

    def snapshot(self):
        with self.lock:
            return {
                "requests": self.requests, "faults": self.faults,
                "forwarded": self.forwarded, "connections": self.connections,
                "upstream_errors": self.upstream_errors,
                "served": dict(self.served),
                "pending": [f.describe() for f in self.plan],
            }


# -- HTTP framing ------------------------------------------------------------

def read_head(rfile):
    """Reads a start line and header lines.  Returns (raw bytes, start line,
    {lower-case name: value}); raw is None on a clean EOF before any byte."""
    raw = bytearray()
    headers = {}
    start = None
    while True:
        line = rfile.readline(MAX_HEAD + 1)
        if not line:
            if not raw:
                return None, None, None
            raise Broken("connection closed inside a header")
        if start is None and line in (b"\r\n", b"\n"):
            continue  # stray CRLF between messages is allowed (RFC 9112 2.2)
        raw += line
        if len(raw) > MAX_HEAD:
            raise Broken("header too large")
        if start is None:
            start = line.decode("latin-1").rstrip("\r\n")
            continue
        if line in (b"\r\n", b"\n"):
            return bytes(raw), start, headers
        name, sep, value = line.decode("latin-1").partition(":")
        if not sep:
            raise Broken("bad header line")
        key = name.strip().lower()
        value = value.strip()
        # repeated headers: keep them all, comma-joined (enough for framing)
        headers[key] = headers[key] + ", " + value if key in headers else value


def copy_exact(rfile, send, n):
    """Copies exactly n body bytes from rfile through send()."""
    while n > 0:
        piece = rfile.read(min(n, PIECE))
        if not piece:
            raise Broken("connection closed inside a body")
        send(piece)
        n -= len(piece)


def copy_chunked(rfile, send):
    """Copies a chunked body, framing and trailers included, unchanged."""
    while True:
        line = rfile.readline(1024)
        if not line:
            raise Broken("connection closed inside a chunked body")
        send(line)
        try:
            size = int(line.split(b";")[0].strip(), 16)
        except ValueError:
            raise Broken("bad chunk size line")
        if size == 0:
            break
        copy_exact(rfile, send, size + 2)  # the data and its CRLF
    while True:  # trailer section, ended by an empty line
        line = rfile.readline(MAX_HEAD)
        if not line:
            raise Broken("connection closed inside trailers")
        send(line)
        if line in (b"\r\n", b"\n"):
            return


def copy_body(rfile, send, headers):
    """Copies a request body framed by Transfer-Encoding or Content-Length."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        copy_chunked(rfile, send)
    else:
        length = headers.get("content-length", "0").split(",")[0].strip()
        if not length.isdigit():
            raise Broken("bad Content-Length")
        copy_exact(rfile, send, int(length))


def discard(_):
    pass


def wants_close(start, headers):
    """Whether a message ends its connection (HTTP/1.0 or Connection: close)."""
    tokens = [t.strip().lower() for t in headers.get("connection", "").split(",")]
    if start.upper().startswith("HTTP/1.0") or start.upper().endswith("HTTP/1.0"):
        return "keep-alive" not in tokens
    return "close" in tokens


def rst_close(sock):
    """Closes so that the peer sees a reset rather than an orderly FIN."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


# -- one client connection ---------------------------------------------------

class Handler(socketserver.BaseRequestHandler):
    def setup(self):
        self.sock = self.request
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(self.server.idle_timeout)
        self.rfile = self.sock.makefile("rb")
        self.up = None       # upstream socket, opened on the first forward
        self.up_rfile = None
        self.closed = False  # set when this connection must not be reused
        self.counted = False  # connections counts those that proxied a request

    def finish(self):
        self.drop_upstream()
        if not self.closed:
            try:
                self.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        try:
            self.rfile.close()
        except OSError:
            pass

    def log(self, msg):
        if self.server.verbose:
            sys.stderr.write("fault_proxy: %s\n" % msg)

    def handle(self):
        try:
            while not self.closed:
                raw, start, headers = read_head(self.rfile)
                if raw is None:
                    return
                parts = start.split()
                if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
                    self.simple_reply(400, b"bad request line\n", close=True)
                    return
                method, target = parts[0].upper(), parts[1]
                if urllib.parse.urlsplit(target).path == CONTROL:
                    self.control(method, headers)
                else:
                    self.proxy(raw, start, method, headers)
                if wants_close(start, headers):
                    return
        except (Broken, OSError, ValueError, IndexError) as e:
            self.log("connection dropped: %s" % e)

    # -- replies made here --------------------------------------------------

    def simple_reply(self, status, body, ctype="text/plain", extra=(), head=False,
                     close=False):
        lines = ["HTTP/1.1 %d %s" % (status, REASONS.get(status, "Error")),
                 "Content-Type: " + ctype,
                 "Content-Length: %d" % len(body)]
        lines += ["%s: %s" % kv for kv in extra]
        if close:
            lines.append("Connection: close")
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.sock.sendall(data if head else data + body)
        if close:
            self.closed = True

    def control(self, method, headers):
        body = bytearray()
        copy_body(self.rfile, body.extend, headers)
        state = self.server.state
        if method == "GET":
            pass
        elif method == "DELETE":
            with state.lock:
                state.plan = []
                state.reset_counters()
        elif method == "POST":
            try:
                doc = json.loads(bytes(body) or b"{}")
                items = doc.get("plan", []) if isinstance(doc, dict) else doc
                if not isinstance(items, list):
                    raise ValueError("plan must be a list")
                faults = [Fault.parse(i) for i in items]
            except ValueError as e:
                self.simple_reply(400, (str(e) + "\n").encode())
                return
            with state.lock:
                state.plan.extend(faults)
        else:
            self.simple_reply(405, b"GET, POST or DELETE\n")
            return
        out = json.dumps(state.snapshot(), sort_keys=True).encode() + b"\n"
        self.simple_reply(200, out, "application/json")

    def take_body(self, headers):
        """Reads (and drops) a request body; sends 100 Continue first when
        the client waits for it, as an origin server that reads it would."""
        if "100-continue" in headers.get("expect", "").lower():
            self.sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        copy_body(self.rfile, discard, headers)

    def error_reply(self, fault, method, target):
        resource = (urllib.parse.urlsplit(target).path.replace("&", "&amp;")
                    .replace("<", "&lt;"))
        xml = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code>"
               "<Message>injected by fault_proxy</Message><Resource>%s</Resource>"
               "<RequestId>fault-proxy</RequestId></Error>"
               % (fault.code, resource)).encode()
        extra = [("x-amz-request-id", "fault-proxy")]
        if fault.retry_after is not None:
            extra.append(("Retry-After", str(fault.retry_after)))
        self.simple_reply(fault.status, xml, "application/xml", extra,
                          head=(method == "HEAD"))

    # -- forwarding ---------------------------------------------------------

    def proxy(self, raw, start, method, headers):
        target = start.split()[1]
        state = self.server.state
        if not self.counted:
            self.counted = True
            with state.lock:
                state.connections += 1
        fault = state.next_fault()
        self.log("%s %s -> %s" % (method, target, fault.describe()))
        if fault.kind == "error":
            self.take_body(headers)
            self.error_reply(fault, method, target)
            return
        if fault.kind in ("reset", "close"):
            self.take_body(headers)
            self.closed = True
            if fault.kind == "reset":
                rst_close(self.sock)
            else:
                self.sock.shutdown(socket.SHUT_RDWR)
            return
        if fault.kind == "delay":
            time.sleep(fault.delay)
        self.forward(raw, method, headers, truncate=(fault.kind == "truncate"))

    def drop_upstream(self):
        if self.up is not None:
            try:
                self.up_rfile.close()
                self.up.close()
            except OSError:
                pass
            self.up = self.up_rfile = None

    def connect_upstream(self):
        if self.up is not None:
            # An idle kept connection that is readable now has been closed
            # by the upstream (or holds junk): start a fresh one instead.
            ready, _, _ = select.select([self.up], [], [], 0)
            if ready:
                self.drop_upstream()
        if self.up is None:
            host, port = self.server.upstream
            self.up = socket.create_connection((host, port), timeout=self.server.upstream_timeout)
            self.up.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.up_rfile = self.up.makefile("rb")

    def forward(self, raw, method, headers, truncate=False):
        has_body = ("transfer-encoding" in headers
                    or headers.get("content-length", "0").strip() not in ("", "0"))
        try:
            self.connect_upstream()
            self.up.sendall(raw)
        except OSError as e:
            # the kept upstream connection may have timed out: one new try
            self.drop_upstream()
            try:
                self.connect_upstream()
                self.up.sendall(raw)
            except OSError as e2:
                with self.server.state.lock:
                    self.server.state.upstream_errors += 1
                self.log("upstream unreachable: %s / %s" % (e, e2))
                self.take_body(headers)
                self.simple_reply(502, b"fault_proxy: upstream unreachable\n", close=True)
                return

        # The body goes up in a thread while this one reads the answer: the
        # upstream may answer "100 Continue" first, or a final status before
        # it has read the body at all.
        pump = None
        pump_error = []
        if has_body:
            def run():
                try:
                    copy_body(self.rfile, self.up.sendall, headers)
                except (Broken, OSError) as e:
                    pump_error.append(e)
            pump = threading.Thread(target=run, daemon=True)
            pump.start()

        while True:
            head, status_line, rheaders = read_head(self.up_rfile)
            if head is None:
                raise Broken("upstream closed without a response")
            status = int(status_line.split()[1])
            if 100 <= status < 200 and status != 101:
                self.sock.sendall(head)  # interim: relay and read on
                continue
            break

        if truncate:
            self.relay_truncated(head, method, status, rheaders)
            return
        self.sock.sendall(head)
        close_after = wants_close(status_line, rheaders)
        if method == "HEAD" or status in (204, 304):
            pass
        elif "chunked" in rheaders.get("transfer-encoding", "").lower():
            copy_chunked(self.up_rfile, self.sock.sendall)
        elif "content-length" in rheaders:
            copy_exact(self.up_rfile, self.sock.sendall,
                       int(rheaders["content-length"].split(",")[0]))
        else:  # body runs until the upstream closes
            while True:
                piece = self.up_rfile.read1(PIECE)
                if not piece:
                    break
                self.sock.sendall(piece)
            close_after = True

        if pump is not None:
            pump.join(timeout=self.server.upstream_timeout)
            # a client that got a final answer without sending its body
            # leaves the stream in an unknown state: end this connection
            if pump.is_alive() or pump_error:
                close_after = True
        if close_after:
            self.drop_upstream()
            self.closed = True

    def relay_truncated(self, head, method, status, rheaders):
        """Sends the head and half of a Content-Length body, then a reset."""
        self.sock.sendall(head)
        length = int(rheaders.get("content-length", "0").split(",")[0] or 0)
        if method != "HEAD" and status not in (204, 304) and length > 1:
            copy_exact(self.up_rfile, self.sock.sendall, length // 2)
        self.drop_upstream()
        self.closed = True
        rst_close(self.sock)


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--upstream", required=True, help="http://HOST:PORT of the real server")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--lifetime", type=float, default=3600,
                    help="exit after this many seconds (default 3600)")
    ap.add_argument("--idle-timeout", type=float, default=60,
                    help="drop an idle client connection after this (default 60)")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()

    up = urllib.parse.urlsplit(args.upstream if "//" in args.upstream
                               else "http://" + args.upstream)
    if up.scheme != "http" or not up.hostname:
        ap.error("--upstream must be http://HOST:PORT")

    server = Server(("127.0.0.1", args.port), Handler)
    server.state = State()
    server.upstream = (up.hostname, up.port or 80)
    server.verbose = args.verbose
    server.idle_timeout = args.idle_timeout
    server.upstream_timeout = 120.0
    print(server.server_address[1], flush=True)

    timer = threading.Timer(args.lifetime, server.shutdown)
    timer.daemon = True
    timer.start()
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    server.server_close()


if __name__ == "__main__":
    main()
