# Sourced by the HA bench scripts: a highly available control plane on this
# machine, every part a real process on loopback ports with its data in a
# temporary directory, all stopped on exit.
#   VIPU_BUILD   build directory holding bin/ (default: build)
#   start_etcd              three etcd members; sets HA_ETCD (client URLs)
#   start_member I          vipu-server member I (0, 1, ...) on HA_ADDR[I]
#   start_agents N          one vipu-agent serving N machines (ids m0..m<N-1>)
#   leader_index            prints the index of the member that leads, or -1
#   make_pod N              cluster "pod" of the N machines (N/16 ILDs) and allocation "default"
#   HA_SECURE=1             secure mode: certificates from --tls-init, members with --secure,
#                           agents over mutual TLS, and every vipu/vipu-admin call with the
#                           default admin's key (ha_secure_init N before start_member,
#                           ha_secure_login once a member leads)
HA_BIN=${VIPU_BUILD:-build}/bin
HA_WORK=$(mktemp -d)
HA_PIDS=()
HA_MEMBER_PID=()
HA_ADDR=()
HA_METRICS=()
ha_cleanup() {
  for p in "${HA_MEMBER_PID[@]}" "${HA_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$HA_WORK"
}
trap ha_cleanup EXIT

# A free port below the ephemeral range, where no outgoing connection of the
# thousands the agents open can take it between this choice and its use.
ha_free_port() {
  python3 - <<'PY'
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(1000):
    port = random.randrange(20000, low)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    break
PY
}

start_etcd() {
  local cluster="" i ports=()
  for i in 0 1 2; do ports+=("$(ha_free_port)" "$(ha_free_port)"); done
  for i in 0 1 2; do cluster+="e$i=http://127.0.0.1:${ports[$((2*i+1))]},"; done
  HA_ETCD=""
  for i in 0 1 2; do
    local c=${ports[$((2*i))]} p=${ports[$((2*i+1))]}
    etcd --name "e$i" --data-dir "$HA_WORK/e$i" --listen-client-urls "http://127.0.0.1:$c" \
      --advertise-client-urls "http://127.0.0.1:$c" --listen-peer-urls "http://127.0.0.1:$p" \
      --initial-advertise-peer-urls "http://127.0.0.1:$p" --initial-cluster "${cluster%,}" \
      --initial-cluster-state new --log-level error >"$HA_WORK/e$i.log" 2>&1 &
    HA_PIDS+=($!)
    HA_ETCD+="http://127.0.0.1:$c,"
  done
  HA_ETCD=${HA_ETCD%,}
  for _ in $(seq 300); do
    ETCDCTL_API=3 etcdctl --endpoints "$HA_ETCD" endpoint health >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "etcd did not start" >&2; exit 1
}

# ha_secure_init N: the pod's CA, server and client certificates, and one
# agent certificate naming machines m0..m<N-1>.
ha_secure_init() {
  local ids i
  ids=$(for i in $(seq 0 $(($1 - 1))); do printf 'm%d+' "$i"; done)
  "$HA_BIN/vipu-server" --tls-init "$HA_WORK/tls" --tls-agents "${ids%+}@127.0.0.1" >/dev/null
}

# ha_secure_login: the default admin's key, printed once by the first
# leader, for every later vipu and vipu-admin call (through the environment).
ha_secure_login() {
  local key=""
  for _ in $(seq 300); do
    key=$(sed -n "s/^Access key: '\(.*\)'$/\1/p" "$HA_WORK"/member*.log | head -1)
    [ -n "$key" ] && break
    sleep 0.1
  done
  [ -n "$key" ] || { echo "no default admin key in the members' logs" >&2; exit 1; }
  export VIPU_CLI_API_USER_ID=bench VIPU_CLI_API_ACCESS_KEY="$key"
}

ha_secure() { [ "${HA_SECURE:-0}" = 1 ]; }

start_member() {
  local i=$1 secure=()
  [ -n "${HA_ADDR[$i]:-}" ] || HA_ADDR[$i]="127.0.0.1:$(ha_free_port)"
  [ -n "${HA_METRICS[$i]:-}" ] || HA_METRICS[$i]="127.0.0.1:$(ha_free_port)"
  ha_secure && secure=(--secure --tls-dir "$HA_WORK/tls" --default-user-id bench
    --audit-log "$HA_WORK/audit$i.log")
  "$HA_BIN/vipu-server" --etcd-endpoints "$HA_ETCD" --listen "${HA_ADDR[$i]}" --config /dev/null \
    --auto-add-agents --log-level info --metrics-listen "${HA_METRICS[$i]}" "${HA_MEMBER_ARGS[@]}" \
    "${secure[@]}" >>"$HA_WORK/member$i.log" 2>&1 &
  HA_MEMBER_PID[$i]=$!
}

# start_agents N [PROCS]: N machines m0..m<N-1> in PROCS vipu-agent processes.
start_agents() {
  local servers procs=${2:-1} per p tls=()
  servers=$(IFS=,; echo "${HA_ADDR[*]}")
  per=$(($1 / procs))
  ha_secure && tls=(--tls-ca "$HA_WORK/tls/agents/m0/ca.pem" --tls-cert "$HA_WORK/tls/agents/m0/cert.pem"
    --tls-key "$HA_WORK/tls/agents/m0/key.pem")
  for p in $(seq 0 $((procs - 1))); do
    "$HA_BIN/vipu-agent" --server "$servers" --machines "$per" --id-prefix m \
      --first-index $((p * per)) --log-level warn "${tls[@]}" >"$HA_WORK/agents$p.log" 2>&1 &
    HA_PIDS+=($!)
  done
}

# agents_up I: machines the metrics of member I count as up.
agents_up() {
  local url="http://${HA_METRICS[$1]}/metrics" tls=()
  ha_secure && url="https://${HA_METRICS[$1]}/metrics" tls=(--cacert "$HA_WORK/tls/server/ca.pem")
  curl -s --max-time 5 "${tls[@]}" "$url" |
    awk '/^vipu_agents\{status="up"\}/ { print $2 }'
}

member_list() { (IFS=,; echo "${HA_ADDR[*]}"); }

leader_index() {
  local i
  for i in "${!HA_ADDR[@]}"; do
    if "$HA_BIN/vipu" --api-host "${HA_ADDR[$i]}" --server-version 2>/dev/null | grep -q '^role: leader'; then
      echo "$i"; return
    fi
  done
  echo -1
}

make_pod() {
  local agents i
  agents=$(for i in $(seq 0 $(($1 - 1))); do printf 'm%d,' "$i"; done)
  # An ILD is at most 16 machines; more are a switched cluster of ILDs.
  local shape=()
  (( $1 > 16 )) && shape=(--num-ipulinkdomains $(($1 / 16)) --topology torus --cluster-topology switched)
  for _ in $(seq 300); do
    "$HA_BIN/vipu-admin" --api-host "$(member_list)" create cluster pod --agents "${agents%,}" \
      "${shape[@]}" >/dev/null 2>&1 && break
    sleep 0.1
  done
  "$HA_BIN/vipu-admin" --api-host "$(member_list)" create allocation default --cluster pod >/dev/null
}
