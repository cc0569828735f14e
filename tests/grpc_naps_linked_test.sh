#!/usr/bin/env bash
# Each executable named defines gpr_sleep_until in its dynamic symbol table,
# so that gRPC's libraries call it instead of their own (wire/grpc_naps.h).
#   tests/grpc_naps_linked_test.sh BINARY...
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 BINARY..." >&2; exit 2; }
status=0
for binary in "$@"; do
  # The whole table first: grep -q leaving early would cut nm off with
  # SIGPIPE, which pipefail would take for a failure.
  symbols=$(nm -D --defined-only "$binary")
  if grep -qE '^[0-9a-f]+ T gpr_sleep_until$' <<<"$symbols"; then
    echo "ok: $binary defines gpr_sleep_until"
  else
    echo "FAIL: $binary does not define gpr_sleep_until: gRPC's callback threads keep their 100 ms naps (link vipu_grpc_naps)"
    status=1
  fi
done
exit $status
