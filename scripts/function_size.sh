#!/usr/bin/env bash
# Lists our functions over 80 lines, to keep each readable; ctest runs it
# (style.FunctionsAreAtMost80Lines), and so does scripts/test.sh.
#
# Usage: scripts/function_size.sh [FOLDER...]
#   FOLDER: top-level folders to check (default: every one holding our own
#   code, i.e. all but tests/, bench/, build*/). Prints "file:line function
#   (N lines)" for each function body over the limit, counted as clang-tidy's
#   readability-function-size counts it, and exits 1 when there is any, 0
#   when there is none. The reading is scripts/function_size.py's: it needs
#   no build, and takes seconds where clang-tidy took minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
# Functions allowed over the limit, as file:function. Only data tables belong
# here: a list of literal rows reads best whole, and cut into pieces it would
# only be harder to check against its sources. Logic never does; move it out
# of the table instead.
#   PublishedResults: the published figures the model is validated against,
#   one row each with its source and configuration.
exempt=(
  model/validation.cc:PublishedResults
)
exec python3 scripts/function_size.py --max 80 --exempt "${exempt[@]}" -- . "$@"
