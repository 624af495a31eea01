// Stage 06 v10 (int8 -> int32): its launch, descriptor and C entry, fs_gemm_v10.
#include "stages/06_tensorcore_gemm/launch.cuh"
#include "stages/06_tensorcore_gemm/versions.h"
#include "stages/06_tensorcore_gemm/v10_mma_int8.cuh"

namespace fs {

namespace {

// v10's tiles, with the widest copy both operands allow.
struct V10 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream) {
    using namespace gemm_v10;
    return gemm::dispatch_copy_bytes<1>(gemm::operand_copy_bytes(p, 1), [&](auto w) {
      return gemm::launch_int8_kernel(gemm_v10_kernel<kTA, kTB, decltype(w)::value>, Config<kTA, kTB>::kSmemBytes, kBM,
                                      kBN, kThreads, p, stream);
    });
  }
};

}  // namespace

// v10 opts in to more than 48 KB of shared memory: the largest of its transpose instances.
const KernelDesc kGemmV10 = gemm_kernel(
    {"fs_gemm_v10", "stage06", "v10", "mma.sync m16n8k32 int8 -> int32: v9's pipeline, bytes transposed in smem"},
    kInt8Support, kStageArchs, gemm::max_smem_bytes<gemm_v10::Config>(), gemm::launch_transposes<V10>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v10, fs::kGemmV10)
