// Stage 06 v12 (fp16, bf16): its launch, descriptor and C entry, fs_gemm_v12. Rows that are not
// 16-byte aligned go to v9. The kernel's instances compile in two files, one per element type
// (instances/v12_fp16.cu, v12_bf16.cu), side by side.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "stages/06_tensorcore_gemm/launch.cuh"
#include "stages/06_tensorcore_gemm/versions.h"
#include "stages/06_tensorcore_gemm/v12_whole_tiles.cuh"

namespace fs {

namespace gemm_v12 {

// The launch of v12's instances for element type T: the four transposes. Defined in instances/v12.cuh;
// compiled for __half in instances/v12_fp16.cu and for __nv_bfloat16 in instances/v12_bf16.cu.
template <class T>
Status launch(const GemmParams& p, cudaStream_t stream);

}  // namespace gemm_v12

namespace {

// 16-byte rows (bases and leading dimensions) take the new kernel; narrower ones the version before.
Status run_v12(const GemmParams& p, cudaStream_t stream) {
  if (gemm::operand_copy_bytes(p, 2) != 16) return kGemmV9.run_gemm(p, stream);
  return p.ab_dtype == FS_FP16 ? gemm_v12::launch<__half>(p, stream) : gemm_v12::launch<__nv_bfloat16>(p, stream);
}

}  // namespace

// v12 opts in to more than 48 KB of shared memory: v9's, the largest of the transpose instances.
const KernelDesc kGemmV12 = gemm_kernel(
    {"fs_gemm_v12", "stage06", "v12",
     "v9 with whole k-tiles copied without bounds checks (16-byte rows; v9 otherwise)"},
    kHalfSupport, kStageArchs, gemm::max_smem_bytes<gemm_v12::Config>(), run_v12);

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v12, fs::kGemmV12)
