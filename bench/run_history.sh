#!/usr/bin/env bash
# Does throughput decay as history grows? Clients cycle create -> ACTIVE ->
# remove without pause on a fresh vipu-server --simulate POD; a window is
# measured after each checkpoint of recorded operations (creates + removes).
#   bench/run_history.sh [pod] [clients] [checkpoints] [window seconds] [flags, e.g. --json]
#   VIPU_BUILD=/tmp/build-rel bench/run_history.sh pod64 32 1000,100000 5
set -euo pipefail
cd "$(dirname "$0")/.."
pod=${1:-pod64}; clients=${2:-32}; checkpoints=${3:-1000,100000}; window=${4:-5}
shift $(( $# < 4 ? $# : 4 ))
source bench/server_lib.sh
start_server --simulate "$pod" --db "$BENCH_WORK/vipu.db"
echo "pod: $pod  server: $BENCH_SERVER  durable commits: synchronous=FULL" >&2
"$BENCH_BIN/control_plane_bench" --server "$BENCH_SERVER" --clients "$clients" \
  --history "$checkpoints" --window-seconds "$window" --server-pid "$BENCH_PID" \
  --db "$BENCH_WORK/vipu.db" "$@"
