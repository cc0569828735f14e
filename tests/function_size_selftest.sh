#!/usr/bin/env bash
# The function-size check refuses a function over 80 lines, names it with its
# length, and lets one of 80 lines pass; a lambda or a nested block counts
# towards the function that holds it, and comments or strings holding braces
# change nothing.
#
# Usage: function_size_selftest.sh ROOT
set -euo pipefail
root=${1:?usage: function_size_selftest.sh ROOT}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lib"
# body LINES: a function body of LINES lines from its "{" to its "}".
body() {
  echo "{"
  echo "  auto f = [](int x) {"
  echo "    // a comment with a brace } and a string with one:"
  echo "    const char* s = \"}{\";"
  for ((i = 0; i < $1 - 6; i++)); do echo "    x += 1;"; done
  echo "    return x + (s != nullptr);"
  echo "  };"
  echo "}"
}
{
  echo "namespace vipu::lib {"
  echo "int Short(int x)"
  body 80
  echo "class Holder {"
  echo " public:"
  echo "  int Member(int x) const"
  body 81
  echo "};"
  echo "int Long(int x)"
  body 90
  echo "}  // namespace vipu::lib"
} >"$tmp/lib/long.cc"
status=0
out=$(python3 "$root/scripts/function_size.py" --max 80 "$tmp" lib) || status=$?
expected=$'lib/long.cc:86 Member (81 lines)\nlib/long.cc:170 Long (90 lines)'
if [ "$status" != 1 ] || [ "$out" != "$expected" ]; then
  echo "function_size.py should have named Member and Long and exited 1;"
  echo "it exited $status and printed:"
  echo "$out"
  exit 1
fi
# An exempt function is not named.
out=$(python3 "$root/scripts/function_size.py" --max 80 --exempt lib/long.cc:Member \
  lib/long.cc:Long -- "$tmp" lib) || { echo "exempt functions were still named: $out"; exit 1; }
echo "function_size.py names the functions over 80 lines and only them"
