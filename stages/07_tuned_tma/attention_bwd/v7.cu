// Stage 07 attention backward v7: the launch of v7_ds_by_stmatrix.cuh's kernel, its descriptor and
// its C entry, in a translation unit of its own so that the versions compile in parallel.
#include "stages/07_tuned_tma/attention_bwd/launch.cuh"
#include "stages/07_tuned_tma/attention_bwd/v7_ds_by_stmatrix.cuh"
#include "stages/07_tuned_tma/attention_bwd/versions.h"

namespace fs {

namespace {

Status run_v7(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return flash_bwd_tma::launch_version<flash_bwd_tma::v7::Config>(pr, stream, [](auto t, auto d) {
    return flash_bwd_tma::v7::flash_bwd_tma_v7_kernel<typename decltype(t)::type, decltype(d)::value>;
  });
}

}  // namespace

const KernelDesc kFlashBwdTmaV7 = attention_bwd_kernel(
    {"fs_flash_bwd_tma_v7", "stage07/attention_bwd", "v7",
     "v6 with dS stored by stmatrix.trans: 4 transposing stores a thread and step instead of 32"},
    flash_bwd_tma::kSupport, kStageArchs, flash_bwd_tma::max_smem_bytes<flash_bwd_tma::v7::Config>(), run_v7,
    flash_bwd_tma::tiles_extra_bytes<flash_bwd_tma::v7::Config<64>::kBr>, /*traffic_bytes=*/nullptr,
    flash_bwd_tma::tiles_deterministic_extra_bytes<flash_bwd_tma::v7::Config<64>::kBr>);

}  // namespace fs

FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_tma_v7, fs::kFlashBwdTmaV7)
