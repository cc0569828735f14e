#!/usr/bin/env bash
# One vipu-server managing MACHINES simulated IPU-Machines (default
# 16,384 = 65,536 IPUs, the design limit of the original) served by PROCS
# vipu-agent processes, each on one shared port with batched registration
# and heartbeats. Measures registration, memory, placement (create latency
# through the server and the pure fabric::Place cost) and restart to ready,
# and prints a table against the targets.
#   bench/scale/run_scale.sh [MACHINES] [PROCS]     (MACHINES: multiple of 16 * PROCS)
#   VIPU_BUILD   build directory holding bin/ (default: build)
#   SCALE_SECONDS  seconds of create/remove cycles per partition size (default 5;
#                  0 skips them, e.g. to measure memory and restarts only)
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${VIPU_BUILD:-build}/bin
machines=${1:-16384}
procs=${2:-16}
seconds=${SCALE_SECONDS:-5}
if (( machines % (16 * procs) != 0 )); then
  echo "MACHINES ($machines) must be a multiple of 16 * PROCS ($((16 * procs)))" >&2
  exit 2
fi
per=$((machines / procs))
ilds=$((machines / 16))  # an ILD is 16 machines (64 IPUs)

work=$(mktemp -d)
server_pid=
agent_pids=()
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  for p in "${agent_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
kb() { awk -v k="$2" '$1 == k":" { print $2 }' "/proc/$1/status"; }
port=$(free_port)
mport=$(free_port)

start_server() {
  rm -f "$work/ready"
  "$bin/vipu-server" --listen "127.0.0.1:$port" --db "$work/vipu.db" --auto-add-agents \
    --ready-file "$work/ready" --metrics-listen "127.0.0.1:$mport" --log-level warn \
    >>"$work/server.log" 2>&1 &
  server_pid=$!
}
# wait_for SECONDS COMMAND...: polls COMMAND until it succeeds or the deadline passes.
wait_for() {
  local deadline=$(($(date +%s) + $1)); shift
  until "$@"; do
    if (( $(date +%s) > deadline )); then return 1; fi
    sleep 0.05
  done
}
ready() { [ -f "$work/ready" ]; }
agents_up() {
  curl -s --max-time 5 "http://127.0.0.1:$mport/metrics" |
    awk '/^vipu_agents\{status="up"\}/ { print $2 }'
}
all_up() { [ "$(agents_up)" = "$machines" ]; }
admin() { "$bin/vipu-admin" --api-host 127.0.0.1 --api-port "$port" "$@"; }
fail() {
  echo "$1" >&2
  tail -20 "$work/server.log" >&2
  exit 1
}

echo "scale: $machines machines ($((machines * 4)) IPUs) in $procs agent processes of $per," \
  "$ilds ILDs; work dir $work" >&2
start_server
wait_for 60 ready || fail "vipu-server did not become ready"
server=$(cat "$work/ready")

t_agents=$(now)
for ((k = 0; k < procs; k++)); do
  "$bin/vipu-agent" --server "$server" --machines "$per" --id-prefix m \
    --first-index $((k * per)) --log-level warn >"$work/agent-$k.out" 2>"$work/agent-$k.log" &
  agent_pids+=($!)
done
wait_for 300 all_up || fail "only $(agents_up) of $machines agents are up after 300 s"
t_registered=$(now)
register_s=$(secs "$t_agents" "$t_registered")
echo "all $machines agents up in $register_s s" >&2

# One cluster of every machine: 1,024 ILDs of 64 IPUs joined by switched
# GW-Links (the IPU-Fabric's design limit; looped GW cabling stops at Pod256).
agents=$(seq -s, -f 'm%g' 0 $((machines - 1)))
t0=$(now)
admin create cluster pod64k --agents "$agents" --num-ipulinkdomains "$ilds" \
  --topology torus --cluster-topology switched >/dev/null || fail "create cluster failed"
admin create allocation all --cluster pod64k >/dev/null || fail "create allocation failed"
cluster_s=$(secs "$t0" "$(now)")
echo "cluster and allocation created in $cluster_s s" >&2

# A partition that lives through the restarts, so reconciliation has work.
"$bin/vipu" --api-host 127.0.0.1 --api-port "$port" create partition keep --size 256 >/dev/null ||
  fail "create partition keep failed"

