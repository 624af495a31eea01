// Timing in the host tools: the library's event timer (common/lib/timer.h) with the L2 cache flushed
// before every timed run, so that inputs small enough to stay in L2 are timed as a real pass would
// see them, coming from DRAM. Errors throw.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <vector>

#include "common/lib/timer.h"
#include "common/tools/device_buffer.h"

namespace fs {

// Evicts the L2 cache by writing a buffer twice its size.
class L2Flusher {
 public:
  explicit L2Flusher(std::size_t l2_bytes) : buffer_(2 * l2_bytes) {}
  void flush(cudaStream_t stream = nullptr) {
    if (buffer_.size()) FS_CUDA_CHECK(cudaMemsetAsync(buffer_.get(), 0, buffer_.bytes(), stream));
  }

 private:
  DeviceBuffer<unsigned char> buffer_;
};

// `launch` run opt.warmup times, then opt.repeats times, each after an L2 flush and timed with CUDA
// events: the per-run times in milliseconds.
std::vector<float> time_runs(const std::function<Status()>& launch, const TimingOptions& opt, std::size_t l2_bytes,
                             cudaStream_t stream = nullptr);

}  // namespace fs
