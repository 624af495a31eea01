// Stage 06 v1: its launch, descriptor and C entry, fs_gemm_v1.
#include "stages/06_tensorcore_gemm/launch.cuh"
#include "stages/06_tensorcore_gemm/versions.h"
#include "stages/06_tensorcore_gemm/v1_smem_tiling.cuh"

namespace fs {

namespace {

struct V1 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t s) {
    using namespace gemm_v1;
    return gemm::launch_simt(gemm_v1_kernel<kTA, kTB>, kTile, kTile, dim3(kTile, kTile), p, s);
  }
};

}  // namespace

// Shared memory is static (at most 16 KB): nothing dynamic to check.
const KernelDesc kGemmV1 = gemm_kernel(
    {"fs_gemm_v1", "stage06", "v1", "SIMT fp32: 32x32 shared-memory tiles, one output per thread"}, kSimtSupport,
    kStageArchs, 0, gemm::launch_transposes<V1>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v1, fs::kGemmV1)
