#!/usr/bin/env python3
"""llm_server.py - a loopback double of the OpenAI Chat Completions API and
the Anthropic Messages API, for the tests of controller/llm.c and of the
model proposer end to end.

Usage: llm_server.py --script FILE --log FILE [--key KEY] [--port-file FILE]
                     [--port N] [--prefix /v1] [--lifetime SECONDS]

  --script FILE     the scripted answers (JSON, format below)
  --log FILE        every request received, one JSON object a line (below)
  --key KEY         the API key expected; without it any key, or none, passes
  --port-file FILE  also write the port there (written whole, then renamed)
  --port N          port to listen on; 0 (default) picks a free one
  --prefix P        the path both APIs live under (default /v1), so that a
                    client's base_url is http://127.0.0.1:PORT/v1
  --lifetime S      exit after S seconds (default 900)

Listens on 127.0.0.1 and prints the port as the first line of stdout.

  POST {prefix}/chat/completions   OpenAI: Authorization: Bearer KEY
  POST {prefix}/messages           Anthropic: x-api-key: KEY and
                                   anthropic-version: 2023-06-01

Both are checked as the real services do and refused with their real error
bodies: the method (405), the path (404), Content-Type application/json
(400), the key (401; the OpenAI message quotes the key received, unmasked,
as a careless proxy would, so that clients are seen to scrub it), the
anthropic-version header (400), and the body: a JSON object with a model,
a non-empty messages list of {role, content}, no unknown keys, the ranges
of max_tokens, temperature and top_p; Anthropic requires max_tokens and
takes the system text as a top-level "system", OpenAI as a first message
with role "system"; stream_options only with stream.  A refused request
uses no script entry.  Streams are chunked server-sent events exactly as
each service sends them (OpenAI: "data: {chunk}" lines, a usage chunk when
stream_options.include_usage, "data: [DONE]"; Anthropic: message_start,
content_block_start, ping, content_block_delta..., content_block_stop,
message_delta, message_stop).

Script: a JSON array of entries.  For each request the first entry with a
"match" that is a substring of the prompt (the last user message) and uses
left serves it; else the next sequence entry (one without "match") with
uses left; else the answer is a 400 saying the script is exhausted.
Entry keys, all optional:
  "text"          the answer (default "")
  "match"         serve requests whose prompt contains this string
  "times"         how many requests the entry serves (default 1 for sequence
                  entries, unlimited for match entries)
  "fail"          instead of the answer:
                    "429"        429 rate limit error ("retry_after" sets
                                 Retry-After: N seconds)
                    "500", "503" that status, a server error
                    "529"        overloaded (Anthropic's status; OpenAI 503)
                    "400"        400 invalid_request_error ("message" sets it)
                    "401"        401, as for a wrong key
                    "cut"        stream: about half the events, then the
                                 connection is closed without the end (no
                                 last chunk, no terminator); not streamed:
                                 half the body of a longer Content-Length
                    "truncate"   stream: about half the events, then a proper
                                 end of the HTTP body, but no terminator
                                 (no [DONE], no message_stop); not
                                 streamed: as the answer
                    "overloaded" Anthropic stream: half the events, then
                                 "event: error" overloaded_error; otherwise
                                 as "529"
  "retry_after"   seconds, for 429, 503 and 529
  "message"       the error message of a "fail"
  "delay"         seconds to wait before answering (timeouts)
  "arrived"       a file the server writes (the prompt) as the request that
                  takes this entry arrives, before any delay: tests kill a
                  client while it waits
  "input_tokens"  usage reported (default: prompt bytes / 4 + 1)
  "output_tokens" usage reported (default: answer bytes / 4 + 1)
  "finish"        finish_reason / stop_reason (default "stop" / "end_turn")
  "model"         the model reported (default: the one asked for)
  "chunk"         characters of the answer per stream event (default 16)
  "framing"       list of stream framing variants, all valid SSE: "crlf"
                  (lines end in CRLF), "comments" (": keep-alive" comment
                  lines between events), "multiline" (each event's JSON is
                  split over several data: lines)

Log: one JSON object per request, in arrival order:
  {"n": 1, "t": monotonic seconds, "method": "POST", "path": "/v1/messages",
   "api": "openai"|"anthropic"|null, "headers": {lower-case name: value},
   "key": "match"|"mismatch"|"absent", "key_elsewhere": false,
   "body": the JSON body (or its text when it is not JSON),
   "status": the status answered, "entry": the script entry's index or null}
The key is never written: Authorization's value becomes "Bearer <key:match>"
(or <key:mismatch>), x-api-key's "<key:match>"; key_elsewhere says whether
the expected key appeared anywhere else (another header, the path, the body).
"""

