#!/usr/bin/env bash
# The comment-path check can fail: in a small tree of its own, a comment that
# names a file that is gone is reported with its file and line, and the same
# tree with the file present passes.
set -euo pipefail
check=$(cd "$(dirname "$0")" && pwd)/comment_paths_test.sh
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/base"
printf '// The lock (base/mutex.h) and the gone one (base/gone.h).\nint x;\n' >"$tree/base/a.cc"
touch "$tree/base/mutex.h"
if out=$(bash "$check" "$tree" 2>&1); then
  echo "selftest: a missing path passed: $out" >&2
  exit 1
fi
grep -q '^base/a.cc:1: names base/gone.h, which does not exist$' <<<"$out" ||
  { echo "selftest: unexpected report: $out" >&2; exit 1; }
grep -q 'base/mutex.h' <<<"$out" && { echo "selftest: an existing path was reported: $out" >&2; exit 1; }
touch "$tree/base/gone.h"
bash "$check" "$tree" >/dev/null || { echo "selftest: a whole tree was refused" >&2; exit 1; }
echo "selftest: passed"
