// Stage 06: one launch of v9's kernel (v9_mma_sync.cuh) for a tile configuration, element type,
// transpose pair and copy width: shared by v9 (mma.cu, v9's tiles at every copy width) and v11
// (v11_autotune.cu, its candidate tiles at 16 bytes). Host code.
#pragma once

#include <cuda_runtime.h>

#include "common/lib/gemm_launch.h"
#include "v9_mma_sync.cuh"

namespace fs::gemm_v9 {

template <class Tl, class T, bool kTA, bool kTB, int kCopyBytes>
cudaError_t launch(const GemmParams& p, cudaStream_t stream) {
  constexpr std::size_t smem = Tl::template Smem<kTA, kTB>::kSmemBytes;
  const auto kernel = gemm_v9_kernel<Tl, T, kTA, kTB, kCopyBytes>;
  if (const cudaError_t err = gemm::allow_smem(kernel, smem); err != cudaSuccess) return err;
  // C (fp32, fp16 or bf16) is written in pairs where ldc and the base allow.
  const bool c_pairs = gemm::pairs_aligned(p.c, p.ldc, p.c_dtype == FS_FP32 ? 4 : 2);
  kernel<<<gemm::tile_count(p, Tl::kBM, Tl::kBN), Tl::kThreads, smem, stream>>>(
      p.m, p.n, p.k, p.alpha, static_cast<const T*>(p.a), p.lda, static_cast<const T*>(p.b), p.ldb, p.beta, p.c,
      p.ldc, p.c_dtype, c_pairs);
  return cudaSuccess;
}

// The same, with the element type read from p.ab_dtype (FS_FP16 or FS_BF16).
template <class Tl, bool kTA, bool kTB, int kCopyBytes>
cudaError_t launch_any_half(const GemmParams& p, cudaStream_t stream) {
  return p.ab_dtype == FS_FP16 ? launch<Tl, __half, kTA, kTB, kCopyBytes>(p, stream)
                               : launch<Tl, __nv_bfloat16, kTA, kTB, kCopyBytes>(p, stream);
}

}  // namespace fs::gemm_v9
