#!/usr/bin/env bash
# The mutants the highly available control plane's tests must kill. Each
# mutant breaks one safety mechanism in a copy of the tree; the script builds
# the copy, runs the tests that claim the mechanism, first unmutated (they
# must pass there) and then on the mutant, and prints which of them failed
# on an assertion of their own (tests/mutants.py). A mutant that no test
# kills, one that no longer applies (the code it breaks has moved), or one
# whose tests fail or skip unmutated fails the run: then a claim is no
# longer proven. ctest's mutants.EveryMutantApplies checks on every run
# that each mutant still applies.
#
#   tests/mutants.sh [NAME...]      all mutants, or the named ones
#
# The copy and its build live in $MUTANTS_DIR (default: a new directory
# under /var/tmp, removed at the end); with ccache configured the first
# build reuses the objects of the main build. It takes about 15 minutes on
# two cores after a build of the tree, so it runs outside CI's timed run
# (docs/architecture.md, "Mutants").
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

# The table of mutants is tests/mutants.txt; tests/mutants.py reads it.
targets=(vipu-server vipu vipu-admin vipu-agent etcd_tests)

mapfile -t selected < <(python3 "$repo/tests/mutants.py" list "$repo" "$@")
((${#selected[@]})) || { echo "mutants.sh: no mutant named $*" >&2; exit 2; }
python3 "$repo/tests/mutants.py" check "$repo" || { echo "mutants.sh: a mutant no longer applies" >&2; exit 1; }

work=${MUTANTS_DIR:-}
if [ -z "$work" ]; then
  work=$(mktemp -d /var/tmp/vipu-mutants.XXXXXX)
  trap 'rm -rf --one-file-system "$work"' EXIT
fi
# The tree as it is, committed or not, without build directories; its
# build inside it, as the main one is, so that ccache finds its objects.
src=$work/tree
build=$src/build
mkdir -p "$src"
(cd "$repo" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -xf - -C "$src"
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -G Ninja -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DVIPU_BENCHMARKS=OFF "${launcher[@]}" >/dev/null
echo "mutants: building the unmutated copy"
ninja -C "$build" -j"${JOBS:-2}" "${targets[@]}" >"$work/build.log" 2>&1 ||
  { tail -30 "$work/build.log"; echo "mutants: the unmutated tree does not build" >&2; exit 1; }

# Runs tests ($2, a gtest filter) on the build as it is now; the XML report
# is $1.xml, the output $1.log.
run_tests() {
  # In namespaces of their own, for the tests that cut links (the others
  # do not notice).
  "$src/tests/integration/in_network_lab.sh" "$build/bin/etcd_tests" --gtest_filter="$2" \
    --gtest_output="xml:$1.xml" >"$1.log" 2>&1
}

failed=0
results=()
for m in "${selected[@]}"; do
  IFS=$'\t' read -r name file tests <<<"$m"
  # The tests must pass where nothing is broken, or their failure under the
  # mutant proves nothing.
  echo "mutants: $name: running $tests on the unmutated tree"
  if ! run_tests "$work/$name.unmutated" "$tests" ||
    grep -q '^\[  SKIPPED \]' "$work/$name.unmutated.log"; then
    failed=1
    results+=("$(printf '%-36s %-30s %s' "$name" "$file" "TESTS DO NOT PASS UNMUTATED (see $work/$name.unmutated.log)")")
    continue
  fi
  cp "$src/$file" "$work/pristine"
  verdict=
  if ! python3 "$repo/tests/mutants.py" apply "$src" "$name"; then
    verdict="DOES NOT APPLY"
  elif ! ninja -C "$build" -j"${JOBS:-2}" "${targets[@]}" >"$work/$name.build.log" 2>&1; then
    verdict="DOES NOT BUILD (see $work/$name.build.log)"
  else
    echo "mutants: $name: running $tests on the mutant"
    run_tests "$work/$name" "$tests" || true
    # No report: the test program died before writing it (a crash is not
    # an assertion of the test).
    killers=
    if [ -s "$work/$name.xml" ]; then
      killers=$(python3 "$repo/tests/mutants.py" killers "$src" "$work/$name.xml" | sort -u | paste -sd, -) || killers=
    fi
    if [ -n "$killers" ]; then
      verdict="killed by $killers"
    elif [ ! -s "$work/$name.xml" ]; then
      verdict="NO REPORT: the tests died (see $work/$name.log)"
    else
      verdict="SURVIVED"
    fi
  fi
  cp "$work/pristine" "$src/$file"
  ninja -C "$build" -j"${JOBS:-2}" "${targets[@]}" >/dev/null 2>&1 || true
  [[ $verdict == killed* ]] || failed=1
  results+=("$(printf '%-36s %-30s %s' "$name" "$file" "$verdict")")
done
# The copy as it was, for the next run in the same directory.
ninja -C "$build" -j"${JOBS:-2}" "${targets[@]}" >/dev/null 2>&1 || true

printf '\n%-36s %-30s %s\n' mutant file outcome
printf '%s\n' "${results[@]}"
if ((failed)); then
  echo "mutants: a mutant was not killed; a safety claim is not proven by the tests" >&2
  exit 1
fi
echo "mutants: every mutant killed"
