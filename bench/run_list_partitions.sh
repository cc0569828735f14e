#!/usr/bin/env bash
# ListPartitions of N partitions (default 10,000) through a real vipu-server:
# the database is pre-populated with the storage library (see
# list_partitions_bench.cc for why), then the server serves it.
#   bench/run_list_partitions.sh [partitions] [grpc calls] [cli calls] [flags, e.g. --json]
set -euo pipefail
cd "$(dirname "$0")/.."
partitions=${1:-10000}; calls=${2:-50}; cli_calls=${3:-20}
shift $(( $# < 3 ? $# : 3 ))
source bench/server_lib.sh
"$BENCH_BIN/list_partitions_bench" populate --db "$BENCH_WORK/vipu.db" --partitions "$partitions"
start_server --db "$BENCH_WORK/vipu.db"
"$BENCH_BIN/list_partitions_bench" measure --server "$BENCH_SERVER" --partitions "$partitions" \
  --calls "$calls" --vipu "$BENCH_BIN/vipu" --cli-calls "$cli_calls" "$@"
