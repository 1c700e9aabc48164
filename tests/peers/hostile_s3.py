#!/usr/bin/env python3
"""hostile_s3.py - a loopback S3 store that can answer the way broken or
hostile stores do, for the tests of kctl's listing and collect paths.

Usage: hostile_s3.py [--port N] [--lifetime SECONDS] [--verbose]

Listens on 127.0.0.1 (port 0 picks a free one), prints the port as the
first line of stdout, then serves until --lifetime seconds have passed.

It follows the S3 protocol strictly where kctl relies on it, path style:
  PUT /BUCKET                create a bucket (409 BucketAlreadyOwnedByYou)
  PUT /BUCKET/KEY            store the body (ETag)
  GET|HEAD /BUCKET/KEY       the object, or 404 NoSuchKey
  DELETE /BUCKET/KEY         204 whether or not it existed
  GET /BUCKET?list-type=2    ListObjectsV2: prefix, max-keys (default 1000),
                             continuation-token, encoding-type=url
Errors are S3 XML documents (Code, Message, Resource, RequestId).  Every
request must be signed, in the header (Authorization: AWS4-HMAC-SHA256) or
the query (X-Amz-Signature): an unsigned one gets 403 AccessDenied.  The
signature itself is not checked (tests/peers/swift_s3.sh does that).
Keys longer than 1,024 bytes get 400 KeyTooLongError.

One fault mode at a time, set through a control path that no bucket name
can take (bucket names have no '_'):
  POST /__hostile__     {"mode": MODE} sets the mode and zeroes the counters
  GET /__hostile__      {"mode", "lists", "gets", "foreign_gets", "puts",
                         "refused"}
MODEs (what a ListObjectsV2 answer, or a result object, becomes):
  none                the honest store
  empty-body          200 with an empty body
  not-xml             200 with a body that is not XML
  truncated-no-keys   IsTruncated=true, a fresh token, no keys, forever
  repeat-token        the honest first page, then IsTruncated=true with
                      the same token it was asked for, forever
  no-token            IsTruncated=true without NextContinuationToken
  endless             IsTruncated=true, one new key under the prefix per
                      page, a fresh token, forever (only a signal stops it)
  foreign-keys        the honest listing plus keys that are not under the
                      prefix asked for: one shorter than it, ones elsewhere
                      that contain it (with a results/ path after it), and
                      one of 1,000 bytes; a GET of any of them is counted
                      as foreign_gets and serves a forged result
  zero-results        PUTs of results/ID.json store 0 bytes
  slow-down           every S3 request gets 503 SlowDown with Retry-After:
                      30 (counted as "refused"): a store shedding load
"""

import argparse
import json
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from xml.sax.saxutils import escape

CONTROL = "/__hostile__"
MAX_BODY = 64 << 20
MAX_KEY = 1024
MODES = ("none", "empty-body", "not-xml", "truncated-no-keys", "repeat-token", "no-token",
         "endless", "foreign-keys", "zero-results", "slow-down")
RETRY_AFTER_S = 30  # the longest pause kctl's HTTP client honours
FORGED = b'{"id": "forged", "status": "ok", "note": "taken from a key outside the prefix"}'


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.buckets = {}  # name -> {key: bytes}
        self.mode = "none"
        self.foreign = set()
        self.tokens = 0
        self.counters = {}

    def count(self, name):
        with self.lock:
            self.counters[name] = self.counters.get(name, 0) + 1

    def next_token(self):
        with self.lock:
            self.tokens += 1
            return "tok-%d" % self.tokens


