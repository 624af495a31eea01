// Stage 06 v13 (int8 -> int32): its launch, descriptor and C entry, fs_gemm_v13. Rows that are not
// 16-byte aligned go to v10.
#include "stages/06_tensorcore_gemm/launch.cuh"
#include "stages/06_tensorcore_gemm/versions.h"
#include "stages/06_tensorcore_gemm/v13_whole_tiles_int8.cuh"

namespace fs {

namespace {

struct V13 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream) {
    using namespace gemm_v13;
    return gemm::launch_int8_kernel(gemm_v13_kernel<kTA, kTB>, Config<kTA, kTB>::kSmemBytes, kBM, kBN, kThreads, p,
                                    stream);
  }
};

// 16-byte rows (bases and leading dimensions) take the new kernel; narrower ones the version before.
Status run_v13(const GemmParams& p, cudaStream_t stream) {
  if (gemm::operand_copy_bytes(p, 1) != 16) return kGemmV10.run_gemm(p, stream);
  return gemm::launch_transposes<V13>(p, stream);
}

}  // namespace

// v13 opts in to more than 48 KB of shared memory: v10's, the largest of the transpose instances.
const KernelDesc kGemmV13 = gemm_kernel(
    {"fs_gemm_v13", "stage06", "v13",
     "v10 with whole k-tiles copied without bounds checks (16-byte rows; v10 otherwise)"},
    kInt8Support, kStageArchs, gemm::max_smem_bytes<gemm_v13::Config>(), run_v13);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v13, fs::kGemmV13)
