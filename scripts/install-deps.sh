#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages the build needs, if any is missing. Needs root or sudo
# for the install itself; does nothing (and needs neither) when all are there.
set -euo pipefail

packages=(
  g++ make cmake ninja-build  # compiler and build (CMake >= 3.25: Debian 12, Ubuntu 24.04 or newer; the presets use Ninja)
  libcli11-dev            # the command's argument parsing
  libtomlplusplus-dev     # the config file (TOML)
  nlohmann-json3-dev      # --json output, benchmark results
  doctest-dev             # the tests
  libtbb-dev              # the tbb backend (oneTBB)
  python3-matplotlib      # the benchmarks' plots (bench/plot_*.py)
  clang libclang-rt-dev   # the fuzzers (libFuzzer, with clang's sanitizers): the fuzz preset
  libmpfr-dev             # the exact sums' independent reference in the tests (MPFR)
  python3-dev python3-venv  # the Python package: its headers, and the virtual environment the tests install it in
  libopenmpi-dev openmpi-bin  # xreduce_mpi and `--distributed` (Open MPI), and mpirun for their tests
  doxygen                 # the documentation site's C++ reference (XML for Sphinx and breathe)
)
# The documentation test opens the site in headless Chromium. Debian packages it with its driver;
# Ubuntu's chromium is a snap, which containers lack: there Selenium fetches Chrome for Testing.
. /etc/os-release
if [ "${ID:-}" = debian ]; then packages+=(chromium chromium-driver); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
