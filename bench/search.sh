#!/usr/bin/env bash
# bench/search.sh - search quality replayed on a recorded space (not a test: it prints).
#
# Runs `kctl simulate` on tests/data/space/matmul-512.json (a few hundred
# points of examples/matmul.yaml's space timed once on the CI device, with
# their status and speedup over the naive reference) and on
# matmul-512-twins.json (150 points and their PACK and LOCAL twins,
# PACK=2 included), both timed on an AVX-512 host, and on
# matmul-512-avx2.json (300 points, PACK=2 included, timed on an AVX2
# Zen 3, where other tiles win), and on matmul-512-xeon.json (300 points of
# the space with WY up to 32, timed on a 2-vCPU guest of a recent Xeon,
# AVX-512, whose L3 is slow to refill), and on two other kernels timed on
# that guest: gmm_fp8-xeon.json (every one of examples/gmm_fp8_blockwise.yaml's
# 646 valid points, so its best recorded point is the space's best there;
# one of the spec's starts, so it is replayed with --no-starts too, the
# search alone) and chunk_gla-xeon.json (300 of examples/chunk_gla.yaml's
# 13,824, none of them a start): per strategy (the
# tuner, uniform random sampling, the old evolutionary tuner) and budget
# (12/24/48/96 evaluations, each a session of its own, the template's
# round 0 counted), the median and the worst over SEEDS seeds (default 20)
# of the best speedup found divided by the best recorded.  Without the
# recorded space it falls back
# to the synthetic fixtures and says so.  DATASET, SEEDS, BATCH override.
#
# Where Kernel Tuner is importable by $KT_PYTHON (default python3), each
# space is then replayed by Kernel Tuner's own strategies too, in its
# simulation mode (bench/kt_replay.py; KT_STRATEGIES overrides its list),
# in the same layout.  Kernel Tuner has no template, so its budgets are all
# search.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x build/controller/kctl ]; then
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build -j"$(nproc)" --target kctl
fi
kt=0
if "${KT_PYTHON:-python3}" -c 'import kernel_tuner' 2>/dev/null; then
	kt=1
fi
seeds=${SEEDS:-20}
batch=${BATCH:-8}
if [ -n "${DATASET:-}" ]; then
	sets=("$DATASET")
elif [ -f tests/data/space/matmul-512.json ]; then
	sets=(tests/data/space/matmul-512.json tests/data/space/matmul-512-twins.json
		tests/data/space/matmul-512-avx2.json tests/data/space/matmul-512-xeon.json
		tests/data/space/gmm_fp8-xeon.json tests/data/space/chunk_gla-xeon.json)
else
	echo "note: tests/data/space/matmul-512.json is not here yet; replaying the" \
		"synthetic fixtures (made-up speedups, not measurements)"
	sets=(tests/data/space/synthetic-smooth.json tests/data/space/synthetic-rugged.json)
fi
for d in "${sets[@]}"; do
	echo
	echo "\$ kctl simulate $d --seeds $seeds --batch $batch"
	start=$(date +%s.%N)
	build/controller/kctl simulate "$d" --seeds "$seeds" --batch "$batch" \
		--strategy tune,random,evolve --budgets 12,24,48,96
	end=$(date +%s.%N)
	awk -v s="$start" -v e="$end" 'BEGIN { printf "(%.1f s for the replays)\n", e - s }'
	case "$d" in
	*gmm_fp8-xeon.json)
		echo
		echo "\$ kctl simulate $d --seeds $seeds --batch $batch --no-starts"
		build/controller/kctl simulate "$d" --seeds "$seeds" --batch "$batch" --no-starts \
			--strategy tune,random,evolve --budgets 12,24,48,96
		;;
	esac
	if [ "$kt" = 1 ]; then
		echo
		echo "\$ bench/kt_replay.py $d --seeds $seeds"
		"${KT_PYTHON:-python3}" bench/kt_replay.py "$d" --seeds "$seeds" \
			${KT_STRATEGIES:+--strategies "$KT_STRATEGIES"}
	fi
done
if [ "$kt" = 0 ]; then
	echo
	echo "note: Kernel Tuner is not importable by ${KT_PYTHON:-python3}: its strategies" \
		"were not replayed (pip install kernel_tuner, or set KT_PYTHON)"
fi
