// Stage 06 launchers for the tensor-core versions v6–v8 (WMMA), and their C exports.
#include <cuda_fp16.h>

#include "gemm.h"
#include "gemm_launch.h"
#include "v6_wmma.cuh"
#include "v7_wmma_pipelined.cuh"
#include "v8_wmma_int8.cuh"

namespace fs {

namespace {

const GemmSupport kFp16Support{FS_FP16, gemm_dtype_bit(FS_FP32) | gemm_dtype_bit(FS_FP16)};
const GemmSupport kInt8Support{FS_INT8, gemm_dtype_bit(FS_INT32)};

const __half* a_half(const GemmParams& p) { return static_cast<const __half*>(p.a); }
const __half* b_half(const GemmParams& p) { return static_cast<const __half*>(p.b); }

struct V6 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream) {
    using namespace gemm_v6;
    gemm_v6_kernel<kTA, kTB><<<gemm::tile_count(p, kBM, kBN), kThreads, 0, stream>>>(
        p.m, p.n, p.k, p.alpha, a_half(p), p.lda, b_half(p), p.ldb, p.beta, p.c, p.ldc, p.c_dtype == FS_FP16);
    return cudaSuccess;
  }
};

// v7 and v8 need more than the default 48 KB of shared memory: each instance opts in before its launch.
struct V7 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream) {
    using namespace gemm_v7;
    constexpr std::size_t smem = Config<kTA, kTB>::kSmemBytes;
    const cudaError_t err =
        cudaFuncSetAttribute(gemm_v7_kernel<kTA, kTB>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
    if (err != cudaSuccess) return err;
    gemm_v7_kernel<kTA, kTB><<<gemm::tile_count(p, kBM, kBN), kThreads, smem, stream>>>(
        p.m, p.n, p.k, p.alpha, a_half(p), p.lda, b_half(p), p.ldb, p.beta, p.c, p.ldc, p.c_dtype == FS_FP16,
        gemm::rows_16b_aligned(p.a, p.lda, 2), gemm::rows_16b_aligned(p.b, p.ldb, 2));
    return cudaSuccess;
  }
};

struct V8 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream) {
    using namespace gemm_v8;
    constexpr std::size_t smem = Config<kTA, kTB>::kSmemBytes;
    const cudaError_t err =
        cudaFuncSetAttribute(gemm_v8_kernel<kTA, kTB>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
    if (err != cudaSuccess) return err;
    gemm_v8_kernel<kTA, kTB><<<gemm::tile_count(p, kBM, kBN), kThreads, smem, stream>>>(
        p.m, p.n, p.k, p.alpha, static_cast<const int8_t*>(p.a), p.lda, static_cast<const int8_t*>(p.b), p.ldb,
        p.beta, static_cast<int32_t*>(p.c), p.ldc, gemm::rows_16b_aligned(p.a, p.lda, 1),
        gemm::rows_16b_aligned(p.b, p.ldb, 1));
    return cudaSuccess;
  }
};

}  // namespace

Status launch_gemm_v6(const GemmParams& p, cudaStream_t s) { return gemm::launch_transposes<V6>(p, s, kFp16Support); }
Status launch_gemm_v7(const GemmParams& p, cudaStream_t s) { return gemm::launch_transposes<V7>(p, s, kFp16Support); }
Status launch_gemm_v8(const GemmParams& p, cudaStream_t s) { return gemm::launch_transposes<V8>(p, s, kInt8Support); }

const GemmKernel kGemmV6{"stage06", "v6", "WMMA fp16: 64x64 tiles, 2x2 fragments per warp, element copies",
                         launch_gemm_v6, kFp16Support};
const GemmKernel kGemmV7{"stage06", "v7",
                         "WMMA fp16: 128x256x64 tiles, 4x4 fragments per warp, 3-stage cp.async, padded smem",
                         launch_gemm_v7, kFp16Support};
const GemmKernel kGemmV8{"stage06", "v8", "WMMA int8 -> int32: v7's pipeline, 16-wide smem panels",
                         launch_gemm_v8, kInt8Support};

}  // namespace fs

// The C interface: one entry per version; `stream` is a cudaStream_t (null: the default stream).
extern "C" {
int fs_gemm_v6(const fs_gemm_params* p, void* s) {
  return p ? int(fs::launch_gemm_v6(*p, cudaStream_t(s))) : FS_ERR_NULL_POINTER;
}
int fs_gemm_v7(const fs_gemm_params* p, void* s) {
  return p ? int(fs::launch_gemm_v7(*p, cudaStream_t(s))) : FS_ERR_NULL_POINTER;
}
int fs_gemm_v8(const fs_gemm_params* p, void* s) {
  return p ? int(fs::launch_gemm_v8(*p, cudaStream_t(s))) : FS_ERR_NULL_POINTER;
}
}
