#!/usr/bin/env bash
# CPU test of scripts/setup.sh's refusals, of run_all.sh without matplotlib, and of the build each
# command chooses (gpu_archs.sh: on a GPU, its architecture alone), in fake environments: a copy of the
# scripts in a temporary repository, and fake cmake, ctest, nvcc, nvidia-smi, id, apt-get, sudo and
# python3 first on PATH. The fake python3 is the real one with matplotlib hidden, refusing
# `-m pip` the way an externally managed (PEP 668) Python does. setup.sh runs with
# FLASHSTAGES_SETUP_DRY_RUN=1. No GPU, network or root; a few seconds; the temporary folder is removed.
#   usage: scripts/test_setup.sh [SETUP_SH [RUN_ALL_SH]]   (default: the scripts beside this one)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
setup_sh=$(realpath "${1:-$here/setup.sh}")
run_all_sh=$(realpath "${2:-$here/run_all.sh}")
python=$(python3 -c 'import sys; print(sys.executable)') || { echo "test_setup: python3 is needed" >&2; exit 1; }
real_id=$(command -v id)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The fakes. Each logs its call; apt-get and sudo fail, since nothing may be installed for real.
bin=$tmp/bin log=$tmp/calls.log hide=$tmp/hide
mkdir -p "$bin" "$hide/matplotlib"
echo 'raise ImportError("matplotlib is hidden by scripts/test_setup.sh")' >"$hide/matplotlib/__init__.py"
fake() { printf '#!/usr/bin/env bash\necho "%s $*" >>"%s"\n%s\n' "$1" "$log" "$2" >"$bin/$1"; chmod +x "$bin/$1"; }
# shellcheck disable=SC2016  # expanded when the fake runs
fake cmake 'if [ "${1:-}" = --version ]; then echo "cmake version $FAKE_CMAKE_VERSION"; fi
echo "cmake sees FLASHSTAGES_GPU_ARCHS=${FLASHSTAGES_GPU_ARCHS:-}" >>"'"$log"'"'
fake ctest 'exit 0'
# nvcc of a toolkit that knows Ampere to Hopper, not Blackwell.
fake nvcc 'if [ "${1:-}" = --list-gpu-arch ]; then printf "compute_%s\n" 75 80 86 87 89 90; fi'
# FAKE_GPU_CAPS: the compute capabilities of the machine's GPUs ("9.0"); none: no driver, no GPU.
fake nvidia-smi '[ -n "${FAKE_GPU_CAPS:-}" ] || exit 9
case "$*" in
  *compute_cap*) printf "%s\n" $FAKE_GPU_CAPS ;;
  *) echo "Fake GPU" ;;
esac'
fake apt-get 'echo "fake apt-get: must not run here" >&2; exit 1'
fake sudo 'echo "fake sudo: must not run here" >&2; exit 1'
fake id "if [ \"\${1:-}\" = -u ]; then echo \"\$FAKE_UID\"; else exec $real_id \"\$@\"; fi"
# FAKE_SYSTEM=0: answers setup.sh's "is python3 the system's" probe with yes (Debian 12's /usr/bin/python3).
fake python3 "case \"\$*\" in
  *'-m pip'*) echo 'error: externally-managed-environment (fake, PEP 668)' >&2; exit 1 ;;
  *'-m venv'*) echo 'fake python3: -m venv must not run in a dry run' >&2; exit 1 ;;
  *base_prefix*) exit \"\$FAKE_SYSTEM\" ;;
esac
PYTHONPATH=$hide exec $python \"\$@\""

# A repository: the scripts under test, plot_results.py and its package flashstages_plots/, the plots'
# fixture as two results folders (the reference run the docs quote, and another GPU's) and a README
# with a stale table. setup.sh finds .venv/ and .deps/ beside its own scripts/ folder.
repo=$tmp/repo
reference=$repo/results/$(grep -v '^#' "$here/../results/REFERENCE" | head -1)  # the setting, as the repository has it
mkdir -p "$repo/scripts" "$repo/plots" "$repo/results/fake" "$reference"
cp "$here/../results/REFERENCE" "$repo/results/"
cp "$setup_sh" "$repo/scripts/setup.sh"
cp "$run_all_sh" "$repo/scripts/run_all.sh"
cp "$here/progress.sh" "$here/test.sh" "$here/gpu_archs.sh" "$repo/scripts/"
# a `git show` copy is not executable
chmod +x "$repo/scripts/setup.sh" "$repo/scripts/run_all.sh" "$repo/scripts/test.sh" "$repo/scripts/gpu_archs.sh"
cp "$here/../plots/plot_results.py" "$repo/plots/"
cp -r "$here/../plots/flashstages_plots" "$repo/plots/"
"$python" - "$here/../plots/fixtures/sample_results.json" "$repo/results/fake" "$reference" <<'EOF'
import json, pathlib, sys
for name, doc in json.loads(pathlib.Path(sys.argv[1]).read_text()).items():
    for folder in sys.argv[2:]:
        (pathlib.Path(folder) / name).write_text(json.dumps(doc))
