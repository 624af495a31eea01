#!/usr/bin/env bash
# Installs what flashstages needs to build and test on a Debian/Ubuntu machine: CMake, Ninja, doctest,
# Google Benchmark, CLI11 (Debian packages) and matplotlib (PyPI). The CUDA Toolkit must already be there.
# Skips what is present; on a machine with a staged prefix (.deps, see README) installs nothing.
#   usage: scripts/setup.sh        (sourced or run; prints the CMake prefix to use, if any)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || {
  echo "setup: nvcc not found — install the CUDA Toolkit (12.4 or newer) first" >&2; exit 1; }

if [ ! -d "$root/.deps" ]; then
  need=()
  command -v cmake >/dev/null || need+=(cmake)
  command -v ninja >/dev/null || need+=(ninja-build)
  [ -f /usr/include/doctest/doctest.h ] || need+=(doctest-dev)
  [ -f /usr/include/benchmark/benchmark.h ] || need+=(libbenchmark-dev)
  [ -f /usr/include/CLI/CLI.hpp ] || need+=(libcli11-dev)
  if [ ${#need[@]} -gt 0 ]; then
    echo "setup: installing ${need[*]}"
    SUDO=$([ "$(id -u)" -eq 0 ] && echo "" || echo sudo)
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
  fi
fi
if ! python3 -c "import matplotlib" 2>/dev/null; then
  echo "setup: installing matplotlib"
  python3 -m pip install -q matplotlib || echo "setup: matplotlib unavailable — plots will be skipped" >&2
fi
