// Stage 06 v7: its launch, descriptor and C entry, fs_gemm_v7.
#include <cuda_fp16.h>

#include "stages/06_tensorcore_gemm/launch.cuh"
#include "stages/06_tensorcore_gemm/versions.h"
#include "stages/06_tensorcore_gemm/v7_wmma_pipelined.cuh"

namespace fs {

namespace {

// v7 needs more than the default 48 KB of shared memory: each instance opts in before its launch.
struct V7 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream) {
    using namespace gemm_v7;
    constexpr std::size_t smem = Config<kTA, kTB>::kSmemBytes;
    const cudaError_t err =
        cudaFuncSetAttribute(gemm_v7_kernel<kTA, kTB>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
    if (err != cudaSuccess) return err;
    gemm_v7_kernel<kTA, kTB><<<gemm::tile_count(p, kBM, kBN), kThreads, smem, stream>>>(
        p.m, p.n, p.k, p.alpha, static_cast<const __half*>(p.a), p.lda, static_cast<const __half*>(p.b), p.ldb,
        p.beta, p.c, p.ldc, p.c_dtype == FS_FP16, gemm::rows_16b_aligned(p.a, p.lda, 2),
        gemm::rows_16b_aligned(p.b, p.ldb, 2));
    return cudaSuccess;
  }
};

}  // namespace

// v7 opts in to more than 48 KB of shared memory: the largest of its transpose instances.
const KernelDesc kGemmV7 = gemm_kernel(
    {"fs_gemm_v7", "stage06", "v7",
     "WMMA fp16: 128x256x64 tiles, 4x4 fragments per warp, 3-stage cp.async, padded smem"},
    kFp16Support, kStageArchs, gemm::max_smem_bytes<gemm_v7::Config>(), gemm::launch_transposes<V7>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v7, fs::kGemmV7)
