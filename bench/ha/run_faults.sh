#!/usr/bin/env bash
# The fault tests of the HA control plane, with more rounds than CI runs:
# each test makes its fault for real (etcd members killed, a member paused,
# etcd's majority gone, links cut or made lossy in network namespaces) and
# asserts what must hold; this prints what each measured. ROUNDS applies to
# the tests that repeat their fault (VIPU_FAULT_ROUNDS): the kills of etcd's
# raft leader and the cuts of the leader from etcd; SECONDS to how long a
# lossy or slow link lasts (VIPU_LOSS_SECONDS). The network tests need root
# (tests/integration/in_network_lab.sh makes their namespaces).
#   VIPU_BUILD=build bench/ha/run_faults.sh [rounds] [seconds]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${VIPU_BUILD:-build}
rounds=${1:-10}
seconds=${2:-60}
export VIPU_FAULT_ROUNDS=$rounds VIPU_LOSS_SECONDS=$seconds
show='^\[ +(OK|FAILED|SKIPPED) +\]|^etcd raft leader|^quorum|^history:|^leader cut|^standby cut|for [0-9]+ s:|Failure|netem'
tests=HaEtcdMemberLoss.*:HaQuorum.*:HaHistoryTest.*:HaQuietTest.*
"$build/bin/etcd_tests" --gtest_filter="$tests" 2>&1 | grep -E "$show" || true
tests/integration/in_network_lab.sh "$build/bin/etcd_tests" --gtest_filter='HaNetworkTest.*' 2>&1 |
  grep -E "$show" || true
