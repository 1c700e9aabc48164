"""kube_double_http.py - HTTP/1.1 plumbing of the API double's handler.

HandlerBase reads a request body (Content-Length or chunked, within the
apiserver's 3 MiB limit: 413 past it), decodes a JSON body (415 for other
media types, 400 for bad JSON) and sends JSON and text answers with the
headers the apiserver sends.  A lost-reply fault makes send_json drop its
answer.

Uses kube_double_status.
"""

import http.server
import json
import sys
import uuid

from kube_double_status import ApiError, bad_request

MAX_BODY = 3 * 1024 * 1024  # the apiserver's request size limit


class HandlerBase(http.server.BaseHTTPRequestHandler):
    """Request and answer plumbing; the base of kube_double_server.Handler."""

    protocol_version = "HTTP/1.1"
    server_version = "kube-double/1"
    timeout = 120  # an idle keep-alive connection is dropped after this

    def log_message(self, fmt, *args):
        if self.server.args.verbose:
            sys.stderr.write("kube_double: %s %s\n" % (self.address_string(), fmt % args))

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
