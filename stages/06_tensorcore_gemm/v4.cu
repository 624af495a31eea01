// Stage 06 v4: its launch, descriptor and C entry, fs_gemm_v4.
#include "stages/06_tensorcore_gemm/launch.cuh"
#include "stages/06_tensorcore_gemm/versions.h"
#include "stages/06_tensorcore_gemm/v4_warp_tiling.cuh"

namespace fs {

namespace {

struct V4 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t s) {
    using namespace gemm_v4;
    return gemm::launch_simt(gemm_v4_kernel<kTA, kTB>, kBM, kBN, kThreads, p, s);
  }
};

}  // namespace

// Shared memory is static (at most 16 KB): nothing dynamic to check.
const KernelDesc kGemmV4 = gemm_kernel(
    {"fs_gemm_v4", "stage06", "v4", "SIMT fp32: 4 warps of 64x64, 8x16 outputs per thread, conflict-free LDS.128"},
    kSimtSupport, kStageArchs, 0, gemm::launch_transposes<V4>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v4, fs::kGemmV4)
