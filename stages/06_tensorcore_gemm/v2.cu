// Stage 06 v2: its launch, descriptor and C entry, fs_gemm_v2.
#include "stages/06_tensorcore_gemm/launch.cuh"
#include "stages/06_tensorcore_gemm/versions.h"
#include "stages/06_tensorcore_gemm/v2_register_blocking.cuh"

namespace fs {

namespace {

struct V2 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t s) {
    using namespace gemm_v2;
    return gemm::launch_simt(gemm_v2_kernel<kTA, kTB>, kBM, kBN, kThreads, p, s);
  }
};

}  // namespace

// Shared memory is static (at most 16 KB): nothing dynamic to check.
const KernelDesc kGemmV2 = gemm_kernel(
    {"fs_gemm_v2", "stage06", "v2", "SIMT fp32: 128x128 tiles, 8x8 outputs per thread in registers"}, kSimtSupport,
    kStageArchs, 0, gemm::launch_transposes<V2>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v2, fs::kGemmV2)
