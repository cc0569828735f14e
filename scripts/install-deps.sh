#!/usr/bin/env bash
# Installs the Debian 12 packages that the build, the tests and the README's
# quick start use (once; a second run finds them installed and does nothing).
# Every package says why it is here. A developer may add ccache: CMake uses
# it when it is installed.
set -euo pipefail
packages=(
  # The toolchain: compiler, CMake and Ninja (scripts/build.sh), pkg-config
  # (CMake finds some libraries through it).
  build-essential cmake ninja-build pkg-config
  # gRPC and Protobuf: every wire API (protoc and its gRPC plugin generate
  # the stubs at build time).
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  # Abseil (Status, strings, time, mutexes), SQLite (the state), spdlog
  # (logging), CLI11 (the command lines of every program).
  libabsl-dev libsqlite3-dev libspdlog-dev libcli11-dev
  # GoogleTest and GoogleMock: the unit and integration tests.
  libgtest-dev libgmock-dev
  # zlib: vipu-plan reads gzip-compressed SWF traces (the Parallel Workloads
  # Archive ships its logs as .swf.gz).
  zlib1g-dev
  # nlohmann's JSON: tests parse the programs' JSON output (ipu-model,
  # --json tables) with it.
  nlohmann-json3-dev
  # sqlite3: the database tests open the state file as an operator would.
  sqlite3
  # vipu-server --secure: certificates (--tls-init) and access-key hashing.
  libssl-dev
  # vipu-server: sd_notify (libsystemd) and the HTTP listener of the metrics
  # (cpp-httplib). Tests: systemd-analyze verify of the units (systemd),
  # promtool check metrics (prometheus).
  libsystemd-dev libcpp-httplib-dev systemd prometheus
  # The .deb (cpack -G DEB): dpkg-shlibdeps computes its library
  # dependencies (dpkg-dev) and CPack asks `file` which files are ELF.
  dpkg-dev file
  # help2man: the package's manual pages are made from the programs' --help
  # at build time (man/man_pages.cmake).
  help2man
  # poprun launches instances with mpirun and places them with numactl;
  # popdist's collectives use MPI, from C++ and from Python (mpi4py).
  openmpi-bin libopenmpi-dev python3 python3-mpi4py numactl
  # PopTorch programs (poptorch/): Debian's PyTorch computes their maths on
  # the CPU; torch.distributed and mpi4py reduce the gradients of instances.
  python3-torch
  # Tests: the shipped configuration runs as is in its own network
  # namespace (unshare from util-linux, ip from iproute2 brings up its
  # loopback); the database on a full disk is a small tmpfs in a mount
  # namespace of its own (unshare and nsenter from util-linux, mount).
  util-linux mount iproute2
  # Tests: network faults between HA members and etcd (tests/integration/
  # network_lab.h) are real cuts and loss, made by nftables rules on a
  # bridge in the test's own network namespace (ip and tc from iproute2
  # make the namespaces, veth pairs, bridge and delays).
  nftables
  # Tests: curl is the HTTPS client that checks the server's TLS HTTP
  # listener (tests/integration/agent_tls_test.cc).
  curl
  # The sanitizer build and the fuzzers (scripts/test.sh, scripts/fuzz.sh):
  # clang with libFuzzer (-fsanitize=fuzzer lives in libclang-rt).
  clang libclang-rt-14-dev
  # The pod console's browser tests (tests/integration/console_test.cc) load
  # the console in headless Chromium and drive it over the DevTools protocol.
  chromium
  # slurm/: libslurm-dev has slurm/spank.h, without which vipu_spank.so is not
  # built; tests/slurm runs the plugin under real munged, slurmctld and slurmd.
  slurmctld slurmd slurm-client munge libslurm-dev
  # etcd, the store of the highly available vipu-server: the HA tests
  # (tests/etcd_harness.h) run real etcd members on loopback ports, and
  # etcdctl is how an operator backs up and inspects that store.
  etcd-server etcd-client
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  # Debian's etcd-server enables and starts etcd.service, a single-member
  # etcd on port 2379 that nobody asked for here (the tests start their own
  # members; a production cluster is configured on purpose). Switch it off,
  # but only when this run installed the package, so a configured etcd is
  # left alone. Without a running systemd (a chroot, a container) the unit
  # is only disabled, which cannot fail the script.
  if [[ " ${missing[*]} " == *" etcd-server "* ]]; then
    if [ -d /run/systemd/system ]; then
      $SUDO systemctl disable --now etcd.service || true
    else
      if command -v deb-systemd-helper >/dev/null; then
        $SUDO deb-systemd-helper disable etcd.service || true
      fi
      # Without systemd the package's init script may have started it.
      if [ -x /etc/init.d/etcd ]; then
        $SUDO /etc/init.d/etcd stop >/dev/null 2>&1 || true
        $SUDO update-rc.d etcd disable >/dev/null 2>&1 || true
      fi
    fi
  fi
fi
