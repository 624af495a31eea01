// Stream-ordered scratch memory for launchers that need a workspace (the N×N score buffer of stages
// 01–02). cudaMallocAsync draws from the device's memory pool; raising the pool's release threshold
// keeps freed blocks in the pool, so the second and later launches of a size allocate nothing new.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "common/lib/status.h"

namespace fs {

// Status::OutOfMemory when the pool cannot supply `bytes`, Status::CudaError for other failures.
Status workspace_alloc(void** ptr, std::size_t bytes, cudaStream_t stream);
Status workspace_free(void* ptr, cudaStream_t stream);

// Allocates `bytes` on `stream`, calls f(ptr) to enqueue the work that uses them, and frees them on the
// stream after that work: the first error of the three is returned.
template <class F>
Status with_workspace(std::size_t bytes, cudaStream_t stream, F&& f) {
  void* ptr = nullptr;
  FS_RETURN_IF_ERROR(workspace_alloc(&ptr, bytes, stream));
  const Status used = f(ptr);
  const Status freed = workspace_free(ptr, stream);
  return used != Status::Success ? used : freed;
}

// Buffers drawn on one stream and freed on it, after the work queued meanwhile, when the set goes: the
// synthetic problems the tuners time their candidates on (stage 04's v5 and v6, stage 06's v11).
class WorkspaceSet {
 public:
  explicit WorkspaceSet(cudaStream_t stream) : stream_(stream) {}
  ~WorkspaceSet() {
    for (void* b : buffers_) workspace_free(b, stream_);
  }
  WorkspaceSet(const WorkspaceSet&) = delete;
  WorkspaceSet& operator=(const WorkspaceSet&) = delete;

  Status alloc(void** ptr, std::size_t bytes) {
    FS_RETURN_IF_ERROR(workspace_alloc(ptr, bytes, stream_));
    buffers_.push_back(*ptr);
    return Status::Success;
  }

 private:
  cudaStream_t stream_;
  std::vector<void*> buffers_;
};

}  // namespace fs
