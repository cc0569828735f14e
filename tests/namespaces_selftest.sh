#!/usr/bin/env bash
# The namespace check refuses code outside its folder's namespace, and a
# room's own namespace used in another room, and lets forward declarations
# and the folder's own namespaces pass.
#
# Usage: namespaces_selftest.sh ROOT
set -euo pipefail
root=${1:?usage: namespaces_selftest.sh ROOT}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/model" "$tmp/server/security" "$tmp/server/control"
printf 'namespace vipu::fabric::model {\nint x;\n}  // namespace vipu::fabric::model\n' >"$tmp/model/stray.h"
printf 'namespace vipu::model {\nint y;\n}  // namespace vipu::model\n' >"$tmp/model/fine.h"
printf 'namespace vipu::server {\nint z;\n}  // namespace vipu::server\n' >"$tmp/server/security/stray.h"
printf 'namespace vipu::server::security {\nclass AuditLog;\n}  // namespace vipu::server::security\nnamespace vipu::server {\nint w;\n}  // namespace vipu::server\n' \
  >"$tmp/server/control/fine.h"
status=0
out=$(bash "$root/tests/namespaces_test.sh" "$tmp" model server) || status=$?
expected='model/stray.h:1: namespace vipu::fabric::model; code in model/ is in vipu::model
server/security/stray.h:1: namespace vipu::server; code in server/security/ is in vipu::server::security'
if [ "$status" != 1 ] || [ "$(grep -v '^namespaces:' <<<"$out" | sort)" != "$expected" ]; then
  echo "namespaces_test.sh should have named the two stray namespaces and exited 1;"
  echo "it exited $status and printed:"
  echo "$out"
  exit 1
fi
echo "namespaces_test.sh names code outside its folder's namespace and only that"
