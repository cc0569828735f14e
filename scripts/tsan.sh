#!/usr/bin/env bash
# Builds with ThreadSanitizer into build-tsan/ (or $TSAN_BUILD) and runs the
# integration tests (real vipu-server, vipu-agent and CLI processes, all
# instrumented). Debian's gRPC is not instrumented, so TSan reports its
# internal hand-offs as races; processes therefore keep running
# (halt_on_error=0, exitcode=0) and scripts/tsan_reports.py fails the run on
# any race between two accesses in our own code (tests/tsan.supp says why no
# module-wide suppression is used). Reports land in build-tsan/tsan-reports/.
# CI (.ci/run) runs it after the README's commands, within a time bound:
# the crash test's size below is what keeps it there.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${TSAN_BUILD:-build-tsan}
start=$(date +%s)
# Every program (the package test installs every binary) and the
# integration tests; not the unit tests and benchmarks, which run elsewhere.
scripts/build.sh "$dir" -DVIPU_TSAN=ON -DVIPU_UNIT_TESTS=OFF
reports="$(cd "$dir" && pwd)/tsan-reports"
rm -rf "$reports"
mkdir -p "$reports"
export TSAN_OPTIONS="halt_on_error=0 exitcode=0 second_deadlock_stack=1 \
suppressions=$PWD/tests/tsan.supp log_path=$reports/tsan"
# The crash test's CI size is 50 kills; under TSan (about 10x slower) 10
# kills, each after up to 2 s of load.
export VIPU_CRASH_ITERATIONS=${VIPU_CRASH_ITERATIONS:-10}
export VIPU_CRASH_KILL_WINDOW_MS=${VIPU_CRASH_KILL_WINDOW_MS:-2000}
status=0
# Not the Slurm test: the plugin is never built with a sanitizer, and the
# instrumented vipu it runs under slurmd does not get TSAN_OPTIONS, so the
# exit code of gRPC's uninstrumented hand-offs would fail every job; the
# plain and ASan passes of scripts/test.sh run it. Nor the twelve pods that
# start at once: a race for ports between processes, which ThreadSanitizer
# does not look at, and twelve instrumented pods on two cores would only
# test the machine's patience.
ctest --test-dir "$dir" -L integration -E '^(Slurm\.|integration\.SimultaneousPodsTest\.)' \
  --output-on-failure -j"${JOBS:-2}" --timeout 600 || status=1
python3 scripts/tsan_reports.py "$PWD" "$reports/tsan" || status=1
echo "tsan: $(( $(date +%s) - start )) s"
exit $status
