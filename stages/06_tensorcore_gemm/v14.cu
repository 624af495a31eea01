// Stage 06 v14 (fp16, bf16): its launch, descriptor and C entry, fs_gemm_v14. Rows that are not
// 16-byte aligned go to v9.
#include "stages/06_tensorcore_gemm/launch.cuh"
#include "stages/06_tensorcore_gemm/versions.h"
#include "stages/06_tensorcore_gemm/v14_shifted_edges.cuh"

namespace fs {

namespace {

struct V14 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream) {
    using namespace gemm_v14;
    return gemm::launch_any_half([](auto e) { return gemm_v14_kernel<typename decltype(e)::type, kTA, kTB>; },
                                 Config<kTA, kTB>::kSmemBytes, kBM, kBN, kThreads, p, stream);
  }
};

// 16-byte rows (bases and leading dimensions) take the new kernel; narrower ones v9, as in v12.
Status run_v14(const GemmParams& p, cudaStream_t stream) {
  if (gemm::operand_copy_bytes(p, 2) != 16) return kGemmV9.run_gemm(p, stream);
  return gemm::launch_transposes<V14>(p, stream);
}

}  // namespace

// v14 opts in to more than 48 KB of shared memory: v9's, the largest of the transpose instances.
const KernelDesc kGemmV14 = gemm_kernel(
    {"fs_gemm_v14", "stage06", "v14",
     "v12 with tiles past M or N moved inside and K's tail as a first k-tile: no block on the checked loop"},
    kHalfSupport, kStageArchs, gemm::max_smem_bytes<gemm_v14::Config>(), run_v14);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v14, fs::kGemmV14)
