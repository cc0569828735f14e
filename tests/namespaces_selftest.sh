#!/usr/bin/env bash
# The namespace check refuses code outside its folder's namespace, a room's
# own namespace used in another room, and a namespace of its own in a room of
# server/, and lets forward declarations and the folder's own namespaces pass.
#
# Usage: namespaces_selftest.sh ROOT
set -euo pipefail
root=${1:?usage: namespaces_selftest.sh ROOT}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/model" "$tmp/storage/etcd" "$tmp/server/security" "$tmp/server/control"
printf 'namespace vipu::fabric::model {\nint x;\n}  // namespace vipu::fabric::model\n' >"$tmp/model/stray.h"
printf 'namespace vipu::model {\nint y;\n}  // namespace vipu::model\n' >"$tmp/model/fine.h"
printf 'namespace vipu::storage {\nint z;\n}  // namespace vipu::storage\n' >"$tmp/storage/etcd/stray.h"
printf 'namespace vipu::server::security {\nint v;\n}  // namespace vipu::server::security\n' >"$tmp/server/security/stray.h"
printf 'namespace vipu::server {\nint u;\n}  // namespace vipu::server\n' >"$tmp/server/security/fine.h"
printf 'namespace vipu::fabric {\nclass Cluster;\n}  // namespace vipu::fabric\nnamespace vipu::server {\nint w;\n}  // namespace vipu::server\n' \
  >"$tmp/server/control/fine.h"
status=0
out=$(bash "$root/tests/namespaces_test.sh" "$tmp" model server storage) || status=$?
expected='model/stray.h:1: namespace vipu::fabric::model; code in model/ is in vipu::model
server/security/stray.h:1: namespace vipu::server::security; code in server/security/ is in vipu::server
storage/etcd/stray.h:1: namespace vipu::storage; code in storage/etcd/ is in vipu::storage::etcd'
if [ "$status" != 1 ] || [ "$(grep -v '^namespaces:' <<<"$out" | sort)" != "$expected" ]; then
  echo "namespaces_test.sh should have named the three stray namespaces and exited 1;"
  echo "it exited $status and printed:"
  echo "$out"
  exit 1
fi
echo "namespaces_test.sh names code outside its folder's namespace and only that"
