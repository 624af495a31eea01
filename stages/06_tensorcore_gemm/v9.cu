// Stage 06 v9 (fp16, bf16): its launch, descriptor and C entry, fs_gemm_v9.
#include "stages/06_tensorcore_gemm/launch.cuh"
#include "stages/06_tensorcore_gemm/versions.h"
#include "stages/06_tensorcore_gemm/v9_mma_sync.cuh"

namespace fs {

namespace {

// v9's tiles, with the widest copy both operands allow.
struct V9 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream) {
    using namespace gemm_v9;
    return gemm::dispatch_copy_bytes<2>(gemm::operand_copy_bytes(p, 2), [&](auto w) {
      constexpr int kCopyBytes = decltype(w)::value;
      return gemm::launch_any_half(
          [](auto e) { return gemm_v9_kernel<V9Tiles, typename decltype(e)::type, kTA, kTB, kCopyBytes>; },
          Config<kTA, kTB>::kSmemBytes, V9Tiles::kBM, V9Tiles::kBN, V9Tiles::kThreads, p, stream);
    });
  }
};

}  // namespace

// v9 opts in to more than 48 KB of shared memory: the largest of its transpose instances.
const KernelDesc kGemmV9 = gemm_kernel(
    {"fs_gemm_v9", "stage06", "v9",
     "mma.sync m16n8k16 fp16/bf16: ldmatrix, 128x256x32 tiles, 4-stage swizzled cp.async, no padding"},
    kHalfSupport, kStageArchs, gemm::max_smem_bytes<gemm_v9::Config>(), gemm::launch_transposes<V9>);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v9, fs::kGemmV9)