import argparse
import http.server
import json
import os
import socket
import sys
import threading
import time

MAX_BODY = 16 << 20
ANTHROPIC_VERSION = "2023-06-01"

OPENAI_KEYS = {
    "model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p",
    "stream", "stream_options", "n", "stop", "presence_penalty", "frequency_penalty",
    "seed", "user", "response_format", "tools", "tool_choice", "logprobs", "top_logprobs",
    "logit_bias", "reasoning_effort", "parallel_tool_calls", "service_tier", "store",
    "metadata",
}
OPENAI_ROLES = {"system", "developer", "user", "assistant", "tool"}
ANTHROPIC_KEYS = {
    "model", "messages", "max_tokens", "system", "temperature", "top_p", "top_k", "stream",
    "stop_sequences", "metadata", "tools", "tool_choice", "thinking", "service_tier",
}


class Refusal(Exception):
    """A request the real service would refuse: status, error type, message."""

    def __init__(self, status, etype, message, code=None):
        super().__init__(message)
        self.status = status
        self.etype = etype
        self.message = message
        self.code = code


def error_body(api, status, etype, message, code=None):
    if api == "anthropic":
        return {"type": "error", "error": {"type": etype, "message": message}}
    return {"error": {"message": message, "type": etype, "param": None, "code": code}}


class Script:
    """The scripted entries and how many uses each has left."""

    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            self.entries = json.load(f)
        if not isinstance(self.entries, list):
            raise SystemExit("llm_server: the script must be a JSON array")
        self.left = []
        for e in self.entries:
            if not isinstance(e, dict):
                raise SystemExit("llm_server: every script entry must be an object")
            self.left.append(e.get("times", None if "match" in e else 1))

    def take(self, prompt):
        """Returns (index, entry) for a prompt, or (None, None)."""
        for want_match in (True, False):
            for i, e in enumerate(self.entries):
                if ("match" in e) != want_match or self.left[i] == 0:
                    continue
                if want_match and e["match"] not in prompt:
                    continue
                if self.left[i] is not None:
                    self.left[i] -= 1
                return i, e
        return None, None


class State:
    def __init__(self, args):
        self.lock = threading.Lock()
        self.args = args
        self.script = Script(args.script)
        self.log = open(args.log, "a", encoding="utf-8")
        self.n = 0
        self.serial = 0

    def write_log(self, rec):
        with self.lock:
            self.n += 1
            rec["n"] = self.n
            self.log.write(json.dumps(rec, ensure_ascii=False) + "\n")
            self.log.flush()


