#!/usr/bin/env python3
"""Integration test: evalpod against kernels written to fool or break it.

usage: traps.py EVALPOD DATA_DIR

One batch holds a correct variant and variants that are wrong, do not
compile, write out of bounds (with and without faulting), never end, leave
output unwritten, do nothing, modify their input, cheat on precision, read
stale output, overflow the work-item stack, and idle once timed.  Each must
get its status (and fault kind), and the batch must finish with exit 0.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

import checks

EXPECT = {
    # id: (status, fault kinds accepted)
    "good": ("ok", None),
    "wrong": ("incorrect", {"wrong_values"}),
    "nocompile": ("compile_error", {"compile_error"}),
    "oob_guard": ("runtime_error", {"out_of_bounds_write"}),
    # Far past or before a buffer: each buffer lives in its own mapping between
    # inaccessible reservations, so the write faults at once and is named.
    "oob_far": ("crash", {"out_of_bounds"}),
    "oob_before": ("crash", {"out_of_bounds"}),
    "segv": ("crash", {"signal"}),
    "hang": ("timeout", {"correctness"}),
    "partial": ("incorrect", {"unwritten_output"}),
    "noop": ("incorrect", {"unwritten_output"}),
    "modinput": ("incorrect", {"input_modified"}),
    "precision": ("incorrect", {"wrong_values"}),
    "stale_read": ("incorrect", {"wrong_values", "unwritten_output"}),
    # A thread stack can be mapped right beside a buffer's reservation; then the
    # overflow's address is inside it and the fault handler names the buffer.
    "stack": ("crash", {"signal", "out_of_bounds"}),
    # These four keep a counter in a program-scope global (OpenCL C 2.0):
    # -cl-std=CL2.0 is refused, since such variables carry state from one
    # launch to the next (tests/data/redteam covers timed misbehaviour that
    # needs no state).
    "lazy": ("compile_error", {"refused"}),
    "flaky": ("compile_error", {"refused"}),
    "oob_timed": ("compile_error", {"refused"}),
    "modinput_timed": ("compile_error", {"refused"}),
    # A race between work-groups: the second check run launches the groups
    # in reverse order, so it is caught whatever the threads' timing.
    "race": ("incorrect", {"wrong_values", "nondeterministic"}),
}

check = checks.check


read = checks.read


# docs/result.md, stages_ms: the parts of its check a worker finished, by
# how the check ended.  A worker killed or crashed in stage 2 leaves what
# it saved before that stage.  A program the screen refuses gets no worker.
STAGES = {
    "ok": {"open", "compile", "correctness", "ir"},
    "incorrect": {"open", "compile", "correctness"},
    "runtime_error": {"open", "compile", "correctness"},
    "compile_error": {"open", "compile"},
    "crash": {"open", "compile"},
    "timeout": {"open", "compile"},
}


def check_stages(vid, res):
    stages = res.get("stages_ms") or {}
    if (res.get("fault") or {}).get("kind") == "refused":
        check("stages_ms" not in res and res.get("check_wall_ms") == 0,
              f"{vid}: refused before any worker: no stages_ms (got {stages}, "
              f"check_wall_ms {res.get('check_wall_ms')})")
        return
    want = STAGES.get(res.get("status"))
    check(want is not None and set(stages) == want,
          f"{vid}: stages_ms holds {sorted(want or ())} (got {sorted(stages)})")
    check(all(isinstance(v, (int, float)) and v >= 0 for v in stages.values()),
          f"{vid}: every stage took a time (got {stages})")
    wall = res.get("check_wall_ms")
    check(isinstance(wall, (int, float)) and sum(stages.values()) <= wall,
          f"{vid}: the stages fit in the worker's wall time {wall} (got {stages})")


def make_batch(data):
    variants = []
    for vid in EXPECT:
        opts = "-cl-std=CL2.0" if vid in ("lazy", "flaky", "oob_timed", "modinput_timed") else ""
        variants.append({"id": vid, "source": read(data, vid + ".cl"), "build_options": opts})
    return checks.affine_batch("traps", read(data, "reference.cl"), variants,
                               {"compile_timeout_s": 20, "run_timeout_s": 4,
                                "time_timeout_s": 300})


def make_twostep_batch(data):
    """A two-kernel launch plan with a __local argument; the reference is one kernel."""
    batch = make_batch(data)
    batch["batch_id"] = "twostep"
    problem = batch["problem"]
    problem["buffers"].insert(1, {"name": "t", "type": "float", "count": "n", "role": "scratch"})
    problem["reference_launch"] = problem["launch"]
    problem["launch"] = [
        {"kernel": "scale", "args": ["x", "t", {"local": "64*4"}, "n"],
         "global": ["round_up(n, 64)"], "local": [64]},
        {"kernel": "shift", "args": ["t", "y", "n"], "global": ["n"]},
    ]
    batch["variants"] = [{"id": vid, "source": read(data, vid + ".cl")}
                         for vid in ("twostep_good", "twostep_bad")]
    return batch


def run_twostep(evalpod, data, tmp, env):
    path = os.path.join(tmp, "twostep.json")
    out = os.path.join(tmp, "twostep")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(make_twostep_batch(data), f)
    proc = subprocess.run([evalpod, "run", path, "--out", out], env=env,
                          capture_output=True, text=True, timeout=600)
    sys.stderr.write(proc.stderr[-2000:])
    check(proc.returncode == 0, f"twostep: evalpod exits 0 (got {proc.returncode})")
    good = json.load(open(os.path.join(out, "twostep_good.json"), encoding="utf-8"))
    bad = json.load(open(os.path.join(out, "twostep_bad.json"), encoding="utf-8"))
    check(good["status"] == "ok", f"twostep_good: ok (got {good['status']})")
    steps = good.get("performance", {}).get("launch", [])
    check([s["kernel"] for s in steps] == ["scale", "shift"],
          "twostep_good: both kernels of the plan are launched and recorded")
    events = json.load(open(os.path.join(out, "twostep_good", "trace.json"),
                            encoding="utf-8"))["traceEvents"]
    names = {e.get("name") for e in events if e.get("ph") == "X"}
    check({"scale", "shift"} <= names, "twostep_good: the trace shows both kernels")
    # each step's median_ms is the median of its traced events (the bottleneck
    # is judged on the step with the largest)
    for s in steps:
        durs = [e["dur"] / 1e3 for e in events
                if e.get("ph") == "X" and e.get("name") == s["kernel"]]
        want = statistics.median(durs) if durs else None
        check(want is not None and abs(s.get("median_ms", -1) - want) <= 1e-9 + 1e-6 * want,
              f"twostep_good: {s['kernel']}'s median_ms {s.get('median_ms')} is its trace's median {want}")
    check(bad["status"] == "incorrect" and bad["fault"]["kind"] == "wrong_values",
          f"twostep_bad: incorrect/wrong_values (got {bad['status']})")


def main():
    evalpod, data = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "batch.json")
        out = os.path.join(tmp, "out")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(make_batch(data), f)
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"))
        proc = subprocess.run([evalpod, "run", path, "--out", out], env=env,
                              capture_output=True, text=True, timeout=600)
        sys.stderr.write(proc.stderr[-3000:])
        print(proc.stdout)
        check(proc.returncode == 0, f"evalpod exits 0 (got {proc.returncode})")
        for vid, (status, kinds) in EXPECT.items():
            try:
                with open(os.path.join(out, vid + ".json"), encoding="utf-8") as f:
                    res = json.load(f)
            except OSError as e:
                check(False, f"{vid}: result written ({e})")
                continue
            fault = res.get("fault") or {}
            wanted = status if isinstance(status, set) else {status}
            check(res.get("status") in wanted,
                  f"{vid}: status {status} (got {res.get('status')}: {fault.get('message', '')[:200]})")
            if kinds:
                check(fault.get("kind") in kinds,
                      f"{vid}: fault kind in {sorted(kinds)} (got {fault.get('kind')})")
                check(fault.get("origin") == "candidate", f"{vid}: blamed on the candidate")
            check(res.get("schema") == "evalpod.result" and res.get("version") == 1,
                  f"{vid}: versioned result document")
            check_stages(vid, res)
        try:
            with open(os.path.join(out, "hang.json"), encoding="utf-8") as f:
                hang = (json.load(f).get("fault") or {}).get("message", "")
        except (OSError, ValueError):
            hang = ""
        # it hangs in the first run of the first shape, where PoCL also compiles
        check(hang.startswith("did not finish within ") and
              "; killed during correctness, the first run at shape '" in hang and
              "where drivers such as PoCL compile the kernels" in hang,
              f"hang: the message says where it was killed (got {hang!r})")
        with open(os.path.join(out, "good.json"), encoding="utf-8") as f:
            good = json.load(f)
        perf = good.get("performance", {})
        check(perf.get("stats", {}).get("n", 0) >= 8, "good: at least min_samples samples")
        check(perf.get("speedup_vs_reference", {}).get("pairs", 0) >= 1,
              "good: speedup measured in paired rounds with the reference")
        check("roofline" in good and good["roofline"].get("bottleneck"),
              "good: roofline with a bottleneck class")
        corr = good.get("correctness", {})
        seeds = [s["seed"] for sh in corr.get("shapes", []) for s in sh["seeds"]]
        check(len(corr.get("shapes", [])) == 2 and len(seeds) == 6,
              "good: every shape checked with three seeds")
        kernel = (good.get("ir") or {}).get("kernels", {}).get("affine", {})
        check("llvm_ir" in kernel and "machine_code" in kernel,
              "good: stage 5 read its IR and machine code inside the sandbox (got %s)"
              % str(kernel)[:300])
        trace = os.path.join(out, "good", "trace.json")
        try:
            with open(trace, encoding="utf-8") as f:
                events = json.load(f)["traceEvents"]
            check(any(e.get("ph") == "X" and e.get("name") == "affine" for e in events),
                  "good: Chrome trace holds the kernel's timed events")
        except (OSError, ValueError, KeyError) as e:
            check(False, f"good: trace readable ({e})")
        nc = json.load(open(os.path.join(out, "nocompile.json"), encoding="utf-8"))
        check("error" in nc.get("compile", {}).get("log", ""),
              "nocompile: the build log is kept")
        run_twostep(evalpod, data, tmp, env)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
