#!/usr/bin/env bash
# bench/sandbox.sh - what the sandbox and the judge cost (not a test: it prints).
#
# Builds evalpod at BASE (default: the last commit before the sandbox, the
# judge in the parent and the source screen) next to the working tree's,
# then runs the same matmul batch (VARIANTS variants at SIZE^3, plus the
# baseline and the reference) with each binary in turn, ROUNDS times,
# alternating, so both see the same machine.  Prints each run's wall time,
# the median evaluations per hour of each binary and the overhead:
#   1 - (evaluations/hour with the sandbox) / (evaluations/hour without).
set -euo pipefail
cd "$(dirname "$0")/.."

base=${BASE:-4c176a0}
size=${SIZE:-512}
variants=${VARIANTS:-8}
rounds=${ROUNDS:-3}
new=${BUILD_DIR:-build}/evalpod/evalpod
cache=${XDG_CACHE_HOME:-$HOME/.cache}/kctl/bench-sandbox-$base
if [ ! -x "$new" ]; then
	cmake -S . -B "${BUILD_DIR:-build}" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build "${BUILD_DIR:-build}" -j"$(nproc)" --target evalpod >/dev/null
fi
if [ ! -x "$cache/build/evalpod/evalpod" ]; then
	rm -rf "$cache"
	mkdir -p "$cache"
	git archive "$base" | tar -x -C "$cache"
	cmake -S "$cache" -B "$cache/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF >/dev/null
	cmake --build "$cache/build" -j"$(nproc)" --target evalpod >/dev/null
fi
old=$cache/build/evalpod/evalpod
tmp=$(mktemp -d "${TMPDIR:-/tmp}/evalpod-sandbox.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

python3 examples/matmul/make_batch.py --size "$size" --variants "$variants" >"$tmp/batch.json"
for r in $(seq 1 "$rounds"); do
	for which in old new; do
		bin=$old
		[ "$which" = new ] && bin=$new
		start=$(date +%s.%N)
		"$bin" run "$tmp/batch.json" --out "$tmp/$which-$r" >/dev/null 2>"$tmp/$which-$r.log"
		end=$(date +%s.%N)
		echo "$which $r $start $end" >>"$tmp/times"
	done
done

python3 - "$tmp" "$variants" <<'PY'
import glob, json, os, statistics, sys

tmp, variants = sys.argv[1], int(sys.argv[2])
walls = {"old": [], "new": []}
for line in open(os.path.join(tmp, "times")):
    which, r, start, end = line.split()
    out = os.path.join(tmp, f"{which}-{r}")
    results = [json.load(open(p)) for p in glob.glob(os.path.join(out, "*.json"))
               if not p.endswith("summary.json")]
    ok = sum(1 for x in results if x.get("status") == "ok")
    wall = float(end) - float(start)
    walls[which].append(wall)
    print(f"{which:3} run {r}: {wall:7.1f} s, {len(results)} results, {ok} ok")
rate = {w: 3600.0 * (variants + 1) / statistics.median(v) for w, v in walls.items()}
print(f"without the sandbox: {rate['old']:.0f} evaluations/hour (median wall {statistics.median(walls['old']):.1f} s)")
print(f"with the sandbox:    {rate['new']:.0f} evaluations/hour (median wall {statistics.median(walls['new']):.1f} s)")
print(f"overhead: {100.0 * (1 - rate['new'] / rate['old']):.1f} % of evaluations/hour")
PY
