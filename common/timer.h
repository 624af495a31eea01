// Timing device work with CUDA events, for Google Benchmark's manual time and the stage executables.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "device_buffer.h"

namespace fs {

// Times one region of a stream: begin() records the start event, end() the stop event and waits for it.
class GpuTimer {
 public:
  GpuTimer();
  ~GpuTimer();
  GpuTimer(const GpuTimer&) = delete;
  GpuTimer& operator=(const GpuTimer&) = delete;
  void begin(cudaStream_t stream = nullptr);
  float end_ms(cudaStream_t stream = nullptr);

 private:
  cudaEvent_t start_{}, stop_{};
};

// Evicts the L2 cache between timed runs by writing a buffer twice its size, so that inputs small
// enough to stay in L2 are timed as they would be in a real pass, coming from DRAM.
class L2Flusher {
 public:
  explicit L2Flusher(std::size_t l2_bytes);
  void flush(cudaStream_t stream = nullptr);

 private:
  DeviceBuffer<unsigned char> buffer_;
};

struct TimingOptions {
  int warmup = 3;
  int repeats = 20;
  bool flush_l2 = true;
};

// Runs `launch` warm-up times, then `repeats` timed times (each after an L2 flush), and returns the
// per-run times in milliseconds.
template <class Launch>
std::vector<float> time_runs(Launch&& launch, const TimingOptions& opt, std::size_t l2_bytes,
                             cudaStream_t stream = nullptr) {
  for (int i = 0; i < opt.warmup; ++i) launch();
  FS_CUDA_CHECK(cudaStreamSynchronize(stream));
  L2Flusher flusher(opt.flush_l2 ? l2_bytes : 0);
  GpuTimer timer;
  std::vector<float> ms;
  for (int i = 0; i < opt.repeats; ++i) {
    if (opt.flush_l2) flusher.flush(stream);
    timer.begin(stream);
    launch();
    ms.push_back(timer.end_ms(stream));
  }
  return ms;
}

inline float median(std::vector<float> v) {
  if (v.empty()) return 0.0f;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

}  // namespace fs
