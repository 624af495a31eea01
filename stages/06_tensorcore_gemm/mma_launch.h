// Stage 06: the launches the raw mma.sync versions share, one per kernel signature: v9's (v9 at any
// tile configuration and copy width, for mma.cu and v11_autotune.cu; v12's kernel, whole_tiles.cu) and
// v10's (v10 at any copy width, mma_int8.cu; v13's kernel, whole_tiles.cu). Host code.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/lib/gemm_launch.h"
#include "v9_mma_sync.cuh"

namespace fs::gemm {

// One launch of a kernel with v9's signature over a grid of bm×bn tiles of C, threads per block,
// smem bytes of dynamic shared memory (opted in first). T: __half or __nv_bfloat16.
template <class T, class Kernel>
cudaError_t launch_half_kernel(Kernel kernel, std::size_t smem, int bm, int bn, int threads, const GemmParams& p,
                               cudaStream_t stream) {
  if (const cudaError_t err = allow_smem(kernel, smem); err != cudaSuccess) return err;
  // C (fp32, fp16 or bf16) is written in pairs where ldc and the base allow.
  const bool c_pairs = pairs_aligned(p.c, p.ldc, p.c_dtype == FS_FP32 ? 4 : 2);
  kernel<<<tile_count(p, bm, bn), threads, smem, stream>>>(p.m, p.n, p.k, p.alpha, static_cast<const T*>(p.a), p.lda,
                                                           static_cast<const T*>(p.b), p.ldb, p.beta, p.c, p.ldc,
                                                           p.c_dtype, c_pairs);
  return cudaSuccess;
}

// The same for a kernel with v10's signature (int8 in, int32 out). dependent: launched as a programmatic
// dependent of the kernel before it on the stream (compute capability 9.0 and later; v16's product
// behind its repack). Its blocks may then be scheduled before that kernel has finished, and must wait
// in griddepcontrol.wait before they read what it writes, as v15's kernel does.
template <class Kernel>
cudaError_t launch_int8_kernel(Kernel kernel, std::size_t smem, int bm, int bn, int threads, const GemmParams& p,
                               cudaStream_t stream, bool dependent = false) {
  if (const cudaError_t err = allow_smem(kernel, smem); err != cudaSuccess) return err;
  const bool c_pairs = pairs_aligned(p.c, p.ldc, 4);
  cudaLaunchAttribute after_previous{};
  after_previous.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  after_previous.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(tile_count(p, bm, bn));
  config.blockDim = dim3(unsigned(threads));
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = dependent ? &after_previous : nullptr;
  config.numAttrs = dependent ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, p.m, p.n, p.k, p.alpha, static_cast<const int8_t*>(p.a), p.lda,
                            static_cast<const int8_t*>(p.b), p.ldb, p.beta, static_cast<int32_t*>(p.c), p.ldc, c_pairs);
}

}  // namespace fs::gemm

namespace fs::gemm_v9 {

// v9's kernel for a tile configuration, element type, transpose pair and copy width.
template <class Tl, class T, bool kTA, bool kTB, int kCopyBytes>
cudaError_t launch(const GemmParams& p, cudaStream_t stream) {
  constexpr std::size_t smem = Tl::template Smem<kTA, kTB>::kSmemBytes;
  return gemm::launch_half_kernel<T>(gemm_v9_kernel<Tl, T, kTA, kTB, kCopyBytes>, smem, Tl::kBM, Tl::kBN,
                                     Tl::kThreads, p, stream);
}

// The same, with the element type read from p.ab_dtype (FS_FP16 or FS_BF16).
template <class Tl, bool kTA, bool kTB, int kCopyBytes>
cudaError_t launch_any_half(const GemmParams& p, cudaStream_t stream) {
  return p.ab_dtype == FS_FP16 ? launch<Tl, __half, kTA, kTB, kCopyBytes>(p, stream)
                               : launch<Tl, __nv_bfloat16, kTA, kTB, kCopyBytes>(p, stream);
}

}  // namespace fs::gemm_v9
