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
# Servers' heartbeats: at the usual 200 ms, agents slowed down this much
# miss three in a row and are taken for down though nothing is wrong.
export VIPU_TEST_HEARTBEAT_MS=${VIPU_TEST_HEARTBEAT_MS:-1000}
export VIPU_CRASH_KILL_WINDOW_MS=${VIPU_CRASH_KILL_WINDOW_MS:-2000}
status=0
# ThreadSanitizer looks for races between the threads of one process, so
# the stage runs the tests that drive the daemons' threads hard: the server
# under concurrent clients, kills and restarts, agents, faults, security, the
# console's HTTP side and the highly available members. Left to the plain and
# ASan runs: what exercises a client or launcher more than a daemon (the
# CLI's, flags' and configuration's refusals, migration and backup,
# poprun and popdist (a PopTorch program under poprun among them), gc-info, vipu-plan, the console in a browser, the
# package); the Slurm plugin, which is never
# built with a sanitizer (and slurmd does not pass TSAN_OPTIONS to the
# instrumented vipu it runs); the twelve pods that start at once, a race
# for ports between processes that TSan does not look at; and the network
# faults (namespaces, cuts, loss), whose threads are those of the other HA
# tests, and whose timing is what they measure.
skip='^(Slurm\.|etcd\.HaNetworkTest$|etcd\.(EtcdEndpoints|HaFlags|HaSecureFlags|HaMigrate)\.|integration\.('
skip+='SimultaneousPods|Poprun[A-Za-z]*|PoptorchPoprun|Popdist[A-Za-z]*|PlanLive|PlanReportBrowser|ConsoleBrowser|GcInfo'
skip+='|Cli|ServerConfig|Values/ServerConfigBad|Package|AuditLogConfig|Paths/BackupRpc|Backup'
skip+='|ListenPolicy)(Test)?\.)'
ctest --test-dir "$dir" -L integration -E "$skip" --output-on-failure -j"${JOBS:-2}" --timeout 600 ||
  status=1
python3 scripts/tsan_reports.py "$PWD" "$reports/tsan" || status=1
echo "tsan: $(( $(date +%s) - start )) s"
exit $status