EOF
printf '# fake\n<!-- results:attention:stage03/v2:begin -->\nstale table\n<!-- results:attention:stage03/v2:end -->\n' \
  >"$repo/README.md"

failed=0
out=$tmp/out
# usage: scenario NAME SCRIPT [VAR=VALUE...]: runs SCRIPT in the fake environment, output in $out
scenario() {
  local name=$1 script=$2; shift 2
  echo "== $name"
  : >"$log"
  rc=0
  (cd "$repo" && env -u FLASHSTAGES_REQUIRE_GPU -u CI PATH="$bin:$PATH" FLASHSTAGES_SETUP_DRY_RUN=1 \
     FAKE_CMAKE_VERSION=3.28.3 FAKE_UID=0 FAKE_SYSTEM=0 "$@" "$script") >"$out" 2>&1 || rc=$?
}
# usage: expect DESCRIPTION COMMAND...: a failed COMMAND fails the test, with the output shown
expect() {
  local what=$1; shift
  if "$@"; then echo "  ok: $what"; return; fi
  echo "  FAILED: $what"; sed 's/^/    | /' "$out"; failed=$((failed + 1))
}
has() { grep -qE -- "$1" "$out"; }
lacks_in_log() { ! grep -qE -- "$1" "$log"; }
lacks() { ! grep -qE -- "$1" "$out"; }
readme_rewritten() { ! grep -q "stale table" "$repo/README.md" && grep -q '^| ' "$repo/README.md"; }
nothing_installed() {
  ! grep -qE '^(apt-get|sudo) |^python3 .*-m (pip|venv)' "$log" && [ ! -e "$repo/.venv" ]
}

# The build packages are not under test (their checks look at /usr/include): .deps/ skips them.
mkdir "$repo/.deps"

for v in 3.22.1 3.24.4; do
  scenario "cmake $v on PATH: refused, with what to do" scripts/setup.sh FAKE_CMAKE_VERSION=$v
  expect "non-zero exit" [ $rc -ne 0 ]
  expect "says 3.25 is needed" has "CMake $v is too old: the presets need CMake 3\.25 or newer"
  expect "says how to get a newer one" has "pip install --user cmake"
done
for v in 3.25.0 4.1.2; do
  scenario "cmake $v on PATH: accepted" scripts/setup.sh FAKE_CMAKE_VERSION=$v
  expect "exit 0" [ $rc -eq 0 ]
  expect "no complaint about cmake" lacks "too old"
done

scenario "externally managed system python3, as root: Debian's python3-matplotlib" scripts/setup.sh
expect "exit 0" [ $rc -eq 0 ]
expect "nothing pip-installed into the system python, nothing installed at all" nothing_installed
expect "takes the apt path" has "apt-get install .*python3-matplotlib"
expect "says plots will be skipped while matplotlib is missing" has "plots will be skipped"

scenario "externally managed python3 that is not the system's, not root: the project's .venv/" \
  scripts/setup.sh FAKE_UID=1000 FAKE_SYSTEM=1
expect "exit 0" [ $rc -eq 0 ]
expect "nothing pip-installed into that python, nothing installed at all" nothing_installed
expect "no apt path for a python that is not the system's" lacks "would run: .*apt-get"
expect "makes .venv/ in the repository" has "would run: python3 -m venv --system-site-packages $repo/\.venv$"
expect "pip-installs matplotlib into .venv/ only" has "would run: $repo/\.venv/bin/python3 -m pip install .*matplotlib"

scenario "run_all.sh without matplotlib and without a GPU: plots skipped, tables written" \
  scripts/run_all.sh FAKE_UID=1000 FAKE_SYSTEM=1
