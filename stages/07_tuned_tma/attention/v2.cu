// Stage 07 attention v2: the launch of v2_warp_specialization.cuh's kernel, its descriptor and its C
// entry, in a translation unit of its own so that the versions compile in parallel.
#include "stages/07_tuned_tma/attention/launch.cuh"
#include "stages/07_tuned_tma/attention/v2_warp_specialization.cuh"
#include "stages/07_tuned_tma/attention/versions.h"

namespace fs {

namespace {

Status run_v2(const AttentionProblem& pr, cudaStream_t stream) {
  return flash_tma::launch_ws_version(pr, stream, [](auto t, auto c) {
    return flash_tma::v2::flash_tma_v2_kernel<typename decltype(t)::type, typename decltype(c)::type>;
  });
}

}  // namespace

const KernelDesc kFlashTmaV2 = flash_tma::descriptor(
    {"fs_flash_fwd_tma_v2", "stage07/attention", "v2",
     "v1 warp-specialized: a TMA producer warpgroup, two consumer warpgroups (Br = 128), full/empty mbarriers, setmaxnreg"},
    flash_tma::max_smem_bytes<flash_tma::ws::DefaultConfig>(), run_v2);

}  // namespace fs

FS_EXPORT_ATTENTION(fs_flash_fwd_tma_v2, fs::kFlashTmaV2)
