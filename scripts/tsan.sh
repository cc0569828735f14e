#!/usr/bin/env bash
# Builds with ThreadSanitizer into build-tsan/ (or $TSAN_BUILD) and runs the
# integration tests (real vipu-server, vipu-agent and CLI processes, all
# instrumented). Debian's gRPC is not instrumented, so TSan reports its
# internal hand-offs as races; processes therefore keep running
# (halt_on_error=0, exitcode=0) and scripts/tsan_reports.py fails the run on
# any race between two accesses in our own code (tests/tsan.supp says why no
# module-wide suppression is used). Reports land in build-tsan/tsan-reports/.
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
export TSAN_OPTIONS="halt_on_error=0 exitcode=0 second_deadlock_stack=1 \
suppressions=$PWD/tests/tsan.supp log_path=$reports/tsan"
# The crash test's CI size is 50 kills; under TSan 10 show the same races.
export VIPU_CRASH_ITERATIONS=${VIPU_CRASH_ITERATIONS:-10}
status=0
ctest --test-dir "$dir" -L integration --output-on-failure -j"${JOBS:-2}" --timeout 600 || status=1
python3 scripts/tsan_reports.py "$PWD" "$reports/tsan" || status=1
echo "tsan: $(( $(date +%s) - start )) s"
exit $status
