#!/usr/bin/env bash
# Installs the Debian packages the build and the tests need (once; a second
# run finds them installed and does nothing).
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libsqlite3-dev libspdlog-dev libgtest-dev libgmock-dev libcli11-dev
  sqlite3
  # vipu-server --secure: certificates (--tls-init) and access-key hashing.
  libssl-dev
  # vipu-server: sd_notify and the metrics endpoint; tests: systemd-analyze,
  # promtool (prometheus), dpkg-shlibdeps for cpack -G DEB (dpkg-dev).
  libsystemd-dev libcpp-httplib-dev systemd prometheus dpkg-dev
  # poprun launches instances with mpirun; popdist's collectives use MPI.
  openmpi-bin libopenmpi-dev python3-mpi4py numactl
  # scripts/fuzz.sh: clang with libFuzzer (-fsanitize=fuzzer lives in libclang-rt).
  clang libclang-rt-14-dev
  # slurm/: libslurm-dev has slurm/spank.h, without which vipu_spank.so is not
  # built; tests/slurm runs the plugin under real munged, slurmctld and slurmd.
  slurmctld slurmd slurm-client munge libslurm-dev
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
fi