declare -A create_p50 create_p99 active_p50
for size in 64 256; do
  if ((seconds == 0)); then
    create_p50[$size]=- create_p99[$size]=- active_p50[$size]=-
    continue
  fi
  json=$("$bin/control_plane_bench" --server "$server" --clients 1 --seconds "$seconds" \
    --size "$size" --json | tail -1)
  create_p50[$size]=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["create"]["p50_ms"])' "$json")
  create_p99[$size]=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["create"]["p99_ms"])' "$json")
  active_p50[$size]=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["active"]["p50_ms"])' "$json")
  cycles=$(python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(j["cycles"], j["errors"])' "$json")
  echo "size $size: cycles, errors: $cycles" >&2
done
placement=$("$bin/placement_scale_bench" --iterations 100)
place_us() { echo "$placement" | awk -F'|' -v w="$1" 'index($2, w) { gsub(/ /, "", $3); print $3 }'; }
place64_us=$(place_us "Place 64 IPUs, 90% of ILDs full, fits")
place256_us=$(place_us "Place 256 IPUs, 90% of ILDs full, fits")

server_rss=$(kb "$server_pid" VmRSS)
server_hwm=$(kb "$server_pid" VmHWM)
agents_rss=0
for p in "${agent_pids[@]}"; do agents_rss=$((agents_rss + $(kb "$p" VmRSS))); done

# restart SIGNAL: stop the server, start it on the same database and port,
# time until its ready file appears and until every agent is up again.
restart() {
  kill -"$1" "$server_pid"
  wait "$server_pid" 2>/dev/null || true
  local t0
  t0=$(now)
  start_server
  wait_for 120 ready || fail "vipu-server did not become ready after SIG$1"
  local t_ready
  t_ready=$(now)
  wait_for 120 all_up || fail "only $(agents_up) agents up again after SIG$1"
  restart_ready=$(secs "$t0" "$t_ready")
  restart_up=$(secs "$t0" "$(now)")
  echo "SIG$1: ready in $restart_ready s, all agents up in $restart_up s" >&2
}
restart TERM
term_ready=$restart_ready term_up=$restart_up
restart KILL
kill_ready=$restart_ready kill_up=$restart_up
server_hwm_restarted=$(kb "$server_pid" VmHWM)
"$bin/vipu" --api-host 127.0.0.1 --api-port "$port" get partition keep 2>/dev/null |
  grep -q ACTIVE || echo "warning: partition keep is not ACTIVE after the restarts" >&2

ratio() { awk -v m="$1" -v t="$2" 'BEGIN { if (m == "-") print "-"; else printf "%.2f", m / t }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.0f", k / 1024 }'; }
echo
echo "### Scale: $machines machines ($((machines * 4)) IPUs), $procs agent processes, $ilds ILDs"
echo
echo "| what | target | measured | measured / target |"
echo "|---|---|---|---|"
echo "| server RSS (VmRSS) | <= 1024 MiB | $(mib "$server_rss") MiB | $(ratio "$(mib "$server_rss")" 1024) |"
echo "| server peak RSS (VmHWM, first run / after restarts) | <= 1024 MiB | $(mib "$server_hwm") / $(mib "$server_hwm_restarted") MiB | $(ratio "$(mib "$server_hwm")" 1024) |"
echo "| agents RSS, $procs processes | - | $(mib "$agents_rss") MiB ($((agents_rss / machines)) KiB/machine) | - |"
echo "| all machines registered and up from agent start | - | $register_s s | - |"
echo "| create cluster ($machines agents) + allocation | - | $cluster_s s | - |"
for size in 64 256; do
  echo "| create partition $size IPUs, reply p50 / p99 | <= 10 ms | ${create_p50[$size]} / ${create_p99[$size]} ms | $(ratio "${create_p50[$size]}" 10) |"
  echo "| create partition $size IPUs, reply to ACTIVE p50 | - | ${active_p50[$size]} ms | - |"
done
echo "| fabric::Place 64 IPUs, p50 (1,024 ILDs, 90% full) | <= 10 ms | $place64_us us | $(ratio "$place64_us" 10000) |"
echo "| fabric::Place 256 IPUs, p50 (1,024 ILDs, 90% full) | <= 10 ms | $place256_us us | $(ratio "$place256_us" 10000) |"
echo "| restart after SIGTERM: to ready | <= 5 s | $term_ready s | $(ratio "$term_ready" 5) |"
echo "| restart after SIGTERM: to all agents up | - | $term_up s | - |"
echo "| restart after SIGKILL: to ready | <= 5 s | $kill_ready s | $(ratio "$kill_ready" 5) |"
echo "| restart after SIGKILL: to all agents up | - | $kill_up s | - |"
echo
echo "$placement"
