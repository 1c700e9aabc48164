#!/usr/bin/env python3
"""Sessions for the report's tests and benchmark: a recorded one and
synthetic ones, each as a state database and a session folder in a
temporary folder.

As a library:
  load_recorded(tmpdir) -> (state_db, session_id, session_dir)
      the real session of tests/data/report/recorded (README.md there),
      restored from its SQL dump into tmpdir/kctl.db, its spec, template and
      session folder copied into tmpdir, and every recorded absolute path
      (sessions.spec_path and output_dir, and the same text in the folder's
      files) moved to tmpdir.
  make_synthetic(tmpdir, n_variants, rounds, seed, ...) -> (db, id, dir)
      a session written row by row in kctl's schema (controller/store.c):
      kctl creates the database (`kctl status --state DB`), then the rows
      are inserted as the store would record them, with result documents
      shaped like evalpod's (docs/result.md) and, in the folder, each
      variant's result, a trace for the top few and IR files for the best.

As a test (ctest cli/report_data):
  report_data.py KCTL EVALPOD
checks that kctl status and kctl show accept the recorded session and the
synthetic ones (1,000 variants, all failed, one variant, hostile text) and
see their variants and rounds (kctl status rewrites a stale report.md, for
which it needs EVALPOD).  Prints one line per check and "N passed, M
failed"; exits 1 when anything failed.

As a generator (bench/report.sh):
  report_data.py KCTL --make DIR N_VARIANTS ROUNDS SEED
prints "STATE_DB SESSION_ID SESSION_DIR".
"""
import hashlib
import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402
from checks import check  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "report")
RECORDED = os.path.join(DATA, "recorded")
SYNTH = os.path.join(DATA, "synthetic")

# The recorded session's counts (tests/data/report/README.md)
RECORDED_ID = "matmul-20261125-090440-e5837f"
RECORDED_VARIANTS = 19
RECORDED_ROUNDS = 5  # rounds 0-3 and the confirmation, round 4
RECORDED_ROOT = "/tmp/rdata-rec"  # where it ran: its spec's folder

# Every status evalpod gives (docs/result.md, "Statuses") with the fault
# kind and origin a synthetic result of that status carries.
FAULTS = {
    "compile_error": ("compile_error", "candidate"),
    "incorrect": ("wrong_values", "candidate"),
    "runtime_error": ("out_of_bounds_write", "candidate"),
    "timeout": ("correctness", "candidate"),
    "crash": ("signal", "candidate"),
    "invalid": ("wrong_when_timed", "candidate"),
    "infra_error": ("timing", "infrastructure"),
}
STATUS_WEIGHTS = {"ok": 70, "compile_error": 8, "incorrect": 8, "runtime_error": 2,
                  "timeout": 4, "crash": 4, "invalid": 2, "infra_error": 2}

# Text that must not break or inject into a page (the escaping test): markup,
# entities, quotes, a script end, a comment, a CDATA end, and characters
# that look wrong (a right-to-left override, zero-width and replacement
# characters, a lone combining mark, an escape sequence, DEL).
HOSTILE = ("<script>alert('x')</script> & \"quoted\" 'single' </script><!-- -->"
           " ]]> <b>bold</b> &amp; &#x3c; \u202eevil\u202c \u200b\ufffd \u0301"
           " \x1b[31mred\x1b[0m \x7f \U0001F600 `code` | pipe")

DEVICE = {
    "compute_units": 2, "driver": "3.1+debian", "global_cache_bytes": 33554432,
    "global_mem_bytes": 8013434880, "local_mem_bytes": 1048576,
    "max_alloc_bytes": 2147483648, "max_clock_mhz": 2596, "max_work_group_size": 4096,
    "name": "pthread-skylake-avx512-AMD EPYC", "platform": "Portable Computing Language",
    "platform_version": "OpenCL 3.0 PoCL 3.1+debian  Linux, None+Asserts, RELOC, SPIR, "
                        "LLVM 15.0.6, SLEEF, DISTRO, POCL_DEBUG",
    "type": "cpu", "vendor": "AuthenticAMD",
    "version": "OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-skylake-avx512",
}
PEAK_GFLOPS, PEAK_GBS = 525.5474663, 48.03654017
FLOPS, BYTES = 2 * 256 ** 3, 4 * 3 * 256 ** 2  # the synthetic spec's timed shape
REFERENCE_MS = 6.8


def kctl_run(kctl, *args):
    return subprocess.run([kctl, *args], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, **EVALPOD_ENV))


# kctl status rewrites a session's stale report.md, which needs evalpod
# (the test's second argument)
EVALPOD_ENV = {}


# --- the recorded session ----------------------------------------------------

def _retarget_text(folder, old, new):
    """Replaces old with new in the text files under folder (reports and
    logs name the folder the session was recorded in)."""
    for root, _, files in os.walk(folder):
        for name in files:
            if not name.endswith((".md", ".log", ".json", ".txt", ".cl")):
                continue
            path = os.path.join(root, name)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            if old in text:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text.replace(old, new))


def load_recorded(tmpdir):
    """Restores the recorded session into tmpdir; returns (state_db,
    session_id, session_dir).  tmpdir/kctl.db must not exist yet."""
    db = os.path.join(tmpdir, "kctl.db")
    con = sqlite3.connect(db)
    try:
        with open(os.path.join(RECORDED, "state.sql"), encoding="utf-8") as f:
            con.executescript(f.read())
        sid, spec_path, out_dir = con.execute(
            "SELECT id, spec_path, output_dir FROM sessions").fetchone()
        old_root = os.path.dirname(spec_path)
        new_dir = os.path.join(tmpdir, os.path.relpath(out_dir, old_root))
        con.execute("UPDATE sessions SET spec_path = ?, output_dir = ? WHERE id = ?",
                    (os.path.join(tmpdir, os.path.basename(spec_path)), new_dir, sid))
        con.commit()
    finally:
        con.close()
    for name in ("spec.yaml", "matmul.cl", "reference.cl", "model.py"):
        shutil.copy(os.path.join(RECORDED, name), tmpdir)
    shutil.copytree(os.path.join(RECORDED, "session"), new_dir)
    _retarget_text(new_dir, old_root, tmpdir)
    return db, sid, new_dir


