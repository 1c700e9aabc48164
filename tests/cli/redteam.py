#!/usr/bin/env python3
"""Red-team suite: evalpod against kernels written to escape, cheat or take
the batch down.

usage: redteam.py EVALPOD DATA_DIR

One batch (problem "affine", y = 2x + 1) holds an honest control (`good`), a
baseline, and one variant per attack in DATA_DIR (tests/data/redteam; each
kernel's header says what it tries and what must happen):

- inline assembly, plain, built by token pasting and by line splicing;
- host files read or probed by the preprocessor (#include, %:include,
  __has_include), whose contents must never leak into any output;
- calls into the C library of the worker;
- state kept between launches (program-scope and static global arrays);
- inputs recognised by a fingerprint of x[0]: right on the correctness
  inputs only, or also on the timing inputs that evalpod used to derive from
  the correctness seeds;
- crashes only while timed, three of them in one batch;
- writes far outside a buffer, before and after it;
- a race between work-groups that in-order execution hides;
- a preprocessor bomb;
- in a batch of its own with work worth skipping, answers replayed for inputs
  met before, from local memory that PoCL keeps between launches (the audit
  on new inputs must catch it, and pass the honest programs).

Each must get its status and fault kind; no bad kernel may be ok; the control
and the baseline must stay ok with performance figures; nothing may be an
infra_error; the timing seeds must be fresh on every run and none of the
correctness seeds; and the results must record the sandbox.  The whole batch
runs once more with a session's reference cache (evalpod run --ref-cache,
warmed by a smaller batch): outputs from the cache, session timing seeds, and
every attack must still get its verdict.

The fingerprints are computed here with evalpod's input generator (splitmix64,
docs/evalpod.md "Fresh inputs") and substituted into the kernels' @...@
placeholders.
"""
import json
import os
import re
import secrets
import struct
import subprocess
import sys
import tempfile

import checks

SEEDS = [1, 2, 3]
M64 = (1 << 64) - 1

# The batch's limits.  memory_mb: RSS ceiling of a candidate's processes.
LIMITS = {"compile_timeout_s": 30, "run_timeout_s": 6, "time_timeout_s": 400,
          "memory_mb": 1536}

REFUSED = {("compile_error", "refused")}
TIMED_WRONG = {("invalid", "wrong_when_timed")}
TIMED_CRASH = {("crash", "signal")}
FAR_OOB = {("crash", "out_of_bounds"), ("crash", "signal"),
           ("runtime_error", "out_of_bounds_write")}

# State kept between launches needs OpenCL C 2.0: refused by the screen (the
# option) or after the build (the variables found).
STATE = {("compile_error", "program_scope_state"), ("compile_error", "refused")}

# id: (kernel file, build options, accepted (status, fault kind) pairs);
# pairs None: must be ok.
VARIANTS = {
    "good": ("good", "", None),
    "asm_syscall": ("asm_syscall", "", REFUSED),
    "asm_pasted": ("asm_pasted", "", {("compile_error", "refused"),
                                      ("compile_error", "compile_error")}),
    "asm_spliced": ("asm_spliced", "", REFUSED),
    "include_host": ("include_host", "", REFUSED),
    "include_digraph": ("include_digraph", "", REFUSED),
    "include_secret": ("include_secret", "", REFUSED),
    "has_include": ("has_include", "", REFUSED),
    "extern_libc": ("extern_libc", "", {("compile_error", "refused"),
                                        ("compile_error", "compile_error"),
                                        ("crash", "exit"), ("crash", "signal")}),
    "global_cache": ("global_cache", "-cl-std=CL2.0", STATE),
    "static_cache": ("static_cache", "-cl-std=CL2.0", STATE),
    # PoCL honours the FIRST -cl-std: a screen that looks at the last one only
    # would let OpenCL C 2.0 through.
    "global_cache_twostd": ("global_cache", "-cl-std=CL2.0 -cl-std=CL1.2", STATE),
    "fingerprint": ("fingerprint", "", TIMED_WRONG),
    "old_timing_seeds": ("old_timing_seeds", "", TIMED_WRONG),
    "crash_timed_a": ("crash_timed_a", "", TIMED_CRASH),
    "crash_timed_b": ("crash_timed_b", "", TIMED_CRASH),
    "crash_timed_c": ("crash_timed_c", "", TIMED_CRASH),
    "oob_far_after": ("oob_far_after", "", FAR_OOB),
    "oob_far_before": ("oob_far_before", "", FAR_OOB),
    "race_groups": ("race_groups", "", {("incorrect", "nondeterministic"),
                                        ("incorrect", "wrong_values")}),
    "macro_bomb": ("macro_bomb", "", {("timeout", "compile"), ("crash", "memory_limit")}),
}
# What a refusal of the source must name, per variant (case-insensitive regex).
CONSTRUCT = {
    "asm_syscall": r"asm|assembl", "asm_pasted": r"asm|assembl|past|##",
    "asm_spliced": r"asm|assembl|splic", "include_host": r"include",
    "include_digraph": r"include|%:|digraph", "include_secret": r"include",
    "has_include": r"has_include|include",
}
# Kernels that must pass the checks and fail only once timed: if they do not
# pass the checks, the fingerprints are stale and they test nothing.
PASS_CHECKS = ("fingerprint", "old_timing_seeds", "crash_timed_a", "crash_timed_b",
               "crash_timed_c")

