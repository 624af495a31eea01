// Google Benchmark helpers shared by every stage's bench.cu.
//
// Names: <stage>/<version>/<dtype>/D:<d>/N:<n>/causal:<0|1> for attention and
// <stage>/<version>/<dtype>/M:<m>/N:<n>/K:<k> for GEMM; peers use their own first part (cublas/…).
// Time is manual (CUDA events around each launch, L2 flushed before it); counters are TFLOPS, GB/s and,
// for attention, extra_bytes. Each benchmark runs 5 repetitions and reports their median (plus mean,
// stddev, cv): the plots read the median.
#pragma once

#include <benchmark/benchmark.h>

#include <functional>
#include <string>
#include <vector>

#include "attention_kernel.h"
#include "device_info.h"

namespace fs::bench {

// Every stage's bench.cu defines this; the shared main calls it once the GPU is known.
void register_benchmarks(const DeviceInfo& dev);

// The attention grid of the project: B·N = 16384 (B at least 1), H = 2048 / D.
struct AttentionGrid {
  std::vector<DType> dtypes{DType::FP32};
  std::vector<int64_t> dims{64, 128};
  std::vector<int64_t> seqs{512, 1024, 2048, 4096, 8192, 16384};
  std::vector<bool> causal{false, true};
};
AttentionParams grid_params(DType dtype, int64_t d, int64_t n, bool causal);

// Registers the kernel at every grid point whose tensors and workspace fit in 90% of device memory.
void register_attention(const DeviceInfo& dev, const AttentionKernel& kernel, const AttentionGrid& grid);

// One timed GEMM-like run for peers and GEMM stages: `launch` is called once per iteration.
struct TimedWork {
  double flops;
  double bytes;
  std::function<void()> setup;   // allocations and random fill, once, outside timing
  std::function<void()> launch;  // must enqueue on the default stream
};
void register_timed(const DeviceInfo& dev, const std::string& name, std::function<TimedWork()> make);

}  // namespace fs::bench
