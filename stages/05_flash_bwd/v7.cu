// Stage 05 v7: the launch of v7_fa2_blocks.cuh's K/V kernel on the atomic path (launch.cuh's run_mma; the
// deterministic path is deterministic.cuh's, as for every tensor-core version), its descriptor and C entry.
#include "stages/05_flash_bwd/launch.cuh"
#include "stages/05_flash_bwd/v7_fa2_blocks.cuh"
#include "stages/05_flash_bwd/versions.h"

namespace fs {
namespace bwd::v7 {
namespace {

Status run(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return run_mma<Config>(pr, stream, [](auto type, auto d, auto varlen) {
    return flash_bwd_v7_dkv_kernel<typename decltype(type)::type, decltype(d)::value, decltype(varlen)::value>;
  });
}

}  // namespace
}  // namespace bwd::v7

const KernelDesc kFlashBwdV7 = attention_bwd_kernel(
    {"fs_flash_bwd_v7", "stage05", "v7",
     "v6 on FlashAttention-2's block shape: 128 resident keys and 8 warps per block (half the dQ reductions)"},
    bwd::mma::kSupport, kStageArchs, bwd::mma_smem_bytes<bwd::v7::Config>(), bwd::v7::run, bwd::mma_extra_bytes,
    /*traffic_bytes=*/nullptr, delta_extra_bytes);

}  // namespace fs

FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_v7, fs::kFlashBwdV7)