def text_of(content):
    """A message's content as text: a string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def check_number(body, key, lo, hi, what):
    if key not in body:
        return
    v = body[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
        raise Refusal(400, "invalid_request_error", f"{key}: {what}")


def check_openai(body):
    """Validates a Chat Completions body; returns (system, prompt)."""
    for k in body:
        if k not in OPENAI_KEYS:
            raise Refusal(400, "invalid_request_error",
                          f"Unrecognized request argument supplied: {k}")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise Refusal(400, "invalid_request_error", "you must provide a model parameter")
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise Refusal(400, "invalid_request_error",
                      "'messages' must be a non-empty array", "invalid_value")
    system, prompt = None, None
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or m.get("role") not in OPENAI_ROLES:
            raise Refusal(400, "invalid_request_error", f"messages[{i}].role: invalid value")
        if not isinstance(m.get("content"), (str, list)):
            raise Refusal(400, "invalid_request_error", f"messages[{i}].content: invalid type")
        if m["role"] in ("system", "developer") and system is None:
            system = text_of(m["content"])
        if m["role"] == "user":
            prompt = text_of(m["content"])
    if prompt is None:
        raise Refusal(400, "invalid_request_error", "messages: no user message")
    for k in ("max_tokens", "max_completion_tokens"):
        v = body.get(k)
        if k in body and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise Refusal(400, "invalid_request_error", f"{k}: expected an integer >= 1")
    check_number(body, "temperature", 0, 2, "must be between 0 and 2")
    check_number(body, "top_p", 0, 1, "must be between 0 and 1")
    if "stream" in body and not isinstance(body["stream"], bool):
        raise Refusal(400, "invalid_request_error", "stream: expected a boolean")
    so = body.get("stream_options")
    if so is not None:
        if not body.get("stream"):
            raise Refusal(400, "invalid_request_error",
                          "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
        if not isinstance(so, dict) or not isinstance(so.get("include_usage", False), bool):
            raise Refusal(400, "invalid_request_error", "stream_options: invalid value")
    return system, prompt


def check_anthropic(body):
    """Validates a Messages body; returns (system, prompt)."""
    for k in body:
        if k not in ANTHROPIC_KEYS:
            raise Refusal(400, "invalid_request_error", f"{k}: Extra inputs are not permitted")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise Refusal(400, "invalid_request_error", "model: Field required")
    mt = body.get("max_tokens")
    if "max_tokens" not in body:
        raise Refusal(400, "invalid_request_error", "max_tokens: Field required")
    if isinstance(mt, bool) or not isinstance(mt, int) or mt < 1:
        raise Refusal(400, "invalid_request_error", "max_tokens: Input should be a valid integer >= 1")
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise Refusal(400, "invalid_request_error", "messages: at least one message is required")
    want = "user"
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            raise Refusal(400, "invalid_request_error",
                          f"messages.{i}.role: Input should be 'user' or 'assistant'")
        if m["role"] != want:
            raise Refusal(400, "invalid_request_error",
                          "messages: roles must alternate between \"user\" and \"assistant\", "
                          "starting with \"user\"")
        if not isinstance(m.get("content"), (str, list)):
            raise Refusal(400, "invalid_request_error", f"messages.{i}.content: Field required")
        want = "assistant" if want == "user" else "user"
    system = body.get("system")
    if system is not None and not isinstance(system, (str, list)):
        raise Refusal(400, "invalid_request_error", "system: Input should be a valid string")
    check_number(body, "temperature", 0, 1, "Input should be less than or equal to 1")
    check_number(body, "top_p", 0, 1, "Input should be less than or equal to 1")
    if "stream" in body and not isinstance(body["stream"], bool):
        raise Refusal(400, "invalid_request_error", "stream: Input should be a valid boolean")
    prompt = [text_of(m["content"]) for m in msgs if m["role"] == "user"][-1]
    return (text_of(system) if system is not None else None), prompt


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "llm_server"

    def log_message(self, fmt, *args):
        pass

    # ---- plumbing ----

    def send_json(self, status, obj, headers=()):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def start_stream(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def send_chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_stream(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def cut(self):
        """Drops the connection at once, mid-response."""
        self.wfile.flush()
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # ---- the request ----

    def do_GET(self):
        self.refuse_method()

    def do_PUT(self):
        self.refuse_method()

    def do_DELETE(self):
        self.refuse_method()

    def refuse_method(self):
        api = self.api_of(self.path)
        self.read_body()
        rec = self.record(api, None)
        self.answer_refusal(rec, api, Refusal(405, "invalid_request_error",
                                              f"Method {self.command} not allowed"))

    def api_of(self, path):
        prefix = STATE.args.prefix.rstrip("/")
        return {prefix + "/chat/completions": "openai", prefix + "/messages": "anthropic"}.get(
            path)

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            self.close_connection = True
            return None
        return self.rfile.read(n) if n else b""

    def key_state(self, api):
        """How the key was sent; the headers as logged, with the key replaced."""
        key = STATE.args.key
        shown = {}
        for name, value in self.headers.items():
            lname = name.lower()
            if lname == "authorization" and value.startswith("Bearer "):
                got = value[len("Bearer "):]
                value = "Bearer <key:%s>" % ("match" if key is None or got == key else "mismatch")
            elif lname == "x-api-key":
                value = "<key:%s>" % ("match" if key is None or value == key else "mismatch")
            elif lname == "authorization":
                value = "<not a bearer token>"
            shown[lname] = shown[lname] + ", " + value if lname in shown else value
        if api == "openai":
            got = self.headers.get("Authorization", "")
            got = got[len("Bearer "):] if got.startswith("Bearer ") else None
        else:
            got = self.headers.get("x-api-key")
        state = "absent" if got is None else "match" if key is None or got == key else "mismatch"
        return shown, state, got

    def record(self, api, raw):
        shown, state, _ = self.key_state(api)
        key = STATE.args.key
        elsewhere = False
        if key:
            others = [v for k, v in self.headers.items()
                      if k.lower() not in ("authorization", "x-api-key")]
            elsewhere = any(key in v for v in others) or key in self.path or (
                raw is not None and key.encode() in raw)
        body = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
        return {"t": time.monotonic(), "method": self.command, "path": self.path, "api": api,
                "headers": shown, "key": state, "key_elsewhere": elsewhere, "body": body,
                "status": None, "entry": None}

    def do_POST(self):
        api = self.api_of(self.path)
        raw = self.read_body()
        rec = self.record(api, raw)
        try:
            if raw is None:
                raise Refusal(413, "request_too_large", "Request exceeds the maximum size")
            if api is None:
                raise Refusal(404, "not_found_error", f"Invalid URL (POST {self.path})")
            system, prompt, body = self.check(api, raw)
        except Refusal as r:
            self.answer_refusal(rec, api, r)
            return
        with STATE.lock:
            idx, entry = STATE.script.take(prompt)
        if entry is None:
            self.answer_refusal(rec, api, Refusal(
                400, "invalid_request_error", "llm_server: the script has no answer left"))
            return
        rec["entry"] = idx
        if entry.get("arrived"):
            with open(entry["arrived"], "w") as f:
                f.write(prompt)
        if entry.get("delay"):
            time.sleep(float(entry["delay"]))
        self.rec = rec
        self.serve(api, body, prompt, entry)

    def commit(self, status):
        """Logs the request before its answer goes out, so a client that has
        its answer finds the request in the log."""
        self.rec["status"] = status
        STATE.write_log(self.rec)

    def check(self, api, raw):
        ctype = self.headers.get("Content-Type", "")
        _, state, got = self.key_state(api)
        if STATE.args.key is None:
            state = "match"
        if api == "anthropic" and state != "match":
            raise Refusal(401, "authentication_error",
                          "x-api-key header is required" if state == "absent"
                          else "invalid x-api-key")
        if api == "openai" and state != "match":
            if state == "absent":
                raise Refusal(401, "invalid_request_error",
                              "You didn't provide an API key. You need to provide your API "
                              "key in an Authorization header using Bearer auth.")
            raise Refusal(401, "invalid_request_error",
                          f"Incorrect API key provided: {got}. You can find your API key at "
                          "https://platform.openai.com/account/api-keys.", "invalid_api_key")
        if api == "anthropic" and self.headers.get("anthropic-version") != ANTHROPIC_VERSION:
            raise Refusal(400, "invalid_request_error",
                          "anthropic-version: header is required" if
                          self.headers.get("anthropic-version") is None else
                          "anthropic-version: invalid version")
        if ctype.split(";")[0].strip().lower() != "application/json":
            raise Refusal(400, "invalid_request_error",
                          f"Content-Type must be application/json, got '{ctype}'")
        try:
            body = json.loads(raw)
        except ValueError as e:
            raise Refusal(400, "invalid_request_error",
                          f"We could not parse the JSON body of your request. ({e})")
        if not isinstance(body, dict):
            raise Refusal(400, "invalid_request_error", "the body must be a JSON object")
        system, prompt = (check_openai if api == "openai" else check_anthropic)(body)
        return system, prompt, body

    def answer_refusal(self, rec, api, r):
        rec["status"] = r.status
        STATE.write_log(rec)
        self.send_json(r.status, error_body(api, r.status, r.etype, r.message, r.code))

    # ---- the scripted answer ----

    def serve(self, api, body, prompt, e):
        fail = e.get("fail")
        stream = bool(body.get("stream"))
        if fail in ("429", "500", "503", "529", "400", "401") or (
                fail == "overloaded" and not (stream and api == "anthropic")):
            self.serve_failure(api, fail, e)
            return
        with STATE.lock:
            STATE.serial += 1
            serial = STATE.serial
        text = e.get("text", "")
        answer = {
            "id": f"{'msg' if api == 'anthropic' else 'chatcmpl'}-{serial}",
            "model": e.get("model", body["model"]),
            "text": text,
            "input_tokens": e.get("input_tokens", len(prompt.encode()) // 4 + 1),
            "output_tokens": e.get("output_tokens", len(text.encode()) // 4 + 1),
            "finish": e.get("finish", "end_turn" if api == "anthropic" else "stop"),
        }
        if not stream:
            self.serve_whole(api, answer, fail == "cut")
            return
        events = (anthropic_events if api == "anthropic" else openai_events)(
            answer, int(e.get("chunk", 16)),
            bool((body.get("stream_options") or {}).get("include_usage")))
        self.serve_stream(events, fail, e.get("framing", []))

    def serve_failure(self, api, fail, e):
        anthropic = api == "anthropic"
        table = {
            "429": (429, "rate_limit_error" if anthropic else "requests",
                    "Rate limit reached", None if anthropic else "rate_limit_exceeded"),
            "500": (500, "api_error" if anthropic else "server_error",
                    "The server had an error while processing your request.", None),
            "503": (503, "api_error" if anthropic else "server_error",
                    "The service is temporarily unavailable.", None),
            "529": (529 if anthropic else 503, "overloaded_error" if anthropic else
                    "server_error", "Overloaded", None),
            "400": (400, "invalid_request_error", "Invalid request", None),
            "401": (401, "authentication_error" if anthropic else "invalid_request_error",
                    "invalid x-api-key" if anthropic else "Incorrect API key provided",
                    None if anthropic else "invalid_api_key"),
        }
        status, etype, message, code = table["529" if fail == "overloaded" else fail]
        headers = []
        if "retry_after" in e and status in (429, 503, 529):
            headers.append(("Retry-After", str(e["retry_after"])))
        self.commit(status)
        self.send_json(status, error_body(api, status, etype, e.get("message", message), code),
                       headers)

    def serve_whole(self, api, a, cut):
        if api == "anthropic":
            obj = {"id": a["id"], "type": "message", "role": "assistant", "model": a["model"],
                   "content": [{"type": "text", "text": a["text"]}],
                   "stop_reason": a["finish"], "stop_sequence": None,
                   "usage": {"input_tokens": a["input_tokens"],
                             "output_tokens": a["output_tokens"]}}
        else:
            obj = {"id": a["id"], "object": "chat.completion", "created": int(time.time()),
                   "model": a["model"],
                   "choices": [{"index": 0, "message": {"role": "assistant",
                                                        "content": a["text"], "refusal": None},
                                "logprobs": None, "finish_reason": a["finish"]}],
                   "usage": {"prompt_tokens": a["input_tokens"],
                             "completion_tokens": a["output_tokens"],
                             "total_tokens": a["input_tokens"] + a["output_tokens"]}}
        self.commit(200)
        if not cut:
            self.send_json(200, obj)
            return
        data = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data[:len(data) // 2])
        self.cut()

    def serve_stream(self, events, fail, framing):
        eol = b"\r\n" if "crlf" in framing else b"\n"
        self.commit(200)
        self.start_stream()
        if fail in ("cut", "truncate", "overloaded"):
            events = events[:max(1, len(events) // 2)]
        for name, data in events:
            if "comments" in framing:
                self.send_chunk(b": keep-alive" + eol)
            self.send_chunk(sse_event(name, data, eol, "multiline" in framing))
        if fail == "cut":
            self.cut()
            return
        if fail == "overloaded":
            err = {"type": "error", "error": {"type": "overloaded_error",
                                              "message": "Overloaded"}}
            self.send_chunk(sse_event("error", json.dumps(err), eol, False))
        self.end_stream()


def sse_event(name, data, eol, multiline):
    """One event's bytes: an event line when named, its data lines, a blank line."""
    out = b""
    if name:
        out += b"event: " + name.encode() + eol
    if multiline and data.startswith("{"):
        # JSON may break between members; the joined lines parse the same
        data = json.dumps(json.loads(data), indent=1)
    for line in data.split("\n"):
        out += b"data: " + line.encode() + eol
    return out + eol


