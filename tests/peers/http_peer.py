#!/usr/bin/env python3
"""http_peer.py - a loopback HTTP(S) peer for the tests of common/http.c.

Usage: http_peer.py [--port N] [--tls CERT KEY] [--lifetime SECONDS]

Listens on 127.0.0.1 (port 0 picks a free one), prints the port as the first
line of stdout, then serves HTTP/1.1 until --lifetime seconds have passed.

Object store, S3-like (the query string never matters, as with presigned URLs):
  PUT /key         stores the body                    -> 200, ETag
  GET /key         returns it, or 404 NoSuchKey as S3 XML
  HEAD /key        as GET, without the body
  DELETE /key      forgets it                         -> 204
  POST /anything   echoes the request body            -> 200

Special paths:
  /big?n=N[&chunked=1]   N bytes ("0123456789" repeated), chunked on request
  /echo-headers          the request headers, one "Name: value" a line
  /status/CODE           that status with an S3-style XML error body that
                         quotes the request target (query included, as some
                         servers do, so that redaction in the client is tested)

Fault injection, by path prefix; the prefix is stripped and the rest of the
path is then served as above, so /fail503/2/k stores or reads key /k:
  /fail503/N/...     503 SlowDown the first N times per full path
  /retry-after/...   429 with "Retry-After: 1" the first time per full path

Request bodies larger than 64 MiB are refused with 413.
"""

import argparse
import http.server
import ssl
import sys
import threading
import urllib.parse

MAX_BODY = 64 << 20
MAX_BIG = 256 << 20

ERROR_CODES = {
    400: "BadRequest",
    403: "AccessDenied",
    404: "NoSuchKey",
    409: "Conflict",
    413: "EntityTooLarge",
    429: "SlowDown",
    500: "InternalError",
    501: "NotImplemented",
    503: "SlowDown",
}


class State:
    """What all connections share: stored objects and fault counters."""

    def __init__(self):
        self.lock = threading.Lock()
        self.objects = {}
        self.hits = {}

    def count(self, kind, path):
        """Returns how often kind was seen on path before, and counts one."""
        with self.lock:
            n = self.hits.get((kind, path), 0)
            self.hits[(kind, path)] = n + 1
            return n


