#include "common/lib/workspace.h"

#include <cstdint>
#include <mutex>

#include "common/lib/cuda_check.h"

namespace fs {

namespace {

// Raises the release threshold of the device's default pool once per device: freed blocks then stay
// in the pool for the next launch instead of going back to the driver.
Status keep_pool_blocks() {
  int device = 0;
  FS_RETURN_IF_CUDA_ERROR(cudaGetDevice(&device));
  static std::mutex mutex;
  static bool kept[64] = {};
  std::lock_guard<std::mutex> lock(mutex);
  if (device < 0 || device >= 64 || kept[device]) return Status::Success;
  cudaMemPool_t pool;
  FS_RETURN_IF_CUDA_ERROR(cudaDeviceGetDefaultMemPool(&pool, device));
  uint64_t keep = UINT64_MAX;
  FS_RETURN_IF_CUDA_ERROR(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  kept[device] = true;
  return Status::Success;
}

}  // namespace

Status workspace_alloc(void** ptr, std::size_t bytes, cudaStream_t stream) {
  FS_RETURN_IF_ERROR(keep_pool_blocks());
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
