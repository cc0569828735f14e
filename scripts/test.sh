#!/usr/bin/env bash
# Every test: installs what is missing, builds, runs the unit and integration
# tests, then the same tests again under AddressSanitizer + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
ctest --test-dir build --output-on-failure -j2 --timeout 300
if [ "${VIPU_SKIP_SANITIZERS:-0}" != 1 ]; then
  # Debug (-O0) compiles much faster; the sanitizers instrument our code either way.
  scripts/build.sh build-asan -DVIPU_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
  ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j2 --timeout 600
fi
# The fuzz targets replay their committed corpora (clang from install-deps;
# skipped without it). Longer exploring runs: scripts/fuzz.sh.
if [ "${VIPU_SKIP_FUZZ:-0}" != 1 ] && command -v clang++ >/dev/null; then
  FUZZ_MODE=corpus scripts/fuzz.sh
fi
