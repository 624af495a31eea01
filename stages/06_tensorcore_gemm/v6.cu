// Stage 06 v6: its launch, descriptor and C entry, fs_gemm_v6.
#include <cuda_fp16.h>

#include "stages/06_tensorcore_gemm/launch.cuh"
#include "stages/06_tensorcore_gemm/versions.h"
#include "stages/06_tensorcore_gemm/v6_wmma.cuh"

namespace fs {

namespace {

struct V6 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream) {
    using namespace gemm_v6;
    gemm_v6_kernel<kTA, kTB><<<gemm::tile_count(p, kBM, kBN), kThreads, 0, stream>>>(
        p.m, p.n, p.k, p.alpha, static_cast<const __half*>(p.a), p.lda, static_cast<const __half*>(p.b), p.ldb,
        p.beta, p.c, p.ldc, p.c_dtype == FS_FP16);
    return cudaSuccess;
  }
};

}  // namespace

// v6's shared memory is static (under 48 KB): nothing dynamic to check.
const KernelDesc kGemmV6 = gemm_kernel(
    {"fs_gemm_v6", "stage06", "v6", "WMMA fp16: 64x64 tiles, 2x2 fragments per warp, element copies"}, kFp16Support,
    kStageArchs, 0, gemm::launch_transposes<V6>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v6, fs::kGemmV6)
