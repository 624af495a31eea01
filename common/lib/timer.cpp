#include "common/lib/timer.h"

#include <algorithm>
#include <chrono>

#include "common/lib/cuda_check.h"

namespace fs {

GpuTimer::GpuTimer() {
  cudaError_t err = cudaEventCreate(&start_);
  if (err == cudaSuccess) err = cudaEventCreate(&stop_);
  if (err != cudaSuccess) status_ = record_cuda_error(err);
}

GpuTimer::~GpuTimer() {
  if (start_) cudaEventDestroy(start_);
  if (stop_) cudaEventDestroy(stop_);
}

Status GpuTimer::begin(cudaStream_t stream) {
  FS_RETURN_IF_ERROR(status_);
  FS_RETURN_IF_CUDA_ERROR(cudaEventRecord(start_, stream));
  return Status::Success;
}

Status GpuTimer::end(cudaStream_t stream, float* ms) {
  FS_RETURN_IF_ERROR(status_);
  FS_RETURN_IF_CUDA_ERROR(cudaEventRecord(stop_, stream));
  FS_RETURN_IF_CUDA_ERROR(cudaEventSynchronize(stop_));
  FS_RETURN_IF_CUDA_ERROR(cudaEventElapsedTime(ms, start_, stop_));
  return Status::Success;
}

Status warm_up_for(const std::function<Status()>& launch, double seconds, cudaStream_t stream) {
  // Each launch is waited for: launches are queued, and a host clock over a queue would stop long
  // before the GPU does (a thousand queued 7 ms launches are 7 s of work).
  const auto start = std::chrono::steady_clock::now();
  do {
    FS_RETURN_IF_ERROR(launch());
    FS_RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(stream));
  } while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds);
  return Status::Success;
}

Status time_launches(const std::function<Status()>& launch, const TimingOptions& opt, cudaStream_t stream,
                     std::vector<float>* ms, const std::function<Status()>& before_each) {
  for (int i = 0; i < opt.warmup; ++i) FS_RETURN_IF_ERROR(launch());
  if (opt.warmup_seconds > 0) FS_RETURN_IF_ERROR(warm_up_for(launch, opt.warmup_seconds, stream));
  GpuTimer timer;
  for (int i = 0; i < opt.repeats; ++i) {
    if (before_each) FS_RETURN_IF_ERROR(before_each());
    FS_RETURN_IF_ERROR(timer.begin(stream));
    FS_RETURN_IF_ERROR(launch());
    float t = 0.0f;
    FS_RETURN_IF_ERROR(timer.end(stream, &t));
    ms->push_back(t);
  }
  return Status::Success;
}

float median(std::vector<float> values) {
  if (values.empty()) return 0.0f;
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

}  // namespace fs
