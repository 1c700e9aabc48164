#!/usr/bin/env python3
"""Integration test: the command line of evalpod, one behaviour per test.

usage: cli.py EVALPOD PEER_SCRIPT

EVALPOD is the evalpod binary, PEER_SCRIPT tests/peers/http_peer.py.  The
kernels come from tests/data/traps next to this script.  Each test runs the
real binary on a tiny batch (y = 2x + 1 on 4096 floats, a few samples) and
asserts its exit status (0 batch ran, 1 batch or reference at fault, 2 usage,
3 infrastructure) and, where it matters, the message.  Batches and results
travel through loopback HTTP and HTTPS peers (a throwaway CA made with
openssl); presigned-style URLs carry a fake signature that must never show
in evalpod's output.  Device peaks are measured into a temporary cache.
"""
import contextlib
import json
import math
import os
import platform
import re
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import redteam  # evalpod's input generator, to recognise the check inputs
from checks import affine_problem, load_json

RUN_TIMEOUT = 120  # the first run measures the device peaks
SECRET = "supersecret"
QUERY = "?X-Amz-Signature=" + SECRET
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "traps")

failures = []
passes = []
skips = []
tests = []


def test(fn):
    tests.append(fn)
    return fn


class Skip(Exception):
    pass


class Ctx:
    """What every test gets: paths, the environment and the peers."""

    def __init__(self, evalpod, peer, tmp):
        self.evalpod = evalpod
        self.peer = peer
        self.tmp = tmp
        self.env = clean_env(tmp)
        self.http = None    # Peer
        self.https = None   # Peer, or None without openssl
        self.ca = None
        self.errors = []
        self.serial = 0

    def expect(self, cond, what):
        if not cond:
            self.errors.append(what)
        return cond

    def fresh_dir(self, name):
        self.serial += 1
        path = os.path.join(self.tmp, "t%02d-%s" % (self.serial, name))
        os.mkdir(path)
        return path

    def evalpod_run(self, args, stdin=None, env=None):
        """Runs evalpod with args; returns (status, stdout, stderr)."""
        try:
            proc = subprocess.run([self.evalpod] + args, input=stdin,
                                  env=self.env if env is None else env,
                                  capture_output=True, text=True, timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired as e:
            err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else e.stderr
            raise AssertionError("evalpod %s did not finish in %d s; stderr: %s"
                                 % (" ".join(args), RUN_TIMEOUT, (err or "")[-500:]))
        return proc.returncode, proc.stdout, proc.stderr


def clean_env(tmp):
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"),
               NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    # Loopback only, and the system trust store must not learn our CA.
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy",
                 "ALL_PROXY", "CURL_CA_BUNDLE", "SSL_CERT_FILE", "SSL_CERT_DIR",
                 "EVALPOD_TEST_NOISE"):
        env.pop(name, None)
    return env


def read(name):
    with open(os.path.join(DATA, name), encoding="utf-8") as f:
        return f.read()


def make_batch(outputs=None, reference=None):
    batch = {
        "schema": "evalpod.batch", "version": 1, "batch_id": "cli",
        "problem": affine_problem(),
        "shapes": [{"name": "small", "values": {"n": 4096}}],
        "reference": {"source": reference if reference is not None else read("reference.cl")},
        "variants": [{"id": "good", "source": read("good.cl")}],
        "measurement": {"warmup": 1, "min_samples": 3, "max_samples": 20, "min_time_ms": 5,
                        "max_time_ms": 500},
        "correctness": {"atol": 1e-5, "rtol": 1e-5, "seeds": [1, 2, 3]},
        "limits": {"compile_timeout_s": 30, "run_timeout_s": 10, "time_timeout_s": 60},
    }
    if outputs is not None:
        batch["outputs"] = outputs
    return batch


def write_batch(ctx, dirname, batch):
    path = os.path.join(dirname, "batch.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(batch, f)
    return path


# -- peers -------------------------------------------------------------------

class Peer:
    """One http_peer.py process on 127.0.0.1."""

    def __init__(self, script, tmp, name, tls=None, ca=None):
        args = [sys.executable, script, "--port", "0", "--lifetime", "900"]
        if tls:
            args += ["--tls", tls[0], tls[1]]
        self.log = open(os.path.join(tmp, name + ".log"), "w", encoding="utf-8")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline().strip()
        if not line.isdigit():
            self.stop()
            raise RuntimeError("the %s peer did not start (see %s.log)" % (name, name))
        self.port = int(line)
        self.scheme = "https" if tls else "http"
        # The certificate names localhost and 127.0.0.1; use the name over TLS.
        self.host = "localhost" if tls else "127.0.0.1"
        self.ssl = ssl.create_default_context(cafile=ca) if tls else None

    def url(self, path):
        return "%s://%s:%d%s" % (self.scheme, self.host, self.port, path)

    def put(self, path, data):
        req = urllib.request.Request(self.url(path), data=data, method="PUT")
        with urllib.request.urlopen(req, timeout=10, context=self.ssl) as resp:
            return resp.status

    def get(self, path):
        """Returns the stored bytes, or None when the peer has nothing there."""
        try:
            with urllib.request.urlopen(self.url(path), timeout=10, context=self.ssl) as resp:
                return resp.read()
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise

    def get_json(self, path):
        body = self.get(path)
        try:
            return json.loads(body) if body is not None else None
        except ValueError:
            return None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.log.close()


def make_certs(tmp):
    """A throwaway CA and a server certificate for localhost; (ca, cert, key)."""
    d = os.path.join(tmp, "pki")
    os.mkdir(d)
    p = lambda name: os.path.join(d, name)
    with open(p("server.ext"), "w", encoding="utf-8") as f:
        f.write("basicConstraints=critical,CA:FALSE\n"
                "keyUsage=critical,digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth\n"
                "subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    steps = [
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", "/CN=kctl cli test CA", "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign",
         "-keyout", p("ca.key"), "-out", p("ca.pem")],
        ["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
         "-keyout", p("server.key"), "-out", p("server.csr")],
        ["openssl", "x509", "-req", "-in", p("server.csr"), "-CA", p("ca.pem"),
         "-CAkey", p("ca.key"), "-CAcreateserial", "-days", "2",
         "-extfile", p("server.ext"), "-out", p("server.pem")],
    ]
    for cmd in steps:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            raise RuntimeError("openssl failed: " + proc.stderr[-1000:])
    return p("ca.pem"), p("server.pem"), p("server.key")


def url_outputs(peer, prefix):
    """The outputs of a batch as presigned-style URLs under prefix on peer."""
    return {
        "summary": peer.url(prefix + "/summary.json" + QUERY),
        "results": {"good": peer.url(prefix + "/good.json" + QUERY)},
        "artifacts": {"good": {"trace.json": peer.url(prefix + "/good-trace.json" + QUERY)}},
    }


def no_secret(ctx, out, err):
    ctx.expect(SECRET not in err, "stderr never quotes a URL's query (found '%s' in: %s)"
               % (SECRET, err[-600:]))
    ctx.expect(SECRET not in out, "stdout never quotes a URL's query")


def expect_status(ctx, got, want, err):
    ctx.expect(got == want, "exit %d (got %d; stderr: %s)" % (want, got, err[-800:]))


def expect_uploaded(ctx, peer, prefix):
    res = peer.get_json(prefix + "/good.json")
    if ctx.expect(res is not None, "the result of good was stored on the peer"):
        ctx.expect(res.get("id") == "good", "the stored result has id good (got %r)"
                   % res.get("id"))
        ctx.expect(res.get("status") == "ok", "the stored result has status ok (got %r: %s)"
                   % (res.get("status"), str(res.get("fault"))[:300]))
    summary = peer.get_json(prefix + "/summary.json")
    if ctx.expect(summary is not None, "the summary was stored on the peer"):
        ctx.expect(summary.get("schema") == "evalpod.summary",
                   "the stored summary has schema evalpod.summary (got %r)"
                   % summary.get("schema"))
    trace = peer.get_json(prefix + "/good-trace.json")
    ctx.expect(isinstance(trace, dict) and isinstance(trace.get("traceEvents"), list),
               "the stored trace.json is a Chrome trace with traceEvents")


# -- usage -------------------------------------------------------------------

@test
def no_arguments_is_a_usage_error(ctx):
    rc, out, err = ctx.evalpod_run([])
    expect_status(ctx, rc, 2, err)
    ctx.expect(err.startswith("usage: evalpod"), "usage on stderr (got %r)" % err[:200])
    ctx.expect(out == "", "nothing on stdout (got %r)" % out[:200])


@test
def help_prints_usage_on_stdout(ctx):
    rc, out, err = ctx.evalpod_run(["help"])
    expect_status(ctx, rc, 0, err)
    ctx.expect(out.startswith("usage: evalpod"), "usage on stdout (got %r)" % out[:200])
    ctx.expect(re.search(r"^\s+run\s", out, re.M) and re.search(r"^\s+devices\s", out, re.M),
               "the usage lists run and devices")


@test
def unknown_command_is_named(ctx):
    rc, out, err = ctx.evalpod_run(["bogus"])
    expect_status(ctx, rc, 2, err)
    ctx.expect("'bogus'" in err, "stderr names 'bogus' (got %r)" % err[:300])


def device_local_mem(ctx):
    """The first device's local memory in bytes, as evalpod devices reports it."""
    rc, out, err = ctx.evalpod_run(["devices", "-o", "json"])
    expect_status(ctx, rc, 0, err)
    return json.loads(out)[0]["devices"][0]["local_mem_bytes"]


def run_programs(ctx, name, batch):
    """Runs batch in a fresh directory; {program id: its result (or {})}."""
    d = ctx.fresh_dir(name)
    path = write_batch(ctx, d, batch)
    rc, out, err = ctx.evalpod_run(["run", path, "--out", os.path.join(d, "out"), "--quiet"])
    expect_status(ctx, rc, 0, err)
    return {v["id"]: load_json(os.path.join(d, "out", v["id"] + ".json")) or {}
            for v in batch["variants"]}


