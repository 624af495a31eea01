// Google Benchmark helpers shared by every stage's bench.cu.
//
// Names: <stage>/<version>/<dtype>/D:<d>/N:<n>/causal:<0|1> for attention on the grid,
// <stage>/<version>/<dtype>/D:<d>/B:<b>/H:<h>/Nq:<nq>/Nk:<nk>/causal:<0|1> for other attention shapes
// (.../H:<h>/KVH:<kvh>/Nq:... when K/V have fewer heads than Q),
// <stage>/<version>/<dtype>/D:<d>/H:<h>/packed:<entries>x<lo>-<hi>/causal:<0|1> for packed batches, and
// <stage>/<version>/<dtype>/M:<m>/N:<n>/K:<k> for GEMM; peers use their own first part (cublas/…).
// Time is manual (CUDA events around each launch, L2 flushed before it); counters are TFLOPS, GB/s and,
// for attention, extra_bytes. Each benchmark runs 5 repetitions and reports their median (plus mean,
// stddev, cv): the plots read the median. The kernels come from the library's registry; one the GPU
// cannot run is left out with a line saying why.
#pragma once

#include <benchmark/benchmark.h>

#include <functional>
#include <string>
#include <vector>

#include "common/lib/kernel.h"
#include "common/tools/device_info.h"

namespace fs::bench {

// Every stage's bench.cu defines this; the shared main calls it once the GPU is known.
void register_benchmarks(const DeviceInfo& dev);

// Whether `kernel` runs on `dev`; if not, prints "skipped stage07/v1: <reason>".
bool runs_on(const KernelDesc& kernel, const DeviceInfo& dev);

// The timing every benchmark shares: two warm-up launches, then, per benchmark iteration, the L2
// flushed and one launch timed with CUDA events. Returns the mean event time of one launch in seconds;
// rates are computed from it (Google Benchmark's rate counters would divide by CPU time).
double seconds_per_run(benchmark::State& state, const DeviceInfo& dev, const std::function<void()>& launch);

// Manual time in ms, 5 repetitions of at least 50 ms each, aggregates only (the plots read the median).
benchmark::internal::Benchmark* configure(benchmark::internal::Benchmark* b);

// The attention grid of the project: B·N = 16384 (B at least 1), H = 2048 / D.
struct AttentionGrid {
  std::vector<DType> dtypes{DType::FP32};
  std::vector<int64_t> dims{64, 128};
  std::vector<int64_t> seqs{512, 1024, 2048, 4096, 8192, 16384};
  std::vector<bool> causal{false, true};
};
AttentionParams grid_params(DType dtype, int64_t d, int64_t n, bool causal);

// Registers the kernel at every grid point it takes whose tensors and workspace fit in 90% of device
// memory; register_attention_stage does it for every version of a stage ("stage04"). A backward
// kernel is timed on the backward of the point (attention_bwd_flops: 2.5× the forward's), as a
// training step calls it: no delta asked for, dQ by whatever the version does by default.
void register_attention(const DeviceInfo& dev, const KernelDesc& kernel, const AttentionGrid& grid);
// The grid's points, in registration order (dtype, D, N, mask).
std::vector<AttentionParams> grid_points(const AttentionGrid& grid);
// A point's name after the series: <dtype>/D:<d>/N:<n>/causal:<0|1> on the grid, else
// <dtype>/D:<d>/B:<b>/H:<h>[/KVH:<kvh>]/Nq:<nq>/Nk:<nk>/causal:<0|1>.
std::string point_name(const AttentionParams& p);

// One of a tuner's candidates at a point: what its name carries after the point ("tile:1",
// "tile:2/splits:8") and its launch on the default stream.
struct AttentionCandidate {
  std::string label;
  std::function<Status(const AttentionParams&)> launch;
};
// Every candidate a tuner considers at each point, named <series>/<point>/<label>, with a counter
// `picked`: 1 where picked(point) is its label (the tuner's choice, asked once the candidate is timed).
// plots/plot_results.py sets the chosen candidate's rate against the fastest's at each point (its
// "tuner" table).
void register_attention_candidates(const DeviceInfo& dev, const std::string& series,
                                   const std::vector<AttentionParams>& points,
                                   const std::function<std::vector<AttentionCandidate>(const AttentionParams&)>& candidates,
                                   std::function<std::string(const AttentionParams&)> picked);
// A backward kernel with `deterministic` set, under the series <stage>/<version>_deterministic: the
// cost of a bitwise-reproducible dQ, beside the same version's default.
void register_attention_bwd_deterministic(const DeviceInfo& dev, const KernelDesc& kernel, const AttentionGrid& grid);
void register_attention_stage(const DeviceInfo& dev, const char* stage, const AttentionGrid& grid);

// Registers the kernel at each of `shapes` (sizes, dtype and mask set; no tensors) that it takes and
// that fits, named with B, H (and KVH when kv_heads makes it differ), Nq and Nk.
void register_attention_shapes(const DeviceInfo& dev, const KernelDesc& kernel,
                               const std::vector<AttentionParams>& shapes);

// The shapes on which one query tile per (batch entry, head) leaves SMs idle (issue 10): short query
// blocks against long keys (a prefill chunk against a long context, and decoding, Nq = 1) at
// (B, H, Nq, Nk) = (1, 16, 512, 16384), (1, 32, 1024, 8192), (2, 8, 256, 32768), (4, 32, 1, 8192),
// D = 128 and 64, fp16, causal 0 and 1, and bf16 at the first one, D = 128; then grouped-query K/V at
// (B, H, KVH, Nq, Nk) = (1, 32, 8, 1, 16384), (8, 32, 8, 1, 8192) (decoding a 32-head layer with 8 K/V
// heads, one sequence and eight), (1, 32, 8, 512, 16384) (a prefill chunk) and (4, 32, 1, 1, 8192)
// (multi-query decoding), D = 128, fp16, causal 0 and 1. 26 shapes; plots/sdpa_bench.py times SDPA on
// the same ones (its DEFAULT_QK_SIZES, DEFAULT_GQA_SIZES).
std::vector<AttentionParams> underfilled_attention_shapes();

// A packed batch (cu_seqlens) of `entries` sequences with as many keys as queries, their lengths drawn
// from [lo, hi] by a fixed generator (the same lengths on every machine and run; lo = hi: all alike),
// as a training step packs sequences of different lengths. Named
// <series>/<dtype>/D:<d>/H:<h>/packed:<entries>x<lo>-<hi>/causal:<0|1> (x<lo> when lo = hi). FLOPs are
// counted entry by entry (attention_fwd_flops of each), bytes over the packed tensors.
struct PackedBatch {
  DType dtype;
  int64_t d, heads;
  int64_t entries, lo, hi;
  bool causal;
};
std::vector<int32_t> packed_lengths(const PackedBatch& batch);
void register_attention_packed(const DeviceInfo& dev, const KernelDesc& kernel, const std::vector<PackedBatch>& batches);

// One timed GEMM-like run for peers and GEMM stages: `launch` is called once per iteration.
struct TimedWork {
  double flops;
  double bytes;
  std::function<void()> setup;   // allocations and random fill, once, outside timing
  std::function<void()> launch;  // must enqueue on the default stream
};
void register_timed(const DeviceInfo& dev, const std::string& name, std::function<TimedWork()> make);

}  // namespace fs::bench
