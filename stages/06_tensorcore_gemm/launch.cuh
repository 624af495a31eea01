// Stage 06: what the versions' launches share (host code): the element types each family of versions
// takes, the launch of the SIMT kernels' two argument lists (v1–v5), and one launch per kernel signature
// of the mma.sync versions, fp16/bf16 in (v9, v11, v12, v14) and int8 in (v10, v13, v15; v16 launches
// its product itself, behind its repack). The transpose dispatch and the facts about the operands (copy
// widths, C's pair stores) are common/lib/gemm_launch.h; the problem and its validation common/lib/gemm.h.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/lib/dispatch.h"
#include "common/lib/gemm_launch.h"
#include "common/lib/kernel.h"

namespace fs {

// What the versions take, for their descriptors: fp32 in and out (SIMT, v1–v5); fp16 in, fp32 or fp16
// out (WMMA, v6, v7); int8 in, int32 out (v8, v10, v13, v15, v16); fp16 or bf16 in, fp32, fp16 or bf16
// out (mma.sync, v9, v11, v12, v14).
inline const GemmSupport kSimtSupport{Dtypes<DType::FP32>::kMask, Dtypes<DType::FP32>::kMask};
inline const GemmSupport kFp16Support{Dtypes<DType::FP16>::kMask, Dtypes<DType::FP32, DType::FP16>::kMask};
inline const GemmSupport kInt8Support{Dtypes<DType::INT8>::kMask, Dtypes<DType::INT32>::kMask};
inline const GemmSupport kHalfSupport{Dtypes<DType::FP16, DType::BF16>::kMask,
                                      Dtypes<DType::FP32, DType::FP16, DType::BF16>::kMask};

}  // namespace fs

namespace fs::gemm {

// The SIMT kernels' argument lists: v1 and v2 load element by element; v3–v5 also take whether A and B
// allow float4 loads (16-byte aligned base, leading dimension a multiple of 4). Shared memory is static
// in every SIMT version (at most 16 KB): nothing to opt in to.
using ScalarKernel = void (*)(int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                              float, float*, int64_t);
using VectorKernel = void (*)(int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                              float, float*, int64_t, bool, bool);

// One launch of a SIMT kernel over a grid of bm×bn tiles of C.
inline cudaError_t launch_simt(ScalarKernel kernel, int bm, int bn, dim3 block, const GemmParams& p,
                               cudaStream_t stream) {
  kernel<<<tile_count(p, bm, bn), block, 0, stream>>>(p.m, p.n, p.k, p.alpha, static_cast<const float*>(p.a), p.lda,
                                                      static_cast<const float*>(p.b), p.ldb, p.beta,
                                                      static_cast<float*>(p.c), p.ldc);
  return cudaSuccess;
}
inline cudaError_t launch_simt(VectorKernel kernel, int bm, int bn, dim3 block, const GemmParams& p,
                               cudaStream_t stream) {
  kernel<<<tile_count(p, bm, bn), block, 0, stream>>>(
      p.m, p.n, p.k, p.alpha, static_cast<const float*>(p.a), p.lda, static_cast<const float*>(p.b), p.ldb,
      p.beta, static_cast<float*>(p.c), p.ldc, rows_16b_aligned(p.a, p.lda, 4), rows_16b_aligned(p.b, p.ldb, 4));
  return cudaSuccess;
}

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

// An element type, as a value: what launch_any_half hands the kernel's chooser.
template <class T>
struct Elem {
  using type = T;
};

// The same, for the element type p.ab_dtype names (FS_FP16 or FS_BF16): kernel_for(Elem<T>{}) is the
// kernel's instance for T.
template <class KernelFor>
cudaError_t launch_any_half(KernelFor kernel_for, std::size_t smem, int bm, int bn, int threads, const GemmParams& p,
                            cudaStream_t stream) {
  return p.ab_dtype == FS_FP16
             ? launch_half_kernel<__half>(kernel_for(Elem<__half>{}), smem, bm, bn, threads, p, stream)
             : launch_half_kernel<__nv_bfloat16>(kernel_for(Elem<__nv_bfloat16>{}), smem, bm, bn, threads, p, stream);
}

// The same for a kernel with v10's signature (int8 in, int32 out).
template <class Kernel>
cudaError_t launch_int8_kernel(Kernel kernel, std::size_t smem, int bm, int bn, int threads, const GemmParams& p,
                               cudaStream_t stream) {
  if (const cudaError_t err = allow_smem(kernel, smem); err != cudaSuccess) return err;
  const bool c_pairs = pairs_aligned(p.c, p.ldc, 4);
  kernel<<<tile_count(p, bm, bn), threads, smem, stream>>>(p.m, p.n, p.k, p.alpha, static_cast<const int8_t*>(p.a),
                                                           p.lda, static_cast<const int8_t*>(p.b), p.ldb, p.beta,
                                                           static_cast<int32_t*>(p.c), p.ldc, c_pairs);
  return cudaSuccess;
}

}  // namespace fs::gemm
