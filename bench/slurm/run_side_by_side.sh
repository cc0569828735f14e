#!/usr/bin/env bash
# Control plane vs Slurm, same machine, same run, same clients and duration.
#   bench/slurm/run_side_by_side.sh [--slurm-tuned | --slurm-profile NAME|FILE] [--slurm-mode salloc|sbatch]
#                                   [--slurm-only] [clients=1,8,32] [seconds=20]
# 1. Starts a private munged + slurmctld + slurmd (state saving on) from
#    slurm.conf.in + gres.conf + profiles/{defaults,tuned}.conf in a temp dir,
#    waits until the node is idle with ipu:64, drives the salloc (or sbatch)
#    cycle with slurm_cycle_driver.py, stops Slurm.
# 2. Starts vipu-server --simulate pod64 and runs control_plane_bench.
# 3. Prints one markdown table with the ratios (side_by_side_table.py).
# Every process it started and the temp dir are removed on exit, also on failure.
# BUILD_DIR (default build) holds bin/vipu-server and bin/control_plane_bench.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$repo/build}
[[ $build = /* ]] || build=$repo/$build

profile=defaults mode=salloc slurm_only=0
need_value() { (($2 >= 2)) || { echo "$1: needs a value" >&2; exit 2; }; }
while [[ ${1:-} = -* ]]; do
  case $1 in
    --slurm-tuned) profile=tuned; shift ;;
    --slurm-profile) need_value "$1" $#; profile=$2; shift 2 ;;
    --slurm-only) slurm_only=1; shift ;;
    --slurm-mode) need_value "$1" $#; mode=$2; shift 2 ;;
    --slurm-mode=*) mode=${1#*=}; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
done
clients=${1:-1,8,32}; seconds=${2:-20}
profile_file=$here/profiles/$profile.conf
[[ $profile = */* ]] && profile_file=$profile
[[ -f $profile_file ]] || { echo "--slurm-profile: no file $profile_file" >&2; exit 2; }
[[ $mode = salloc || $mode = sbatch ]] || { echo "--slurm-mode: must be salloc or sbatch, got '$mode'" >&2; exit 2; }
[[ $clients =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || { echo "clients: must be a comma list of positive integers, got '$clients'" >&2; exit 2; }
if [[ ! $seconds =~ ^[0-9]+([.][0-9]+)?$ || $seconds =~ ^0+([.]0*)?$ ]]; then
  echo "seconds: must be a positive number, got '$seconds'" >&2; exit 2
fi

missing=()
for b in munged mungekey slurmctld slurmd salloc sbatch squeue sinfo python3; do
  command -v "$b" >/dev/null || missing+=("$b")
done
if ((${#missing[@]})); then
  echo "missing: ${missing[*]}" >&2
  echo "install Slurm and munge (not part of scripts/install-deps.sh; CI does not need them):" >&2
  echo "  apt-get install -y slurmctld slurmd slurm-client munge" >&2
  exit 1
fi
for b in vipu-server control_plane_bench; do
  [[ -x $build/bin/$b ]] || { echo "$build/bin/$b not built: ninja -C $build vipu-server control_plane_bench" >&2; exit 1; }
done
[[ $(id -u) = 0 ]] || { echo "run as root: slurmd runs jobs as their user and the config says SlurmUser=root" >&2; exit 1; }

work=$(mktemp -d /tmp/slurm-side-by-side.XXXXXX)
pids=()
# Everything runs in its own process group (setsid) so that stopping it also
# stops its children (the driver's salloc processes, vipu-server's agents).
start() { setsid "$@" & pids+=($!); }
# run_fg CMD...: like running CMD in the foreground, but a TERM/INT to this
# script fires the trap at once instead of after CMD ends.
run_fg() { start "$@"; local p=$! rc=0; wait "$p" || rc=$?; unset 'pids[-1]'; return "$rc"; }
alive() { local s; s=$(ps -o stat= -p "$1" 2>/dev/null) && [[ $s != Z* ]]; }
stop_pids() {  # TERM what we started, newest first; KILL what is left after 10 s
  local i deadline=$((SECONDS + 10))
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM -- "-${pids[i]}" 2>/dev/null || true; done
  for i in "${pids[@]}"; do
    while alive "$i" && ((SECONDS < deadline)); do sleep 0.1; done
    kill -KILL -- "-$i" 2>/dev/null || true
    wait "$i" 2>/dev/null || true
  done
  pids=()
}
cleanup() {
  local rc=$?
  stop_pids
  if ((rc != 0)) && [[ -d $work/log ]]; then
    echo "--- failed (exit $rc); last log lines:" >&2
    tail -n 15 "$work"/log/* >&2 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_for DESCRIPTION TIMEOUT_S COMMAND...: polls COMMAND until it succeeds.
wait_for() {
  local what=$1 deadline=$((SECONDS + $2)); shift 2
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || { echo "timed out waiting for $what" >&2; return 1; }
    sleep 0.1
  done
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'; }

# --- Slurm -----------------------------------------------------------------
host=$(hostname -s)
mkdir -p "$work"/{etc,state,spool,log,munge}
chmod 755 "$work" "$work/munge"
ctld_port=$(free_port); slurmd_port=$(free_port)
while [[ $slurmd_port = "$ctld_port" ]]; do slurmd_port=$(free_port); done
sed -e "s|@HOST@|$host|g" -e "s|@DIR@|$work|g" -e "s|@CTLD_PORT@|$ctld_port|g" \
  -e "s|@SLURMD_PORT@|$slurmd_port|g" -e "s|@CPUS@|$(nproc)|g" "$here/slurm.conf.in" >"$work/etc/slurm.conf"
grep -v '^#' "$profile_file" >>"$work/etc/slurm.conf"
cp "$here/gres.conf" "$work/etc/gres.conf"
export SLURM_CONF=$work/etc/slurm.conf

mungekey -c -k "$work/munge/munge.key" >/dev/null 2>&1
chmod 400 "$work/munge/munge.key"
start munged -F --force --socket="$work/munge/munge.socket" --key-file="$work/munge/munge.key" \
  --pid-file="$work/munge/munged.pid" --seed-file="$work/munge/munged.seed" \
  --log-file="$work/log/munged.log" --num-threads=4 >>"$work/log/munged.out" 2>&1
wait_for "munged socket" 20 test -S "$work/munge/munge.socket"

start slurmctld -D -c -f "$SLURM_CONF" >>"$work/log/slurmctld.out" 2>&1
start slurmd -D -f "$SLURM_CONF" >>"$work/log/slurmd.out" 2>&1
node_ready() { [[ $(sinfo -h -N -o '%T %G' 2>/dev/null) = "idle ipu:64"* ]]; }
wait_for "sinfo to show $host idle with ipu:64" 60 node_ready

settings=$(grep -v '^#' "$profile_file" | tr '\n' ' ')
echo "slurm $(slurmctld -V | awk '{print $2}'): $mode cycle, profile $profile: $settings" >&2
run_fg python3 "$here/slurm_cycle_driver.py" --clients "$clients" --seconds "$seconds" --mode "$mode" \
  >"$work/slurm.jsonl"
if ((slurm_only)); then
  echo "slurm $mode, profile $profile ($settings)"
  cat "$work/slurm.jsonl"
  exit 0
fi
stop_pids  # Slurm stops before vipu-server starts: neither competes for the cores

# --- vipu-server -----------------------------------------------------------
start "$build/bin/vipu-server" --simulate pod64 --listen 127.0.0.1:0 --db "$work/vipu.db" \
  --ready-file "$work/ready" --log-level warn >"$work/log/vipu-server.log" 2>&1
server_pid=${pids[-1]}  # setsid execs in place: this is vipu-server itself
wait_for "vipu-server ready file" 60 test -s "$work/ready"
echo "vipu-server --simulate pod64 at $(cat "$work/ready"), durable commits" >&2
run_fg "$build/bin/control_plane_bench" --server "$(cat "$work/ready")" --clients "$clients" \
  --seconds "$seconds" --server-pid "$server_pid" --floor --json >"$work/ours.jsonl"
stop_pids

echo
echo "clients=$clients seconds=$seconds slurm=$mode/$profile ($settings) host=$host cores=$(nproc)"
python3 "$here/side_by_side_table.py" --ours "$work/ours.jsonl" --slurm "$work/slurm.jsonl"
