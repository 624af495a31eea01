// Stage 07 attention backward v1: the launch of v1_kv_stationary.cuh's kernel, its descriptor and its C
// entry, in a translation unit of its own so that the versions compile in parallel.
#include "stages/07_tuned_tma/attention_bwd/launch.cuh"
#include "stages/07_tuned_tma/attention_bwd/v1_kv_stationary.cuh"
#include "stages/07_tuned_tma/attention_bwd/versions.h"

namespace fs {

namespace {

Status run_v1(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return flash_bwd_tma::launch_version<flash_bwd_tma::v1::Config>(pr, stream, [](auto t, auto d) {
    return flash_bwd_tma::v1::flash_bwd_tma_v1_kernel<typename decltype(t)::type, decltype(d)::value>;
  });
}

}  // namespace

const KernelDesc kFlashBwdTmaV1 = attention_bwd_kernel(
    {"fs_flash_bwd_tma_v1", "stage07/attention_bwd", "v1",
     "K/V-stationary blocks, Q and dO by TMA, S^T, dP^T, dV, dK, dQ on wgmma, dQ by fp32 atomics, no warp specialization"},
    flash_bwd_tma::kSupport, kStageArchs, flash_bwd_tma::max_smem_bytes<flash_bwd_tma::v1::Config>(), run_v1,
    flash_bwd_tma::extra_bytes, /*traffic_bytes=*/nullptr,
    flash_bwd_tma::deterministic_extra_bytes<flash_bwd_tma::v1::Config<64>::kBr>);

}  // namespace fs

FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_tma_v1, fs::kFlashBwdTmaV1)
