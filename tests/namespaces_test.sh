#!/usr/bin/env bash
# Namespaces follow folders: the code of a top-level folder F is in
# vipu::F or a namespace inside it (a hyphen in F is an underscore there), a
# folder inside F that has a namespace of its own uses it in every file
# (storage/etcd is vipu::storage::etcd, never vipu::storage), and popdist/
# may also hold Graphcore's public `popdist` API. The daemon's rooms under
# server/ share vipu::server and none has a namespace of its own: one
# program, one namespace, its rooms told apart by folder. Only namespace
# declarations of our own (vipu, popdist) are checked: anonymous namespaces,
# aliases and forward declarations of other libraries' names are not ours.
#
# Usage: namespaces_test.sh ROOT [FOLDER...]   (exits 1 naming each
# file:line and the namespace it should be in, 0 when every one follows)
set -euo pipefail
root=${1:?usage: namespaces_test.sh ROOT [FOLDER...]}
shift
cd "$root"
if [ $# -gt 0 ]; then
  folders=("$@")
else
  mapfile -t folders < <(find . -mindepth 1 -maxdepth 1 -type d ! -name '.*' ! -name 'build*' \
    ! -name tests ! -name bench -printf '%f\n' | sort)
fi
# Folders whose code has a namespace other than vipu::F: base/ is the
# project's root namespace itself, and these folders inside a top-level one
# have namespaces of their own.
declare -A own=(
  [base]=vipu
  [storage/etcd]=vipu::storage::etcd
)
bad=0
while IFS= read -r hit; do
  file=${hit%%:*}
  rest=${hit#*:}
  line=${rest%%:*}
  ns=$(sed -E 's/^namespace ([A-Za-z0-9_:]+).*/\1/' <<<"${rest#*:}")
  top=${file%%/*}
  want="vipu::${top//-/_}"
  for dir in "${!own[@]}"; do
    if [[ $file == "$dir"/* ]]; then want=${own[$dir]}; fi
  done
  if [[ $ns == "$want" ]]; then continue; fi
  if [[ $ns == "$want"::* && $top != server ]]; then continue; fi
  # A block of forward declarations only names another room's classes.
  body=$(sed -n "$((line + 1)),/^}/p" "$file" | sed '$d')
  if ! grep -qvE '^(class|struct) [A-Za-z0-9_]+;$' <<<"$body"; then continue; fi
  if [[ $top == popdist && ( $ns == popdist || $ns == popdist::* ) ]]; then continue; fi
  echo "$file:$line: namespace $ns; code in ${file%/*}/ is in $want"
  bad=1
done < <(grep -rnE --include='*.cc' --include='*.h' '^namespace (vipu|popdist)[A-Za-z0-9_:]* \{' \
  "${folders[@]}" | grep -v '\.pb\.' || true)
if [ "$bad" = 1 ]; then
  echo "namespaces: some code is not in its folder's namespace (tests/namespaces_test.sh)"
  exit 1
fi
