#!/usr/bin/env bash
# The test command: set up, configure, build every stage, run every test.
# Without a GPU the GPU tests are reported as skipped; FLASHSTAGES_REQUIRE_GPU=1 makes that a failure.
#   usage: scripts/test.sh [preset]      (default: release, or ci when CI=true)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
preset=${1:-$([ "${CI:-}" = true ] && echo ci || echo release)}
cd "$root"

# shellcheck source=progress.sh
. "$root/scripts/progress.sh"  # alive PHASE COMMAND...: a line every 30 s

echo "setup: scripts/setup.sh (installs only what is missing)"
scripts/setup.sh
echo "configure: cmake --preset $preset"
alive configure cmake --preset "$preset"
echo "build: cmake --build --preset $preset (this takes several minutes; nvcc compiles each kernel for every architecture)"
alive build cmake --build --preset "$preset"
echo "test: ctest --preset $preset"
alive test ctest --preset "$preset"
