#include "workspace.h"

#include <cstdint>

#include "cuda_check.h"

namespace fs {

Status workspace_alloc(void** ptr, std::size_t bytes, cudaStream_t stream) {
  int device = 0;
  FS_RETURN_IF_CUDA_ERROR(cudaGetDevice(&device));
  cudaMemPool_t pool;
  FS_RETURN_IF_CUDA_ERROR(cudaDeviceGetDefaultMemPool(&pool, device));
  uint64_t keep = UINT64_MAX;
  FS_RETURN_IF_CUDA_ERROR(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  const cudaError_t err = cudaMallocAsync(ptr, bytes, stream);
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: clear it so the caller's next check starts clean
    return Status::OutOfMemory;
  }
  FS_RETURN_IF_CUDA_ERROR(err);
  return Status::Success;
}

Status workspace_free(void* ptr, cudaStream_t stream) {
  FS_RETURN_IF_CUDA_ERROR(cudaFreeAsync(ptr, stream));
  return Status::Success;
}

}  // namespace fs
