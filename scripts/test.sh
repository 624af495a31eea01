#!/usr/bin/env bash
# The test command: set up, configure, build every stage, run every test.
# Without a GPU the GPU tests are reported as skipped; FLASHSTAGES_REQUIRE_GPU=1 makes that a failure.
#   usage: scripts/test.sh [preset]      (default: release, or ci when CI=true)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
preset=${1:-$([ "${CI:-}" = true ] && echo ci || echo release)}
cd "$root"
scripts/setup.sh
cmake --preset "$preset"
cmake --build --preset "$preset"
ctest --preset "$preset"
