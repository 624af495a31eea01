// How library code meets CUDA errors. Launchers never throw across the C interface: a failed
// runtime call becomes Status::CudaError through FS_RETURN_IF_CUDA_ERROR, and the runtime's text is
// kept for messages in last_cuda_error(). (The host tools throw instead: common/tools/check.h.)
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "common/lib/status.h"

namespace fs {

// The text of the last CUDA error this thread turned into Status::CudaError.
const char* last_cuda_error();
Status record_cuda_error(cudaError_t err);
// A driver call (one found at run time, e.g. cuTensorMapEncodeTiled) that failed: `what` is kept as
// the text, and the result is Status::CudaError.
Status record_driver_error(const std::string& what);

}  // namespace fs

#define FS_RETURN_IF_CUDA_ERROR(call)                                     \
  do {                                                                    \
    cudaError_t fs_err_ = (call);                                         \
    if (fs_err_ != cudaSuccess) return ::fs::record_cuda_error(fs_err_); \
  } while (0)
