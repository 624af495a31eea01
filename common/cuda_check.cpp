#include "cuda_check.h"

#include <cstdio>

namespace fs {

namespace {
thread_local std::string g_last_cuda_error;
}

void throw_cuda_error(const char* what, int code, const char* text, const char* file, int line) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s failed with %d (%s) at %s:%d", what, code, text, file, line);
  throw CudaError(buf);
}

const char* last_cuda_error() { return g_last_cuda_error.c_str(); }

Status record_cuda_error(cudaError_t err) {
  g_last_cuda_error = cudaGetErrorString(err);
  return Status::CudaError;
}

}  // namespace fs
