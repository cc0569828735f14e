#!/usr/bin/env bash
# PopTorch's speed (step_speed.py): the wrapper against plain PyTorch, and
# the pod's part of a step on a partition of IPUS IPUs of a simulated POD.
#
#   bench/poptorch/run.sh [POD] [IPUS]      default: pod64 64
#
# Starts its own vipu-server on a free loopback port, in a directory it
# removes at the end; VIPU_BUILD names the build (default build/).
set -euo pipefail
cd "$(dirname "$0")/../.."
pod=${1:-pod64}
ipus=${2:-64}
build=${VIPU_BUILD:-build}
work=$(mktemp -d /tmp/vipu-poptorch-bench.XXXXXX)
server=
cleanup() {
  [ -z "$server" ] || kill "$server" 2>/dev/null || true
  [ -z "$server" ] || wait "$server" 2>/dev/null || true
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
"$build/bin/vipu-server" --simulate "$pod" --db "$work/vipu.db" --listen 127.0.0.1:0 \
  --ready-file "$work/ready" >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 600); do [ -s "$work/ready" ] && break; sleep 0.1; done
[ -s "$work/ready" ] || { cat "$work/server.log"; echo "vipu-server did not start" >&2; exit 1; }
address=$(cat "$work/ready")
export HOME=$work VIPU_CLI_API_HOST=${address%:*} VIPU_CLI_API_PORT=${address##*:}
"$build/bin/vipu" create partition bench --size "$ipus" >/dev/null
IPUOF_VIPU_API_HOST=${address%:*} IPUOF_VIPU_API_PORT=${address##*:} \
  IPUOF_VIPU_API_PARTITION_ID=bench PYTHONPATH="$build/python" \
  /usr/bin/python3 bench/poptorch/step_speed.py --ipus "$ipus" "${@:3}"
