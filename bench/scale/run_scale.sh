#!/usr/bin/env bash
# One vipu-server managing MACHINES simulated IPU-Machines (default
# 16,384 = 65,536 IPUs, the design limit of the original) served by PROCS
# vipu-agent processes, each on one shared port with batched registration
# and heartbeats. Measures registration, memory, placement (create latency
# through the server, the pure fabric::Place cost and the rest of a create:
# reply p50 minus Place p50) and restart to ready, and prints a table against
# the targets (RSS <= 512 MiB, create p50 <= 10 ms and p99 <= 25 ms, ready
# <= 2 s after a restart) and a `summary:` line for bench/scale/guard.sh.
#   bench/scale/run_scale.sh [MACHINES] [PROCS]     (MACHINES: multiple of 16 * PROCS)
#   VIPU_BUILD   build directory holding bin/ (default: build)
#   SCALE_SECONDS  seconds of create/remove cycles per partition size (default 5;
#                  0 skips them, e.g. to measure memory and restarts only)
#   VIPU_PLACEMENT_BENCH  placement_scale_bench to time fabric::Place with
#                  (default: VIPU_BUILD's; an older one without --machines times
#                  16,384 machines whatever MACHINES is, and the script says so)
# A pod too small for a size (256 IPUs need 1,024 machines with the partition
# kept through the restarts) shows "-" for it; below 128 machines no partition
# is kept.
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
ipus=$((machines * 4))
# The partition kept through the restarts, so reconciliation has work; as
# large as leaves room for the sizes measured.
if ((ipus >= 1024)); then keep_size=256; elif ((ipus >= 128)); then keep_size=64; else keep_size=0; fi
placement_bench=${VIPU_PLACEMENT_BENCH:-$bin/placement_scale_bench}

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
if ((keep_size > 0)); then
  "$bin/vipu" --api-host 127.0.0.1 --api-port "$port" create partition keep --size "$keep_size" \
    >/dev/null || fail "create partition keep failed"
fi

declare -A create_p50 create_p99 active_p50
for size in 64 256; do
  if ((seconds == 0 || size + keep_size > ipus)); then
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
placement=$("$placement_bench" --iterations 100 --machines "$machines")
if ! echo "$placement" | grep -q "placement on $machines machines"; then
  echo "warning: $placement_bench times another cluster size than $machines machines" \
    "(set VIPU_PLACEMENT_BENCH to one that takes --machines)" >&2
fi
place_us() { echo "$placement" | awk -F'|' -v w="$1" 'index($2, w) { gsub(/ /, "", $3); print $3 }'; }
place64_us=$(place_us "Place 64 IPUs, 90% of ILDs full, fits")
place256_us=$(place_us "Place 256 IPUs, 90% of ILDs full, fits")
# The rest of a create: the reply p50 minus the pure placement p50 (ms).
rest_ms() {
  awk -v c="$1" -v p="$2" 'BEGIN { if (c == "-" || p == "-" || p == "") print "-"; else printf "%.2f", c - p / 1000 }'
}
rest64_ms=$(rest_ms "${create_p50[64]}" "$place64_us")
rest256_ms=$(rest_ms "${create_p50[256]}" "$place256_us")

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
if ((keep_size > 0)); then
  "$bin/vipu" --api-host 127.0.0.1 --api-port "$port" get partition keep 2>/dev/null |
    grep -q ACTIVE || echo "warning: partition keep is not ACTIVE after the restarts" >&2
fi

ratio() { awk -v m="$1" -v t="$2" 'BEGIN { if (m == "-" || m == "") print "-"; else printf "%.2f", m / t }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.0f", k / 1024 }'; }
echo
echo "### Scale: $machines machines ($((machines * 4)) IPUs), $procs agent processes, $ilds ILDs"
echo
echo "| what | target | measured | measured / target |"
echo "|---|---|---|---|"
echo "| server RSS (VmRSS) | <= 512 MiB | $(mib "$server_rss") MiB | $(ratio "$(mib "$server_rss")" 512) |"
echo "| server peak RSS (VmHWM, first run / after restarts) | <= 512 MiB | $(mib "$server_hwm") / $(mib "$server_hwm_restarted") MiB | $(ratio "$(mib "$server_hwm")" 512) |"
echo "| agents RSS, $procs processes | - | $(mib "$agents_rss") MiB ($((agents_rss / machines)) KiB/machine) | - |"
echo "| all machines registered and up from agent start | - | $register_s s | - |"
echo "| create cluster ($machines agents) + allocation | - | $cluster_s s | - |"
for size in 64 256; do
  echo "| create partition $size IPUs, reply p50 / p99 | <= 10 / <= 25 ms | ${create_p50[$size]} / ${create_p99[$size]} ms | $(ratio "${create_p50[$size]}" 10) / $(ratio "${create_p99[$size]}" 25) |"
  echo "| create partition $size IPUs, reply to ACTIVE p50 | - | ${active_p50[$size]} ms | - |"
done
echo "| fabric::Place 64 IPUs, p50 ($ilds ILDs, 90% full) | <= 10 ms | $place64_us us | $(ratio "$place64_us" 10000) |"
echo "| fabric::Place 256 IPUs, p50 ($ilds ILDs, 90% full) | <= 10 ms | $place256_us us | $(ratio "$place256_us" 10000) |"
echo "| rest of a create, 64 IPUs (reply p50 - Place p50) | - | $rest64_ms ms | - |"
echo "| rest of a create, 256 IPUs (reply p50 - Place p50) | - | $rest256_ms ms | - |"
echo "| restart after SIGTERM: to ready | <= 2 s | $term_ready s | $(ratio "$term_ready" 2) |"
echo "| restart after SIGTERM: to all agents up | - | $term_up s | - |"
echo "| restart after SIGKILL: to ready | <= 2 s | $kill_ready s | $(ratio "$kill_ready" 2) |"
echo "| restart after SIGKILL: to all agents up | - | $kill_up s | - |"
echo
echo "$placement"
# One line for scripts (bench/scale/guard.sh): the figures above, "-" when not measured.
echo "summary: machines=$machines rss_mib=$(mib "$server_rss") hwm_mib=$(mib "$server_hwm")" \
  "create64_p50_ms=${create_p50[64]} create64_p99_ms=${create_p99[64]}" \
  "create256_p50_ms=${create_p50[256]} create256_p99_ms=${create_p99[256]}" \
  "place64_us=${place64_us:--} rest64_ms=$rest64_ms rest256_ms=$rest256_ms" \
  "restart_term_s=$term_ready restart_kill_s=$kill_ready"
