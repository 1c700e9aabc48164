#!/usr/bin/env bash
# bench/report.sh - the HTML session report's cost (not a test: it prints figures).
#
# Synthetic sessions of 1,000 and 10,000 variants (tests/cli/report_data.py:
# every status, lineages, learnings, model exchanges, a result file per
# variant, traces and IR of the best), then for each
#   kctl report ID --state DB -o html --out FILE
# run REPS times (default 3) in fresh processes: the best wall time, the
# largest peak resident memory of the runs, and the page's size.
# Goals (issue 17): 10,000 variants in < 1 s and < 5 MB.
#
# KCTL=path/to/kctl uses that binary and skips the build.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-3}

if [ -z "${KCTL:-}" ]; then
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build -j"$(nproc)" --target kctl >/dev/null
	KCTL=build/controller/kctl
fi
if ! "$KCTL" report --help >/dev/null 2>&1; then
	echo "bench/report.sh: '$KCTL report' does not exist in this build (issue 17's" \
	     "kctl report SESSION -o html --out FILE); nothing to measure" >&2
	exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kctl-report-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

for n in 1000 10000; do
	d="$tmp/s$n"
	mkdir -p "$d"
	read -r db sid _ < <(python3 tests/cli/report_data.py "$KCTL" --make "$d" "$n" 20 1)
	echo "== a $n-variant session ($(du -sh "$db" | cut -f1) of state)"
	python3 - "$KCTL" "$db" "$sid" "$d/report.html" "$REPS" "$n" <<'PY'
import os, resource, subprocess, sys, time
kctl, db, sid, out, reps, n = sys.argv[1:4] + [sys.argv[4], int(sys.argv[5]), int(sys.argv[6])]
best = None
for _ in range(reps):
    if os.path.exists(out):
        os.unlink(out)
    t0 = time.perf_counter()
    r = subprocess.run([kctl, "report", sid, "--state", db, "-o", "html", "--out", out],
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0 or not os.path.exists(out):
        sys.exit(f"kctl report failed (exit {r.returncode}): {r.stderr[-1000:]}")
    best = wall if best is None else min(best, wall)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB, the largest run's
size = os.path.getsize(out)
mem = f"{peak / 1024:.1f} MiB peak"
print(f"  kctl report -o html: best of {reps} {best:.3f} s, {mem}, "
      f"{size} bytes ({size / 1e6:.2f} MB)" +
      (f"  (goals < 1 s, < 5 MB: {'met' if best < 1 and size < 5e6 else 'NOT met'})"
       if n == 10000 else ""))
PY
done
