#!/usr/bin/env bash
# bench/harness.sh - figures for evalpod's harness (not a test: it prints).
#
#  1. 16 matmul variants at 512^3 (plus the baseline and the reference) in one
#     batch, run twice side by side: as a lone batch (no cache), and as a
#     kctl session's later round runs it (--ref-cache warmed by an earlier
#     batch of the same problem: no reference worker).  For each: evaluations
#     per hour, harness overhead =
#       wall time / (sum of compile times + sum of timed kernel time)
#     where compile time = clBuildProgram + PoCL's compile at first launch for
#     every program, and timed kernel time = every timed run of every program;
#     and the wall per evaluation over Kernel Tuner's estimated cost for the
#     same variants, from this run's own figures:
#       the build in a warm process           (compile once, as one long-lived
#                                              tuning process does: the
#                                              front-end worker's own build
#                                              time, compile.front_end_build_ms;
#                                              for a program its check compiled,
#                                              the median of those)
#       + PoCL's kernel-library parse / N     (paid once per process: the
#                                              median build_ms of the programs
#                                              their checks compiled, or the
#                                              front end's first build when
#                                              every check adopted one, less the
#                                              warm build, shared over the batch)
#       + first_run_host_ms at the timed      (PoCL's compile at the first
#         shape                               launch, plus that launch's run)
#       + 8 x median_ms                       (with it, a warm-up, 7 timed runs
#                                              and the run whose answer is
#                                              checked: 9 runs)
#     Without any front-end build (other platforms, or EVALPOD_NO_FRONTEND=1)
#     it falls back on build_ms, which then holds the parse for every program.
#     PoCL compiles a kernel at its first launch inside the command, so the
#     event's span holds the compile and only the host time of that first
#     run counts it; the timed shape is checked first (make_batch.py), so its
#     first run pays the compile Kernel Tuner pays at its one shape.
#  2. One variant timed in ten separate evalpod runs: the spread (CV) of its
#     median across runs, next to the spread of its speedup over the
#     reference measured side by side in each run.
#
# Device peaks are measured once beforehand (evalpod caches them per device),
# so they are not in the batch's wall time.  Set SIZE, VARIANTS, REPEATS to
# change the work.
set -euo pipefail
cd "$(dirname "$0")/.."

