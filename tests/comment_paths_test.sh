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
folders=$(find . -mindepth 1 -maxdepth 1 -type d ! -name '.*' ! -name 'build*' -printf '%f\n' | paste -sd'|')
missing=0
while IFS= read -r hit; do
  file=${hit%%:*}
  rest=${hit#*:}
  line=${rest%%:*}
  text=${rest#*:}
  # Only the comment part of the line.
  case "$file" in
    *.cc | *.h | *.proto) comment=${text#*//} ;;
    *) comment=${text#*#} ;;
  esac
  [ "$comment" != "$text" ] || continue
  for path in $(grep -oE "(^|[^A-Za-z0-9_./-])($folders)/[A-Za-z0-9_./+-]*[A-Za-z0-9_/*]" <<<"$comment" |
    sed -E 's/^[^A-Za-z0-9_]//'); do
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
      echo "$file:$line: names $path, which does not exist"
      missing=$((missing + 1))
    fi
  done
done < <(grep -rnE --include='*.cc' --include='*.h' --include='*.proto' --include='*.sh' \
  --include='CMakeLists.txt' --include='*.cmake' --include='*.py' '(//|#).*[a-z]/' \
  $(find . -mindepth 1 -maxdepth 1 -type d ! -name '.*' ! -name 'build*' -printf '%f ') || true)
if [ "$missing" -gt 0 ]; then
  echo "comment_paths: $missing paths named in comments do not exist" >&2
  exit 1
fi
echo "comment_paths: every path named in a comment exists"
