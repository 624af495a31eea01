// Error checking in the host tools (tests, benchmarks, executables): a failure throws, naming the
// call, file and line, and the tool reports it. (Library code returns a Status instead.)
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "common/lib/status.h"

namespace fs {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throw_error(const char* what, const std::string& why, const char* file, int line);

}  // namespace fs

#define FS_CUDA_CHECK(call)                                                                          \
  do {                                                                                               \
    cudaError_t fs_err_ = (call);                                                                    \
    if (fs_err_ != cudaSuccess) ::fs::throw_error(#call, cudaGetErrorString(fs_err_), __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: a bad configuration shows up here, before any synchronization.
#define FS_CUDA_CHECK_LAUNCH() FS_CUDA_CHECK(cudaGetLastError())

// A library call that returns a Status.
#define FS_CHECK_STATUS(call)                                                                \
  do {                                                                                       \
    const ::fs::Status fs_st_ = (call);                                                      \
    if (fs_st_ != ::fs::Status::Success)                                                     \
      ::fs::throw_error(#call, ::fs::status_name(fs_st_), __FILE__, __LINE__);               \
  } while (0)

#define FS_CUBLAS_CHECK(call)                                                                     \
  do {                                                                                            \
    const int fs_st_ = static_cast<int>(call);                                                    \
    if (fs_st_ != 0) ::fs::throw_error(#call, "cuBLAS status " + std::to_string(fs_st_), __FILE__, __LINE__); \
  } while (0)
