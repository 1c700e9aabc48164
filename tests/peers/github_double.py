#!/usr/bin/env python3
"""github_double.py - a strict loopback double of the part of GitHub's REST
API that controller/github.c uses, for tests/unit/test-github.c.

Usage: github_double.py --tls CERT KEY --token TOKEN --repo OWNER/NAME
                        [--port N] [--lifetime SECONDS] [--verbose]

Listens on 127.0.0.1 over TLS and prints the port as the first line of
stdout.  One repository (its id is 4242) with issues and comments held in
memory; any other repository is 404.

  POST  /repos/O/R/issues                    create an issue (201)
  GET   /repos/O/R/issues                    list: state, labels, per_page, page
  GET   /repositories/4242/issues            the same (where Link points, as GitHub's do)
  PATCH /repos/O/R/issues/N                  edit: state, state_reason, title, body, labels
  POST  /repos/O/R/issues/N/comments         comment (201)
  GET   /repos/O/R/issues/N/comments         list: per_page, page
  GET   /repositories/4242/issues/N/comments the same
  PATCH /repos/O/R/issues/comments/ID        edit a comment's body

Every request must carry Accept: application/vnd.github+json,
X-GitHub-Api-Version: 2022-11-28 (400 otherwise, GitHub's words), a
User-Agent (403 otherwise, GitHub's words) and Authorization: Bearer TOKEN
(401 {"message": "Bad credentials", ...} otherwise).  Bodies are JSON
(400 "Problems parsing JSON"); a missing title, a title or label of the
wrong type, a body past 65,536 characters or an unknown state are 422
"Validation Failed" with errors[] as GitHub writes them.  Lists are newest
first, per_page at most 100, with a Link header (first, prev, next, last)
whose URLs use the /repositories/ID form and the Host the client sent.
Every answer carries x-ratelimit-* headers.

Control (no auth): POST /__control__ with a JSON object, keys combinable:
  {"issues": [{"title", "body", "labels": [...], "state", "pull_request": true}...]}
      adds issues (numbers continue the sequence)
  {"plan": [FAULT, ...]}  queues faults; each request takes the first that
      matches its "method" and "path" (a substring; both optional), "times"
      times (default 1).  FAULT "fault" is one of:
        "primary"      403 (or "status") API rate limit exceeded,
                       x-ratelimit-remaining: 0, x-ratelimit-reset: "reset"
        "secondary"    403 (or "status") secondary rate limit, with
                       retry-after: "retry_after" when given
        "forbidden"    403 Resource not accessible by personal access token
        "401"          401 Bad credentials whatever the token
        "echo-token"   401 whose message quotes the Authorization header
        "404"          404 Not Found
        "422"          422 Validation Failed with two errors[] entries
        "500"          500, the request not done
        "502-after"    the request done, then 502 (a reply lost)
        "not-json"     200 with an HTML body
        "huge"         200 with "size" bytes of JSON whitespace and []
        "wrong-type"   the answer (each item of a listing) with "number" and "id"
                       as strings
        "missing"      the answer (each item of a listing) without "number" and "id"
        "foreign-link" a listing whose next link goes to "link"
        "endless"      a listing whose next link is always one page further
        "self-link"    a listing whose next link is the request's own URL
  {"reset": true}  forgets issues, comments, faults and the request log
GET /__control__ returns {"requests": [...], "issues": [...], "comments":
[...], "faults_left": N}; each request is {"method", "path", "query",
"auth": "match"|"mismatch"|"absent", "token_elsewhere": bool, "headers":
{name: value} without Authorization, "body": JSON or null, "status"}.
"""

import argparse
import http.server
import json
import re
import ssl
import sys
import threading
import time
import urllib.parse

REPO_ID = 4242
DOCS = "https://docs.github.com/rest"
API_VERSION = "2022-11-28"
BODY_MAX = 65536
MAX_REQUEST = 4 << 20
SECONDARY = ("You have exceeded a secondary rate limit. Please wait a few minutes before "
             "you try again. If you reach out to GitHub Support for help, please include "
             "the request ID 0000:0000:0000000:0000000:00000000.")


