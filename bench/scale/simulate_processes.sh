#!/usr/bin/env bash
# What `vipu-server --simulate POD --simulate-machines-per-process N` costs:
# the time from start to ready (every machine registered, the cluster made)
# and the memory of the server and all its agent processes, for one agent
# process per ILD (16 machines, the default) against one per machine, as on a
# real pod. Each start is on a fresh database, then SIGTERM.
#   bench/scale/simulate_processes.sh [POD...]      (default: pod64 pod256)
#   VIPU_BUILD   build directory holding bin/ (default: build)
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${VIPU_BUILD:-build}/bin
pods=("$@")
((${#pods[@]})) || pods=(pod64 pod256)
work=$(mktemp -d)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

# Resident memory of a process in KiB (0 once it is gone), and its
# proportional share (shared libraries divided among the processes mapping
# them): the sum of the shares is what the processes cost together.
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
pss_kib() { awk '/^Pss:/ {print $2}' "/proc/$1/smaps_rollup" 2>/dev/null || echo 0; }
# KiB as MiB with `digits` decimals: mib KIB DIVISOR DIGITS
mib() { awk -v k="$1" -v n="$2" -v d="$3" 'BEGIN { printf "%.*f", d, k / 1024 / n }'; }

echo "| pod | machines per process | agent processes | ready after start (s) | server RSS (MiB) | agents together, PSS (MiB) | one agent process, RSS (MiB) |"
echo "|---|---|---|---|---|---|---|"
for pod in "${pods[@]}"; do
  for per in 16 1; do
    dir=$work/$pod-$per
    mkdir -p "$dir"
    start=$(date +%s%N)
    "$bin/vipu-server" --simulate "$pod" --simulate-machines-per-process "$per" \
      --listen 127.0.0.1:0 --db "$dir/vipu.db" --ready-file "$dir/ready" --log-level warn \
      >"$dir/server.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 1 1200); do
      [ -s "$dir/ready" ] && break
      kill -0 "$server_pid" 2>/dev/null || { cat "$dir/server.log" >&2; exit 1; }
      sleep 0.05
    done
    [ -s "$dir/ready" ] || { echo "$pod: not ready after 60 s" >&2; exit 1; }
    ready=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
    children=$(cat "/proc/$server_pid/task/$server_pid/children")
    server_kib=$(rss_kib "$server_pid")
    agents_pss=0
    agents_rss=0
    n=0
    for c in $children; do
      agents_pss=$((agents_pss + $(pss_kib "$c")))
      agents_rss=$((agents_rss + $(rss_kib "$c")))
      n=$((n + 1))
    done
    echo "| $pod | $per | $n | $ready | $(mib "$server_kib" 1 0) | $(mib "$agents_pss" 1 0) | $(mib "$agents_rss" "$n" 1) |"
    kill "$server_pid"
    wait "$server_pid" || true
    server_pid=
  done
done
