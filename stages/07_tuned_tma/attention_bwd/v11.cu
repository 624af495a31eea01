// Stage 07 attention backward v11: the launch of v11_shortest_first.cuh's kernel, its descriptor and
// its C entry, in a translation unit of its own so that the versions compile in parallel.
#include "stages/07_tuned_tma/attention_bwd/launch.cuh"
#include "stages/07_tuned_tma/attention_bwd/v11_shortest_first.cuh"
#include "stages/07_tuned_tma/attention_bwd/versions.h"

namespace fs {

namespace {

Status run_v11(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return flash_bwd_tma::launch_version<flash_bwd_tma::v11::Config>(pr, stream, [](auto t, auto d) {
    return flash_bwd_tma::v11::flash_bwd_tma_v11_kernel<typename decltype(t)::type, decltype(d)::value>;
  });
}

// The query tile is per head_dim (Config<64>::kBr = 128, Config<128>::kBr = 64): so are the padded
// workspaces it sizes.
std::size_t extra_v11(const AttentionParams& p) {
  return p.head_dim == 64 ? flash_bwd_tma::tiles_extra_bytes<flash_bwd_tma::v11::Config<64>::kBr>(p)
                          : flash_bwd_tma::tiles_extra_bytes<flash_bwd_tma::v11::Config<128>::kBr>(p);
}
std::size_t deterministic_extra_v11(const AttentionParams& p) {
  return p.head_dim == 64 ? flash_bwd_tma::tiles_deterministic_extra_bytes<flash_bwd_tma::v11::Config<64>::kBr>(p)
                          : flash_bwd_tma::tiles_deterministic_extra_bytes<flash_bwd_tma::v11::Config<128>::kBr>(p);
}

}  // namespace

const KernelDesc kFlashBwdTmaV11 = attention_bwd_kernel(
    {"fs_flash_bwd_tma_v11", "stage07/attention_bwd", "v11",
     "v10 with deterministic dQ under the causal mask in the shortest-first order"},
    flash_bwd_tma::kSupport, kStageArchs, flash_bwd_tma::max_smem_bytes<flash_bwd_tma::v11::Config>(), run_v11,
    extra_v11, /*traffic_bytes=*/nullptr, deterministic_extra_v11);

}  // namespace fs

FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_tma_v11, fs::kFlashBwdTmaV11)
