#!/usr/bin/env bash
# bench/controller.sh - kctl's own cost (not a test: it prints figures).
#
#  1. Controller overhead per round, excluding evalpod: a real session on
#     tests/data/kctl/affine.yaml; for each round, the round's wall time (from
#     the state database) minus the wall time of the evalpod runs in it.
#     Then the whole session's wall less all of evalpod's, which also counts
#     what no round's span holds (the tuner's opening, its proposals).
#     Then the same with the spec at its limits (64 tunables, 256
#     constraints), where checking the constraints is kctl's main cost.
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

# overhead SPEC: a session of SPEC (in $tmp, with affine.cl), and kctl's time per round
overhead() {
	local t0 t1
	rm -rf "$tmp/state" "$tmp/runs"
	t0=$(date +%s.%N)
	KCTL_STATE_DIR="$tmp/state" build/controller/kctl start "$tmp/$1" --no-cache >"$tmp/sid" 2>"$tmp/kctl.log"
	t1=$(date +%s.%N)
	python3 - "$tmp" "$t0" "$t1" <<'PY'
import glob, json, os, sqlite3, sys
from datetime import datetime
tmp = sys.argv[1]
session_wall = float(sys.argv[3]) - float(sys.argv[2])
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
# A round's span starts once its variants are proposed: the tuner's opening
# (its space) and proposals are only in the session's own wall.
ev = sum(json.load(open(f))["wall_ms"] / 1e3
         for f in glob.glob(os.path.join(tmp, "runs", sid, "rounds", "*", "results",
                                         "summary.json")))
print(f"  the whole session: {session_wall:.2f} s, evalpod {ev:.2f} s, kctl {session_wall - ev:.2f} s "
      f"({(session_wall - ev) / len(rows):.3f} s per round, proposing included)")
PY
}

cp tests/data/kctl/affine.yaml tests/data/kctl/affine.cl tests/data/kctl/affine_ref.cl "$tmp/"
echo "== 1. controller overhead per round (real session, PoCL)"
overhead affine.yaml

# The same problem at the spec's limits: 64 tunables (62 the kernel ignores)
# and 256 constraints over them and the shape, each checked at both shapes
# for every point the tuner considers.
python3 - "$tmp" <<'PY'
import os, random, sys
rng = random.Random(1)
spec = open(os.path.join(sys.argv[1], "affine.yaml")).read()
extra = "".join(f"    P{i}: [1, 2, 4, 8]\n" for i in range(62))
cons = "  constraints:\n"
for _ in range(256):
    a, b, c = rng.sample(range(62), 3)
    cons += f'    - "P{a} * P{b} + min(P{c}, n / 64) <= 48 || P{a} == 1"\n'
spec = spec.replace("    U: [1, 2, 4]\n", "    U: [1, 2, 4]\n" + extra + cons)
open(os.path.join(sys.argv[1], "limits.yaml"), "w").write(spec)
PY
echo "== 1b. the same at the spec's limits: 64 tunables, 256 constraints"
overhead limits.yaml

echo "== 2. ranking 100,000 synthetic results"
build/bench/kctl_bench fill "$tmp/r100k.db" bench/bench.yaml 100000
build/bench/kctl_bench rank "$tmp/r100k.db" bench/bench.yaml

echo "== 3. a 10,000-variant session"
build/bench/kctl_bench fill "$tmp/r10k.db" bench/bench.yaml 10000
build/bench/kctl_bench round "$tmp/r10k.db" bench/bench.yaml
