#!/usr/bin/env bash
# bench/llm.sh - the model proposer's figures (not a test: it prints them).
#
#  1. kctl's own overhead per model round, the model's time excluded: a
#     session of 1,000 synthetic evaluated variants (kctl_bench fill), then
#     one round's propose step with a proposer command that answers at once
#     (4 directions, real rewrites of tests/data/llm/mm.cl): context,
#     prompt, answer parsing and applying, and recording, less the time the
#     command itself took.  REPS fresh copies of the session (default 5).
#     Goal: < 50 ms.
#  2. The model and the tuner against the tuner alone, same budget: two
#     sessions on tests/data/llm/mm.yaml (a naive matmul whose only
#     tunables are the work-group's sides), one with the scripted model
#     (tests/data/llm/model.py, whose rewrites hold a block of C in
#     registers: a structure no tunable reaches), one with kind: tune; each
#     winner's speedup over the reference is measured side by side with the
#     reference in its own evalpod runs, and the ratio of the two is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-5}

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target kctl evalpod kctl_bench >/dev/null
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kctl-llm-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
data=tests/data/llm

echo "== 1. kctl's own time per model round, 1,000 variants"
cp "$data/mm.cl" "$data/mm_ref.cl" "$tmp/"
python3 - "$data" "$tmp/answer.txt" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import model
ctx = {"parent": {"blocks": {"body": "s += A"}}, "directions": 4}
open(sys.argv[2], "w").write(model.answer(ctx))
PY
{ cat "$data/mm.yaml"
  printf 'proposer:\n  kind: command\n  mix: {model: 1}\n  command: {run: [cat, %s]}\n' \
         "$tmp/answer.txt"; } >"$tmp/bench.yaml"
build/bench/kctl_bench fill "$tmp/fill.db" "$tmp/bench.yaml" 1000 >/dev/null
for i in $(seq "$REPS"); do
	cp "$tmp/fill.db" "$tmp/run.db"
	rm -f "$tmp/run.db-wal" "$tmp/run.db-shm"
	build/bench/kctl_bench model "$tmp/run.db" "$tmp/bench.yaml"
done

echo "== 2. the model and the tuner vs the tuner alone (same budget: 24 evaluations, 6 rounds)"
run() { # label, proposer section
	local d="$tmp/$1"
	mkdir -p "$d"
	cp "$data/mm.cl" "$data/mm_ref.cl" "$d/"
	{ sed -e 's/max_rounds: 3/max_rounds: 6/' "$data/mm.yaml"; printf '%s' "$2"; } >"$d/mm.yaml"
	KCTL_STATE_DIR="$d/state" build/controller/kctl start "$d/mm.yaml" --no-cache >"$d/out" 2>"$d/log" || true
	KCTL_STATE_DIR="$d/state" build/controller/kctl status "$(head -1 "$d/out")" -o json >"$d/status.json"
}
run tune $'proposer:\n  kind: tune\n'
run model "$(printf 'proposer:\n  kind: command\n  command: {run: [python3, %s]}\n' "$PWD/$data/model.py")"
python3 - "$tmp" <<'PY'
import json, os, sys
best = {}
for label in ("tune", "model"):
    st = json.load(open(os.path.join(sys.argv[1], label, "status.json")))
    w = st.get("best") or {}
    best[label] = w.get("speedup_vs_reference") or float("nan")
    print(f"  {label:5s}: winner {w.get('variant')}, {best[label]:.2f}x vs reference "
          f"({w.get('gflops', float('nan')):.1f} GFLOP/s), {st.get('evaluations')} evaluations")
print(f"  model + tuner / tuner alone: {best['model'] / best['tune']:.2f}x")
PY
