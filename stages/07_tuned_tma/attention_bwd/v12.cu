// Stage 07 attention backward v12: the launch of v12_group_split.cuh's kernel, its descriptor and
// its C entry, in a translation unit of its own so that the versions compile in parallel.
#include "stages/07_tuned_tma/attention_bwd/launch.cuh"
#include "stages/07_tuned_tma/attention_bwd/v12_group_split.cuh"
#include "stages/07_tuned_tma/attention_bwd/versions.h"

namespace fs {

namespace {

Status run_v12(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return flash_bwd_tma::launch_version<flash_bwd_tma::v12::Config>(pr, stream, [](auto t, auto d) {
    return flash_bwd_tma::v12::flash_bwd_tma_v12_kernel<typename decltype(t)::type, decltype(d)::value>;
  });
}

// The query tile is per head_dim (Config<64>::kBr = 128, Config<128>::kBr = 64): so are the padded
// workspaces it sizes; the split's slabs (2·Bc·D floats a block) where this GPU's launch splits.
template <int D>
using C = flash_bwd_tma::v12::Config<D>;
std::size_t extra_v12(const AttentionParams& p) {
  return p.head_dim == 64 ? flash_bwd_tma::tiles_extra_bytes<C<64>::kBr>(p) + flash_bwd_tma::split_extra_bytes<C<64>>(p)
                          : flash_bwd_tma::tiles_extra_bytes<C<128>::kBr>(p) + flash_bwd_tma::split_extra_bytes<C<128>>(p);
}
std::size_t deterministic_extra_v12(const AttentionParams& p) {
  return p.head_dim == 64 ? flash_bwd_tma::tiles_deterministic_extra_bytes<C<64>::kBr>(p) +
                                flash_bwd_tma::split_extra_bytes<C<64>>(p)
                          : flash_bwd_tma::tiles_deterministic_extra_bytes<C<128>::kBr>(p) +
                                flash_bwd_tma::split_extra_bytes<C<128>>(p);
}

}  // namespace

const KernelDesc kFlashBwdTmaV12 = attention_bwd_kernel(
    {"fs_flash_bwd_tma_v12", "stage07/attention_bwd", "v12",
     "v11 with a group's query heads split over s blocks where the grid is small"},
    flash_bwd_tma::kSupport, kStageArchs, flash_bwd_tma::max_smem_bytes<flash_bwd_tma::v12::Config>(), run_v12,
    extra_v12, /*traffic_bytes=*/nullptr, deterministic_extra_v12);

}  // namespace fs

FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_tma_v12, fs::kFlashBwdTmaV12)
