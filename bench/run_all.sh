#!/usr/bin/env bash
# Every benchmark of bench/ (except bench/slurm and bench/scale), one after
# the other, each printing its Markdown table. Takes about 5 minutes.
#   VIPU_BUILD=/tmp/build-rel bench/run_all.sh
#   BENCH_SECONDS=10        seconds per client count of the cycle benchmark
#   BENCH_CLIENTS=1,8,32,128
#   BENCH_PODS="pod64 pod256"
#   BENCH_HISTORY=1000,25000,50000,75000,100000  BENCH_WINDOW=5   history checkpoints, window
#   BENCH_PARTITIONS=10000     partitions listed
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${VIPU_BUILD:-build}/bin
seconds=${BENCH_SECONDS:-10}
clients=${BENCH_CLIENTS:-1,8,32,128}
pods=${BENCH_PODS:-pod64 pod256}
history=${BENCH_HISTORY:-1000,25000,50000,75000,100000}
window=${BENCH_WINDOW:-5}
partitions=${BENCH_PARTITIONS:-10000}

echo "## Control plane: create -> ACTIVE -> remove cycles (${seconds} s per row)"
for pod in $pods; do
  echo; echo "### --simulate $pod"; echo
  bench/run_control_plane.sh "$pod" "$clients" "$seconds"
done

echo; echo "## History: windows after $history recorded operations (pod64, 32 clients)"; echo
bench/run_history.sh pod64 32 "$history" "$window"

echo; echo "## List $partitions partitions through vipu-server"; echo
bench/run_list_partitions.sh "$partitions"

echo; echo "## Storage and placement micro-benchmarks"; echo
"$bin/placement_list_bench"

echo; echo "## Model speed: one PredictStep"; echo
"$bin/model_speed_bench"
