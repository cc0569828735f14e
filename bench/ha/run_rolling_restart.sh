#!/usr/bin/env bash
# A rolling restart under load: three etcd members, MEMBERS vipu-server
# members, 16 machines in one vipu-agent, and CLIENTS clients that each
# create a partition of one IPU and remove it again, over and over, through
# the member list (`vipu --api-host A,B,...`: the members in turn, honouring
# retry-after). RESTARTS times: SIGTERM the leader (what `systemctl restart`
# sends), wait for it to exit, start it again, wait until it serves as a
# standby. Prints, per restart, how long the stopped member took to exit and
# the longest gap between two acknowledged changes from the SIGTERM to the
# restarted member serving; then their median and max, the changes that
# failed, and the acknowledged changes the state no longer shows.
#   bench/ha/run_rolling_restart.sh [restarts] [clients] [members]   (default 10 6 2)
#   HA_MEMBER_ARGS   more flags for every member (e.g. --etcd-lease-ms 2000)
#   HA_SIGNAL        the signal that stops the leader (default TERM; KILL
#                    measures an unplanned failover under the same load)
#   HA_LOGS          a directory to copy the members' and clients' logs to
set -euo pipefail
cd "$(dirname "$0")/../.."
restarts=${1:-10}; clients=${2:-6}; members=${3:-2}
HA_MEMBER_ARGS=(${HA_MEMBER_ARGS:-})
source bench/ha/ha_lib.sh
start_etcd
for i in $(seq 0 $((members - 1))); do start_member "$i"; done
start_agents 16
for _ in $(seq 300); do [ "$(leader_index)" -ge 0 ] && break; sleep 0.1; done
make_pod 16
list=$(member_list)
now_ms() { date +%s%3N; }

# One client: create c<I>-<N>, remove it, next N; every outcome a line
# "ms op name ok|fail|gone". A create that failed is not repeated under its
# name (its outcome may be unknown); a remove is repeated until it is
# acknowledged or the partition is gone.
client() {
  local i=$1 n=0 out
  while [ ! -e "$HA_WORK/stop" ]; do
    n=$((n + 1))
    if "$HA_BIN/vipu" --api-host "$list" create partition "c$i-$n" --size 1 >/dev/null 2>"$HA_WORK/c$i.err"; then
      echo "$(now_ms) create c$i-$n ok"
    else
      echo "$(now_ms) create c$i-$n fail $(tr '\n' ' ' <"$HA_WORK/c$i.err")"
      continue
    fi
    while :; do
      if "$HA_BIN/vipu" --api-host "$list" remove partition "c$i-$n" >/dev/null 2>"$HA_WORK/c$i.err"; then
        echo "$(now_ms) remove c$i-$n ok"; break
      fi
      out=$(tr '\n' ' ' <"$HA_WORK/c$i.err")
      if grep -q "not found\|NOT_FOUND\|does not exist" <<<"$out"; then
        echo "$(now_ms) remove c$i-$n gone"; break
      fi
      echo "$(now_ms) remove c$i-$n fail $out"
      [ -e "$HA_WORK/stop" ] && break
    done
  done
}
client_pids=()
for i in $(seq 1 "$clients"); do client "$i" >"$HA_WORK/client$i.log" & client_pids+=($!); done
sleep 2  # the clients' steady pace before the first restart

windows=()
for r in $(seq "$restarts"); do
  # After a SIGKILL the next leader takes the lease's time: wait for it.
  for _ in $(seq 300); do l=$(leader_index); [ "$l" -ge 0 ] && break; sleep 0.1; done
  if [ "$l" -lt 0 ]; then
    touch "$HA_WORK/stop"
    echo "no leader before restart $r" >&2
    if [ -n "${HA_LOGS:-}" ]; then mkdir -p "$HA_LOGS" && cp "$HA_WORK"/*.log "$HA_LOGS/"; fi
    exit 1
  fi
  [ "$r" -gt 1 ] && sleep 2  # the load settles on the new leader before the next restart
  t0=$(now_ms)
  kill "-${HA_SIGNAL:-TERM}" "${HA_MEMBER_PID[$l]}"
  wait "${HA_MEMBER_PID[$l]}" 2>/dev/null || true
  t_exit=$(now_ms)
  start_member "$l"
  for _ in $(seq 300); do
    "$HA_BIN/vipu" --api-host "${HA_ADDR[$l]}" --server-version 2>/dev/null | grep -q '^role: standby' && break
    sleep 0.05
  done
  t1=$(now_ms)
  windows+=("$r $t0 $t_exit $t1")
done
touch "$HA_WORK/stop"
wait "${client_pids[@]}" 2>/dev/null || true

cat "$HA_WORK"/client*.log | sort -n >"$HA_WORK/all.log"
if [ -n "${HA_LOGS:-}" ]; then mkdir -p "$HA_LOGS" && cp "$HA_WORK"/member*.log "$HA_WORK/all.log" "$HA_LOGS/"; fi
"$HA_BIN/vipu" --api-host "$list" list partitions >"$HA_WORK/final.txt" 2>&1 || true
printf '%s\n' "${windows[@]}" >"$HA_WORK/windows.txt"
python3 - "$HA_WORK/all.log" "$HA_WORK/windows.txt" "$HA_WORK/final.txt" <<'PY'
import re, statistics, sys
events = [l.split(None, 3) for l in open(sys.argv[1]) if l.strip()]
acks = sorted(int(e[0]) for e in events if e[3].startswith("ok") or e[3].startswith("gone"))
gaps, exits = [], []
for line in open(sys.argv[2]):
    r, t0, t_exit, t1 = map(int, line.split())
    inside = [a for a in acks if t0 <= a <= t1]
    before = [a for a in acks if a < t0]
    after = [a for a in acks if a > t1]
    points = ([before[-1]] if before else []) + inside + ([after[0]] if after else [])
    gap = max((b - a for a, b in zip(points, points[1:])), default=t1 - t0)
    gaps.append(gap)
    exits.append(t_exit - t0)
    print(f"restart {r:2d}: stopped member exited after {t_exit - t0} ms; "
          f"longest gap between acknowledged changes {gap} ms")
failed = [e for e in events if e[3].startswith("fail")]
state = {}
for e in events:
    op, name, outcome = e[1], e[2], e[3].split()[0]
    if op == "create" and outcome == "ok":
        state[name] = True
    elif op == "remove" and outcome in ("ok", "gone"):
        state[name] = False
listed = set(re.findall(r"\b(c\d+-\d+)\b", open(sys.argv[3]).read()))
lost = [n for n, present in state.items() if present and n not in listed]
lost += [n for n, present in state.items() if not present and n in listed]
print(f"over {len(gaps)} restarts: longest gap median {statistics.median(gaps):.0f} ms, "
      f"max {max(gaps)} ms; stopped member exited within {max(exits)} ms")
print(f"changes: {len(acks)} acknowledged, {len(failed)} failed, {len(lost)} acknowledged and lost")
kinds = {}
for e in failed:
    m = re.search(r"(UNAVAILABLE|CANCELLED|DEADLINE_EXCEEDED|[A-Z_]{6,})", e[3])
    kinds[m.group(1) if m else e[3][:60]] = kinds.get(m.group(1) if m else e[3][:60], 0) + 1
for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]):
    print(f"  failed: {v} x {k}")
PY