check = checks.check


read = checks.read


# ---- evalpod's input generator, to fingerprint the inputs ----

def first_x_bits(seed, index=0, lo=-1.0, hi=1.0):
    """Bits of element 0 of buffer `index` under `seed`: the default init of a
    float input is uniform in [-1, 1], stored as float32."""
    state = (seed * 0x100000001b3 ^ (index + 1) * 0xcbf29ce484222325) & M64
    state = (state + 0x9e3779b97f4a7c15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    z ^= z >> 31
    value = lo + (hi - lo) * ((z >> 11) * (1.0 / 9007199254740992.0))
    return struct.unpack("<I", struct.pack("<f", value))[0]


def old_timing_seeds(seeds):
    """The timing seeds evalpod used to derive from the correctness seeds."""
    out = []
    for k in range(3):
        s = (0x7153a11d + 0x1000 * k) & M64
        for c in seeds:
            s = (s * 31 + c + 1) & M64
        while s in seeds:
            s = (s + 1) & M64
        out.append(s)
    return out


def bits_list(seeds):
    return ", ".join(f"0x{first_x_bits(s):08x}u" for s in seeds)


def source(data, name, secret_path):
    text = read(data, name + ".cl")
    text = text.replace("@CHECK_X0@", bits_list(SEEDS))
    text = text.replace("@KNOWN_X0@", bits_list(SEEDS + old_timing_seeds(SEEDS)))
    return text.replace("@SECRET_PATH@", secret_path)


def make_batch(data, secret_path, only=None):
    variants = [{"id": vid, "source": source(data, name, secret_path), "build_options": opts}
                for vid, (name, opts, _) in VARIANTS.items() if only is None or vid in only]
    return checks.affine_batch("redteam", read(data, "reference.cl"), variants, LIMITS,
                               baseline={"id": "baseline",
                                         "source": read(data, "baseline.cl")},
                               seeds=SEEDS)


def memo_batch(data):
    """The memo attack needs work worth skipping: heavy.cl (y = 2x + 1 after a
    loop) is the reference, the baseline and the honest control, and
    memo_local.cl skips the loop for the work-groups whose inputs it has met
    before, however the machine's load moves them between PoCL's threads."""
    heavy = read(data, "heavy.cl")
    variants = [{"id": "memo_local", "source": read(data, "memo_local.cl")},
                {"id": "heavy_good", "source": heavy.replace("honest control",
                                                             "honest control, again")}]
    batch = checks.affine_batch("redteam-memo", heavy, variants, LIMITS,
                                baseline={"id": "baseline",
                                          "source": heavy.replace("honest control",
                                                                  "baseline")},
                                seeds=SEEDS)
    batch["shapes"] = [{"name": "big", "values": {"n": 32768}},
                       {"name": "odd", "values": {"n": 1000}}]
    return batch


def check_memo(evalpod, data, tmp, env):
    """A kernel that replays answers for inputs it has met is caught by the
    audit on new inputs; the honest programs audited beside it pass theirs."""
    out, rc, _, _ = run(evalpod, memo_batch(data), tmp, "memo", env, 600)
    check(rc == 0, f"memo batch: evalpod exits 0 (got {rc})")
    memo = load(out, "memo_local")
    if memo is not None:
        fault = memo.get("fault") or {}
        got = (memo.get("status"), fault.get("kind"))
        audit = (memo.get("performance") or {}).get("audit")
        check(got == ("invalid", "slower_on_new_inputs"),
              f"memo_local: invalid / slower_on_new_inputs (got {got}: "
              f"{fault.get('message', '')[:300]}; its audit: {audit})")
        check((memo.get("correctness") or {}).get("passed") is True,
              "memo_local: passed the checks (every answer it gives is right)")
        check(fault.get("origin") == "candidate", "memo_local: blamed on the candidate")
        check("36 samples of each kind" in fault.get("message", ""),
              f"memo_local: failed only after every verdict, on 6 pairs of samples to 36, "
              f"said no (got {fault.get('message', '')[:300]})")
        faudit = fault.get("audit") or {}
        fresh = faudit.get("new_inputs_ms") or []
        clean = faudit.get("rounds_fastest_ms")
        check(len(fresh) == 36 and len(faudit.get("timing_sets_ms") or []) == 36
              and faudit.get("passed") is False,
              f"memo_local: the fault carries the audit's 36 pairs of samples (got {faudit})")
        rr = faudit.get("rounds_ratio")
        num = lambda v: isinstance(v, (int, float)) and v > 0
        check(num(clean) and fresh and clean < min(fresh) and num(rr)
              and abs(rr - (min(fresh) - 0.05) / clean) <= 1e-6 * rr,
              f"memo_local: its fastest sample in the rounds, before any new input, is in "
              f"the audit, faster than any on new inputs, and rounds_ratio is the fastest "
              f"on new inputs less 0.05 ms over it (got {clean}, {min(fresh, default=None)}, "
              f"rounds_ratio {rr})")
        # How much the memo gains depends on the host and its load (84 x
        # quiet, 3.9 x in a busy CI run, both on a Xeon guest): the audit must fail
        # it on one of its three rules, whichever the figures break.
        ratio, fastest = faudit.get("ratio"), faudit.get("fastest_ratio")
        check((num(ratio) and ratio > 1.5) or (num(fastest) and fastest > 2.5)
              or (num(rr) and rr > 4),
              f"memo_local: its audit broke one of its rules (mean ratio > 1.5, fastest "
              f"> 2.5, rounds > 4; got {ratio}, {fastest}, {rr})")
    audited = 0
    for pid in ("heavy_good", "baseline"):
        res = load(out, pid)
        if res is None:
            continue
        check(res.get("status") == "ok", f"memo batch: {pid} ok (got {res.get('status')}: "
              f"{(res.get('fault') or {}).get('message', '')[:200]})")
        audit = (res.get("performance") or {}).get("audit")
        if audit is None:
            continue
        audited += 1
        pairs = len(audit.get("new_inputs_ms", []))
        rounds = (res.get("performance") or {}).get("samples_ms") or []
        check(rounds and audit.get("rounds_fastest_ms") == min(rounds),
              f"{pid}: its audit took its fastest sample of the rounds (got "
              f"{audit.get('rounds_fastest_ms')}, rounds {rounds})")
        check(audit.get("passed") is True and 6 <= pairs <= 36
              and pairs == len(audit.get("timing_sets_ms", []))
              and pairs == 3 * audit.get("attempts", 0),
              f"{pid}: its audit passed at a verdict on 6 pairs or more, with samples on new "
              f"inputs and on the timing sets side by side (got {audit})")
    check(audited == 1, f"memo batch: after the cheat failed its audit, the next fastest "
          f"program was audited, and no more once it passed (got {audited})")
    check_seeds(load_summary(out, "memo batch"), "memo batch")


def run(evalpod, batch, tmp, name, env, timeout, extra=()):
    path = os.path.join(tmp, name + ".json")
    out = os.path.join(tmp, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(batch, f)
    try:
        proc = subprocess.run([evalpod, "run", path, "--out", out, *extra], env=env,
                              capture_output=True, text=True, errors="replace",
                              timeout=timeout)
    except subprocess.TimeoutExpired as e:
        check(False, f"{name}: evalpod finishes within {timeout} s")
        return out, None, e.stdout or "", e.stderr or ""
    sys.stderr.write(proc.stderr[-3000:])
    print(proc.stdout)
    return out, proc.returncode, proc.stdout, proc.stderr


def load(out, pid):
    try:
        with open(os.path.join(out, pid + ".json"), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        check(False, f"{pid}: result written and readable ({e})")
        return None


def load_summary(out, what):
    try:
        with open(os.path.join(out, "summary.json"), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        check(False, f"{what}: summary.json written and readable ({e})")
        return {}


def check_honest(res, pid):
    """The control and the baseline: ok, timed, with a speedup."""
    if res is None:
        return
    fault = res.get("fault") or {}
    check(res.get("status") == "ok",
          f"{pid}: ok (got {res.get('status')}: {fault.get('kind')}: "
          f"{fault.get('message', '')[:200]})")
    perf = res.get("performance") or {}
    check((perf.get("stats") or {}).get("n", 0) >= 8,
          f"{pid}: at least min_samples (8) timed samples")
    check(isinstance(perf.get("speedup_vs_reference"), dict)
          and perf["speedup_vs_reference"].get("ratio_of_medians") is not None,
          f"{pid}: speedup_vs_reference present")


def timing_seeds(summary):
    seeds = (summary.get("timing") or {}).get("timing_seeds")
    if seeds is None:
        seeds = summary.get("timing_seeds")
    return seeds


def check_seeds(summary, what):
    seeds = timing_seeds(summary)
    good = (isinstance(seeds, list) and len(seeds) == 5 and len(set(seeds)) == 5
            and all(isinstance(s, int) and not isinstance(s, bool) for s in seeds))
    check(good, f"{what}: the summary records timing_seeds, 5 distinct integers "
          f"(3 rotating sets, 2 audit sets; got {seeds})")
    if not good:
        return None
    check(not set(seeds) & set(SEEDS),
          f"{what}: no timing seed is a correctness seed {SEEDS}")
    check(not set(seeds) & set(old_timing_seeds(SEEDS)),
          f"{what}: the timing seeds are not the old derived (predictable) ones")
    return seeds


# ---- secrets ----

def leak_patterns(secret_token, secret_path):
    """(description, compiled regex) of host contents that must never appear."""
    pats = [("the planted secret token", re.compile(re.escape(secret_token)))]
    try:
        with open("/etc/hostname", encoding="utf-8", errors="replace") as f:
            host = f.read().strip()
    except OSError:
        host = ""
    if len(host) >= 2:
        if len(host) >= 8:
            pats.append((f"the host name {host!r}", re.compile(re.escape(host))))
        else:
            # A short name ("vm") is a substring of too much (vmovaps...):
            # look for it as a word of its own.
            pats.append((f"the host name {host!r} (as a word)",
                         re.compile(r"(?<![A-Za-z0-9_])" + re.escape(host)
                                    + r"(?![A-Za-z0-9_])")))
    pats.append(("'root:' (from /etc/passwd)", re.compile(re.escape("root:"))))
    try:
        with open("/etc/passwd", encoding="utf-8", errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()][:3]
    except OSError:
        lines = []
    if lines and len(lines[0]) >= 8:
        pats.append(("the first line of /etc/passwd", re.compile(re.escape(lines[0]))))
    # A leak through a compiler diagnostic quotes the file's words as
    # identifiers: "use of undeclared identifier 'root'".
    for user in dict.fromkeys(line.split(":")[0] for line in lines):
        if len(user) >= 3:
            pats.append((f"the passwd user name '{user}' quoted as an identifier",
                         re.compile(re.escape(f"'{user}'"))))
    # A diagnostic located in a host file proves that the compiler opened it.
    files = "|".join(re.escape(p) for p in
                     ("/etc/hostname", "/etc/passwd", "/etc/shadow", secret_path))
    pats.append(("a compiler diagnostic inside a host file (FILE:LINE:COL)",
                 re.compile(r"(?:" + files + r"):\d+:\d+")))
    return pats


def output_texts(out):
    for root, _, files in os.walk(out):
        for name in files:
            path = os.path.join(root, name)
            try:
                with open(path, "rb") as f:
                    yield path, f.read().decode("latin-1")
            except OSError:
                continue


def check_secrets(out, stdout, stderr, secret_token, secret_path):
    texts = list(output_texts(out)) + [("evalpod stdout", stdout or ""),
                                       ("evalpod stderr", stderr or "")]
    for what, pat in leak_patterns(secret_token, secret_path):
        hits = [path for path, text in texts if pat.search(text)]
        check(not hits, f"secrets: {what} appears in no output, artifact or log"
                        + (f" (found in {', '.join(hits[:4])})" if hits else ""))


def main():
    evalpod, data = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"))
        token = "evalpod_secret_" + secrets.token_hex(16)
        secret_path = os.path.join(tmp, "secret.txt")
        with open(secret_path, "w", encoding="utf-8") as f:
            f.write(token + "\n")

        # ---- the whole batch ----
        batch = make_batch(data, secret_path)
        out, rc, stdout, stderr = run(evalpod, batch, tmp, "all", env, 1000)
        check(rc == 0, f"evalpod exits 0 (got {rc})")
        results = {}
        for vid, (_, _, pairs) in VARIANTS.items():
            res = load(out, vid)
            if res is None:
                continue
            results[vid] = res
            check(res.get("schema") == "evalpod.result" and res.get("version") == 1,
                  f"{vid}: versioned result document")
            if pairs is None:
                continue
            fault = res.get("fault") or {}
            got = (res.get("status"), fault.get("kind"))
            check(got in pairs,
                  f"{vid}: (status, kind) in {sorted(pairs)} (got {got}: "
                  f"{fault.get('message', '')[:200]})")
            check(fault.get("origin") == "candidate",
                  f"{vid}: blamed on the candidate (got {fault.get('origin')})")
            check(res.get("status") != "ok", f"{vid}: not ok")
            if got == ("compile_error", "refused") and vid in CONSTRUCT:
                # A refusal of the source (not of a build option).
                msg = fault.get("message", "")
                check(re.search(r"\bline\b|:\d+", msg) is not None,
                      f"{vid}: the refusal names the line ({msg[:120]!r})")
                check(re.search(CONSTRUCT[vid], msg, re.I) is not None,
                      f"{vid}: the refusal names the construct (/{CONSTRUCT[vid]}/)")
        for vid in PASS_CHECKS:
            res = results.get(vid)
            if res is not None:
                check((res.get("correctness") or {}).get("passed") is True,
                      f"{vid}: passed the checks (its fingerprints are right), "
                      "failed only once timed")

        # The printed table must not rank a bad kernel ok either.
        for line in (stdout or "").splitlines():
            cols = line.split()
            if len(cols) >= 2 and cols[0] in VARIANTS and cols[0] != "good":
                check(cols[1] != "ok", f"stdout: {cols[0]} is not listed as ok")

        check_honest(results.get("good"), "good")
        base = load(out, "baseline")
        check_honest(base, "baseline")
        if base is not None:
            results["baseline"] = base
        good = results.get("good") or {}
        vs_base = (good.get("performance") or {}).get("speedup_vs_baseline")
        check(isinstance(vs_base, dict), "good: speedup_vs_baseline present")

        infra = sorted(pid for pid, res in results.items()
                       if res.get("status") == "infra_error")
        check(not infra, f"no result is an infra_error (got {infra})")
        summary = load_summary(out, "all")
        sinfra = sorted(r.get("id") for r in summary.get("results", [])
                        if r.get("status") == "infra_error")
        check(not sinfra, f"summary: no infra_error (got {sinfra})")
        check(len(summary.get("results", [])) == len(VARIANTS) + 1,
              "summary: one entry per variant and the baseline")

        sandbox = good.get("sandbox")
        print(f"sandbox: {json.dumps(sandbox, sort_keys=True)}")
        check(isinstance(sandbox, dict) and len(sandbox) > 0,
              "good: the result records the sandbox (a non-empty object)")

        seeds1 = check_seeds(summary, "run 1")
        check_secrets(out, stdout, stderr, token, secret_path)

        # ---- a second run, good and the baseline only: fresh seeds ----
        out2, rc2, _, _ = run(evalpod, make_batch(data, secret_path, only={"good"}),
                              tmp, "again", env, 600)
        check(rc2 == 0, f"second run: evalpod exits 0 (got {rc2})")
        res2 = load(out2, "good")
        if res2 is not None:
            check(res2.get("status") == "ok", f"second run: good ok (got {res2.get('status')})")
        seeds2 = check_seeds(load_summary(out2, "second run"), "run 2")
        if seeds1 is not None and seeds2 is not None:
            check(seeds1 != seeds2,
                  f"the timing seeds differ between two runs of a batch ({seeds1} vs {seeds2})")

        # ---- answers replayed for inputs met before: the audit on new inputs ----
        check_memo(evalpod, data, tmp, env)

        # ---- a session's reference cache: cold, then warm; the cheats still fail ----
        cache = os.path.join(tmp, "session", "evalpod-cache")
        run(evalpod, make_batch(data, secret_path, only={"good"}), tmp, "cold", env, 600,
            ("--ref-cache", cache))
        out3, rc3, stdout3, stderr3 = run(evalpod, batch, tmp, "warm", env, 1000,
                                          ("--ref-cache", cache))
        check(rc3 == 0, f"warm cache: evalpod exits 0 (got {rc3})")
        summary3 = load_summary(out3, "warm cache")
        check((summary3.get("reference") or {}).get("outputs_cached") is True,
              "warm cache: the reference's outputs come from the cache")
        check_seeds(summary3, "warm cache")
        for vid, (_, _, pairs) in VARIANTS.items():
            res = load(out3, vid)
            if res is None:
                continue
            if pairs is None:
                check_honest(res, vid + " (warm cache)")
                continue
            fault = res.get("fault") or {}
            got = (res.get("status"), fault.get("kind"))
            check(got in pairs, f"warm cache: {vid}: (status, kind) in {sorted(pairs)} "
                  f"(got {got})")
        check_honest(load(out3, "baseline"), "baseline (warm cache)")
        check_secrets(out3, stdout3, stderr3, token, secret_path)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
