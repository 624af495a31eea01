// Timing device work with CUDA events, for the library's tuner and the host tools alike. Errors come
// back as a Status (library code never throws); the tools turn them into exceptions.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <vector>

#include "common/lib/status.h"

namespace fs {

// Times regions of a stream: begin() records the start event, end() the stop event, waits for it and
// gives the time between them.
class GpuTimer {
 public:
  GpuTimer();
  ~GpuTimer();
  GpuTimer(const GpuTimer&) = delete;
  GpuTimer& operator=(const GpuTimer&) = delete;
  Status status() const { return status_; }  // whether the events could be created
  Status begin(cudaStream_t stream);
  Status end(cudaStream_t stream, float* ms);

 private:
  cudaEvent_t start_{}, stop_{};
  Status status_ = Status::Success;
};

// How long every tool runs a kernel back to back before timing it. A tensor-core kernel draws the most
// power the card has, and under a sustained load its clock settles below the boost clock a short
// burst gets: on the H100 of results/, the stage 06 executable timed cuBLAS fp16 at 4096³ at 769
// TFLOPS after three warm-up launches and at 662–678 after this warm-up, where the benchmark gives
// 649–680 (results/nvidia-h100-80gb-hbm3/logs/cublas_timing_2026-11-23.txt). Timing after it gives
// the rate a workload meets, and one number per shape in the executables, the benchmarks and
// plots/matmul_bench.py.
inline constexpr double kSustainedWarmupSeconds = 0.2;

struct TimingOptions {
  int warmup = 3;
  int repeats = 20;
  double warmup_seconds = 0.0;  // then keep launching until this much wall time has passed
};

// Launches back to back until `seconds` of wall time have passed (at least once), then waits for them.
Status warm_up_for(const std::function<Status()>& launch, double seconds, cudaStream_t stream);

// Runs `launch` opt.warmup times (and for opt.warmup_seconds), then opt.repeats times each timed on its
// own (after `before_each`, e.g. an L2 flush, when given), and appends the run times in milliseconds
// to *ms.
Status time_launches(const std::function<Status()>& launch, const TimingOptions& opt, cudaStream_t stream,
                     std::vector<float>* ms, const std::function<Status()>& before_each = {});

float median(std::vector<float> values);

}  // namespace fs
