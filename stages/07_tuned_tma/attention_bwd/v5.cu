// Stage 07 attention backward v5: the launch of v5_overlap.cuh's kernel, its descriptor and its C
// entry, in a translation unit of its own so that the versions compile in parallel.
#include "stages/07_tuned_tma/attention_bwd/launch.cuh"
#include "stages/07_tuned_tma/attention_bwd/v5_overlap.cuh"
#include "stages/07_tuned_tma/attention_bwd/versions.h"

namespace fs {

namespace {

Status run_v5(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return flash_bwd_tma::launch_version<flash_bwd_tma::v5::Config>(pr, stream, [](auto t, auto d) {
    return flash_bwd_tma::v5::flash_bwd_tma_v5_kernel<typename decltype(t)::type, decltype(d)::value>;
  });
}

}  // namespace

const KernelDesc kFlashBwdTmaV5 = attention_bwd_kernel(
    {"fs_flash_bwd_tma_v5", "stage07/attention_bwd", "v5",
     "v4 with a consumer's products overlapped: S^T and dP^T in flight together, dV under dS, dK under dQ"},
    flash_bwd_tma::kSupport, kStageArchs, flash_bwd_tma::max_smem_bytes<flash_bwd_tma::v5::Config>(), run_v5,
    flash_bwd_tma::rows_extra_bytes<flash_bwd_tma::v5::Config<64>::kBr>, /*traffic_bytes=*/nullptr,
    flash_bwd_tma::rows_deterministic_extra_bytes<flash_bwd_tma::v5::Config<64>::kBr>);

}  // namespace fs

FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_tma_v5, fs::kFlashBwdTmaV5)