def pieces(text, n):
    n = max(1, n)
    return [text[i:i + n] for i in range(0, len(text), n)]


def openai_events(a, chunk, include_usage):
    base = {"id": a["id"], "object": "chat.completion.chunk", "created": int(time.time()),
            "model": a["model"]}

    def ev(choices, **extra):
        d = dict(base, choices=choices, **extra)
        if include_usage and "usage" not in extra:
            d["usage"] = None
        return (None, json.dumps(d))

    out = [ev([{"index": 0, "delta": {"role": "assistant", "content": ""},
                "logprobs": None, "finish_reason": None}])]
    for p in pieces(a["text"], chunk):
        out.append(ev([{"index": 0, "delta": {"content": p}, "logprobs": None,
                        "finish_reason": None}]))
    out.append(ev([{"index": 0, "delta": {}, "logprobs": None, "finish_reason": a["finish"]}]))
    if include_usage:
        out.append(ev([], usage={"prompt_tokens": a["input_tokens"],
                                 "completion_tokens": a["output_tokens"],
                                 "total_tokens": a["input_tokens"] + a["output_tokens"]}))
    out.append((None, "[DONE]"))
    return out


def anthropic_events(a, chunk, include_usage):
    def ev(name, **d):
        return (name, json.dumps(dict({"type": name}, **d)))

    out = [ev("message_start", message={
        "id": a["id"], "type": "message", "role": "assistant", "content": [],
        "model": a["model"], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": a["input_tokens"], "output_tokens": 1}}),
        ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        ev("ping")]
    for p in pieces(a["text"], chunk):
        out.append(ev("content_block_delta", index=0, delta={"type": "text_delta", "text": p}))
    out.append(ev("content_block_stop", index=0))
    out.append(ev("message_delta", delta={"stop_reason": a["finish"], "stop_sequence": None},
                  usage={"output_tokens": a["output_tokens"]}))
    out.append(ev("message_stop"))
    return out


STATE = None


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client gone mid-answer (a cut, a timeout) is expected here


def main():
    global STATE
    ap = argparse.ArgumentParser(description="OpenAI / Anthropic API double")
    ap.add_argument("--script", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--key")
    ap.add_argument("--port-file")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--prefix", default="/v1")
    ap.add_argument("--lifetime", type=float, default=900)
    args = ap.parse_args()
    STATE = State(args)
    srv = Server(("127.0.0.1", args.port), Handler)
    port = srv.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{port}\n")
        os.replace(tmp, args.port_file)
    try:
        sys.stdout.write(f"{port}\n")
        sys.stdout.flush()
    except BrokenPipeError:
        pass  # a reader that took the first line and left (head -1)
    threading.Timer(args.lifetime, lambda: os._exit(0)).start()
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