@test
def local_memory_over_the_device_is_bad_geometry(ctx):
    # A step whose __local argument is twice the device's local memory is
    # refused before its launch, with both figures named (a GPU answers the
    # launch itself with a bare CL_OUT_OF_RESOURCES); the same kernel with a
    # small one passes.
    lmem = device_local_mem(ctx)
    src = ("__kernel void affine(__global const float *x, __global float *y, int n,\n"
           "                     __local float *scratch)\n"
           "{\n\tint i = get_global_id(0);\n\n"
           "\tscratch[get_local_id(0)] = x[i < n ? i : 0];\n"
           "\tif (i < n)\n\t\ty[i] = fma(scratch[get_local_id(0)], 2.0f, 1.0f);\n}\n")
    batch = make_batch()
    problem = batch["problem"]
    problem["reference_launch"] = [dict(problem["launch"][0])]
    problem["launch"][0]["args"] = ["x", "y", "n", {"local": "LB"}]
    batch["variants"] = [
        {"id": "small", "source": src, "build_options": "-DLB=256"},
        {"id": "big", "source": src, "build_options": "-DLB=%d" % (2 * lmem)}]
    res = run_programs(ctx, "lmem", batch)
    small, big = res["small"], res["big"]
    ctx.expect(small.get("status") == "ok", "small: ok (got %r)" % small.get("status"))
    fault = big.get("fault") or {}
    ctx.expect(big.get("status") == "runtime_error" and fault.get("kind") == "bad_geometry",
               "big: runtime_error/bad_geometry (got %r/%r)" % (big.get("status"), fault.get("kind")))
    # the kernel's own local memory comes on top of the argument's (4 bytes on NVIDIA)
    m = re.search(r"needs (\d+) bytes of local memory", fault.get("message", ""))
    ctx.expect(m and 2 * lmem <= int(m.group(1)) <= 2 * lmem + 4096
               and "the device has %d" % lmem in fault.get("message", ""),
               "big: the message names both figures (got %r)" % fault.get("message", "")[:300])


@test
def a_step_with_global_size_zero_does_not_run(ctx):
    # After affine, a step that would overwrite y with garbage: with its
    # global size 0 (P=0) it must not run and the program passes, the kernel
    # named as never launched; with P=1 it runs and the program fails its
    # checks (so the test can fail); a negative size, or a plan with every
    # step at 0, is runtime_error/bad_geometry, named.  A skipped step's
    # local memory is not held against the device (it never launches).
    lmem = device_local_mem(ctx)
    src = ("__kernel void affine(__global const float *x, __global float *y, int n)\n"
           "{\n\tint i = get_global_id(0);\n\n"
           "\tif (i < n)\n\t\ty[i] = fma(x[i], 2.0f, 1.0f);\n}\n\n"
           "__kernel void garbage(__global float *y, int n, __local float *s)\n"
           "{\n\tint i = get_global_id(0);\n\n"
           "\ts[get_local_id(0)] = 12345.0f;\n"
           "\tif (i < n)\n\t\ty[i] = s[get_local_id(0)];\n}\n")
    batch = make_batch()
    problem = batch["problem"]
    problem["reference_launch"] = [dict(problem["launch"][0])]
    problem["launch"] = [
        {"kernel": "affine", "args": ["x", "y", "n"], "global": ["A * round_up(n, 64)"],
         "local": [64]},
        {"kernel": "garbage", "args": ["y", "n", {"local": "L"}],
         "global": ["P * round_up(n, 64)"], "local": [64]}]
    cases = {"skipped": "-DA=1 -DP=0 -DL=256", "runs": "-DA=1 -DP=1 -DL=256",
             "negative": "-DA=1 -DP=-1 -DL=256", "none": "-DA=0 -DP=0 -DL=256",
             "skipped-big": "-DA=1 -DP=0 -DL=%d" % (2 * lmem)}
    batch["variants"] = [{"id": k, "source": src, "build_options": v}
                         for k, v in cases.items()]
    res = run_programs(ctx, "global0", batch)
    ok = res["skipped"]
    ctx.expect(ok.get("status") == "ok", "skipped: ok (got %r)" % ok.get("status"))
    ctx.expect(res["skipped-big"].get("status") == "ok",
               "skipped with twice the device's local memory: ok (got %r: %r)"
               % (res["skipped-big"].get("status"), res["skipped-big"].get("fault")))
    launch = (ok.get("performance") or {}).get("launch") or []
    ctx.expect([st.get("kernel") for st in launch] == ["affine"],
               "skipped: only affine timed (got %r)" % [st.get("kernel") for st in launch])
    note = (((ok.get("ir") or {}).get("kernels") or {}).get("garbage") or {}).get("note", "")
    ctx.expect("not launched" in note, "skipped: stage 5 says garbage never ran (got %r)" % note)
    ctx.expect(res["runs"].get("status") == "incorrect",
               "runs: incorrect (got %r)" % res["runs"].get("status"))
    for k, want in (("negative", "= -4096 is negative"), ("none", "runs no kernel")):
        fault = res[k].get("fault") or {}
        ctx.expect(res[k].get("status") == "runtime_error" and fault.get("kind") == "bad_geometry"
                   and want in fault.get("message", ""),
                   "%s: runtime_error/bad_geometry saying %r (got %r/%r: %r)"
                   % (k, want, res[k].get("status"), fault.get("kind"),
                      fault.get("message", "")[:200]))


@test
def jobs_zero_is_a_usage_error(ctx):
    d = ctx.fresh_dir("jobs0")
    path = write_batch(ctx, d, make_batch())
    rc, out, err = ctx.evalpod_run(["run", path, "--out", os.path.join(d, "out"),
                                    "--jobs", "0"])
    expect_status(ctx, rc, 2, err)
    ctx.expect("--jobs" in err, "stderr names --jobs (got %r)" % err[:300])
    ctx.expect(not os.path.exists(os.path.join(d, "out")), "nothing written")


@test
def no_output_anywhere_is_a_usage_error(ctx):
    d = ctx.fresh_dir("noout")
    path = write_batch(ctx, d, make_batch())
    rc, out, err = ctx.evalpod_run(["run", path])
    expect_status(ctx, rc, 2, err)
    ctx.expect("--out" in err, "stderr says to give --out (got %r)" % err[:300])


@test
def an_output_path_that_is_a_file_fails_before_any_work(ctx):
    d = ctx.fresh_dir("outfile")
    path = write_batch(ctx, d, make_batch())
    out = os.path.join(d, "results")
    with open(out, "w") as f:
        f.write("not a folder\n")
    rc, _, err = ctx.evalpod_run(["run", path, "--out", out])
    expect_status(ctx, rc, 3, err)
    ctx.expect(out in err and "not a directory" in err and "checking" not in err,
               "stderr names the path, says what is wrong, and nothing was checked "
               "(got %r)" % err[:300])
    with open(out) as f:
        ctx.expect(f.read() == "not a folder\n", "the file is left as it was")


@test
def invalid_test_noise_is_a_usage_error(ctx):
    d = ctx.fresh_dir("badnoise")
    path = write_batch(ctx, d, make_batch())
    for value in ("7", "x:0.3", "7:abc", "7:0.3x", "7:10.5", "7:-1", " 7:0.3"):
        out_dir = os.path.join(d, "out")
        rc, out, err = ctx.evalpod_run(["run", path, "--out", out_dir],
                                       env=dict(ctx.env, EVALPOD_TEST_NOISE=value))
        expect_status(ctx, rc, 2, err)
        ctx.expect("invalid EVALPOD_TEST_NOISE '%s'" % value in err,
                   "stderr names the variable and %r (got %r)" % (value, err[:300]))
        ctx.expect(not os.path.exists(out_dir), "nothing written for %r" % value)


# -- the batch at fault ------------------------------------------------------

