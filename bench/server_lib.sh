# Sourced by the bench scripts: start and stop one vipu-server on a free
# loopback port with a fresh database in a temporary directory.
#   VIPU_BUILD   build directory holding bin/ (default: build)
#   start_server ARGS...   sets BENCH_WORK, BENCH_SERVER (host:port), BENCH_PID
BENCH_BIN=${VIPU_BUILD:-build}/bin
BENCH_WORK=$(mktemp -d)
BENCH_PID=
stop_server() {
  if [ -n "$BENCH_PID" ]; then
    kill "$BENCH_PID" 2>/dev/null || true
    wait "$BENCH_PID" 2>/dev/null || true
    BENCH_PID=
  fi
}
trap 'stop_server; rm -rf "$BENCH_WORK"' EXIT
start_server() {
  rm -f "$BENCH_WORK/ready"
  "$BENCH_BIN/vipu-server" --listen 127.0.0.1:0 --ready-file "$BENCH_WORK/ready" \
    --log-level warn "$@" >"$BENCH_WORK/server.log" 2>&1 &
  BENCH_PID=$!
  for _ in $(seq 1200); do
    [ -f "$BENCH_WORK/ready" ] && break
    kill -0 "$BENCH_PID" 2>/dev/null || break
    sleep 0.1
  done
  if [ ! -f "$BENCH_WORK/ready" ]; then
    echo "vipu-server did not become ready:" >&2
    cat "$BENCH_WORK/server.log" >&2
    exit 1
  fi
  BENCH_SERVER=$(cat "$BENCH_WORK/ready")
}