class Reply(Exception):
    """An answer decided early: status, JSON document, extra headers."""

    def __init__(self, status, doc, headers=()):
        super().__init__(status)
        self.status, self.doc, self.headers = status, doc, list(headers)


def error(status, message, **more):
    doc = {"message": message, "documentation_url": DOCS, "status": str(status)}
    doc.update(more)
    return Reply(status, doc)


def invalid(*errors):
    return Reply(422, {"message": "Validation Failed", "errors": list(errors),
                       "documentation_url": DOCS, "status": "422"})


class State:
    def __init__(self, token, repo):
        self.lock = threading.Lock()
        self.token, self.repo = token, repo
        self.reset()

    def reset(self):
        self.issues, self.comments, self.faults, self.log = {}, {}, [], []
        self.next_number, self.next_comment = 1, 9001

    def user(self):
        return {"login": "kctl-bot", "id": 77, "type": "User", "site_admin": False}

    def add_issue(self, spec, base):
        n = self.next_number
        self.next_number += 1
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        url = "%s/repos/%s/issues/%d" % (base, self.repo, n)
        issue = {
            "id": 100000 + n, "node_id": "I_%d" % n, "url": url,
            "repository_url": "%s/repos/%s" % (base, self.repo),
            "comments_url": url + "/comments", "html_url": "https://github.invalid/%s/issues/%d"
            % (self.repo, n), "number": n, "state": spec.get("state", "open"),
            "state_reason": None, "title": spec["title"], "body": spec.get("body"),
            "user": self.user(), "labels": [self.label(x) for x in spec.get("labels", [])],
            "assignee": None, "assignees": [], "milestone": None, "locked": False,
            "active_lock_reason": None, "comments": 0, "created_at": now, "updated_at": now,
            "closed_at": None, "author_association": "OWNER",
        }
        if spec.get("pull_request"):
            issue["pull_request"] = {"url": "%s/repos/%s/pulls/%d" % (base, self.repo, n)}
        self.issues[n] = issue
        return issue

    def label(self, name):
        return {"id": abs(hash(name)) % 10**9, "node_id": "LA_" + name, "name": name,
                "color": "ededed", "default": False, "description": None}

    def take_fault(self, method, path):
        for f in self.faults:
            if f.get("method", method) == method and f.get("path", "") in path:
                f["times"] = f.get("times", 1) - 1
                if f["times"] <= 0:
                    self.faults.remove(f)
                return f
        return None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "GitHub.com"

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("github_double: " + fmt % args + "\n")

    def send(self, status, payload, ctype="application/json; charset=utf-8", headers=()):
        st = self.server.state
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("X-GitHub-Media-Type", "github.v3; format=json")
        self.send_header("X-GitHub-Api-Version-Selected", API_VERSION)
        names = {h[0].lower() for h in headers}
        defaults = [("x-ratelimit-limit", "5000"), ("x-ratelimit-remaining", "4999"),
                    ("x-ratelimit-reset", str(int(time.time()) + 3600)),
                    ("x-ratelimit-used", "1"), ("x-ratelimit-resource", "core")]
        for k, v in list(headers) + [d for d in defaults if d[0] not in names]:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(payload)
        st.last_status = status

    def reply(self, r):
        self.send(r.status, json.dumps(r.doc).encode(), headers=r.headers)
        return r.status

    # -- checks -------------------------------------------------------------

    def check_headers(self):
        auth = self.headers.get("Authorization")
        st = self.server.state
        if not self.headers.get("User-Agent"):
            raise error(403, "Request forbidden by administrative rules. Please make sure "
                        "your request has a User-Agent header "
                        "(https://docs.github.com/en/rest/overview/resources-in-the-rest-api"
                        "#user-agent-required).")
        if self.headers.get("X-GitHub-Api-Version") != API_VERSION:
            raise error(400, "API version %s is not supported."
                        % self.headers.get("X-GitHub-Api-Version"))
        if self.headers.get("Accept") != "application/vnd.github+json":
            raise error(415, "Unsupported 'Accept' header: %r. The double wants "
                        "application/vnd.github+json." % self.headers.get("Accept"))
        if auth not in ("Bearer " + st.token, "token " + st.token):
            raise error(401, "Bad credentials")

    def read_raw(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_REQUEST:
            self.close_connection = True
            raise error(413, "Payload too large")
        self.raw = self.rfile.read(n) if n else b""

    def read_json(self):
        raw = self.raw
        if self.command in ("GET", "DELETE"):
            return None
        if not (self.headers.get("Content-Type") or "").startswith("application/json"):
            raise error(415, "Unsupported Media Type: a JSON body is expected")
        try:
            doc = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise error(400, "Problems parsing JSON")
        if not isinstance(doc, dict):
            raise error(400, "Problems parsing JSON")
        return doc

    # -- the API ------------------------------------------------------------

    def base(self):
        return "https://" + (self.headers.get("Host") or "localhost")

    def page(self, items, path, query):
        try:
            per_page = min(int(query.get("per_page", ["30"])[0]), 100)
            page = int(query.get("page", ["1"])[0])
        except ValueError:
            raise error(422, "Invalid page or per_page")
        last = max(1, (len(items) + per_page - 1) // per_page)
        chunk = items[(page - 1) * per_page:page * per_page]
        q = {k: v[0] for k, v in query.items() if k != "page"}

        def link(p, rel):
            q2 = dict(q, page=str(p))
            return '<%s%s?%s>; rel="%s"' % (self.base(), path, urllib.parse.urlencode(q2), rel)
        links = []
        if page > 1:
            links += [link(page - 1, "prev")]
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links += [link(1, "first")]
        return chunk, links

    def list_issues(self, query):
        st = self.server.state
        state = query.get("state", ["open"])[0]
        if state not in ("open", "closed", "all"):
            raise invalid({"resource": "Issue", "field": "state", "code": "invalid"})
        want = [x for x in query.get("labels", [""])[0].split(",") if x]
        items = [i for i in sorted(st.issues.values(), key=lambda i: -i["number"])
                 if (state == "all" or i["state"] == state)
                 and all(w in [lb["name"] for lb in i["labels"]] for w in want)]
        return self.page(items, "/repositories/%d/issues" % REPO_ID, query)

    def create_issue(self, doc):
        st = self.server.state
        if "title" not in doc or doc["title"] in (None, ""):
            raise invalid({"resource": "Issue", "code": "missing_field", "field": "title"})
        if not isinstance(doc["title"], str):
            raise invalid({"resource": "Issue", "code": "invalid", "field": "title"})
        self.check_body(doc.get("body"), "Issue")
        labels = doc.get("labels", [])
        if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
            raise invalid({"resource": "Issue", "code": "invalid", "field": "labels"})
        return 201, st.add_issue(doc, self.base())

    def check_body(self, body, resource):
        if body is not None and not isinstance(body, str):
            raise invalid({"resource": resource, "code": "invalid", "field": "body"})
        if body is not None and len(body) > BODY_MAX:
            raise invalid({"resource": resource, "code": "custom", "field": "body",
                           "message": "body is too long (maximum is %d characters)"
                           % BODY_MAX})

    def edit_issue(self, issue, doc):
        if "state" in doc and doc["state"] not in ("open", "closed"):
            raise invalid({"resource": "Issue", "code": "invalid", "field": "state"})
        reason = doc.get("state_reason")
        if reason not in (None, "completed", "not_planned", "reopened"):
            raise invalid({"resource": "Issue", "code": "invalid", "field": "state_reason"})
        self.check_body(doc.get("body"), "Issue")
        for k in ("title", "body"):
            if k in doc:
                issue[k] = doc[k]
        if doc.get("state") == "closed" and issue["state"] != "closed":
            issue["state"], issue["state_reason"] = "closed", reason or "completed"
            issue["closed_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return 200, issue

    def comment(self, issue, doc):
        st = self.server.state
        self.check_body(doc.get("body"), "IssueComment")
        if not isinstance(doc.get("body"), str) or not doc["body"]:
            raise invalid({"resource": "IssueComment", "code": "missing_field",
                           "field": "body"})
        cid = st.next_comment
        st.next_comment += 1
        c = {"id": cid, "node_id": "IC_%d" % cid, "url": "%s/repos/%s/issues/comments/%d"
             % (self.base(), st.repo, cid), "issue_url": issue["url"], "body": doc["body"],
             "user": st.user(), "created_at": issue["created_at"],
             "updated_at": issue["updated_at"], "author_association": "OWNER",
             "issue": issue["number"]}
        st.comments[cid] = c
        issue["comments"] += 1
        return 201, {k: v for k, v in c.items() if k != "issue"}

    def route(self, method, path, query, doc):
        st = self.server.state
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)(/.*)", path)
        r2 = re.fullmatch(r"/repositories/(\d+)(/.*)", path)
        if m and m.group(1) == st.repo:
            rest = m.group(2)
        elif r2 and r2.group(1) == str(REPO_ID):
            rest = r2.group(2)
        else:
            raise error(404, "Not Found")
        num = re.fullmatch(r"/issues/(\d+)", rest)
        com = re.fullmatch(r"/issues/(\d+)/comments", rest)
        edit = re.fullmatch(r"/issues/comments/(\d+)", rest)
        if rest == "/issues" and method == "GET":
            return 200, self.list_issues(query)
        if rest == "/issues" and method == "POST" and m:
            return self.create_issue(doc)
        if num and method == "PATCH" and m and int(num.group(1)) in st.issues:
            return self.edit_issue(st.issues[int(num.group(1))], doc)
        if com and int(com.group(1)) in st.issues:
            issue = st.issues[int(com.group(1))]
            if method == "POST" and m:
                return self.comment(issue, doc)
            if method == "GET":
                items = [{k: v for k, v in c.items() if k != "issue"}
                         for c in sorted(st.comments.values(), key=lambda c: c["id"])
                         if c["issue"] == issue["number"]]
                return 200, self.page(items, "/repositories/%d/issues/%d/comments"
                                      % (REPO_ID, issue["number"]), query)
        if edit and method == "PATCH" and m and int(edit.group(1)) in st.comments:
            c = st.comments[int(edit.group(1))]
            self.check_body(doc.get("body"), "IssueComment")
            if not isinstance(doc.get("body"), str):
                raise invalid({"resource": "IssueComment", "code": "missing_field",
                               "field": "body"})
            c["body"] = doc["body"]
            return 200, {k: v for k, v in c.items() if k != "issue"}
        raise error(404, "Not Found")

    # -- faults -------------------------------------------------------------

    def fault_before(self, f):
        """An answer a fault gives instead of the request's; None to go on."""
        kind = f["fault"]
        status = int(f.get("status", 403))
        if kind == "primary":
            r = error(status, "API rate limit exceeded for user ID 77. If you reach out to "
                      "GitHub Support for help, please include the request ID "
                      "0000:0000:0000000:0000000:00000000.")
            r.headers = [("x-ratelimit-remaining", "0"), ("x-ratelimit-used", "5000"),
                         ("x-ratelimit-reset", str(f["reset"]))]
            return r
        if kind == "secondary":
            r = error(status, SECONDARY)
            if "retry_after" in f:
                r.headers = [("retry-after", str(f["retry_after"]))]
            return r
        if kind == "forbidden":
            return error(403, "Resource not accessible by personal access token")
        if kind == "401":
            return error(401, "Bad credentials")
        if kind == "echo-token":
            return error(401, "Bad credentials: got %r" % self.headers.get("Authorization"))
        if kind == "404":
            return error(404, "Not Found")
        if kind == "422":
            return invalid({"resource": "Issue", "code": "missing_field", "field": "title"},
                           {"resource": "Label", "code": "custom", "field": "name",
                            "message": "name\nhas \x1b[31mcontrol\x1b[0m characters"})
        if kind == "500":
            return Reply(500, {"message": "Server Error"})
        return None

    def fault_after(self, f, status, doc, headers):
        kind = f["fault"]
        if kind == "502-after":
            return Reply(502, {"message": "Server Error"})
        if kind in ("wrong-type", "missing"):
            def spoil(d):
                d = dict(d)
                for k in ("number", "id"):
                    if k in d and kind == "missing":
                        del d[k]
                    elif k in d:
                        d[k] = str(d[k])
                return d
            doc = [spoil(d) for d in doc] if isinstance(doc, list) else spoil(doc)
        if kind == "foreign-link":
            headers = ['<%s>; rel="next"' % f["link"]]
        if kind == "self-link":
            headers = ['<%s%s>; rel="next"' % (self.base(), self.path)]
        if kind == "endless":
            page = int(urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                       .get("page", ["1"])[0])
            headers = ['<%s/repositories/%d/issues?per_page=100&page=%d>; rel="next"'
                       % (self.base(), REPO_ID, page + 1)]
        return Reply(status, doc, [("Link", ", ".join(headers))] if headers else [])

    def handle_api(self):
        st = self.server.state
        target = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(target.query)
        with st.lock:
            f = st.take_fault(self.command, target.path)
        if f and f["fault"] == "not-json":
            self.send(200, b"<html><body>Unicorn! \x01</body></html>", "text/html")
            return 200
        if f and f["fault"] == "huge":
            payload = b" " * int(f["size"]) + b"[]"
            self.send(200, payload)
            return 200
        if f and self.fault_before(f):
            return self.reply(self.fault_before(f))
        with st.lock:
            status, out = self.route(self.command, target.path, query, self.doc)
        links = []
        if isinstance(out, tuple):
            out, links = out
        if f:
            return self.reply(self.fault_after(f, status, out, links))
        return self.reply(Reply(status, out, [("Link", ", ".join(links))] if links else []))

    def record(self, status):
        st = self.server.state
        auth = self.headers.get("Authorization")
        target = urllib.parse.urlsplit(self.path)
        others = [v for k, v in self.headers.items() if k.lower() != "authorization"]
        elsewhere = st.token in self.path or st.token.encode() in getattr(self, "raw", b"") \
            or any(st.token in v for v in others)
        try:
            body = json.loads(self.raw.decode()) if getattr(self, "raw", b"") else None
        except ValueError:
            body = None
        with st.lock:
            st.log.append({
                "method": self.command, "path": target.path, "query": target.query,
                "auth": "absent" if auth is None else "match"
                if auth == "Bearer " + st.token else "mismatch",
                "token_elsewhere": elsewhere, "status": status, "body": body,
                "headers": {k.lower(): v for k, v in self.headers.items()
                            if k.lower() != "authorization"}})

    def control(self):
        st = self.server.state
        if self.command == "GET":
            with st.lock:
                doc = {"requests": st.log, "issues": sorted(st.issues.values(),
                                                            key=lambda i: i["number"]),
                       "comments": sorted(st.comments.values(), key=lambda c: c["id"]),
                       "faults_left": len(st.faults)}
            self.send(200, json.dumps(doc).encode())
            return
        n = int(self.headers.get("Content-Length") or 0)
        doc = json.loads(self.rfile.read(n).decode() or "{}")
        with st.lock:
            if doc.get("reset"):
                st.reset()
            for spec in doc.get("issues", []):
                st.add_issue(spec, self.base())
            st.faults.extend(doc.get("plan", []))
        self.send(200, b"{}")

    def dispatch(self):
        self.raw = b""
        if urllib.parse.urlsplit(self.path).path == "/__control__":
            self.control()
            return
        try:
            self.read_raw()
            self.check_headers()
            self.doc = self.read_json()
            status = self.handle_api()
        except Reply as r:
            status = self.reply(r)
        self.record(status)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = dispatch


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, args):
        super().__init__(("127.0.0.1", args.port), Handler)
        self.state = State(args.token, args.repo)
        self.verbose = args.verbose
        self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.tls.minimum_version = ssl.TLSVersion.TLSv1_2
        self.tls.load_cert_chain(args.tls[0], args.tls[1])

    def finish_request(self, request, client_address):
        # the handshake runs in the connection's own thread
        request.settimeout(10)
        try:
            conn = self.tls.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as e:
            if self.verbose:
                sys.stderr.write("github_double: TLS handshake failed: %s\n" % e)
            return
        try:
            conn.settimeout(30)
            super().finish_request(conn, client_address)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            pass
        finally:
            conn.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"), required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--lifetime", type=float, default=600.0)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    server = Server(args)
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
