#!/usr/bin/env bash
# The test command: set up, configure, build every stage, run every test.
# On a GPU it builds for that GPU's architecture alone (the gpu preset, from scripts/gpu_archs.sh);
# without one (and under CI=true) every kernel once, for its stage's architectures (release, or ci), and
# the GPU tests are reported as skipped; FLASHSTAGES_REQUIRE_GPU=1 makes that a failure.
#   usage: scripts/test.sh [preset]      (default: gpu on a GPU; otherwise release, or ci when CI=true)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
preset=${1:-}
cd "$root"

# shellcheck source=progress.sh
. "$root/scripts/progress.sh"  # alive PHASE COMMAND...: a line every 30 s

echo "setup: scripts/setup.sh (installs only what is missing)"
scripts/setup.sh
if [ -z "$preset" ]; then
  if [ "${CI:-}" = true ]; then
    preset=ci
  elif FLASHSTAGES_GPU_ARCHS=$(scripts/gpu_archs.sh); then
    preset=gpu
  else
    preset=release
    echo "build: every kernel once, for its stage's architectures (the release preset)"
  fi
fi
if [ "$preset" = gpu ] && [ -z "${FLASHSTAGES_GPU_ARCHS:-}" ]; then
  FLASHSTAGES_GPU_ARCHS=$(scripts/gpu_archs.sh)  # without a GPU: its reason, and a failure
fi
if [ "$preset" = gpu ]; then
  export FLASHSTAGES_GPU_ARCHS
  echo "build: for this machine's GPU alone, CUDA architectures $FLASHSTAGES_GPU_ARCHS (the gpu preset; scripts/gpu_archs.sh)"
fi
echo "configure: cmake --preset $preset"
alive configure cmake --preset "$preset"
echo "build: cmake --build --preset $preset (this takes several minutes; nvcc compiles each kernel for its architectures)"
alive build cmake --build --preset "$preset"
echo "test: ctest --preset $preset"
alive test ctest --preset "$preset"
