#include "timer.h"

namespace fs {

GpuTimer::GpuTimer() {
  FS_CUDA_CHECK(cudaEventCreate(&start_));
  FS_CUDA_CHECK(cudaEventCreate(&stop_));
}

GpuTimer::~GpuTimer() {
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
}

void GpuTimer::begin(cudaStream_t stream) { FS_CUDA_CHECK(cudaEventRecord(start_, stream)); }

float GpuTimer::end_ms(cudaStream_t stream) {
  FS_CUDA_CHECK(cudaEventRecord(stop_, stream));
  FS_CUDA_CHECK(cudaEventSynchronize(stop_));
  float ms = 0.0f;
  FS_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return ms;
}

L2Flusher::L2Flusher(std::size_t l2_bytes) : buffer_(2 * l2_bytes) {}

void L2Flusher::flush(cudaStream_t stream) {
  if (buffer_.size()) FS_CUDA_CHECK(cudaMemsetAsync(buffer_.get(), 0, buffer_.bytes(), stream));
}

}  // namespace fs
