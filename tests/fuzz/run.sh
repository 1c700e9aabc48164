#!/usr/bin/env bash
# tests/fuzz/run.sh - runs each libFuzzer harness for a bounded time.
#
#   tests/fuzz/run.sh BUILD-DIR [SECONDS-EACH] [NAME...]
#
# BUILD-DIR was configured with CC=clang -DKCTL_FUZZ=ON and its fuzz-NAME
# targets built.  Each fuzzer starts from tests/fuzz/corpus/NAME/ copied to
# a scratch folder (what it finds there is not added to the repository) and
# runs SECONDS-EACH (default 20) under ASan + UBSan with leak checks, with
# tests/fuzz/NAME.dict (the keys its inputs use) where there is one.  A
# crash, leak, UBSan report or time-out leaves its input under
# BUILD-DIR/fuzz-findings/NAME/ and makes the script exit 1 once every
# fuzzer has run.  Add such an input to the corpus with the fix: from then
# on the normal suite replays it (ctest -R fuzz/).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: run.sh BUILD-DIR [SECONDS-EACH] [NAME...]}
secs=${2:-20}
shift $(($# < 2 ? $# : 2))
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
	names=(spec batch result expr render kubeconfig awsconf s3xml github tuned answer llm kpod screen)
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/kctl-fuzz-run.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
failed=()
for name in "${names[@]}"; do
	bin="$build/tests/fuzz/fuzz-$name"
	if [ ! -x "$bin" ]; then
		echo "fuzz $name: $bin is missing (configure with CC=clang -DKCTL_FUZZ=ON)" >&2
		failed+=("$name")
		continue
	fi
	findings="$build/fuzz-findings/$name"
	mkdir -p "$findings" "$scratch/$name"
	cp "$here/corpus/$name"/* "$scratch/$name/" 2>/dev/null || true
	dict=()
	if [ -f "$here/$name.dict" ]; then
		dict=(-dict="$here/$name.dict")
	fi
	echo "== fuzz $name (${secs} s)"
	# -timeout: one input running 30 s is a hang; -rss_limit_mb: a
	# runaway allocation is a finding too.  stdin is /dev/null so that an
	# input naming "-" or /dev/stdin as a file cannot wait on a terminal.
	if ! LSAN_OPTIONS="suppressions=$here/../lsan.supp:print_suppressions=0" \
		"$bin" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 \
		-max_len=65536 -print_final_stats=1 -artifact_prefix="$findings/" "${dict[@]}" \
		"$scratch/$name" </dev/null >"$findings/log" 2>&1; then
		tail -n 40 "$findings/log" >&2
		failed+=("$name")
	else
		grep -E '^(stat::number_of_executed_units|stat::new_units_added)' "$findings/log" |
			tr '\n' ' '
		echo
	fi
done
if [ ${#failed[@]} -gt 0 ]; then
	echo "fuzz: findings in ${failed[*]} (inputs under $build/fuzz-findings/)" >&2
	exit 1
fi
echo "fuzz: ${#names[@]} fuzzers, ${secs} s each, nothing found"
