#!/usr/bin/env bash
# Starts vipu-server --simulate POD (default pod64) on a free port with a
# fresh database, runs the control-plane benchmark, stops the server.
#   bench/run_control_plane.sh [pod] [clients] [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
pod=${1:-pod64}; clients=${2:-1,8,32}; seconds=${3:-10}
work=$(mktemp -d)
trap 'kill $(cat "$work/pid") 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
build/bin/vipu-server --simulate "$pod" --listen 127.0.0.1:0 --db "$work/vipu.db" \
  --ready-file "$work/ready" --log-level warn >"$work/server.log" 2>&1 &
echo $! > "$work/pid"
for _ in $(seq 600); do [ -f "$work/ready" ] && break; sleep 0.1; done
[ -f "$work/ready" ] || { cat "$work/server.log"; exit 1; }
echo "pod: $pod  server: $(cat "$work/ready")  durable commits: synchronous=FULL"
build/bin/control_plane_bench --server "$(cat "$work/ready")" --clients "$clients" --seconds "$seconds"
