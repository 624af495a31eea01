// Stream-ordered scratch memory for launchers that need a workspace (the N×N score buffer of stages
// 01–02). cudaMallocAsync draws from the device's memory pool; raising the pool's release threshold
// keeps freed blocks in the pool, so the second and later launches of a size allocate nothing new.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "status.h"

namespace fs {

// Status::OutOfMemory when the pool cannot supply `bytes`, Status::CudaError for other failures.
Status workspace_alloc(void** ptr, std::size_t bytes, cudaStream_t stream);
Status workspace_free(void* ptr, cudaStream_t stream);

}  // namespace fs
