#!/usr/bin/env bash
# Builds the libFuzzer targets with clang into build-fuzz/ (or $FUZZ_BUILD)
# and runs each for FUZZ_SECONDS (default 20) on a copy of its committed
# corpus (tests/fuzz/corpus/<target>/); new inputs stay in the build dir.
# A crash leaves crash-* / leak-* / timeout-* files in build-fuzz/artifacts
# and fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${FUZZ_BUILD:-build-fuzz}
seconds=${FUZZ_SECONDS:-20}
# FUZZ_MODE=corpus replays the committed corpus once (deterministic: the CI
# gate); the default explores for FUZZ_SECONDS per target.
mode=${FUZZ_MODE:-explore}
targets=(create_request hcl cli_args poprun_options console_query)
# A build directory that is already configured (scripts/test.sh's sanitizer
# build) keeps its settings; a new one is a clang RelWithDebInfo build.
if [ ! -f "$dir/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -G Ninja -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DVIPU_FUZZ=ON >/dev/null
fi
grep -q '^VIPU_FUZZ:BOOL=ON' "$dir/CMakeCache.txt" ||
  { echo "fuzz: $dir is not a -DVIPU_FUZZ=ON build" >&2; exit 1; }
ninja -C "$dir" -j"${JOBS:-2}" "${targets[@]/%/_fuzzer}"
mkdir -p "$dir/artifacts"
status=0
for t in "${targets[@]}"; do
  work="$dir/corpus/$t"
  mkdir -p "$work"
  cp -n tests/fuzz/corpus/"$t"/* "$work"/ 2>/dev/null || true
  limit=(-max_total_time="$seconds")
  [ "$mode" = corpus ] && limit=(-runs=0)
  echo "fuzz: $t ($mode)"
  if ! ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "$dir/bin/${t}_fuzzer" "$work" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$dir/artifacts/${t}-" -print_final_stats=1 >"$dir/$t.log" 2>&1; then
    echo "fuzz: $t FAILED; tail of $dir/$t.log:"
    tail -40 "$dir/$t.log"
    status=1
  else
    grep -E "stat::number_of_executed_units|cov:" "$dir/$t.log" | tail -2
  fi
done
exit $status