def foreign_keys(prefix):
    """Keys a hostile store lists beside the real ones for prefix."""
    short = prefix[:max(1, len(prefix) // 2)]
    keys = [short,
            "elsewhere/" + prefix + "forged/results/r01-v001.json",
            "x" + prefix + "forged/results/r01-v001.json",
            ("y" * 1000),
            "esc\x1b]0;owned\x07/" + prefix,  # a terminal escape in a key name
            # as long as the prefix, then what a result under it looks like
            ("z" * len(prefix)) + "forged/results/r01-v001.json"]
    if prefix:
        keys.append(prefix[:-1] + "Xforged/results/r01-v001.json")
    return keys


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kctl-hostile-s3/1"
    timeout = 30

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("hostile_s3: " + (fmt % args) + "\n")

    # -- plumbing ------------------------------------------------------------

    def read_body(self):
        length = self.headers.get("Content-Length")
        if length is None:
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                return self.read_chunked()
            return b""
        if not length.isdigit() or int(length) > MAX_BODY:
            return None
        return self.rfile.read(int(length))

    def read_chunked(self):
        body = bytearray()
        while True:
            size = int(self.rfile.readline(1024).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                break
            body += self.rfile.read(size)
            self.rfile.readline(3)
        while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
            pass
        return bytes(body)

    def reply(self, code, body=b"", ctype="application/octet-stream", extra=()):
        self.send_response(code)
        for name, value in extra:
            self.send_header(name, value)
        if code != 204:
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD" and code != 204:
            self.wfile.write(body)

    def error(self, code, s3code, message, extra=()):
        xml = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code>"
               "<Message>%s</Message><Resource>%s</Resource>"
               "<RequestId>hostile-s3</RequestId></Error>"
               % (s3code, escape(message), escape(urllib.parse.urlsplit(self.path).path)))
        self.reply(code, xml.encode(), "application/xml", extra)

    def signed(self, query):
        auth = self.headers.get("Authorization", "")
        return auth.startswith("AWS4-HMAC-SHA256 ") or "X-Amz-Signature" in query

    # -- control -------------------------------------------------------------

    def control(self, body):
        st = self.server.state
        if self.command == "POST":
            try:
                mode = json.loads(body or b"{}").get("mode", "none")
            except ValueError:
                mode = None
            if mode not in MODES:
                self.reply(400, b"unknown mode", "text/plain")
                return
            with st.lock:
                st.mode = mode
                st.counters = {}
        with st.lock:
            out = dict(st.counters, mode=st.mode)
        for name in ("lists", "gets", "foreign_gets", "puts", "refused"):
            out.setdefault(name, 0)
        self.reply(200, json.dumps(out).encode(), "application/json")

    # -- S3 ------------------------------------------------------------------

    def dispatch(self):
        body = self.read_body()
        if body is None:
            self.close_connection = True
            self.error(400, "InvalidArgument", "bad or too large Content-Length")
            return
        target = urllib.parse.urlsplit(self.path)
        if target.path == CONTROL:
            self.control(body)
            return
        query = urllib.parse.parse_qs(target.query, keep_blank_values=True)
        if not self.signed(query):
            self.error(403, "AccessDenied", "Anonymous access is not allowed.")
            return
        path = urllib.parse.unquote(target.path)
        bucket, _, key = path[1:].partition("/")
        st = self.server.state
        if st.mode == "slow-down":
            st.count("refused")
            self.error(503, "SlowDown", "Please reduce your request rate.",
                       extra=[("Retry-After", str(RETRY_AFTER_S))])
            return
        with st.lock:
            objects = st.buckets.get(bucket)
        if not bucket:
            self.error(400, "InvalidRequest", "Path-style requests name a bucket.")
        elif not key and self.command == "PUT":
            self.create_bucket(bucket)
        elif objects is None:
            self.error(404, "NoSuchBucket", "The specified bucket does not exist.")
        elif not key and self.command == "GET" and query.get("list-type") == ["2"]:
            self.list_objects(objects, query)
        elif not key:
            self.error(405, "MethodNotAllowed", "The specified method is not allowed.")
        elif len(key.encode()) > MAX_KEY:
            self.error(400, "KeyTooLongError", "Your key is too long.")
        else:
            self.serve_object(objects, key, body)

    def create_bucket(self, bucket):
        st = self.server.state
        with st.lock:
            exists = bucket in st.buckets
            st.buckets.setdefault(bucket, {})
        if exists:
            self.error(409, "BucketAlreadyOwnedByYou", "You already own this bucket.")
        else:
            self.reply(200)

    def serve_object(self, objects, key, body):
        st = self.server.state
        if self.command == "PUT":
            st.count("puts")
            if st.mode == "zero-results" and "/results/" in key and key.endswith(".json"):
                body = b""
            with st.lock:
                objects[key] = body
            self.reply(200, extra=[("ETag", '"%08x"' % (hash(body) & 0xffffffff))])
        elif self.command in ("GET", "HEAD"):
            st.count("gets")
            with st.lock:
                data = objects.get(key)
                forged = key in st.foreign
            if forged:
                st.count("foreign_gets")
                data = FORGED
            if data is None:
                self.error(404, "NoSuchKey", "The specified key does not exist.")
            else:
                self.reply(200, data)
        elif self.command == "DELETE":
            with st.lock:
                objects.pop(key, None)
            self.reply(204)
        else:
            self.error(405, "MethodNotAllowed", "The specified method is not allowed.")

    def list_objects(self, objects, query):
        st = self.server.state
        st.count("lists")
        prefix = query.get("prefix", [""])[0]
        token = query.get("continuation-token", [None])[0]
        url = query.get("encoding-type") == ["url"]
        try:
            page = max(1, min(1000, int(query.get("max-keys", ["1000"])[0])))
        except ValueError:
            self.error(400, "InvalidArgument", "max-keys is not a number.")
            return
        mode = st.mode
        if mode == "empty-body":
            self.reply(200, b"", "application/xml")
            return
        if mode == "not-xml":
            self.reply(200, b"this is not the document you asked for\n", "text/plain")
            return
        with st.lock:
            keys = sorted(k for k in objects if k.startswith(prefix))
        if mode == "foreign-keys":
            extra = foreign_keys(prefix)
            with st.lock:
                st.foreign.update(extra)
            keys = sorted(set(keys) | set(extra))
        truncated, next_token = False, None
        if mode == "truncated-no-keys":
            keys, truncated, next_token = [], True, st.next_token()
        elif mode == "repeat-token" and token:
            keys, truncated, next_token = [], True, token
        elif mode == "repeat-token":
            truncated, next_token = True, "tok-again"
        elif mode == "no-token":
            truncated = True
        elif mode == "endless":
            n = st.next_token()
            keys, truncated, next_token = [prefix + "endless/" + n], True, n
        else:
            start = int(token) if token and token.isdigit() else 0
            if token and not token.isdigit():
                self.error(400, "InvalidArgument", "The continuation token is not valid.")
                return
            truncated = start + page < len(keys)
            next_token = str(start + page) if truncated else None
            keys = keys[start:start + page]
        self.reply(200, self.list_xml(prefix, keys, objects, truncated, next_token, token,
                                      url), "application/xml")

    def list_xml(self, prefix, keys, objects, truncated, next_token, token, url):
        def enc(s):
            return urllib.parse.quote(s, safe="/") if url else escape(s)
        parts = ['<?xml version="1.0" encoding="UTF-8"?>\n'
                 '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
                 "<Name>%s</Name><Prefix>%s</Prefix><KeyCount>%d</KeyCount>"
                 "<MaxKeys>1000</MaxKeys>" % (escape(self.path.split("/")[1].split("?")[0]),
                                              enc(prefix), len(keys))]
        if url:
            parts.append("<EncodingType>url</EncodingType>")
        if token:
            parts.append("<ContinuationToken>%s</ContinuationToken>" % escape(token))
        parts.append("<IsTruncated>%s</IsTruncated>" % ("true" if truncated else "false"))
        if next_token:
            parts.append("<NextContinuationToken>%s</NextContinuationToken>"
                         % escape(next_token))
        for k in keys:
            size = len(objects.get(k, FORGED))
            parts.append("<Contents><Key>%s</Key><LastModified>2026-01-01T00:00:00.000Z"
                         "</LastModified><ETag>&quot;0&quot;</ETag><Size>%d</Size>"
                         "<StorageClass>STANDARD</StorageClass></Contents>" % (enc(k), size))
        parts.append("</ListBucketResult>")
        return "".join(parts).encode()

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = dispatch


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port, verbose):
        super().__init__(("127.0.0.1", port), Handler)
        self.state = State()
        self.verbose = verbose


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--lifetime", type=float, default=1800.0)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    server = Server(args.port, args.verbose)
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
