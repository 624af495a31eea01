// Stage 06 v15 (int8 -> int32): its launch, descriptor and C entry, fs_gemm_v15. Rows that are not
// 8-byte aligned go to v10.
#include "stages/06_tensorcore_gemm/launch.cuh"
#include "stages/06_tensorcore_gemm/versions.h"
#include "stages/06_tensorcore_gemm/v15_shifted_edges_int8.cuh"

namespace fs {

namespace {

template <int kCopyBytes>
struct V15 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream) {
    using namespace gemm_v15;
    return gemm::launch_int8_kernel(gemm_v15_kernel<kTA, kTB, kCopyBytes>, Config<kTA, kTB>::kSmemBytes, kBM, kBN,
                                    kThreads, p, stream);
  }
};

// 16- and 8-byte rows (bases and leading dimensions) take v15 at that width; narrower ones v10.
Status run_v15(const GemmParams& p, cudaStream_t stream) {
  switch (gemm::operand_copy_bytes(p, 1)) {
    case 16: return gemm::launch_transposes<V15<16>>(p, stream);
    case 8: return gemm::launch_transposes<V15<8>>(p, stream);
    default: return kGemmV10.run_gemm(p, stream);
  }
}

}  // namespace

// v15 opts in to more than 48 KB of shared memory: v10's, the largest of the transpose instances (v16,
// which hands v15 every call it does not repack, states it too).
extern const std::size_t kGemmV15SmemBytes = gemm::max_smem_bytes<gemm_v15::Config>();
const KernelDesc kGemmV15 = gemm_kernel(
    {"fs_gemm_v15", "stage06", "v15",
     "v13 with tiles past M or N moved inside, K's tail as a first k-tile and 8-byte rows unchecked too"},
    kInt8Support, kStageArchs, gemm::max_smem_bytes<gemm_v15::Config>(), run_v15);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v15, fs::kGemmV15)
