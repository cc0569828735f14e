# Fresh Debian 12 roots for CI (sourced by .ci/run).
#
# make_root DIR      makes a new root with mmdebstrap from the host's apt sources
# root_tools ROOT PKG...  installs CI's own tools (not the project's: those
#                    come from scripts/install-deps.sh) into a root with apt
# in_root ROOT CMD   runs CMD as root inside it, in private mount and PID
#                    namespaces: /proc, /sys (read-only, with the machine's
#                    control groups), a new devpts
#                    instance, and tmpfs at /dev/shm and /tmp. The host's /dev
#                    is never bound in. Every process CMD leaves behind is
#                    killed when CMD ends, and every mount goes with the
#                    namespace.
# remove_roots       unmounts (should anything remain) and deletes every root
#                    made, never crossing into another file system.

ci_roots=()

ensure_host_tools() {
  local missing=()
  command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
  command -v unshare >/dev/null || missing+=(util-linux)
  command -v pkill >/dev/null || missing+=(procps)
  if ((${#missing[@]})); then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# The host's sources, so the roots reach the same mirror as the host.
host_sources() {
  local f
  for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list; do
    [ -s "$f" ] && echo "$f"
  done
}

make_root() {
  local dir=$1
  local sources
  mapfile -t sources < <(host_sources)
  ((${#sources[@]})) || { echo "ci: no apt sources on the host" >&2; return 1; }
  ci_roots+=("$dir")
  mmdebstrap --quiet --variant=apt --mode=root bookworm "$dir" "${sources[@]}" >&2
  cp /etc/resolv.conf "$dir/etc/resolv.conf"
  # What every installed Debian machine has and debootstrap leaves out.
  printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' \
    "$(hostname)" >"$dir/etc/hosts"
}

# Tools that CI runs inside a root, from the root's Debian release, so that
# their verdict does not depend on the host's: lintian judges the .deb as
# Debian 12's lintian does.
root_tools() {
  local root=$1
  shift
  in_root "$root" "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $* >/dev/null"
}

ci_child=

# Stops the command running in a root: SIGKILL to its namespace's first
# process, which takes every other process of the namespace with it (unshare
# itself ignores SIGTERM while it waits).
stop_in_root() {
  [ -n "$ci_child" ] || return 0
  pkill -KILL -P "$ci_child" 2>/dev/null || true
  wait "$ci_child" 2>/dev/null || true
  ci_child=
}

in_root() {
  local root=$1 cmd=$2 status=0
  # In the background and waited for, so that a signal to CI is handled at
  # once (bash runs traps only between foreground commands).
  unshare --mount --propagation private --pid --fork --kill-child -- /bin/bash -c '
    set -e
    root=$1
    # The root is a mount point of its own, as / is on a booted system (tools
    # that change the propagation of / need that).
    mount --bind "$root" "$root"
    mount -t proc proc "$root/proc"
    mount -t sysfs -o ro sysfs "$root/sys"
    # The control groups of the machine, as a booted system has them: slurmd will
    # not start without them.
    if mountpoint -q /sys/fs/cgroup; then mount --rbind /sys/fs/cgroup "$root/sys/fs/cgroup"; fi
    mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 devpts "$root/dev/pts"
    mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
    mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
    # Not exec: this shell stays PID 1, so that when the command ends the
    # kernel stops whatever it left running (the quick start leaves a server).
    status=0
    chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      /bin/bash -c "$2" || status=$?
    exit $status
  ' in_root "$root" "$cmd" &
  ci_child=$!
  wait "$ci_child" || status=$?
  ci_child=
  return $status
}

copy_repo() {
  local from=$1 to=$2
  mkdir -p "$to"
  # The tracked tree as committed and changed, without build output.
  git -C "$from" ls-files -z --cached --others --exclude-standard |
    (cd "$from" && xargs -0 cp --parents -a -t "$to")
}

remove_roots() {
  local r
  for r in "${ci_roots[@]}"; do
    [ -d "$r" ] || continue
    # The mounts live in namespaces that are gone by now; a root still mounted
    # here is unmounted before anything under it is deleted.
    if findmnt -R -n -o TARGET "$r" >/dev/null 2>&1; then umount -R "$r" || umount -R -l "$r"; fi
    rm -rf --one-file-system "$r"
  done
  ci_roots=()
}
