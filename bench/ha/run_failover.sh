#!/usr/bin/env bash
# Failover time of the HA control plane: three etcd members, two vipu-server
# members, one vipu-agent of 4 machines. KILLS times: SIGKILL the leader, then
# create a partition through the member list until one succeeds; the time
# from the kill to that success, and from the kill to every machine up again
# on the new leader. Prints min, median and max.
#   bench/ha/run_failover.sh [kills] [lease-ms] [secure]
# With "secure", everything runs in secure mode (mutual TLS, access keys).
#   HA_LOGS   a directory to copy the members' logs and the kill times to
set -euo pipefail
cd "$(dirname "$0")/../.."
kills=${1:-20}; lease=${2:-3000}
HA_MEMBER_ARGS=(--etcd-lease-ms "$lease")
[ "${3:-}" = secure ] && HA_SECURE=1
source bench/ha/ha_lib.sh
start_etcd
if ha_secure; then
  ha_secure_init 4
  export VIPU_CLI_API_TLS_CA=$HA_WORK/tls/client/ca.pem VIPU_CLI_API_TLS_CERT=$HA_WORK/tls/client/cert.pem \
    VIPU_CLI_API_TLS_KEY=$HA_WORK/tls/client/key.pem
fi
start_member 0
start_member 1
ha_secure && ha_secure_login
start_agents 4
for _ in $(seq 300); do [ "$(leader_index)" -ge 0 ] && break; sleep 0.1; done
make_pod 4
times=()
for k in $(seq "$kills"); do
  l=$(leader_index)
  [ "$l" -ge 0 ] || { echo "no leader before kill $k" >&2; exit 1; }
  t0=$(date +%s.%N)
  [ -n "${HA_LOGS:-}" ] && echo "kill $k member $l at $(date -u +%T.%3N)" >>"$HA_WORK/kills.txt"
  kill -9 "${HA_MEMBER_PID[$l]}"; wait "${HA_MEMBER_PID[$l]}" 2>/dev/null || true
  until "$HA_BIN/vipu" --api-host "$(member_list)" create partition "f$k" --size 4 >/dev/null 2>&1; do
    sleep 0.02
  done
  t1=$(date +%s.%N)
  times+=("$(echo "$t1 - $t0" | bc)")
  "$HA_BIN/vipu" --api-host "$(member_list)" remove partition "f$k" >/dev/null
  start_member "$l"
  # The restarted member is a standby again before the next kill.
  for _ in $(seq 300); do
    "$HA_BIN/vipu" --api-host "${HA_ADDR[$l]}" --server-version 2>/dev/null | grep -q '^role: standby' && break
    sleep 0.1
  done
  printf 'kill %2d: first create %.2f s after SIGKILL\n' "$k" "${times[-1]}"
done
if [ -n "${HA_LOGS:-}" ]; then mkdir -p "$HA_LOGS" && cp "$HA_WORK"/member*.log "$HA_WORK/kills.txt" "$HA_LOGS/"; fi
printf '%s\n' "${times[@]}" | sort -n | awk -v lease="$lease" -v mode="$([ "${HA_SECURE:-0}" = 1 ] && echo secure || echo plaintext)" '
  { v[NR] = $1 } END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "failover over %d kills (lease %d ms, %s): min %.2f s, median %.2f s, max %.2f s\n", NR, lease, mode, v[1], m, v[NR]
  }'
