#!/usr/bin/env bash
# bench/harness.sh - figures for evalpod's harness (not a test: it prints).
#
#  1. 16 matmul variants at 512^3 (plus the baseline and the reference) in one
#     batch: evaluations per hour, and harness overhead =
#       wall time / (sum of compile times + sum of timed kernel time)
#     where compile time = clBuildProgram + PoCL's compile at first launch for
#     every program, and timed kernel time = every timed run of every program.
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
start=$(date +%s.%N)
$evalpod run "$tmp/batch.json" --out "$tmp/out" >"$tmp/table.txt"
end=$(date +%s.%N)
cat "$tmp/table.txt"

python3 examples/matmul/make_batch.py --size "$size" --variants 1 >"$tmp/one.json"
for i in $(seq 1 "$repeats"); do
	$evalpod run "$tmp/one.json" --out "$tmp/rep$i" >/dev/null
done

python3 - "$tmp" "$start" "$end" "$repeats" <<'PY'
import glob, json, os, statistics, sys

tmp, start, end, repeats = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
out = os.path.join(tmp, "out")
summary = json.load(open(os.path.join(out, "summary.json")))
results = [json.load(open(p)) for p in glob.glob(os.path.join(out, "*.json"))
           if not p.endswith("summary.json")]
wall_s = end - start
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
print(f"batch: {evaluated} variants + baseline + reference, {ok} ok, on {summary['device']['name']}")
print(f"  wall time                      {wall_s:8.2f} s")
print(f"  sum of compile times           {compile_ms / 1e3:8.2f} s")
print(f"  sum of timed kernel time       {timed_ms / 1e3:8.2f} s")
print(f"  harness overhead               {wall_s / ((compile_ms + timed_ms) / 1e3):8.2f}  (goal <= 1.25)")
print(f"  evaluations per hour           {evaluated / wall_s * 3600:8.0f}")

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
