#!/usr/bin/env python3
"""kctl eval end to end on the small affine problem: exit statuses, the
Markdown summary and the annotations against golden files, GitHub's step
files, -o json, usage and infrastructure failures.

usage: kctl_eval.py KCTL EVALPOD DATA_DIR GOLDEN_DIR

DATA_DIR holds the affine spec (tests/data/kctl); GOLDEN_DIR the expected
summaries and annotation lines (tests/data/eval).  Figures that depend on
the machine (times, GFLOP/s, ratios), the session id and the device name
are replaced by placeholders before the comparison; everything else must
match byte for byte.  With UPDATE_GOLDEN=1 the goldens are rewritten.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

failures = []
passes = []

SPEC_FILES = ("affine.cl", "affine_ref.cl", "affine.yaml")


def check(cond, what):
    (passes if cond else failures).append(what)
    print(("ok   " if cond else "FAIL ") + what)


class Scenario:
    def __init__(self, kctl, evalpod, data):
        self.kctl = kctl
        self.tmp = tempfile.mkdtemp(prefix="kctl-eval-")
        for name in SPEC_FILES:
            shutil.copy(os.path.join(data, name), self.tmp)
        with open(os.path.join(self.tmp, "affine.cl"), encoding="utf-8") as f:
            self.template = f.read()
        self.env = dict(os.environ, KCTL_STATE_DIR=os.path.join(self.tmp, "state"),
                        XDG_CACHE_HOME=os.path.join(self.tmp, "cache"), KCTL_EVALPOD=evalpod)
        for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT",
                     "GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"):
            self.env.pop(name, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def kernel(self, name, old=None, new=None):
        """A kernel file: the template with old replaced by new (once)."""
        text = self.template
        if old is not None:
            if text.count(old) != 1:
                raise RuntimeError(f"affine.cl does not hold {old!r} once")
            text = text.replace(old, new)
        with open(os.path.join(self.tmp, name), "w", encoding="utf-8") as f:
            f.write(text)
        return name

    def run(self, args, github=False):
        env = dict(self.env)
        if github:
            env.update(GITHUB_ACTIONS="true",
                       GITHUB_STEP_SUMMARY=os.path.join(self.tmp, "step.md"),
                       GITHUB_OUTPUT=os.path.join(self.tmp, "output.txt"))
        return subprocess.run([self.kctl, "eval", "affine.yaml"] + args, cwd=self.tmp,
                              env=env, capture_output=True, text=True, timeout=600)

    def read(self, name):
        try:
            with open(os.path.join(self.tmp, name), encoding="utf-8") as f:
                return f.read()
        except OSError:
            return None


def normalize(text):
    """Machine-dependent parts replaced: session ids, the device, figures,
    counts of samples, where the worst element lies, and the bottleneck
    class (which depends on the device's peaks)."""
    text = re.sub(r"affine-\d{8}-\d{6}-[0-9a-f]{6}", "SESSION", text)
    text = re.sub(r"device .*? \(.*?\), session", "device DEVICE, session", text)
    text = re.sub(r"\d+ paired samples", "N paired samples", text)
    text = re.sub(r"worst at index \d+", "worst at index N", text)
    text = re.sub(r"-?\d+\.\d+(e[-+]\d+)?", "N", text)
    rows = []
    for line in text.split("\n"):
        cells = line.split(" | ")
        if line.startswith("| ") and len(cells) == 8 and cells[6] not in ("-", "bottleneck"):
            cells[6] = "BOTTLENECK"
        rows.append(" | ".join(cells))
    return "\n".join(rows)


def golden(goldens, name, got):
    path = os.path.join(goldens, name)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        with open(path, "w", encoding="utf-8") as f:
            f.write(got)
    with open(path, encoding="utf-8") as f:
        want = f.read()
    if got != want:
        print(f"--- {name}: want\n{want}--- got\n{got}---")
    return got == want


def outputs(text):
    """$GITHUB_OUTPUT's NAME<<DELIM blocks as {name: value}."""
    out, lines, i = {}, (text or "").split("\n"), 0
    while i < len(lines):
        m = re.fullmatch(r"(\w+)<<(ghadelimiter_[0-9a-f]{16})", lines[i])
        if not m or i + 2 >= len(lines) or lines[i + 2] != m.group(2):
            return None
        out[m.group(1)] = lines[i + 1]
        i += 3
        if i == len(lines) - 1 and lines[i] == "":
            break
    return out


BAD_OP = ("fma(x[base + j], 2.0f, 1.0f)", "fma(x[base + j], 2.0f, 2.0f)")
BROKEN = ("int base = get_global_id(0) * U;", "int base = get_global_id(0) * U; int zz = 0")
SLOW = ("y[base + j] = fma(x[base + j], 2.0f, 1.0f);",
        "{ float a = x[base + j]; for (int r = 0; r < 400; r++) a = fma(a, 1.0000001f, 0.5f) "
        "- 0.5f; y[base + j] = fma(x[base + j], 2.0f, 1.0f) + (a == 12345.0f ? 1.0f : 0.0f); }")


def failing_kernels(kctl, evalpod, data, goldens):
    with Scenario(kctl, evalpod, data) as sc:
        same = sc.kernel("same.cl")
        wrong = sc.kernel("wrong.cl", *BAD_OP)
        broken = sc.kernel("broken.cl", *BROKEN)
        res = sc.run(["--kernel", same, "--kernel", wrong, "--kernel", broken], github=True)
        check(res.returncode == 1, f"a wrong and a broken kernel: exit 1 (got {res.returncode})")
        summary = sc.read("kctl-eval/summary.md")
        check(summary is not None and golden(goldens, "incorrect.md", normalize(summary)),
              "the summary of a wrong, a broken and an unchanged kernel matches its golden")
        step = sc.read("step.md")
        check(step == summary + "\n", "$GITHUB_STEP_SUMMARY gets the summary appended")
        notes = "".join(l + "\n" for l in res.stdout.splitlines() if l.startswith("::"))
        check(golden(goldens, "incorrect.annotations", normalize(notes)),
              "annotations: the compile error at its line and column, the wrong answer "
              "at file level, nothing for the unchanged kernel")
        out = outputs(sc.read("output.txt"))
        check(out is not None and out.get("verdict") == "incorrect" and out.get("kernels") == "3"
              and out.get("summary") == "kctl-eval/summary.md",
              f"$GITHUB_OUTPUT: verdict, kernels and summary as delimited values ({out})")
        table = res.stdout
        check("same as baseline" in table and "verdict: incorrect: 2 of 3 kernels failed"
              in table, "the table names the unchanged kernel and the verdict")
        check(re.search(r"^broken\.cl: compile_error: .*broken\.cl:11:45: ", table, re.M)
              and "program.cl" not in table and "program.cl" not in (summary or ""),
              "the compile error names the kernel's file, not evalpod's program.cl")
        # the session is an evaluation: nothing to resume
        sid = re.search(r"affine-\d{8}-\d{6}-[0-9a-f]{6}", res.stderr)
        resumed = subprocess.run([kctl, "resume", sid.group(0) if sid else "none"], cwd=sc.tmp,
                                 env=sc.env, capture_output=True, text=True, timeout=60)
        check(resumed.returncode == 1 and "is an evaluation (kctl eval)" in resumed.stderr,
              f"kctl resume of an evaluation is refused ({resumed.returncode}: "
              f"{resumed.stderr.strip()[-120:]})")


def regression(kctl, evalpod, data, goldens):
    with Scenario(kctl, evalpod, data) as sc:
        slow = sc.kernel("slow.cl", *SLOW)
        res = sc.run(["--kernel", slow, "-o", "json"], github=True)
        check(res.returncode == 2, f"a kernel 100x slower: exit 2 (got {res.returncode})")
        try:
            doc = json.loads(res.stdout)
        except ValueError:
            doc = {}
        k = (doc.get("kernels") or [{}])[0]
        sb = k.get("speedup_vs_baseline") or {}
        check(doc.get("schema") == "kctl.eval" and doc.get("verdict") == "regression"
              and doc.get("exit_status") == 2 and k.get("regression") is True
              and 0 < sb.get("median", 1) < 0.2 and sb.get("hi", 1) < 0.2
              and sb.get("pairs", 0) >= 6,
              f"-o json: the regression with its paired speedup and interval ({sb})")
        notes = "".join(l + "\n" for l in res.stderr.splitlines() if l.startswith("::"))
        check(golden(goldens, "regression.annotations", normalize(notes)),
              "with -o json the annotations go to stderr; a regression's names its interval")
        summary = sc.read("kctl-eval/summary.md")
        check(summary is not None and golden(goldens, "regression.md", normalize(summary)),
              "the summary of a regression matches its golden")


def per_round(doc):
    """{timing round: sample ms} of a result document."""
    perf = doc.get("performance") or {}
    return dict(zip(perf.get("rounds") or [], perf.get("samples_ms") or []))


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def several_passes(kctl, evalpod, data, goldens):
    with Scenario(kctl, evalpod, data) as sc:
        for bad in ("0", "11", "two"):
            res = sc.run(["--passes", bad])
            check(res.returncode == 64 and "--passes" in res.stderr,
                  f"--passes {bad}: exit 64, named ({res.returncode})")
        slow = sc.kernel("slow.cl", *SLOW)
        # the baseline's own source as a second kernel: no program more,
        # but a pair of kernels for the runs to judge against each other
        same = sc.kernel("same.cl")
        res = sc.run(["--kernel", slow, "--kernel", same, "--passes", "2", "-o", "json"])
        check(res.returncode == 2, f"a kernel 100x slower over 2 runs: exit 2 "
              f"(got {res.returncode}: {res.stderr.strip()[-200:]})")
        try:
            doc = json.loads(res.stdout)
        except ValueError:
            doc = {}
        k = (doc.get("kernels") or [{}])[0]
        sb, by = k.get("speedup_vs_baseline") or {}, k.get("speedup_by_pass") or []
        check(doc.get("passes") == 2 and len(by) == 2 and k.get("across_passes") == "slower"
              and all(0 < b.get("median", 1) < 0.2 and b.get("hi", 1) < 0.2 for b in by),
              f"-o json: 2 passes, each run's speedup far below 1, slower over the runs "
              f"({doc.get('passes')}, {by}, {k.get('across_passes')})")
        # the pooled speedup is the median of both runs' per-round ratios,
        # each run's ratios taken within that run only
        ratios, own, pair_own, run_ms = [], [], [], {"baseline": [], "kernel-1": []}
        for r in (0, 1):
            got = {}
            for name in ("baseline", "kernel-1"):
                for path in glob.glob(os.path.join(sc.tmp, "kctl-eval", "*", "rounds",
                                                   f"r{r:03d}", "results", name + ".json")):
                    with open(path, encoding="utf-8") as f:
                        rdoc = json.load(f)
                    got[name] = per_round(rdoc)
                    run_ms[name].append((rdoc.get("performance") or {}).get("median_ms"))
            b, c = got.get("baseline", {}), got.get("kernel-1", {})
            mine = [b[x] / c[x] for x in sorted(b.keys() & c.keys())]
            own.append(median(mine) if mine else None)
            ratios += mine
            theirs = [c[x] / b[x] for x in sorted(b.keys() & c.keys())]
            pair_own.append(median(theirs) if theirs else None)
        check(ratios and abs(median(ratios) - sb.get("median", 0)) < 1e-9
              and sb.get("pairs") == len(ratios)
              and all(o is not None and abs(o - b.get("median", 0)) < 1e-9
                      for o, b in zip(own, by)),
              f"the pooled median ({sb.get('median')}) and each run's ({by}) recomputed from "
              f"the two rounds' result documents ({len(ratios)} pairs)")
        # the two kernels judged against each other: same.cl (the baseline's
        # program) over slow.cl, run by run from the same documents
        pairs = doc.get("pairs") or []
        pby = (pairs or [{}])[0].get("speedup_by_pass") or []
        check(len(pairs) == 1 and pairs[0].get("a") == slow and pairs[0].get("b") == same
              and pairs[0].get("across_passes") == "faster" and len(pby) == 2
              and all(o is not None and o > 5 and abs(o / q.get("median", 1) - 1) < 1e-6
                      for o, q in zip(pair_own, pby)),
              f"pairs: same.cl over slow.cl, faster in each run and over the runs "
              f"({pairs}, recomputed {pair_own})")
        # each program's figures are its faster run's (the lower middle of two)
        for name, prog in (("baseline", doc.get("baseline") or {}), ("kernel-1", k)):
            ms = run_ms[name]
            check(len(ms) == 2 and None not in ms and prog.get("median_ms") == min(ms),
                  f"{name}: median_ms is its faster run's ({prog.get('median_ms')}, runs {ms})")
        summary = sc.read("kctl-eval/summary.md") or ""
        check("2 evalpod runs" in summary and "over the runs: slower" in summary,
              "the summary says how many runs and what they say together")
        check(re.search(r"^- same\.cl over slow\.cl: .*: faster$", summary, re.M) is not None,
              "the summary judges the two kernels against each other")


def passing(kctl, evalpod, data, goldens):
    with Scenario(kctl, evalpod, data) as sc:
        # the same code, written differently: as fast within any sane noise
        fine = sc.kernel("fine.cl", "// y = 2x + 1", "// y = 1 + 2x, the same kernel")
        res = sc.run(["--kernel", fine, "--threshold", "50"], github=True)
        check(res.returncode == 0, f"an equally fast correct kernel: exit 0 ({res.returncode}: "
              f"{res.stderr.strip()[-200:]})")
        out = outputs(sc.read("output.txt"))
        check(out is not None and out.get("verdict") == "pass"
              and re.fullmatch(r"\d+\.\d{4}", out.get("worst_speedup", ""))
              and re.fullmatch(r"\d+\.\d{2}", out.get("best_gflops", "")),
              f"$GITHUB_OUTPUT: pass with the figures ({out})")
        check(not [l for l in res.stdout.splitlines() if l.startswith("::")],
              "no annotation for a passing kernel")
        # a kernel that sets a tunable above the template's guarded default, as
        # kctl's best.cl does, launches with its own value: global = n / 4.  Its
        # strided loop may well be slower on PoCL (it was by more than half once,
        # on a busy machine): what is checked is the launch, so the largest
        # allowed slowdown keeps speed out of the verdict
        with open(os.path.join(sc.tmp, "best.cl"), "w", encoding="utf-8") as f:
            f.write("#define U 4\n" + sc.template)
        res = sc.run(["--kernel", "best.cl", "--threshold", "99", "--out", "best-out"])
        got = None
        for path in glob.glob(os.path.join(sc.tmp, "best-out", "*", "rounds", "r000",
                                           "results", "kernel-1.json")):
            with open(path, encoding="utf-8") as f:
                got = json.load(f)["performance"]["launch"][0]["global"]
        check(res.returncode == 0 and got == [262144 // 4],
              f"#define U 4 above the guarded default: launched over n / 4 work-items "
              f"(exit {res.returncode}, global {got})")
        # a broken baseline (the target branch's kernel) does not fail the fix
        wrong = sc.kernel("wrong.cl", *BAD_OP)
        res = sc.run(["--kernel", fine, "--baseline", wrong])
        summary = sc.read("kctl-eval/summary.md") or ""
        check(res.returncode == 0 and "The baseline failed its own checks" in summary
              and "baseline (wrong.cl): incorrect" in res.stdout,
              f"a correct kernel against a wrong baseline: exit 0, the baseline's failure "
              f"said ({res.returncode})")


def usage_and_infra(kctl, evalpod, data, goldens):
    with Scenario(kctl, evalpod, data) as sc:
        res = sc.run(["--threshold", "five"])
        check(res.returncode == 64 and "--threshold" in res.stderr,
              f"a bad --threshold: exit 64 ({res.returncode})")
        res = sc.run(["--kernel", "missing.cl"])
        check(res.returncode == 64 and "missing.cl" in res.stderr,
              f"a kernel file that is not there: exit 64, named ({res.returncode})")
        empty = os.path.join(sc.tmp, "empty.cl")
        open(empty, "w").close()
        res = sc.run(["--kernel", "empty.cl"])
        check(res.returncode == 64 and "'empty.cl' is empty" in res.stderr,
              f"an empty kernel file: exit 64 ({res.returncode}: {res.stderr.strip()})")
        res = subprocess.run([kctl, "eval", "nothere.yaml"], cwd=sc.tmp, env=sc.env,
                             capture_output=True, text=True, timeout=60)
        check(res.returncode == 64 and "nothere.yaml" in res.stderr,
              f"a spec that is not there: exit 64 ({res.returncode})")
        res = subprocess.run([kctl, "eval"], cwd=sc.tmp, env=sc.env, capture_output=True,
                             text=True, timeout=60)
        check(res.returncode == 64 and "usage: kctl eval" in res.stderr,
              f"no spec: usage, exit 64 ({res.returncode})")
        env = dict(sc.env, KCTL_EVALPOD=os.path.join(sc.tmp, "no-evalpod"))
        res = subprocess.run([kctl, "eval", "affine.yaml"], cwd=sc.tmp, env=env,
                             capture_output=True, text=True, timeout=60)
        check(res.returncode == 3, f"no evalpod: exit 3, infrastructure ({res.returncode}: "
              f"{res.stderr.strip()[-160:]})")


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    kctl, evalpod, data, goldens = (os.path.abspath(a) for a in sys.argv[1:])
    for fn in (usage_and_infra, failing_kernels, regression, passing, several_passes):
        try:
            fn(kctl, evalpod, data, goldens)
        except Exception as e:  # a scenario that breaks is a failure, not a crash
            check(False, f"{fn.__name__}: {type(e).__name__}: {e}")
    print(f"{len(passes)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