@test
def truncated_json_names_file_and_position(ctx):
    d = ctx.fresh_dir("truncated")
    text = json.dumps(make_batch(), indent=1)
    path = os.path.join(d, "truncated.json")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text[:len(text) // 2])
    rc, out, err = ctx.evalpod_run(["run", path, "--out", os.path.join(d, "out")])
    expect_status(ctx, rc, 1, err)
    ctx.expect(path in err, "stderr names the file (got %r)" % err[:300])
    ctx.expect(re.search(r"line \d+, column \d+", err),
               "stderr gives a line and column (got %r)" % err[:300])


@test
def unknown_key_is_named_by_path(ctx):
    d = ctx.fresh_dir("unknownkey")
    batch = make_batch()
    batch["problem"]["bogus"] = 1
    rc, out, err = ctx.evalpod_run(["run", write_batch(ctx, d, batch),
                                    "--out", os.path.join(d, "out")])
    expect_status(ctx, rc, 1, err)
    ctx.expect("$.problem.bogus" in err, "stderr names $.problem.bogus (got %r)" % err[:300])


@test
def expression_error_is_named_by_path(ctx):
    d = ctx.fresh_dir("expr")
    batch = make_batch()
    batch["problem"]["buffers"][0]["count"] = "n*"
    rc, out, err = ctx.evalpod_run(["run", write_batch(ctx, d, batch),
                                    "--out", os.path.join(d, "out")])
    expect_status(ctx, rc, 1, err)
    ctx.expect("$.problem.buffers[0].count:" in err,
               "stderr names $.problem.buffers[0].count (got %r)" % err[:300])


@test
def flops_naming_an_unknown_value_is_refused(ctx):
    # flops must evaluate over a shape's values alone; q is in none of them.
    d = ctx.fresh_dir("flops")
    out_dir = os.path.join(d, "out")
    batch = make_batch()
    batch["problem"]["flops"] = "2*n*q"
    rc, out, err = ctx.evalpod_run(["run", write_batch(ctx, d, batch), "--out", out_dir])
    expect_status(ctx, rc, 1, err)
    ctx.expect("$.problem.flops" in err, "stderr names $.problem.flops (got %r)" % err[:300])
    ctx.expect("'small'" in err, "stderr names the shape 'small' (got %r)" % err[:300])
    ctx.expect(not os.path.exists(out_dir), "nothing written")


@test
def summary_is_a_reserved_variant_id(ctx):
    # A variant called summary would overwrite summary.json in --out.
    d = ctx.fresh_dir("summaryid")
    out_dir = os.path.join(d, "out")
    batch = make_batch()
    batch["variants"][0]["id"] = "summary"
    rc, out, err = ctx.evalpod_run(["run", write_batch(ctx, d, batch), "--out", out_dir])
    expect_status(ctx, rc, 1, err)
    ctx.expect("$.variants[0].id" in err, "stderr names $.variants[0].id (got %r)" % err[:300])
    ctx.expect(not os.path.exists(out_dir), "nothing written")


@test
def missing_batch_file_is_named(ctx):
    d = ctx.fresh_dir("missing")
    path = os.path.join(d, "no-such-batch.json")
    rc, out, err = ctx.evalpod_run(["run", path, "--out", os.path.join(d, "out")])
    expect_status(ctx, rc, 1, err)
    ctx.expect(path in err, "stderr names the path (got %r)" % err[:300])


@test
def reference_that_does_not_compile(ctx):
    d = ctx.fresh_dir("badref")
    out_dir = os.path.join(d, "out")
    source = read("reference.cl").replace("2.0f * x[i]", "2.0f * undeclared_thing[i]")
    ctx.expect("undeclared_thing" in source, "the test broke the reference")
    rc, out, err = ctx.evalpod_run(["run", write_batch(ctx, d, make_batch(reference=source)),
                                    "--out", out_dir])
    expect_status(ctx, rc, 1, err)
    ctx.expect("reference does not compile" in err,
               "stderr says the reference does not compile (got %r)" % err[:400])
    ctx.expect("undeclared identifier 'undeclared_thing'" in err,
               "stderr quotes the compiler's error (got %r)" % err[:600])
    ctx.expect(not os.path.exists(os.path.join(out_dir, "good.json")),
               "no result written for the variant")


@test
def reference_that_runs_past_its_limit_is_infrastructure(ctx):
    # A reference killed at its deadline is the machine or the limit, not the
    # batch: exit 4 (retried by kctl), a message naming the limit, no results.
    d = ctx.fresh_dir("slowref")
    out_dir = os.path.join(d, "out")
    batch = make_batch(reference=read("hang.cl"))
    batch["limits"].update({"compile_timeout_s": 2, "run_timeout_s": 1})
    rc, out, err = ctx.evalpod_run(["run", write_batch(ctx, d, batch), "--out", out_dir])
    expect_status(ctx, rc, 4, err)
    ctx.expect("the reference ran past its 3 s limit" in err,
               "stderr says the reference ran past its 3 s limit (got %r)" % err[:400])
    ctx.expect("not the candidates' fault" in err,
               "stderr clears the candidates (got %r)" % err[:400])
    ctx.expect(not os.path.exists(os.path.join(out_dir, "good.json")),
               "no result written for the variant")


@test
def batch_url_error_does_not_quote_signature(ctx):
    # A presigned batch URL that serves something that is not a batch: the
    # error names the document, but the URL's signature must not show.
    text = json.dumps(make_batch(outputs=url_outputs(ctx.http, "/badurl")))
    ctx.http.put("/badurl/batch.json", text[:len(text) // 2].encode())
    rc, out, err = ctx.evalpod_run(["run", ctx.http.url("/badurl/batch.json" + QUERY)])
    expect_status(ctx, rc, 1, err)
    ctx.expect("not valid JSON" in err, "stderr says the batch is not JSON (got %r)"
               % err[:300])
    no_secret(ctx, out, err)


# -- runs --------------------------------------------------------------------

@test
def batch_on_stdin(ctx):
    d = ctx.fresh_dir("stdin")
    out_dir = os.path.join(d, "out")
    rc, out, err = ctx.evalpod_run(["run", "-", "--out", out_dir],
                                   stdin=json.dumps(make_batch()))
    expect_status(ctx, rc, 0, err)
    res = load_json(os.path.join(out_dir, "good.json"))
    if ctx.expect(res is not None, "good.json written"):
        ctx.expect(res.get("status") == "ok", "good.json has status ok (got %r: %s)"
                   % (res.get("status"), str(res.get("fault"))[:300]))
        # On PoCL the timing worker takes the program its check worker
        # compiled (docs/evalpod.md, process model) instead of compiling again.
        perf = res.get("performance") or {}
        if "Portable Computing Language" in str((res.get("device") or {}).get("platform")):
            ctx.expect(perf.get("compiled_by_check") is True,
                       "good's timing adopted its check worker's compiled program "
                       "(compiled_by_check %r)" % perf.get("compiled_by_check"))


@test
def sampling_stops_once_the_median_is_known_within_precision(ctx):
    # docs/evalpod.md, stopping rule: past min_samples, a program is done
    # when its timed time reaches min_time_ms or the 95% interval of its
    # median is within measurement.precision of it; precision 0 turns the
    # second rule off.
    d = ctx.fresh_dir("precision")
    runs = {}
    # The loose run's min_time_ms is far out of reach of the precision rule
    # (on a busy machine 40 ms of timed time came first, at 11 samples).
    for name, precision, min_time in (("loose", 1.0, 4000), ("off", 0, 40)):
        batch = make_batch()
        batch["measurement"].update({"min_samples": 6, "max_samples": 200,
                                     "min_time_ms": min_time, "max_time_ms": 5000,
                                     "precision": precision})
        out_dir = os.path.join(d, name)
        rc, out, err = ctx.evalpod_run(["run", write_batch(ctx, d, batch), "--out", out_dir])
        expect_status(ctx, rc, 0, err)
        runs[name] = (load_json(os.path.join(out_dir, "good.json")) or {}).get(
            "performance") or {}
    loose, off = runs["loose"], runs["off"]
    # At 6 samples the interval's upper end is the largest sample, so one
    # sample over twice the median (a busy moment) keeps it going a little,
    # by 15 or more on a loaded machine under ASan; the bound stays far below
    # max_samples (200), which is where it would end without the rule and
    # without min_time_ms.
    ctx.expect(loose.get("stopped_by") == "precision" and
               6 <= len(loose.get("samples_ms") or []) < 100,
               "precision 1: stopped by precision soon after min_samples (got %r, %d samples)"
               % (loose.get("stopped_by"), len(loose.get("samples_ms") or [])))
    ctx.expect(off.get("stopped_by") == "min_time_ms" and (off.get("timed_ms") or 0) >= 40,
               "precision 0: sampled until min_time_ms (got %r, %s ms timed)"
               % (off.get("stopped_by"), off.get("timed_ms")))


SLOW_AFFINE = """// Correct and slow: a long loop whose result is multiplied by zero.
__kernel void affine(__global const float *x, __global float *y, int n)
{
	int i = get_global_id(0);

	if (i < n) {
		float acc = 0.0f;

		for (int k = 0; k < LOOP; k++)
			acc += sin(x[i] + (float)k);
		y[i] = fma(x[i], 2.0f, 1.0f) + acc * 0.0f;
	}
}
"""


def sampled(ctx, d, name, batch, outclass, ids):
    """Runs batch into d/name, with measurement.outclass set unless it is
    None; returns each of ids' performance section, and the output folder."""
    if outclass is not None:
        batch["measurement"]["outclass"] = outclass
    out_dir = os.path.join(d, name)
    rc, out, err = ctx.evalpod_run(["run", write_batch(ctx, d, batch), "--out", out_dir])
    expect_status(ctx, rc, 0, err)
    return {v: (load_json(os.path.join(out_dir, v + ".json")) or {}).get("performance") or {}
            for v in ids}, out_dir


@test
def a_program_far_slower_than_another_stops_sampling_as_outclassed(ctx):
    # docs/evalpod.md, stopping rule: once a program has 3 samples and even
    # its fastest is over measurement.outclass (default 2) times another
    # program's median, its sampling ends (stopped_by "outclassed"); the
    # baseline and the reference never are; outclass 0 turns the rule off.
    # Nor is a program within 0.05 ms a run of that bound: "good" and its two
    # copies run for a few us, and their samples spread by more than 2x.
    d = ctx.fresh_dir("outclass")
    tiny = ("good", "good2", "good3")
    runs = {}
    for name, outclass in (("default", None), ("off", 0)):
        batch = make_batch()
        batch["baseline"] = {"id": "base", "source": SLOW_AFFINE,
                             "build_options": "-DLOOP=800"}
        batch["variants"] += [{"id": v, "source": read("good.cl"), "build_options": "-DTAG=%d" % i}
                              for i, v in enumerate(tiny[1:])]
        batch["variants"].append({"id": "slow", "source": SLOW_AFFINE,
                                  "build_options": "-DLOOP=300"})
        batch["measurement"].update({"min_samples": 8, "max_samples": 20, "min_time_ms": 1,
                                     "max_time_ms": 5000, "precision": 0})
        runs[name], out_dir = sampled(ctx, d, name, batch, outclass, tiny + ("slow", "base"))
        runs[name]["reference"] = ((load_json(os.path.join(out_dir, "summary.json")) or {})
                                   .get("reference") or {}).get("performance") or {}
    got = {name: {v: (p.get("stopped_by"), len(p.get("samples_ms") or []), p.get("rounds"))
                  for v, p in r.items()} for name, r in runs.items()}
    slow = runs["default"]["slow"]
    ctx.expect(slow.get("stopped_by") == "outclassed" and slow.get("stats", {}).get("n") == 3,
               "the slow variant stops at 3 samples as outclassed (%r)" % got["default"])
    ctx.expect((slow.get("speedup_vs_baseline") or {}).get("ratio_of_medians", 0) > 1,
               "and still has its speedup over the (slower) baseline (%r)"
               % slow.get("speedup_vs_baseline"))
    for v in ("base", "reference") + tiny:
        p = runs["default"][v]
        ctx.expect(p.get("stopped_by") != "outclassed" and p.get("stats", {}).get("n", 0) >= 8,
                   "%s is not outclassed: it takes min_samples (%r)" % (v, got["default"]))
    off = runs["off"]["slow"]
    ctx.expect(off.get("stopped_by") != "outclassed" and off.get("stats", {}).get("n", 0) >= 8,
               "outclass 0: the slow variant takes min_samples (%r)" % got["off"])
    # The reference is the unit, not a contender: with no fast variant
    # beside it, the slow one is the batch's best and is never outclassed,
    # however much faster the (few-us) reference is.
    batch = make_batch()
    batch["baseline"] = {"id": "base", "source": SLOW_AFFINE, "build_options": "-DLOOP=800"}
    batch["variants"] = [{"id": "slow", "source": SLOW_AFFINE, "build_options": "-DLOOP=300"}]
    batch["measurement"].update({"min_samples": 8, "max_samples": 20, "min_time_ms": 1,
                                 "max_time_ms": 5000, "precision": 0})
    out_dir = os.path.join(d, "alone")
    rc, out, err = ctx.evalpod_run(["run", write_batch(ctx, d, batch), "--out", out_dir])
    expect_status(ctx, rc, 0, err)
    alone = (load_json(os.path.join(out_dir, "slow.json")) or {}).get("performance") or {}
    ref = ((load_json(os.path.join(out_dir, "summary.json")) or {}).get("reference")
           or {}).get("performance") or {}
    ref_median = (ref.get("stats") or {}).get("median", 0)
    ctx.expect(0 < ref_median and (alone.get("stats") or {}).get("min", 0) > 2 * ref_median + 0.05
               and alone.get("stopped_by") != "outclassed"
               and (alone.get("stats") or {}).get("n", 0) >= 8,
               "a variant over 2x slower than the reference, but the fastest of the rest, is "
               "not outclassed by it (reference median %r ms; %r after %r samples, fastest %r)"
               % (ref_median, alone.get("stopped_by"), (alone.get("stats") or {}).get("n"),
                  (alone.get("stats") or {}).get("min")))


def median_ci(samples):
    """evalpod's distribution-free 95% interval of the median (stats.c)."""
    x, n = sorted(samples), len(samples)
    if n < 6:
        return float("-inf"), float("inf")
    w = 1.96 * math.sqrt(n)
    lo = math.floor((n - w) / 2) if n > w + 2 else 1
    return x[lo - 1], x[min(math.ceil((n + w) / 2), n) - 1]


@test
def a_program_shown_slower_than_another_stops_sampling_as_outpaced(ctx):
    # docs/evalpod.md, stopping rule: past min_samples, a program whose
    # median's 95% interval lies above another's (the reference's left out)
    # is done (stopped_by "outpaced"), however far from 2 x it is; the
    # baseline and the reference never are; outclass 0 turns it off too.
    # With outclass 100 the outclassed rule stays out of the way: on a busy
    # machine the slower variant's fastest of 3 samples was once over 2 x
    # the fast one's median, and it stopped as outclassed after 4.
    d = ctx.fresh_dir("outpaced")
    runs = {}
    for name, outclass in (("on", 100), ("off", 0)):
        batch = make_batch()
        batch["baseline"] = {"id": "base", "source": SLOW_AFFINE,
                             "build_options": "-DLOOP=450"}
        batch["variants"] = [{"id": "fast", "source": SLOW_AFFINE, "build_options": "-DLOOP=200"},
                             {"id": "slower", "source": SLOW_AFFINE,
                              "build_options": "-DLOOP=300"}]
        batch["measurement"].update({"min_samples": 8, "max_samples": 60, "min_time_ms": 60000,
                                     "max_time_ms": 60000, "precision": 0,
                                     "flush_bytes": 1 << 20})
        runs[name] = sampled(ctx, d, name, batch, outclass, ("fast", "slower", "base"))[0]
    got = {name: {v: (p.get("stopped_by"), len(p.get("samples_ms") or []))
                  for v, p in r.items()} for name, r in runs.items()}
    slower, fast = runs["on"]["slower"], runs["on"]["fast"]
    n = len(slower.get("samples_ms") or [])
    ctx.expect(slower.get("stopped_by") == "outpaced" and 8 <= n < 60,
               "the 1.5 x slower variant stops as outpaced after min_samples, before "
               "max_samples (%r)" % got["on"])
    # At its last sample its interval was above the fast one's, whose
    # samples were then those of the rounds before, and perhaps that round's
    # (a round takes its programs in a random order).
    last = max(slower.get("rounds") or [0])
    fast_at = [[ms for ms, r in zip(fast.get("samples_ms") or [], fast.get("rounds") or [])
                if r < last + k] for k in (0, 1)]
    lo = median_ci(slower.get("samples_ms") or [])[0]
    ctx.expect(any(lo > median_ci(f)[1] for f in fast_at),
               "its median's interval lies above the fast variant's (%r against %r)"
               % (median_ci(slower.get("samples_ms") or []),
                  [median_ci(f) for f in fast_at]))
    ctx.expect((slower.get("speedup_vs_baseline") or {}).get("ratio_of_medians", 0) > 1,
               "and it still has its speedup over the (slower) baseline (%r)"
               % slower.get("speedup_vs_baseline"))
    for v in ("fast", "base"):
        ctx.expect(runs["on"][v].get("stopped_by") == "max_samples",
                   "%s is not outpaced: the fastest and the baseline take max_samples (%r)"
                   % (v, got["on"]))
    ctx.expect(runs["off"]["slower"].get("stopped_by") == "max_samples",
               "outclass 0: the slower variant takes max_samples (%r)" % got["off"])


@test
def the_fma_probe_runs_beside_the_programs_when_asked(ctx):
    # docs/evalpod.md, measurement.peak_probe: the timing worker runs the
    # FMA probe once a round among the programs, and each program's roofline
    # gets its fraction of the peak as the median, over its samples, of its
    # GFLOP/s over the probe's in the same round.  Without it, neither.
    d = ctx.fresh_dir("probe")
    got = {}
    for name, on in (("on", True), ("off", False)):
        batch = make_batch()
        batch["variants"].append({"id": "slow", "source": SLOW_AFFINE,
                                  "build_options": "-DLOOP=40"})
        batch["measurement"].update({"min_samples": 5, "precision": 0})
        if on:
            batch["measurement"]["peak_probe"] = True
        out_dir = os.path.join(d, name)
        rc, out, err = ctx.evalpod_run(["run", write_batch(ctx, d, batch), "--out", out_dir])
        expect_status(ctx, rc, 0, err)
        got[name] = {v: load_json(os.path.join(out_dir, v + ".json")) or {}
                     for v in ("good", "slow", "summary")}
    timing = got["on"]["summary"].get("timing") or {}
    probe = (timing.get("peak_probe") or {}).get("gflops") or []
    peak = (got["on"]["summary"].get("peaks") or {}).get("gflops", 0)
    # The peak may have been measured at a busier moment than the probe runs
    # (CI once cached 240 GFLOP/s and the probe then read 160-382), so the
    # bound is loose: it catches a figure off by orders of magnitude (a unit
    # or a flop count gone wrong), not the machine's load.
    ctx.expect(len(probe) == timing.get("rounds") and all(0 < g < 10 * peak for g in probe),
               "one probe run a round, each under 10 x the peak of %r GFLOP/s (%r rounds: %r)"
               % (peak, timing.get("rounds"), probe[:8]))
    flops = 2 * 4096
    for v in ("good", "slow"):
        perf, roof = got["on"][v].get("performance") or {}, got["on"][v].get("roofline") or {}
        ratios = sorted(flops / (ms * 1e6) / probe[r]
                        for ms, r in zip(perf.get("samples_ms") or [], perf.get("rounds") or [])
                        if r < len(probe) and probe[r] > 0)
        want = statistics.median(ratios) if ratios else None
        have = roof.get("fraction_of_peak_flops_side_by_side")
        ctx.expect(want is not None and have is not None and abs(have - want) <= 1e-6 * want
                   and roof.get("side_by_side_samples") == len(perf.get("samples_ms") or []),
                   "%s: the side-by-side fraction is the median of its samples over the "
                   "probe of their rounds (want %r, got %r, %r samples)"
                   % (v, want, have, roof.get("side_by_side_samples")))
    slow, good = (got["on"][v].get("roofline") or {} for v in ("slow", "good"))
    ctx.expect(0 < (slow.get("fraction_of_peak_flops_side_by_side") or 0)
               < (good.get("fraction_of_peak_flops_side_by_side") or 0),
               "the slow variant does the same flops in more time: a smaller fraction "
               "(%r against %r)" % (slow.get("fraction_of_peak_flops_side_by_side"),
                                    good.get("fraction_of_peak_flops_side_by_side")))
    off = got["off"]
    ctx.expect("peak_probe" not in (off["summary"].get("timing") or {})
               and not any("side_by_side" in k for v in ("good", "slow")
                           for k in off[v].get("roofline") or {}),
               "without peak_probe no probe and no side-by-side figures (got %r)"
               % (off["good"].get("roofline") or {}).keys())


@test
def check_workers_adopt_what_the_front_end_worker_built(ctx):
    # docs/evalpod.md, the front-end worker: on PoCL it builds the programs
    # and their check workers adopt the built module instead of compiling
    # (compile.front_end says which); EVALPOD_NO_FRONTEND=1 turns it off.
    # Where the reference worker runs (no cached outputs) the front end
    # starts beside it; with the reference's outputs from the session's
    # cache it starts with the first checks.  Either way it builds every
    # program, and a check worker whose program it builds waits for it
    # (compile.front_end_wait_ms), up to 5 s, instead of reading PoCL's
    # kernel library itself; but when the front end starts with the checks
    # and two or more run at a time, the first check compiles for itself
    # (on the core that would wait idle) and the front end starts with the
    # second program.  The results are the same.
    d = ctx.fresh_dir("frontend")
    batch = make_batch()
    good = read("good.cl")
    # Six programs, each its own source for PoCL (an unused macro), and one
    # the screen refuses: it gets no build.
    batch["variants"] = [{"id": "v%d" % i, "source": good, "build_options": "-DTAG=%d" % i}
                         for i in range(6)]
    batch["variants"].insert(1, {"id": "refused", "source": good,
                                 "build_options": "-DTAG=9 -load=/tmp/x.so"})
    path = write_batch(ctx, d, batch)
    cache = os.path.join(d, "cache")
    ids = ["v%d" % i for i in range(6)]
    seen = {}
    for name, env, extra, want in (
            ("lone", ctx.env, ["--jobs", "1"], ids),
            ("warming", ctx.env, ["--jobs", "1", "--ref-cache", cache], ids),
            ("cached", ctx.env, ["--jobs", "1", "--ref-cache", cache], ids),
            ("lone-2", ctx.env, ["--jobs", "2"], ids),
            ("cached-2", ctx.env, ["--jobs", "2", "--ref-cache", cache], ids[1:]),
            ("off", dict(ctx.env, EVALPOD_NO_FRONTEND="1"), ["--jobs", "1"], None)):
        out_dir, tmpdir = os.path.join(d, name), os.path.join(d, "tmp-" + name)
        os.mkdir(tmpdir)
        rc, out, err = ctx.evalpod_run(["run", path, "--out", out_dir, "--keep-work"] + extra,
                                       env=dict(env, TMPDIR=tmpdir))
        expect_status(ctx, rc, 0, err)
        works = [n for n in os.listdir(tmpdir) if n.startswith("evalpod-")]
        if not ctx.expect(len(works) == 1, "%s: one work directory kept (found %r)"
                          % (name, works)):
            continue
        fe_dir = os.path.join(tmpdir, works[0], "w", "frontend")
        try:
            with open(os.path.join(fe_dir, "p", ".ids"), encoding="utf-8") as f:
                listed = f.read().split()
        except OSError:
            listed = None
        ctx.expect(listed == want, "%s: the front end was given %r (got %r)"
                   % (name, want, listed))
        summary = load_json(os.path.join(out_dir, "summary.json")) or {}
        ctx.expect(((summary.get("reference") or {}).get("outputs_cached") is True)
                   == name.startswith("cached"),
                   "%s: the reference's outputs %s" % (name, "cached" if name.startswith("cached")
                                                       else "computed"))
        seen[name] = {}
        for i in range(6):
            r = load_json(os.path.join(out_dir, "v%d.json" % i)) or {}
            ctx.expect(r.get("status") == "ok", "%s: v%d ok (got %r)" % (name, i, r.get("status")))
            comp = r.get("compile") or {}
            seen[name]["v%d" % i] = comp.get("front_end")
            # The front end's own build time comes with what it built, and
            # only with that.
            fe_ms = comp.get("front_end_build_ms")
            seen[name]["wait-v%d" % i] = comp.get("front_end_wait_ms")
            if comp.get("front_end") == "frontend":
                ctx.expect(isinstance(fe_ms, (int, float)) and 0 < fe_ms < 60000,
                           "%s: v%d front_end_build_ms is a time (got %r)" % (name, i, fe_ms))
            else:
                ctx.expect(fe_ms is None, "%s: v%d compiled itself, no front_end_build_ms "
                           "(got %r)" % (name, i, fe_ms))
        r = load_json(os.path.join(out_dir, "refused.json")) or {}
        ctx.expect(r.get("status") == "compile_error" and
                   (r.get("fault") or {}).get("kind") == "refused",
                   "%s: the refused program is refused (got %r)" % (name, r.get("status")))
        # What the front end built is what it was given, nothing else.
        built = sorted(n for n in os.listdir(os.path.join(fe_dir, "p"))
                       if not n.endswith(".ms") and not n.startswith(".")) \
            if os.path.isdir(os.path.join(fe_dir, "p")) else []
        ctx.expect(set(built) <= set(want or []),
                   "%s: the front end built only what it was given (got %r)" % (name, built))
    # Two at a time with the front end started beside the checks: the first
    # compiled for itself and waited for nothing.
    first = seen.get("cached-2", {})
    ctx.expect(first.get("v0") == "check" and first.get("wait-v0") is None,
               "cached-2: the first check compiled for itself, waiting for nothing (got %r, %r)"
               % (first.get("v0"), first.get("wait-v0")))
    for name in ("lone", "warming", "cached", "lone-2", "cached-2"):
        on = {k: v for k, v in seen.get(name, {}).items() if not k.startswith("wait-")}
        waits = {k: v for k, v in seen.get(name, {}).items() if k.startswith("wait-")}
        if name == "cached-2":
            on.pop("v0", None)
            waits.pop("wait-v0", None)
        ctx.expect(all(v in ("frontend", "check") for v in on.values()),
                   "%s: front_end is frontend or check (got %r)" % (name, on))
        # Every check waited for the front end (how long is a number), and
        # one that compiled for itself waited its 5 s out first.
        ctx.expect(all(isinstance(w, (int, float)) and w >= 0 for w in waits.values())
                   and all(on.get(k[5:]) == "frontend" or w >= 4900 for k, w in waits.items()),
                   "%s: every check waited for the front end's build (got %r, %r)"
                   % (name, on, waits))
        ctx.expect(any(on.get("v%d" % i) == "frontend" for i in range(6)),
                   "%s: checks adopted the front end's builds (got %r)" % (name, on))
    ctx.expect(all(v == "check" for k, v in seen.get("off", {}).items()
                   if not k.startswith("wait-"))
               and all(v is None for k, v in seen.get("off", {}).items()
                       if k.startswith("wait-")),
               "EVALPOD_NO_FRONTEND=1: every check compiled for itself, waiting for nothing "
               "(got %r)" % seen.get("off"))


@test
def cached_peaks_are_measured_again_only_when_a_program_goes_above_them(ctx):
    # docs/evalpod.md, device peaks: with a cached figure the timing worker
    # does not measure the peaks; a program above a cached ceiling makes it
    # measure them, so a ceiling measured low cannot turn it into above_peak.
    d = ctx.fresh_dir("peaks")
    cache = os.path.join(d, "cache")
    batch = write_batch(ctx, d, make_batch())
    runs = []
    for name in ("first", "cached", "low"):
        if name == "low":
            for f in os.listdir(cache):
                path = os.path.join(cache, f)
                doc = load_json(path)
                doc["gflops"], doc["gbs"] = 1e-6, 1e-6
                with open(path, "w", encoding="utf-8") as out:
                    json.dump(doc, out)
        out_dir = os.path.join(d, name)
        rc, out, err = ctx.evalpod_run(["run", batch, "--out", out_dir, "--cache-dir", cache])
        expect_status(ctx, rc, 0, err)
        runs.append((load_json(os.path.join(out_dir, "summary.json")) or {},
                     load_json(os.path.join(out_dir, "good.json")) or {}))
    (first, _), (cached, _), (low, good) = runs
    files = [f for f in os.listdir(cache) if f.startswith("peaks-")]
    ctx.expect(len(files) == 1, "one peaks file cached (got %r)" % files)
    ctx.expect("measured_now_gflops" in (first.get("peaks") or {}),
               "with no cache the peaks are measured (got %r)" % first.get("peaks"))
    pk = cached.get("peaks") or {}
    ctx.expect(pk.get("cached") is True and "measured_now_gflops" not in pk,
               "with a cache they are not measured again (got %r)" % pk)
    pk = low.get("peaks") or {}
    ctx.expect(pk.get("measured_now_gflops", 0) > 1 and pk.get("gflops", 0) > 1,
               "a program above a low cached ceiling has the peaks measured now (got %r)" % pk)
    ctx.expect(good.get("status") == "ok", "and it is not above_peak (got %r: %s)"
               % (good.get("status"), str(good.get("fault"))[:200]))
    raised = load_json(os.path.join(cache, files[0])) if files else {}
    ctx.expect((raised or {}).get("gflops", 0) > 1, "the cache is raised again (got %r)"
               % (raised or {}).get("gflops"))
    # Figures measured more than PEAKS_RECHECK_S (600 s) ago, or dated in
    # the future, are measured again (a cache begun on a busy machine holds
    # low ceilings), and the file's date is renewed.
    for name, age in (("stale", 700), ("future", -86400)):
        if not files:
            break
        path = os.path.join(cache, files[0])
        then = time.time() - age
        os.utime(path, (then, then))
        out_dir = os.path.join(d, name)
        rc, out, err = ctx.evalpod_run(["run", batch, "--out", out_dir, "--cache-dir", cache])
        expect_status(ctx, rc, 0, err)
        pk = (load_json(os.path.join(out_dir, "summary.json")) or {}).get("peaks") or {}
        ctx.expect("measured_now_gflops" in pk,
                   "%s cached peaks are measured again (got %r)" % (name, pk))
        ctx.expect(abs(os.stat(path).st_mtime - time.time()) < 300,
                   "and the cache file is dated now after the %s run" % name)
    # Without --cache-dir, $EVALPOD_CACHE_DIR names the cache (before
    # $XDG_CACHE_HOME), for run and for devices alike.
    own, empty = os.path.join(d, "own"), os.path.join(d, "empty")
    os.makedirs(empty)
    rc, out, err = ctx.evalpod_run(["run", batch, "--out", os.path.join(d, "own-run")],
                                   env=dict(ctx.env, EVALPOD_CACHE_DIR=own))
    expect_status(ctx, rc, 0, err)
    pk = (load_json(os.path.join(d, "own-run", "summary.json")) or {}).get("peaks") or {}
    owned = [f for f in os.listdir(own) if f.startswith("peaks-")] if os.path.isdir(own) else []
    ctx.expect("measured_now_gflops" in pk and owned == files,
               "EVALPOD_CACHE_DIR: an empty cache there, the peaks measured and cached in it "
               "(got %r, %r)" % (owned, pk))
    listed = {}
    for name, where in (("own", own), ("empty", empty)):
        rc, out, err = ctx.evalpod_run(["devices", "-o", "json"],
                                       env=dict(ctx.env, EVALPOD_CACHE_DIR=where))
        try:
            listed[name] = [dv.get("peaks") for pl in json.loads(out) for dv in pl["devices"]]
        except (ValueError, KeyError, TypeError):
            listed[name] = None
    ctx.expect(listed.get("own") and any(listed["own"]) and listed.get("empty")
               and not any(listed["empty"]),
               "evalpod devices shows the peaks of EVALPOD_CACHE_DIR's cache, none from an "
               "empty one (got %r)" % listed)


@test
def peaks_and_flush_stay_within_the_memory_limit_and_cpu_flushes_lines(ctx):
    # docs/evalpod.md, device peaks: the triad's three arrays take at most
    # a quarter of limits.memory_mb and the cache flush an eighth, which
    # leaves room for PoCL under ASan (about 270 MiB).  They were
    # sized from the device's global cache alone (three arrays of 8 x it,
    # at least 256 MiB each): 768 MiB at least, so a 720 MiB worker died
    # measuring the peaks, and on a VM that reports a 480 MiB L3 the
    # default 8 GiB worker did (11.25 GiB of arrays).
    d = ctx.fresh_dir("peaks-memory")
    batch = make_batch()
    batch["limits"]["memory_mb"] = 720
    batch["measurement"]["flush_kind"] = "read"
    path = write_batch(ctx, d, batch)
    out_dir = os.path.join(d, "out")
    rc, out, err = ctx.evalpod_run(["run", path, "--out", out_dir, "--quiet", "--cache-dir",
                                    os.path.join(d, "cache")])
    expect_status(ctx, rc, 0, err)
    summary = load_json(os.path.join(out_dir, "summary.json")) or {}
    good = load_json(os.path.join(out_dir, "good.json")) or {}
    pk = summary.get("peaks") or {}
    ctx.expect(pk.get("measured_now_gbs", 0) > 0 and pk.get("measured_now_gflops", 0) > 0,
               "the peaks are measured in a 720 MiB worker (got %r)" % pk)
    flush = (summary.get("timing") or {}).get("flush_bytes")
    ctx.expect(isinstance(flush, int) and 0 < flush <= (720 << 20) // 8
               and (summary.get("timing") or {}).get("flush") == "read",
               "the read flush is at most an eighth of the worker's memory (got %r)"
               % summary.get("timing"))
    ctx.expect(good.get("status") == "ok", "and the program is timed (got %r: %s)"
               % (good.get("status"), str(good.get("fault"))[:200]))
    # With the default 8 GiB the read flush is 2 x the reported cache, at
    # most 256 MiB on a CPU (a VM may report its host's whole L3: 480 MiB
    # for a guest that cannot use a quarter of it) and at least 512 MiB on a
    # GPU.  On a CPU device (x86-64 or AArch64) flush_kind "auto" takes the
    # lines flush instead: the buffers' own lines, guards included (two of
    # 16 KiB here, each guard at most a page and an alignment).
    rc, out, err = ctx.evalpod_run(["devices", "-o", "json"])
    expect_status(ctx, rc, 0, err)
    dev = json.loads(out)[0]["devices"][0]
    cpu = dev.get("type") == "cpu"
    want = 2 * (dev.get("global_cache_bytes") or 8 << 20)
    want = min(want, 256 << 20) if cpu else max(want, 512 << 20)
    lines = cpu and platform.machine() in ("x86_64", "aarch64")
    for kind in ("read", None):
        batch = make_batch()
        if kind:
            batch["measurement"]["flush_kind"] = kind
        path = write_batch(ctx, d, batch)
        out_dir = os.path.join(d, kind or "default")
        rc, out, err = ctx.evalpod_run(["run", path, "--out", out_dir, "--quiet", "--cache-dir",
                                        os.path.join(d, "cache")])
        expect_status(ctx, rc, 0, err)
        timing = (load_json(os.path.join(out_dir, "summary.json")) or {}).get("timing") or {}
        flush = timing.get("flush_bytes")
        if kind or not lines:
            ctx.expect(flush == want and timing.get("flush") == "read",
                       "the %s flush on a %s reporting %r cache bytes reads %d bytes "
                       "(got %r)" % (kind or "default", dev.get("type"),
                                     dev.get("global_cache_bytes"), want, timing))
        else:
            buffers = 2 * 4096 * 4
            ctx.expect(timing.get("flush") == "lines" and isinstance(flush, int)
                       and buffers < flush <= buffers + 2 * 2 * (4096 + 4096)
                       and "flush_built_from" not in timing,
                       "the default flush on a CPU device evicts the buffers' own lines, "
                       "more than their %d bytes and at most their guards more, and "
                       "builds no flush kernel (got %r)"
                       % (buffers, timing))
        # Either kind flushes before every sample (and every warm-up run),
        # the reference's and the programs' alike.
        summary = load_json(os.path.join(out_dir, "summary.json")) or {}
        samples = len((((summary.get("reference") or {}).get("performance") or {})
                       .get("samples_ms") or []))
        for name in os.listdir(out_dir):
            if name.endswith(".json") and name != "summary.json":
                perf = (load_json(os.path.join(out_dir, name)) or {}).get("performance") or {}
                samples += len(perf.get("samples_ms") or [])
        ctx.expect(samples > 0 and isinstance(timing.get("flushes"), int)
                   and timing["flushes"] >= samples,
                   "the %s flush runs before each of the batch's %d samples (got %r)"
                   % (timing.get("flush"), samples, timing.get("flushes")))
    if not lines:
        return
    # Buffers larger than the read flush that evicts the caches (want bytes)
    # take that flush instead of the lines flush, which would cost more at
    # the same pace; the reference worker saved no binary of it, so the
    # timing worker built it from source.
    n = want // 8 + (1 << 20)
    batch = make_batch()
    batch["shapes"] = [{"name": "big", "values": {"n": n}}]
    path = write_batch(ctx, d, batch)
    out_dir = os.path.join(d, "big")
    rc, out, err = ctx.evalpod_run(["run", path, "--out", out_dir, "--quiet", "--cache-dir",
                                    os.path.join(d, "cache")])
    expect_status(ctx, rc, 0, err)
    timing = (load_json(os.path.join(out_dir, "summary.json")) or {}).get("timing") or {}
    good = load_json(os.path.join(out_dir, "good.json")) or {}
    ctx.expect(timing.get("flush") == "read" and timing.get("flush_bytes") == want
               and timing.get("flush_built_from") == "source"
               and good.get("status") == "ok",
               "buffers of %d bytes, more than the %d-byte read flush, take the read flush "
               "(got %r, the program %r)" % (2 * 4 * n, want, timing, good.get("status")))


@test
def batch_and_outputs_over_http(ctx):
    prefix = "/plain"
    batch = make_batch(outputs=url_outputs(ctx.http, prefix))
    ctx.http.put(prefix + "/batch.json", json.dumps(batch).encode())
    rc, out, err = ctx.evalpod_run(["run", ctx.http.url(prefix + "/batch.json" + QUERY)])
    expect_status(ctx, rc, 0, err)
    expect_uploaded(ctx, ctx.http, prefix)
    no_secret(ctx, out, err)


@test
def batch_and_outputs_over_https_with_ca_file(ctx):
    if ctx.https is None:
        raise Skip("no openssl")
    prefix = "/tls"
    batch = make_batch(outputs=url_outputs(ctx.https, prefix))
    ctx.https.put(prefix + "/batch.json", json.dumps(batch).encode())
    rc, out, err = ctx.evalpod_run(["run", ctx.https.url(prefix + "/batch.json" + QUERY),
                                    "--ca-file", ctx.ca])
    expect_status(ctx, rc, 0, err)
    expect_uploaded(ctx, ctx.https, prefix)
    no_secret(ctx, out, err)


@test
def https_batch_without_ca_file_is_refused(ctx):
    if ctx.https is None:
        raise Skip("no openssl")
    prefix = "/tls-noca-batch"
    batch = make_batch(outputs=url_outputs(ctx.https, prefix))
    ctx.https.put(prefix + "/batch.json", json.dumps(batch).encode())
    rc, out, err = ctx.evalpod_run(["run", ctx.https.url(prefix + "/batch.json" + QUERY)])
    ctx.expect(rc != 0, "non-zero exit (got %d)" % rc)
    ctx.expect(re.search(r"certificate|SSL|TLS", err, re.I),
               "stderr says why the server was not trusted (got %r)" % err[-400:])
    ctx.expect(ctx.https.get(prefix + "/good.json") is None, "no result stored")
    no_secret(ctx, out, err)


@test
def https_outputs_without_ca_file_are_not_sent(ctx):
    if ctx.https is None:
        raise Skip("no openssl")
    d = ctx.fresh_dir("tls-noca-out")
    prefix = "/tls-noca-out"
    path = write_batch(ctx, d, make_batch(outputs=url_outputs(ctx.https, prefix)))
    rc, out, err = ctx.evalpod_run(["run", path])
    ctx.expect(rc != 0, "non-zero exit (got %d)" % rc)
    ctx.expect(re.search(r"certificate|SSL|TLS", err, re.I),
               "stderr says why the server was not trusted (got %r)" % err[-400:])
    for key in ("/good.json", "/summary.json", "/good-trace.json"):
        ctx.expect(ctx.https.get(prefix + key) is None, "nothing stored at %s" % key)
    no_secret(ctx, out, err)


@test
def failed_upload_keeps_local_results(ctx):
    d = ctx.fresh_dir("upload403")
    out_dir = os.path.join(d, "out")
    outputs = {"results": {"good": ctx.http.url("/status/403" + QUERY)}}
    path = write_batch(ctx, d, make_batch(outputs=outputs))
    rc, out, err = ctx.evalpod_run(["run", path, "--out", out_dir])
    expect_status(ctx, rc, 3, err)
    ctx.expect("403" in err, "stderr quotes the HTTP status (got %r)" % err[-600:])
    ctx.expect("AccessDenied" in err, "stderr keeps the server's reason (got %r)" % err[-600:])
    res = load_json(os.path.join(out_dir, "good.json"))
    ctx.expect(res is not None and res.get("status") == "ok",
               "--out still has good.json with status ok")
    ctx.expect(load_json(os.path.join(out_dir, "summary.json")) is not None,
               "--out still has summary.json")
    no_secret(ctx, out, err)


def perturbation(raw, got):
    """Per sample, the factor between the timing worker's own figures (raw)
    and the published ones (got), on both clocks: [(round, event, host)]."""
    rounds = got.get("rounds") or []
    pairs = zip(rounds, raw.get("samples_ms") or [], got.get("samples_ms") or [],
                raw.get("host_ms") or [], got.get("host_ms") or [])
    return [(r, e1 / e0, h1 / h0) for r, e0, e1, h0, h1 in pairs if e0 > 0 and h0 > 0]


@test
def test_noise_perturbs_every_sample_and_says_so(ctx):
    # EVALPOD_TEST_NOISE=3:0.5: every sample is the timing worker's own
    # (kept in the work directory) times (1 + 0.5 u) (1 + 0.25 u'), the same
    # on both clocks, the first factor shared by the programs of a round;
    # the statistics are the perturbed samples'; and every result and the
    # summary say the run was perturbed.
    d = ctx.fresh_dir("noise")
    out_dir, tmpdir = os.path.join(d, "out"), os.path.join(d, "tmp")
    os.mkdir(tmpdir)
    batch = make_batch()
    batch["measurement"]["min_samples"] = 10
    rc, out, err = ctx.evalpod_run(["run", write_batch(ctx, d, batch), "--out", out_dir,
                                    "--keep-work"],
                                   env=dict(ctx.env, EVALPOD_TEST_NOISE="3:0.5", TMPDIR=tmpdir))
    expect_status(ctx, rc, 0, err)
    ctx.expect("EVALPOD_TEST_NOISE=3:0.5" in err and "test mode" in err,
               "stderr says the timings are perturbed (got %r)" % err[-600:])
    warning = "timings perturbed by EVALPOD_TEST_NOISE=3:0.5 (test mode)"
    summary = load_json(os.path.join(out_dir, "summary.json")) or {}
    ctx.expect(summary.get("test_noise") == {"seed": 3, "amplitude": 0.5},
               "summary.json has test_noise (got %r)" % summary.get("test_noise"))
    res = load_json(os.path.join(out_dir, "good.json")) or {}
    perf = res.get("performance") or {}
    ctx.expect(res.get("status") == "ok", "good is ok (got %r: %s)"
               % (res.get("status"), str(res.get("fault"))[:300]))
    ctx.expect(perf.get("warnings", [])[-1:] == [warning],
               "good.json's warnings end with the test-mode warning (got %r)"
               % perf.get("warnings"))
    ctx.expect([e.get("performance", {}).get("warnings") for e in summary.get("results", [])]
               == [perf.get("warnings")], "the summary's entry has the same warnings")
    works = [n for n in os.listdir(tmpdir) if n.startswith("evalpod-")]
    if not ctx.expect(len(works) == 1, "one work directory kept (found %r)" % works):
        return
    raw = (load_json(os.path.join(tmpdir, works[0], "w", "time", "doc.json")) or {}).get(
        "programs") or {}
    ref = (summary.get("reference") or {}).get("performance") or {}
    factors = {}
    for name, got in (("good", perf), ("reference", ref)):
        f = perturbation(raw.get(name) or {}, got)
        factors[name] = {r: e for r, e, _ in f}
        ctx.expect(len(f) >= 10 and len(f) == len(got.get("samples_ms") or []),
                   "%s: every sample has its worker's original (%d of %d)"
                   % (name, len(f), len(got.get("samples_ms") or [])))
        ctx.expect(all(1 - 1e-8 <= e < 1.5 * 1.25 + 1e-8 and abs(h / e - 1) < 1e-6
                       for _, e, h in f),
                   "%s: each factor is in [1, 1.875), the same on both clocks (got %r)"
                   % (name, f))
        ctx.expect(max((e for _, e, _ in f), default=1) > 1.05,
                   "%s: the samples were perturbed (factors %r)" % (name, f))
        samples, stats = got.get("samples_ms") or [], got.get("stats") or {}
        ctx.expect(samples and (stats.get("n"), stats.get("min"), stats.get("max")) ==
                   (len(samples), min(samples), max(samples)),
                   "%s: the stats are the perturbed samples' (n, min, max %r; samples %r)"
                   % (name, (stats.get("n"), stats.get("min"), stats.get("max")), samples))
    shared = set(factors["good"]) & set(factors["reference"])
    ratios = [factors["good"][r] / factors["reference"][r] for r in shared]
    ctx.expect(shared and all(1 / 1.25 - 1e-8 < q < 1.25 + 1e-8 for q in ratios),
               "in a round the two programs differ only by their jitters (got %r)" % ratios)
    shutil.rmtree(os.path.join(tmpdir, works[0]), ignore_errors=True)


# -- hangs and interrupts -----------------------------------------------------

def worker_procs(under):
    """(pid, argv) of the evalpod workers running on a work directory under `under`."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % name, "rb") as f:
                argv = f.read().decode(errors="replace").split("\0")
        except OSError:  # gone meanwhile
            continue
        if "__worker" in argv and any(a.startswith(under) for a in argv):
            found.append((int(name), argv))
    return found


def wait_for(probe, seconds):
    """Polls probe() until it returns something true; returns that, or None."""
    deadline = time.monotonic() + seconds
    while True:
        got = probe()
        if got or time.monotonic() >= deadline:
            return got or None
        time.sleep(0.05)


def hanging_check(under):
    """The work directory of a check worker whose kernel is running, or None."""
    for pid, argv in worker_procs(under):
        i = argv.index("__worker")
        if argv[i + 1:i + 2] != ["check"] or len(argv) < i + 4:
            continue
        progress = os.path.join(argv[i + 2], "w", "p-" + argv[i + 3], "progress")
        try:
            with open(progress, encoding="utf-8") as f:
                if f.read().strip() == "correctness":
                    return argv[i + 2]
        except OSError:
            pass
    return None


def hang_batch(ctx, name, more):
    """A batch whose variant `hang` never ends (plus the variants in more),
    in a fresh folder with its own TMPDIR: (folder, --out folder, TMPDIR,
    the prefix of its work directories, evalpod's command line).  A long
    deadline: evalpod would wait for it, what the test does must not."""
    if not os.path.isdir("/proc/self"):
        raise Skip("no /proc to find the workers in")
    d = ctx.fresh_dir(name)
    out_dir, tmpdir = os.path.join(d, "out"), os.path.join(d, "tmp")
    os.mkdir(tmpdir)
    batch = make_batch()
    batch["variants"] = [{"id": "hang", "source": read("hang.cl")}] + more
    batch["limits"]["run_timeout_s"] = 60
    path = write_batch(ctx, d, batch)
    return (d, out_dir, tmpdir, os.path.join(tmpdir, "evalpod-"),
            [ctx.evalpod, "run", path, "--out", out_dir])


@contextlib.contextmanager
def evalpod_running(ctx, d, tmpdir, args):
    """evalpod started on args with its own TMPDIR and stderr in d/stderr:
    (process, stderr file); killed on the way out if it still runs."""
    with open(os.path.join(d, "stderr"), "w+", encoding="utf-8") as errf:
        proc = subprocess.Popen(args, env=dict(ctx.env, TMPDIR=tmpdir),
                                stdout=subprocess.DEVNULL, stderr=errf)
        try:
            yield proc, errf
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


@test
def sigterm_ends_workers_and_keeps_results(ctx):
    d, out_dir, tmpdir, under, args = hang_batch(ctx, "sigterm", [])
    with evalpod_running(ctx, d, tmpdir, args) as (proc, errf):
        try:
            running = wait_for(lambda: hanging_check(under), 60)
            if not ctx.expect(running, "the check worker of hang runs its kernel within 60 s"):
                return
            proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                rc = None
            errf.seek(0)
            err = errf.read()
            if not ctx.expect(rc is not None, "evalpod exits within 5 s of SIGTERM"):
                return
            expect_status(ctx, rc, 128 + signal.SIGTERM, err)
            left = wait_for(lambda: not worker_procs(under), 2)
            ctx.expect(left, "no worker is left running (found %r)"
                       % [" ".join(a) for _, a in worker_procs(under)])
        finally:
            proc.kill()
            proc.wait()
            for pid, _ in worker_procs(under):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
    res = load_json(os.path.join(out_dir, "hang.json"))
    if ctx.expect(res is not None, "hang.json written to --out"):
        fault = res.get("fault") or {}
        ctx.expect(res.get("status") == "infra_error" and fault.get("kind") == "interrupted",
                   "hang is infra_error/interrupted (got %r/%r: %s)"
                   % (res.get("status"), fault.get("kind"), str(fault.get("message"))[:200]))
    kept = [n for n in os.listdir(tmpdir) if n.startswith("evalpod-")]
    ctx.expect(not kept, "no work directory left in TMPDIR (found %r)" % kept)


@test
def sigkill_of_a_running_candidate_blames_it(ctx):
    # A worker killed by a SIGKILL evalpod did not send, while the
    # candidate's kernel runs in it, is the candidate's doing (its own kill,
    # or the kernel's OOM killer choosing the process it bloated): blamed on
    # it, and the batch goes on.
    d, out_dir, tmpdir, under, args = hang_batch(
        ctx, "sigkill", [{"id": "good", "source": read("good.cl")}])
    with evalpod_running(ctx, d, tmpdir, args) as (proc, errf):
        work = wait_for(lambda: hanging_check(under), 60)
        if not ctx.expect(work, "the check worker of hang runs its kernel within 60 s"):
            return
        for pid, argv in worker_procs(under):
            i = argv.index("__worker")
            if argv[i + 1:i + 2] == ["check"] and argv[i + 3:i + 4] == ["hang"]:
                os.kill(pid, signal.SIGKILL)
        rc = proc.wait(timeout=600)
        errf.seek(0)
        expect_status(ctx, rc, 0, errf.read())
    res = load_json(os.path.join(out_dir, "hang.json"))
    if ctx.expect(res is not None, "hang.json written"):
        fault = res.get("fault") or {}
        got = (res.get("status"), fault.get("kind"), fault.get("origin"))
        ctx.expect(got == ("crash", "signal", "candidate"),
                   "hang is crash/signal/candidate (got %r: %s)"
                   % (got, str(fault.get("message"))[:200]))
        ctx.expect("did not send" in str(fault.get("message")),
                   "the message says evalpod did not send the SIGKILL")
    good = load_json(os.path.join(out_dir, "good.json"))
    if ctx.expect(good is not None, "good.json written"):
        ctx.expect(good.get("status") == "ok", "good is ok (got %r)" % good.get("status"))


def work_dirs(tmpdir):
    return sorted(n for n in os.listdir(tmpdir) if n.startswith("evalpod-"))


@test
def the_next_run_removes_the_work_directory_of_a_killed_run(ctx):
    # SIGKILL (the OOM killer, kill -9) leaves evalpod no time to remove its
    # work directory.  The next run in the same TMPDIR removes it, and only
    # it: not a live run's, not one kept with --keep-work, not a folder
    # without the lock, not another user's.
    d, out_dir, tmpdir, under, args = hang_batch(ctx, "killed", [])
    with evalpod_running(ctx, d, tmpdir, args) as (proc, errf):
        dead = wait_for(lambda: hanging_check(under), 60)
        if not ctx.expect(dead, "the check worker of hang runs its kernel within 60 s"):
            return
        proc.kill()
        proc.wait()
        ctx.expect(wait_for(lambda: not worker_procs(under), 10),
                   "the workers end with their evalpod")
    if not ctx.expect(os.path.isdir(dead), "the killed run leaves its work directory"):
        return
    plain = os.path.join(tmpdir, "evalpod-nolock")
    os.mkdir(plain)
    # a run killed between making its .lock.new and renaming it to .lock:
    # an hour old, it is dead; one made just now may be a run starting
    half_old, half_new = (os.path.join(tmpdir, "evalpod-half" + x) for x in ("od", "nw"))
    for path in (half_old, half_new):
        os.mkdir(path)
        open(os.path.join(path, ".lock.new"), "w").close()
    old = time.time() - 3600
    os.utime(os.path.join(half_old, ".lock.new"), (old, old))
    foreign = None
    if os.geteuid() == 0:
        foreign = os.path.join(tmpdir, "evalpod-foreig")
        os.mkdir(foreign)
        open(os.path.join(foreign, ".lock"), "w").close()
        for path in (foreign, os.path.join(foreign, ".lock")):
            os.chown(path, 65534, 65534)
    d2 = ctx.fresh_dir("killed-live")
    live_args = args[:-1] + [os.path.join(d2, "out")]
    with evalpod_running(ctx, d2, tmpdir, live_args) as (live, _):
        running = wait_for(lambda: hanging_check(under), 60)
        if not ctx.expect(running, "a second run's check of hang runs within 60 s"):
            return
        ctx.expect(not os.path.exists(dead),
                   "the second run removed the killed run's work directory (left: %r)"
                   % work_dirs(tmpdir))
        ctx.expect(not os.path.exists(half_old) and os.path.isdir(half_new),
                   "it removed the one with an hour-old .lock.new, not the one with a "
                   "new .lock.new (left: %r)" % work_dirs(tmpdir))
        shutil.rmtree(half_new, ignore_errors=True)
        env = dict(ctx.env, TMPDIR=tmpdir)
        quick = write_batch(ctx, d2, make_batch())
        rc, _, err = ctx.evalpod_run(["run", quick, "--out", os.path.join(d2, "kept"),
                                      "--keep-work"], env=env)
        expect_status(ctx, rc, 0, err)
        kept = [n for n in work_dirs(tmpdir)
                if os.path.join(tmpdir, n) not in (running, plain, foreign)]
        if not ctx.expect(len(kept) == 1, "--keep-work kept one work directory (found %r)"
                          % kept):
            return
        rc, _, err = ctx.evalpod_run(["run", quick, "--out", os.path.join(d2, "last")],
                                     env=env)
        expect_status(ctx, rc, 0, err)
        left = work_dirs(tmpdir)
        want = sorted(os.path.basename(p) for p in (running, plain, foreign) if p) + kept
        ctx.expect(left == sorted(want),
                   "after a third run: the live run's, the kept, the lockless and the "
                   "foreign work directories, no other (want %r, found %r)"
                   % (sorted(want), left))
        ctx.expect(live.poll() is None, "the live run still runs")
    for name in work_dirs(tmpdir):
        shutil.rmtree(os.path.join(tmpdir, name), ignore_errors=True)


@test
def kernel_that_hangs_only_when_timed(ctx):
    # Correct through its checks, hung on any other input: the timing
    # worker stalls on the fresh timing inputs, and the batch is timed
    # again without it.
    d = ctx.fresh_dir("hangtimed")
    out_dir = os.path.join(d, "out")
    batch = make_batch()
    known = ", ".join("0x%08xu" % redteam.first_x_bits(s) for s in batch["correctness"]["seeds"])
    # good first: the timing worker prepares and warms up the programs in
    # this order, so good's compiled program is adopted in the first pass.
    batch["variants"] = [
        {"id": "good", "source": read("good.cl")},
        {"id": "hang_timed", "source": read("hang_timed.cl").replace("@CHECK_X0@", known)},
    ]
    batch["limits"] = {"compile_timeout_s": 10, "run_timeout_s": 5, "time_timeout_s": 300}
    rc, out, err = ctx.evalpod_run(["run", write_batch(ctx, d, batch), "--out", out_dir])
    expect_status(ctx, rc, 0, err)
    res = load_json(os.path.join(out_dir, "hang_timed.json"))
    if ctx.expect(res is not None, "hang_timed.json written"):
        fault = res.get("fault") or {}
        got = (res.get("status"), fault.get("kind"), fault.get("origin"))
        ctx.expect(got == ("timeout", "timing", "candidate"),
                   "hang_timed is timeout/timing/candidate (got %r: %s)"
                   % (got, str(fault.get("message"))[:200]))
    good = load_json(os.path.join(out_dir, "good.json"))
    if ctx.expect(good is not None, "good.json written"):
        perf = good.get("performance") or {}
        speedup = perf.get("speedup_vs_reference") or {}
        ratio = speedup.get("ratio_of_medians")
        ctx.expect(good.get("status") == "ok", "good is ok (got %r: %s)"
                   % (good.get("status"), str(good.get("fault"))[:300]))
        ctx.expect(isinstance(perf.get("median_ms"), (int, float)) and perf["median_ms"] > 0,
                   "good has a median time (got %r)" % perf.get("median_ms"))
        ctx.expect(isinstance(ratio, (int, float)) and ratio > 0 and
                   speedup.get("pairs", 0) >= 1,
                   "good has a speedup over the reference (got %r)" % speedup)
        # The second pass starts from an empty PoCL cache (nothing the dropped
        # program's kernels wrote is kept), so good's compiled program is
        # adopted again rather than found "in the cache already".
        ctx.expect(perf.get("compiled_by_check") is True and "compiling again" not in err,
                   "the pass after the culprit adopts good's program afresh "
                   "(compiled_by_check %r; %r)" % (perf.get("compiled_by_check"),
                                                   [ln for ln in err.splitlines()
                                                    if "compiling again" in ln][:2]))


# -- devices -----------------------------------------------------------------

def no_icd_env(ctx):
    empty = os.path.join(ctx.tmp, "no-icd")
    os.makedirs(empty, exist_ok=True)
    env = dict(ctx.env, OCL_ICD_VENDORS=empty)
    env.pop("OCL_ICD_FILENAMES", None)
    return env


@test
def run_without_opencl_is_infrastructure(ctx):
    d = ctx.fresh_dir("noicd")
    path = write_batch(ctx, d, make_batch())
    rc, out, err = ctx.evalpod_run(["run", path, "--out", os.path.join(d, "out")],
                                   env=no_icd_env(ctx))
    expect_status(ctx, rc, 3, err)
    ctx.expect(re.search(r"no OpenCL (device|platform)", err),
               "stderr says there is no OpenCL device (got %r)" % err[-400:])


@test
def devices_without_opencl_is_infrastructure(ctx):
    rc, out, err = ctx.evalpod_run(["devices"], env=no_icd_env(ctx))
    expect_status(ctx, rc, 3, err)
    ctx.expect(re.search(r"no OpenCL (device|platform)", err),
               "stderr says there is no OpenCL platform (got %r)" % err[-400:])


@test
def devices_as_json(ctx):
    rc, out, err = ctx.evalpod_run(["devices", "-o", "json"])
    expect_status(ctx, rc, 0, err)
    try:
        plats = json.loads(out)
    except ValueError as e:
        ctx.expect(False, "stdout is JSON (%s)" % e)
        return
    ctx.expect(isinstance(plats, list) and plats, "a non-empty array of platforms")
    devs = [dv for p in plats if isinstance(p, dict) for dv in p.get("devices") or []]
    ctx.expect(any(isinstance(dv.get("name"), str) and dv["name"] and
                   isinstance(dv.get("compute_units"), int) and dv["compute_units"] >= 1
                   for dv in devs),
               "a device with a name and compute_units")


@test
def devices_as_text(ctx):
    rc, out, err = ctx.evalpod_run(["devices"])
    expect_status(ctx, rc, 0, err)
    ctx.expect(re.search(r"^platform 0: ", out, re.M), "stdout lists platform 0")
    ctx.expect(re.search(r"^\s+device 0: ", out, re.M), "stdout lists device 0 (got %r)"
               % out[:300])


# -- driver ------------------------------------------------------------------

def run_test(ctx, fn):
    ctx.errors = []
    name = fn.__name__
    try:
        fn(ctx)
    except Skip as e:
        print("skip %s: %s" % (name, e))
        skips.append(name)
        return
    except Exception as e:  # a broken test is a failed test, never a crash
        ctx.errors.append("%s: %s" % (type(e).__name__, e))
    if ctx.errors:
        print("FAIL %s" % name)
        for what in ctx.errors:
            print("       %s" % what)
        failures.append(name)
    else:
        print("ok   %s" % name)
        passes.append(name)


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: cli.py EVALPOD PEER_SCRIPT\n")
        return 2
    evalpod, peer = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    with tempfile.TemporaryDirectory(prefix="kctl-cli-") as tmp:
        ctx = Ctx(evalpod, peer, tmp)
        try:
            ctx.http = Peer(peer, tmp, "http")
            if shutil.which("openssl"):
                ctx.ca, cert, key = make_certs(tmp)
                ctx.https = Peer(peer, tmp, "https", tls=(cert, key), ca=ctx.ca)
            # CLI_ONLY=substring runs the matching tests alone (while working on them).
            only = os.environ.get("CLI_ONLY", "")
            for fn in tests:
                if only in fn.__name__:
                    run_test(ctx, fn)
        finally:
            for p in (ctx.http, ctx.https):
                if p is not None:
                    p.stop()
    print(f"{len(passes)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
