// Stage 06: the tensor-core versions v6–v8 (WMMA) — their launches, descriptors and C entries.
#include <cuda_fp16.h>

#include "gemm.h"
#include "common/lib/gemm_launch.h"
#include "v6_wmma.cuh"
#include "v7_wmma_pipelined.cuh"
#include "v8_wmma_int8.cuh"

namespace fs {

namespace {

const GemmSupport kFp16Support{Dtypes<DType::FP16>::kMask, Dtypes<DType::FP32, DType::FP16>::kMask};

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

// v6's shared memory is static (under 48 KB); v7 and v8 opt in to more, the largest of their
// transpose instances.
const KernelDesc kGemmV6 = gemm_kernel(
    {"fs_gemm_v6", "stage06", "v6", "WMMA fp16: 64x64 tiles, 2x2 fragments per warp, element copies"}, kFp16Support,
    kStageArchs, 0, gemm::launch_transposes<V6>);
const KernelDesc kGemmV7 = gemm_kernel(
    {"fs_gemm_v7", "stage06", "v7",
     "WMMA fp16: 128x256x64 tiles, 4x4 fragments per warp, 3-stage cp.async, padded smem"},
    kFp16Support, kStageArchs, gemm::max_smem_bytes<gemm_v7::Config>(), gemm::launch_transposes<V7>);
const KernelDesc kGemmV8 = gemm_kernel(
    {"fs_gemm_v8", "stage06", "v8", "WMMA int8 -> int32: v7's pipeline, 16-wide smem panels"}, kInt8Support,
    kStageArchs, gemm::max_smem_bytes<gemm_v8::Config>(), gemm::launch_transposes<V8>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v6, fs::kGemmV6)
FS_EXPORT_GEMM(fs_gemm_v7, fs::kGemmV7)
FS_EXPORT_GEMM(fs_gemm_v8, fs::kGemmV8)
