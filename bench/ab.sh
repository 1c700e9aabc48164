#!/usr/bin/env bash
# bench/ab.sh OLD NEW - two evalpod binaries side by side on the same batch
# (not a test: it prints).  Each binary first runs a one-variant batch of the
# same problem, which fills its own reference cache and peaks cache (a
# session's later rounds look like that); then the two run the 16-variant
# 512^3 matmul batch in turn, PAIRS times, and each pair's wall ratio
# NEW / OLD is printed.  Alternating keeps a load that changes slowly from
# deciding the ratio.  SIZE, VARIANTS and PAIRS change the work.  OLD_TREE
# names the old side's source tree: its examples/matmul/make_batch.py then
# writes the old side's batches, so a change to the example's kernels or
# launch is measured too (the points are the same on both sides).
#
#   git worktree add /tmp/old <rev> && cmake -S /tmp/old -B /tmp/old/build \
#       && cmake --build /tmp/old/build --target evalpod
#   bash bench/ab.sh /tmp/old/build/evalpod/evalpod build/evalpod/evalpod
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -ne 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
	echo "usage: bench/ab.sh OLD_EVALPOD NEW_EVALPOD" >&2
	exit 2
fi
old=$(realpath "$1")
new=$(realpath "$2")
size=${SIZE:-512}
variants=${VARIANTS:-16}
pairs=${PAIRS:-3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/evalpod-ab.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

for side in old new; do
	tree=.
	[ "$side" = old ] && tree=${OLD_TREE:-.}
	python3 "$tree/examples/matmul/make_batch.py" --size "$size" --variants "$variants" \
		>"$tmp/batch-$side.json"
	python3 "$tree/examples/matmul/make_batch.py" --size "$size" --variants 1 >"$tmp/one-$side.json"
done
for side in old new; do
	exe=$old
	[ "$side" = new ] && exe=$new
	"$exe" run "$tmp/one-$side.json" --out "$tmp/warm-$side" --ref-cache "$tmp/ref-$side" \
		--cache-dir "$tmp/peaks-$side" >/dev/null 2>&1
done

# Prints the wall seconds of one run and how many programs ended ok.
run_one() {
	local exe=$1 side=$2 start end
	rm -rf "$tmp/out-$side"
	start=$(date +%s.%N)
	"$exe" run "$tmp/batch-$side.json" --out "$tmp/out-$side" --ref-cache "$tmp/ref-$side" \
		--cache-dir "$tmp/peaks-$side" >"$tmp/table-$side.txt" 2>/dev/null || true
	end=$(date +%s.%N)
	echo "$start $end $(grep -c ' ok ' "$tmp/table-$side.txt" || true)"
}

echo "pair  old_s  new_s  new/old  ok(old,new)"
for i in $(seq 1 "$pairs"); do
	read -r s0 e0 ok0 < <(run_one "$old" old)
	read -r s1 e1 ok1 < <(run_one "$new" new)
	python3 -c "
o = $e0 - $s0
n = $e1 - $s1
print('%4d %6.1f %6.1f %8.2f  %s,%s' % ($i, o, n, n / o, '$ok0', '$ok1'))"
done
