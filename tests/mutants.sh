#!/usr/bin/env bash
# The mutants the highly available control plane's tests must kill. Each
# mutant breaks one safety mechanism in a copy of the tree; the script builds
# the copy, runs the tests that claim the mechanism, and prints which of them
# failed. A mutant that no test kills, or one that no longer applies (the
# code it breaks has moved), fails the run: then a claim is no longer proven.
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

# name | file | the exact text | what replaces it | the tests that must fail
# (no field may hold a "|"; "\n" is a new line and "\&" an ampersand)
mutants=(
  "fence-not-wired|server/ha/member.cc|    store_options.fence = election_.Fence();\n||HaQuietTest.ADeposedLeadersWriteIsRefusedByEtcdAndChangesNothing"
  "acknowledge-before-commit|storage/etcd/etcd_store.cc|      if (!failure.ok() \&\& item.status.ok()) item.status = failure;\n||HaQuietTest.ADeposedLeadersWriteIsRefusedByEtcdAndChangesNothing:EtcdStoreTest.AWriteAfterTheFenceFailsChangesNothingAndStopsTheStore"
  "marker-on-every-refusal|server/ha/forwarder.cc|      Finish(status);\n      return;\n    }\n    StartWriteAndFinish|      SayNothingWasDone();\n      Finish(status);\n      return;\n    }\n    StartWriteAndFinish|HaQuietTest.AChangeWhoseAnswerTheStandbyLostIsNotSaidToHaveDoneNothing"
  "leader-ignores-lease-loss|server/ha/member.cc|    election_.OnLost(StepDown);|    election_.OnLost([](const absl::Status\&) {});|HaNetworkTest.AQuietLeaderCutFromEtcdStepsDownOnItsLease"
  "reads-after-stepping-down|storage/etcd/etcd_store.cc|    RETURN_IF_ERROR(MayAnswer());\n    std::shared_ptr<const EtcdState> snapshot;|    std::shared_ptr<const EtcdState> snapshot;|EtcdStoreTest.AWriteAfterTheFenceFailsChangesNothingAndStopsTheStore:EtcdStoreTest.NothingIsAnsweredFromMemoryOnceTheLeadershipMayHaveLapsed"
  "forwarder-passes-the-callers-claim|server/ha/forwarder.cc|k == wire::kForwardedPeerMetadata) {|false) {|HaSecureTest.UsersAndAgentsAreCheckedThroughTheStandbyAndSurviveAFailover"
)
targets=(vipu-server vipu vipu-admin vipu-agent etcd_tests)

wanted=("$@")
selected=()
for m in "${mutants[@]}"; do
  name=${m%%|*}
  if ((${#wanted[@]} == 0)) || [[ " ${wanted[*]} " == *" $name "* ]]; then selected+=("$m"); fi
done
((${#selected[@]})) || { echo "mutants.sh: no mutant named ${wanted[*]}" >&2; exit 2; }

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

# Replaces the one occurrence of `from` in `file` by `to` (escapes as in
# the table: \n, \&); fails when it does not occur exactly once.
mutate() {
  python3 - "$1" "$2" "$3" <<'EOF'
import sys
path, old, new = sys.argv[1], sys.argv[2], sys.argv[3]
unescape = lambda s: s.replace("\\n", "\n").replace("\\&", "&")
old, new = unescape(old), unescape(new)
text = open(path).read()
if text.count(old) != 1:
    sys.exit(f"{path}: the mutated text occurs {text.count(old)} times, not once")
open(path, "w").write(text.replace(old, new))
EOF
}

failed=0
results=()
for m in "${selected[@]}"; do
  IFS='|' read -r name file from to tests <<<"$m"
  cp "$src/$file" "$work/pristine"
  verdict=
  if ! mutate "$src/$file" "$from" "$to"; then
    verdict="DOES NOT APPLY"
  elif ! ninja -C "$build" -j"${JOBS:-2}" "${targets[@]}" >"$work/$name.build.log" 2>&1; then
    verdict="DOES NOT BUILD (see $work/$name.build.log)"
  else
    echo "mutants: $name: running $tests"
    # In namespaces of their own, for the tests that cut links (the others
    # do not notice).
    "$src/tests/integration/in_network_lab.sh" "$build/bin/etcd_tests" --gtest_filter="$tests" \
      >"$work/$name.log" 2>&1 || true
    killers=$(sed -n 's/^\[  FAILED  \] \([A-Za-z0-9_.]*\) (.*/\1/p' "$work/$name.log" | sort -u | paste -sd, -)
    if [ -n "$killers" ]; then verdict="killed by $killers"; else verdict="SURVIVED"; fi
  fi
  cp "$work/pristine" "$src/$file"
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
