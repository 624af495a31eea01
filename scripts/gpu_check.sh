#!/usr/bin/env bash
# One batch on a GPU machine: build, GPU tests, compute-sanitizer over them, the stage executables at
# N = 4096, benchmarks, SDPA peers, plots. Logs go to $LOGS (default logs/), results to results/<gpu>/.
#   usage: scripts/gpu_check.sh [preset] [steps...]
#   steps: build test sanitize run profile bench plots compare (default: h100, build test sanitize run
#          bench plots)
#   Filters (space-separated stage names, default all): BENCHES (stage01 … stage07, ceilings, sdpa), RUNS
#   (executables), SANITIZE (test binaries: stage01 … stage07, common, ceilings), PROFILES (the ncu
#   groups of the profile step: traffic large limits stage04 stage06); TOOLS lists the
#   compute-sanitizer tools (default all four); SANITIZE_ONLY runs them one version at a time (below).
#   compare: BASELINE=<source tree of an earlier commit> is built beside this one and the headline
#   benchmarks of both run in the same call (old, new, new, old), then scripts/compare_bench.py
#   prints the ratios (MAP=old=new,... names renamed versions). ROUNDS (default "old1 new1 new2 old2")
#   runs some of the rounds, so that they can be split over calls to one machine; the ratios are of
#   every round in $LOGS. TARGETS (e.g. "stage05_bench stage07_gemm_bench") builds only those.
#   It ends with a short summary table, and exits 1 if the build, a GPU test or a sanitizer verdict
#   failed (the other steps say so in the summary), else 0.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
preset=${1:-h100}; shift || true
steps=${*:-build test sanitize run bench plots}
tools=${TOOLS:-racecheck initcheck memcheck synccheck}  # the slowest first
# The rungs: each stage folder's sub-folder with a build of its own, named as its binaries are
# (stages/07_tuned_tma/attention_bwd/ is stage07_attention_bwd: stage07_attention_bwd_test, ..._bench).
rungs=()
for rung_dir in stages/[0-9][0-9]_*/*/; do
  [ -f "$rung_dir/CMakeLists.txt" ] || continue  # instances/ holds sources of its stage, no rung
  rung_dir=${rung_dir%/}
  stage_dir=${rung_dir#stages/}
  rungs+=("stage${stage_dir%%_*}_${rung_dir##*/}")
