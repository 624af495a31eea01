// Stage 06 v3: its launch, descriptor and C entry, fs_gemm_v3.
#include "stages/06_tensorcore_gemm/launch.cuh"
#include "stages/06_tensorcore_gemm/versions.h"
#include "stages/06_tensorcore_gemm/v3_vectorized.cuh"

namespace fs {

namespace {

struct V3 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t s) {
    using namespace gemm_v3;
    return gemm::launch_simt(gemm_v3_kernel<kTA, kTB>, kBM, kBN, kThreads, p, s);
  }
};

}  // namespace

// Shared memory is static (at most 16 KB): nothing dynamic to check.
const KernelDesc kGemmV3 = gemm_kernel({"fs_gemm_v3", "stage06", "v3", "SIMT fp32: 128-bit global and shared loads"},
                                       kSimtSupport, kStageArchs, 0, gemm::launch_transposes<V3>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v3, fs::kGemmV3)
