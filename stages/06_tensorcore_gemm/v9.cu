// Stage 06 v9 (fp16, bf16): its launch, descriptor and C entry, fs_gemm_v9. The kernel's instances (four
// copy widths × two element types × four transposes) compile in four files, one per copy width
// (instances/v9_16b.cu … v9_2b.cu), side by side.
#include "stages/06_tensorcore_gemm/launch.cuh"
#include "stages/06_tensorcore_gemm/versions.h"
#include "stages/06_tensorcore_gemm/v9_mma_sync.cuh"

namespace fs {

namespace gemm_v9 {

// The launch of v9's instances with kCopyBytes-wide copies: its tiles (V9Tiles), p's element type and
// transposes. Defined in instances/v9.cuh; each width compiled in its own file, instances/v9_<W>b.cu.
template <int kCopyBytes>
Status launch(const GemmParams& p, cudaStream_t stream);

}  // namespace gemm_v9

namespace {

// v9's tiles, with the widest copy both operands allow.
Status run_v9(const GemmParams& p, cudaStream_t stream) {
  switch (gemm::operand_copy_bytes(p, 2)) {
    case 16: return gemm_v9::launch<16>(p, stream);
    case 8: return gemm_v9::launch<8>(p, stream);
    case 4: return gemm_v9::launch<4>(p, stream);
    default: return gemm_v9::launch<2>(p, stream);  // element copies
  }
}

}  // namespace

// v9 opts in to more than 48 KB of shared memory: the largest of its transpose instances.
const KernelDesc kGemmV9 = gemm_kernel(
    {"fs_gemm_v9", "stage06", "v9",
     "mma.sync m16n8k16 fp16/bf16: ldmatrix, 128x256x32 tiles, 4-stage swizzled cp.async, no padding"},
    kHalfSupport, kStageArchs, gemm::max_smem_bytes<gemm_v9::Config>(), run_v9);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v9, fs::kGemmV9)
