// Stage 07 attention backward v6: the launch of v6_dq_accumulator_order.cuh's kernel, its descriptor and
// its C entry, in a translation unit of its own so that the versions compile in parallel.
#include "stages/07_tuned_tma/attention_bwd/launch.cuh"
#include "stages/07_tuned_tma/attention_bwd/v6_dq_accumulator_order.cuh"
#include "stages/07_tuned_tma/attention_bwd/versions.h"

namespace fs {

namespace {

Status run_v6(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return flash_bwd_tma::launch_version<flash_bwd_tma::v6::Config>(pr, stream, [](auto t, auto d) {
    return flash_bwd_tma::v6::flash_bwd_tma_v6_kernel<typename decltype(t)::type, decltype(d)::value>;
  });
}

}  // namespace

const KernelDesc kFlashBwdTmaV6 = attention_bwd_kernel(
    {"fs_flash_bwd_tma_v6", "stage07/attention_bwd", "v6",
     "v4 with the dQ tiles and the workspace in the accumulator's order: conflict-free float4 stores"},
    flash_bwd_tma::kSupport, kStageArchs, flash_bwd_tma::max_smem_bytes<flash_bwd_tma::v6::Config>(), run_v6,
    flash_bwd_tma::tiles_extra_bytes<flash_bwd_tma::v6::Config<64>::kBr>, /*traffic_bytes=*/nullptr,
    flash_bwd_tma::tiles_deterministic_extra_bytes<flash_bwd_tma::v6::Config<64>::kBr>);

}  // namespace fs

FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_tma_v6, fs::kFlashBwdTmaV6)
