#!/usr/bin/env bash
# vipu-plan's speed at the sizes a planner replays: 100,000 jobs on a
# 4,096-IPU pod (64 ILDs x 16 machines, a Helios- or Philly-sized log) and a
# 3-month SWF log of 18,000 jobs on a Pod128. Each replay runs end to end as
# a planner runs it (read the trace, replay, write jobs.csv, summary.json
# and report.html), once per policy, on one core (the replay is one thread).
# Prints wall time, simulated seconds per wall second (the makespan over the
# wall time) and the peak RSS of the process.
#   bench/plan/run_replay.sh [BUILD_DIR]     (default build; needs bin/vipu-plan)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-${VIPU_BUILD:-build}}
plan=$build/bin/vipu-plan
[ -x "$plan" ] || { echo "run_replay: no $plan; ninja -C $build vipu-plan" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$plan" generate --jobs 100000 --pod-ipus 4096 --load 0.9 --seed 1 --out "$work/helios-sized.csv" >/dev/null
# Runs up to 16 h: about 0.85 of the Pod128 offered over the 90 days.
"$plan" generate --jobs 18000 --pod-ipus 128 --span-days 90 --max-run 57600 --seed 1 \
  --out "$work/three-months.swf" >/dev/null

echo "| trace | pod | policy | jobs | simulated | wall s | simulated s per wall s | peak RSS MB |"
echo "|---|---|---|---|---|---|---|---|"
for case in "helios-sized.csv 64x16" "three-months.swf pod128"; do
  set -- $case
  for policy in fifo backfill none; do
    out=$work/out-$1-$policy
    # The wall time and the child's peak RSS, measured by Python around the
    # process, so no extra tool is needed.
    python3 - "$plan" "$work/$1" "$2" "$policy" "$out" <<'PY'
import json, resource, subprocess, sys, time
plan, trace, pod, policy, out = sys.argv[1:]
t0 = time.monotonic()
subprocess.run([plan, "replay", trace, "--pod", pod, "--policy", policy, "--out", out, "--quiet"],
               check=True, stdout=subprocess.DEVNULL)
wall = time.monotonic() - t0
rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
s = json.load(open(out + "/summary.json"))
print("| %s | %s | %s | %d | %.1f days | %.2f | %.0f | %.0f |" % (
    trace.rsplit("/", 1)[-1], pod, policy, s["jobs"], s["makespan_s"] / 86400, wall,
    s["makespan_s"] / wall, rss_mb))
PY
  done
done
