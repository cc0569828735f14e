#!/usr/bin/env bash
# Every path of the tree that a comment names exists: a comment that sends a
# reader to a file that moved is worse than none. Reads the comments (// and
# #) of the sources, headers, scripts and CMake files, takes each word that
# starts with a top-level folder of the tree and a slash, and looks for it as
# a file, a folder, or a file with one of the usual endings (a header named
# without .h, a target's source).
#
# Usage: comment_paths_test.sh ROOT   (exits 1 naming each file:line and the
# missing path, 0 when every one exists)
set -euo pipefail
root=${1:?usage: comment_paths_test.sh ROOT}
cd "$root"
mapfile -t top < <(find . -mindepth 1 -maxdepth 1 -type d ! -name '.*' ! -name 'build*' -printf '%f\n')
folders=$(IFS='|'; echo "${top[*]}")
# file:line:path for every path-like word in the comment part of a line.
hits=$(grep -rnE --include='*.cc' --include='*.h' --include='*.proto' --include='*.sh' \
  --include='CMakeLists.txt' --include='*.cmake' --include='*.py' '(//|#).*[a-z]/' "${top[@]}" |
  awk -v folders="$folders" '
    {
      file = $0; sub(/:.*/, "", file)
      rest = substr($0, length(file) + 2); line = rest; sub(/:.*/, "", line)
      text = substr(rest, length(line) + 2)
      marker = (file ~ /\.(cc|h|proto)$/) ? "//" : "#"
      at = index(text, marker)
      if (at == 0) next
      comment = substr(text, at + length(marker))
      pattern = "(^|[^A-Za-z0-9_./-])(" folders ")/[A-Za-z0-9_./+-]*[A-Za-z0-9_/*]"
      while (match(comment, pattern)) {
        path = substr(comment, RSTART, RLENGTH)
        sub(/^[^A-Za-z0-9_]/, "", path)
        print file ":" line ":" path
        comment = substr(comment, RSTART + RLENGTH)
      }
    }' || true)
missing=0
while IFS= read -r hit; do
  [ -n "$hit" ] || continue
  path=${hit##*:}
  where=${hit%:*}
  path=${path%/}
  # Patterns and placeholders are not paths.
  case "$path" in *'*'* | *'<'* | *'...'*) continue ;; esac
  # Built, not kept: generated messages (their .proto is) and libraries.
  case "$path" in
    *.pb.h | *.pb.cc) path=${path%.pb.*}.proto ;;
    *.so | *.a) continue ;;
  esac
  found=0
  # A system header of the same name (<slurm/spank.h>) counts as there.
  for candidate in "$path" "$path.h" "$path.cc" "$path.sh" "$path.md" "$path.proto" "$path.py" \
    "/usr/include/$path"; do
    [ -e "$candidate" ] && found=1 && break
  done
  if [ "$found" = 0 ]; then
    echo "$where: names $path, which does not exist"
    missing=$((missing + 1))
  fi
done <<<"$hits"
if [ "$missing" -gt 0 ]; then
  echo "comment_paths: $missing paths named in comments do not exist" >&2
  exit 1
fi
echo "comment_paths: every path named in a comment exists"
