#!/usr/bin/env bash
# What vipu_spank.so costs a job: srun start -> task start, and the whole
# `srun` job, without the plugin, with it but no --ipus, and with --ipus=N.
#   bench/slurm/spank_latency.sh [runs=20] [ipus=4]
# Starts a private munged + slurmctld + slurmd (slurm.conf.in + gres.conf +
# profiles/tuned.conf, as run_side_by_side.sh does) and vipu-server
# --simulate pod16, runs spank_latency.py once per mode, prints a markdown
# table. Every process it started and the temp dir are removed on exit, also
# on failure. BUILD_DIR (default build) holds bin/vipu-server, bin/vipu and
# slurm/vipu_spank.so.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$repo/build}
[[ $build = /* ]] || build=$repo/$build
runs=${1:-20}; ipus=${2:-4}
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "runs: must be a positive integer, got '$runs'" >&2; exit 2; }
[[ $ipus =~ ^[1-9][0-9]*$ ]] || { echo "ipus: must be a positive integer, got '$ipus'" >&2; exit 2; }

missing=()
for b in munged mungekey slurmctld slurmd srun sinfo python3; do
  command -v "$b" >/dev/null || missing+=("$b")
done
if ((${#missing[@]})); then
  echo "missing: ${missing[*]}; apt-get install -y slurmctld slurmd slurm-client munge" >&2; exit 1
fi
for f in bin/vipu-server bin/vipu slurm/vipu_spank.so; do
  [[ -e $build/$f ]] || { echo "$build/$f not built: ninja -C $build vipu-server vipu vipu_spank" >&2; exit 1; }
done
[[ $(id -u) = 0 ]] || { echo "run as root: slurmd runs jobs as their user and the config says SlurmUser=root" >&2; exit 1; }

work=$(mktemp -d /tmp/slurm-spank-latency.XXXXXX)
pids=()
start() { setsid "$@" & pids+=($!); }
alive() { local s; s=$(ps -o stat= -p "$1" 2>/dev/null) && [[ $s != Z* ]]; }
cleanup() {
  local rc=$? i deadline=$((SECONDS + 10))
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM -- "-${pids[i]}" 2>/dev/null || true; done
  for i in "${pids[@]}"; do
    while alive "$i" && ((SECONDS < deadline)); do sleep 0.1; done
    kill -KILL -- "-$i" 2>/dev/null || true
    wait "$i" 2>/dev/null || true
  done
  if ((rc != 0)) && [[ -d $work/log ]]; then
    echo "--- failed (exit $rc); last log lines:" >&2
    tail -n 15 "$work"/log/* >&2 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
wait_for() {  # wait_for DESCRIPTION TIMEOUT_S COMMAND...: polls until COMMAND succeeds
  local what=$1 deadline=$((SECONDS + $2)); shift 2
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || { echo "timed out waiting for $what" >&2; return 1; }
    sleep 0.1
  done
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'; }

start "$build/bin/vipu-server" --simulate pod16 --listen 127.0.0.1:0 --db "$work/vipu.db" \
  --ready-file "$work/ready" --log-level warn >"$work/vipu-server.log" 2>&1
wait_for "vipu-server ready file" 60 test -s "$work/ready"
vipu_port=$(sed 's/.*://' "$work/ready")

host=$(hostname -s)
mkdir -p "$work"/{etc,state,spool,log,munge}
chmod 755 "$work" "$work/munge"
ctld_port=$(free_port); slurmd_port=$(free_port)
while [[ $slurmd_port = "$ctld_port" ]]; do slurmd_port=$(free_port); done
sed -e "s|@HOST@|$host|g" -e "s|@DIR@|$work|g" -e "s|@CTLD_PORT@|$ctld_port|g" \
  -e "s|@SLURMD_PORT@|$slurmd_port|g" -e "s|@CPUS@|$(nproc)|g" "$here/slurm.conf.in" >"$work/etc/slurm.conf"
grep -v '^#' "$here/profiles/tuned.conf" >>"$work/etc/slurm.conf"
echo "PlugStackConfig=$work/etc/plugstack.conf" >>"$work/etc/slurm.conf"
cp "$here/gres.conf" "$work/etc/gres.conf"
: >"$work/etc/plugstack.conf"
export SLURM_CONF=$work/etc/slurm.conf

mungekey -c -k "$work/munge/munge.key" >/dev/null 2>&1
chmod 400 "$work/munge/munge.key"
start munged -F --force --socket="$work/munge/munge.socket" --key-file="$work/munge/munge.key" \
  --pid-file="$work/munge/munged.pid" --seed-file="$work/munge/munged.seed" \
  --log-file="$work/log/munged.log" >>"$work/log/munged.out" 2>&1
wait_for "munged socket" 20 test -S "$work/munge/munge.socket"
start slurmctld -D -c -f "$SLURM_CONF" >>"$work/log/slurmctld.out" 2>&1
slurmd_pid=
# slurmd reads plugstack.conf when it starts (to know whether to run the
# plugin's job epilog), so each mode gets a fresh slurmd.
restart_slurmd() {
  if [[ -n $slurmd_pid ]]; then
    kill -TERM -- "-$slurmd_pid" 2>/dev/null || true
    wait "$slurmd_pid" 2>/dev/null || true
    unset 'pids[-1]'
  fi
  start slurmd -D -f "$SLURM_CONF" >>"$work/log/slurmd.out" 2>&1
  slurmd_pid=$!
  wait_for "sinfo to show $host idle" 60 sh -c '[ "$(sinfo -h -N -o %T)" = idle ]'
}
no_slurm_partition() { ! "$build/bin/vipu" --api-port "$vipu_port" list partitions | grep -q slurm_; }

cd "$work"
plugin_line="required $build/slurm/vipu_spank.so api-host=127.0.0.1 api-port=$vipu_port vipu=$build/bin/vipu"
results=()
measure() {  # measure LABEL PLUGSTACK_LINE SRUN_ARGS...
  local label=$1 line=$2; shift 2
  echo "$line" >"$work/etc/plugstack.conf"
  restart_slurmd
  python3 "$here/spank_latency.py" --runs 2 --label warmup -- "$@" >/dev/null
  wait_for "the partitions of the warm-up jobs to go" 30 no_slurm_partition
  results+=("$(python3 "$here/spank_latency.py" --runs "$runs" --label "$label" -- "$@")")
  wait_for "the partitions of the jobs to go" 30 no_slurm_partition
}
measure "no plugin" ""
measure "plugin, no --ipus" "$plugin_line"
measure "plugin, --ipus=$ipus" "$plugin_line" "--ipus=$ipus"

echo "slurm $(slurmctld -V | awk '{print $2}'), profile tuned, vipu-server --simulate pod16, host=$host cores=$(nproc), runs=$runs"
echo
echo "| mode | srun -> task p50 / p90 / mean ms | whole job p50 / p90 / mean ms |"
echo "|---|---|---|"
for r in "${results[@]}"; do
  python3 -c '
import json, sys
r = json.loads(sys.argv[1])
f = lambda d: "%s / %s / %s" % (d["p50"], d["p90"], d["mean"])
print("| %s | %s | %s |" % (r["mode"], f(r["to_task_ms"]), f(r["job_ms"])))' "$r"
done
