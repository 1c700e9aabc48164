"""checks.py - what the CLI tests share.

check() records one behaviour's verdict and prints it; run() calls each
test function, counting a test's own crash as a failure (never a skip);
summary() prints "N passed, M failed" and gives the exit status; need_env()
gives 77 (ctest's skip) when a peer's variables are missing.
affine_batch() is the EvalBatch of the trap and red-team suites.
make_certs() writes a throwaway CA and a certificate for the TLS doubles.
load_json() reads a JSON file, or gives None when it is missing or not JSON.
"""
import json
import os
import subprocess
import time

# Under ASan the pods' evalpod needs the suite's sanitizer options (leak
# suppressions for the OpenCL runtime) as any other child would.
SANITIZER_ENV = ("ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS")

passes = []
failures = []


def make_certs(d):
    """In folder d: ca.pem (a CA made for this run) and server.pem/server.key,
    a certificate it signed for localhost and 127.0.0.1."""
    def openssl(*a):
        subprocess.run(("openssl",) + a, check=True, capture_output=True, cwd=d)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-subj", "/CN=kctl test CA", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-keyout", "ca.key",
            "-out", "ca.pem")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
            "-keyout", "server.key", "-out", "server.csr")
    with open(os.path.join(d, "ext"), "w") as f:
        f.write("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,"
                "keyEncipherment\nextendedKeyUsage=serverAuth\n"
                "subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", "ext", "-out", "server.pem")


def read(folder, name):
    with open(os.path.join(folder, name), encoding="utf-8") as f:
        return f.read()


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def check(cond, what):
    (passes if cond else failures).append(what)
    print(("ok   " if cond else "FAIL ") + what, flush=True)


def run(tests, *args):
    """Runs each test, then prints its wall time (where the suite's time goes)."""
    for t in tests:
        t0 = time.monotonic()
        try:
            t(*args)
        except Exception as e:  # the test's own crash is a failure
            check(False, f"{t.__name__} raised {e!r}")
        label = "" if t.__name__ == "<lambda>" else t.__name__ + ": "
        print(f"     ({label}{time.monotonic() - t0:.1f}s)", flush=True)


def summary():
    print(f"{len(passes)} passed, {len(failures)} failed")
    return 1 if failures else 0


def need_env(*names, peer="tests/peers/with-s3.sh"):
    """77 and a message when one of names is unset, else None."""
    for v in names:
        if not os.environ.get(v):
            print(f"{v} not set (run under {peer}): skipped")
            return 77
    return None


def session_id(r):
    """The session id kctl start prints first."""
    return (r.stdout.splitlines() or [""])[0].strip()


def pod_env():
    """The node's environment for the Kubernetes tests: the pods' evalpod runs
    without LeakSanitizer's exit-time check, which has crashed in its own
    tracer under load (see tests/CMakeLists.txt, cli/cli); evalpod's leaks are
    checked by the tests that run it directly, and kctl keeps its own check."""
    e = dict(os.environ)
    if e.get("LSAN_OPTIONS"):
        e["LSAN_OPTIONS"] += ":detect_leaks=0"
    return e


def affine_problem():
    """y = 2x + 1 over n floats (x input, y output), one work-item per element
    in groups of 64."""
    return {
        "name": "affine", "semantics": "y = 2x + 1",
        "buffers": [
            {"name": "x", "type": "float", "count": "n", "role": "input"},
            {"name": "y", "type": "float", "count": "n", "role": "output"},
        ],
        "scalars": [{"name": "n", "type": "int", "value": "n"}],
        "launch": [{"kernel": "affine", "args": ["x", "y", "n"],
                    "global": ["round_up(n, 64)"], "local": [64]}],
        "flops": "2*n", "bytes": "8*n",
    }


def affine_batch(batch_id, reference, variants, limits, baseline=None, seeds=(1, 2, 3)):
    """The batch the trap suites share: y = 2x + 1 over n floats (x input, y
    output), one work-item per element in groups of 64, timed at n = 65536
    and checked at n = 1000 too.  variants are EvalBatch program objects."""
    batch = {
        "schema": "evalpod.batch", "version": 1, "batch_id": batch_id,
        "problem": affine_problem(),
        "shapes": [{"name": "big", "values": {"n": 1 << 16}},
                   {"name": "odd", "values": {"n": 1000}}],
        "reference": {"source": reference},
        "variants": variants,
        "measurement": {"warmup": 1, "min_samples": 8, "min_time_ms": 20,
                        "max_time_ms": 2000},
        "correctness": {"atol": 1e-5, "rtol": 1e-5, "seeds": list(seeds)},
        "limits": dict(limits),
    }
    if baseline:
        batch["baseline"] = baseline
    return batch