size=${SIZE:-512}
variants=${VARIANTS:-16}
repeats=${REPEATS:-10}
if [ ! -x build/evalpod/evalpod ]; then
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build -j"$(nproc)" --target evalpod
fi
evalpod=build/evalpod/evalpod
tmp=$(mktemp -d "${TMPDIR:-/tmp}/evalpod-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

$evalpod devices --measure >/dev/null
python3 examples/matmul/make_batch.py --size "$size" --variants "$variants" >"$tmp/batch.json"
python3 examples/matmul/make_batch.py --size "$size" --variants 1 >"$tmp/one.json"
# An earlier round of the session: fills the reference cache.
$evalpod run "$tmp/one.json" --out "$tmp/warm" --ref-cache "$tmp/cache" >/dev/null
start=$(date +%s.%N)
$evalpod run "$tmp/batch.json" --out "$tmp/out" >"$tmp/table.txt"
mid=$(date +%s.%N)
$evalpod run "$tmp/batch.json" --out "$tmp/outc" --ref-cache "$tmp/cache" >/dev/null
end=$(date +%s.%N)
cat "$tmp/table.txt"

for i in $(seq 1 "$repeats"); do
	$evalpod run "$tmp/one.json" --out "$tmp/rep$i" >/dev/null
done

python3 - "$tmp" "$start" "$mid" "$end" "$repeats" <<'PY'
import glob, json, os, statistics, sys

tmp, start, mid, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
repeats = int(sys.argv[5])


def report(out, wall_s, what):
    summary = json.load(open(os.path.join(out, "summary.json")))
    results = [json.load(open(p)) for p in glob.glob(os.path.join(out, "*.json"))
               if not p.endswith("summary.json")]
    compile_ms = 0.0
    timed_ms = 0.0
    kt_ms = []
    nshapes = 0
    for r in results:
        c = r.get("compile", {})
        compile_ms += c.get("build_ms", 0) + c.get("first_launch_ms", 0)
        perf = r.get("performance", {})
        timed_ms += perf.get("timed_ms", 0)
        nshapes = max(nshapes, len((r.get("correctness") or {}).get("shapes") or []))
        if r["role"] == "variant" and r["status"] == "ok":
            shapes = (r.get("correctness") or {}).get("shapes") or []
            first = ((shapes[0].get("seeds") or [{}])[0].get("first_run_host_ms")
                     if shapes and shapes[0].get("shape") == perf.get("shape") else None)
            kt_ms.append((c, perf, first))
    ref = summary["reference"]
    compile_ms += ref.get("compile", {}).get("build_ms", 0) if ref.get("compile") else 0
    timed_ms += (ref.get("performance") or {}).get("timed_ms", 0)
    evaluated = sum(1 for r in results if r["role"] == "variant")
    ok = sum(1 for r in results if r["status"] == "ok")
    # The build a single warm process pays per configuration (see the top).
    warm = [c["front_end_build_ms"] for c, p, first in kt_ms if "front_end_build_ms" in c]
    cold = [c["build_ms"] for c, p, first in kt_ms if "front_end_build_ms" not in c]
    warm_ms = statistics.median(warm) if warm else None
    # Where every check adopted its build (the front end started beside
    # the reference worker), the front end's first build holds the parse.
    first_ms = statistics.median(cold) if cold else max(warm) if warm else 0.0
    parse_ms = max(0.0, first_ms - warm_ms) / len(kt_ms) if warm else 0.0

    def build(c):
        if warm_ms is None:
            return c["build_ms"]
        return c.get("front_end_build_ms", warm_ms) + parse_ms

    # Without the timed shape's first run (it is not checked first), the
    # first-launch overheads shared out over the shapes instead.
    kt = [build(c) + (first + 8 * p["median_ms"] if first is not None else
                      c["first_launch_ms"] / max(nshapes, 1) + 9 * p["median_ms"])
          for c, p, first in kt_ms]
    kt_each_s = statistics.mean(kt) / 1e3 if kt else float("nan")
    print()
    print(f"batch, {what}: {evaluated} variants + baseline + reference, {ok} ok, "
          f"on {summary['device']['name']}")
    print(f"  reference outputs from cache   {str(ref.get('outputs_cached', False)):>8}")
    print(f"  wall time                      {wall_s:8.2f} s")
    print(f"  sum of compile times           {compile_ms / 1e3:8.2f} s")
    print(f"  sum of timed kernel time       {timed_ms / 1e3:8.2f} s")
    print(f"  harness overhead               {wall_s / ((compile_ms + timed_ms) / 1e3):8.2f}  (goal <= 1.25)")
    print(f"  evaluations per hour           {evaluated / wall_s * 3600:8.0f}")
    print(f"  wall per evaluation            {wall_s / evaluated:8.2f} s")
    print(f"  Kernel Tuner estimate per eval {kt_each_s:8.2f} s  (compile once, one shape, 9 runs)")
    if warm_ms is not None:
        print(f"    of which the warm build      {warm_ms / 1e3:8.2f} s  "
              f"(median of {len(warm)} front-end builds; library parse {parse_ms / 1e3:.3f} s each)")
    else:
        print("    (no front-end build times: the estimate uses each check's own build)")
    print(f"  evalpod / Kernel Tuner         {wall_s / evaluated / kt_each_s:8.2f}  (goal <= 1.5)")
    return wall_s


plain = report(os.path.join(tmp, "out"), mid - start, "lone batch, no cache")
cached = report(os.path.join(tmp, "outc"), end - mid, "a session's later round (--ref-cache)")
print(f"\nwall with the cache / without, side by side: {cached / plain:.2f}")

medians, speedups, cvs = [], [], []
for i in range(1, repeats + 1):
    for p in glob.glob(os.path.join(tmp, f"rep{i}", "v*.json")):
        perf = json.load(open(p))["performance"]
        medians.append(perf["median_ms"])
        speedups.append(perf["speedup_vs_reference"]["ratio_of_medians"])
        cvs.append(perf["stats"]["cv"])
def cv(x):
    return statistics.stdev(x) / statistics.mean(x) if len(x) > 1 else 0.0
print(f"one variant, {len(medians)} separate runs:")
print(f"  median kernel time, CV across runs     {cv(medians) * 100:6.1f} %  "
      f"(range {min(medians):.3f} .. {max(medians):.3f} ms)")
print(f"  speedup vs reference, CV across runs   {cv(speedups) * 100:6.1f} %  "
      f"(range {min(speedups):.2f} .. {max(speedups):.2f}x)")
print(f"  within-run sample CV, median of runs   {statistics.median(cvs) * 100:6.1f} %")
PY
