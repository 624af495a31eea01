// Stage 06: the raw mma.sync version v9 (fp16, bf16) — its launch, descriptor and C entry (v10, int8,
// is mma_int8.cu: a translation unit each, so that their many instances compile in parallel).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/lib/gemm_launch.h"
#include "gemm.h"
#include "mma_launch.h"

namespace fs {

namespace {

// v9's tiles, with the widest copy both operands allow.
struct V9 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream) {
    return gemm::dispatch_copy_bytes<2>(gemm::operand_copy_bytes(p, 2), [&](auto w) {
      return gemm_v9::launch_any_half<gemm_v9::V9Tiles, kTA, kTB, decltype(w)::value>(p, stream);
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
