#!/usr/bin/env bash
# The main job: set up, build, then on a GPU run every stage's check and benchmark, the PyTorch SDPA
# peers, and draw the plots into results/<gpu>/. Without a GPU it says so and redraws the plots and
# README tables from the results already committed.
#   usage: scripts/run_all.sh [preset]   (default: release)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
preset=${1:-release}
cd "$root"

# shellcheck source=progress.sh
. "$root/scripts/progress.sh"  # alive PHASE COMMAND...: a line every 30 s

echo "setup: scripts/setup.sh (installs only what is missing)"
scripts/setup.sh
echo "configure: cmake --preset $preset"
alive configure cmake --preset "$preset"
echo "build: cmake --build --preset $preset (this takes several minutes; nvcc compiles each kernel for every architecture)"
alive build cmake --build --preset "$preset"
build=build/$preset

# plot_results.py needs matplotlib for the PNGs, not for the README tables (--no-plots). Use the python
# that has it: python3, or the project's .venv/ that setup.sh makes when the system's cannot take it.
plot() {  # usage: plot RESULTS_DIR
  local py
  for py in python3 "$root/.venv/bin/python3"; do
    if "$py" -c "import matplotlib" 2>/dev/null; then
      "$py" plots/plot_results.py --results "$1" "${readme_args[@]}"
      return
    fi
  done
  echo "plots: matplotlib is not installed (scripts/setup.sh says how to get it): plots skipped, README tables only"
  python3 plots/plot_results.py --results "$1" --no-plots "${readme_args[@]}"
}

readme_args=()
for f in README.md stages/*/README.md docs/*.md; do [ -f "$f" ] && readme_args+=(--readme "$f"); done
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo
  if [ "${FLASHSTAGES_REQUIRE_GPU:-0}" != 0 ]; then
    echo "FLASHSTAGES_REQUIRE_GPU=1 but no NVIDIA GPU or driver was found: nothing was run." >&2
    exit 1
  fi
  echo "No NVIDIA GPU on this machine: nothing was run or timed."
  echo "Drawing the plots and tables from the committed results instead:"
  for dir in results/*/; do
    [ -n "$(ls "$dir"/*.json 2>/dev/null)" ] || continue
    echo "plots: $dir"
    plot "$dir"
  done
  exit 0
fi

slug=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]\+/-/g; s/^-//; s/-$//')
out=results/$slug
mkdir -p "$out"
echo "GPU: $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader)"

status=0
for exe in "$build"/stages/*/stage0[0-9]_*; do
  case "$exe" in *_test|*_bench|*.cmake) continue ;; esac
  [ -f "$exe" ] && [ -x "$exe" ] || continue
  if [[ "$(basename "$exe")" == stage06_* ]]; then
    for dtype in fp32 fp16 int8; do
      echo; echo "== $(basename "$exe") --m 4096 --n 4096 --k 4096 --dtype $dtype"
      alive "$(basename "$exe")" "$exe" --m 4096 --n 4096 --k 4096 --dtype $dtype || status=1
    done
    continue
  fi
  for causal in 0 1; do
    echo; echo "== $(basename "$exe") --seq 4096 --dim 64 --causal=$causal"
    alive "$(basename "$exe")" "$exe" --seq 4096 --dim 64 --causal=$causal || status=1
  done
done

for bench in "$build"/stages/*/stage0[0-9]_bench; do
  name=$(basename "$bench" _bench)
  echo; echo "== $name benchmarks -> $out/$name.json"
  alive "$name benchmarks" "$bench" --benchmark_out="$out/$name.json" --benchmark_out_format=json || status=1
done

echo; echo "== PyTorch SDPA peers -> $out/sdpa.json"
alive "SDPA peers" python3 plots/sdpa_bench.py --out "$out/sdpa.json" --shape 2,16,8192,128 || status=1

echo; echo "== plots and README tables -> $out"
plot "$out"
exit $status
