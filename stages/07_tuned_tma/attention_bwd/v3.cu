// Stage 07 attention backward v3: the launch of v3_dq_reduce.cuh's kernel, its descriptor and its C
// entry, in a translation unit of its own so that the versions compile in parallel.
#include "stages/07_tuned_tma/attention_bwd/launch.cuh"
#include "stages/07_tuned_tma/attention_bwd/v3_dq_reduce.cuh"
#include "stages/07_tuned_tma/attention_bwd/versions.h"

namespace fs {

namespace {

Status run_v3(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return flash_bwd_tma::launch_version<flash_bwd_tma::v3::Config>(pr, stream, [](auto t, auto d) {
    return flash_bwd_tma::v3::flash_bwd_tma_v3_kernel<typename decltype(t)::type, decltype(d)::value>;
  });
}

}  // namespace

const KernelDesc kFlashBwdTmaV3 = attention_bwd_kernel(
    {"fs_flash_bwd_tma_v3", "stage07/attention_bwd", "v3",
     "v2 with dQ by TMA reduce-add: the consumers hand each step's dQ tile to a writer warp through shared memory, one bulk add per tile in L2"},
    flash_bwd_tma::kSupport, kStageArchs, flash_bwd_tma::max_smem_bytes<flash_bwd_tma::v3::Config>(), run_v3,
    flash_bwd_tma::extra_bytes, /*traffic_bytes=*/nullptr,
    flash_bwd_tma::deterministic_extra_bytes<flash_bwd_tma::v3::Config<64>::kBr>);

}  // namespace fs

FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_tma_v3, fs::kFlashBwdTmaV3)
