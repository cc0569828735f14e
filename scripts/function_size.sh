#!/usr/bin/env bash
# Lists our functions over 80 lines (clang-tidy's readability-function-size), to keep each readable.
#
# Usage: scripts/function_size.sh [FOLDER...]
#   FOLDER: top-level folders to check (default: every one holding our own .cc
#   files, i.e. all but tests/, bench/, build*/). Generated *.pb.cc files are
#   skipped. Prints "file:line function (N lines)" for each function over the
#   limit and exits 1 when there is any, 0 when there is none, 2 when
#   clang-tidy could not parse a file. The functions of `exempt` below are
#   not listed.
# Environment: BUILD_DIR (default build) holds compile_commands.json; JOBS
# (default the number of cores) is how many clang-tidy processes run at once.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
max_lines=80
# Functions allowed over the limit, as file:function. Only data tables belong
# here: a list of literal rows reads best whole, and cut into pieces it would
# only be harder to check against its sources. Logic never does; move it out
# of the table instead.
#   PublishedResults: the published figures the model is validated against,
#   one row each with its source and configuration.
exempt=(
  model/validation.cc:PublishedResults
)

if [ ! -f "$build_dir/compile_commands.json" ]; then
  echo "function_size.sh: no $build_dir/compile_commands.json; configure the build first" >&2
  exit 2
fi

if [ $# -gt 0 ]; then
  folders=("$@")
else
  folders=()
  for dir in */; do
    dir=${dir%/}
    case "$dir" in
      tests | bench | build*) ;;
      *) folders+=("$dir") ;;
    esac
  done
fi

for dir in "${folders[@]}"; do
  if [ ! -d "$dir" ]; then
    echo "function_size.sh: no folder $dir" >&2
    exit 2
  fi
done
mapfile -t files < <(find "${folders[@]}" -name '*.cc' -not -name '*.pb.cc' \
  -not -path '*/tests/*' -not -path '*/bench/*' | sort)
if [ ${#files[@]} -eq 0 ]; then
  echo "function_size.sh: no .cc files in ${folders[*]}" >&2
  exit 2
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
config="{CheckOptions: [{key: readability-function-size.LineThreshold, value: $max_lines}]}"
# One clang-tidy per file, its output kept apart (FILE.out) so that parallel
# runs do not interleave, and a FILE.failed marker when it could not parse it.
# -Wno-error: the build's -Werror would turn a clang-only warning into a
# parse failure.
export build_dir config out
# shellcheck disable=SC2016 # the inner sh expands them
printf '%s\0' "${files[@]}" | xargs -0 -n 1 -P "$jobs" sh -c '
  log="$out/$(printf %s "$1" | tr / _)"
  clang-tidy --quiet -p "$build_dir" --checks="-*,readability-function-size" \
    --config="$config" --extra-arg=-Wno-error "$1" >"$log.out" 2>"$log.err" || : >"$log.failed"
' function_size

status=0
for failed in "$out"/*.failed; do
  [ -e "$failed" ] || continue
  status=2
  grep -h 'error:' "${failed%.failed}.out" "${failed%.failed}.err" >&2 || true
done
[ $status -eq 0 ] || echo "function_size.sh: clang-tidy could not parse some files" >&2

# A warning names the function at file:line:col; the note after it gives its
# length (a function over another threshold only has no such note).
report=$(cat "$out"/*.out | awk -v root="$PWD/" -v exempt="${exempt[*]}" '
  BEGIN { split(exempt, names, " "); for (i in names) skip[names[i]] = 1 }
  /warning: function .* exceeds recommended size\/complexity thresholds/ {
    split($0, parts, ":")
    file = parts[1]
    sub("^" root, "", file)
    where = file ":" parts[2]
    name = $0
    sub(/^[^'\'']*'\''/, "", name)
    sub(/'\''.*$/, "", name)
    if ((file ":" name) in skip) where = ""
    next
  }
  where != "" && / note: [0-9]+ lines including whitespace and comments/ {
    lines = $0
    sub(/^.* note: /, "", lines)
    sub(/ .*$/, "", lines)
    print where " " name " (" lines " lines)"
    where = ""
  }
' | sort -t: -k1,1 -k2,2n -u)

if [ -n "$report" ]; then
  echo "$report"
  [ $status -ne 0 ] || status=1
fi
exit $status
