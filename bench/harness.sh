#!/usr/bin/env bash
# bench/harness.sh - figures for evalpod's harness (not a test: it prints).
#
#  1. 16 matmul variants at 512^3 (plus the baseline and the reference) in one
#     batch, run twice side by side: as a lone batch (no cache), and as a
#     kctl session's later round runs it (--ref-cache warmed by an earlier
#     batch of the same problem and baseline: no reference worker, and the
#     reference not timed, the baseline's anchor carrying its speed).  For each: evaluations
#     per hour, harness overhead =
#       wall time / (sum of compile times + sum of timed kernel time)
#     where compile time = clBuildProgram + PoCL's compile at first launch for
#     every program, and timed kernel time = every timed run of every program;
#     and the wall per evaluation over what one long-lived tuning process
#     (Kernel Tuner's way) pays per configuration on the same variants,
#     measured by build/bench/kt_loop (bench/kt_loop.c: one process builds
#     each variant and runs its launch plan 9 times at the timed shape, on
#     buffers made once; no checks, no flush, no sandbox, no Python, so it is
#     a floor under a real tuner's cost), run once before the two batches and
#     once after them, each with an empty PoCL cache; the mean of the two.
#     (Until 2026-11-26 this was estimated from the batch's own figures; its
#     compile times were taken under the batch's own contention, two check
#     workers and the front end on two cores: 0.73-0.77 s for a later
#     round, against kt_loop's 0.54-0.58 s measured within the hour.)
#     Then the median check worker's time by stage (stages_ms in the results).
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
if [ ! -x build/evalpod/evalpod ] || [ ! -x build/bench/kt_loop ]; then
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build -j"$(nproc)" --target evalpod kt_loop
fi
evalpod=build/evalpod/evalpod
tmp=$(mktemp -d "${TMPDIR:-/tmp}/evalpod-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

$evalpod devices --measure >/dev/null
python3 examples/matmul/make_batch.py --size "$size" --variants "$variants" >"$tmp/batch.json"
python3 examples/matmul/make_batch.py --size "$size" --variants 1 >"$tmp/one.json"
# An earlier round of the session: fills the reference cache.
$evalpod run "$tmp/one.json" --out "$tmp/warm" --ref-cache "$tmp/cache" >/dev/null
# One tuning process's cost per configuration, before and after the batches.
kt_loop() {
	mkdir "$tmp/pocl-$1"
	POCL_CACHE_DIR="$tmp/pocl-$1" build/bench/kt_loop "$tmp/batch.json" >"$tmp/kt-$1.txt"
}
kt_loop before
start=$(date +%s.%N)
$evalpod run "$tmp/batch.json" --out "$tmp/out" >"$tmp/table.txt"
mid=$(date +%s.%N)
$evalpod run "$tmp/batch.json" --out "$tmp/outc" --ref-cache "$tmp/cache" >/dev/null
end=$(date +%s.%N)
kt_loop after
cat "$tmp/table.txt"

for i in $(seq 1 "$repeats"); do
	$evalpod run "$tmp/one.json" --out "$tmp/rep$i" >/dev/null
done

python3 - "$tmp" "$start" "$mid" "$end" "$repeats" <<'PY'
import glob, json, os, statistics, sys

tmp, start, mid, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
repeats = int(sys.argv[5])


def kt_loop_s(name):
    """kt_loop's mean cost per configuration, in seconds."""
    last = open(os.path.join(tmp, f"kt-{name}.txt")).read().splitlines()[-1]
    return float(last.split("; ")[1].split(" s per")[0])


kt_runs = [kt_loop_s("before"), kt_loop_s("after")]
kt_each_s = statistics.mean(kt_runs)


def report(out, wall_s, what):
    summary = json.load(open(os.path.join(out, "summary.json")))
    results = [json.load(open(p)) for p in glob.glob(os.path.join(out, "*.json"))
               if not p.endswith("summary.json")]
    compile_ms = 0.0
    timed_ms = 0.0
    for r in results:
        c = r.get("compile", {})
        compile_ms += c.get("build_ms", 0) + c.get("first_launch_ms", 0)
        timed_ms += r.get("performance", {}).get("timed_ms", 0)
    ref = summary["reference"]
    compile_ms += ref.get("compile", {}).get("build_ms", 0) if ref.get("compile") else 0
    timed_ms += (ref.get("performance") or {}).get("timed_ms", 0)
    evaluated = sum(1 for r in results if r["role"] == "variant")
    ok = sum(1 for r in results if r["status"] == "ok")
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
    print(f"  one tuning process (kt_loop)   {kt_each_s:8.2f} s per configuration "
          f"(measured {kt_runs[0]:.3f} before, {kt_runs[1]:.3f} after)")
    print(f"  evalpod / tuning process       {wall_s / evaluated / kt_each_s:8.2f}  (goal <= 1.5)")
    # Where a check worker's time goes (stages_ms, docs/result.md): the
    # median of each stage over the programs checked to the end, and what
    # is left of check_wall_ms (the process's start and exit).
    full = [r for r in results if set(r.get("stages_ms") or {}) >= {"open", "ir"}]
    if full:
        parts = {k: statistics.median(r["stages_ms"][k] for r in full)
                 for k in ("open", "compile", "correctness", "ir")}
        parts["start and exit"] = statistics.median(
            r["check_wall_ms"] - sum(r["stages_ms"].values()) for r in full)
        print(f"  a check worker, median ms      " + ", ".join(
            f"{k} {v:.0f}" for k, v in parts.items()) +
            f" (of {statistics.median(r['check_wall_ms'] for r in full):.0f}; "
            f"{len(full)} programs)")
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
