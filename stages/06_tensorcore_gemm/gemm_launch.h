// What every stage 06 launcher does around its kernel: validate, pick the instance compiled for the
// transposes, launch, and turn a CUDA error into Status::CudaError.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_check.h"
#include "gemm.h"

namespace fs::gemm {

// `Version` has a static member template run<kTransA, kTransB>(params, stream) that enqueues the kernel
// and returns the first error of its own setup calls (cudaSuccess when there are none).
template <class Version>
Status launch_transposes(const GemmParams& p, cudaStream_t stream, const GemmSupport& support) {
  if (const Status st = validate_gemm(p, support); st != Status::Success) return st;
  cudaError_t err;
  if (!p.trans_a)
    err = p.trans_b ? Version::template run<false, true>(p, stream) : Version::template run<false, false>(p, stream);
  else
    err = p.trans_b ? Version::template run<true, true>(p, stream) : Version::template run<true, false>(p, stream);
  FS_RETURN_IF_CUDA_ERROR(err);
  FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());  // a refused launch shows up here
  return Status::Success;
}

// Blocks of a 1D grid with one block per bm×bn tile of C (the kernels derive the tile from blockIdx.x,
// whose limit, 2^31 - 1, no real matrix reaches).
inline unsigned tile_count(const GemmParams& p, int bm, int bn) {
  return static_cast<unsigned>(((p.m + bm - 1) / bm) * ((p.n + bn - 1) / bn));
}

// Whether 16-byte vector copies of a matrix stay aligned: the base is, and so is every row start.
inline bool rows_16b_aligned(const void* ptr, int64_t ld, std::size_t elem_bytes) {
  return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0 && (ld * int64_t(elem_bytes)) % 16 == 0;
}

}  // namespace fs::gemm
