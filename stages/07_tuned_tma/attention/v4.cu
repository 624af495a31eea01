// Stage 07 attention v4: the launch of v4_pingpong.cuh's kernel, its descriptor and its C entry, in a
// translation unit of its own so that the versions compile in parallel.
#include "stages/07_tuned_tma/attention/launch.cuh"
#include "stages/07_tuned_tma/attention/v4_pingpong.cuh"
#include "stages/07_tuned_tma/attention/versions.h"

namespace fs {

// v4's launch, which v5's takes for one split (launch.cuh).
Status flash_tma::run_v4(const AttentionProblem& pr, cudaStream_t stream) {
  return launch_ws_version(pr, stream, [](auto t, auto c) {
    return v4::flash_tma_v4_kernel<typename decltype(t)::type, typename decltype(c)::type>;
  });
}

const KernelDesc kFlashTmaV4 = flash_tma::descriptor(
    {"fs_flash_fwd_tma_v4", "stage07/attention", "v4",
     "v3 with the consumers taking turns at the tensor cores (pingpong): one's softmax under the other's products"},
    flash_tma::max_smem_bytes<flash_tma::ws::DefaultConfig>(), flash_tma::run_v4);

}  // namespace fs

FS_EXPORT_ATTENTION(fs_flash_fwd_tma_v4, fs::kFlashTmaV4)
