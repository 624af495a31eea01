// Stage 07 attention backward v2: the launch of v2_warp_specialization.cuh's kernel, its descriptor and its C
// entry, in a translation unit of its own so that the versions compile in parallel.
#include "stages/07_tuned_tma/attention_bwd/launch.cuh"
#include "stages/07_tuned_tma/attention_bwd/v2_warp_specialization.cuh"
#include "stages/07_tuned_tma/attention_bwd/versions.h"

namespace fs {

namespace {

Status run_v2(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return flash_bwd_tma::launch_version<flash_bwd_tma::v2::Config>(pr, stream, [](auto t, auto d) {
    return flash_bwd_tma::v2::flash_bwd_tma_v2_kernel<typename decltype(t)::type, decltype(d)::value>;
  });
}

}  // namespace

const KernelDesc kFlashBwdTmaV2 = attention_bwd_kernel(
    {"fs_flash_bwd_tma_v2", "stage07/attention_bwd", "v2",
     "v1 with warp specialization: a producer warp streams Q, dO, LSE and delta three or four steps ahead, two consumer warpgroups compute"},
    flash_bwd_tma::kSupport, kStageArchs, flash_bwd_tma::max_smem_bytes<flash_bwd_tma::v2::Config>(), run_v2,
    flash_bwd_tma::extra_bytes, /*traffic_bytes=*/nullptr,
    flash_bwd_tma::deterministic_extra_bytes<flash_bwd_tma::v2::Config<64>::kBr>);

}  // namespace fs

FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_tma_v2, fs::kFlashBwdTmaV2)
