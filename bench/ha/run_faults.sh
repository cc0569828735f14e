#!/usr/bin/env bash
# The fault tests of the HA control plane, with more rounds than CI runs:
# each test makes its fault for real (etcd members killed, a member paused,
# etcd's majority gone) and asserts what must hold; this prints what each
# measured. ROUNDS applies to the tests that repeat their fault
# (VIPU_FAULT_ROUNDS): the kills of etcd's raft leader.
#   VIPU_BUILD=build bench/ha/run_faults.sh [rounds]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${VIPU_BUILD:-build}
rounds=${1:-10}
tests=HaEtcdMemberLoss.*:HaQuorum.*:HaHistoryTest.*:HaQuietTest.*
VIPU_FAULT_ROUNDS=$rounds "$build/bin/etcd_tests" --gtest_filter="$tests" 2>&1 |
  grep -E '^\[ +(OK|FAILED) +\]|^etcd raft leader|^quorum|^history:|Failure' || true