expect "exit 0" [ $rc -eq 0 ]
expect "says the plots are skipped" has "plots skipped"
expect "no PNG drawn" [ -z "$(ls "$repo"/results/*/*.png 2>/dev/null)" ]
expect "README table rewritten from the reference results without matplotlib" readme_rewritten
expect "another GPU's results get their own README of tables" grep -q '^| ' "$repo/results/fake/README.md"
expect "nothing installed" nothing_installed
expect "nothing configured or built: there is no GPU to build for" lacks_in_log "^cmake (--preset|--build)"
expect "says nothing was built" has "nothing was built"

scenario "run_all.sh without a GPU but FLASHSTAGES_REQUIRE_GPU=1: a failure, not a redraw" \
  scripts/run_all.sh FAKE_UID=1000 FAKE_SYSTEM=1 FLASHSTAGES_REQUIRE_GPU=1
expect "non-zero exit" [ $rc -ne 0 ]
expect "says a GPU was required" has "FLASHSTAGES_REQUIRE_GPU=1 but no NVIDIA GPU"

scenario "gpu_archs.sh on a machine with two kinds of GPU: both architectures, each once" \
  scripts/gpu_archs.sh FAKE_GPU_CAPS="8.6 9.0 8.6"
expect "exit 0" [ $rc -eq 0 ]
expect "prints 86;90" [ "$(cat "$out")" = "86;90" ]
scenario "gpu_archs.sh without a GPU: a failure that says so" scripts/gpu_archs.sh
expect "non-zero exit" [ $rc -ne 0 ]
expect "says there is no GPU" has "no NVIDIA GPU found"
scenario "gpu_archs.sh on a GPU newer than nvcc: a failure that names the PTX way" \
  scripts/gpu_archs.sh FAKE_GPU_CAPS=12.0
expect "non-zero exit" [ $rc -ne 0 ]
expect "says nvcc cannot compile for sm_120 and names the release preset" has "cannot compile for sm_120.*release preset"

scenario "test.sh on a GPU: the gpu preset, for that GPU's architecture alone" scripts/test.sh FAKE_GPU_CAPS=9.0
expect "exit 0" [ $rc -eq 0 ]
expect "configures, builds and tests the gpu preset" \
  grep -qE "^cmake --preset gpu" "$log" && grep -qE "^cmake --build --preset gpu" "$log" && grep -qE "^ctest --preset gpu" "$log"
expect "hands it sm_90 alone" grep -qx "cmake sees FLASHSTAGES_GPU_ARCHS=90" "$log"
scenario "test.sh without a GPU: the release preset, every kernel for its stage's architectures" scripts/test.sh
expect "exit 0" [ $rc -eq 0 ]
expect "configures the release preset, no architecture pinned" \
  grep -qE "^cmake --preset release" "$log" && grep -qx "cmake sees FLASHSTAGES_GPU_ARCHS=" "$log"
scenario "test.sh under CI=true: the ci preset" scripts/test.sh CI=true
expect "configures the ci preset" grep -qE "^cmake --preset ci" "$log"
scenario "run_all.sh on a GPU: builds the gpu preset for its architecture" scripts/run_all.sh FAKE_GPU_CAPS=8.9 \
  FAKE_UID=1000 FAKE_SYSTEM=1
expect "configures the gpu preset with sm_89" \
  grep -qE "^cmake --preset gpu" "$log" && grep -qx "cmake sees FLASHSTAGES_GPU_ARCHS=89" "$log"
scenario "run_all.sh on a GPU newer than nvcc: the release preset, whose PTX runs there" scripts/run_all.sh \
  FAKE_GPU_CAPS=12.0 FAKE_UID=1000 FAKE_SYSTEM=1
expect "configures the release preset" grep -qE "^cmake --preset release" "$log"
rm -rf "$repo"/results/fake-gpu  # what those two runs left

echo "== a long phase is never silent: alive prints a line every interval while its command runs"
: >"$log"
(. "$here/progress.sh"; FLASHSTAGES_PROGRESS_SECONDS=1 alive build sleep 3.5) >"$out" 2>&1
expect "two or more progress lines during a 3.5 s command at a 1 s interval" \
  [ "$(grep -c '^build: still running' "$out")" -ge 2 ]
(. "$here/progress.sh"; alive build false) >"$out" 2>&1 && rc=0 || rc=$?
expect "the command's failure is passed on" [ $rc -ne 0 ]

if [ $failed -gt 0 ]; then
  echo "test_setup: $failed check(s) failed (setup.sh: $setup_sh, run_all.sh: $run_all_sh)" >&2
  exit 1
fi
echo "test_setup: all checks passed"
