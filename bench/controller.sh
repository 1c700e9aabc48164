#!/usr/bin/env bash
# bench/controller.sh - kctl's own cost (not a test: it prints figures).
#
#  1. Controller overhead per round, excluding evalpod: a real session on
#     tests/data/kctl/affine.yaml; for each round, the round's wall time (from
#     the state database) minus the wall time of the evalpod runs in it.
#  2. Ranking time for 100,000 synthetic results (kctl_bench: a session of
#     100 rounds of 1000 results; the last round is ranked and timed).
#  3. kctl's peak memory for a 10,000-variant session: one more round of
#     controller work (propose 16, record, rank, learnings, report) over a
#     session of 10,000 synthetic results, in a fresh process.
# Goals: < 1 s per round and < 64 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target kctl evalpod kctl_bench >/dev/null
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kctl-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "== 1. controller overhead per round (real session, PoCL)"
cp tests/data/kctl/affine.yaml tests/data/kctl/affine.cl tests/data/kctl/affine_ref.cl "$tmp/"
KCTL_STATE_DIR="$tmp/state" build/controller/kctl start "$tmp/affine.yaml" --no-cache >"$tmp/sid" 2>"$tmp/kctl.log"
python3 - "$tmp" <<'PY'
import glob, json, os, sqlite3, sys
from datetime import datetime
tmp = sys.argv[1]
sid = open(os.path.join(tmp, "sid")).read().split()[0]
db = sqlite3.connect(os.path.join(tmp, "state", "kctl.db"))
def t(s):
    return datetime.strptime(s.rstrip("Z"), "%Y-%m-%dT%H:%M:%S.%f").timestamp()
rows = db.execute("SELECT round, started, finished FROM rounds WHERE session=? ORDER BY round",
                  (sid,)).fetchall()
over = []
for rnd, started, finished in rows:
    wall = t(finished) - t(started)
    ev = 0.0
    for summ in glob.glob(os.path.join(tmp, "runs", sid, "rounds", f"r{rnd:03d}", "results",
                                       "summary.json")):
        ev += json.load(open(summ))["wall_ms"] / 1e3
    over.append(wall - ev)
    print(f"  round {rnd}: {wall:6.2f} s in all, evalpod {ev:6.2f} s, kctl {wall - ev:5.3f} s")
print(f"  controller overhead per round: mean {sum(over) / len(over):.3f} s, "
      f"max {max(over):.3f} s (goal < 1 s; includes starting evalpod and PoCL)")
PY

echo "== 2. ranking 100,000 synthetic results"
build/bench/kctl_bench fill "$tmp/r100k.db" bench/bench.yaml 100000
build/bench/kctl_bench rank "$tmp/r100k.db" bench/bench.yaml

echo "== 3. a 10,000-variant session"
build/bench/kctl_bench fill "$tmp/r10k.db" bench/bench.yaml 10000
build/bench/kctl_bench round "$tmp/r10k.db" bench/bench.yaml
