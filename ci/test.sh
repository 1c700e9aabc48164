#!/usr/bin/env bash
# ci/test.sh - the whole test suite: set up, build, run ctest; then the
# same suite again built with AddressSanitizer and UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."

bash ci/deps.sh
jobs=$(nproc)

# Formatting is checked with the clang-format the rules were written for.
if clang-format --version 2>/dev/null | grep -q 'version 14\.'; then
	echo "== clang-format check"
	clang-format --dry-run --Werror $(git ls-files '*.c' '*.h' 2>/dev/null || find common evalpod tests -name '*.[ch]')
else
	echo "== clang-format check skipped: it needs clang-format 14"
fi

echo "== build and test (RelWithDebInfo, warnings as errors)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKCTL_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j1

echo "== build and test under ASan + UBSan"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DKCTL_SANITIZE=ON -DKCTL_WERROR=ON >/dev/null
cmake --build build-asan -j"$jobs"
ctest --test-dir build-asan --output-on-failure -j1
