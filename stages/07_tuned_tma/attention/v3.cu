// Stage 07 attention v3: the launch of v3_intra_warpgroup_overlap.cuh's kernel, its descriptor and its C
// entry, in a translation unit of its own so that the versions compile in parallel.
#include "stages/07_tuned_tma/attention/launch.cuh"
#include "stages/07_tuned_tma/attention/v3_intra_warpgroup_overlap.cuh"
#include "stages/07_tuned_tma/attention/versions.h"

namespace fs {

namespace {

Status run_v3(const AttentionProblem& pr, cudaStream_t stream) {
  return flash_tma::launch_ws_version(pr, stream, [](auto t, auto c) {
    return flash_tma::v3::flash_tma_v3_kernel<typename decltype(t)::type, typename decltype(c)::type>;
  });
}

}  // namespace

const KernelDesc kFlashTmaV3 = flash_tma::descriptor(
    {"fs_flash_fwd_tma_v3", "stage07/attention", "v3",
     "v2 with S_j = QK_j^T issued before P_{j-1}V_{j-1}, and block j's softmax run while that product runs"},
    flash_tma::max_smem_bytes<flash_tma::ws::DefaultConfig>(), run_v3);

}  // namespace fs

FS_EXPORT_ATTENTION(fs_flash_fwd_tma_v3, fs::kFlashTmaV3)
