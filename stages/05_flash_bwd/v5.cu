// Stage 05 v5: the launch of v5_ldmatrix_swizzle.cuh's K/V kernel on the atomic path (launch.cuh's run_mma; the
// deterministic path is deterministic.cuh's, as for every tensor-core version), its descriptor and C entry.
#include "stages/05_flash_bwd/launch.cuh"
#include "stages/05_flash_bwd/v5_ldmatrix_swizzle.cuh"
#include "stages/05_flash_bwd/versions.h"

namespace fs {
namespace bwd::v5 {
namespace {

Status run(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return run_mma<Config>(pr, stream, [](auto type, auto d, auto varlen) {
    return flash_bwd_v5_dkv_kernel<typename decltype(type)::type, decltype(d)::value, decltype(varlen)::value>;
  });
}

}  // namespace
}  // namespace bwd::v5

const KernelDesc kFlashBwdV5 = attention_bwd_kernel(
    {"fs_flash_bwd_v5", "stage05", "v5",
     "v4 with fragments by ldmatrix (.trans for the column operands) from XOR-swizzled, unpadded tiles"},
    bwd::mma::kSupport, kStageArchs, bwd::mma_smem_bytes<bwd::v5::Config>(), bwd::v5::run, bwd::mma_extra_bytes,
    /*traffic_bytes=*/nullptr, delta_extra_bytes);

}  // namespace fs

FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_v5, fs::kFlashBwdV5)
