#!/usr/bin/env bash
# rooms_test.sh refuses what it is meant to refuse: in a scratch tree with
# the project's own table, a control/ file that includes the gRPC edge and
# one that includes gRPC are both named, and the same tree without them
# passes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=${1:?usage: rooms_selftest.sh SOURCE_ROOT}
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/docs" "$tree/server/control" "$tree/server/api" "$tree/server/fleet"
cp "$src/docs/architecture.md" "$tree/docs/"
printf '#include "server/fleet/agent_client.h"\n' >"$tree/server/control/ok.cc"
: >"$tree/server/fleet/agent_client.h"
: >"$tree/server/api/wire.h"
"$here/rooms_test.sh" "$tree" >/dev/null || { echo "selftest: a clean tree was refused" >&2; exit 1; }

printf '#include "server/api/wire.h"\n' >"$tree/server/control/edge.cc"
printf '// a comment\n#include <grpcpp/grpcpp.h>\n' >"$tree/server/control/rpc.cc"
status=0
out=$("$here/rooms_test.sh" "$tree") || status=$?
[ "$status" = 1 ] || { echo "selftest: expected exit 1, got $status: $out" >&2; exit 1; }
grep -q 'server/control/edge.cc:1: includes server/api/wire.h: room server/control may not include server/api' <<<"$out" ||
  { echo "selftest: the include of the gRPC edge was not named: $out" >&2; exit 1; }
grep -q 'server/control/rpc.cc:2: includes <grpcpp/grpcpp.h>: room server/control may not include grpc' <<<"$out" ||
  { echo "selftest: the include of gRPC was not named: $out" >&2; exit 1; }
echo "selftest: both crossings refused"
