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

struct TimingOptions {
  int warmup = 3;
  int repeats = 20;
};

// Runs `launch` opt.warmup times, then opt.repeats times each timed on its own (after `before_each`,
// e.g. an L2 flush, when given), and appends the run times in milliseconds to *ms.
Status time_launches(const std::function<Status()>& launch, const TimingOptions& opt, cudaStream_t stream,
                     std::vector<float>* ms, const std::function<Status()>& before_each = {});

float median(std::vector<float> values);

}  // namespace fs
