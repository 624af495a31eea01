// Stage 06: the raw mma.sync version v10 (int8 -> int32) — its launch, descriptor and C entry.
#include <cstdint>

#include "common/lib/gemm_launch.h"
#include "gemm.h"
#include "mma_launch.h"
#include "v10_mma_int8.cuh"

namespace fs {

namespace {

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
