// Stage 06 v8: its launch, descriptor and C entry, fs_gemm_v8.
#include <cstdint>

#include "stages/06_tensorcore_gemm/launch.cuh"
#include "stages/06_tensorcore_gemm/versions.h"
#include "stages/06_tensorcore_gemm/v8_wmma_int8.cuh"

namespace fs {

namespace {

// v8 needs more than the default 48 KB of shared memory: each instance opts in before its launch.
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

// v8 opts in to more than 48 KB of shared memory: the largest of its transpose instances.
const KernelDesc kGemmV8 = gemm_kernel(
    {"fs_gemm_v8", "stage06", "v8", "WMMA int8 -> int32: v7's pipeline, 16-wide smem panels"}, kInt8Support,
    kStageArchs, gemm::max_smem_bytes<gemm_v8::Config>(), gemm::launch_transposes<V8>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v8, fs::kGemmV8)
