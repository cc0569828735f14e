#!/usr/bin/env bash
# create -> ACTIVE -> remove cycles against vipu-server --simulate POD (fresh
# database, durable commits: synchronous=FULL), per client count, with the
# server's CPU per cycle and the RPC floor of the same server and clients.
#   bench/run_control_plane.sh [pod] [clients] [seconds] [control_plane_bench flags, e.g. --json]
#   VIPU_BUILD=/tmp/build-rel bench/run_control_plane.sh pod256 1,8,32,128 10
set -euo pipefail
cd "$(dirname "$0")/.."
pod=${1:-pod64}; clients=${2:-1,8,32,128}; seconds=${3:-10}
shift $(( $# < 3 ? $# : 3 ))
source bench/server_lib.sh
start_server --simulate "$pod" --db "$BENCH_WORK/vipu.db"
echo "pod: $pod  server: $BENCH_SERVER  durable commits: synchronous=FULL" >&2
"$BENCH_BIN/control_plane_bench" --server "$BENCH_SERVER" --clients "$clients" \
  --seconds "$seconds" --server-pid "$BENCH_PID" --floor "$@"