class BadRequest(Exception):
    pass


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kctl-http-peer/1"
    timeout = 30  # an idle keep-alive connection is dropped after this

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("http_peer: " + (fmt % args) + "\n")

    # -- reading -----------------------------------------------------------

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self.read_chunked()
        length = self.headers.get("Content-Length")
        if length is None:
            return b""
        if not length.isdigit():
            raise BadRequest("bad Content-Length")
        if int(length) > MAX_BODY:
            raise BadRequest("body too large")
        return self.rfile.read(int(length))

    def read_chunked(self):
        body = bytearray()
        while True:
            line = self.rfile.readline(1024).split(b";")[0].strip()
            try:
                size = int(line, 16)
            except ValueError:
                raise BadRequest("bad chunk size")
            if size == 0:
                break
            if len(body) + size > MAX_BODY:
                raise BadRequest("body too large")
            body += self.rfile.read(size)
            if self.rfile.readline(3) not in (b"\r\n", b"\n"):
                raise BadRequest("bad chunk end")
        while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
            pass  # trailers
        return bytes(body)

    # -- writing -----------------------------------------------------------

    def reply(self, code, body=b"", ctype="application/octet-stream", extra=()):
        self.send_response(code)
        for name, value in extra:
            self.send_header(name, value)
        if code not in (204, 304) and code >= 200:
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD" and code not in (204, 304):
            self.wfile.write(body)

    def reply_error(self, code, message, extra=()):
        target = self.path.replace("&", "&amp;").replace("<", "&lt;")
        xml = ("<Error><Code>%s</Code><Message>%s</Message>"
               "<Resource>%s</Resource><RequestId>kctl-peer</RequestId></Error>"
               % (ERROR_CODES.get(code, "Error"), message, target))
        self.reply(code, xml.encode(), "application/xml", extra)

    def reply_big(self, query):
        try:
            n = int(query.get("n", ["0"])[0])
        except ValueError:
            n = -1
        if n < 0 or n > MAX_BIG:
            self.reply_error(400, "n must be 0..%d" % MAX_BIG)
            return
        body = (b"0123456789" * (n // 10 + 1))[:n]
        if query.get("chunked", ["0"])[0] != "1":
            self.reply(200, body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if self.command == "HEAD":
            return
        for i in range(0, n, 4096):
            part = body[i:i + 4096]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
        self.wfile.write(b"0\r\n\r\n")

    # -- dispatch ----------------------------------------------------------

    def inject_fault(self, path):
        """Returns the path left to serve, or None when a fault answered."""
        while True:
            parts = path.split("/", 3)
            if len(parts) >= 4 and parts[1] == "fail503" and parts[2].isdigit():
                if self.server.state.count("503", path) < int(parts[2]):
                    self.reply_error(503, "Please reduce your request rate.")
                    return None
                path = "/" + parts[3]
            elif len(parts) >= 3 and parts[1] == "retry-after":
                if self.server.state.count("429", path) < 1:
                    self.reply_error(429, "Slow down.", [("Retry-After", "1")])
                    return None
                path = "/" + path.split("/", 2)[2]
            else:
                return path

    def serve_object(self, path, body):
        state = self.server.state
        if self.command == "PUT":
            with state.lock:
                state.objects[path] = body
            self.reply(200, extra=[("ETag", '"%08x"' % (hash(body) & 0xffffffff))])
        elif self.command in ("GET", "HEAD"):
            with state.lock:
                data = state.objects.get(path)
            if data is None:
                self.reply_error(404, "The specified key does not exist.")
            else:
                self.reply(200, data)
        elif self.command == "DELETE":
            with state.lock:
                state.objects.pop(path, None)
            self.reply(204)
        elif self.command == "POST":
            self.reply(200, body)
        else:
            self.reply_error(501, "Method %s is not implemented." % self.command)

    def dispatch(self):
        try:
            body = self.read_body()
        except BadRequest as e:
            self.close_connection = True
            self.reply_error(413 if "large" in str(e) else 400, str(e))
            return
        target = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(target.query)
        path = self.inject_fault(target.path)
        if path is None:
            return
        if path == "/big":
            self.reply_big(query)
        elif path == "/echo-headers":
            text = "".join("%s: %s\n" % kv for kv in self.headers.items())
            self.reply(200, text.encode(), "text/plain")
        elif path.startswith("/status/") and path[8:].isdigit():
            code = int(path[8:])
            if not 200 <= code <= 599:
                self.reply_error(400, "status must be 200..599")
            else:
                self.reply_error(code, "Status %d as requested." % code)
        else:
            self.serve_object(path, body)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = do_PATCH = dispatch


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port, tls, verbose):
        super().__init__(("127.0.0.1", port), Handler)
        self.state = State()
        self.verbose = verbose
        self.tls = None
        if tls:
            self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls.load_cert_chain(tls[0], tls[1])

    def finish_request(self, request, client_address):
        # The TLS handshake runs here, in the connection's own thread, so a
        # client that rejects our certificate cannot stall the accept loop.
        if self.tls is None:
            super().finish_request(request, client_address)
            return
        request.settimeout(10)
        try:
            conn = self.tls.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as e:
            if self.verbose:
                sys.stderr.write("http_peer: TLS handshake failed: %s\n" % e)
            return
        try:
            conn.settimeout(None)
            super().finish_request(conn, client_address)
        finally:
            conn.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    ap.add_argument("--lifetime", type=float, default=120.0)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()

    server = Server(args.port, args.tls, args.verbose)
    print(server.server_address[1], flush=True)
    timer = threading.Timer(args.lifetime, server.shutdown)
    timer.daemon = True
    timer.start()
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
