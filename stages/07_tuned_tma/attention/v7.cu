// Stage 07 attention v7: the launch of v7_three_consumers.cuh's kernel, its descriptor and its C entry, in
// a translation unit of its own so that the versions compile in parallel.
#include "stages/07_tuned_tma/attention/launch.cuh"
#include "stages/07_tuned_tma/attention/v7_three_consumers.cuh"
#include "stages/07_tuned_tma/attention/versions.h"

namespace fs {

namespace {

Status run_v7(const AttentionProblem& pr, cudaStream_t stream) {
  return flash_tma::launch_version<flash_tma::v7::Config>(pr, stream, [](auto t, auto d) {
    return flash_tma::v7::flash_tma_v7_kernel<typename decltype(t)::type, flash_tma::v7::Config<decltype(d)::value>>;
  });
}

}  // namespace

const KernelDesc kFlashTmaV7 = flash_tma::descriptor(
    {"fs_flash_fwd_tma_v7", "stage07/attention", "v7",
     "v3 with three consumer warpgroups (Br = 192) at D = 64 and 128, 160 registers each: Bc = 128 and 80"},
    flash_tma::max_smem_bytes<flash_tma::v7::Config>(), run_v7);

}  // namespace fs

FS_EXPORT_ATTENTION(fs_flash_fwd_tma_v7, fs::kFlashTmaV7)
