#!/usr/bin/env bash
# Installs, builds, starts vipu-server on a simulated IPU-POD16 and shows a
# partition being created and listed. The server keeps running afterwards;
# stop it with: kill $(cat /tmp/vipu-quickstart/server.pid)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
work=/tmp/vipu-quickstart
mkdir -p "$work"
[ -f "$work/server.pid" ] && kill "$(cat "$work/server.pid")" 2>/dev/null || true
rm -f "$work/ready" "$work/vipu.db" "$work/vipu.db-wal" "$work/vipu.db-shm"
set -x
build/bin/vipu-server --simulate pod16 --db "$work/vipu.db" --ready-file "$work/ready" \
  >"$work/server.log" 2>&1 &
{ set +x; } 2>/dev/null
echo $! > "$work/server.pid"
for _ in $(seq 300); do [ -f "$work/ready" ] && break; sleep 0.1; done
[ -f "$work/ready" ] || { cat "$work/server.log"; exit 1; }
set -x
build/bin/vipu --server-version
build/bin/vipu list allocations
build/bin/vipu create partition p1 --size 4
build/bin/vipu create partition p2 --size 8 --num-gcds 2
build/bin/vipu list partitions
build/bin/vipu-admin list agents
{ set +x; } 2>/dev/null
echo "vipu-server is running on $(cat "$work/ready") (log: $work/server.log);"
echo "stop it with: kill \$(cat $work/server.pid)"
