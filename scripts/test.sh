#!/usr/bin/env bash
# Every test: installs what is missing, builds, runs the unit and integration
# tests (among them the checks of the source tree: rooms, comments, function
# sizes); then builds again with clang under AddressSanitizer + UBSan, runs the
# same tests there, and replays the fuzz targets' committed corpora with the
# fuzzers that build produced.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
ctest --test-dir build --output-on-failure -j2 --timeout 300
if [ "${VIPU_SKIP_SANITIZERS:-0}" != 1 ]; then
  # One sanitizer build serves the tests and the fuzzers: clang, Debug (-O0
  # compiles much faster; the sanitizers instrument our code either way), with
  # libFuzzer's coverage so that the fuzz targets link in the same tree. Being
  # clang, it also checks the lock annotations (-Wthread-safety).
  # No benchmarks: an instrumented build measures nothing worth reporting.
  CC=clang CXX=clang++ scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=Debug \
    -DVIPU_SANITIZE=ON -DVIPU_FUZZ=ON -DVIPU_BENCHMARKS=OFF
  # What runs no code of ours under the sanitizers is left to the run above:
  # the checks of the source tree (rooms, comments, style, namespaces, mutants), the
  # Python package's own tests (no code of ours in C++), the package (built from
  # build/, not from this tree) and the Slurm plugin (never instrumented).
  ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j2 --timeout 600 \
    -E '^(rooms\.|comments\.|style\.|namespaces\.|mutants\.|python\.|Slurm\.|integration\.PackageTest\.)'
  # The fuzz targets replay their committed corpora (the CI gate). Longer
  # exploring runs: scripts/fuzz.sh.
  if [ "${VIPU_SKIP_FUZZ:-0}" != 1 ]; then
    FUZZ_BUILD=build-asan FUZZ_MODE=corpus scripts/fuzz.sh
  fi
fi
