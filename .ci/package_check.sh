#!/usr/bin/env bash
# Inside a fresh Debian 12 root (.ci/run): installs the .deb with apt, starts
# the server as its unit does with the shipped configuration, uses what the
# package ships, then removes and purges it and checks that purge takes away
# what the package created and nothing else.
set -euo pipefail
deb=$1
export DEBIAN_FRONTEND=noninteractive
log() { printf 'package: %s\n' "$*"; }
fail() { printf 'package: FAILED: %s\n' "$*" >&2; exit 1; }

apt-get update -qq
# The package's dependencies first, so that the snapshot below holds them
# and the comparison after purge sees only what the package itself did.
apt-get satisfy -y -qq "$(dpkg-deb -f "$deb" Depends)" >/dev/null
# And what it recommends (PyTorch, for PopTorch programs), without what
# that in turn recommends (PyTorch's headers and -dev packages, which
# nothing here needs).
apt-get install -y -qq --no-install-recommends $(dpkg-deb -f "$deb" Recommends | tr -d ',') >/dev/null
# man itself (man-db), as an operator has it, to read the package's pages.
apt-get install -y -qq --no-install-recommends man-db >/dev/null
# Left out: apt's and dpkg's own records and logs, and the backups that the
# shadow tools keep of the user database (/etc/passwd- and its kin) whenever
# a user is added or deleted.
snapshot() {
  find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /tmp -o -path /run \
    -o -path /var/cache -o -path /var/lib/apt -o -path /var/lib/dpkg -o -path /var/log \
    -o -path /root \) -prune -o -print |
    grep -v -x -E '/etc/(passwd|group|shadow|gshadow|subuid|subgid)-' | sort
}
snapshot >/root/before

log "apt-get install $deb"
apt-get install -y -qq "$deb" >/dev/null
for f in /usr/bin/vipu-server /usr/bin/vipu-agent /usr/bin/vipu /usr/bin/vipu-admin \
  /usr/bin/poprun /usr/bin/ipu-model /usr/bin/popdist_sample_train /usr/bin/gc-info \
  /usr/include/popdist/context.h /usr/lib/x86_64-linux-gnu/libpopdist.a \
  /usr/lib/x86_64-linux-gnu/pkgconfig/popdist.pc /usr/share/doc/vipu/quickstart.md \
  /lib/systemd/system/vipu-server.service /etc/vipu/vipu-server.hcl \
  /usr/share/man/man1/vipu.1.gz /usr/share/doc/vipu/copyright /usr/share/doc/vipu/changelog.gz; do
  [ -e "$f" ] || fail "$f is not installed"
done
# Every program the package installs has its manual page, and man shows it.
for program in $(dpkg -L vipu | grep -E '^/usr/s?bin/.'); do
  name=$(basename "$program")
  page=$(man -w "$name" 2>/dev/null) || fail "no manual page for $program"
  case $page in /usr/share/man/man[18]/"$name".[18].gz) ;; *) fail "$name: manual page $page" ;; esac
done
MANPAGER=cat MANWIDTH=80 man vipu >/root/vipu.man 2>/root/vipu.man.err || fail "man vipu: $(cat /root/vipu.man.err)"
grep -q 'vipu create partition' /root/vipu.man || fail "man vipu has no 'vipu create partition'"
log "man vipu: $(grep -c . /root/vipu.man) lines"
getent passwd vipu >/dev/null || fail "postinst did not create the vipu user"
# Nothing needs a -dev package at run time.
if dpkg-query -W -f '${Package}\n' | grep -- '-dev$'; then fail "a -dev package was installed"; fi

# The server exactly as the unit starts it: its user, its ExecStart= line.
unit=/lib/systemd/system/vipu-server.service
user=$(sed -n 's/^User=//p' "$unit")
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
log "as $user: $exec_start"
read -r -a argv <<<"$exec_start"
runuser -u "$user" -- "${argv[@]}" >/root/server.log 2>&1 &
server=$!
deadline=$((SECONDS + 60))
until vipu --server-version >/root/version 2>/dev/null; do
  kill -0 "$server" 2>/dev/null || { cat /root/server.log; fail "vipu-server exited"; }
  ((SECONDS < deadline)) || { cat /root/server.log; fail "vipu-server not ready in 60 s"; }
  sleep 0.2
done
cat /root/version
grep -q '^host: localhost:8090$' /root/version || fail "server version output"
vipu list partitions
vipu-admin list agents >/dev/null
poprun --help >/dev/null || fail "poprun --help"
gc-info --help >/dev/null || fail "gc-info --help"
python3 -c 'import popdist; print("popdist", popdist.getNumTotalReplicas(), "replica (outside poprun)")'
popdist_sample_train --offline --training-steps 2 | tail -3
# PopTorch from the package, on Debian's PyTorch: it says what it is, and a
# program trains on the CPU without a pod (the IPU Model).
poptorch-pod --version >/root/poptorch-pod.version || fail "poptorch-pod --version"
grep -q 'open V-IPU' /root/poptorch-pod.version || fail "poptorch-pod --version"
python3 -c 'import poptorch, popdist.poptorch; print("poptorch", poptorch.__version__)' \
  >/root/poptorch.version 2>&1 || { cat /root/poptorch.version; fail "import poptorch"; }
grep -q '^poptorch .*openvipu' /root/poptorch.version || fail "poptorch's version"
POPTORCH_IPU_MODEL=1 python3 /usr/share/doc/vipu/examples/poptorch_train.py --epochs 1 --samples 128 \
  >/root/poptorch.out 2>&1 || { cat /root/poptorch.out; fail "the PopTorch example failed"; }
grep -q 'accuracy on the whole dataset' /root/poptorch.out || fail "the PopTorch example did not train"
ipu-model predict --help >/dev/null || fail "ipu-model predict --help"
kill "$server"
wait "$server" || true

log "apt-get remove"
apt-get remove -y -qq vipu >/dev/null
[ ! -e /usr/bin/vipu-server ] || fail "remove left /usr/bin/vipu-server"
[ -e /etc/vipu/vipu-server.hcl ] || fail "remove took the configuration (a conffile)"
log "apt-get purge"
apt-get purge -y -qq vipu >/dev/null
! getent passwd vipu >/dev/null || fail "purge left the vipu user"
! getent group vipu >/dev/null || fail "purge left the vipu group"
snapshot >/root/after
if ! diff -u /root/before /root/after; then fail "purge left the files above"; fi
log "install, use, remove and purge: ok"
