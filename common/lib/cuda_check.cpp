#include "common/lib/cuda_check.h"

#include <string>

namespace fs {

namespace {
thread_local std::string g_last_cuda_error;
}

const char* last_cuda_error() { return g_last_cuda_error.c_str(); }

Status record_cuda_error(cudaError_t err) {
  g_last_cuda_error = cudaGetErrorString(err);
  cudaGetLastError();  // a non-sticky error is reported once, here: the caller's next check starts clean
  return Status::CudaError;
}

Status record_driver_error(const std::string& what) {
  g_last_cuda_error = what;
  return Status::CudaError;
}

}  // namespace fs
