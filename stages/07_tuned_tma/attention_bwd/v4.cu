// Stage 07 attention backward v4: the launch of v4_rows_by_tma.cuh's kernel, its descriptor and its C
// entry, in a translation unit of its own so that the versions compile in parallel.
#include "stages/07_tuned_tma/attention_bwd/launch.cuh"
#include "stages/07_tuned_tma/attention_bwd/v4_rows_by_tma.cuh"
#include "stages/07_tuned_tma/attention_bwd/versions.h"

namespace fs {

namespace {

Status run_v4(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return flash_bwd_tma::launch_version<flash_bwd_tma::v4::Config>(pr, stream, [](auto t, auto d) {
    return flash_bwd_tma::v4::flash_bwd_tma_v4_kernel<typename decltype(t)::type, decltype(d)::value>;
  });
}

}  // namespace

const KernelDesc kFlashBwdTmaV4 = attention_bwd_kernel(
    {"fs_flash_bwd_tma_v4", "stage07/attention_bwd", "v4",
     "v3 with LSE and delta padded once and brought by TMA: one box per step beside Q and dO"},
    flash_bwd_tma::kSupport, kStageArchs, flash_bwd_tma::max_smem_bytes<flash_bwd_tma::v4::Config>(), run_v4,
    flash_bwd_tma::rows_extra_bytes<flash_bwd_tma::v4::Config<64>::kBr>, /*traffic_bytes=*/nullptr,
    flash_bwd_tma::rows_deterministic_extra_bytes<flash_bwd_tma::v4::Config<64>::kBr>);

}  // namespace fs

FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_tma_v4, fs::kFlashBwdTmaV4)
