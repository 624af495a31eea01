// Stage 06 v5: its launch, descriptor and C entry, fs_gemm_v5.
#include "stages/06_tensorcore_gemm/launch.cuh"
#include "stages/06_tensorcore_gemm/versions.h"
#include "stages/06_tensorcore_gemm/v5_double_buffering.cuh"

namespace fs {

namespace {

struct V5 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t s) {
    using namespace gemm_v5;
    return gemm::launch_simt(gemm_v5_kernel<kTA, kTB>, kBM, kBN, kThreads, p, s);
  }
};

}  // namespace

// Shared memory is static (at most 16 KB): nothing dynamic to check.
const KernelDesc kGemmV5 = gemm_kernel(
    {"fs_gemm_v5", "stage06", "v5", "SIMT fp32: double-buffered shared memory, next tile in flight"}, kSimtSupport,
    kStageArchs, 0, gemm::launch_transposes<V5>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v5, fs::kGemmV5)
