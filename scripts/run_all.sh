#!/usr/bin/env bash
# The main job: set up, build, then on a GPU run every stage's check and benchmark, the PyTorch SDPA
# peers, and draw the plots into results/<gpu>/. Without a GPU it says so and redraws the plots and
# README tables from the results already committed.
#   usage: scripts/run_all.sh [preset]   (default: release)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
preset=${1:-release}
cd "$root"
scripts/setup.sh
cmake --preset "$preset"
cmake --build --preset "$preset"
build=build/$preset

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
    python3 plots/plot_results.py --results "$dir" "${readme_args[@]}"
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
      "$exe" --m 4096 --n 4096 --k 4096 --dtype $dtype || status=1
    done
    continue
  fi
  for causal in 0 1; do
    echo; echo "== $(basename "$exe") --seq 4096 --dim 64 --causal=$causal"
    "$exe" --seq 4096 --dim 64 --causal=$causal || status=1
  done
done

for bench in "$build"/stages/*/stage0[0-9]_bench; do
  name=$(basename "$bench" _bench)
  echo; echo "== $name benchmarks -> $out/$name.json"
  "$bench" --benchmark_out="$out/$name.json" --benchmark_out_format=json || status=1
done

echo; echo "== PyTorch SDPA peers -> $out/sdpa.json"
python3 plots/sdpa_bench.py --out "$out/sdpa.json" --shape 2,16,8192,128 || status=1

python3 plots/plot_results.py --results "$out" "${readme_args[@]}"
exit $status
