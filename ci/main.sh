#!/usr/bin/env bash
# ci/main.sh - the main job on the local backend: set up, build, and
# evaluate the matmul example with evalpod.  Results land in results/matmul/
# (one JSON per variant, summary.json, traces and IR under each variant).
#
# Until kctl's optimisation loop lands this is evalpod on a batch of 16
# tuning points of examples/matmul/matmul.cl; then it becomes
# `kctl start examples/matmul.yaml`.
set -euo pipefail
cd "$(dirname "$0")/.."

bash ci/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
mkdir -p results
python3 examples/matmul/make_batch.py --size "${SIZE:-512}" --variants "${VARIANTS:-16}" \
	>results/matmul-batch.json
build/evalpod/evalpod devices
build/evalpod/evalpod run results/matmul-batch.json --out results/matmul
echo "results: results/matmul/ (summary.json, <variant>.json, <variant>/trace.json)"
