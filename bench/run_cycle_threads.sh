#!/usr/bin/env bash
# Where a create -> ACTIVE -> remove cycle's server CPU goes, by thread: the
# CPU (utime + stime) and the context switches (voluntary and involuntary)
# each of the server's thread names spends per cycle, from
# /proc/PID/task/*/{stat,status} read before and after a window of a
# control_plane_bench run against vipu-server --simulate POD.
#   bench/run_cycle_threads.sh [pod] [clients] [seconds]
#   VIPU_BUILD=/tmp/build-before bench/run_cycle_threads.sh pod64 1 6
set -euo pipefail
cd "$(dirname "$0")/.."
pod=${1:-pod64}; clients=${2:-1}; seconds=${3:-6}
source bench/server_lib.sh
start_server --simulate "$pod" --db "$BENCH_WORK/vipu.db"
# The window starts once the clients run and ends before they stop.
"$BENCH_BIN/control_plane_bench" --server "$BENCH_SERVER" --clients "$clients" \
  --seconds $((seconds + 6)) --json >"$BENCH_WORK/bench.json" 2>&1 &
bench=$!
ticks=$(getconf CLK_TCK)
snapshot() {
  for task in /proc/"$BENCH_PID"/task/*; do
    # comm may hold spaces; the fields after it are counted from its ')'.
    local comm cpu switches
    comm=$(tr ' ' _ <"$task/comm")
    cpu=$(sed 's/.*) //' "$task/stat" | awk '{print $12 + $13}')
    switches=$(awk '/^(non)?voluntary_ctxt_switches/ {s += $2} END {print s}' "$task/status")
    echo "${task##*/} $comm $cpu $switches"
  done | sort
}
sleep 3
snapshot >"$BENCH_WORK/before"
sleep "$seconds"
snapshot >"$BENCH_WORK/after"
wait "$bench"
cycles_per_s=$(grep -o '"cycles_per_s":[0-9.]*' "$BENCH_WORK/bench.json" | head -1 | cut -d: -f2)
if [ -z "$cycles_per_s" ]; then
  echo "control_plane_bench gave no cycles/s:" >&2
  cat "$BENCH_WORK/bench.json" >&2
  exit 1
fi
echo "pod: $pod  clients: $clients  window: ${seconds} s  cycles/s over the whole run: $cycles_per_s"
echo "| server thread | threads | CPU ms / cycle | context switches / cycle |"
echo "|---|---|---|---|"
# Threads present in both snapshots; one that came and went in between is
# not counted (the sync server starts few once warm).
join "$BENCH_WORK/before" "$BENCH_WORK/after" | awk -v c="$cycles_per_s" -v s="$seconds" -v t="$ticks" '
  { n[$2]++; cpu[$2] += $6 - $3; sw[$2] += $7 - $4 }
  END {
    for (k in n) {
      total_cpu += cpu[k]; total_sw += sw[k]
      printf "| %s | %d | %.3f | %.2f |\n", k, n[k], cpu[k] * 1000 / t / (s * c), sw[k] / (s * c)
    }
    printf "| all | | %.3f | %.2f |\n", total_cpu * 1000 / t / (s * c), total_sw / (s * c)
  }' | sort -t'|' -k4 -nr