# --- synthetic sessions ------------------------------------------------------

def _stamp(seconds):
    """The store's ISO-8601 UTC text for 2026-11-20T00:00:00Z + seconds."""
    s = int(seconds)
    ms = int(round((seconds - s) * 1000)) % 1000
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return f"2026-11-{20 + d:02d}T{h:02d}:{m:02d}:{s:02d}.{ms:03d}Z"


def _sha(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8"))
    return h.hexdigest()


def _variant_hash(source, options):
    """As controller/mutate.c variant_hash: SHA-256 of source, NUL, options."""
    return _sha(source, "\0", options)


def _spec_hash(spec_path):
    """As controller/session.c spec_hash: SHA-256 of the spec, the template
    and the reference, each followed by a NUL (resume and the report.md
    refresh compare it)."""
    folder = os.path.dirname(spec_path)
    parts = []
    for name in (spec_path, os.path.join(folder, "mm.cl"), os.path.join(folder, "mm_ref.cl")):
        with open(name, encoding="utf-8") as f:
            parts += [f.read(), "\0"]
    return _sha(*parts)


def _stats(rng, median, spread):
    """evalpod's stats object of n samples around median."""
    n = rng.randint(5, 40)
    lo, hi = median * (1 - spread), median * (1 + 3 * spread)
    p25, p75 = median * (1 - spread / 3), median * (1 + spread / 2)
    mean = (lo + 2 * median + hi) / 4
    return {"n": n, "min": lo, "p25": p25, "median": median, "p75": p75, "max": hi,
            "mean": mean, "iqr": p75 - p25, "stdev": (hi - lo) / 4,
            "cv": (hi - lo) / 4 / mean}


def _speedup(ratio, rng):
    return {"ratio_of_medians": ratio, "paired_median": ratio * rng.uniform(0.98, 1.02),
            "paired_p25": ratio * 0.97, "paired_p75": ratio * 1.03,
            "pairs": rng.randint(3, 20)}


def _result(rng, vid, parent, options, rationale, status, batch_id, base_ms, text):
    """An evalpod result document (docs/result.md) for one synthetic variant:
    the fields the report reads, in their real shape and nesting."""
    doc = {"schema": "evalpod.result", "version": 1, "batch_id": batch_id, "id": vid,
           "parent": parent, "role": "variant", "build_options": options,
           "rationale": rationale, "status": status, "device": dict(DEVICE),
           "check_wall_ms": rng.uniform(50, 900), "artifacts": {}}
    if status == "compile_error":
        log = "error: program.cl:23:5: use of undeclared identifier 'acc2'\n"
        doc["compile"] = {"ok": False, "build_ms": rng.uniform(20, 90),
                          "log": log + (text + "\n" if text else ""), "log_truncated": False}
    else:
        doc["compile"] = {"ok": True, "build_ms": rng.uniform(100, 600), "log": text or "",
                          "log_truncated": False, "first_launch_ms": rng.uniform(5, 50),
                          "kernels": [{"name": "mm", "work_group_size": 4096,
                                       "compile_work_group_size": [8, 1, 1],
                                       "local_mem_bytes": 0, "private_mem_bytes": 1024,
                                       "preferred_multiple": 8}]}
        passed = status not in ("incorrect", "runtime_error", "timeout", "crash")
        doc["correctness"] = {"atol": 1e-3, "rtol": 1e-3, "passed": passed, "judged": 6,
                              "shapes": []}
    if status in FAULTS:
        kind, origin = FAULTS[status]
        message = {"compile_error": "CL_BUILD_PROGRAM_FAILURE: error: program.cl:23:5: "
                                    "use of undeclared identifier 'acc2'",
                   "incorrect": "'C' differs from the reference in 4096 of 65536 elements",
                   "runtime_error": "wrote outside buffer 'C': 4 bytes after its end were "
                                    "changed (first at end+0)",
                   "timeout": "did not finish within 40 s; killed during correctness",
                   "crash": "the worker died of signal 11 (Segmentation fault) during "
                            "correctness",
                   "invalid": "the outputs of timed sample 3 were wrong",
                   "infra_error": "the timing worker could not be started"}[status]
        doc["fault"] = {"origin": origin, "kind": kind,
                        "message": message + (": " + text if text else "")}
    if status in ("ok", "invalid"):
        median = base_ms
        spread = rng.uniform(0.005, 0.2)
        robust_cv = spread / 2
        quality = "stable" if robust_cv < 0.02 else "noisy" if robust_cv < 0.08 else "unstable"
        gflops = FLOPS / (median * 1e6)
        gbs = BYTES / (median * 1e6)
        doc["performance"] = {
            "shape": "timed", "median_ms": median, "stats": _stats(rng, median, spread),
            "host_stats": _stats(rng, median * 1.3, spread), "robust_cv": robust_cv,
            "quality": quality, "reps_per_sample": rng.randint(1, 20),
            "stopped_by": "min_time_ms", "reference_median_ms": REFERENCE_MS,
            "baseline_median_ms": REFERENCE_MS / 4,
            "speedup_vs_reference": _speedup(REFERENCE_MS / median, rng),
            "speedup_vs_baseline": _speedup(REFERENCE_MS / 4 / median, rng),
            "launch": [{"kernel": "mm", "global": [256, 256], "local": [8, 1]}],
            "warnings": []}
        ai = FLOPS / BYTES
        ridge = PEAK_GFLOPS / PEAK_GBS
        bottleneck = rng.choice(["compute", "compute", "occupancy", "latency", "memory"])
        doc["roofline"] = {
            "gflops": gflops, "gbs": gbs, "arithmetic_intensity": ai, "flops": float(FLOPS),
            "bytes": float(BYTES), "bottleneck": bottleneck, "peak_gflops": PEAK_GFLOPS,
            "peak_gbs": PEAK_GBS, "ridge_point": ridge,
            "fraction_of_peak_flops": gflops / PEAK_GFLOPS,
            "fraction_of_peak_bw": gbs / PEAK_GBS,
            "evidence": [f"arithmetic intensity {ai:.2f} flop/byte; ridge point {ridge:.2f}"]}
        if status == "ok":
            doc["ir"] = {"artifacts": ["mm.ll", "mm.s"],
                         "kernels": {"mm": {"llvm_ir": {"kind": "llvm-ir",
                                                        "fma": rng.randint(1, 64),
                                                        "loads": rng.randint(8, 90),
                                                        "stores": rng.randint(1, 16),
                                                        "max_vector_width": 0}}}}
            doc["artifacts"] = {"mm.ll": "mm.ll", "mm.s": "mm.s", "trace.json": "trace.json"}
    return doc


def _pick_status(rng, statuses):
    names = list(statuses)
    return rng.choices(names, weights=[statuses[s] for s in names])[0]


class _Session:
    """The rows of one synthetic session, built in memory then inserted."""

    def __init__(self, sid, rng, template, hostile):
        self.sid, self.rng, self.template, self.hostile = sid, rng, template, hostile
        self.variants, self.results, self.rounds = [], {}, []
        self.lineages, self.learnings, self.llm_calls = {}, [], []
        self.hashes = set()
        self.retimed = {}  # the confirmation's documents, by variant
        self.t = 0.0  # seconds from the session's start to its last round's end

    def text(self, plain):
        return plain + " " + HOSTILE if self.hostile else plain

    def add_variant(self, rnd, k, origin, parent, lineage, params, t):
        """Records variant k of round rnd; returns it."""
        vid = "r00-start" if rnd == 0 else f"r{rnd:02d}-v{k:03d}"
        source = self.template
        options = ""
        if params:
            options = " ".join(f"-D{n}={v}" for n, v in params.items())
        if origin in ("model", "sweep"):
            # a model's rewrite: the block with a line of its own
            source = self.template.replace(
                "\tfloat acc[TM];\n", f"\tfloat acc[TM];  // {vid}: rewrite {k}\n")
        if self.hostile and origin == "tune":
            params = dict(params, **{"X</script><!--&\"'": 1})
            options += " -DX='</script>&\"<!--'"
        h = _variant_hash(source, options)
        assert h not in self.hashes, "the same variant twice"
        self.hashes.add(h)
        if rnd == 0:
            rationale = "the starting template"
        elif origin == "model":
            rationale = self.text(f"model: rewrite {k} of round {rnd}: hold more of C in "
                                  "registers")
        else:
            rationale = self.text(f"space-filling point {k}")
        v = {"id": vid, "hash": h, "round": rnd, "parent": parent, "lineage": lineage,
             "source": source, "options": options,
             "params": params or None, "rationale": rationale, "created": _stamp(t),
             "origin": origin, "tunables": None}
        self.variants.append(v)
        return v


def _params(i):
    """Distinct parameters for the i-th tuner point: a mixed radix over the
    spec's tunables, then an extra define past the space's 192 points."""
    tm, wx, wy, ku = [1, 2, 4, 8], [4, 8, 16, 32], [1, 2, 4, 8], [1, 2, 4]
    p = {"TM": tm[i % 4], "WX": wx[(i // 4) % 4], "WY": wy[(i // 16) % 4],
         "KU": ku[(i // 64) % 3]}
    if i >= 192:
        p["SEQ"] = i
    return p


def _speed_of(params, rng, rnd):
    """A plausible median time (ms) for a point: more rows per work-item and
    later rounds are faster, with noise."""
    tm = params.get("TM", 1) if params else 1
    return REFERENCE_MS / (4 + 3 * tm + rnd * 0.5) * rng.uniform(0.8, 1.25)


def _build(sid, n_variants, rounds, seed, statuses, hostile, llm):
    rng = random.Random(seed)
    with open(os.path.join(SYNTH, "mm.cl"), encoding="utf-8") as f:
        template = f.read()
    s = _Session(sid, rng, template, hostile)
    t = 0.0
    start = s.add_variant(0, 0, "start", None, -1, None, t)
    per = [0] * (rounds + 1)
    for i in range(n_variants - 1):
        per[1 + i % max(rounds, 1)] += 1
    best = None  # (median, variant) of the incumbent
    tune_i = 0
    for rnd in range(rounds + 1):
        started = t
        made = [start] if rnd == 0 else []
        for k in range(1, per[rnd] + 1 if rnd else 0):
            t += 0.01
            if rng.random() < 0.3 and best:
                parent = best[1]["id"]
                v = s.add_variant(rnd, k, "model", parent, best[1]["lineage"], None, t)
            else:
                v = s.add_variant(rnd, k, "tune", None, -1, _params(tune_i), t)
                tune_i += 1
            made.append(v)
        for v in made:
            status = "ok" if v["id"] == "r00-start" and statuses.get("ok") else \
                _pick_status(rng, statuses)
            if v["origin"] == "model":  # a rewrite of the incumbent: near it,
                # rarely faster, never beyond about 70x the reference
                median = max(best[0] * rng.uniform(0.9, 1.4),
                             REFERENCE_MS / 70 * rng.uniform(1, 1.2))
            else:
                median = _speed_of(v["params"], rng, rnd)
            text = s.text("note") if hostile else ""
            doc = _result(rng, v["id"], v["parent"], v["options"], v["rationale"], status,
                          f"{sid}-r{rnd:03d}", median, text if status != "ok" else "")
            s.results[v["id"]] = (rnd, doc)
            if status == "ok" and (best is None or median < best[0]):
                _found_lineage(s, v, rnd, best)
                best = (median, v)
        t += 1.0 + 0.02 * len(made)
        _round(s, rnd, rounds, started, t, best, made)
        if llm and rnd > 0:
            _llm_call(s, rnd, t)
    _learnings(s, hostile)
    s.t = t
    return s, best


def _found_lineage(s, v, rnd, best):
    """v is the new incumbent: lineage 0 (the incumbent's) points at it; a
    tuner point founds a lineage, a model rewrite improves its parent's;
    the other lineages stagnate, and go inactive after 3 (the template, as
    in a real session, stays in no lineage)."""
    improved = v["lineage"] is not None and v["lineage"] > 0
    if v["id"] != "r00-start" and not improved:
        v["lineage"] = max([n for n in s.lineages if n > 0], default=0) + 1
        s.lineages[v["lineage"]] = {"created_round": rnd}
    for n, lin in s.lineages.items():
        if n not in (0, v["lineage"]):
            lin["stagnation"] += 1
            lin["active"] = int(lin["stagnation"] < 3)
    for n in {0, v["lineage"]} - {-1}:
        s.lineages.setdefault(n, {"created_round": rnd}).update(
            best=v["id"], stagnation=0, active=1)
    if improved:
        s.learnings.append(("S", f"{v['id']} improved lineage of", "improved lineage of",
                            s.text(f"{v['id']} improved lineage of {v['parent']}"), rnd))
    if best:
        s.learnings.append(("S", f"{v['id']} replaced the incumbent", "replaced the incumbent",
                            s.text(f"{v['id']} replaced the incumbent {best[1]['id']}"), rnd))


def _round(s, rnd, rounds, started, finished, best, made):
    mode = "baseline" if rnd == 0 else "explore" if rnd == 1 else "exploit"
    decision = "stop" if rnd == rounds else "exploit" if rnd else "explore"
    reason = (f"{best[1]['id']} is the incumbent ({REFERENCE_MS / best[0]:.2f}x vs reference)"
              if best else "no variant has passed its checks yet")
    plan = None
    if rnd:
        model = sum(1 for v in made if v["origin"] == "model")
        slots = {"model": model, "sweep": 0, "tune": len(made) - model}
        plan = {"proposed": slots, "slots": dict(slots),
                "why": s.text("weights model 1 : tune 2 -> 33% model")}
    s.rounds.append({"round": rnd, "state": 4, "mode": mode, "decision": decision,
                     "reason": s.text(reason), "pid": 4000 + rnd, "started": _stamp(started),
                     "finished": _stamp(finished), "confirm": None, "plan": plan})


def _llm_call(s, rnd, t):
    prompt = s.text(f"round {rnd}: rewrite the block")
    s.llm_calls.append({
        "round": rnd, "seq": 1, "purpose": "propose", "asked": "anthropic test-model",
        "prompt_sha": _sha(prompt), "prompt": prompt,
        "answer": s.text("=== DIRECTION: hold more rows"), "status": "ok", "error": None,
        "input_tokens": 12000 + rnd, "output_tokens": 900 + rnd,
        "cost": (12000 + rnd) * 3e-6 + (900 + rnd) * 15e-6, "ms": 2500.0, "attempts": 1,
        "meta": json.dumps({"attempt": 0, "directions": 2, "outcomes": {"accepted": 2}}),
        "created": _stamp(t)})


def _learnings(s, hostile):
    """A fault learning per failed status seen, in the round it first failed."""
    seen = {}
    for vid, (rnd, doc) in s.results.items():
        f = doc.get("fault")
        if f and doc["status"] not in seen:
            seen[doc["status"]] = (vid, rnd, f)
    for status, (vid, rnd, f) in seen.items():
        key = f"{status}: {f['kind']}"
        s.learnings.append(("F", key, status, s.text(f"{key} (first seen in {vid})"), rnd))
    if hostile:
        s.learnings.append(("M", _sha("hostile"), None, HOSTILE + " [r00-start]", 0))


def _insert(con, sid, s, best, spec_path, out_dir, state, reason, winner):
    q = con.execute
    q("INSERT INTO sessions (id, spec_path, spec_hash, output_dir, state, reason, created,"
      " updated, rng, winner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      (sid, spec_path, _spec_hash(spec_path), out_dir, state, reason, s.rounds[0]["started"],
       s.rounds[-1]["finished"], 12345, json.dumps(winner) if winner else None))
    for r in s.rounds:
        q("INSERT INTO rounds (session, round, state, mode, decision, reason, pid, started,"
          " finished, confirm, plan) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
          (sid, r["round"], r["state"], r["mode"], r["decision"], r["reason"], r["pid"],
           r["started"], r["finished"], json.dumps(r["confirm"]) if r["confirm"] else None,
           json.dumps(r["plan"]) if r["plan"] else None))
    for v in s.variants:
        q("INSERT INTO variants (session, id, hash, round, parent, lineage, source, options,"
          " params, rationale, created, origin, tunables) VALUES"
          " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
          (sid, v["id"], v["hash"], v["round"], v["parent"], v["lineage"], v["source"],
           v["options"], json.dumps(v["params"], sort_keys=True) if v["params"] else None,
           v["rationale"], v["created"], v["origin"], None))
    for vid, (_, doc) in s.results.items():
        perf, roof = doc.get("performance", {}), doc.get("roofline", {})
        q("INSERT INTO results (session, variant, status, speedup_ref, speedup_base,"
          " median_ms, gflops, gbs, bottleneck, json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
          (sid, vid, doc["status"],
           perf.get("speedup_vs_reference", {}).get("ratio_of_medians"),
           perf.get("speedup_vs_baseline", {}).get("ratio_of_medians"), perf.get("median_ms"),
           roof.get("gflops"), roof.get("gbs"), roof.get("bottleneck"),
           json.dumps(doc, sort_keys=True, separators=(",", ":"))))
    for n, lin in sorted(s.lineages.items()):
        q("INSERT INTO lineages (session, lineage, best, stagnation, active, created_round)"
          " VALUES (?, ?, ?, ?, ?, ?)",
          (sid, n, lin["best"], lin["stagnation"], lin["active"], lin["created_round"]))
    numbers = {}
    for kind, key, grp, text, rnd in s.learnings:
        numbers[kind] = numbers.get(kind, 0) + 1
        q("INSERT INTO learnings (session, kind, number, key, grp, text, count, round)"
          " VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (sid, kind, numbers[kind], key, grp, text, 1, rnd))
    for c in s.llm_calls:
        q("INSERT INTO llm_calls (session, round, seq, purpose, asked, prompt_sha, prompt,"
          " answer, status, error, input_tokens, output_tokens, cost, ms, attempts, meta,"
          " created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
          (sid, c["round"], c["seq"], c["purpose"], c["asked"], c["prompt_sha"], c["prompt"],
           c["answer"], c["status"], c["error"], c["input_tokens"], c["output_tokens"],
           c["cost"], c["ms"], c["attempts"], c["meta"], c["created"]))


def _winner(s, best, doc=None):
    """The winner record as controller/winner.c winner_record writes it from
    doc (default: the incumbent's result), before a confirmation: confirmed
    false, settled null."""
    _, v = best
    doc = doc or s.results[v["id"]][1]
    perf, roof = doc["performance"], doc["roofline"]
    ref = perf["speedup_vs_reference"]
    return {"status": doc["status"], "shape": perf["shape"], "median_ms": perf["median_ms"],
            "samples": perf["stats"]["n"], "robust_cv": perf["robust_cv"],
            "quality": perf["quality"], "speedup_vs_reference": ref["ratio_of_medians"],
            "speedup_vs_reference_iqr": [ref["paired_p25"], ref["paired_p75"]],
            "speedup_vs_reference_links": (ref.get("via") or {}).get("links", 0),
            "speedup_vs_baseline": perf["speedup_vs_baseline"]["ratio_of_medians"],
            "gflops": roof["gflops"], "gbps": roof["gbs"], "bottleneck": roof["bottleneck"],
            "device": doc["device"]["name"], "variant": v["id"], "round": v["round"],
            "params": v["params"], "build_options": v["options"],
            "best_cl_build_options": "", "launch": None, "confirmed": False,
            "settled": None, "runner_up": None,
            "verdict": "figures of its own round; not confirmed"}


CONFIRM_MEASUREMENT = {"warmup": 2, "min_samples": 20, "max_samples": 200,
                       "min_time_ms": 200.0, "max_time_ms": 10000.0, "sample_min_ms": 1.0,
                       "precision": 0.0, "order_seed": 5}


def _confirm(s, best, rounds, t):
    """A confirmation round after the last search round, as confirm.c
    records one that settles: the fastest few re-timed side by side (their
    documents kept for the folder), the round's confirm object, and the
    winner's verdict against each.  Returns the winner record."""
    rng = s.rng
    ok = sorted((doc["performance"]["median_ms"], vid) for vid, (_, doc) in s.results.items()
                if doc["status"] == "ok")
    ids = [vid for _, vid in ok[:3]]
    rnd = rounds + 1
    s.retimed = {}
    for vid in ids:
        doc = json.loads(json.dumps(s.results[vid][1]))
        doc["batch_id"] = f"{s.sid}-r{rnd:03d}"
        doc["performance"]["stats"]["n"] = 200
        s.retimed[vid] = doc
    cands, runner = [], None
    for vid in ids[1:]:
        ratio = s.results[vid][1]["performance"]["median_ms"] / best[0]
        c = {"variant": vid, "winner_speedup": ratio, "ci": [ratio * 0.99, ratio * 1.01],
             "pairs": rng.randint(100, 200)}
        cands.append(dict(c, verdict="slower" if ratio > 1.02 else "equal"))
        runner = runner or c
    verdict = (f"{ids[0]} is the fastest of {len(ids)} candidates re-timed side by side"
               if len(ids) > 1 else f"{ids[0]} is the only candidate")
    s.rounds.append({"round": rnd, "state": 4, "mode": "confirm", "decision": "stop",
                     "reason": s.text(f"confirmation pass 1 of 1: {verdict}"),
                     "pid": 4000 + rnd, "started": _stamp(t), "finished": _stamp(t + 3),
                     "confirm": {"measurement": CONFIRM_MEASUREMENT, "pass": 1, "passes": 1,
                                 "programs": ids, "then": "stop", "why": None},
                     "plan": None})
    w = _winner(s, (best[0], dict(best[1], round=rnd)), s.retimed[ids[0]])
    w.update(confirmed=True, settled=True, verdict=s.text(verdict), passes=1,
             candidates=cands, runner_up=runner)
    return w


def _trace(vid, median_ms):
    """A small Chrome trace like evalpod's: three samples of the kernel."""
    events = []
    for i in range(3):
        events.append({"name": "mm", "ph": "X", "pid": 1, "tid": 1, "ts": 1000.0 * (i + 1),
                       "dur": median_ms * 1000.0, "args": {"sample": i}})
    return {"displayTimeUnit": "ms", "traceEvents": events,
            "otherData": {"clock": "OpenCL profiling, us", "device": DEVICE["name"],
                          "program": vid}}


def _write_folder(s, out_dir, top):
    """The session folder: each result in its round's results/ (and the
    confirmation's in its own), a trace for the top variants, the IR files
    of the best."""
    confirm = s.rounds[-1]["round"] if s.rounds[-1]["mode"] == "confirm" else None
    retimed = [(vid, (confirm, doc)) for vid, doc in s.retimed.items()]
    for vid, (rnd, doc) in list(s.results.items()) + retimed:
        res = os.path.join(out_dir, "rounds", f"r{rnd:03d}", "results")
        os.makedirs(res, exist_ok=True)
        with open(os.path.join(res, vid + ".json"), "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2, sort_keys=True)
        if vid in top:
            os.makedirs(os.path.join(res, vid), exist_ok=True)
            with open(os.path.join(res, vid, "trace.json"), "w", encoding="utf-8") as f:
                json.dump(_trace(vid, doc["performance"]["median_ms"]), f, indent=1)
        if top and vid == top[0]:
            with open(os.path.join(res, vid, "mm.ll"), "w", encoding="utf-8") as f:
                f.write("; ModuleID = 'program.cl'\ndefine void @mm() {\n  ret void\n}\n")
            with open(os.path.join(res, vid, "mm.s"), "w", encoding="utf-8") as f:
                f.write("\t.text\n_pocl_kernel_mm:\n\tvfmadd231ps %zmm1, %zmm2, %zmm0\n\tret\n")


def make_synthetic(tmpdir, n_variants, rounds, seed, statuses=None, hostile=False, llm=True,
                   confirm=True, kctl=None, top=3):
    """Writes a synthetic session of n_variants (>= 1; round 0's template
    counts) over rounds search rounds after round 0, from seed, into tmpdir:
    its spec, template and reference (tests/data/report/synthetic), the
    state database tmpdir/kctl.db (created by kctl, which must be given or
    found by kctl_path()), and the session folder tmpdir/runs/ID.
    statuses: {status: weight} over ok and the FAULTS statuses (default
    STATUS_WEIGHTS; {"compile_error": 1, "crash": 1} gives an all-failed
    session, which ends "failed" with no winner).  hostile puts HOSTILE into
    rationales, reasons, learnings, build options, a parameter's name and
    the compile logs.  llm adds one model exchange per round with tokens and
    cost.  confirm adds a confirmation round (round rounds + 1) that re-times
    the fastest three and settles the winner, as kctl's sessions end; without
    it the winner is the incumbent's own round's figures, not confirmed.
    Returns (state_db, session_id, session_dir)."""
    statuses = dict(statuses or STATUS_WEIGHTS)
    assert n_variants >= 1 and rounds >= 0 and all(k in FAULTS or k == "ok" for k in statuses)
    if n_variants > 1 and rounds == 0:
        raise ValueError("variants beyond the template need a round to be in")
    sid = f"mm-20261120-000000-{seed % (1 << 24):06x}"
    for name in ("spec.yaml", "mm.cl", "mm_ref.cl"):
        shutil.copy(os.path.join(SYNTH, name), tmpdir)
    db = os.path.join(tmpdir, "kctl.db")
    r = kctl_run(kctl or kctl_path(), "status", "--state", db)
    if r.returncode != 0 or not os.path.exists(db):
        raise RuntimeError(f"kctl status --state {db} did not create it: {r.stderr[-500:]}")
    s, best = _build(sid, n_variants, rounds, seed, statuses, hostile, llm)
    out_dir = os.path.join(tmpdir, "runs", sid)
    if best:
        state = "done"
        reason = s.text(f"winner {best[1]['id']}, {REFERENCE_MS / best[0]:.2f}x vs reference")
        winner = _confirm(s, best, rounds, s.t) if confirm else _winner(s, best)
    else:
        state, reason, winner = "failed", s.text("no variant passed its checks"), None
    con = sqlite3.connect(db)
    try:
        con.execute("PRAGMA foreign_keys = ON")
        with con:
            _insert(con, sid, s, best, os.path.join(tmpdir, "spec.yaml"), out_dir, state,
                    reason, winner)
    finally:
        con.close()
    ok = sorted((doc["performance"]["median_ms"], vid) for vid, (_, doc) in s.results.items()
                if doc["status"] == "ok")
    _write_folder(s, out_dir, [vid for _, vid in ok[:top]])
    return db, sid, out_dir


def kctl_path():
    """$KCTL, else build/controller/kctl of this checkout."""
    return os.environ.get("KCTL") or os.path.join(HERE, "..", "..", "build", "controller",
                                                  "kctl")


# --- the test ----------------------------------------------------------------

def _show_ids(out):
    return set(re.findall(r"^(r\d\d-(?:v\d{3,}|start))\s", out, re.M))


def check_session(kctl, label, db, sid, n_variants, last_round, state):
    """kctl status and kctl show accept the session and see its variants and
    rounds; returns kctl status's JSON object."""
    r = kctl_run(kctl, "status", sid, "--state", db, "-o", "json")
    check(r.returncode == 0 and "warning" not in r.stderr,
          f"{label}: kctl status accepts it without a warning ({r.stderr[-300:]!r})")
    try:
        st = json.loads(r.stdout)
    except ValueError:
        st = {}
    check(st.get("session") == sid and st.get("state") == state,
          f"{label}: kctl status sees session {sid} {state} "
          f"(got {st.get('session')!r} {st.get('state')!r})")
    check(st.get("evaluations") == n_variants and st.get("rounds") == last_round,
          f"{label}: kctl status counts {n_variants} evaluations in rounds up to {last_round} "
          f"(got {st.get('evaluations')!r}, {st.get('rounds')!r})")
    r = kctl_run(kctl, "show", sid, "--state", db)
    ids = _show_ids(r.stdout)
    check(r.returncode == 0 and len(ids) == n_variants,
          f"{label}: kctl show lists its {n_variants} variants (got {len(ids)}; "
          f"{r.stderr[-300:]!r})")
    return st


def db_rows(db, sql, *args):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def schema_sound(label, db):
    """SQLite's own checks: the file, and every foreign key."""
    check(db_rows(db, "PRAGMA integrity_check") == [("ok",)] and
          db_rows(db, "PRAGMA foreign_key_check") == [],
          f"{label}: the database passes integrity_check and foreign_key_check")


def test_recorded(kctl):
    with tempfile.TemporaryDirectory(prefix="kctl-rdata-") as tmp:
        db, sid, folder = load_recorded(tmp)
        label = "recorded"
        check(sid == RECORDED_ID and folder == os.path.join(tmp, "runs", sid),
              f"{label}: session {sid} restored into {folder}")
        st = check_session(kctl, label, db, sid, RECORDED_VARIANTS, RECORDED_ROUNDS - 1, "done")
        check(st.get("spec") == os.path.join(tmp, "spec.yaml") and
              st.get("output_dir") == folder and os.path.isfile(st.get("spec", "")),
              f"{label}: its spec and folder paths point into the temporary folder "
              f"({st.get('spec')!r}, {st.get('output_dir')!r})")
        stale = [p for p in _files(folder) if RECORDED_ROOT in _read(p)]
        check(not stale, f"{label}: no file names the folder it was recorded in ({stale[:2]})")
        statuses = dict(db_rows(db, "SELECT variant, status FROM results"))
        kinds = set(statuses.values())
        check({"ok", "compile_error", "incorrect", "crash", "timeout"} <= kinds,
              f"{label}: it holds ok, compile_error, incorrect, crash and timeout ({kinds})")
        lineages = db_rows(db, "SELECT count(DISTINCT lineage) FROM variants WHERE lineage >= 0")
        check(lineages[0][0] >= 2, f"{label}: its variants are in {lineages[0][0]} lineages")
        win = json.loads(db_rows(db, "SELECT winner FROM sessions")[0][0])
        inc = db_rows(db, "SELECT best FROM lineages WHERE lineage = 0")[0][0]
        check(win["variant"] == inc == st.get("best", {}).get("variant"),
              f"{label}: the winner is the incumbent, as kctl status says ({inc})")
        files = {}
        for p in _files(folder):
            m = re.search(r"/rounds/r(\d{3})/results/(r\d\d-(?:v\d{3}|start))\.json$", p)
            if m:
                with open(p, encoding="utf-8") as f:
                    files.setdefault(m.group(2), json.load(f))
        check(set(files) == set(statuses) and
              all(files[v]["status"] == statuses[v] for v in statuses),
              f"{label}: every variant's result file agrees with its stored status")
        res = os.path.join(folder, "rounds", "r003", "results", inc)
        check(os.path.isfile(os.path.join(res, "trace.json")) and
              os.path.isfile(os.path.join(res, "pack_b.ll")) and
              "pack_b.ll" in files[inc]["artifacts"],
              f"{label}: the winner's trace and one IR file its result names are kept")
        schema_sound(label, db)


def _files(folder):
    for root, _, names in os.walk(folder):
        for n in names:
            yield os.path.join(root, n)


def _read(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


REPORT_FIELDS = {
    "performance": {"median_ms", "stats", "robust_cv", "quality", "speedup_vs_reference",
                    "speedup_vs_baseline"},
    "roofline": {"gflops", "gbs", "arithmetic_intensity", "bottleneck", "peak_gflops",
                 "peak_gbs", "ridge_point"},
}


def shaped_like_recorded(label, db):
    """Every ok result has the fields of the recorded session's results that
    the report reads, with the same types; every failure a fault."""
    with tempfile.TemporaryDirectory(prefix="kctl-rdata-") as tmp:
        rdb, _, _ = load_recorded(tmp)
        real = json.loads(db_rows(rdb, "SELECT json FROM results WHERE variant = 'r03-v001'")[0][0])
    bad = []
    for vid, status, text in db_rows(db, "SELECT variant, status, json FROM results"):
        doc = json.loads(text)
        if status == "ok":
            for part, keys in REPORT_FIELDS.items():
                for k in keys:
                    if type(doc[part].get(k)) is not type(real[part][k]):
                        bad.append(f"{vid} {part}.{k}")
            if set(doc["performance"]["stats"]) != set(real["performance"]["stats"]):
                bad.append(f"{vid} performance.stats")
        elif set(doc.get("fault", {})) != {"origin", "kind", "message"}:
            bad.append(f"{vid} fault")
        if set(doc["device"]) != set(real["device"]):
            bad.append(f"{vid} device")
    check(not bad, f"{label}: results have the recorded results' fields and types ({bad[:3]})")


def test_synthetic_1000(kctl):
    with tempfile.TemporaryDirectory(prefix="kctl-rdata-") as tmp:
        label = "synthetic 1,000"
        db, sid, folder = make_synthetic(tmp, 1000, 10, 1, kctl=kctl)
        st = check_session(kctl, label, db, sid, 1000, 11, "done")
        kinds = {s for (s,) in db_rows(db, "SELECT DISTINCT status FROM results")}
        check(kinds == set(STATUS_WEIGHTS), f"{label}: every status occurs ({sorted(kinds)})")
        inc = db_rows(db, "SELECT best FROM lineages WHERE lineage = 0")[0][0]
        fastest = db_rows(db, "SELECT variant FROM results WHERE status = 'ok'"
                              " ORDER BY median_ms LIMIT 1")[0][0]
        check(st.get("best", {}).get("variant") == inc == fastest,
              f"{label}: kctl status names the incumbent, the fastest ok variant ({inc})")
        w = st.get("best", {})
        conf = json.loads(db_rows(db, "SELECT confirm FROM rounds WHERE round = 11")[0][0])
        check(w.get("confirmed") is True and w.get("round") == 11 and
              conf["programs"][0] == inc and len(w.get("candidates", [])) == 2 and
              w.get("runner_up", {}).get("variant") == conf["programs"][1],
              f"{label}: round 11 confirmed the winner against the next two "
              f"({conf['programs']}, runner-up {w.get('runner_up')})")
        n_lin = db_rows(db, "SELECT count(*) FROM lineages")[0][0]
        check(n_lin >= 3, f"{label}: {n_lin} lineages")
        shaped_like_recorded(label, db)
        schema_sound(label, db)
        n_files = sum(1 for p in _files(folder) if re.search(r"/results/r[^/]*\.json$", p))
        traces = sum(1 for p in _files(folder) if p.endswith("/trace.json"))
        retimed = [n for n in os.listdir(os.path.join(folder, "rounds", "r011", "results"))
                   if n.endswith(".json")]
        check(n_files == 1003 and traces == 6 and sorted(retimed) ==
              sorted(f"{v}.json" for v in conf["programs"]),
              f"{label}: the folder has 1,000 result files and the confirmation's 3, and "
              f"the top 3 have a trace in both rounds ({n_files}, {traces})")


def test_all_failed(kctl):
    with tempfile.TemporaryDirectory(prefix="kctl-rdata-") as tmp:
        label = "all failed"
        db, sid, _ = make_synthetic(tmp, 24, 3, 2, kctl=kctl,
                                    statuses={"compile_error": 1, "crash": 1, "timeout": 1,
                                              "incorrect": 1})
        st = check_session(kctl, label, db, sid, 24, 3, "failed")
        check(not st.get("best") and db_rows(db, "SELECT winner FROM sessions")[0][0] is None,
              f"{label}: no winner ({st.get('best')!r})")
        schema_sound(label, db)


def test_one_variant(kctl):
    with tempfile.TemporaryDirectory(prefix="kctl-rdata-") as tmp:
        label = "one variant"
        db, sid, _ = make_synthetic(tmp, 1, 0, 3, kctl=kctl, llm=False, confirm=False)
        st = check_session(kctl, label, db, sid, 1, 0, "done")
        w = st.get("best", {})
        check(w.get("variant") == "r00-start" and w.get("confirmed") is False,
              f"{label}: the template is the winner, not confirmed ({w.get('variant')!r})")
        schema_sound(label, db)


def test_hostile(kctl):
    with tempfile.TemporaryDirectory(prefix="kctl-rdata-") as tmp:
        label = "hostile text"
        db, sid, folder = make_synthetic(tmp, 40, 3, 4, kctl=kctl, hostile=True)
        check_session(kctl, label, db, sid, 40, 4, "done")
        where = {
            "rationales": "SELECT rationale FROM variants WHERE round > 0",
            "learnings": "SELECT text FROM learnings",
            "build options": "SELECT options FROM variants WHERE origin = 'tune'",
            "parameter names": "SELECT params FROM variants WHERE origin = 'tune'",
            "compile logs": "SELECT json_extract(json, '$.compile.log') FROM results"
                            " WHERE status = 'compile_error'",
            "round reasons": "SELECT reason FROM rounds",
        }
        for what, sql in where.items():
            rows = [r[0] or "" for r in db_rows(db, sql)]
            check(rows and any("</script>" in r for r in rows) and
                  any(c in r for r in rows for c in "<&\"'"),
                  f"{label}: {what} carry markup, quotes and a script end")
        r = kctl_run(kctl, "show", sid, "r01-v001", "--state", db)
        check(r.returncode == 0 and "</script>" in r.stdout and "\u202e" in r.stdout,
              f"{label}: kctl show prints a hostile variant's text as it is stored")
        shaped_like_recorded(label, db)
        schema_sound(label, db)


def test_deterministic(kctl):
    """The same arguments give the same rows, so golden files can be kept."""
    dumps = []
    for _ in range(2):
        with tempfile.TemporaryDirectory(prefix="kctl-rdata-") as tmp:
            db, _, _ = make_synthetic(tmp, 30, 2, 5, kctl=kctl, hostile=True)
            dumps.append(db_rows(db, "SELECT v.id, v.hash, v.rationale, r.json FROM variants v"
                                     " JOIN results r ON r.variant = v.id ORDER BY v.id") +
                         db_rows(db, "SELECT winner, reason FROM sessions"))
    check(dumps[0] == dumps[1] and len(dumps[0]) == 31,
          "deterministic: the same seed gives the same variants, results and winner")


TESTS = [test_recorded, test_synthetic_1000, test_all_failed, test_one_variant, test_hostile,
         test_deterministic]


def main():
    args = sys.argv[1:]
    if len(args) == 6 and args[1] == "--make":
        db, sid, out = make_synthetic(args[2], int(args[3]), int(args[4]), int(args[5]),
                                      kctl=args[0])
        print(db, sid, out)
        return 0
    if len(args) != 2:
        print("usage: report_data.py KCTL EVALPOD\n"
              "       report_data.py KCTL --make DIR N_VARIANTS ROUNDS SEED", file=sys.stderr)
        return 2
    kctl = args[0]
    EVALPOD_ENV["KCTL_EVALPOD"] = os.path.abspath(args[1])
    checks.run(TESTS, kctl)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
