#!/usr/bin/env bash
# The create -> ACTIVE -> remove cycle (control_plane_bench) on etcd and on
# SQLite in the same run: pod64 (16 machines), CLIENTS client counts, SECONDS
# each. etcd: three members on loopback, one vipu-server member leading (a
# second as standby), the agents in one vipu-agent process. SQLite: vipu-server
# --simulate pod64 on a fresh database (bench/run_control_plane.sh).
#   bench/ha/run_cycle.sh [clients] [seconds]
set -euo pipefail
cd "$(dirname "$0")/../.."
clients=${1:-1,8,32}; seconds=${2:-10}
HA_MEMBER_ARGS=()
source bench/ha/ha_lib.sh
start_etcd
start_member 0
for _ in $(seq 300); do [ "$(leader_index)" -ge 0 ] && break; sleep 0.1; done
start_member 1
start_agents 16
make_pod 16
echo "== etcd (3 members), leader ${HA_ADDR[0]}, pod of 16 machines"
"$HA_BIN/control_plane_bench" --server "${HA_ADDR[0]}" --clients "$clients" --seconds "$seconds" \
  --server-pid "${HA_MEMBER_PID[0]}"
echo "== SQLite, vipu-server --simulate pod64"
bench/run_control_plane.sh pod64 "$clients" "$seconds"
