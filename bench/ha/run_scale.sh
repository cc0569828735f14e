#!/usr/bin/env bash
# The HA control plane at the scale of bench/scale: MACHINES simulated
# IPU-Machines (default 16,384) in PROCS vipu-agent processes, three etcd
# members, two vipu-server members. Reports the memory of the leader and of
# each etcd member, etcd's database size against its 2 GiB default quota,
# and after a SIGKILL of the leader: the time to the new leader's first
# successful create and to every machine up on it.
#   bench/ha/run_scale.sh [MACHINES] [PROCS]
set -euo pipefail
cd "$(dirname "$0")/../.."
machines=${1:-16384}; procs=${2:-16}
HA_MEMBER_ARGS=(--reconcile-window-ms 3000)
source bench/ha/ha_lib.sh
rss_mib() { awk '$1 == "VmRSS:" { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }
wait_until() {  # SECONDS COMMAND...
  local deadline=$(($(date +%s) + $1)); shift
  until "$@"; do (( $(date +%s) > deadline )) && return 1; sleep 0.05; done
}
all_up() { [ "$(agents_up "$1")" = "$machines" ]; }
start_etcd
start_member 0
for _ in $(seq 300); do [ "$(leader_index)" -ge 0 ] && break; sleep 0.1; done
start_member 1
t0=$(date +%s.%N)
start_agents "$machines" "$procs"
wait_until 300 all_up 0
t1=$(date +%s.%N)
make_pod "$machines"
"$HA_BIN/vipu" --api-host "$(member_list)" create partition kept --size 256 >/dev/null
echo "registration of $machines machines: $(echo "$t1 - $t0" | bc) s"
echo "leader RSS: $(rss_mib "${HA_MEMBER_PID[0]}") MiB"
for i in 0 1 2; do echo "etcd e$i RSS: $(rss_mib "${HA_PIDS[$i]}") MiB"; done
ETCDCTL_API=3 etcdctl --endpoints "$HA_ETCD" endpoint status -w table
kill -9 "${HA_MEMBER_PID[0]}"; wait "${HA_MEMBER_PID[0]}" 2>/dev/null || true
k=$(date +%s.%N)
until "$HA_BIN/vipu" --api-host "$(member_list)" create partition after --size 4 >/dev/null 2>&1; do
  sleep 0.02
done
c=$(date +%s.%N)
wait_until 120 all_up 1
u=$(date +%s.%N)
echo "after SIGKILL of the leader: first create $(echo "$c - $k" | bc) s, all $machines machines up $(echo "$u - $k" | bc) s"
grep -h "leading: serving" "$HA_WORK/member1.log" | tail -1
echo "new leader RSS: $(rss_mib "${HA_MEMBER_PID[1]}") MiB"
