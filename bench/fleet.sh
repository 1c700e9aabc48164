#!/usr/bin/env bash
# bench/fleet.sh - kctl at fleet scale (not a test: it prints figures).
#
# 100 sessions of 100 variants each in one state database, and one result
# cache of 10,000 entries, all made synthetically (no evaluation):
#   - one session from tests/cli/report_data.py (make_synthetic: results shaped
#     as evalpod's, 10 rounds), copied row by row under 99 other session ids
#     into the same database, each with a session folder holding a current
#     report.md and report.html (so `kctl status` reads and rewrites nothing);
#   - bench/cache_bench.c: 10,000 entries keyed as kctl keys a variant (the
#     batch's problem part from examples/matmul/make_batch.py, a source per
#     entry) holding a real result document of evalpod (tests/data/report).
# Then
#   - `kctl status --state DB` (all sessions) and `-o json`, REPS runs each in
#     fresh processes (default 3): the best wall time and the largest peak RSS;
#   - the cache lookup per key (inputs, key, lookup, parse): mean, p50, p99
#     and max over all 10,000 keys, in one process, in shuffled order;
#   - the sizes of the state database and of cache.db.
# Goals (issue 18): status < 1 s, lookup < 1 ms, RSS bounded.
#
# KCTL=path/to/kctl and CACHE_BENCH=path/to/cache_bench skip the build.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-3}
SESSIONS=${SESSIONS:-100}
VARIANTS=${VARIANTS:-100}

if [ -z "${KCTL:-}" ] || [ -z "${CACHE_BENCH:-}" ]; then
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build -j2 --target kctl cache_bench >/dev/null
	KCTL=${KCTL:-build/controller/kctl}
	CACHE_BENCH=${CACHE_BENCH:-build/bench/cache_bench}
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kctl-fleet-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

mkdir -p "$tmp/s"
read -r db sid dir < <(python3 tests/cli/report_data.py "$KCTL" --make "$tmp/s" "$VARIANTS" 10 1)
python3 - "$db" "$sid" "$tmp/s/runs" "$SESSIONS" <<'PY'
import os, sqlite3, sys
db, sid, runs, sessions = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
con = sqlite3.connect(db)
tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
with con:
    for k in range(1, sessions):
        new = f"{sid[:-6]}{0xf00000 + k:06x}"
        out = os.path.join(runs, new)
        for t in tables:
            cols = [c[1] for c in con.execute(f"PRAGMA table_info({t})")]
            key = "id" if t == "sessions" else "session"
            if key not in cols:
                continue
            sel = ", ".join("?" if c == key else ("?" if t == "sessions" and c == "output_dir"
                                                   else c) for c in cols)
            args = [new] + ([out] if t == "sessions" else [])
            if t == "sessions" and cols.index("output_dir") < cols.index(key):
                args.reverse()
            con.execute(f"INSERT INTO {t} ({', '.join(cols)}) SELECT {sel} FROM {t} "
                        f"WHERE {key} = ?", args + [sid])
rows = con.execute("SELECT id, output_dir, state FROM sessions").fetchall()
con.close()
for _, out, state in rows:
    os.makedirs(out, exist_ok=True)
    for name, text in (("report.md", f'```json\n{{\n  "state": "{state}"\n}}\n```\n'),
                       ("report.html", "<!doctype html>\n")):
        path = os.path.join(out, name)
        if not os.path.exists(path):
            with open(path, "w") as f:
                f.write(text)
PY
n_sessions=$(python3 -c "
import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM sessions').fetchone()[0])" "$db")
n_results=$(python3 -c "
import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM results').fetchone()[0])" "$db")
echo "== $n_sessions sessions, $n_results results in one state database ($(du -h "$db" | cut -f1))"
python3 - "$KCTL" "$db" "$REPS" "$n_sessions" <<'PY'
import os, resource, subprocess, sys, time
kctl, db, reps, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
env = dict(os.environ, KCTL_CACHE_DIR=os.path.dirname(db))
for args, what in ((["status", "--state", db], "kctl status"),
                   (["status", "--state", db, "-o", "json"], "kctl status -o json")):
    best, peak = None, 0
    for _ in range(reps):
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t0 = time.perf_counter()
        r = subprocess.run([kctl] + args, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
        if r.returncode != 0:
            sys.exit(f"{what} failed (exit {r.returncode}): {r.stderr[-1000:]}")
        lines = r.stdout.count("\n")
        best = wall if best is None else min(best, wall)
        peak = max(peak, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before)
    print(f"  {what} ({n} sessions, {lines} lines): best of {reps} {best:.3f} s, "
          f"{peak / 1024:.1f} MiB peak (goal < 1 s: {'met' if best < 1 else 'NOT met'})")
PY
python3 examples/matmul/make_batch.py --variants 1 >"$tmp/batch.json"
# a real result of evalpod (a matmul variant of the recorded session, tests/data/report)
result=$(ls tests/data/report/recorded/session/rounds/r001/results/r01-v00*.json | head -1)
entries=$((SESSIONS * VARIANTS))
out=$("$CACHE_BENCH" "$tmp/cache.db" "$entries" "$result" "$tmp/batch.json")
python3 - "$out" "$result" <<'PY'
import json, os, sys
f = json.loads(sys.argv[1])
print(f"== the result cache: {f['entries']} entries of a {os.path.getsize(sys.argv[2])}-byte "
      f"result, stored in {f['put_s']:.1f} s; cache.db {f['bytes'] / 1e6:.1f} MB")
print(f"  lookup per key (inputs, key, lookup, check, parse): mean {f['lookup_mean_ms']:.3f} ms, "
      f"p50 {f['lookup_p50_ms']:.3f}, p99 {f['lookup_p99_ms']:.3f}, max {f['lookup_max_ms']:.3f} "
      f"({f['hits']} hits; goal < 1 ms: {'met' if f['lookup_p99_ms'] < 1 else 'NOT met'})")
PY
