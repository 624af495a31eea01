// Error checking for CUDA and cuBLAS calls.
//
// Host tools (tests, benchmarks, executables) use FS_CUDA_CHECK, which throws with the call, file and
// line. Library launchers never throw across the C interface: they use FS_RETURN_IF_CUDA_ERROR, which
// turns a failure into Status::CudaError and leaves the message in last_cuda_error().
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "status.h"

namespace fs {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throw_cuda_error(const char* what, int code, const char* text, const char* file, int line);

// The text of the last CUDA error a launcher turned into Status::CudaError, for messages.
const char* last_cuda_error();
Status record_cuda_error(cudaError_t err);

}  // namespace fs

#define FS_CUDA_CHECK(call)                                                                \
  do {                                                                                     \
    cudaError_t fs_err_ = (call);                                                          \
    if (fs_err_ != cudaSuccess)                                                            \
      ::fs::throw_cuda_error(#call, fs_err_, cudaGetErrorString(fs_err_), __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: a bad configuration shows up here, before any synchronization.
#define FS_CUDA_CHECK_LAUNCH() FS_CUDA_CHECK(cudaGetLastError())

#define FS_CUBLAS_CHECK(call)                                                                      \
  do {                                                                                             \
    int fs_st_ = static_cast<int>(call);                                                           \
    if (fs_st_ != 0) ::fs::throw_cuda_error(#call, fs_st_, "cuBLAS call failed", __FILE__, __LINE__); \
  } while (0)

#define FS_RETURN_IF_CUDA_ERROR(call)                            \
  do {                                                           \
    cudaError_t fs_err_ = (call);                                \
    if (fs_err_ != cudaSuccess) return ::fs::record_cuda_error(fs_err_); \
  } while (0)
