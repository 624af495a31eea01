// Stage 07 attention v8: the launch of v8_split_last_wave.cuh's kernel over v7's tiles (launch.cuh's
// last_wave: which tiles to split and into how many slices, the workspace, the kernel and the merge), its
// descriptor and its C entry.
#include "stages/07_tuned_tma/attention/launch.cuh"
#include "stages/07_tuned_tma/attention/v8_split_last_wave.cuh"
#include "stages/07_tuned_tma/attention/versions.h"

namespace fs {

namespace flash_tma {

namespace {

// v8's kernel for element type t and tile configuration c.
constexpr auto kernel_of = [](auto t, auto c) {
  return v8::flash_tma_v8_kernel<typename decltype(t)::type, typename decltype(c)::type>;
};

std::size_t v8_workspace_bytes(const AttentionParams& p, int sms) {
  return last_wave::split_workspace_bytes<v8::Config>(p, sms);
}

Status run_v8_split(const AttentionProblem& pr, int64_t tail, int splits, cudaStream_t stream) {
  return last_wave::run_split<v8::Config>(pr, tail, splits, stream, kernel_of);
}

Status run_v8(const AttentionProblem& pr, cudaStream_t stream) { return last_wave::run<v8::Config>(pr, stream, kernel_of); }

}  // namespace

}  // namespace flash_tma

const KernelDesc kFlashTmaV8 = flash_tma::descriptor(
    {"fs_flash_fwd_tma_v8", "stage07/attention", "v8",
     "v7 with the tiles of the grid's last, partial wave split over their keys into several blocks, merged by their LSE"},
    flash_tma::max_smem_bytes<flash_tma::v8::Config>(), flash_tma::run_v8,
    flash_tma::workspace_extra_bytes<flash_tma::v8_workspace_bytes>);

Status launch_flash_tma_v8_split(const AttentionParams& p, int64_t tail, int splits, cudaStream_t stream) {
  return flash_tma::launch_forced(kFlashTmaV8, p, tail < 0 || splits < 1, [&](const AttentionProblem& pr) {
    return flash_tma::run_v8_split(pr, tail, splits, stream);
  });
}

}  // namespace fs

FS_EXPORT_ATTENTION(fs_flash_fwd_tma_v8, fs::kFlashTmaV8)
