#!/usr/bin/env bash
# Checks every #include of the libraries against the table of rooms in
# docs/architecture.md ("Rooms and what they may include"): a file belongs to
# the most specific row whose path is a prefix of its own; it may include
# files of its own row and of the rows its last column names, and gRPC
# (`grpc`: <grpc...>, <grpcpp/...>) or generated messages (`proto`: *.pb.h)
# only where that column says so. CMake stops a room from linking what it
# may not use; this stops it from including it, since every target sees
# the repository root.
#
# Usage: rooms_test.sh ROOT   (the tree to check; exits 1 naming each
# include that crosses rooms, 2 when the table cannot be read)
set -euo pipefail
root=${1:?usage: rooms_test.sh ROOT}
doc=$root/docs/architecture.md
[ -f "$doc" ] || { echo "rooms: no $doc" >&2; exit 2; }

# The table: the rows between the two markers, `| `path` | what | allowed |`.
table=$(sed -n '/<!-- rooms:begin -->/,/<!-- rooms:end -->/p' "$doc" | grep -E '^\| `' || true)
[ -n "$table" ] || { echo "rooms: no table between <!-- rooms:begin --> and <!-- rooms:end --> in $doc" >&2; exit 2; }

declare -A allowed=()
rooms=()
while IFS= read -r row; do
  room=$(awk -F'|' '{print $2}' <<<"$row" | grep -oE '`[^`]+`' | head -1 | tr -d '`')
  room=${room%/}
  may=$(awk -F'|' '{print $(NF-1)}' <<<"$row" | { grep -oE '`[^`]+`' || true; } | tr -d '`' | sed 's#/$##' | tr '\n' ' ')
  [ -n "$room" ] || { echo "rooms: a row without a room: $row" >&2; exit 2; }
  rooms+=("$room")
  allowed[$room]=" $may "
done <<<"$table"

# The most specific row for a path (without its extension), or nothing.
room_of() {
  local path=${1%.*} best="" r
  for r in "${rooms[@]}"; do
    if [ "$path" = "$r" ] || [[ "$path" == "$r"/* ]]; then
      if [ ${#r} -gt ${#best} ]; then best=$r; fi
    fi
  done
  printf '%s' "$best"
}

status=0
checked=0
while IFS= read -r file; do
  rel=${file#"$root"/}
  own=$(room_of "$rel")
  [ -n "$own" ] || continue
  checked=$((checked + 1))
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    num=${line%%:*}
    inc=${line#*:}
    target=""
    case $inc in
      '<grpc'*) target=grpc ;;
      '"'*'.pb.h"') target=proto ;;
      '"'*'"')
        inc=${inc#\"}
        inc=${inc%\"}
        [ -e "$root/$inc" ] || continue
        target=$(room_of "$inc")
        [ -n "$target" ] || continue
        ;;
      *) continue ;;
    esac
    [ "$target" = "$own" ] && continue
    if [[ "${allowed[$own]}" != *" $target "* ]]; then
      echo "$rel:$num: includes $inc: room $own may not include $target (docs/architecture.md)"
      status=1
    fi
  done < <({ grep -nE '^#include ' "$file" || true; } | sed -E 's/^([0-9]+):#include +/\1:/; s/[[:space:]]*(\/\/.*)?$//')
done < <(find "$root" \( -path "$root/build*" -o -path "$root/tests" -o -path "$root/bench" -o -path "$root/.git" \) -prune -o \
  -type f \( -name '*.h' -o -name '*.cc' \) -print | sort)

[ "$checked" -gt 0 ] || { echo "rooms: no file of $root belongs to a room" >&2; exit 2; }
[ "$status" = 0 ] && echo "rooms: $checked files, every include allowed"
exit "$status"
