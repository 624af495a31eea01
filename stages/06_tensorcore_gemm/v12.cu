// Stage 06 v12 (fp16, bf16): its launch, descriptor and C entry, fs_gemm_v12. Rows that are not
// 16-byte aligned go to v9.
#include "stages/06_tensorcore_gemm/launch.cuh"
#include "stages/06_tensorcore_gemm/versions.h"
#include "stages/06_tensorcore_gemm/v12_whole_tiles.cuh"

namespace fs {

namespace {

struct V12 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream) {
    using namespace gemm_v12;
    return gemm::launch_any_half([](auto e) { return gemm_v12_kernel<typename decltype(e)::type, kTA, kTB>; },
                                 Config<kTA, kTB>::kSmemBytes, kBM, kBN, kThreads, p, stream);
  }
};

// 16-byte rows (bases and leading dimensions) take the new kernel; narrower ones the version before.
Status run_v12(const GemmParams& p, cudaStream_t stream) {
  if (gemm::operand_copy_bytes(p, 2) != 16) return kGemmV9.run_gemm(p, stream);
  return gemm::launch_transposes<V12>(p, stream);
}

}  // namespace

// v12 opts in to more than 48 KB of shared memory: v9's, the largest of the transpose instances.
const KernelDesc kGemmV12 = gemm_kernel(
    {"fs_gemm_v12", "stage06", "v12",
     "v9 with whole k-tiles copied without bounds checks (16-byte rows; v9 otherwise)"},
    kHalfSupport, kStageArchs, gemm::max_smem_bytes<gemm_v12::Config>(), run_v12);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v12, fs::kGemmV12)
