#!/bin/sh
# Runs a test program (and its arguments) in network and mount namespaces of
# its own, with VIPU_NETWORK_LAB=1: the network lab of
# tests/integration/network_lab.h builds its bridge, nodes and nftables
# rules there, so the host's network is never touched, and the named
# namespaces (a private tmpfs on /run/netns) vanish when the program ends.
# Where such namespaces cannot be made (not root, no unshare), the program
# runs without the variable and its lab tests skip, saying why.
set -eu
PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH
if [ "$(id -u)" != 0 ] || ! unshare --net --mount true 2>/dev/null; then
  echo "in_network_lab.sh: cannot make network namespaces here (needs root and unshare)" >&2
  exec "$@"
fi
mkdir -p /run/netns
exec unshare --net --mount --propagation private -- sh -c '
  mount -t tmpfs vipu-lab /run/netns &&
  ip link set lo up &&
  VIPU_NETWORK_LAB=1 exec "$@"' in_network_lab "$@"
