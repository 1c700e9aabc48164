#!/usr/bin/env bash
# ci/main.sh - the main job on the local backend: set up, build everything,
# and optimise the matmul example with `kctl start examples/matmul.yaml`.
#
# The session's folder (examples/runs/matmul/SESSION/: report.html, report.md, best.cl,
# learnings.md, rounds/) is printed at the end, followed by `kctl status`.
# The state database is the default one (docs/kctl.md, "The state
# database"); set KCTL_STATE_DIR to keep this job's sessions elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."

bash ci/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"

# kctl prints the session id on stdout; progress and the per-round lines
# go to stderr.
id=$(build/controller/kctl start examples/matmul.yaml)
dir=$(build/controller/kctl status "$id" -o json |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["output_dir"])')
echo
echo "session $id: $dir"
echo "  report.html (open it in a browser), report.md, best.cl, learnings.md,"
echo "  rounds/rNNN/ (batch, evalpod.log, results/)"
echo
build/controller/kctl status
