#!/usr/bin/env bash
# Builds with ThreadSanitizer into build-tsan/ (or $TSAN_BUILD) and runs the
# integration tests (real vipu-server and vipu-agent processes, all
# instrumented). Any report from any process fails: halt_on_error stops the
# process, and the reports land in build-tsan/tsan-reports/. Suppressions
# (tests/tsan.supp) cover only Debian's uninstrumented gRPC/abseil/protobuf.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${TSAN_BUILD:-build-tsan}
start=$(date +%s)
# Only what the integration tests run (the servers, agents and CLIs).
cmake -G Ninja -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVIPU_TSAN=ON >/dev/null
ninja -C "$dir" -j"${JOBS:-2}" integration_tests
reports="$(cd "$dir" && pwd)/tsan-reports"
rm -rf "$reports"
mkdir -p "$reports"
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 exitcode=66 \
suppressions=$PWD/tests/tsan.supp log_path=$reports/tsan"
# The crash test's CI size is 50 kills; under TSan 10 show the same races.
export VIPU_CRASH_ITERATIONS=${VIPU_CRASH_ITERATIONS:-10}
status=0
ctest --test-dir "$dir" -L integration --output-on-failure -j"${JOBS:-2}" --timeout 600 || status=1
if compgen -G "$reports/tsan*" >/dev/null; then
  echo "tsan: reports in $reports:"
  for f in "$reports"/tsan*; do
    echo "== $f"
    head -60 "$f"
  done
  status=1
fi
echo "tsan: $(( $(date +%s) - start )) s"
exit $status