done
# rung_of NAME: the rung NAME belongs to, the longest one NAME is or starts with (then "_"): one rung's
# name may begin another's (stage07_attention, stage07_attention_bwd). Empty for a name of no rung.
rung_of() {
  local r best=
  for r in "${rungs[@]}"; do
    [[ "$1" == "$r" || "$1" == "${r}_"* ]] && ((${#r} > ${#best})) && best=$r
  done
  echo "$best"
}
# owner_of NAME: the rung NAME belongs to, else its stage (stage05_test: stage05), as a version's name
# begins (stage07/attention/v11: stage07_attention; stage05/v2: stage05).
owner_of() {
  local r
  r=$(rung_of "$1")
  echo "${r:-${1%%_*}}"
}
# picked LIST NAME: does an item of the filter LIST (empty: all) name NAME or what NAME belongs to? An
# item is a stage or a rung. A stage picks every name it begins: stage07 picks stage07_attention_test,
# stage07_attention_bwd_test and stage07_gemm_bench, stage06 picks stage06_gemm. A rung picks the
# names whose rung (rung_of) it is: stage07_attention the forward's binaries alone (stage07_attention_test,
# not stage07_attention_bwd_test), stage07_attention_bwd the backward's, stage07_gemm the gemm rung's.
picked() {
  [ -z "$1" ] && return 0
  local item rung
  rung=$(rung_of "$2")
  for item in $1; do
    [[ "$2" == "$item" ]] && return 0
    if [[ " ${rungs[*]} " == *" $item "* ]]; then
      [[ "$rung" == "$item" ]] && return 0
    else
      [[ "$2" == "${item}_"* ]] && return 0
    fi
  done
  return 1
}
logs=${LOGS:-logs}
mkdir -p "$logs"
build=build/$preset
summary=$logs/summary.txt
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }
failed=0  # the exit code: 1 once the build, the GPU tests or a sanitizer verdict fails
has() { [[ " $steps " == *" $1 "* ]]; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv | tee "$logs/gpu.txt"
slug=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]\+/-/g; s/^-//; s/-$//')
out=results/$slug

if has build; then
  start=$SECONDS
  cmake --preset "$preset" >"$logs/configure.log" 2>&1 &&
    cmake --build --preset "$preset" ${TARGETS:+--target $TARGETS} >"$logs/build.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || failed=1
  note "build: rc=$rc in $((SECONDS - start)) s"
fi

if has test; then
  start=$SECONDS
  FLASHSTAGES_REQUIRE_GPU=1 ctest --preset "$preset" -j 4 >"$logs/ctest.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || failed=1
  note "ctest (FLASHSTAGES_REQUIRE_GPU=1): rc=$rc in $((SECONDS - start)) s — $(grep -E 'tests passed|tests failed' "$logs/ctest.log" | tail -1)"
  grep -E "Failed|\*\*\*" "$logs/ctest.log" | head -20 | tee -a "$summary"
fi

# Every GPU test case of the chosen binaries under each tool, with the tests' sanitizer sizes
# (FLASHSTAGES_SANITIZER=1: small, but several tiles and a tail in every direction) and v5's tuner off
# (it would time every candidate under the tool). Left out: the two cases that provoke CUDA API errors
# on purpose (an allocation too large to succeed, a launch refused during a capture), which the tool
# would count as errors, and the cases over tensors of more than 2^31 elements (gigabytes per tensor:
# minutes per tool, for address arithmetic the small cases run through too; they report themselves
# skipped when run under a tool by hand). Every (tool, binary) pair is its own process, SANITIZE_JOBS (default 8) at a
# time, the slowest first; the tools in SPLIT_TOOLS (default racecheck, which over stages 04-06 runs
# longer than one call allows) run each test case as its own process (doctest's --first/--last), so
# they spread over the cores and a timeout names the case. Each process gets SANITIZE_TIMEOUT seconds
# (default 420); one summary line per (tool, binary) says clean, or which cases failed or timed out.
# SANITIZE_ONLY (space-separated versions, e.g. "stage05/v0 stage05/v1 stage06/v14") splits further:
# each process of a binary checks one of the versions it names of that binary (FLASHSTAGES_ONLY), so a
# case that loops over every version of a stage, too slow under racecheck as a whole, becomes one process
# per version; the cases' exit code 77 (versions left out, reported skipped) then counts as a pass. A
# binary none of whose versions it names runs every version, as without it. SANITIZE_DONE names the verdict file
# of an earlier run over the same build (lines "sanitizer_<binary>_<tool>[_caseN][_version]: clean …", as
# results/*/logs/racecheck_*.txt keep them): the processes it shows clean are not run again, so a
# racecheck that outlasts one sitting finishes in the next. FLASHSTAGES_REQUIRE_GPU=1 throughout: a
# missing GPU fails, never skips.
if has sanitize; then
  binaries=()
  for t in "$build"/stages/07_*/*/stage*_test "$build"/stages/06_*/stage*_test "$build"/stages/04_*/stage*_test \
           "$build"/stages/05_*/stage*_test "$build"/stages/0[1-3]_*/stage*_test \
           "$build"/common/common_test "$build"/ceilings/ceilings_test; do
    picked "${SANITIZE:-}" "$(basename "$t")" && binaries+=("$t")
  done
  filters=(-ts=gpu '-tce=*FS_ERR_OUT_OF_MEMORY*,*FS_ERR_CUDA*,*more than 2^31 elements*')
  cases_of() {  # binary: how many test cases pass the filters
    "$1" "${filters[@]}" --count 2>/dev/null | sed -n 's/.*passing the current filters: \([0-9]*\).*/\1/p'
  }
  sanitize_one() {  # tool binary case version: one process (case, version: empty for all); its verdict in $log.summary
    local name log t0=$SECONDS rc verdict range=() what
    name=$(basename "$2")
    log=$logs/sanitizer_${name}_$1${3:+_case$3}${4:+_${4//\//_}}.log
    what="${3:+ case $3}${4:+ $4}"
    [ -n "$3" ] && range=(--first="$3" --last="$3")
    if [ -n "${SANITIZE_DONE:-}" ] && grep -q "^$(basename "$log" .log): clean" "$SANITIZE_DONE"; then
      echo "clean$what: in $(basename "$SANITIZE_DONE") (not run again)" >"$log.summary"
      return
    fi
    FLASHSTAGES_REQUIRE_GPU=1 FLASHSTAGES_ONLY="$4" FLASHSTAGES_SANITIZER=1 FLASHSTAGES_AUTOTUNE=0 \
      timeout "${SANITIZE_TIMEOUT:-420}" compute-sanitizer \
      --tool "$1" --error-exitcode 99 "$2" "${filters[@]}" "${range[@]}" >"$log" 2>&1
    rc=$?
    [ $rc -eq 77 ] && [ -n "$4" ] && rc=0  # the other versions, left out on purpose, reported skipped
    if [ $rc -eq 124 ]; then verdict="TIMED OUT after ${SANITIZE_TIMEOUT:-420} s"
    elif [ $rc -ne 0 ]; then verdict="FAILED (rc=$rc)"
    elif grep -qE 'ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards' "$log"; then verdict=clean
    else verdict="no summary from the tool (rc=0)"; fi
    echo "$verdict$what: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1) ($((SECONDS - t0)) s)" >"$log.summary"
  }
  start=$SECONDS
  for tool in $tools; do
    for t in "${binaries[@]}"; do
      units=("")
      if [[ " ${SPLIT_TOOLS-racecheck} " == *" $tool "* ]]; then
        n=$(cases_of "$t")
        [ "${n:-0}" -gt 0 ] && units=($(seq 1 "$n"))
      fi
      versions=()  # the versions SANITIZE_ONLY names of this binary, one process each
      owner=$(owner_of "$(basename "$t")")
      for v in ${SANITIZE_ONLY:-}; do
        stage=${v%/*}
        [ "${stage//\//_}" == "$owner" ] && versions+=("$v")
      done
      [ ${#versions[@]} -gt 0 ] || versions=("")  # else every version in one process
      for u in "${units[@]}"; do
        for v in "${versions[@]}"; do
          while [ "$(jobs -rp | wc -l)" -ge "${SANITIZE_JOBS:-8}" ]; do wait -n; done
          sanitize_one "$tool" "$t" "$u" "$v" &
        done
      done
    done
  done
  wait
  for tool in $tools; do
    for t in "${binaries[@]}"; do
      name=$(basename "$t")
      parts=("$logs/sanitizer_${name}_${tool}"*.log.summary)
      verdicts=$(cat "${parts[@]}" 2>/dev/null)
      bad=$(grep -v '^clean' <<<"$verdicts" || true)
      count=$(grep -c . <<<"$verdicts")
      if [ "$count" -gt 0 ] && [ -z "$bad" ]; then
        note "sanitizer $tool $name: clean ($count process(es))"
      else
        failed=1
        note "sanitizer $tool $name: NOT clean ($count process(es)):"
        echo "${bad:-no result}" | sed 's/^/    /' | tee -a "$summary"
      fi
    done
  done
  note "sanitizer: all tools over all binaries in $((SECONDS - start)) s"
fi

if has run; then
  # Attention stages at N = 4096, D = 64, both masks (the Hopper backward at D = 128 too); the GEMM
  # stages at 4096³ in each element type.
  for exe in "$build"/stages/*/stage0[0-9]_* "$build"/stages/*/*/stage0[0-9]_*; do
    case "$exe" in *_test|*_bench|*.cmake) continue ;; esac
    [ -f "$exe" ] && [ -x "$exe" ] || continue
    name=$(basename "$exe")
    picked "${RUNS:-}" "$name" || continue
    if [[ "$name" == stage0[67]_gemm ]]; then  # the GEMM stages; stage 07 takes fp16 and bf16 alone
      dtypes="fp32 fp16 int8"
      [[ "$name" == stage07_* ]] && dtypes="fp16 bf16"
      for dtype in $dtypes; do
        "$exe" --m 4096 --n 4096 --k 4096 --dtype $dtype >"$logs/run_${name}_$dtype.log" 2>&1
        note "run $name 4096^3 $dtype: rc=$?"
      done
      continue
    fi
    for causal in 0 1; do
      "$exe" --seq 4096 --dim 64 --causal=$causal >"$logs/run_${name}_causal$causal.log" 2>&1
      note "run $name N=4096 D=64 causal=$causal: rc=$?"
      if [[ "$name" == stage07_attention_bwd ]]; then
        "$exe" --seq 4096 --dim 128 --causal=$causal >"$logs/run_${name}_D128_causal$causal.log" 2>&1
        note "run $name N=4096 D=128 causal=$causal: rc=$?"
      fi
    done
  done
fi

# Nsight Compute, clocks left alone (--clock-control none: the clocks the benchmarks ran at). Every
# CSV lands in logs/ with the command that made it in logs/ncu_commands.txt; docs/ quotes them by name.
#  1. Per-kernel time and DRAM bytes of one timed call at N = 4096, D = 64 (stages 01-03; 3 warm-up
#     calls and 1 timed call, three kernels per call in stages 01-02, one in stage 03): the numbers
#     docs/ compares with the traffic model. Stages 02-03 again at N = 16384 (B = 1), where stage 02
#     is slower per FLOP, by application replay (S alone is 34 GB there: kernel replay would have to
#     save it for every pass).
#  2. What limits stages 02 and 03 (the timed call at N = 4096): pipe utilisation, shared-memory
#     wavefronts and bank conflicts, stall reasons — the sections' raw metrics.
#  3. What limits each stage 04 version (fp16, D = 128, N = 8192; v5 with the shape its tuner chose)
#     and stage 06 v7-v10 (4096³): the same sections. v5's tuner first times its 4 candidates 10 times each on its own problem; the
#     41st launch of the kernel is the first of the real call, with the shape the tuner chose.
# PROFILES picks among them: traffic (1, N = 4096), large (1, N = 16384), limits (2), stage04, stage06.
if has profile; then
  profiled() { [ -z "${PROFILES:-}" ] || [[ " $PROFILES " == *" $1 "* ]]; }
  basic=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct
  sections=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables
            --section Occupancy --section LaunchStats --section SchedulerStats --section WarpStateStats
            --section InstructionStats)
  : >"$logs/ncu_commands.txt"
  ncu --list-sections >"$logs/ncu_sections.txt" 2>&1
  ncu_run() {  # name, then the ncu arguments and the command; returns ncu's exit code
    local name=$1 t0=$SECONDS rc; shift
    echo "ncu --clock-control none $*" >>"$logs/ncu_commands.txt"
    ncu --clock-control none "$@" >"$logs/ncu_$name.out" 2>"$logs/ncu_$name.err"
    rc=$?
    note "ncu $name: rc=$rc ($((SECONDS - t0)) s)"
    return $rc
  }
  # The sections above, exported once and read twice: every raw metric, and the sections as ncu
  # prints them. Should this ncu lack one of the sections, its "detailed" set is taken instead.
  ncu_report() {  # name, then the ncu arguments and the command
    local name=$1; shift
    ncu_run "$name" --export "$logs/ncu_$name" --force-overwrite "${sections[@]}" "$@" ||
      ncu_run "$name" --export "$logs/ncu_$name" --force-overwrite --set detailed "$@"
    ncu --import "$logs/ncu_$name.ncu-rep" --csv --page raw >"$logs/ncu_$name.csv" 2>>"$logs/ncu_$name.err"
    ncu --import "$logs/ncu_$name.ncu-rep" --csv --page details >"$logs/ncu_${name}_details.csv" 2>>"$logs/ncu_$name.err"
    rm -f "$logs/ncu_$name.ncu-rep" "$logs/ncu_$name.out"
  }
  for spec in "01_naive/stage01_naive stage01/v1 12" "02_tiled/stage02_tiled stage02/v1 12" \
              "03_online_softmax/stage03_online_softmax stage03/v1 4"; do
    profiled traffic || break
    read -r exe version count <<<"$spec"
    name=$(basename "$exe")
    ncu_run "$name" --metrics $basic --csv -c "$count" "$build/stages/$exe" --seq 4096 --dim 64 \
      --check 0 --repeats 1 --version "$version"
    mv "$logs/ncu_$name.out" "$logs/ncu_$name.csv"
  done
  for spec in "02_tiled/stage02_tiled stage02/v1 9 3" "03_online_softmax/stage03_online_softmax stage03/v1 3 1"; do
    read -r exe version skip count <<<"$spec"
    name=$(basename "$exe")
    profiled large && ncu_run "${name}_N16384" --replay-mode application --metrics $basic --csv --launch-skip "$skip" -c "$count" \
      "$build/stages/$exe" --seq 16384 --dim 64 --batch 1 --heads 32 --check 0 --repeats 1 --version "$version"
    profiled large && mv "$logs/ncu_${name}_N16384.out" "$logs/ncu_${name}_N16384.csv"
    profiled limits && ncu_report "${name}_limits" --launch-skip "$skip" -c "$count" \
      "$build/stages/$exe" --seq 4096 --dim 64 --check 0 --repeats 1 --version "$version"
  done
  stage04=("$build/stages/04_flash_fwd/stage04_flash_fwd" --dtype fp16 --seq 8192 --dim 128 --batch 2 --heads 16
           --check 0 --repeats 1)
  for version in v1 v2 v3 v4; do
    profiled stage04 || break
    ncu_report "stage04_${version}_limits" -k "regex:flash_fwd_${version}_kernel" -c 1 "${stage04[@]}" --version "$version"
  done
  profiled stage04 && ncu_report stage04_v5_limits -k regex:flash_fwd_v4_kernel --launch-skip 40 -c 1 \
    "${stage04[@]}" --version v5
  for spec in "v7 fp16" "v8 int8" "v9 fp16" "v10 int8" "v12 fp16" "v13 int8"; do
    profiled stage06 || break
    read -r version dtype <<<"$spec"
    ncu_report "stage06_${version}_limits" -k "regex:gemm_${version}_kernel" -c 1 \
      "$build/stages/06_tensorcore_gemm/stage06_gemm" --m 4096 --n 4096 --k 4096 --dtype "$dtype" \
      --check 0 --repeats 1 --version "$version"
  done
fi

if has bench; then
  mkdir -p "$out"
  for b in "$build"/stages/*/stage0[0-9]_bench "$build"/stages/*/*/stage0[0-9]_*_bench "$build"/ceilings/ceilings_bench; do
    name=$(basename "$b" _bench)
    picked "${BENCHES:-}" "$name" || continue
    start=$SECONDS
    # The tuners (stage 04 v5/v6, stage 06 v11) print every candidate's time and their pick into the
    # log: the evidence for "the pick is within 3% of the best candidate" (outside the timed loops).
    FLASHSTAGES_AUTOTUNE=${FLASHSTAGES_AUTOTUNE:-verbose} \
      "$b" --benchmark_out="$out/$name.json" --benchmark_out_format=json >"$logs/bench_$name.log" 2>&1
    note "bench $name: rc=$? in $((SECONDS - start)) s"
    if [[ $name == stage06 ]]; then  # PyTorch's products right after cuBLAS's: the cross-check, same run
      PYTHONUNBUFFERED=1 python3 plots/matmul_bench.py --out "$out/torch_matmul.json" >"$logs/torch_matmul.log" 2>&1
      note "torch matmul peers: rc=$?"
    fi
    if [[ $name == stage05 ]]; then  # SDPA's backward right after stage 05's (72 s on an H100)
      PYTHONUNBUFFERED=1 python3 plots/sdpa_bench.py --backward --no-gqa --out "$out/sdpa_bwd.json" >"$logs/sdpa_bwd.log" 2>&1
      note "sdpa backward peers: rc=$?"
    fi
    if [[ $name == stage07_attention ]]; then  # its packed batches through SDPA and FlashAttention-2's varlen kernel
      PYTHONUNBUFFERED=1 python3 plots/sdpa_bench.py --packed-defaults --dtype fp16 --backend flash \
        --out "$out/sdpa_packed.json" >"$logs/sdpa_packed.log" 2>&1
      note "sdpa packed peers: rc=$?"
    fi
  done
  if picked "${BENCHES:-}" sdpa; then
    PYTHONUNBUFFERED=1 python3 plots/sdpa_bench.py --out "$out/sdpa.json" --shape 2,16,8192,128 >"$logs/sdpa.log" 2>&1
    note "sdpa peers: rc=$?"
  fi
fi

# The headline benchmarks of an earlier commit and of this tree, in the same call, ABBA order.
if has compare; then
  baseline=${BASELINE:?compare needs BASELINE=<source tree of the earlier commit>}
  start=$SECONDS
  (cd "$baseline" && cmake --preset "$preset" -DCMAKE_PREFIX_PATH="$root/.deps" >"$root/$logs/configure_baseline.log" 2>&1 &&
    cmake --build --preset "$preset" ${TARGETS:+--target $TARGETS} >"$root/$logs/build_baseline.log" 2>&1)
  note "build baseline: rc=$? in $((SECONDS - start)) s"
  # Each rung's headline shapes: attention at N = 8192, D = 64 and 128, both masks (fp16); GEMM at 4096³.
  filters=("stage01/v1/fp32/D:64/N:1024/" "stage0[23]/v1/fp32/D:64/N:4096/" "stage0[45]/v[0-9]+/fp16/D:(64|128)/N:8192/"
           "stage06/v[0-9]+/.*/M:4096/N:4096/K:4096" "stage07/attention/v[0-9]+/fp(16|8)[^/]*/D:(64|128)/N:8192/"
           "stage07/gemm/v[0-9]+/.*/M:4096/N:4096/K:4096")
  filter=$(IFS='|'; echo "${filters[*]}")
  run_bench() {  # tree label
    for b in "$1"/build/$preset/stages/*/stage0[0-9]_bench "$1"/build/$preset/stages/*/*/stage0[0-9]_*_bench; do
      [ -x "$b" ] || continue
      picked "${BENCHES:-}" "$(basename "$b" _bench)" || continue
      FLASHSTAGES_AUTOTUNE=verbose "$b" --benchmark_filter="$filter" \
        --benchmark_out="$logs/compare_$2_$(basename "$b" _bench).json" \
        --benchmark_out_format=json >>"$logs/compare_$2.log" 2>&1 || note "compare: $b failed"
    done
  }
  for label in ${ROUNDS:-old1 new1 new2 old2}; do
    case $label in old*) run_bench "$baseline" "$label" ;; new*) run_bench "$root" "$label" ;; esac
  done
  olds=() news=()  # every round run so far into this $LOGS (ROUNDS may split them over calls)
  for f in "$logs"/compare_old*_*.json; do [ -f "$f" ] && olds+=(--old "$f"); done
  for f in "$logs"/compare_new*_*.json; do [ -f "$f" ] && news+=(--new "$f"); done
  python3 scripts/compare_bench.py "${olds[@]}" "${news[@]}" --map "${MAP:-}" | tee "$logs/compare.txt"
  note "compare: rc=${PIPESTATUS[0]} in $((SECONDS - start)) s"
fi

if has plots; then  # the docs quote the reference run alone (results/REFERENCE); any other GPU its own README
  docs=(--repo-docs)
  [ "$out" = "results/$(grep -v '^#' results/REFERENCE | head -1)" ] || docs=(--readme "$out/README.md")
  [ -f "$out/README.md" ] || docs=()
  python3 plots/plot_results.py --results "$out" "${docs[@]}" >"$logs/plots.log" 2>&1
  note "plots: rc=$?"
fi

echo
echo "==== summary ($slug) ===="
cat "$summary"
exit $failed
