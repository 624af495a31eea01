#!/usr/bin/env bash
# Installs what flashstages needs to build and test on a Debian/Ubuntu machine: CMake, Ninja, doctest,
# Google Benchmark, CLI11 (Debian packages) and matplotlib for the plots. The CUDA Toolkit (12.5 or
# newer) must already be there. Skips what is present; on a machine with a staged prefix (.deps, which
# CMakePresets.json puts on CMAKE_PREFIX_PATH) installs no build packages. Every apt-get, venv or pip
# step is announced before it runs.
#   usage: scripts/setup.sh
# CMake must be 3.25 or newer (the presets need it); an older one is refused with what to do.
# matplotlib is never pip-installed into a user's own Python: Debian's python3-matplotlib when python3
# is the system's and apt-get can run (root or sudo), otherwise into the project's virtual environment
# .venv/ (from PyPI). If neither works the plots are skipped; run_all.sh says so and still writes the
# README tables.
# Switch (scripts/test_setup.sh uses it; no root or network needed then):
#   FLASHSTAGES_SETUP_DRY_RUN=1   print the apt-get, venv and pip commands instead of running them
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dry=${FLASHSTAGES_SETUP_DRY_RUN:-0}
cmake_min=3.25
venv=$root/.venv

run() {  # a command that changes the machine: printed instead under the dry-run switch
  if [ "$dry" != 0 ]; then echo "setup: dry run, would run: $*"; else "$@"; fi
}

# apt-get as root, or through sudo; none of this when neither is there.
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
can_apt() { command -v apt-get >/dev/null && { [ ${#sudo[@]} -eq 0 ] || command -v sudo >/dev/null; }; }
apt_updated=0
apt_install() {
  if [ $apt_updated = 0 ]; then
    echo "setup: apt-get update (refreshing Debian's package lists)"
    run "${sudo[@]}" apt-get update -q
    apt_updated=1
  fi
  echo "setup: apt-get install $*"
  # -q, not -qq >/dev/null: a line per package downloaded and set up, so a long install is not silent.
  run "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@"
}

echo "setup: checking the CUDA Toolkit, CMake, Ninja, doctest, Google Benchmark, CLI11 and matplotlib"
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || {
  echo "setup: nvcc not found — install the CUDA Toolkit (12.5 or newer) first" >&2; exit 1; }

if [ ! -d "$root/.deps" ]; then
  need=()
  command -v cmake >/dev/null || need+=(cmake)
  command -v ninja >/dev/null || need+=(ninja-build)
  [ -f /usr/include/doctest/doctest.h ] || need+=(doctest-dev)
  [ -f /usr/include/benchmark/benchmark.h ] || need+=(libbenchmark-dev)
  [ -f /usr/include/CLI/CLI.hpp ] || need+=(libcli11-dev)
  if [ ${#need[@]} -gt 0 ]; then
    can_apt || { echo "setup: need ${need[*]}, and apt-get needs root or sudo: install them, then run this again" >&2
                 exit 1; }
    apt_install "${need[@]}"
  fi
fi

# One minimum, the presets' (CMakePresets.json, version 6). An older cmake is refused, not replaced: a
# newer one in .venv/ would serve these scripts but not the README's by-hand `cmake --preset` commands,
# and adding Kitware's apt repository is the machine owner's choice.
if command -v cmake >/dev/null; then
  have=$(cmake --version | sed -n '1s/^cmake version \([0-9][0-9.]*\).*/\1/p')
  if [ -z "$have" ]; then
    echo "setup: cannot read cmake's version ($(cmake --version | head -1)); CMake $cmake_min or newer is needed" >&2
  elif [ "$(printf '%s\n' "$cmake_min" "$have" | sort -V | head -1)" != "$cmake_min" ]; then
    cat >&2 <<EOF
setup: CMake $have is too old: the presets need CMake $cmake_min or newer. Install a newer one, then run this again:
  python3 -m pip install --user cmake     (PyPI's cmake into ~/.local/bin; put that first on PATH)
  or Kitware's apt repository for Ubuntu: https://apt.kitware.com
  or a release from https://cmake.org/download
EOF
    exit 1
  fi
elif [ "$dry" != 0 ]; then
  echo "setup: dry run: cmake is not installed, so its version ($cmake_min or newer) is not checked"
else
  echo "setup: cmake not found — install CMake $cmake_min or newer" >&2; exit 1
fi

# matplotlib: already there (system python or .venv/), else Debian's package, else .venv/ from PyPI.
have_matplotlib() { "$1" -c "import matplotlib" 2>/dev/null; }
system_python() { python3 -c 'import sys; sys.exit(0 if sys.prefix == sys.base_prefix == "/usr" else 1)' 2>/dev/null; }
if have_matplotlib python3; then
  :
elif have_matplotlib "$venv/bin/python3"; then
  echo "setup: matplotlib found in .venv/"
else
  got=0
  if system_python && can_apt; then
    apt_install python3-matplotlib && have_matplotlib python3 && got=1
  fi
  if [ $got = 0 ] && command -v python3 >/dev/null; then
    if [ ! -x "$venv/bin/python3" ]; then
      echo "setup: creating the project's virtual environment .venv/ (python3 -m venv) for matplotlib"
      # --system-site-packages: the venv still sees what the machine's python3 has (PyTorch for the
      # binding's GPU tests). Debian's python3 without python3-venv leaves a half-made folder: remove it.
      run python3 -m venv --system-site-packages "$venv" || run rm -rf "$venv"
    fi
    if [ -x "$venv/bin/python3" ] || [ "$dry" != 0 ]; then
      echo "setup: pip install matplotlib into .venv/ (from PyPI; a minute on a fresh machine)"
      run "$venv/bin/python3" -m pip install --progress-bar off matplotlib && have_matplotlib "$venv/bin/python3" && got=1
    fi
  fi
  if [ $got = 0 ]; then
    echo "setup: matplotlib unavailable — plots will be skipped (run_all.sh still writes the README tables)." \
         "To get them: apt-get install python3-matplotlib (system python3), or apt-get install python3-venv" \
         "and run this again" >&2
  else
    echo "setup: matplotlib installed"
  fi
fi
echo "setup: done"
