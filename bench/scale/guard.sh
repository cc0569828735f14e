#!/usr/bin/env bash
# The scale guard: runs bench/scale/run_scale.sh at a size that takes about a
# minute here (16,384 machines in 16 agent processes, 3 s of creates per
# size; at most 3 minutes on a busy machine), compares create p50, server
# RSS and restart time with the committed baseline (bench/scale/baseline.txt)
# and names every figure that moved by more than 25%. The machine's load
# average is printed beside them: on a shared machine a figure that moved
# under a load much higher than the baseline's is a reason to run it again,
# not yet a regression.
#   bench/scale/guard.sh                   run and compare (exit 1 if a figure got worse by > 25%)
#   bench/scale/guard.sh --write-baseline  run and write bench/scale/baseline.txt from this run
#   VIPU_BUILD     build directory holding bin/ (default: build)
#   GUARD_MACHINES, GUARD_PROCS, GUARD_SECONDS   size of the run (default 16384, 16, 3); a
#                  baseline of another size is refused
set -euo pipefail
cd "$(dirname "$0")/../.."
baseline=bench/scale/baseline.txt
machines=${GUARD_MACHINES:-16384}
procs=${GUARD_PROCS:-16}
seconds=${GUARD_SECONDS:-3}
write=false
[ "${1:-}" = "--write-baseline" ] && write=true

load() { cut -d' ' -f1-3 /proc/loadavg; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT

load_before=$(load)
started=$(date +%s)
SCALE_SECONDS=$seconds bench/scale/run_scale.sh "$machines" "$procs" >"$out" 2>&1 || {
  cat "$out" >&2
  echo "guard: run_scale.sh failed" >&2
  exit 2
}
took=$(($(date +%s) - started))
load_after=$(load)
grep -v '^summary:' "$out"
summary=$(grep '^summary:' "$out" | tail -1)
[ -n "$summary" ] || { echo "guard: run_scale.sh printed no summary line" >&2; exit 2; }
# value KEY TEXT: the value of KEY=... in TEXT ("-" when absent).
value() { echo "$2" | tr ' ' '\n' | awk -F= -v k="$1" '$1 == k { print $2; found = 1 } END { if (!found) print "-" }'; }

# The figures guarded, and how each is called.
keys=(create64_p50_ms create256_p50_ms rss_mib restart_kill_s restart_term_s)
declare -A what=(
  [create64_p50_ms]="create 64 IPUs, reply p50 (ms)"
  [create256_p50_ms]="create 256 IPUs, reply p50 (ms)"
  [rss_mib]="server RSS (MiB)"
  [restart_kill_s]="ready after SIGKILL (s)"
  [restart_term_s]="ready after SIGTERM (s)"
)

if $write; then
  {
    echo "# Scale guard baseline: written by bench/scale/guard.sh --write-baseline; compared by"
    echo "# bench/scale/guard.sh. $(date -u +%Y-%m-%dT%H:%MZ), $took s, git $(git rev-parse --short HEAD 2>/dev/null || echo '?') plus the working tree."
    echo "machines=$machines"
    echo "procs=$procs"
    echo "seconds=$seconds"
    for k in "${keys[@]}" hwm_mib create64_p99_ms create256_p99_ms rest64_ms rest256_ms; do
      echo "$k=$(value "$k" "$summary")"
    done
    echo "load_before=${load_before// /,}"
    echo "load_after=${load_after// /,}"
  } >"$baseline"
  echo
  echo "guard: wrote $baseline (load average before $load_before, after $load_after; $took s)"
  exit 0
fi

[ -f "$baseline" ] || { echo "guard: no $baseline; write one with --write-baseline" >&2; exit 2; }
base=$(grep -v '^#' "$baseline" | tr '\n' ' ')
if [ "$(value machines "$base")" != "$machines" ] || [ "$(value procs "$base")" != "$procs" ]; then
  echo "guard: $baseline is of $(value machines "$base") machines in $(value procs "$base")" \
    "processes, this run of $machines in $procs" >&2
  exit 2
fi
echo
echo "### Scale guard: this run against $baseline ($machines machines, $took s)"
echo
echo "| figure | baseline | now | change |"
echo "|---|---|---|---|"
moved=()
worse=()
for k in "${keys[@]}"; do
  b=$(value "$k" "$base")
  n=$(value "$k" "$summary")
  change=$(awk -v b="$b" -v n="$n" 'BEGIN {
    if (b == "-" || n == "-" || b + 0 == 0) print "-"; else printf "%+.0f%%", (n - b) * 100 / b }')
  echo "| ${what[$k]} | $b | $n | $change |"
  if [ "$change" != "-" ]; then
    pct=${change%\%}
    pct=${pct#+}
    if ((pct > 25 || pct < -25)); then
      moved+=("${what[$k]} $change")
      ((pct > 25)) && worse+=("${what[$k]}")
    fi
  fi
done
base_load=$(value load_before "$base")
echo "| load average (1, 5, 15 min) | before ${base_load//,/ } | before $load_before, after $load_after | - |"
echo
if ((${#moved[@]} == 0)); then
  echo "guard: no figure moved by more than 25%"
  exit 0
fi
for m in "${moved[@]}"; do echo "guard: moved by more than 25%: $m"; done
if ((${#worse[@]} > 0)); then
  echo "guard: worse: ${worse[*]} (load average now $load_before -> $load_after," \
    "baseline's ${base_load//,/ }; run it again on a quieter machine before believing it)"
  exit 1
fi
exit 0
